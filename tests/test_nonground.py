"""The non-ground engine (``agent.engine.nonground``) on the flat rules (``gdl.flatten``).

Checked against the Prolog reasoner on every state a breadth-first walk reaches in small
games written for what they must get right: recursion through a cycle (left, right and
mutual, which plain depth-first evaluation never finishes), negation of a recursive
relation, function terms of several shapes in one argument, ``distinct`` over function
terms, a negated literal of a shape that never exists; and its playouts (the loop in numba)
replayed move by move in Prolog. The reference traces (chess among them) are replayed in
``test_traces.py``.
"""
from __future__ import annotations

import pytest

from agent.engine.nonground import NonGroundEngine
from agent.reasoner.statemachine import GroundingError, InvalidQuery, ResourceLimit
from gdl.flatten import FlatRules, FlattenError, flat_term, shapes, unflat_term
from gdl.kif import parse_rules

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

# Legal moves guarded by negations of derived relations, as chess's are (is the square
# attacked once I move there): a recursive relation through a cycle (``near`` over the ring,
# through the fog) read by ground calls, a legal rule whose ground negation comes first, a
# move relation read by a literal that needs one answer (``canmove``; ``(infog ?z ?z)`` needs
# them all: its first answer may not have ?z twice), and states where every candidate move
# fails its check (``stuck``).
GUARDED = """
(role a) (role b)
(opp a b) (opp b a)
(cell 1) (cell 2) (cell 3) (cell 4) (cell 5) (cell 6)
(ring 1 2) (ring 2 3) (ring 3 4) (ring 4 5) (ring 5 6) (ring 6 1)
(<= (adj ?x ?y) (ring ?x ?y))
(<= (adj ?x ?y) (ring ?y ?x))
(init (at a 1)) (init (at b 4)) (init (fog 2)) (init (fog 5)) (init (control a)) (init (clock 0))
(<= (near ?z ?y) (adj ?z ?y))
(<= (near ?z ?y) (near ?z ?w) (adj ?w ?y) (true (fog ?w)))
(<= (attacked ?r ?y) (opp ?r ?o) (true (at ?o ?z)) (near ?z ?y))
(<= (legal ?r (go ?y)) (true (control ?r)) (true (at ?r ?x)) (adj ?x ?y) (not (attacked ?r ?y)))
(<= (legal ?r (fly ?y)) (true (control ?r)) (true (at ?r ?x)) (cell ?y) (distinct ?x ?y)
    (not (near ?x ?y)) (not (attacked ?r ?y)) (not (true (at ?r 6))))
(<= (legal ?r stay) (true (control ?r)) (true (at ?r ?x)) (not (attacked ?r ?x)))
(<= (legal a swap) (not (attacked a 1)) (true (control a)) (true (at a 2)))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (legal ?r wait) (true (control ?r)) (infog ?z ?z))
(<= (infog ?x ?y) (true (at a ?x)) (true (fog ?y)))
(<= (canmove ?r) (legal ?r ?m))
(<= (next (at ?r ?y)) (does ?r (go ?y)))
(<= (next (at ?r ?y)) (does ?r (fly ?y)))
(<= (next (at ?r ?x)) (true (at ?r ?x)) (does ?r stay))
(<= (next (at ?r ?x)) (true (at ?r ?x)) (does ?r noop))
(<= (next (at ?r ?x)) (true (at ?r ?x)) (does ?r wait))
(<= (next (at a 1)) (does a swap))
(<= (next (fog ?y)) (true (fog ?x)) (ring ?x ?y))
(<= (next (control b)) (true (control a)))
(<= (next (control a)) (true (control b)))
(<= (next (clock ?n)) (true (clock ?m)) (plus ?m ?n))
(plus 0 1) (plus 1 2) (plus 2 3) (plus 3 4) (plus 4 5) (plus 5 6) (plus 6 7) (plus 7 8)
(<= stuck (true (control ?r)) (not (canmove ?r)))
(<= terminal stuck)
(<= terminal (true (clock 8)))
(<= (goal ?r 100) (true (control ?o)) (opp ?r ?o) stuck)
(<= (goal ?r 0) (true (control ?r)) stuck)
(<= (goal ?r 50) (role ?r) (not stuck))
"""


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


@pytest.mark.parametrize("text", [CYCLES, SHAPES, GUARDED], ids=["cycles", "shapes", "guarded"])
def test_every_reachable_state_agrees_with_prolog(text):
    assert _walk_and_compare(text, NonGroundEngine) > 5


def _static(sm, name, width):
    """The rows of a static relation, as names."""
    c = sm.c
    rel = c.rel[(name, width)]
    s, n = int(c.fact_start[rel]), int(c.fact_count[rel])
    rows = c.fact_vals[s:s + n * width].reshape(n, width).tolist()
    return {tuple(c.names[v] for v in row) for row in rows}


def test_recursion_through_a_cycle_is_complete():
    sm = NonGroundEngine(parse_rules(CYCLES))
    reach = _static(sm, "reach", 2)   # left recursion through the cycles a-b-c and d-e
    assert {y for x, y in reach if x == "d"} == {"d", "e"}
    assert {y for x, y in reach if x == "a"} == {"a", "b", "c", "d", "e"}
    assert _static(sm, "back", 2) == reach   # right recursion
    # even/odd path lengths (mutual recursion): the cycle a-b-c has odd length
    even, odd = _static(sm, "even", 2), _static(sm, "odd", 2)
    assert {y for x, y in even if x == "a"} == {y for x, y in odd if x == "a"} == {"a", "b", "c", "d", "e"}
    assert _static(sm, "stuck", 1) == {("c",), ("d",), ("e",)}   # negation of the recursion


def replay_playout(ref, s0, moves, goals) -> None:
    """A playout's moves (``_playout(..., keep_moves=True)``) replayed on ``ref``: each legal
    where it was made, the end terminal, the goals ``ref``'s."""
    s = s0
    for joint in moves:
        assert not ref.is_terminal(s)
        for i, m in enumerate(joint):
            assert m in ref.legal_moves(s, i)
        s = ref.next_state(s, joint)
    assert ref.is_terminal(s)
    assert goals == [[max(v, default=0)] for v in ref.goal_values(s)]


def test_playouts_replay_move_by_move_in_prolog():
    for text in (CYCLES, SHAPES, GUARDED):   # GUARDED's playouts draw by the sampler
        desc = parse_rules(text)
        sm, ref = NonGroundEngine(desc), PrologReasoner(desc)
        try:
            s0 = sm.initial_state()
            for seed in range(12):
                depth, goals, moves = sm._playout(s0, 50, seed, keep_moves=True)
                assert depth == len(moves)
                replay_playout(ref, s0, moves, goals)
        finally:
            ref.close()


def _sample(sm, state, role: int, n: int, seed: int) -> list:
    """``n`` moves drawn by the playout's sampler (``NK.sample_legal``) in ``state``; None
    where it finds no legal move."""
    import numpy as np
    from agent.engine import nonground_kernels as NK
    sm._load(frozenset(state))
    call = np.empty(sm.W.callbuf.shape[0], np.int32)
    np.random.seed(seed)
    out = []
    for _ in range(n):
        st, k, s = NK.sample_legal(sm.P, sm.W, sm.G, sm._role_sym[role], call, sm._sample_buf,
                                   sm._sample_ent)
        assert st == NK.OK
        if k < 0:
            out.append(None)
            continue
        rel = sm._legal[k]
        out.append(sm._decoded(rel, tuple(sm._sample_buf[s + 1:s + int(sm.c.width[rel])].tolist())))
    return out


def test_the_sampler_draws_every_legal_move_alike_and_only_those():
    """Where the legal rules negate derived relations, a playout draws each move by testing
    candidates one at a time: every move it draws is legal, every legal move comes up about
    as often as the others, and a state where every candidate fails has no move."""
    from collections import Counter
    desc = parse_rules(GUARDED)
    sm, ref = NonGroundEngine(desc), PrologReasoner(desc)
    try:
        assert sm.c.samplers, "the guarded moves get a sampler"
        seen, todo, stuck, spread = {ref.initial_state()}, [ref.initial_state()], 0, 0
        while todo:
            s = todo.pop()
            terminal = ref.is_terminal(s)
            for i in range(len(desc.roles)):
                legal = ref.legal_moves(s, i)
                drawn = _sample(sm, s, i, 300 if len(legal) > 2 else 30, seed=len(seen))
                if not legal:
                    stuck += 1
                    assert drawn == [None] * 30
                    continue
                assert set(drawn) <= set(legal), sorted(s)
                if len(legal) > 2:
                    counts = Counter(drawn)
                    assert set(counts) == set(legal)
                    assert min(counts.values()) > 0.4 * 300 / len(legal), counts
                    spread += 1
            if terminal:
                continue
            for joint in __import__("itertools").product(*[ref.legal_moves(s, i) for i in range(2)]):
                n = ref.next_state(s, joint)
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        assert stuck > 0 and spread > 0 and len(seen) > 50
    finally:
        ref.close()
        sm.close()


def test_shapes_of_a_move_argument_and_the_flat_names():
    desc = parse_rules(SHAPES)
    table = shapes(desc.rules)
    assert table[("legal", 2)] == {("_", ("mark", "_")), ("_", "_"), ("_", ("swap", "_", "_"))}
    # fluents: a move kept in a fluent brings its shapes along (an over-approximation:
    # ``distinct`` is not read, so (seen noop)'s shape is there though no such fluent arises)
    assert {(("seen", ("mark", "_")),), (("seen", ("swap", "_", "_")),), (("seen", "_"),),
            (("cell", "_", "_"),)} <= table[("true", 1)]
    fr = FlatRules(desc)
    names = {r.head[0] for r in fr.rules if isinstance(r.head, tuple)}
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
    with pytest.raises(GroundingError, match="without bound"):
        NonGroundEngine(desc)


def test_a_query_over_its_inference_budget_fails_and_the_next_one_works():
    sm = NonGroundEngine(parse_rules(SHAPES), inference_limit=3)
    s0 = sm.initial_state()
    with pytest.raises(ResourceLimit):
        sm.legal_moves(s0, 0)
    sm.inference_limit = 1_000_000
    ref = PrologReasoner(parse_rules(SHAPES))
    try:
        assert sm.legal_moves(s0, 0) == ref.legal_moves(s0, 0)
        joint = [ref.legal_moves(s0, i)[0] for i in range(2)]
        assert sm.next_state(s0, joint) == ref.next_state(s0, joint)
    finally:
        ref.close()


def test_a_small_work_space_grows_and_gives_the_same_answers():
    desc = parse_rules(CYCLES)
    sm, ref = NonGroundEngine(desc), PrologReasoner(desc)
    try:
        sm._sizes.update(tables=2, answers=2, depth=2, state_rows=1)
        from agent.engine.nonground import new_work
        sm.W = new_work(sm.c, **sm._sizes)
        sm._state = None
        s0 = sm.initial_state()
        assert sm.legal_moves(s0, 0) == ref.legal_moves(s0, 0)
        assert sm._sizes["tables"] > 2 and sm._sizes["answers"] > 2
        assert sm.random_playout(s0, seed=1)[0] == 4
    finally:
        ref.close()


def test_wrong_questions_are_refused():
    sm = NonGroundEngine(parse_rules(CYCLES))
    s0 = sm.initial_state()
    with pytest.raises(InvalidQuery):
        sm.next_state(s0, [])
    sm.close()
    with pytest.raises(InvalidQuery):
        sm.legal_moves(s0, 0)


def test_load_engine_gives_the_nonground_engine_when_asked():
    from agent.engine import load_engine
    sm = load_engine(parse_rules(CYCLES), engine="nonground")
    assert isinstance(sm, NonGroundEngine) and sm.info["engine"] == "nonground"
    depth, goals = sm.random_playout(sm.initial_state(), seed=3)
    assert depth == 4 and goals in ([[0]], [[100]])


def test_a_product_of_shapes_is_refused_not_enumerated(monkeypatch):
    # 30 shapes for p, six p literals in one body: 30^6 combinations of shapes
    facts = " ".join(f"(p (f{i}))" for i in range(30))
    desc = parse_rules(f"""
    (role r) (init s) (legal r go) (<= (next s) (true s)) {facts}
    (<= (q ?a ?b ?c ?d ?e ?f) (p ?a) (p ?b) (p ?c) (p ?d) (p ?e) (p ?f))
    (<= terminal (q ?a ?b ?c ?d ?e ?f)) (goal r 100)
    """)
    import gdl.flatten as flatten
    monkeypatch.setattr(flatten, "MAX_WORK", 20_000)
    with pytest.raises(FlattenError, match="combinations"):
        FlatRules(desc)
    with pytest.raises(GroundingError, match="combinations"):
        NonGroundEngine(desc)
