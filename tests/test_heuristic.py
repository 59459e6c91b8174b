"""The game's evaluation found from the rules (agent/search/heuristic.py, issue #34)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agent.engine import load_engine
from agent.match.rules import Scrambler
from agent.persona import load_persona
from agent.search import heuristic as H
from agent.search import SearchSettings, search
from agent.search.driver_compiled import _evaluation
from gdl.kif import parse_rules

# Whoever claims cell 1 wins; cells 2-4 are decoys, and a player may pass.  Under random
# play the owner of cell 1 decides the outcome: the evaluation must find that group, from
# the facts' structure alone.
def claim_rules(cells: int = 4, plies: int = 6) -> str:
    """The claim game with ``cells`` cells, over ``plies`` plies."""
    return f"""
(role red) (role blue)
(init (control red)) (init (step 0))
{" ".join(f"(cell {c})" for c in range(1, cells + 1))}
{" ".join(f"(succ {n} {n + 1})" for n in range(plies))}
(<= (claimed ?c) (true (owner ?c ?p)))
(<= (legal ?p (claim ?c)) (true (control ?p)) (cell ?c) (not (claimed ?c)))
(<= (legal ?p pass) (true (control ?p)))
(<= (legal ?p noop) (role ?p) (not (true (control ?p))))
(<= (next (owner ?c ?p)) (does ?p (claim ?c)))
(<= (next (owner ?c ?p)) (true (owner ?c ?p)))
(<= (next (control blue)) (true (control red)))
(<= (next (control red)) (true (control blue)))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= terminal (true (step {plies})))
(<= (goal red 100) (true (owner 1 red)))
(<= (goal blue 0) (true (owner 1 red)))
(<= (goal blue 100) (true (owner 1 blue)))
(<= (goal red 0) (true (owner 1 blue)))
(<= (goal ?p 50) (role ?p) (not (claimed 1)))
"""


CLAIM = claim_rules()


def _rename(term, forward: dict):
    if isinstance(term, tuple):
        return tuple(_rename(t, forward) for t in term)
    return forward.get(term, term)


@pytest.fixture(scope="module")
def claim():
    return load_engine(parse_rules(CLAIM), engine="compiled")


def test_fact_groups_come_from_structure_only():
    assert H.fact_groups(("owner", "1", "red")) == [
        ("owner",), ("owner", 0, "1"), ("owner", 1, "red"), ("owner", 0, "1", 1, "red")]
    assert H.fact_groups("open") == [("open",)]
    # a function term is no constant: it makes no group of its own
    assert H.fact_groups(("cell", ("at", "1", "2"), "x")) == [("cell",), ("cell", 1, "x")]


def test_the_evaluation_finds_who_owns_the_deciding_cell(claim):
    h = H.learn(claim, playouts=300, seconds=None)
    assert h is not None and h.playouts == 300 and (h.r2 >= H.R2_MIN).all()
    red_owns = frozenset({("control", "blue"), ("step", "1"), ("owner", "1", "red")})
    blue_owns = frozenset({("control", "blue"), ("step", "1"), ("owner", "1", "blue")})
    decoy = frozenset({("control", "blue"), ("step", "1"), ("owner", "2", "red")})
    assert h.value(red_owns)[0] > 80 and h.value(red_owns)[1] < 20
    assert h.value(blue_owns)[1] > 80 and h.value(blue_owns)[0] < 20
    assert 30 < h.value(decoy)[0] < 70       # a decoy cell says little
    assert ((h.value(red_owns) >= 0) & (h.value(red_owns) <= 100)).all()


def _samples(sm, n: int, seed: int = 3):
    """n random playouts' states, playout of each, final goals (as ``Learner`` samples)."""
    import random
    rnd = random.Random(seed)
    s0 = sm.initial_state()
    states, owner, finals = [], [], []
    while len(finals) < n:
        traj, goals = H.playout(sm, s0, rnd)
        owner += [len(finals)] * len(traj)
        finals.append(goals)
        states += traj
    return states, np.array(owner), np.array(finals, np.float64)


def test_a_scrambled_game_has_the_same_evaluation(claim):
    """The fit reads structure only: the original's samples renamed give the same weights on
    the renamed groups.  And the scrambled sheet sampled on its own (its moves come in
    another order, so other playouts) finds the same evaluation within sampling noise."""
    scr = Scrambler(CLAIM, seed=5)
    fwd = scr.forward
    states, owner, finals = _samples(claim, 300)
    a = H.fit(*H.design(states), owner, finals)
    b = H.fit(*H.design([frozenset(_rename(f, fwd) for f in s) for s in states]), owner, finals)
    assert a is not None and b is not None
    pos = {k: i for i, k in enumerate(b.groups)}
    assert sorted(pos) == sorted(_rename(k, fwd) for k in a.groups)
    order = [pos[_rename(k, fwd)] for k in a.groups]
    assert np.allclose(a.weights, b.weights[:, order]) and np.allclose(a.intercept, b.intercept)

    h = H.learn(claim, playouts=300, seconds=None)
    scrambled = load_engine(parse_rules(scr.text(CLAIM)), engine="compiled")
    hs = H.learn(scrambled, playouts=300, seconds=None)
    assert h is not None and hs is not None
    diffs = [abs(h.value(s) - hs.value(frozenset(_rename(f, fwd) for f in s))).max() for s in states[:300]]
    assert max(diffs) < 15


def test_no_evaluation_where_counts_say_nothing():
    """ticTacToe under random play: no group of facts predicts the outcome well enough."""
    from gdl.kif import read_rules_file
    from pathlib import Path
    ttt = load_engine(read_rules_file(Path(__file__).parents[1] / "games" / "ticTacToe.kif"), engine="compiled")
    assert H.learn(ttt, playouts=300, seconds=None) is None


def test_both_drivers_evaluate_a_state_alike(claim):
    h = H.learn(claim, playouts=300, seconds=None)
    ev_w, ev_b = h.bit_values(claim.base), h.intercept
    out = np.zeros(2)
    states, _, _ = _samples(claim, 20, seed=9)
    for s in states:
        _evaluation(claim.pack(s), ev_w, ev_b, out)
        assert np.allclose(out, h.value(s))


@pytest.mark.parametrize("driver", ["compiled", "sm"])
def test_live_play_ends_playouts_with_the_evaluation(claim, driver, monkeypatch):
    """Live play: a playout not ended after EVAL_DEPTH plies is scored by the evaluation;
    thesis mode (fitting) and a persona with a utility never use it."""
    from agent.reasoner.prolog import PrologReasoner
    monkeypatch.setattr(H, "EVAL_DEPTH", 2)
    h = H.learn(claim, playouts=300, seconds=None)
    sm = claim if driver == "compiled" else PrologReasoner(parse_rules(CLAIM))
    s0 = sm.initial_state()
    champion = load_persona("champion")
    res = search(sm, s0, 0, champion, SearchSettings(seed=1, limit=300, heuristic=h))
    assert res.evaluated > 0 and res.evaluated <= res.playouts
    # the evaluation says claiming cell 1 wins: the search claims it
    assert res.move == ("claim", "1")
    assert search(sm, s0, 0, champion, SearchSettings(seed=1, limit=300, heuristic=h, thesis=True)).evaluated == 0
    assert search(sm, s0, 0, champion, SearchSettings(seed=1, limit=300)).evaluated == 0
    util = dataclasses.replace(champion, utility_lambda=0.5, utility_weights={"mobility": 1.0})
    assert search(sm, s0, 0, util, SearchSettings(seed=1, limit=300, heuristic=h)).evaluated == 0


def test_learning_runs_in_slices_and_stops_at_its_budget():
    """Through the state-machine interface (here Prolog: slow enough to need many slices)."""
    from agent.reasoner.prolog import PrologReasoner
    learner = H.Learner(PrologReasoner(parse_rules(CLAIM)), 10_000, 0.3)
    steps = 0
    while not learner.step(0.05):
        steps += 1
    assert steps >= 2       # it came back between slices
    assert learner.done and learner.spent >= 0.3
    assert learner.result is None or learner.result.playouts < 10_000


def test_packed_states_count_as_their_facts_do(claim):
    """The compiled engine's sampler (packed states, numba) and the state-machine one count
    the same groups the same way."""
    states, _, _ = _samples(claim, 50, seed=4)
    keys, X = H.design(states)
    packed = np.stack([claim.pack(s) for s in states])
    pkeys, PX = H.design_packed(packed, H._memberships(claim.base)[0], len(claim.base))
    pos = {k: i for i, k in enumerate(pkeys)}
    assert sorted(pos) == sorted(keys)
    assert np.array_equal(X, PX[:, [pos[k] for k in keys]])


def test_the_compiled_sampler_learns_within_its_bounds(claim, monkeypatch):
    """A compiled engine is sampled in numba; the sample stops at its bound, and what was
    sampled is still fitted."""
    learner = H.Learner(claim, 300, None)
    assert learner.packed_states and learner.step() and learner.result is not None
    assert learner.result.playouts == 300
    monkeypatch.setattr(H, "MAX_SAMPLES", 500)
    small = H.Learner(claim, 10_000, None)
    small.step()
    assert small.done and small.full and small.result is not None
    assert small.result.samples <= 500 and small.result.playouts < 10_000


def test_the_state_machine_sample_is_bounded_by_its_count_matrix(monkeypatch):
    """Through the state-machine interface the sample stops once states x groups seen
    reach MAX_CELLS (a game with many kinds of facts cannot fill the player's memory)."""
    from agent.reasoner.prolog import PrologReasoner
    monkeypatch.setattr(H, "MAX_CELLS", 2_000)
    learner = H.Learner(PrologReasoner(parse_rules(CLAIM)), 10_000, None)
    learner.step()
    assert learner.done and learner.full
    assert len(learner.finals) < 10_000


def test_a_playout_gives_a_few_of_its_states():
    """One playout's states share its outcome: the sample keeps about PER_PLAYOUT of each
    (one in mean length / PER_PLAYOUT, from a random offset), through both samplers, so a
    bounded sample holds many playouts."""
    from agent.reasoner.prolog import PrologReasoner
    rules = claim_rules(cells=8, plies=60)
    compiled = load_engine(parse_rules(rules), engine="compiled")
    learner = H.Learner(compiled, 200, None)
    learner.step()
    h = learner.fitted
    assert h is not None and h.playouts == 200
    assert learner.stride() == 60 // H.PER_PLAYOUT
    # the first playouts (before a mean length is known) give all their 60 states
    assert 200 * 60 // learner.stride() * 0.9 < h.samples < 200 * H.PER_PLAYOUT + 16 * 60
    terms = H.Learner(PrologReasoner(parse_rules(rules)), 10, None)
    while len(terms.finals) < 5:
        terms._sample_terms()
    assert len(terms.states) == 60 + 4 * 10      # every state of the first playout, then 10 of each
