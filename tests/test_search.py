"""The persona search on both drivers (Prolog: A, compiled: B), on tiny inline games: results for
every legal move, determinism, the solver, tree reuse, pool exhaustion, simultaneous
moves, batches.  Parameter effects are in test_search_params.py, board games in
test_search_games.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agent.search import SearchSettings, advance, item_seed, search, search_batch
from agent.search import tree as TR
from test_search_support import (MATCHING, T, counter_game, menu_game, make, needle, neutral, nim_game,
                                 persona)

MENU = menu_game({"a": 86, "b": 70, "c": 30, "d": 100, "e": 0})


def test_q_and_visits_for_every_legal_move(make):
    sm = make(MENU)
    s0 = sm.initial_state()
    # without the solver: it proves this one-move game's root and ends the search there
    # (test_search_counts.py)
    r = search(sm, s0, 0, neutral(), SearchSettings(seed=1, limit=40, solver=False))
    assert r.moves == sm.legal_moves(s0, 0)
    assert len(r.q) == len(r.visits) == len(r.moves) == 5
    assert (r.visits >= 1).all() and r.visits.sum() == r.simulations == 40
    q = dict(zip(r.moves, r.q))
    assert q[T("(pick d)")] == 100 and q[T("(pick e)")] == 0 and q[T("(pick b)")] == 70
    assert r.move == T("(pick d)") and r.elapsed > 0 and r.tree is not None


def test_unvisited_moves_get_charge_default(make):
    sm = make(MENU)
    r = search(sm, sm.initial_state(), 0, neutral(charge_defaults=[37.5, 44]), SearchSettings(seed=1, limit=3))
    assert sorted(r.visits) == [0, 0, 1, 1, 1]
    assert all(q == 37.5 for q, n in zip(r.q, r.visits) if n == 0)


def test_same_seed_same_result_and_seeds_matter(make):
    sm = make(counter_game(12))
    s0 = sm.initial_state()
    p = persona(limit=60, rave=500, grave=50)  # every random stream in use (ties, MAST, AMAF)
    a = search(sm, s0, 0, p, SearchSettings(seed=7))
    b = search(sm, s0, 0, p, SearchSettings(seed=7))
    assert a.move == b.move and np.array_equal(a.q, b.q) and np.array_equal(a.visits, b.visits)
    others = [search(sm, s0, 0, p, SearchSettings(seed=s)).visits.tolist() for s in range(8, 12)]
    assert any(v != a.visits.tolist() for v in others)


def test_the_settings_record_and_the_older_keywords_search_alike(make):
    """``SearchSettings`` is the one way to give a search its budget and switches; the older
    keywords (still used by callers not moved yet) build the same record, so both give the
    same result, and a call that mixes them is refused."""
    sm = make(counter_game(12))
    s0 = sm.initial_state()
    p = persona(limit=60, rave=500, grave=50)
    a = search(sm, s0, 0, p, SearchSettings(seed=7, limit=50, solver=False))
    b = search(sm, s0, 0, p, seed=7, limit=50, solver=False)
    assert a.move == b.move and np.array_equal(a.q, b.q) and np.array_equal(a.visits, b.visits)
    with pytest.raises(TypeError):
        search(sm, s0, 0, p, SearchSettings(seed=7), limit=50)
    with pytest.raises(TypeError):
        search(sm, s0, 0, p, {"seed": 7})
    settings = SearchSettings(seed=1)
    with pytest.raises(dataclasses.FrozenInstanceError):    # a record is never changed in place
        settings.seed = 2


def test_solver_proves_nim(make):
    # 7 stones: taking 1 leaves 6 (a multiple of 3), a win; taking 2 leaves 5, a loss
    sm = make(nim_game(7))
    s0 = sm.initial_state()
    r = search(sm, s0, 0, persona(), SearchSettings(seed=3, limit=400))
    proven = dict(zip(r.moves, r.proven))
    assert proven[T("(take 1)")] == 100
    assert r.move == T("(take 1)")
    assert r.tree.arrays.proven[0] == 1 and r.tree.arrays.pval[0, 0] == 100
    # the loser's view: 6 stones, every move is a proven loss, the search still answers
    s6 = sm.next_state(s0, [T("(take 1)"), "noop"])
    r2 = search(sm, s6, 1, persona(), SearchSettings(seed=3, limit=400))
    assert (r2.proven == 0).all() and len(r2.q) == 2


def test_solver_off_still_plays(make):
    sm = make(nim_game(4))
    r = search(sm, sm.initial_state(), 0, persona(), SearchSettings(seed=1, limit=300, solver=False))
    assert np.isnan(r.proven).all() or r.tree.arrays.proven[0] == 0
    assert r.move == T("(take 1)")   # 4 -> 3 wins; plain statistics find it too


def test_node_pool_exhaustion_degrades_gracefully(make):
    sm = make(counter_game(20))
    s0 = sm.initial_state()
    r = search(sm, s0, 0, persona(), SearchSettings(seed=1, limit=150, max_nodes=4))
    assert r.simulations == 150 and r.nodes == 4 and r.pool_full > 0
    assert r.visits.sum() == 150 and np.isfinite(r.q).all()


def test_huge_limit_allocates_a_bounded_tree(make, monkeypatch):
    """A persona that searches until the clock (the tournament preset's limit is 10^7) gets
    a node pool bounded by TREE_BYTES, not ``limit`` nodes: 10^7 nodes took a player process
    past its 2 GB cap before its first move. A full pool only stops expansion.  (No count of
    simulations is asserted: these searches end on the clock, and on a loaded machine the
    Prolog reasoner's 0.1 s can end before the first one.)"""
    from agent.search import common
    sm = make(counter_game(30))
    s0 = sm.initial_state()
    big = search(sm, s0, 0, persona(limit=10_000_000), SearchSettings(seed=1, seconds=0.05))
    assert big.tree.capacity < 10_000_000
    monkeypatch.setattr(common, "TREE_BYTES", 20_000)
    r = search(sm, s0, 0, persona(limit=10_000_000), SearchSettings(seed=1, seconds=0.2))
    assert r.tree.capacity < 200 and r.move in sm.legal_moves(s0, 0)
    child = advance(r.tree, [r.move])
    if child is not None:   # reuse compacts into a pool within the same budget
        r2 = search(sm, sm.next_state(s0, [r.move]), 0, persona(limit=10_000_000),
                    SearchSettings(seed=2, seconds=0.1), tree=child)
        assert r2.tree.capacity < 200 and r2.move in sm.legal_moves(sm.next_state(s0, [r.move]), 0)


def test_tree_reuse_keeps_the_subtree(make):
    sm = make(counter_game(10))
    s0 = sm.initial_state()
    p = persona()
    # no solver: both moves reach the same state, so the search is a chain of 11 nodes
    # (transpositions) that the solver proves in a few simulations, which ends the search
    r = search(sm, s0, 0, p, SearchSettings(seed=1, limit=80, solver=False))
    child = advance(r.tree, [r.move])
    assert child is not None and child.arrays.visits[0] > 0
    kept = int(child.arrays.visits[0])
    s1 = sm.next_state(s0, [r.move])
    r2 = search(sm, s1, 0, p, SearchSettings(seed=2, limit=50, solver=False), tree=child)
    assert r2.tree.arrays.visits[0] == kept + 50
    assert r2.visits.sum() >= 50
    assert advance(r2.tree, [T("nonsense")]) is None


def test_simultaneous_moves_decoupled(make):
    sm = make(MATCHING)
    s0 = sm.initial_state()
    for role in (0, 1):
        # plain decoupled UCT (no RAVE: the thesis score form keeps its exploration inside
        # (1 - beta) and locks onto one move here) hovers around the mixed equilibrium
        r = search(sm, s0, role, neutral(), SearchSettings(seed=5, limit=200))
        assert len(r.q) == 2 and r.visits.sum() == 200
        assert all(25 < q < 75 for q in r.q) and r.visits.min() > 40, (r.q, r.visits)
        r = search(sm, s0, role, persona(), SearchSettings(seed=5, limit=50))
        assert r.visits.sum() == 50 and len(r.moves) == 2


def test_search_batch_matches_single_searches(make):
    sm = make(counter_game(8))
    s0 = sm.initial_state()
    s1 = sm.next_state(s0, [T("a")])
    p = persona(limit=30)
    res = search_batch(sm, [(s0, 0), (s1, 0), (s0, 0, 99)], p, seed=5)
    assert len(res) == 3 and all(r.tree is None for r in res)
    # the batch is the scoring path: spec 2.8's search (thesis), which a single search runs too
    single = search(sm, s1, 0, p, SearchSettings(seed=item_seed(5, 1), thesis=True))
    assert np.array_equal(res[1].q, single.q) and res[1].move == single.move
    assert np.array_equal(res[2].q, search(sm, s0, 0, p, SearchSettings(seed=99, thesis=True)).q)


def test_time_budget(make):
    sm = make(counter_game(10))
    # solver off: it would prove this small game and stop long before the clock
    # a clock and no limit: the search runs and returns.  How close to its deadline it ends
    # is a measured figure (docs/benchmarks/anytime.md), not a test's: on CI's loaded 2-core
    # machine any bound on elapsed time is a guess (at load 15 a 0.3 s budget once ran no
    # simulation, and the state-machine driver stops a query's estimated cost early)
    r = search(sm, sm.initial_state(), 0, persona(), SearchSettings(seed=1, seconds=1.0, solver=False))
    assert r.simulations > 0 and r.move in r.moves


def test_terminal_state_is_refused(make):
    sm = make(MENU)
    end = sm.next_state(sm.initial_state(), [T("(pick a)")])
    with pytest.raises(ValueError):
        search(sm, end, 0, persona(), SearchSettings(seed=1, limit=5))


def test_amaf_rows_exhausted_still_searches(make):
    sm = needle(make)
    from agent.search import common
    old = common.AMAF_BYTES
    common.AMAF_BYTES = 1        # one AMAF row: the root's
    try:
        # (without the solver: with decisive moves a playout from mid takes the needle, the
        # tree finds it sooner and the solver would end the search before 60 simulations)
        r = search(sm, sm.initial_state(), 0, persona(), SearchSettings(seed=1, limit=60, solver=False))
    finally:
        common.AMAF_BYTES = old
    assert r.tree.arrays.meta[TR.M_AMAF] == 1 and r.visits.sum() == 60
