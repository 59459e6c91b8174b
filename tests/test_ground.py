"""Grounding: factoring of rule bodies (``factor_rules``) and the big games it opens.

* ``factor_rules`` on small rule sets: which literals become an auxiliary relation, which
  stay (no local variables, the whole body, an auxiliary rule that would be unsafe);
* a frame axiom that grounds to one rule per (fluent, move) grounds far smaller factored,
  and the compiled engine still plays it exactly like the Prolog reasoner;
* skirmish (which failed with "more than 2,000,000 ground rule instances" before factoring)
  compiles and agrees exactly with its reference trace (skipped without ../shared).
"""
from __future__ import annotations

import random

import pytest

from conftest import needs_shared
from gdl.kif import parse_rules, read_rules_file
from gdl.terms import signature

pytest.importorskip("pyswip")

from agent.engine import load_engine  # noqa: E402
from agent.engine.compiled import CompiledEngine  # noqa: E402
from agent.engine.ground import FACTOR_PREFIX, factor_rules, ground  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402


def _rules(text):
    return list(parse_rules(text).rules)


def _aux(rules):
    return [r for r in rules if signature(r.head)[0].startswith(FACTOR_PREFIX)]


def test_local_group_becomes_an_auxiliary_relation_over_the_head_variables():
    rules = _rules("""
        (<= (next (cell ?x ?y ?p)) (true (cell ?x ?y ?p)) (does ?r (move ?a ?b))
            (other ?x ?y ?a ?b) (not (blocked ?a)))""")
    out = factor_rules(rules)
    aux = _aux(out)
    assert len(aux) == 1 and len(out) == 2
    assert aux[0].head[1:] == ("?x", "?y")  # only what the head needs: the move is projected out
    assert set(aux[0].body) == {("does", "?r", ("move", "?a", "?b")), ("other", "?x", "?y", "?a", "?b"),
                                ("not", ("blocked", "?a"))}
    main = [r for r in out if r not in aux][0]
    assert main.body == (("true", ("cell", "?x", "?y", "?p")), aux[0].head)


def test_literals_over_kept_variables_filter_the_auxiliary_but_stay_in_the_rule():
    out = factor_rules(_rules("(<= (p ?x ?w) (q ?x) (u ?x ?w) (not (v ?x)) (r ?x ?y) (s ?y))"))
    aux = _aux(out)
    assert len(aux) == 1
    assert aux[0].body == (("q", "?x"), ("r", "?x", "?y"), ("s", "?y"))  # not (u ?x ?w): ?w is not kept
    main = [r for r in out if r not in aux][0]
    assert main.body == (("q", "?x"), ("u", "?x", "?w"), ("not", ("v", "?x")), aux[0].head)


@pytest.mark.parametrize("text", [
    "(<= (p ?x ?y) (q ?x) (r ?y))",                      # no local variable: nothing to project
    "(<= (p ?x) (q ?x ?z) (r ?z))",                      # one group is the whole body
    "(<= (p ?x) (q ?x) (r ?z) (distinct ?x ?z))",        # distinct ties ?z to ?x's group
    "(<= (p ?x) (q ?x) (not (r ?x ?z)) (s ?z))",         # ?x is bound outside the group: unsafe
    "(p 1)",
])
def test_rules_left_alone(text):
    rules = _rules(text)
    assert factor_rules(rules) == rules


def test_independent_groups_each_become_one_auxiliary():
    out = factor_rules(_rules("(<= (p ?x) (q ?x) (r ?x ?y) (s ?y) (t ?z))"))
    aux = _aux(out)
    assert len(aux) == 2
    # (q ?x) reads only kept variables: copied into the group's auxiliary as a filter
    assert sorted(a.body for a in aux) == [(("q", "?x"), ("r", "?x", "?y"), ("s", "?y")), (("t", "?z"),)]
    assert sorted(0 if isinstance(a.head, str) else len(a.head) - 1 for a in aux) == [0, 1]


# A board of cells, a move that lifts a token from one cell and sets it on another, and the
# frame axiom for every other cell: one ground rule per (fluent, move) when not factored.
FRAME_GAME = """
(role a) (role b)
(index 1) (index 2) (index 3) (index 4)
(<= (cell ?x ?y) (index ?x) (index ?y))
(init (at 1 1 a)) (init (at 4 4 b)) (init (control a))
(<= (legal ?r (go ?x ?y ?u ?v)) (true (control ?r)) (true (at ?x ?y ?r)) (cell ?u ?v)
    (not (true (at ?u ?v a))) (not (true (at ?u ?v b))))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (elsewhere ?x ?y ?u ?v) (cell ?x ?y) (cell ?u ?v) (distinct ?x ?u))
(<= (elsewhere ?x ?y ?u ?v) (cell ?x ?y) (cell ?u ?v) (distinct ?y ?v))
(<= (next (at ?u ?v ?r)) (does ?r (go ?x ?y ?u ?v)))
(<= (next (at ?x ?y ?p)) (true (at ?x ?y ?p)) (does ?r (go ?a ?b ?c ?d))
    (elsewhere ?x ?y ?a ?b) (elsewhere ?x ?y ?c ?d))
(<= (next (control a)) (true (control b)))
(<= (next (control b)) (true (control a)))
(init (step 1)) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6)
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= terminal (true (step 6)))
(<= (goal ?r 50) (role ?r))
"""


def test_factoring_shrinks_the_frame_axiom_and_keeps_the_game():
    desc = parse_rules(FRAME_GAME)
    plain = ground(desc, factor=False)
    factored = ground(desc)
    # two tokens per cell: the (fluent, move) pairs become (cell, move) pairs, about half
    assert factored.n_rules < 0.6 * plain.n_rules, (factored.n_rules, plain.n_rules)
    assert set(factored.true_atoms) == set(plain.true_atoms)
    assert set(factored.does_atoms) == set(plain.does_atoms)
    sm = load_engine(desc, engine="compiled", use_cache=False)
    ref = PrologReasoner(desc)
    rng = random.Random(7)
    for _ in range(10):
        s, r = sm.initial_state(), ref.initial_state()
        while True:
            assert s == r
            assert sm.is_terminal(s) == ref.is_terminal(r)
            if ref.is_terminal(r):
                assert sm.goal_values(s) == ref.goal_values(r)
                break
            moves = [sorted(ref.legal_moves(r, i), key=str) for i in range(len(desc.roles))]
            assert [sorted(sm.legal_moves(s, i), key=str) for i in range(len(desc.roles))] == moves
            joint = [rng.choice(m) for m in moves]
            s, r = sm.next_state(s, joint), ref.next_state(r, joint)
    ref.close()


# Skirmish: factored rule bodies made it ground at all (it was over 2,000,000 ground rules);
# its budget is generous, as the point is exactness.  Hex: its fixpoint took 25-70 s with
# incremental tabling (its recursive `connected`), so it fell back to Prolog under a 60 s start
# clock on a busy machine; the semi-naive fixpoint takes about a second.
@needs_shared
@pytest.mark.parametrize("trace_file,budget", [("base-skirmish-v0.json", 600), ("base-hex-v0.json", 60)])
def test_big_game_compiles_and_agrees_with_its_reference_trace(trace_file, budget, shared_dir, tmp_path):
    from agent.tracecheck import check_trace, load_trace, rules_path_for
    path = shared_dir / "reference" / "prover" / trace_file
    trace = load_trace(path)
    desc = read_rules_file(rules_path_for(trace, path))
    sm = load_engine(desc, engine="compiled", budget_seconds=budget, cache_dir=tmp_path)
    assert isinstance(sm, CompiledEngine) and sm.info["source"] == "built"
    report = check_trace(sm, trace)
    assert report.exact, report.summary()


def test_the_same_group_in_several_rules_is_one_auxiliary_relation():
    out = factor_rules(_rules("""
        (<= (next (cell ?x ?y ?k)) (true (cell ?x ?y ?k)) (does ?r (move ?p ?u ?v ?x ?y)))
        (<= (next (mark ?x ?y ?k)) (true (mark ?x ?y ?k)) (does ?s (move ?q ?a ?c ?x ?y)))"""))
    aux = _aux(out)
    assert len(aux) == 1
    mains = [r for r in out if r not in aux]
    assert [m.body[-1] for m in mains] == [aux[0].head, aux[0].head]


# --- the relaxed fixpoint (semi-naive, over plain facts) ------------------------------------

def test_the_fixpoint_computes_only_what_init_next_and_legal_read_positively():
    from agent.engine.ground import fixpoint_relations
    rules = _rules("""
        (<= (legal ?r (go ?x)) (true (at ?r ?y)) (step ?y ?x) (not (attacked ?x)))
        (<= (step ?a ?b) (succ ?a ?b))
        (<= (attacked ?x) (true (at ?r ?x)) (far ?x))
        (<= (next (at ?r ?x)) (does ?r (go ?x)))
        (<= (goal ?r 100) (true (at ?r 9)) (won ?r))
        (<= terminal (true (at ?r 9)))""")
    fix = fixpoint_relations(rules)
    assert {("legal", 2), ("step", 2), ("succ", 2), ("next", 1)} <= fix
    # read only under `not`, or only by goal and terminal: left to the instance queries
    assert not fix & {("attacked", 1), ("far", 1), ("won", 1), ("goal", 2), ("terminal", -1)}


def test_a_fixpoint_rule_joins_from_the_new_facts_and_only_tests_its_local_variables():
    from agent.engine.ground import _exists_suffix, _join_order
    # (<= (h ?x) (a ?y) (b ?x ?z) (c ?z ?y) (distinct ?z ?y)), run for new facts of b
    a, b, c = ("a(Y)", True, {"?y"}), ("b(X,Z)", True, {"?x", "?z"}), ("c(Z,Y)", True, {"?z", "?y"})
    test = ("Z\\==Y", False, {"?z", "?y"})
    order = _join_order(b, [a, c, test])
    assert order == [b, c, test, a]  # c shares ?z with b: a cross product with a avoided
    # ?x is bound by b: the rest only decides whether some ?y, ?z exist
    assert _exists_suffix(order, {"?x"}, "e") == "eb(X,Z), once((c(Z,Y), Z\\==Y, a(Y)))"
    assert _exists_suffix(order, {"?x", "?y"}, "e") == "eb(X,Z), c(Z,Y), once((Z\\==Y, a(Y)))"
    assert _exists_suffix([b], {"?x", "?z"}, "e") == "eb(X,Z)"


GROWING_GAME = """
(role a)
(init (f z))
(<= (next (f (g ?x ?x ?x ?x))) (true (f ?x)))
(<= (legal a noop) (true (f ?x)))
(<= terminal (true (f z)) (not (true (f z))))
(<= (goal a 100) (true (f z)))
"""


def test_a_term_growing_without_bound_is_a_grounding_error_not_a_hang():
    from agent.engine.ground import GroundingError
    with pytest.raises(GroundingError, match="grows without bound"):
        ground(parse_rules(GROWING_GAME), seconds=60)

