"""Designer utilities (spec 6.4-6.5): features from rules and state, calibration, the
lambda-mix in the backed-up value, on both drivers."""
from __future__ import annotations

import numpy as np
import pytest

from agent.persona import load_persona
from agent.search import features as F
from agent.search import leaf as L
from agent.search import SearchSettings, search
from test_search_support import RACE, T, TicTacToe, make, persona, reasoner, ROOT

GEMS = """
(role p)
(init start)
(<= (legal p grab) (true start))
(<= (legal p skip) (true start))
(<= (next (has p gem1)) (does p grab))
(<= (next (has p gem2)) (does p grab))
(<= (next over) (true start))
(<= terminal (true over))
(<= (goal p 50) (true over))
(<= (goal p 0) (true start))
"""


def util(weights, lam=1.0, **kw):
    return persona(tree_discount=1.0, charge_discount=1.0, utility={"lambda": lam, "weights": weights}, **kw)


def test_utility_rescales_weighted_features():
    lo, hi = np.zeros(3), np.array([100.0, 1.0, 10.0])
    raw = np.array([80.0, 1.0, 5.0])
    w = np.array([1.0, 0.5, -0.5])
    # U = 0.8 + 0.5 - 0.25 = 1.05 on [-0.5, 1.5]
    assert np.isclose(L.utility(raw, lo, hi, w), 100 * (1.05 + 0.5) / 2.0)
    assert L.utility(raw, lo, hi, np.zeros(3)) == 50.0
    assert L.utility(np.array([3.0]), np.array([2.0]), np.array([2.0]), np.array([1.0])) == 50.0


def test_calibration_from_random_playouts():
    sm = reasoner(RACE)
    cal = F.calibrate(sm)
    assert cal.l_ref == 4.0                       # quick: 1 ply, slow: 4 plies
    assert cal.relations == ["far", "start", "won"]
    assert cal.index("rel:far") == F.N_FIXED and cal.index("rel:nope") == -1
    assert (cal.lo[0, F.F_GOAL], cal.hi[0, F.F_GOAL]) == (0.0, 100.0)
    assert F.calibrate(sm) is cal                 # cached per game


def test_features_of_a_tictactoe_state():
    g = TicTacToe(ROOT / "games" / "ticTacToe.kif", False)
    s = g.state("x.. .o. ..x", "o")
    facts = F.FactIndex(g.roles)
    x = F.raw_features(s, False, [[50], [50]], 3, [1, 6], 0, facts, ["control", "square"])
    assert x[F.F_OWN] == 2 and x[F.F_OPP] == 2          # control nought counts for nought
    assert x[F.F_GOAL] == 50 and x[F.F_WIN] == 0 and x[F.F_LENGTH] == 3
    assert x[F.F_MOB] == 1 and x[F.F_OPP_MOB] == 6
    assert x[F.N_FIXED + 1] == 9 and x[F.N_FIXED] == 1
    assert L.goal_feature(L.read_goals([[]]), 0) == 50
    assert L.goal_feature(L.read_goals([[10, 20]]), 0) == 50
    assert L.goal_feature(L.read_goals([[0]]), 0) == 0


def test_length_weight_makes_a_rusher_or_a_dawdler(make):
    sm = make(RACE)
    s0 = sm.initial_state()
    rush = search(sm, s0, 0, util({"length": -1.0}), SearchSettings(seed=1, limit=30))
    q = dict(zip(rush.moves, rush.q))
    assert rush.move == T("quick") and np.isclose(q[T("quick")], 75.0) and np.isclose(q[T("slow")], 0.0)
    slow = search(sm, s0, 0, util({"length": 1.0}), SearchSettings(seed=1, limit=30))
    assert slow.move == T("slow")
    # lambda = 0.5 mixes the goal back in: both paths win, so length still decides
    half = search(sm, s0, 0, util({"length": -1.0}, lam=0.5), SearchSettings(seed=1, limit=30))
    assert np.isclose(dict(zip(half.moves, half.q))[T("quick")], 87.5)


def test_own_facts_make_a_collector(make):
    sm = make(GEMS)
    s0 = sm.initial_state()
    assert search(sm, s0, 0, util({"own_facts": 1.0}, lam=0.5), SearchSettings(seed=1, limit=20)).move == T("grab")
    assert search(sm, s0, 0, util({"own_facts": -1.0}, lam=0.5), SearchSettings(seed=1, limit=20)).move == T("skip")
    plain = search(sm, s0, 0, persona(tree_discount=1.0), SearchSettings(seed=1, limit=20))
    assert np.allclose(plain.q, 50.0)             # goals alone cannot tell them apart


@pytest.mark.parametrize("name", ["finisher", "rusher", "survivor", "attacker", "collector", "completionist"])
def test_generic_personas_play_tictactoe(name, make):
    if make is reasoner and name != "survivor":
        pytest.skip("one generic persona on the slow driver is enough")
    g = TicTacToe(ROOT / "games" / "ticTacToe.kif", False)
    eng = make(g.path)
    p = load_persona(name)
    assert p.utility_lambda == 0.5
    r = search(eng, g.state("x.. .o. ...", "x"), 0, p, SearchSettings(seed=1, limit=150))
    assert r.move in r.moves and r.visits.sum() == 150
    assert np.isnan(r.proven).all()               # the solver is off for utility personas
