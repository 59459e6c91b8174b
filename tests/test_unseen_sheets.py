"""Sheets that do not ground within a start clock (issue #35, defect 9) are still played by an
engine the search runs on, never by random moves: argentina (aaai2006), whose relaxed
fixpoint alone takes over a minute of CPU, on the non-ground engine.  Sudoku (base), whose
win test has millions of ground instances and whose static relations the non-ground engine
will not list, is played on Prolog: measured in docs/benchmarks/robustness.md (over a minute
here)."""
from __future__ import annotations

import pytest

pytest.importorskip("pyswip")

from conftest import SHARED, needs_shared  # noqa: E402

ARGENTINA = SHARED / "corpus" / "games" / "aaai2006" / "games" / "argentina.3361209022" / "v0" / "argentina.3361209022.kif"


@needs_shared
def test_argentina_is_played_by_the_non_ground_engine_when_grounding_runs_out(tmp_path):
    from agent.engine import load_engine
    from gdl.kif import read_rules_file

    sm = load_engine(read_rules_file(ARGENTINA), budget_seconds=3.0, cache_dir=tmp_path)
    try:
        assert sm.info["engine"] == "nonground", sm.info
        assert "grounding took longer than its 3 s budget" in sm.info["reason"], sm.info
        s = sm.initial_state()
        assert all(sm.legal_moves(s, r) for r in range(len(sm.roles)))
        depth, goals = sm.random_playout(s, seed=1)
        assert depth > 0 and all(len(g) == 1 for g in goals), (depth, goals)
    finally:
        sm.close()
