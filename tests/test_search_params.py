"""Each persona parameter moves behaviour the way it should (spec 2.2-2.7), on inline games
where the effect is isolated.  Deterministic: every search is seeded."""
from __future__ import annotations

from collections import Counter

import numpy as np

from agent.search import SearchSettings, search
from agent.search import tree as TR
from agent.search.params import build
from agent.search.rng import make_rng
from test_search_support import (RACE, T, counter_game, make, menu_game, needle,
                                 neutral, persona)


def choices(sm, p, n, limit, **kw):
    s0 = sm.initial_state()
    return Counter(search(sm, s0, 0, p, SearchSettings(seed=s, limit=limit, **kw)).move for s in range(n))


def tree_depth(arrays) -> int:
    depth = {0: 0}
    stack = [0]
    best = 0
    while stack:
        n = stack.pop()
        c = int(arrays.first_child[n])
        while c >= 0:
            depth[c] = depth[n] + 1
            best = max(best, depth[c])
            stack.append(c)
            c = int(arrays.next_sib[c])
    return best


# ------------------------------------------------------------------ final choice
def test_random_error_one_plays_uniformly(make):
    sm = make(menu_game({"a": 100, "b": 60, "c": 30, "d": 10, "e": 0}))
    n = 500
    counts = choices(sm, neutral(random_error=1.0), n, limit=5)
    assert len(counts) == 5
    expected = n / 5
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 18.47, counts     # chi-square, 4 degrees of freedom, p = 0.001
    assert choices(sm, neutral(random_error=0.0), 50, limit=5) == Counter({T("(pick a)"): 50})


def test_random_error_half_mixes(make):
    sm = make(menu_game({"a": 100, "b": 0}))
    counts = choices(sm, neutral(random_error=0.5), 200, limit=4)
    # best with probability 0.5 + 0.5 / 2
    assert 120 < counts[T("(pick a)")] < 180, counts


def test_nice_threshold_spreads_choices(make):
    # (no 100: the solver would take a proven win whatever the persona)
    sm = make(menu_game({"a": 99, "b": 94, "c": 89, "d": 40, "e": 0}))
    strict = choices(sm, neutral(nice_threshold=0.0), 40, limit=60)
    assert strict == Counter({T("(pick a)"): 40})
    nice = choices(sm, neutral(nice_threshold=12.0), 90, limit=60)
    assert set(nice) == {T("(pick a)"), T("(pick b)"), T("(pick c)")}, nice
    assert min(nice.values()) > 15
    nicer = choices(sm, neutral(nice_threshold=100.0, exploration_factor=140), 100, limit=60)
    assert len(nicer) >= 4


# ------------------------------------------------------------------ personality bias
def test_aggressiveness_changes_move_choice(make):
    # 86 is "won" (no bias); 70 is good but not won: an aggressive persona inflates it
    sm = make(menu_game({"a": 86, "b": 70}))
    assert choices(sm, neutral(), 10, limit=20) == Counter({T("(pick a)"): 10})
    aggr = neutral(aggressiveness=[1.3, 1.0])
    assert choices(sm, aggr, 10, limit=20) == Counter({T("(pick b)"): 10})
    r = search(sm, sm.initial_state(), 0, aggr, SearchSettings(seed=1, limit=20))
    assert np.allclose(sorted(r.q), [86.0, 91.0])
    # the "others" entry does not touch the deciding role
    assert choices(sm, neutral(aggressiveness=[1.0, 3.0]), 5, limit=20) == Counter({T("(pick a)"): 5})


def test_defensiveness_scales_poor_results(make):
    sm = make(menu_game({"a": 86, "c": 30}))
    assert choices(sm, neutral(), 5, limit=20) == Counter({T("(pick a)"): 5})
    assert choices(sm, neutral(defensiveness=[3.0, 1.0]), 5, limit=20) == Counter({T("(pick c)"): 5})
    r = search(sm, sm.initial_state(), 0, neutral(defensiveness=[0.5, 1.0]), SearchSettings(seed=1, limit=20))
    assert sorted(r.q) == [15.0, 86.0]


def test_middle_band_tosses_a_coin(make):
    sm = make(menu_game({"m": 50, "z": 0}))
    p = neutral(aggressiveness=[2.0, 1.0], defensiveness=[0.0, 1.0])
    # solver off: it would prove this tiny game's root and end the search (test_search_counts.py)
    r = search(sm, sm.initial_state(), 0, p, SearchSettings(seed=1, limit=300, solver=False))
    q = dict(zip(r.moves, r.q))[T("(pick m)")]
    assert 30 < q < 70          # half the time 100, half 0


# ------------------------------------------------------------------ discounts
def test_tree_discount_prefers_quicker_wins(make):
    sm = make(RACE)
    flat = choices(sm, neutral(), 30, limit=30, solver=False)
    assert len(flat) == 2           # both win: nothing to prefer
    quick = choices(sm, neutral(tree_discount=0.9), 30, limit=30, solver=False)
    assert quick == Counter({T("quick"): 30})
    r = search(sm, sm.initial_state(), 0, neutral(tree_discount=0.9),
               SearchSettings(seed=1, limit=30, solver=False))
    q = dict(zip(r.moves, r.q))
    assert q[T("quick")] == 90.0 and q[T("slow")] < 90.0 * 0.9
    # the solver also takes the nearest proven win
    assert choices(sm, neutral(), 10, limit=30) == Counter({T("quick"): 10})


def test_charge_discount_applies_once_to_charged_results(make):
    sm = make(counter_game(6))
    r = search(sm, sm.initial_state(), 0, neutral(charge_discount=0.9, horizon=1),
               SearchSettings(seed=1, limit=10))
    assert np.allclose(r.q, 90.0)           # every result came from a playout: 100 * 0.9 once
    menu = make(menu_game({"a": 80, "b": 20}))
    r = search(menu, menu.initial_state(), 0, neutral(charge_discount=0.9), SearchSettings(seed=1, limit=10))
    assert sorted(r.q) == [20.0, 80.0]      # terminal reached in the tree: not discounted


# ------------------------------------------------------------------ depth limits
def test_horizon_limits_tree_depth(make):
    sm = make(counter_game(30))
    s0 = sm.initial_state()
    shallow = search(sm, s0, 0, persona(horizon=3), SearchSettings(seed=1, limit=200))
    deep = search(sm, s0, 0, persona(horizon=20), SearchSettings(seed=1, limit=200))
    assert tree_depth(shallow.tree.arrays) == 3
    assert tree_depth(deep.tree.arrays) > 3


def test_charge_depth_cuts_playouts_to_charge_defaults(make):
    sm = make(counter_game(30))
    s0 = sm.initial_state()
    cut = neutral(horizon=1, charge_depth=5, charge_defaults=[40.0, 35.0])
    assert np.allclose(search(sm, s0, 0, cut, SearchSettings(seed=1, limit=10)).q, 40.0)
    full = neutral(horizon=1, charge_depth=100)
    assert np.allclose(search(sm, s0, 0, full, SearchSettings(seed=1, limit=10)).q, 100.0)
    zero = neutral(horizon=1, charge_depth=0, charge_defaults=[36.0, 36.0])
    assert np.allclose(search(sm, s0, 0, zero, SearchSettings(seed=1, limit=10)).q, 36.0)


# ------------------------------------------------------------------ playout policy
def test_epsilon_uses_mast(make, no_decisive):
    # after `a` one of ten moves wins (100), the rest lose; `b` gives 40 at once.  Random
    # playouts value `a` near 10; MAST playouts learn the winning move (without decisive
    # moves, which would take the needle in every playout)
    sm = needle(make)
    s0 = sm.initial_state()
    base = dict(horizon=1, tree_discount=1.0, charge_discount=1.0, rave=0, grave=0)
    uniform = search(sm, s0, 0, persona(epsilon=0.0, **base), SearchSettings(seed=1, limit=300))
    mast = search(sm, s0, 0, persona(epsilon=1.0, **base), SearchSettings(seed=1, limit=300))
    qa = lambda r: dict(zip(r.moves, r.q))[T("a")]
    assert qa(uniform) < 25 and uniform.move == T("b")
    assert qa(mast) > 60 and mast.move == T("a")
    t = mast.tree
    win_id = t.move_index[0][T("(n 7)")]
    assert t.arrays.mast_q[0, win_id] == 100.0 and t.arrays.mast_n[0, win_id] > 50
    # a colder Gibbs draw exploits harder
    hot = search(sm, s0, 0, persona(epsilon=1.0, mast_tau=200.0, **base), SearchSettings(seed=1, limit=300))
    assert qa(hot) < qa(mast)


# ------------------------------------------------------------------ selection
def _tree_with_root(q, n, amaf_q=None, amaf_n=None):
    R, moves = 1, len(q)
    t = TR.new_tree(R, moves, 4, 16, 4)
    TR.reset_root(t, False, np.zeros(R))
    TR.init_slots(t, 0, np.array([moves], np.int32), np.arange(moves, dtype=np.int32))
    t.slot_q[:moves] = q
    t.slot_n[:moves] = n
    t.visits[0] = sum(n)
    if amaf_q is not None:
        t.amaf_q[0, 0, :moves] = amaf_q
        t.amaf_n[0, 0, :moves] = amaf_n
    return t


def _select(t, p):
    params, _ = build(p, 1, 0)
    out = np.zeros(1, np.int32)
    TR.select(t, 0, 0, params, make_rng(1), out)
    return int(out[0])


def test_exploration_factor_spreads_visits(make):
    sm = make(menu_game({"a": 99, "b": 90, "c": 80, "d": 70}))
    s0 = sm.initial_state()
    # solver off: it would prove this tiny game's root and end the search (test_search_counts.py)
    greedy = search(sm, s0, 0, neutral(exploration_factor=1), SearchSettings(seed=1, limit=200, solver=False))
    wide = search(sm, s0, 0, neutral(exploration_factor=140), SearchSettings(seed=1, limit=200, solver=False))
    assert greedy.visits.max() > 0.9 * 200
    assert wide.visits.max() < 0.6 * 200 and wide.visits.min() > 15


def test_rave_score_form():
    # move 0: Q 60 after 10 visits, poor AMAF (20); move 1: Q 50, AMAF 90
    t = _tree_with_root([60.0, 50.0], [10, 10], [20.0, 90.0], [100, 100])
    assert _select(t, neutral(exploration_factor=1)) == 0          # RAVE off: Q decides
    assert _select(t, neutral(exploration_factor=1, rave=1000)) == 1   # beta ~ 0.99: AMAF decides
    # the beta of the thesis: sqrt(rave / (3n + rave)), exploration inside (1 - beta)
    rave, n, C = 30.0, 10, 40.0
    beta = np.sqrt(rave / (3 * n + rave))
    u = 60.0 + C * np.sqrt(np.log(20) / n)
    got = TR.score(t, 0, 0, 0, 0, np.log(20), rave, C)
    assert np.isclose(got, beta * 20.0 + (1 - beta) * u)
    # unvisited: the AMAF value when RAVE is on and AMAF has data, else +inf
    t2 = _tree_with_root([0.0, 50.0], [0, 10], [33.0, 90.0], [5, 100])
    assert TR.score(t2, 0, 0, 0, 0, np.log(10), 500.0, C) == 33.0
    assert TR.score(t2, 0, 0, 0, 0, np.log(10), 0.0, C) == np.inf


def test_grave_threshold_picks_the_amaf_reference(make):
    # fewer root visits than grave: the root stays the reference, so any grave above the
    # simulation count gives the same search; grave = 0 uses each node's own AMAF at once
    sm = make(counter_game(12))
    s0 = sm.initial_state()
    p = lambda g: persona(grave=g, rave=2000, epsilon=0.0, tree_discount=0.95)
    trees = {g: search(sm, s0, 0, p(g), SearchSettings(seed=4, limit=80)).tree.arrays for g in (100, 120, 0)}
    n = int(min(t.meta[TR.M_SLOTS] for t in trees.values()))
    assert np.array_equal(trees[100].slot_n[:n], trees[120].slot_n[:n])
    assert not np.array_equal(trees[100].slot_n[:n], trees[0].slot_n[:n])


def test_limit_sets_simulations(make):
    sm = make(counter_game(5))
    # solver off: it would prove this tiny game's root and end the search (test_search_counts.py)
    s0 = sm.initial_state()
    assert search(sm, s0, 0, persona(limit=37), SearchSettings(seed=1, solver=False)).simulations == 37
    assert search(sm, s0, 0, persona(limit=37), SearchSettings(seed=1, limit=12, solver=False)).simulations == 12
