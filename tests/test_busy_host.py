"""Issue 53, the faults a busy host finds: a fast engine that takes long to build is played on
when it is ready (the server used to stop building it after the start clock plus three play
clocks, and whole matches were played on Prolog, most moves random, with nothing in the
record); every decision no search chose is counted with its reason; INFO says available
whenever a START would be taken; replay finds rule sheets kept as <key>/<key>.kif.

A busy host is simulated by a build that takes long on the clock: the grounder waits
``GGP_PERSONA_TEST_BUILD_DELAY`` seconds before it reports (an environment variable only
tests set).  No timing is asserted beyond the protocol's clocks.
"""
from __future__ import annotations

import asyncio
import threading
import time

from gamemanager import ServerProcess, rules_list, wait_for_record

from agent.server.config import ServerConfig
from agent.server.matches import Match, MatchManager, build_cap, idle_limit, unsearched_why
from agent.server.protocol import parse_message
from agent.server import worker

from conftest import ROOT

TTT = (ROOT / "games" / "ticTacToe.kif").read_text()


class _Pipe:
    """A worker process stand-in: keeps what the server sends it."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)

    def kill(self):
        pass


def _match(manager=None):
    manager = manager or MatchManager(ServerConfig(seed=1))
    m = Match(manager, parse_message("( START m1 a (( role a ) ( role b ) ) 30 5 )"), time.monotonic(), None)
    m.status, m.roles, m.role_index = "playing", ["a", "b"], 0
    m.ref_status, m.player_status = "ready", "ready"
    m.ref_legal[0] = ["( go 1 )", "( go 2 )", "stay"]
    m.referee, m.player = _Pipe(), _Pipe()
    manager.matches[m.id] = m
    return m


# --------------------------------------------------------------------------- the count

def test_decisions_no_search_chose_are_counted_with_their_reasons():
    """Searched on Prolog while the engine was built, a random move when the player was late,
    a best-so-far move without a simulation: each counted under its reason in
    ``x-unsearched``; searches on the engine once it is there, forced moves and a best so
    far that had simulations are not."""
    m = _match()
    m.on_player(("loaded", {"engine": "prolog", "search": "agent.search"}))

    def decide(req, ply=0):
        move, entry = m.choose(req, ply, time.monotonic())
        m.record.add_decision(entry)
        return entry

    m.on_player(("move", 1, {"move": "( go 1 )", "search": "agent.search", "simulations": 12,
                             "engine": "prolog"}))
    assert decide(1)["unsearched"] == "searched on Prolog while the engine was being built"
    assert decide(2)["unsearched"] == "random move: player late while the engine was being built"
    m.on_player(("interim", 3, {"move": "( go 2 )", "simulations": 0}))
    assert decide(3)["unsearched"] == ("best so far without a simulation: player late while the engine "
                                       "was being built")
    m.on_player(("interim", 4, {"move": "( go 2 )", "simulations": 40}))
    assert decide(4)["unsearched"] == "searched on Prolog while the engine was being built"

    # the engine comes, long after the start clock: the player moves to it
    m.on_grounder(("engine", {"ok": True, "kind": "CompiledEngine", "seconds": 51.0}))
    assert m.player.sent[-1] == ("engine", "auto") and m.engine_status == "switching"
    m.on_player(("upgraded", {"engine": "CompiledEngine", "notes": [], "interim": False}))
    assert m.engine_status == "upgraded" and not m.building()

    m.on_player(("move", 5, {"move": "stay", "search": "agent.search", "simulations": 900,
                             "engine": "CompiledEngine"}))
    assert "unsearched" not in decide(5)
    m.on_player(("interim", 6, {"move": "( go 1 )", "simulations": 300}))
    assert "unsearched" not in decide(6)               # the search ran; it had not finished
    m.ref_legal[1] = ["noop"]
    assert "unsearched" not in decide(7, ply=1)        # forced: nothing to search
    assert decide(8)["unsearched"] == "random move: player late"
    m.on_player(("move", 9, {"move": "( go 7 )", "search": "agent.search", "simulations": 5,
                             "engine": "CompiledEngine"}))
    assert decide(9)["unsearched"] == "random move: player's move not legal"

    summary = m.record.to_json()["x-unsearched"]
    assert summary == {"count": 6, "decisions": 9, "why": {
        "searched on Prolog while the engine was being built": 2,
        "random move: player late while the engine was being built": 1,
        "best so far without a simulation: player late while the engine was being built": 1,
        "random move: player late": 1,
        "random move: player's move not legal": 1}}
    assert m.unsearched_text().startswith("6 of 9 decisions not searched (searched on Prolog while")


def test_a_match_without_a_fast_engine_does_not_count_prolog_searches():
    """With the engine off (or given up), Prolog is what plays: its searches are searches."""
    m = _match(MatchManager(ServerConfig(seed=1, use_engine=False)))
    m.on_player(("loaded", {"engine": "prolog"}))
    m.on_player(("move", 1, {"move": "stay", "search": "agent.search", "simulations": 3, "engine": "prolog"}))
    _, entry = m.choose(1, 0, time.monotonic())
    assert "unsearched" not in entry and m.record.extra["x-unsearched"]["count"] == 0
    # a finished search with no simulation of its own: the pondered tree had proven the root
    assert unsearched_why({"search": "agent.search", "simulations": 0, "engine": "CompiledEngine"}, False) is None
    assert unsearched_why({"search": "random", "simulations": None}, False) == "random move: the search failed"


def test_the_build_is_bounded_by_the_idle_limit_not_the_start_clock():
    """The server stopped the grounder at max(start, 10) + 3 * play: 45 s at 30/5, before
    chess's 51 s build on a busy host.  The build is now bounded by the match's idle limit
    (a game that never builds does not use a core for the whole match), and ``--max-idle``."""
    assert build_cap(30, 5, 3600) == idle_limit(30, 5) == 140 > max(30, 10) + 3 * 5
    assert build_cap(30, 5, 100) == 100
    m = _match()
    m.grounder = _Pipe()
    assert m.playing_on() == "Prolog plays"
    m.on_interim_engine = True
    m.stop_grounder("no fast engine: still being built after 140s (the match's build cap); " + m.playing_on())
    assert m.grounder is None and m.engine_status == "none" and not m.building()
    assert "the non-ground engine plays" in m.record.notes[-1]["text"]


# --------------------------------------------------------------------------- the grounder

def test_grounding_is_timed_in_cpu_seconds():
    """``cpu_spent``: the build's budget counts CPU time, which a busy host does not shrink."""
    ticks = iter(range(0, 1000, 2))
    done = threading.Event()
    assert worker.cpu_spent(5.0, done, clock=lambda: next(ticks), poll=0.001)
    done.set()
    assert not worker.cpu_spent(5.0, done, clock=lambda: 0.0, poll=0.001)


def test_a_build_out_of_cpu_time_answers_with_the_non_ground_engine(monkeypatch):
    """The server's grounder (with a cap): when grounding has used its CPU budget, the
    non-ground engine is the answer at once (the server then stops the process), and the
    build's own answer, should it come later, is not sent twice."""
    import agent.engine
    release = threading.Event()

    def endless_grounding(desc, budget_seconds):
        release.wait(60)
        raise RuntimeError("released by the test")
    monkeypatch.setattr(agent.engine, "load_engine", endless_grounding)
    monkeypatch.setattr(worker, "cpu_spent", lambda seconds, done: True)
    conn = _Pipe()
    rules = "( " + " ".join(rules_list(TTT)) + " )"
    t = threading.Thread(target=worker.run_grounder, args=(conn, rules, 5.0, 0, 60.0), daemon=True)
    t.start()
    deadline = time.monotonic() + 120
    while not [m for m in conn.sent if m[0] == "engine"] and time.monotonic() < deadline:
        time.sleep(0.05)
    release.set()
    t.join(60)
    engines = [m for m in conn.sent if m[0] == "engine"]
    assert len(engines) == 1, conn.sent
    info = engines[0][1]
    assert info["ok"] and info["kind"] == "NonGroundEngine" and "s of CPU time" in info["reason"], info


# --------------------------------------------------------------------------- INFO

def test_info_says_available_whenever_a_start_would_be_taken():
    """Before the first player process is warm a START is taken (and played on a fresh
    process): INFO says available then.  Busy only when every slot is taken and no match
    would make room."""
    manager = MatchManager(ServerConfig(seed=1, max_matches=1))
    assert not manager.warm and "status available" in manager.info() and manager.accepts_start()
    m = _match(manager)
    m.thinking = 1                      # answering a PLAY: never evicted
    assert "status busy" in manager.info() and not manager.accepts_start() and not manager.make_room("m2")
    m.thinking = 0
    m.last_activity = time.monotonic() - 400    # silent past --evict-idle: a START would end it
    assert "status available" in manager.info() and manager.accepts_start()
    assert manager.make_room("m2") and m.status == "ended"


# --------------------------------------------------------------------------- a slow build, served

DELAY = 20   # seconds before the grounder reports: past the old limit, max(3, 10) + 3 * 2 = 16 s


def test_a_slow_build_is_played_on_when_it_is_ready(tmp_path):
    """The grounder reports its engine 20 s after START (a busy host's build), past the old
    limit of 16 s: the player moves to the compiled engine then and plays on it; the first
    move, made while the engine was being built, is counted in ``x-unsearched`` with that
    reason, and the STOP log line says how many decisions were not searched."""
    mid = "busy.slow"
    with ServerProcess(tmp_path / "match_logs", "--seed", "4",
                       env={worker.DELAY_ENV: str(DELAY)}) as server:
        switched = lambda d: any("switched to CompiledEngine" in n["text"] for n in d.get("x-notes", []))

        async def after(ply):
            if ply == 1:     # wait for the engine before the next PLAY
                # at most 60 s: the match is abandoned after idle_limit(3, 2) = 83 s of silence
                await asyncio.to_thread(wait_for_record, server, mid, switched, 60)

        res = asyncio.run(server.manager(seed=2).play_match(mid, TTT, our_role=0, start_clock=3,
                                                            play_clock=2, on_ply=after))
        assert res.start_reply == "ready" and res.stop_reply == "done", res
        assert not [e for e in res.errors if e[1] == "IL"], res.errors
        d = wait_for_record(server, mid)
        log = server.log_path.read_text(errors="replace")
    notes = [n["text"] for n in d["x-notes"]]
    assert d["isCompleted"] and switched(d), notes
    assert d["x-engine"] == "CompiledEngine" and not [n for n in notes if "abandoned" in n], notes
    ours = d["x-decisions"]
    assert len(ours) == len(res.replies)
    first = ours[0]
    assert (first.get("engine") == "NonGroundEngine"      # the interim engine, should grounding be slow too
            or "while the engine was being built" in first.get("unsearched", "")), first
    later = [e for e in ours[1:] if e.get("engine") == "CompiledEngine" and len(e.get("legal", [])) > 1]
    assert later and all("unsearched" not in e for e in later), ours
    summary = d["x-unsearched"]
    marked = [e["unsearched"] for e in ours if "unsearched" in e]
    assert summary["decisions"] == len(ours) and summary["count"] == len(marked) >= 1
    assert sum(summary["why"].values()) == summary["count"]
    assert {w: marked.count(w) for w in set(marked)} == summary["why"]
    stop = [line for line in log.splitlines() if f"STOP {mid} after" in line]
    assert stop and ("decisions not searched" in stop[0] or "decisions searched" in stop[0]), stop


# --------------------------------------------------------------------------- replay, help texts

def test_replay_finds_rule_sheets_in_a_folder_per_game(tmp_path):
    """Repositories keep ``<key>/<key>.kif``; ``--game-dir`` read only ``DIR/<key>.kif``."""
    from agent.archive import GameLibrary
    (tmp_path / "ticTacToe").mkdir()
    (tmp_path / "ticTacToe" / "ticTacToe.kif").write_text(TTT)
    lib = GameLibrary(game_dirs=[tmp_path])
    desc = lib.description({"gameMetaURL": "http://127.0.0.1:9140/games/ticTacToe/v0/"})
    assert [str(r) for r in desc.roles] == ["cross", "nought"]
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "ticTacToe.kif").write_text(TTT)
    assert GameLibrary(game_dirs=[flat]).description({"gameMetaURL": "http://games.ggp.org/base/games/ticTacToe/v0/"})


def test_help_texts_say_what_replay_reads_and_what_fit_does(capsys):
    import pytest
    from agent.cli import main
    for cmd in ("replay", "fit"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "local repository's URL" in out and "127.0.0.1:9140/games/<key>/v<N>/" in out
    assert "DIR/<key>/<key>.kif" in out
    assert "by default the fast fit of persona-model 4.6" in out and "--ga: the genetic algorithm of 4.5" in out
