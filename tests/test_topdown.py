"""The non-ground evaluator (``agent.engine.topdown``) and the flat rules (``gdl.flatten``).

Both are checked against the Prolog reasoner on every state a breadth-first walk reaches in
small games written for what they must get right: recursion through a cycle (left, right
and mutual, which plain depth-first evaluation never finishes), negation of a recursive
relation, function terms of several shapes in one argument, ``distinct`` over function
terms, and a negated literal of a shape that never exists. The reference traces (chess
among them) are replayed in ``test_traces.py``.
"""
from __future__ import annotations

import pytest

from agent.engine.topdown import TopDown
from agent.reasoner.statemachine import InvalidQuery, ResourceLimit
from gdl.flatten import FlatRules, FlattenError, flat_term, shapes, unflat_term
from gdl.kif import parse_rules
from gdl.terms import canonical_sorted

pytest.importorskip("pyswip")
from agent.reasoner.prolog import PrologReasoner  # noqa: E402

CYCLES = """
(role walker)
(init (at a))
(init (seen a))
(edge a b) (edge b c) (edge c a) (edge c d) (edge d e) (edge e d)
(<= (reach ?x ?y) (edge ?x ?y))
(<= (reach ?x ?z) (reach ?x ?y) (edge ?y ?z))
(<= (back ?x ?y) (edge ?x ?y))
(<= (back ?x ?z) (edge ?x ?y) (back ?y ?z))
(<= (even ?x ?x) (edge ?x ?y))
(<= (even ?x ?z) (odd ?x ?y) (edge ?y ?z))
(<= (odd ?x ?z) (even ?x ?y) (edge ?y ?z))
(<= (stuck ?x) (edge ?x ?y) (not (reach ?y a)))
(<= (legal walker (go ?y)) (true (at ?x)) (reach ?x ?y) (back ?x ?y) (not (true (seen ?y))))
(<= (legal walker (hop ?y)) (true (at ?x)) (even ?x ?y) (odd ?x ?y) (distinct ?x ?y))
(<= (legal walker wait) (true (at ?x)) (stuck ?x))
(<= (next (at ?y)) (does walker (go ?y)))
(<= (next (at ?y)) (does walker (hop ?y)))
(<= (next (at ?x)) (does walker wait) (true (at ?x)))
(<= (next (seen ?y)) (does walker (go ?y)))
(<= (next (seen ?y)) (true (seen ?y)))
(<= (next (clock 1)) (true (at a)))
(<= (next (clock ?n)) (true (clock ?m)) (succ ?m ?n))
(succ 1 2) (succ 2 3) (succ 3 4)
(<= terminal (true (clock 4)))
(<= (goal walker 100) (true (seen e)))
(<= (goal walker 0) (not (true (seen e))))
"""

# Moves of two shapes in one argument, a variable bound to a whole move, distinct over moves,
# a negated literal of a shape no atom has, fluents of three shapes.
SHAPES = """
(role x) (role o)
(init (cell 1 b)) (init (cell 2 b)) (init (cell 3 b)) (init (control x)) (init (last none))
(<= (legal ?r (mark ?c)) (true (control ?r)) (true (cell ?c b)))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (legal ?r (swap ?c ?d)) (true (control ?r)) (true (cell ?c ?r)) (true (cell ?d b)))
(<= (chosen ?m) (does ?r ?m) (distinct ?m noop))
(<= (fresh ?m) (chosen ?m) (true (last ?k)) (distinct ?m ?k))
(<= (next (cell ?c ?r)) (does ?r (mark ?c)))
(<= (next (cell ?d ?r)) (does ?r (swap ?c ?d)))
(<= (next (cell ?c b)) (does ?r (swap ?c ?d)))
(<= (next (cell ?c ?v)) (true (cell ?c ?v)) (not (touched ?c)))
(<= (touched ?c) (does ?r (mark ?c)))
(<= (touched ?c) (does ?r (swap ?c ?d)))
(<= (touched ?d) (does ?r (swap ?c ?d)))
(<= (next (last ?m)) (fresh ?m))
(<= (next (last ?k)) (true (last ?k)) (not (fresh (mark 9))) (not (chosen (jump 1 2 3))))
(<= (next (control o)) (true (control x)))
(<= (next (control x)) (true (control o)))
(<= (next (seen ?m)) (chosen ?m) (not (distinct ?m (mark 2))))
(<= (next (seen ?m)) (true (seen ?m)))
(<= terminal (true (seen (mark 2))))
(<= terminal (not (true (cell 1 b))) (not (true (cell 2 b))) (not (true (cell 3 b))))
(<= (goal ?r 100) (role ?r) (true (cell 2 ?r)))
(<= (goal ?r 0) (role ?r) (not (true (cell 2 ?r))))
"""


class FlatTopDown:
    """The evaluator on the flat rules, speaking plain terms: what checks the flattening."""

    def __init__(self, desc):
        self.flat = FlatRules(desc)
        self.td = TopDown(self.flat.description())
        self.roles = desc.roles

    def _s(self, state):
        return frozenset(flat_term(f) for f in state)

    def _u(self, t):
        return unflat_term(t, self.flat.shape_of)

    def initial_state(self):
        return frozenset(self._u(f) for f in self.td.initial_state())

    def legal_moves(self, state, i):
        return canonical_sorted(self._u(m) for m in self.td.legal_moves(self._s(state), i))

    def next_state(self, state, joint):
        return frozenset(self._u(f) for f in self.td.next_state(self._s(state), [flat_term(m) for m in joint]))

    def is_terminal(self, state):
        return self.td.is_terminal(self._s(state))

    def goal_values(self, state):
        return self.td.goal_values(self._s(state))

    def close(self):
        self.td.close()


def _walk_and_compare(text: str, make, limit: int = 200) -> int:
    """Every state reachable (breadth first, up to ``limit``): the same answers as Prolog."""
    from itertools import product
    desc = parse_rules(text)
    ref, sm = PrologReasoner(desc), make(desc)
    try:
        s0 = ref.initial_state()
        assert sm.initial_state() == s0
        seen, todo = {s0}, [s0]
        while todo and len(seen) < limit:
            s = todo.pop(0)
            assert sm.is_terminal(s) == ref.is_terminal(s), sorted(s)
            assert sm.goal_values(s) == ref.goal_values(s), sorted(s)
            if ref.is_terminal(s):
                continue
            moves = [ref.legal_moves(s, i) for i in range(len(desc.roles))]
            assert [sm.legal_moves(s, i) for i in range(len(desc.roles))] == moves, sorted(s)
            for joint in product(*moves):
                n = ref.next_state(s, joint)
                assert sm.next_state(s, joint) == n, (sorted(s), joint)
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return len(seen)
    finally:
        ref.close()
        sm.close()


@pytest.mark.parametrize("make", [TopDown, FlatTopDown], ids=["rules", "flat-rules"])
@pytest.mark.parametrize("text", [CYCLES, SHAPES], ids=["cycles", "shapes"])
def test_every_reachable_state_agrees_with_prolog(text, make):
    assert _walk_and_compare(text, make) > 5


def test_recursion_through_a_cycle_is_complete():
    sm = TopDown(parse_rules(CYCLES))
    # reach from d: d -> e -> d; left recursion through the cycle
    assert {a[2] for a in sm._query(("reach", "d", "?y"), state=frozenset())} == {"d", "e"}
    assert {a[2] for a in sm._query(("back", "a", "?y"), state=frozenset())} == {"a", "b", "c", "d", "e"}
    # even/odd path lengths from a: the cycle a-b-c has odd length, so both hold for a, b, c
    even = {a[2] for a in sm._query(("even", "a", "?y"), state=frozenset())}
    odd = {a[2] for a in sm._query(("odd", "a", "?y"), state=frozenset())}
    assert even == odd == {"a", "b", "c", "d", "e"}
    assert {a[1] for a in sm._query(("stuck", "?x"), state=frozenset())} == {"c", "d", "e"}


def test_shapes_of_a_move_argument_and_the_flat_names():
    desc = parse_rules(SHAPES)
    table = shapes(desc.rules)
    assert table[("legal", 2)] == {("_", ("mark", "_")), ("_", "_"), ("_", ("swap", "_", "_"))}
    # fluents: a move kept in a fluent brings its shapes along (an over-approximation:
    # ``distinct`` is not read, so (seen noop)'s shape is there though no such fluent arises)
    assert {(("seen", ("mark", "_")),), (("seen", ("swap", "_", "_")),), (("seen", "_"),),
            (("cell", "_", "_"),)} <= table[("true", 1)]
    fr = FlatRules(desc)
    names = {r.head[0] for r in fr.rules}
    assert {"chosen#(mark _)", "chosen#(swap _ _)", "chosen"} <= names   # one relation per shape
    # no "jump" atom exists: the negated literal always holds and is dropped
    assert not any("jump" in str(r.body) for r in fr.rules)
    move = ("swap", "1", "3")
    assert unflat_term(flat_term(move), fr.shape_of) == move
    assert flat_term(move) == ("(swap _ _)", "1", "3")


def test_terms_that_grow_without_bound_are_refused():
    desc = parse_rules("""
    (role r) (init (count z)) (legal r go)
    (<= (next (count (s ?x))) (true (count ?x)))
    (<= terminal (true (count (s (s (s z))))))
    (goal r 100)
    """)
    with pytest.raises(FlattenError, match="without bound"):
        FlatRules(desc)


def test_a_query_over_its_inference_budget_fails_and_leaves_no_half_tables():
    sm = TopDown(parse_rules(CYCLES), inference_limit=20)
    s0 = sm.initial_state()
    with pytest.raises(ResourceLimit):
        sm.legal_moves(s0, 0)
    assert all(t.state == 0 for tables in (sm._static_tables, sm._state_tables, sm._move_tables)
               for t in tables.values())   # only complete tables survive a failed query
    sm.inference_limit = 1_000_000
    ref = PrologReasoner(parse_rules(CYCLES))
    try:
        assert sm.legal_moves(s0, 0) == ref.legal_moves(s0, 0)
    finally:
        ref.close()


def test_wrong_questions_are_refused():
    sm = TopDown(parse_rules(CYCLES))
    s0 = sm.initial_state()
    with pytest.raises(InvalidQuery):
        sm.next_state(s0, [])
    sm.close()
    with pytest.raises(InvalidQuery):
        sm.legal_moves(s0, 0)


def test_load_engine_gives_the_evaluator_when_asked():
    from agent.engine import load_engine
    sm = load_engine(parse_rules(CYCLES), engine="topdown")
    assert isinstance(sm, TopDown) and sm.info["engine"] == "topdown"
    depth, goals = sm.random_playout(sm.initial_state(), seed=3)
    assert depth == 4 and goals in ([[0]], [[100]])
