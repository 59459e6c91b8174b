"""The server's fallback move when the player's search has not answered by the deadline:
the player's best move so far, else a random legal move, and the record says which."""
from __future__ import annotations

import time

from agent.matchtext import resolve_joint
from agent.server.config import ServerConfig
from agent.server.matches import Match
from agent.server.protocol import parse_message
from agent.server.worker import decide_reporting


class _Manager:
    config = ServerConfig(seed=1)

    def persona_params(self, spec):
        return {}


def _match():
    msg = parse_message("( START m1 a (( role a ) ( role b ) ) 10 5 )")
    m = Match(_Manager(), msg, time.monotonic(), None)
    m.ref_legal[0] = ["( go 1 )", "( go 2 )", "stay"]
    return m


def test_best_so_far_beats_a_random_move():
    m = _match()
    m.interim[1] = {"move": "( go 2 )", "search": "agent.search", "simulations": 7, "fallback": False}
    move, entry = m.choose(1, 0, time.monotonic())
    assert move == "( go 2 )"
    assert entry["fallback"] and entry["fallback_move"] == "best so far" and entry["simulations"] == 7
    assert "best move so far" in entry["fallback_reason"]


def test_random_only_when_the_player_has_nothing():
    m = _match()
    move, entry = m.choose(1, 0, time.monotonic())
    assert move in m.ref_legal[0] and entry["fallback_move"] == "random"
    m.interim[2] = {"move": "( go 9 )"}  # not legal by the referee: not sent
    move, entry = m.choose(2, 0, time.monotonic())
    assert move in m.ref_legal[0] and entry["fallback_move"] == "random"


def test_a_final_decision_is_not_a_fallback():
    m = _match()
    m.interim[1] = {"move": "( go 2 )"}
    m.decisions[1] = {"move": "stay", "search": "agent.search"}
    move, entry = m.choose(1, 0, time.monotonic())
    assert move == "stay" and not entry["fallback"] and "fallback_move" not in entry


class _ReportingPlayer:
    """A player whose search calls back with its best move (the search's ``on_best``)."""

    def decide(self, deadline, ponder=False, on_best=None):
        for i, move in enumerate(("( go 1 )", "( go 2 )")):
            on_best(move, 10 * (i + 1))
        return {"move": "( go 2 )", "simulations": 30}


def test_a_search_that_reports_its_best_move_is_used_directly():
    reported = []
    final = decide_reporting(_ReportingPlayer(), time.monotonic() + 2.0, reported.append)
    assert reported == [{"move": "( go 1 )", "simulations": 10}, {"move": "( go 2 )", "simulations": 20}]
    assert final["simulations"] == 30


def test_guess_from_the_latest_state_with_a_choice():
    """No legal moves known for this state in time: a guess, from the latest state where we
    had a real choice (a state with only a noop says little), recorded as a guess."""
    m = _match()
    m.ref_legal[1] = ["noop"]
    move, entry = m.choose(1, 2, time.monotonic())
    assert move in m.ref_legal[0] and entry["fallback_move"] == "guess" and "legal" not in entry


def test_a_player_over_its_memory_cap_is_stopped_and_the_referee_answers():
    """Only the player is killed when it passes its cap: the referee still follows the game,
    so every later PLAY gets a legal move of the current state (ending the whole match left
    only guesses from earlier states, illegal in chess)."""
    class _Proc:
        killed = False

        def kill(self):
            self.killed = True

    m = _match()
    m.status = "playing"
    m.player = proc = _Proc()
    m.stop_player("memory: the player process used 2185 MB")
    assert proc.killed and m.player is None and m.player_status == "dead" and m.status == "playing"
    assert "2185 MB" in m.record.extra["x-player-ended"]
    m.ref_legal[1] = ["( go 3 )"] * 2
    move, entry = m.choose(1, 1, time.monotonic())
    assert move == "( go 3 )" and entry["fallback_reason"] == "player unavailable"


class _Pipe:
    """A worker process stand-in: keeps what the server sends it."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)

    def kill(self):
        pass


def _playing_match(manager):
    m = Match(manager, parse_message("( START m1 a (( role a ) ( role b ) ) 10 5 )"), time.monotonic(), None)
    m.status, m.roles, m.role_index = "playing", ["a", "b"], 0
    m.ref_status, m.player_status = "ready", "ready"
    m.ref_legal[0] = ["( go 1 )", "stay"]
    m.referee, m.player = _Pipe(), _Pipe()
    manager.matches[m.id] = m
    return m


def test_no_guess_before_the_referee_answered():
    """The player gives up on a PLAY at once (a joint move it cannot apply): the server waits
    for the referee's legal moves of the new state instead of guessing from an earlier state
    (it sent an illegal guess within 2 ms)."""
    import asyncio
    from agent.server.matches import MatchManager

    async def run():
        manager = MatchManager(ServerConfig(seed=1))
        m = _playing_match(manager)
        loop = asyncio.get_running_loop()
        loop.call_soon(m.on_player, ("error", 1, "cannot apply the joint move"))
        loop.call_later(0.2, m.on_referee, ("ref_state", {
            "ply": 1, "joint": ["( jump )", "wait"], "state": "( ( s 1 ) )", "terminal": False,
            "legal": ["( go 3 )", "( go 4 )"]}))
        return await manager.play(parse_message("( PLAY m1 ( ( jump ) wait ) )"), time.monotonic()), m

    move, m = asyncio.run(run())
    assert move in ("( go 3 )", "( go 4 )")
    assert m.record.to_json()["x-decisions"][0]["fallback_move"] == "random"


def test_a_lost_player_gets_the_referees_states():
    """A player that could not follow a joint move says so; the server sends it the
    referee's latest state, and every new one until the player is back in step."""
    from agent.server.matches import MatchManager
    m = _playing_match(MatchManager(ServerConfig(seed=1)))
    m.on_referee(("ref_state", {"ply": 1, "joint": ["stay", "wait"], "state": "( ( s 1 ) )",
                                "terminal": False, "legal": ["( go 3 )"]}))
    m.on_player(("lost", 1, "cannot apply the joint move"))
    assert m.player.sent[-1] == ("state", 1, "( ( s 1 ) )")
    m.on_referee(("ref_state", {"ply": 2, "joint": ["stay", "wait"], "state": "( ( s 2 ) )",
                                "terminal": False, "legal": ["( go 3 )"]}))
    assert m.player.sent[-1] == ("state", 2, "( ( s 2 ) )")
    m.on_player(("synced", 2))
    m.on_referee(("ref_state", {"ply": 3, "joint": ["stay", "wait"], "state": "( ( s 3 ) )",
                                "terminal": True, "goals": [0, 0]}))
    assert m.player.sent[-1] == ("state", 2, "( ( s 2 ) )") and m.over[3] == "terminal"


def test_the_referees_state_text_reads_back():
    from agent.server.worker import parse_state_text
    assert parse_state_text("( ( cell 1 1 b ) ( control x ) )") == frozenset(
        {("cell", "1", "1", "b"), ("control", "x")})


def test_a_move_nested_too_deeply_is_no_move_at_all():
    """A move nested deeper than the protocol reads was passed on as the text
    ``<too deeply nested>`` and played as the move ``<too``: now the referee stands in a
    legal move for it, and the record says why."""
    m = _match()
    deep = "(f " * 150 + "x" + ")" * 150
    msg = parse_message(f"( PLAY m1 ( {deep} stay ) )")
    assert m.joint_texts(msg) == [None, "stay"]
    assert "is not a ground term we can read" in m.record.notes[-1]["text"]
    msg = parse_message("( PLAY m1 ( ( go ?x ) stay ) )")
    assert m.joint_texts(msg) == [None, "stay"]


def test_log_arguments_are_escaped_and_shortened():
    import logging
    from agent.server.logsafe import SafeArgs
    rec = logging.LogRecord("ggp.server", logging.INFO, __file__, 1, "PLAY %s -> %s (%d ms)",
                            ("id\nFORGED\x1b[0m" + "y" * 3000, "busy", 3), None)
    SafeArgs().filter(rec)
    line = rec.getMessage()
    assert "\n" not in line and "\x1b" not in line and "id\\x0aFORGED\\x1b[0m" in line
    assert len(line) < 700 and "(3013 characters)" in line and line.endswith("-> busy (3 ms)")


def test_records_of_a_killed_server_are_marked_interrupted(tmp_path):
    """kill -9 leaves records neither completed nor aborted; a later start marks those left
    alone longer than the reaper's limit, and leaves the rest (finished, or too recent:
    another server may share the folder) as they are."""
    import json
    import os
    from agent.matchlog import MatchRecord, atomic_write_json
    from agent.server.matches import mark_interrupted

    def write(name, age, finished=False):
        rec = MatchRecord(name, "a", "( ( role a ) )", 10, 5)
        if finished:
            rec.complete([100])
        path = tmp_path / f"{name}.json"
        atomic_write_json(path, rec.to_json())
        os.utime(path, (time.time() - age, time.time() - age))
        return path

    old, recent, done, live = write("old", 3600), write("recent", 5), write("done", 3600, True), write("live", 3600)
    pending = mark_interrupted(tmp_path, {"live"})
    d = json.loads(old.read_text())
    assert d["isAborted"] and d["x-end-reason"].startswith("interrupted: ")
    assert [p for _, p in pending] == [recent]
    for p in (recent, done, live):
        assert not json.loads(p.read_text())["isAborted"]


def test_idle_matches_make_room_for_a_new_start():
    """Eight STARTs with a one-day play clock and no PLAY kept the server busy for ten days.
    When every slot is taken, a START ends the match silent longest, if it is overdue by
    its own clock or silent for --evict-idle seconds; a match being answered never is."""
    from agent.server.matches import MatchManager
    manager = MatchManager(ServerConfig(seed=1, max_matches=2, evict_idle=300.0))
    manager.warm = True
    now = time.monotonic()
    a = _playing_match(manager)
    b = Match(manager, parse_message("( START m2 a (( role a ) ( role b ) ) 86400 86400 )"), now, None)
    b.status = "playing"
    b.referee, b.player = _Pipe(), _Pipe()
    manager.matches[b.id] = b
    a.last_activity = b.last_activity = now - 60   # a: 10 s start clock, overdue; b: not yet
    a.thinking = 1                                 # ... but a is thinking about a PLAY
    assert manager.evictable(time.monotonic()) is None and "busy" in manager.info()
    assert not manager.make_room("m3")
    a.thinking = 0
    assert manager.evictable(time.monotonic()) is a and "available" in manager.info()
    b.last_activity = now - 400                    # b: silent longer than --evict-idle, and longest
    assert manager.make_room("m3")
    assert b.status == "ended" and "evicted" in b.record.extra["x-end-reason"] and b.record.aborted
    assert a.status == "playing" and len(manager.active()) == 1


def test_a_silent_match_is_abandoned_after_max_idle_whatever_its_clocks():
    from agent.server.matches import MatchManager
    manager = MatchManager(ServerConfig(seed=1, max_idle=3600.0))
    m = Match(manager, parse_message("( START m9 a (( role a ) ( role b ) ) 86400 86400 )"), time.monotonic(), None)
    m.status = "playing"
    m.referee, m.player = _Pipe(), _Pipe()
    manager.matches[m.id] = m
    manager.reap(m.last_activity + 3000)
    assert m.status == "playing"
    manager.reap(m.last_activity + 3700)
    assert m.status == "aborted" and "abandoned" in m.record.extra["x-end-reason"] and m.id not in manager.matches


def test_a_worker_ends_itself_when_the_server_is_gone():
    """kill -9 of the server left a grounder in a long Prolog call busy for most of the start
    clock: every worker watches for its parent and exits when it is gone."""
    from agent.server.worker import exit_when_orphaned
    parents = iter([100, 100, 1])
    exits = []
    exit_when_orphaned(100, poll=0.0, getppid=lambda: next(parents), exit=exits.append)
    assert exits == [3]


class _Machine:
    """A state machine stand-in: every role may ``go`` or ``stay``; ``next`` adds the moves."""

    roles = ["a", "b"]

    def __init__(self, base=None, refuse=()):
        self.base, self.refuse = base, refuse

    def legal_moves(self, state, role):
        return ["go", "stay"]

    def next_state(self, state, joint):
        from agent.reasoner.statemachine import InvalidQuery
        if any(m in self.refuse for m in joint):
            raise InvalidQuery(f"{joint} is never a legal move")
        return frozenset(state) | {("did", m) for m in joint}

    def is_terminal(self, state):
        return False

    def close(self):
        pass


class _Player:
    def __init__(self, engine, prolog):
        from agent.reasoner.statemachine import CachedStateMachine
        self.engine, self.prolog, self.sm = engine, prolog, CachedStateMachine(engine)
        self.engine_kind, self.role_index, self.ply, self.tree = "CompiledEngine", 0, 0, object()
        self.state = frozenset({("s", "0")})
        self.description = type("D", (), {"roles": ["a", "b"]})()

    def observe(self, texts):
        joint, notes = resolve_joint(self.sm, self.state, texts, 2)
        self.state = self.sm.next_state(self.state, joint)
        self.ply += 1
        return notes


def test_a_joint_move_the_engine_cannot_apply_is_followed_on_prologs_state():
    from agent.server.worker import observe_joint
    base = [("s", "0"), ("did", "go"), ("did", "stay"), ("did", "jump")]
    p = _Player(_Machine(base=base, refuse=("jump",)), _Machine())
    notes, switched = observe_joint(p, ["jump", "go"])
    assert not switched and p.ply == 1 and p.tree is None and p.engine_kind == "CompiledEngine"
    assert p.state == {("s", "0"), ("did", "jump"), ("did", "go")}
    assert any("the next state is Prolog's" in n for n in notes)
    # a state with a fluent outside the engine's table: Prolog plays on
    p = _Player(_Machine(base=base[:3], refuse=("jump",)), _Machine())
    notes, switched = observe_joint(p, ["jump", "go"])
    assert switched and p.engine_kind == "prolog" and p.engine is p.prolog and "Prolog plays the rest" in notes[-1]
    assert p.sm.next_state(p.state, ["go", "go"]) >= p.state
