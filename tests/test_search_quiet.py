"""Quiet cuts scored with material (issue #34; driver_compiled's playouts, heuristic.QUIET_PLIES,
material.MATERIAL_MIX): with material, a playout the evaluation would cut at ``EVAL_DEPTH``
runs on until a ply that changes no role's material, at most ``QUIET_PLIES`` more; the state
that ply started from is scored by the evaluation mixed with its material's own value.

A game of forced moves makes one simulation's playout known in advance: a piece of black's
goes at the plies the test names, and an evaluation that counts pieces (plus a mark on one
step, to tell the states apart) shows which state was scored."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from agent.engine import load_engine
from agent.persona import load_persona
from agent.search import heuristic as H
from agent.search import material as M
from agent.search import SearchSettings, search
from gdl.kif import parse_rules

CHAIN = """
(role white) (role black)
(init (step 0)) (init (control white))
(piece p1) (piece p2) (piece p3) (piece p4) (piece p5) (piece p6)
(<= (init (has ?r ?p)) (role ?r) (piece ?p))
(succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
(succ 8 9) (succ 9 10) (succ 10 11) (succ 11 12) (succ 12 13) (succ 13 14) (succ 14 15)
(succ 15 16) (succ 16 17) (succ 17 18) (succ 18 19) (succ 19 20)
(<= (legal ?r go) (true (control ?r)))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= (next (control white)) (true (control black)))
(<= (next (control black)) (true (control white)))
(<= (next (has ?r ?p)) (true (has ?r ?p)) (not (captured ?r ?p)))
(<= (captured ?r ?p) (true (step ?n)) (taken ?r ?p ?n))
(<= terminal (true (step 20)))
(goal white 50) (goal black 50)
"""


def chain(taken: dict):
    """The game with black's piece ``p`` taken in the ply from step ``n`` (``{p: n}``)."""
    facts = " ".join(f"(taken black {p} {n})" for p, n in taken.items())
    return load_engine(parse_rules(CHAIN + facts), engine="compiled")


def pieces_evaluation():
    """White's value: 50, +5 a piece of its own, -5 a piece of black's, +2 at step 10."""
    groups = [("has", 0, "white"), ("has", 0, "black"), ("step", 0, "10")]
    return H.Heuristic(groups, np.array([[5.0, -5.0, 2.0], [-5.0, 5.0, 0.0]]), np.array([50.0, 50.0]),
                       np.ones(2), 100, 100)


def pieces_material(eng):
    sets = [[i for i, f in enumerate(eng.base) if f[0] == "has" and f[1] == role] for role in ("white", "black")]
    return M.Material(sets, [[("has", 0, "white")], [("has", 0, "black")]], [[0.5], [0.5]])


def cut_value(evaluation: float, white: int, black: int) -> float:
    """White's value of a scored state with material: the evaluation mixed with the
    material's logistic (``driver_compiled._material_value``)."""
    mean = (white + black) / 2
    h = 2.0 / (1.0 + math.exp(-M.SHARPNESS * (white - mean) / mean)) - 1.0
    return (1 - M.MATERIAL_MIX) * evaluation + M.MATERIAL_MIX * (50.0 + 50.0 * h)


def one_playout(eng, material):
    """White's root value after one simulation: the root's move, then a playout from step 1."""
    champ = dataclasses.replace(load_persona("champion"), tree_discount=1.0)
    res = search(eng, eng.initial_state(), 0, champ,
                 SearchSettings(seed=1, limit=1, solver=True, heuristic=pieces_evaluation(), material=material))
    assert res.evaluated == 1
    return float(res.q[0]), res.extended


@pytest.mark.parametrize("taken, quiet_value, extended", [
    # the cut falls at step 9 (EVAL_DEPTH plies after step 1); the ply from it takes a piece
    # and the next one is quiet: step 10's state is scored (one piece down, and the mark)
    ({"p1": 9}, cut_value(55.0 + 2.0, 6, 5), 1),
    # a piece goes in every ply from the cut on: the playout stops QUIET_PLIES plies later,
    # at step 13, black four pieces down
    ({"p1": 9, "p2": 10, "p3": 11, "p4": 12, "p5": 13}, cut_value(70.0, 6, 2), 1),
    # a piece taken before the cut: the ply from the cut is quiet, the cut's state is scored
    ({"p1": 3}, cut_value(55.0, 6, 5), 0),
])
def test_a_cut_waits_for_a_quiet_ply(taken, quiet_value, extended):
    assert H.EVAL_DEPTH == 8 and H.QUIET_PLIES == 4      # the steps above count on them
    eng = chain(taken)
    value, ext = one_playout(eng, pieces_material(eng))
    assert value == pytest.approx(quiet_value) and ext == extended


def test_without_material_the_cut_stays_at_the_evaluation_depth():
    eng = chain({"p1": 9, "p2": 10})
    value, ext = one_playout(eng, None)
    assert (value, ext) == (50.0, 0)          # step 9's state, before any piece went, evaluated alone


def test_material_value_is_level_at_equal_counts_and_bounded():
    eng = chain({"p1": 3})
    value, _ = one_playout(eng, pieces_material(eng))
    assert 55.0 < value < 100.0               # one piece up: above the evaluation's 55
    assert cut_value(50.0, 6, 6) == 50.0 and 0.0 < cut_value(0.0, 1, 6) < cut_value(100.0, 6, 1) < 100.0
