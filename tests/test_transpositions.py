"""Transpositions (issue #34): in live play a state reached by two move orders is one node of
the search, on both drivers; thesis mode (fitting, spec 2.1) keeps the plain tree; a kept
subtree (``advance``) keeps its transpositions; a state repeated within one descent (a cycle)
is a new node, so a descent always ends.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.engine import load_engine
from agent.persona import load_persona
from agent.search import SearchSettings, driver_compiled, driver_sm
from agent.search import tree as T
from agent.search.common import advance
from gdl.kif import parse_rules, parse_term, read_rules_file

pytest.importorskip("pyswip")

GAMES = Path(__file__).resolve().parents[1] / "games"
DRIVERS = [driver_sm, driver_compiled]

# One role walks a ring 1 -> 2 -> 1 ... and may leave from 2 (a win): every state repeats.
RING = """
(role walker)
(init (pos 1))
(<= (legal walker flip) (true (pos 1)))
(<= (legal walker flip) (true (pos 2)))
(<= (legal walker leave) (true (pos 2)))
(<= (next (pos 2)) (does walker flip) (true (pos 1)))
(<= (next (pos 1)) (does walker flip) (true (pos 2)))
(<= (next (pos 3)) (does walker leave))
(<= terminal (true (pos 3)))
(goal walker 100)
"""


@pytest.fixture(scope="module")
def ttt():
    return load_engine(read_rules_file(GAMES / "ticTacToe.kif"), engine="compiled")


def _walk(st, moves, mover_first=0):
    """The node reached from the root by ``moves`` (the mover's, turns alternating from
    ``mover_first``; the other role plays noop), or -1."""
    a = st.arrays
    node = 0
    R = len(st.move_terms)
    for k, text in enumerate(moves):
        mover = (mover_first + k) % R
        slots = np.zeros(R, np.int32)
        for r in range(R):
            term = parse_term(text if r == mover else "noop")
            mid = st.move_index[r].get(term, -1)
            off, cnt = int(a.slot_off[node, r]), int(a.slot_count[node, r])
            hit = [off + j for j in range(cnt) if a.slot_move[off + j] == mid]
            if not a.ready[node] or not hit:
                return -1
            slots[r] = hit[0]
        node = int(T.get_child(a, node, slots))
        if node < 0:
            return -1
    return node


ONE = ["(place 1 1)", "(place 2 2)", "(place 1 3)"]
OTHER = ["(place 1 3)", "(place 2 2)", "(place 1 1)"]


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_a_transposition_is_one_node(ttt, driver):
    res = driver.search(ttt, ttt.initial_state(), 0, load_persona("champion"), SearchSettings(seed=3, limit=3000))
    a, b = _walk(res.tree, ONE), _walk(res.tree, OTHER)
    assert a >= 0 and a == b, "X 11, O 22, X 13 and X 13, O 22, X 11 reach one node"
    assert res.transpositions > 0
    st = res.tree
    states = st.states if st.kind == "sm" else [bytes(st.arrays.state[n]) for n in range(st.nodes)]
    assert len(set(states)) == len(states), "no state is held by two nodes"


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_thesis_mode_searches_a_tree(ttt, driver):
    res = driver.search(ttt, ttt.initial_state(), 0, load_persona("champion"),
                        SearchSettings(seed=3, limit=3000, thesis=True))
    assert res.transpositions == 0
    a, b = _walk(res.tree, ONE), _walk(res.tree, OTHER)
    assert a != b or a < 0


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_a_kept_subtree_keeps_its_transpositions(ttt, driver):
    res = driver.search(ttt, ttt.initial_state(), 0, load_persona("champion"), SearchSettings(seed=5, limit=4000))
    kept = advance(res.tree, (parse_term("(place 1 1)"), parse_term("noop")))
    assert kept is not None
    a = _walk(kept, ["(place 2 2)", "(place 1 3)", "(place 3 3)"], mover_first=1)
    b = _walk(kept, ["(place 3 3)", "(place 1 3)", "(place 2 2)"], mover_first=1)
    assert a >= 0 and a == b
    if kept.kind == "compiled":
        # the copy's table finds every node by its state (ids changed)
        arr = kept.arrays
        for n in range(kept.nodes):
            assert T.tt_find(arr, np.uint64(T.state_hash(arr.state[n])), arr.state[n]) == n
    else:
        assert all(kept.index[s] == n for n, s in enumerate(kept.states))
    # and the next search on the kept tree goes on sharing that node
    state = ttt.next_state(ttt.initial_state(), [parse_term("(place 1 1)"), parse_term("noop")])
    res2 = driver.search(ttt, state, 1, load_persona("champion"), SearchSettings(seed=6, limit=500), tree=kept)
    assert _walk(res2.tree, ["(place 2 2)", "(place 1 3)", "(place 3 3)"], mover_first=1) == \
        _walk(res2.tree, ["(place 3 3)", "(place 1 3)", "(place 2 2)"], mover_first=1)


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_a_cycle_is_not_a_transposition(driver):
    eng = load_engine(parse_rules(RING), engine="compiled")
    s1 = eng.initial_state()
    # without the solver, which would prove the root at once and end the search
    res = driver.search(eng, s1, 0, load_persona("champion"), SearchSettings(seed=1, limit=400, solver=False))
    st = res.tree
    # the root's only move leads to pos 2, whose flip leads back to pos 1: a new node, not
    # the root (a link to an ancestor would make the descent go round until the horizon)
    two = _walk(st, ["flip"])
    back = _walk(st, ["flip", "flip"])
    assert two > 0 and back > 0 and back != 0
    s2 = eng.next_state(s1, [parse_term("flip")])
    assert driver.search(eng, s2, 0, load_persona("champion"),
                         SearchSettings(seed=1, limit=200, solver=False)).move == parse_term("leave")


def test_a_full_tree_at_its_memory_budget_is_not_copied_again(monkeypatch):
    """A reused tree on a clock is copied into a larger one when nearly full (a copy sized by
    the slots its nodes use can hold more nodes in the same bytes); once at the memory budget
    (``TREE_BYTES``) the copy cannot be larger, and it is not made (it was, at every 0.1 s
    slice of pondering: a whole-tree copy for nothing)."""
    from agent.search import common
    c4 = load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled")
    monkeypatch.setattr(common, "TREE_BYTES", 2 * 1024 * 1024)
    s = c4.initial_state()
    big = 10_000_000
    t = driver_compiled.search(c4, s, 0, load_persona("tournament"),
                               SearchSettings(seed=1, seconds=0.5, limit=big)).tree
    grown = 0
    while common.can_grow(t, t.nodes + big + 1) and grown < 5:
        t2 = driver_compiled.search(c4, s, 0, load_persona("tournament"),
                                    SearchSettings(seed=2 + grown, seconds=0.5, limit=big), tree=t).tree
        assert t2 is not t and t2.capacity > t.capacity
        t, grown = t2, grown + 1
    assert t.capacity - t.nodes < driver_compiled.DEFAULT_TIMED_NODES     # nearly full
    assert not common.can_grow(t, t.nodes + big + 1)
    res = driver_compiled.search(c4, s, 0, load_persona("tournament"),
                                 SearchSettings(seed=9, seconds=0.2, limit=big), tree=t)
    assert res.tree is t, "the same tree searched on, not a copy of it"
