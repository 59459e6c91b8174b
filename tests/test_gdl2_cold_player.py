"""A GDL-II match whose player process is cold (still loading) for every PLAY: the server
must still answer each PLAY with a legal move of the CURRENT step, from its own GDL-II
referee, and say so in the record.

Under Dresden's GameController a still-loading player left a battleship match to the
server's fallback; its referee (one history on Prolog, where battleship's ``sees`` takes
0.15 s a query and the referee tried every placement of the opponent, 18-36 s a step) had
no legal moves for the current step, and the server sent moves "guessed from an earlier
state": ``PLACE`` moves through the shooting phase, 15 illegal replies in 15 steps
(docs/benchmarks/gdl2.md, "A discarded start").  Here the same shape on a small sheet of
our own (``tests/data/gdl2/small_fleet.kif``: hidden placements, then shots; the move sets
change between the phases), with the referee's prover slowed to battleship's pace, the real
referee worker in a process of its own, and a player stub that never answers.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import random
import threading
import time
from pathlib import Path

from gdl.kif import parse_term, read_rules_file
from gdl.terms import render_spaced

from agent.server.config import ServerConfig
from agent.server.matches import Match, MatchManager
from agent.server.protocol import parse_message

SHEET = Path(__file__).resolve().parent / "data" / "gdl2" / "small_fleet.kif"
SEES_DELAY = 0.1   # seconds per percept query in the referee (battleship on Prolog: 0.15-0.3)


# ----------------------------------------------------------------------------- the referee
class _SlowSees:
    """A state machine whose ``sees`` takes ``delay`` seconds more (a slow prover)."""

    def __init__(self, sm, delay: float):
        self._sm, self._delay = sm, delay

    def sees(self, state, joint_move, role_index):
        time.sleep(self._delay)
        return self._sm.sees(state, joint_move, role_index)

    def __getattr__(self, name):
        return getattr(self._sm, name)


def _slow_referee(conn, rules_text: str, role: str, delay: float) -> None:
    """The server's real GDL-II referee (``worker.run_referee``), in a process of its own,
    on a prover whose percept queries are slow.  A spawn target: defined at the top level."""
    import agent.referee as referee
    from agent.server.worker import run_referee

    real = referee.open_referee

    def slow(desc, *args, **kwargs):
        r = real(desc, *args, **kwargs)
        r.sm = _SlowSees(r.sm, delay)
        return r

    referee.open_referee = slow
    try:
        run_referee(conn, rules_text, role, True)
    except (EOFError, OSError):
        pass


class _RefereeProc:
    """The referee process seen from the event loop, as ``agent.server.procs.Proc`` shows
    it to a match: ``send`` and ``kill``; its messages go to ``handler`` on the loop."""

    def __init__(self, loop, handler, rules_text: str, role: str, delay: float):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_slow_referee, args=(child, rules_text, role, delay), daemon=True)
        self.process.start()
        child.close()
        self.pid = self.process.pid

        def read():
            while True:
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):
                    return
                try:
                    loop.call_soon_threadsafe(handler, msg)
                except RuntimeError:   # the loop is closed
                    return
        threading.Thread(target=read, daemon=True).start()

    def send(self, msg) -> None:
        self.conn.send(msg)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()


class _ColdPlayer:
    """A player process still loading: it takes every message and answers none."""

    pid = None

    def __init__(self):
        self.sent = []

    def send(self, msg) -> None:
        self.sent.append(msg)

    def kill(self) -> None:
        pass


# ----------------------------------------------------------------------------- the manager
def _play_cold_match(play_clock: float, steps: int, seed: int = 4):
    """One match of ``small_fleet`` as Dresden's GameController plays it (PLAY carries our
    percepts only; an illegal reply is replaced by a random legal move): we are ``first``,
    the opponent moves at random, the server's player never answers.  Returns (the replies
    with whether each was legal, the record)."""
    from agent.reasoner.prolog import PrologReasoner
    from agent.reasoner.statemachine import CachedStateMachine

    rules_text = SHEET.read_text(encoding="utf-8")
    rules = " ".join(line.split(";")[0] for line in rules_text.splitlines())
    truth = CachedStateMachine(PrologReasoner(read_rules_file(SHEET)))
    rng = random.Random(seed)

    async def run():
        manager = MatchManager(ServerConfig(seed=1))
        start = parse_message(f"( START cold first ( {rules} ) 30 {play_clock:g} )")
        m = Match(manager, start, time.monotonic(), None)
        assert m.gdl2
        manager.matches[m.id] = m
        loop = asyncio.get_running_loop()
        m.referee = _RefereeProc(loop, m.on_referee, start.rules_text, "first", SEES_DELAY)
        m.player = _ColdPlayer()
        try:
            ok = await m.wait_until(lambda: m.ref_status is not None, time.monotonic() + 60)
            assert ok and m.ref_status == "ready", (m.ref_status, m.ref_reason)
            m.status = "playing"
            state = truth.initial_state()
            replies, percepts = [], None
            for _ in range(steps):
                if truth.is_terminal(state):
                    break
                body = ("( PLAY cold NIL )" if percepts is None else
                        "( PLAY cold ( " + "".join(render_spaced(p) + " " for p in sorted(percepts, key=render_spaced)) + ") )")
                reply = await manager.play(parse_message(body), time.monotonic())
                ours = truth.legal_moves(state, 0)
                try:
                    move = parse_term(reply)
                except Exception:
                    move = None
                legal = move in ours
                replies.append((reply, legal))
                joint = (move if legal else rng.choice(ours), rng.choice(truth.legal_moves(state, 1)))
                percepts = truth.sees(state, joint, 0)
                state = truth.next_state(state, joint)
            return replies, m.record.to_json()
        finally:
            m.referee.kill()

    return asyncio.run(run())


def test_a_cold_player_in_a_gdl2_match_gets_legal_fallbacks_of_the_current_step():
    """Seven PLAYs (both placements, five shots) with the player cold throughout: every
    reply is a legal move of the step it answers, none is guessed from an earlier state,
    and each decision's record says where its legal moves came from."""
    replies, record = _play_cold_match(play_clock=1.5, steps=7)
    assert len(replies) == 7
    decisions = record["x-decisions"]
    guessed = [d for d in decisions if d.get("fallback_move") == "guess"]
    assert not guessed, guessed
    illegal = [(i, r) for i, (r, ok) in enumerate(replies) if not ok]
    assert not illegal, (illegal, [d.get("fallback_reason") for d in decisions])
    # both phases were played, and the replies followed the change of move set
    assert replies[0][0].startswith("( place") and replies[-1][0].startswith("( shoot")
    for d in decisions:
        assert d["fallback"] and d["fallback_move"] == "random", d
        assert d["legal_from"].startswith("referee"), d     # the player never answered
        assert d["legal_from"] in d["fallback_reason"], d


# ----------------------------------------------------------------------------- the parts
def _true_match(seed: int, steps: int = 10):
    """A random match of ``small_fleet``: per step (our move, our percepts, our legal moves
    in the true state after it), and the reasoner."""
    from agent.reasoner.prolog import PrologReasoner
    from agent.reasoner.statemachine import CachedStateMachine
    sm = CachedStateMachine(PrologReasoner(read_rules_file(SHEET)))
    rng = random.Random(seed)
    state, out = sm.initial_state(), []
    while not sm.is_terminal(state) and len(out) < steps:
        joint = tuple(rng.choice(sm.legal_moves(state, i)) for i in range(2))
        seen = sm.sees(state, joint, 0)
        state = sm.next_state(state, joint)
        out.append((joint[0], seen, sm.legal_moves(state, 0) if not sm.is_terminal(state) else None))
    return sm, out


def test_one_history_knows_our_legal_moves_through_the_change_of_phase():
    """With time to search, the referee's history is consistent with every percept until a
    hit reveals a ship it placed elsewhere, and then the closest one, patched; either way
    its legal moves for us are the true ones at every step (place, then shoot), and it
    says where they come from."""
    from agent.hidden.tracker import OneHistory
    for seed in range(3):
        sm, steps = _true_match(seed)
        h = OneHistory(sm, 0, random.Random(seed))
        assert h.how() == "referee: initial state"
        for k, (own, seen, truth) in enumerate(steps, 1):
            h.observe(own, seen, time.monotonic() + 30)
            if truth is not None:
                assert sorted(h.legal()) == sorted(truth), (seed, k)
            if not h.missed:
                assert h.how() == "referee: history consistent with every percept"
            else:
                assert h.how().startswith("referee: closest history"), h.how()
        assert not [k for k in h.missed if k <= 2]   # a placement hides nothing we see


def test_one_history_out_of_time_tries_one_candidate_and_still_follows_our_moves():
    """A referee with no time left (it fell behind, or the clock is short) checks a single
    candidate per step: the step then costs one ``sees``, one next state and one legal-move
    query, and our legal moves (which depend on what we see) are still this step's."""
    from agent.hidden.tracker import OneHistory
    sm, steps = _true_match(5)
    h = OneHistory(sm, 0, random.Random(1))
    for own, seen, truth in steps:
        h.observe(own, seen, time.monotonic() - 1.0)
        assert h.tried == 1
        if truth is not None:
            assert sorted(h.legal()) == sorted(truth)
    assert h.steps == len(steps)


def _gdl2_match():
    manager = MatchManager(ServerConfig(seed=1))
    start = ("( START g2 a (( role a ) ( role b ) ( <= ( sees a ( seen ?x ) ) ( true ( p ?x ) ) ) ) 10 5 )")
    m = Match(manager, parse_message(start), time.monotonic(), None)
    assert m.gdl2
    m.ref_legal[0] = ["( place 1 )", "( place 2 )"]
    return m


def test_a_gdl2_step_without_known_legal_moves_is_never_answered_from_an_earlier_one():
    """GDL-I still guesses from an earlier state as a last resort; GDL-II never does (its
    move sets change with what is hidden), and the record says why nothing legal was sent."""
    m = _gdl2_match()
    move, entry = m.choose(3, 2, time.monotonic())
    assert move == "nil" and entry["fallback_move"] == "none"
    assert "an earlier step's are not reused" in entry["fallback_reason"]


def test_a_gdl2_fallback_says_whose_legal_moves_it_drew_from():
    m = _gdl2_match()
    m.on_referee(("ref_state", {"ply": 1, "joint": None, "state": "( ( p 1 ) )", "terminal": False,
                                "legal": ["( shoot 1 )", "( shoot 2 )"], "notes": [],
                                "how": "referee: history consistent with every percept"}))
    move, entry = m.choose(2, 1, time.monotonic())
    assert move in ("( shoot 1 )", "( shoot 2 )") and entry["fallback_move"] == "random"
    assert entry["legal_from"] == "referee: history consistent with every percept"
    assert entry["legal_from"] in entry["fallback_reason"]
    # the player's belief, when it has this step's legal moves, comes first
    m.player_legal[1] = ["( shoot 2 )"] * 2
    move, entry = m.choose(3, 1, time.monotonic())
    assert move == "( shoot 2 )" and entry["legal_from"] == "player: belief"
    # a terminal guess of the referee's history, with the match going on: its moves are kept
    m.on_referee(("ref_state", {"ply": 2, "joint": None, "state": "( ( p 2 ) )", "terminal": True,
                                "goals": [100, 0], "legal": ["( shoot 3 )"], "notes": [],
                                "how": "referee: closest history (percepts of 1 step not explained: 2)"}))
    assert 2 not in m.over and m.ref_legal[2] == ["( shoot 3 )"]


def test_a_single_move_of_a_closest_history_does_not_answer_at_once():
    """One legal move in the referee's history is answered at once only when that history
    explains every percept (or the player's belief says so); a closest history's turn may be
    wrong, so the player is waited for."""
    m = _gdl2_match()
    state = {"ply": 1, "joint": None, "state": "( ( p 1 ) )", "terminal": False, "legal": ["noop"],
             "notes": [], "how": "referee: closest history (percepts of 1 step not explained: 1)"}
    m.on_referee(("ref_state", state))
    assert not m.forced_gdl2(1)
    m.on_referee(("ref_state", dict(state, ply=2, how="referee: history consistent with every percept")))
    assert m.forced_gdl2(2)
    m.player_legal[1] = ["noop"]
    assert m.forced_gdl2(1)


def test_a_closest_history_takes_a_percepts_fact_of_a_shape_it_never_held():
    """A blind board's first hit names a fact (``hit``) no state of the history held yet;
    the rules' ``next`` heads say it is a state fact, so the closest history takes it, and
    the later steps whose percepts repeat it can be explained again (battleship under the
    manager: every step after our first hit went unexplained before)."""
    from agent.hidden.belief import patch
    from agent.hidden.tracker import fluent_shapes
    shapes = fluent_shapes(read_rules_file(SHEET))
    assert shapes == {("step", 2), ("ship", 4), ("shot", 4), ("hit", 4)}
    state = frozenset({("step", "3"), ("ship", "first", "1", "1")})
    seen = frozenset({("shot", "first", "3", "3"), ("hit", "first", "3", "3")})
    predicted = frozenset({("shot", "first", "3", "3")})
    assert patch(state, predicted, seen) == state                       # the state's shapes only
    assert patch(state, predicted, seen, shapes) == state | {("hit", "first", "3", "3")}


class _Conn:
    """A referee's pipe stand-in: the steps to read, what the referee sent."""

    def __init__(self, steps):
        self.steps, self.sent = list(steps), []

    def recv(self):
        if not self.steps:
            raise EOFError
        return self.steps.pop(0)

    def poll(self):
        return False

    def send(self, msg):
        self.sent.append(msg)


def test_a_gdl2_referee_whose_history_cannot_go_on_does_not_end_the_match():
    """A GDL-I referee's failure ends the match (it knew the true state); a GDL-II referee's
    history is a guess: when it cannot go on, the steps are still answered (no legal moves,
    said so) and the player's belief gives our moves."""
    import pytest
    from agent.reasoner.prolog import PrologReasoner
    from agent.reasoner.statemachine import CachedStateMachine, ReasonerError
    from agent.server.worker import referee_gdl2

    class Failing(CachedStateMachine):
        def legal_moves(self, state, role):
            if ("step", "1") in state:
                raise ReasonerError("out of limits")
            return super().legal_moves(state, role)

    desc = read_rules_file(SHEET)
    sm = Failing(PrologReasoner(desc))
    step = {"own": "( place 1 1 )", "percepts": ["( ship first 1 1 )"], "seconds": 5.0}
    conn = _Conn([("step", k, dict(step)) for k in (1, 2, 3)])
    with pytest.raises(EOFError):
        referee_gdl2(conn, sm, 0, desc)
    kinds = [m[0] for m in conn.sent]
    assert kinds == ["ref_state"] * 3, conn.sent
    infos = [m[1] for m in conn.sent]
    assert [i["ply"] for i in infos] == [1, 2, 3]
    assert all("legal" not in i for i in infos)
    assert "cannot go on at step 1" in infos[0]["notes"][0]
    assert all(i["how"].startswith("referee: lost") for i in infos)


def test_a_gdl2_belief_without_legal_moves_is_answered_from_the_referee():
    """A lenient belief whose closest histories all ended knows no legal move; the player
    says so ("over"), but in GDL-II that is a guess and the PLAY says the match goes on: the
    referee's legal moves of this step answer, not nil (battleship under the manager)."""
    m = _gdl2_match()
    m.on_referee(("ref_state", {"ply": 1, "joint": None, "state": "( ( p 1 ) )", "terminal": False,
                                "legal": ["( shoot 1 )", "( shoot 2 )"], "notes": [],
                                "how": "referee: closest history (percepts of 1 step not explained: 1)"}))
    m.on_player(("legal", 1, []))
    m.on_player(("over", 2, 1, "no legal move"))
    assert 1 not in m.over
    move, entry = m.choose(2, 1, time.monotonic())
    assert move in ("( shoot 1 )", "( shoot 2 )") and entry["fallback_move"] == "random"
    assert entry["legal_from"].startswith("referee: closest history")
    assert entry["fallback_reason"].startswith("the player's belief knows no legal move here")
