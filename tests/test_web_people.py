"""What keeps a person's match going and how it may end early, without a browser: the persona's
match manager told the person is still there (``MatchManager.touch``) is not abandoned for
silence, and the match runner ends a match by agreement (a resignation, an agreed draw) or
with a reason (``runner.Stop``), each said in the record.  The pages are driven in Chromium by
test_web_browser_people.py."""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

GAMES = Path(__file__).resolve().parents[1] / "games"


def _run_until_first_turn(tmp_path, end):
    """A ticTacToe match of a person (cross) against the random player, ended by ``end``
    (called with the ``Stop``) as soon as the person is asked for a move: (record, events)."""
    from agent.match.players import HumanPlayer, RandomPlayer
    from agent.match.runner import Stop, run_match
    events = []

    async def go():
        stop = Stop()
        human = HumanPlayer("alice")

        def on_event(e):
            events.append(e)
            if e["type"] == "start":     # the person has the first move: end it now
                asyncio.get_running_loop().call_later(0.2, end, stop)
        rec = await run_match((GAMES / "ticTacToe.kif").read_text(), [human, RandomPlayer(seed=1)],
                              start_clock=10, play_clock=5, out_dir=tmp_path, on_event=on_event,
                              cancel=stop, human_clock=float("inf"), match_id="web.alice.0000000001.ticTacToe",
                              referee="prolog")
        return rec
    return asyncio.run(go()), events


def test_a_resignation_is_recorded_with_its_result_and_reason(tmp_path):
    rec, events = _run_until_first_turn(tmp_path, lambda stop: stop.end(
        "alice (cross) resigned after 0 steps: random wins", goals=[0, 100], by="resignation"))
    assert rec["isAborted"] and not rec["isCompleted"] and "goalValues" not in rec   # no terminal state
    assert rec["x-result"] == {"by": "resignation", "goals": [0, 100]}
    assert rec["x-end-reason"].startswith("alice (cross) resigned")
    end = events[-1]
    assert end["type"] == "end" and end["goals"] == [0, 100] and end["by"] == "resignation"
    assert end["reason"] == rec["x-end-reason"]
    on_disk = (tmp_path / "web.alice.0000000001.ticTacToe.json").read_text()
    assert '"x-result"' in on_disk and '"resignation"' in on_disk
    # a second end asked for later changes nothing: the first wins
    from agent.match.runner import Stop
    s = Stop()
    assert s.end("first") and not s.end("second", goals=[50, 50], by="draw") and s.reason == "first"


def test_an_end_with_a_reason_is_an_abort_that_says_it(tmp_path):
    rec, events = _run_until_first_turn(tmp_path, lambda stop: stop.end("nobody came back: the page was closed"))
    assert rec["isAborted"] and "x-result" not in rec
    assert rec["x-end-reason"] == "nobody came back: the page was closed"
    assert events[-1]["type"] == "abort" and events[-1]["reason"] == rec["x-end-reason"]


def _fake_match(path: Path, idle_since: float):
    """Just what the manager's reaper and ``touch`` read of a match."""
    from agent.matchlog import MatchRecord
    return SimpleNamespace(id="web.bob.1", status="playing", thinking=0, last_activity=idle_since,
                           start_clock=120, play_clock=5, path=path, ply=3,
                           record=MatchRecord("web.bob.1", "", "", 120, 5),
                           kill=lambda: None, _notify=lambda: None, save=lambda: None,
                           unsearched_text=lambda: "")


def test_a_match_the_page_keeps_alive_is_not_abandoned_for_silence(tmp_path):
    """The persona's manager abandons a match that gets no message for its silence limit (a
    person thinking for 4 minutes lost the persona, issue 54); one it is told a person is
    still there (``touch``, the web page's keepalive) stays, and its record's time moves on
    (another manager sharing the folder would take it for a killed server's)."""
    from agent.server.config import ServerConfig
    from agent.server.matches import MatchManager
    mgr = MatchManager(ServerConfig(log_dir=tmp_path, max_idle=10.0))
    record = tmp_path / "web.bob.1.json"
    record.write_text("{}")
    os.utime(record, (1, 1))
    now = time.monotonic()
    kept, left = _fake_match(record, now - 60), _fake_match(tmp_path / "other.json", now - 60)
    left.id = "web.bob.2"
    mgr.matches = {kept.id: kept, left.id: left}
    assert mgr.touch(kept.id) is None
    mgr.reap(time.monotonic())
    assert kept.id in mgr.matches and kept.status == "playing"
    assert record.stat().st_mtime > 1
    assert left.id not in mgr.matches and left.status == "aborted"        # silent 60 s > 10 s
    assert "no message" in left.record.extra["x-end-reason"]
    assert mgr.touch(left.id) == "it no longer has this match"           # the page learns why
    kept.status = "ended"
    kept.record.extra["x-end-reason"] = "ended: over the memory budget"
    assert mgr.touch(kept.id) == "ended: over the memory budget"
