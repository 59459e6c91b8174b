"""End to end: full matches through the HTTP server against a random player, as ggp-base's
GameServer would run them (tests/gamemanager.py), then the records it wrote.

Slow-ish (a minute or two on two cores): every test plays real matches with real clocks.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path

import pytest

from agent.archive import GameLibrary, Replayer, iter_records
from gamemanager import PLAY_GRACE, ServerProcess, parse_term, play_message, rules_list, start_message

from conftest import ROOT, SHARED, needs_shared
from test_heuristic import claim_rules

GAMES = ROOT / "games"
BASE = SHARED / "corpus" / "games" / "base" / "games"



# Latencies seen by the tests, printed at the end of the module (pytest -s) for the report.
MEASURED: dict = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logs = tmp_path_factory.mktemp("serverlogs") / "match_logs"
    with ServerProcess(logs, "--seed", "7", "--name", "TestPersona") as s:
        yield s
    if MEASURED:
        print("\nmeasured:", {k: v for k, v in MEASURED.items()})


def kif(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def check_match(res, play_clock, server):
    assert res.start_reply == "ready", server.log_text()
    assert res.errors == [], (res.errors, server.log_text())
    assert res.stop_reply == "done"
    assert max(res.latencies) < play_clock + PLAY_GRACE, res.latencies
    assert res.goals is not None


def test_tictactoe_scrambled_raw_http10(server):
    gm = server.manager("raw", seed=1)
    res = asyncio.run(gm.play_match("Base.ticTacToe.1", kif(GAMES / "ticTacToe.kif"), our_role=1,
                                    start_clock=4, play_clock=1, scramble=11))
    check_match(res, 1, server)
    # the replies use the scrambled names: none of the original words appear
    assert not any("place" in r or "noop" in r for r in res.replies)


def test_connect_four_httpx(server):
    gm = server.manager("httpx", seed=2)
    res = asyncio.run(gm.play_match("Base.connectFour.2", kif(GAMES / "connectFour.kif"), our_role=0,
                                    start_clock=4, play_clock=1))
    check_match(res, 1, server)
    MEASURED["play_1s_latency_max"] = round(max(res.latencies), 3)


@needs_shared
@pytest.mark.parametrize("game,role,scramble", [("nineBoardTicTacToe", 1, 5), ("connectFour", 1, 3)])
def test_corpus_games_scrambled(server, game, role, scramble):
    gm = server.manager("raw", seed=3)
    res = asyncio.run(gm.play_match(f"tiltyard.{game}v0.1400000000000", kif(BASE / game / "v0" / f"{game}.kif"),
                                    our_role=role, start_clock=4, play_clock=1, scramble=scramble))
    check_match(res, 1, server)


@needs_shared
def test_chess_short_play_clock_never_late(server):
    """Chess with a 2 s play clock: whatever the engine is doing (grounding may still run),
    every reply is legal and comes before the clock; grounding gives up, and the player ends
    on the non-ground engine."""
    gm = server.manager("raw", seed=4)
    res = asyncio.run(gm.play_match("Base.chess.3", kif(BASE / "chess" / "v0" / "chess.kif"), our_role=0,
                                    start_clock=5, play_clock=2, abort_after=16))
    assert res.start_reply == "ready", server.log_text()
    # A player that searches well can mate the random opponent inside 16 plies (CI saw it):
    # then the match ends by STOP, and the checks on every reply still hold.
    mated = res.goals is not None
    assert res.stop_reply == ("done" if mated else "aborted"), (res.stop_reply, res.goals)
    assert res.errors == [], (res.errors, server.log_text())
    assert len(res.latencies) == len(res.moves) and (mated or len(res.latencies) == 16)
    assert max(res.latencies) < 2.0 + PLAY_GRACE, res.latencies
    path = server.log_dir / "Base.chess.3.json"
    ended = "isCompleted" if mated else "isAborted"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (path.exists() and json.loads(path.read_text()).get(ended)):
        time.sleep(0.2)
    rec = json.loads(path.read_text())
    assert rec.get("x-engine") == "NonGroundEngine", (rec.get("x-engine"), rec.get("x-notes"))
    MEASURED["chess_2s_latency_max"] = round(max(res.latencies), 3)
    MEASURED["chess_2s_margin_min"] = round(2.0 - max(res.latencies), 3)


def test_four_matches_at_once_with_info_and_abort(server):
    """Four matches in parallel; INFO pings all along, and one match is aborted while the
    player thinks: every answer prompt, every move legal and in time."""
    info_latencies: list = []
    abort_latency: list = []

    async def pinger(stop):
        gm = server.manager("raw")
        while not stop.is_set():
            t0 = time.monotonic()
            reply = await gm.info()
            info_latencies.append(time.monotonic() - t0)
            assert "status available" in reply
            await asyncio.sleep(0.1)

    async def aborter(gm):
        # wait for the match to be under way, send a PLAY, abort while it is being thought about
        match_id = "Base.connectFour.abort"
        rules = rules_list(kif(GAMES / "connectFour.kif"))
        assert (await gm.transport.send(start_message(match_id, "red", rules, 3, 3), 10))[0] == "ready"
        play = asyncio.ensure_future(gm.transport.send(play_message(match_id, None), 10))
        await asyncio.sleep(0.8)
        t0 = time.monotonic()
        reply, _ = await gm.transport.send(f"( ABORT {match_id} )", 5)
        abort_latency.append(time.monotonic() - t0)
        assert reply == "aborted"
        move, secs = await play  # the pending PLAY still gets a legal answer in time
        assert parse_term(move) and secs < 3 + PLAY_GRACE
        assert (await gm.transport.send(play_message(match_id, None), 5))[0] == "busy"  # gone

    async def main():
        stop = asyncio.Event()
        ping = asyncio.ensure_future(pinger(stop))
        games = [
            server.manager("raw", seed=10).play_match("Base.ticTacToe.c1", kif(GAMES / "ticTacToe.kif"),
                                                      our_role=0, start_clock=3, play_clock=2),
            server.manager("httpx", seed=11).play_match("Base.connectFour.c2", kif(GAMES / "connectFour.kif"),
                                                        our_role=1, start_clock=3, play_clock=2, abort_after=10),
            server.manager("raw", seed=12).play_match("Base.ticTacToe.c3", kif(GAMES / "ticTacToe.kif"),
                                                      our_role=1, start_clock=3, play_clock=2, scramble=9),
            aborter(server.manager("raw", seed=13)),
        ]
        results = await asyncio.gather(*games)
        stop.set()
        await ping
        return results

    r1, r2, r3, _ = asyncio.run(main())
    for res in (r1, r3):
        check_match(res, 2, server)
    assert r2.errors == [] and r2.stop_reply == "aborted" and max(r2.latencies) < 2 + PLAY_GRACE
    # Only the protocol's limits: ggp-base waits 1 s for INFO and for ABORT (ggp-facts 3.1).
    # How fast they really are, idle and under load: docs/benchmarks/server.md.
    assert max(info_latencies) < 1.0, sorted(info_latencies)[-5:]
    assert abort_latency[0] < 1.0
    MEASURED["info_during_4_matches_median"] = round(statistics.median(info_latencies), 4)
    MEASURED["info_during_4_matches_max"] = round(max(info_latencies), 4)
    MEASURED["abort_while_thinking"] = round(abort_latency[0], 4)
    MEASURED["play_2s_latency_max"] = round(max(r1.latencies + r2.latencies + r3.latencies), 3)


def test_logs_load_and_replay_exactly(server):
    """Every record the server wrote so far loads with our archive reader and replays
    exactly on the rules."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # STOP is answered at once; the record follows
        records = list(iter_records([server.log_dir]))
        done = [r for r in records if r.data["isCompleted"] or r.data["isAborted"]]
        if len(done) == len(records):
            break
        time.sleep(0.3)
    records = list(iter_records([server.log_dir]))
    assert len(records) >= 4
    # The referee's choice of engine, as replay_paths makes it (the compiled engine where it
    # is exact, else Prolog), but with 5 s to build one instead of 60: chess never grounds,
    # and waiting out the offline budget was 40 s of the serial pass (8 s in all now).
    replayer = Replayer(GameLibrary(), budget=5.0)
    results = [replayer.replay(r) for r in iter_records([server.log_dir])]
    # A match aborted before its first state was known is skipped, with the reason.
    assert all(r.ok or (r.skipped and "aborted before any state" in r.problem) for r in results), \
        [r.line() for r in results if not r.ok]
    assert sum(r.ok for r in results) >= 4
    completed = [r.data for r in records if r.data["isCompleted"]]
    assert completed and all("goalValues" in d for d in completed)
    for d in records:
        d = d.data
        if "x-roles" not in d:  # aborted before the referee knew the roles (a loaded machine)
            assert d["isAborted"]
            continue
        assert d["x-persona"]["name"] == "tournament"  # the server's default
        assert d["playerNamesFromHost"][[r.lower() for r in d["x-roles"]].index(d["x-role"].lower())] == "TestPersona"
        for dec in d["x-decisions"]:
            if dec.get("fallback_move") in ("guess", "none"):  # no legal moves known in time: said so
                assert "legal" not in dec and "no legal moves known" in dec["fallback_reason"]
                continue
            assert dec["move"] in dec["legal"]
            assert {"ply", "legal", "move", "fallback", "reply_after"} <= set(dec)


# The claim game of test_heuristic.py, longer: whoever claims cell 1 of 8 wins, over 24 plies
# (a playout from the first moves reaches the evaluation's depth before the end).
CLAIM_LONG = claim_rules(cells=8, plies=24)


def test_the_servers_player_learns_the_evaluation_in_the_start_clock_and_plays_with_it(server):
    """The default persona ponders, so its player learns the game's evaluation
    (agent.search.heuristic) before READY, and its searches end playouts with it: each
    decision of the record counts those (`evaluated`)."""
    from gamemanager import wait_for_record
    gm = server.manager("raw", seed=4)
    # A 2 s clock: at 1 s (a reply due after 0.5 s) a player starved by four busy loops on
    # two cores sent all four of its choices unsearched, and the test had nothing to look at.
    res = asyncio.run(gm.play_match("Claim.evaluated.1", CLAIM_LONG, our_role=0,
                                    start_clock=10, play_clock=2))
    check_match(res, 2, server)
    d = wait_for_record(server, "Claim.evaluated.1")
    texts = [n["text"] for n in d["x-notes"]]
    notes = " ".join(texts)
    assert "player: evaluation from" in notes and "the search uses it" in notes, notes
    # learned before READY: before the player's switch to the compiled engine, which the
    # server waits for, at ply 0 (the match's first PLAY comes after READY)
    learned = next(i for i, t in enumerate(texts) if t.startswith("player: evaluation from"))
    switched = texts.index("player switched to CompiledEngine at ply 0")
    assert learned < switched, texts
    # and the first searched move's playouts ended with it (24 plies: the tree pondered between
    # READY and the first PLAY cannot have proven the root, as it did at 12); on a short clock
    # a starved player may send its first moves unsearched, and each such move says why
    searched = [x for x in d["x-decisions"] if x.get("search") == "agent.search"]
    assert searched and searched[0].get("evaluated", 0) > 0, (searched[:1], notes)
    before = [x for x in d["x-decisions"] if x.get("ply", 0) < searched[0]["ply"]]
    assert all(x.get("unsearched") or len(x.get("legal") or []) <= 1 for x in before), before
    # the record says which code played (the package version, and the commit in a checkout)
    from agent import code_version
    assert d.get("x-code") == code_version(), d.get("x-code")
