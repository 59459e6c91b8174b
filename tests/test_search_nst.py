"""NST in live-play playouts (issue #34): a role's move is valued as the reply to the move the
next role made in the ply before (2-grams), next to its MAST value.  Thesis mode (fitting,
the spec's search) has no NST at all."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.persona import load_persona
from agent.search import tree as T
from agent.search.params import P_EPSILON, P_MAST_TAU, P_NST, N_PARAMS, build
from agent.search.rng import make_rng

GAMES = Path(__file__).resolve().parents[1] / "games"


def _pair(t, r, ctx, m):
    """(visits, mean) of role r's move m after ``ctx`` in the tree's NST table."""
    j = T.nst_slot(t.nst_key, T.nst_pair(r, ctx, m), False)
    return (0, 0.0) if j < 0 else (int(t.nst_n[j]), float(t.nst_q[j]))


def _tree_with_one_ply():
    """Two roles; the root's joint move (role 0: id 4, role 1: id 0) leads to one child."""
    t = T.new_tree(2, 8, 16, 64, 1, 0, T.NST_SLOTS)
    T.reset_root(t, 0, np.zeros(2))
    assert T.init_slots(t, 0, np.array([2, 1], np.int32), np.array([1, 4, 0], np.int32))
    child = T.add_child(t, 0, np.array([1, 2], np.int32), 0, np.zeros(2))
    return t, np.array([0, child], np.int64), np.array([[1, 2]], np.int32)


def test_every_reply_pair_of_a_simulation_is_counted_tree_plies_first():
    t, path, jslots = _tree_with_one_ply()
    live, _ = build(load_persona("champion"), 2, 0)
    # plies: tree (4, 0); playout (0, 5), (6, 0): role 1's 5 answers role 0's 4, role 0's 6
    # answers role 1's 5
    pmoves = np.array([[0, 5], [6, 0]], np.int32)
    T.backprop(t, live, path, 1, jslots, pmoves, 2, np.array([100.0, 0.0]), 0)
    assert _pair(t, 1, 4, 5) == (1, 0.0)
    assert _pair(t, 0, 5, 6) == (1, 100.0)
    T.backprop(t, live, path, 1, jslots, pmoves, 2, np.array([0.0, 100.0]), 0)
    assert _pair(t, 1, 4, 5) == (2, 50.0)
    assert _pair(t, 0, 5, 6) == (2, 50.0)
    assert _pair(t, 0, 4, 6) == (0, 0.0)      # not consecutive: never a pair
    # a new decision starts a table of its own, as MAST does
    T.reset_mast(t)
    assert _pair(t, 0, 5, 6) == (0, 0.0)


def test_thesis_mode_keeps_no_table():
    t, path, jslots = _tree_with_one_ply()
    thesis, _ = build(load_persona("champion"), 2, 0, thesis=True)
    assert thesis[P_NST] == 0.0
    T.backprop(t, thesis, path, 1, jslots, np.array([[0, 5], [6, 0]], np.int32), 2,
               np.array([100.0, 0.0]), 0)
    assert not t.nst_key.any()


def _draws(t, params, ctx, n=4000):
    rng = make_rng(7)
    ids = np.arange(4, dtype=np.int32)
    picks = np.zeros(4, np.int64)
    for _ in range(n):
        picks[T.playout_move(t, params, 0, ids, 4, rng, ctx)] += 1
    return picks / n


def test_a_reply_seen_often_enough_is_drawn_more():
    """Every move's MAST value is 50; as the reply to move 3, move 2 has won its NST_MIN
    playouts: its value is then 75, and at tau 10 it is drawn about 80 % of the time (1 /
    (1 + 3 e^-2.5)).  With one visit fewer, or after another move, or without NST (thesis
    mode), the draw stays uniform."""
    t = T.new_tree(1, 4, 4, 16, 1, 0, T.NST_SLOTS)
    T.reset_root(t, 0, np.zeros(1))
    t.mast_n[0, :4] = 100
    t.mast_q[0, :4] = 50.0
    j = T.nst_slot(t.nst_key, T.nst_pair(0, 3, 2), True)
    t.nst_n[j], t.nst_q[j] = T.NST_MIN, 100.0
    p = np.zeros(N_PARAMS)
    p[P_EPSILON], p[P_MAST_TAU], p[P_NST] = 1.0, 10.0, 1.0
    assert _draws(t, p, 3)[2] == pytest.approx(1 / (1 + 3 * np.exp(-2.5)), abs=0.03)
    for share in (_draws(t, p, 1), _draws(t, p, -1)):
        assert share[2] == pytest.approx(0.25, abs=0.03)
    off = p.copy()
    off[P_NST] = 0.0
    assert _draws(t, off, 3)[2] == pytest.approx(0.25, abs=0.03)
    t.nst_n[j] = T.NST_MIN - 1
    assert _draws(t, p, 3)[2] == pytest.approx(0.25, abs=0.03)


def test_a_full_neighbourhood_drops_the_pair_instead_of_growing():
    """The table is bounded: a key whose NST_PROBES slots are all taken is not recorded."""
    keys = np.zeros(T.NST_SLOTS, np.int64)
    stored = [T.nst_slot(keys, T.nst_pair(0, c, 1), True) for c in range(3 * T.NST_SLOTS)]
    assert sum(1 for j in stored if j >= 0) <= T.NST_SLOTS
    assert (keys != 0).sum() == sum(1 for j in stored if j >= 0)
    missing = [c for c, j in enumerate(stored) if j < 0]
    assert missing and T.nst_slot(keys, T.nst_pair(0, missing[0], 1), False) == -1


@pytest.mark.parametrize("thesis", [False, True])
def test_live_searches_fill_the_table_and_thesis_searches_have_none(thesis, tmp_path):
    pytest.importorskip("pyswip")
    from agent.engine import load_engine
    from agent.search import SearchSettings, driver_compiled
    from gdl.kif import read_rules_file
    eng = load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled", cache_dir=tmp_path)
    res = driver_compiled.search(eng, eng.initial_state(), 0, load_persona("champion"),
                                 SearchSettings(seed=1, limit=300, thesis=thesis))
    a = res.tree.arrays
    if thesis:
        assert a.nst_key.shape == (1,)
    else:
        assert a.nst_key.shape == (T.NST_SLOTS,)
        assert (a.nst_n >= T.NST_MIN).sum() > 10
