"""scripts/bench_search.py's head-to-head of two checkouts (``--versus``): both champions play
in child processes of their own, every move is legal, sides alternate, each side's search
figures are recorded, and the report shows the equal-time section built from the results."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    return load_script("bench_search")


def test_versus_plays_legal_games_with_alternating_sides(tmp_path):
    bench = _bench()
    out, results, report = tmp_path / "versus.jsonl", tmp_path / "results.jsonl", tmp_path / "report.md"
    results.write_text("")
    # this checkout against itself: the path through two child processes is the one measured
    assert bench.main(["--versus", str(ROOT), "--games", "ticTacToe", "--n", "2", "--seconds", "0.01",
                       "--versus-out", str(out), "--out", str(results), "--report", str(report),
                       "--speed-out", str(tmp_path / "none.jsonl")]) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["champion_role"] for r in recs] == [0, 1]
    for r in recs:
        assert r["budget"] == 0.01 and r["mode"] == "time" and r["opponent"].startswith("champion ")
        assert 5 <= r["plies"] <= 9 and sorted(r["goals"]) in ([0, 100], [50, 50])
        for side in r["stats"]:
            # every timed search runs its first chunk before it reads the clock, so a side
            # that searched has simulations whatever the load; what a search took is recorded
            # (for the report), not judged here: no timing assertion beyond the protocol's
            assert side["searches"] >= 2 and side["sims"] > 0 and isinstance(side["seconds"], float)
    text = report.read_text()
    assert "## Strength at equal time" in text and "| ticTacToe | champion " in text
    # resumable: the finished games are not played again
    bench.main(["--versus", str(ROOT), "--games", "ticTacToe", "--n", "2", "--seconds", "0.01",
                "--versus-out", str(out), "--out", str(results), "--report", str(report),
                "--speed-out", str(tmp_path / "none.jsonl")])
    assert len(out.read_text().splitlines()) == 2


def test_versus_refuses_a_directory_that_is_no_checkout(tmp_path):
    with pytest.raises(SystemExit, match="not a checkout of this project"):
        _bench().main(["--versus", str(tmp_path), "--games", "ticTacToe", "--n", "1",
                       "--versus-out", str(tmp_path / "v.jsonl")])


def test_versus_live_keeps_trees_and_ponders_between_moves(tmp_path):
    """``--live``: each side plays as the server's player does (its tree kept from move to
    move, pondering while the other side thinks); the games are legal and the record and the
    report say the run was live."""
    bench = _bench()
    out, results, report = tmp_path / "live.jsonl", tmp_path / "results.jsonl", tmp_path / "report.md"
    results.write_text("")
    assert bench.main(["--versus", str(ROOT), "--live", "--games", "ticTacToe", "--n", "2", "--seconds", "0.02",
                       "--versus-out", str(out), "--out", str(results), "--report", str(report),
                       "--speed-out", str(tmp_path / "none.jsonl")]) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["champion_role"] for r in recs] == [0, 1] and all(r["live"] for r in recs)
    for r in recs:
        assert 5 <= r["plies"] <= 9 and sorted(r["goals"]) in ([0, 100], [50, 50])
        assert all(side["searches"] >= 2 and side["sims"] > 0 for side in r["stats"])
    assert "--live" in report.read_text()


def _game(game, role, mine, theirs, load=1.0):
    goals = [0, 0]
    goals[role], goals[1 - role] = mine, theirs
    return {"kind": "game", "game": game, "champion_role": role, "goals": goals, "load": load}


def test_strength_guard_scores_flags_a_clear_loss_and_keeps_each_run_in_strength_md(tmp_path, monkeypatch):
    """scripts/strength_guard.py's bookkeeping (issue 55): the score of this version per game
    with its interval, a clear loss (interval below 0.5) flagged, and every run's line kept
    under "Guard runs" in strength.md, the rest of the file untouched."""
    guard = load_script("strength_guard")
    rows = ([_game("connectFour", i % 2, 100, 0) for i in range(6)] + [_game("connectFour", 0, 50, 50)]
            + [_game("breakthrough", i % 2, 0, 100, load=2.5) for i in range(12)])
    n, w, d, l, m, lo, hi = guard.scores(rows, "connectFour")
    assert (n, w, d, l) == (7, 6, 1, 0) and m == pytest.approx(6.5 / 7) and lo < m <= hi
    assert guard.scores(rows, "checkers")[0] == 0
    row, lost = guard.line("abc1234", "7f688de", rows, ["breakthrough", "connectFour", "checkers"], 0.1)
    assert lost                                  # 0 of 12 on breakthrough
    assert "| 0.00 [" in row and "(0-0-12)" in row and "(6-1-0)" in row and row.endswith("| 1.0-2.5 |")
    _, lost = guard.line("abc1234", "7f688de", rows[:7], ["connectFour"], 0.1)
    assert not lost
    strength = tmp_path / "strength.md"
    strength.write_text("# Strength\n\n## Run 21\n\ntext of run 21\n")
    monkeypatch.setattr(guard, "STRENGTH", strength)
    guard.record(row, ["breakthrough", "connectFour", "checkers"])
    guard.record(row.replace("abc1234", "def5678"), ["breakthrough", "connectFour", "checkers"])
    text = strength.read_text()
    assert text.startswith("# Strength\n\n## Run 21\n\ntext of run 21\n")
    part = text[text.index("## Guard runs"):]
    assert part.count("| date | this version |") == 1
    assert part.index("abc1234") < part.index("def5678") and part.count("7f688de") == 2
