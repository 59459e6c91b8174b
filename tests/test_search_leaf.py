"""One leaf evaluator for both drivers (agent/search/leaf.py): the state-machine driver on
the Prolog reasoner and the compiled driver on the compiled engine give exactly the same
Q-values and visits for the same seed, with procedural (utility) and thesis personas, also
when the compiled engine's move order is not the canonical one (a scrambled cache hit)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from agent.engine import load_engine
from agent.persona import load_persona
from agent.search import leaf as L
from agent.search import SearchSettings, search
from agent.search.driver_compiled import engine_data
from gdl.kif import parse_rules
from test_search_support import ROOT, TicTacToe, compiled, counter_game, persona, reasoner

TTT = ROOT / "games" / "ticTacToe.kif"


def same_search(a, b):
    """Both results name the same moves with the same Q-values and visits, exactly."""
    assert a.moves == b.moves
    assert a.q.tolist() == b.q.tolist()
    assert a.visits.tolist() == b.visits.tolist()
    assert a.move == b.move


def test_goal_reading():
    gr = L.read_goals([[], [30], [10, 90]])
    scores = np.zeros(3)
    L.goal_scores(gr, scores)
    assert scores.tolist() == [0.0, 30.0, 90.0]               # what a role scores
    assert [L.goal_feature(gr, r) for r in range(3)] == [50.0, 30.0, 50.0]   # spec 6.4 / 8.38


@pytest.mark.parametrize("thesis", [False, True], ids=["live", "thesis"])
@pytest.mark.parametrize("name", ["survivor", "attacker", "sanguine", "champion"])
def test_both_drivers_same_q_and_visits(name, thesis, no_decisive):
    # (live play on the compiled engine takes decisive moves on ticTacToe, driver A on Prolog
    # none: the leaf is compared without them)
    p = load_persona(name).replace(limit=150)
    g = TicTacToe(TTT, False)
    for state, role in ((g.sm.initial_state(), 0), (g.state("x.. .o. ..x", "o"), 1)):
        a = search(reasoner(TTT), state, role, p, SearchSettings(seed=11, thesis=thesis))
        b = search(compiled(TTT), state, role, p, SearchSettings(seed=11, thesis=thesis))
        same_search(a, b)


# Goals only at the end: a playout cut before it reads "no goal" (spec 8.38: 50), which the
# compiled driver once read as 0, so the two drivers disagreed for any persona weighing goal.
NO_GOAL_BEFORE_END = re.sub(r"\(<= \(goal p 0\).*\n", "", counter_game(8))


def test_goal_feature_without_a_goal_is_50_on_both_drivers():
    p = persona(charge_depth=1, horizon=1, tree_discount=1.0, charge_discount=1.0,
                utility={"lambda": 1.0, "weights": {"goal": 1.0}})
    for make in (reasoner, compiled):
        e = make(NO_GOAL_BEFORE_END)
        r = search(e, e.initial_state(), 0, p, SearchSettings(seed=1, limit=20))
        assert np.allclose(r.q, 50.0), make.__name__


def test_drivers_agree_when_the_engine_order_is_not_canonical(tmp_path):
    text = counter_game(6)
    scrambled = re.sub(r"\bb\b", "aa", re.sub(r"\ba\b", "zz", text))
    load_engine(parse_rules(text), engine="compiled", cache_dir=tmp_path)
    eng = load_engine(parse_rules(scrambled), engine="compiled", cache_dir=tmp_path)
    assert eng.info.get("source") == "cache" and engine_data(eng).sort == 1
    p = persona(limit=80, rave=300, grave=5, epsilon=0.5, charge_depth=3,
                utility={"lambda": 0.5, "weights": {"length": -1.0, "own_facts": 0.5}})
    pr = reasoner(scrambled)
    same_search(search(pr, pr.initial_state(), 0, p, SearchSettings(seed=3)),
                search(eng, eng.initial_state(), 0, p, SearchSettings(seed=3)))
