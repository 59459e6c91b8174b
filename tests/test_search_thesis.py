"""Thesis mode (exactly the search of persona-model.md 2.8, used to score recorded
decisions) against live play, whose deviations README lists; each deviation is pinned
here (or in test_search.py / test_player_search.py where named), on both drivers."""
from __future__ import annotations

import numpy as np

from agent.search import SearchSettings, advance, item_seed, search, search_batch
from agent.search import tree as TR
from agent.search.params import MIN_VISIT_SHARE, P_MIN_SHARE, P_SOLVER, build
from agent.search.rng import make_rng
from test_search_support import T, counter_game, make, menu_game, neutral, nim_game, persona  # noqa: F401

MENU = menu_game({"a": 86, "b": 70, "c": 30, "d": 100, "e": 0})


def test_thesis_switch_sets_the_spec_search():
    p = persona()
    live, _ = build(p, 2, 0)
    thesis, _ = build(p, 2, 0, thesis=True)
    assert live[P_SOLVER] == 1 and live[P_MIN_SHARE] == MIN_VISIT_SHARE
    assert thesis[P_SOLVER] == 0 and thesis[P_MIN_SHARE] == 0


def test_visit_share_filter_only_in_live_play(make):
    """Deviation: a move needs MIN_VISIT_SHARE of the top visits to compete on Q."""
    sm = make(MENU)
    r = search(sm, sm.initial_state(), 0, neutral(), SearchSettings(seed=1, limit=10))
    q = np.array([90.0, 50.0, 10.0, 10.0, 10.0])       # one lucky visit at 90 ...
    n = np.array([1, 100, 1, 1, 1], np.int64)          # ... against 100 visits at 50
    for thesis, want in ((False, 1), (True, 0)):
        params, _ = build(neutral(), 1, 0, thesis=thesis, solver=False)  # MENU's moves are proven
        assert TR.choose(r.tree.arrays, params, q, n, make_rng(1)) == want


def test_solver_overrides_nice_threshold_only_in_live_play(make):
    """Deviation: with the solver, a proven win is played whatever NiceThreshold allows."""
    sm = make(MENU)
    s0 = sm.initial_state()
    nice = neutral(nice_threshold=100.0)        # any move is "nice enough"
    live = {search(sm, s0, 0, nice, SearchSettings(seed=s, limit=20)).move for s in range(12)}
    thesis = {search(sm, s0, 0, nice, SearchSettings(seed=s, limit=20, thesis=True)).move for s in range(12)}
    assert live == {T("(pick d)")}
    assert len(thesis) >= 3                     # uniform over all five, as spec 2.7 says


def test_thesis_mode_runs_no_solver(make):
    """Deviation: the MCTS-Solver (test_search.py proves nim with it in live play)."""
    sm = make(nim_game(7))
    r = search(sm, sm.initial_state(), 0, persona(), SearchSettings(seed=3, limit=400, thesis=True))
    assert np.isnan(r.proven).all() and r.tree.arrays.proven[0] == 0
    assert r.visits.sum() == 400


def test_thesis_mode_searches_a_fresh_tree(make):
    """Deviation: live play reuses the subtree of the move played (test_search.py); thesis
    mode ignores a tree handed in, so a decision depends on (state, role, persona, seed)."""
    sm = make(counter_game(10))
    s0 = sm.initial_state()
    p = persona()
    first = search(sm, s0, 0, p, SearchSettings(seed=1, limit=80))
    s1 = sm.next_state(s0, [first.move])
    reused = search(sm, s1, 0, p,
                    SearchSettings(seed=2, limit=50, thesis=True), tree=advance(first.tree, [first.move]))
    fresh = search(sm, s1, 0, p, SearchSettings(seed=2, limit=50, thesis=True))
    assert reused.tree.arrays.visits[0] == 50
    assert reused.q.tolist() == fresh.q.tolist() and reused.visits.tolist() == fresh.visits.tolist()


def test_search_batch_is_the_thesis_search_by_default(make):
    sm = make(nim_game(7))
    s0 = sm.initial_state()
    s1 = sm.next_state(s0, [T("(take 1)"), "noop"])
    p = persona(limit=60)
    res = search_batch(sm, [(s0, 0, T("(take 2)")), (s1, 1), (s0, 0, T("(take 1)"), 42)], p, seed=5)
    assert len(res) == 3 and all(r.tree is None for r in res)
    for r, (state, role, seed) in zip(res, [(s0, 0, item_seed(5, 0)), (s1, 1, item_seed(5, 1)), (s0, 0, 42)]):
        one = search(sm, state, role, p, SearchSettings(seed=seed, thesis=True))
        assert r.moves == one.moves and r.q.tolist() == one.q.tolist()
        assert r.visits.tolist() == one.visits.tolist() and r.visits.sum() == 60
    live = search_batch(sm, [(s0, 0)], p, seed=5, thesis=False)[0]
    assert live.q.tolist() == search(sm, s0, 0, p, SearchSettings(seed=item_seed(5, 0))).q.tolist()
