"""Tests of the Prolog reasoner (agent/reasoner/prolog.py) and the query cache
(agent/reasoner/statemachine.py).

* translation safety: games whose roles, relations, functions and constants are named like
  Prolog built-ins and dangerous predicates, operators and quoted-atom tricks play as plain
  game relations; nothing halts, no file is created, no shell command runs;
* correctness: small games written here, with the answers worked out by hand (roles, init,
  legal, next, terminal, goals, distinct, not, or, recursion incl. left recursion over a cyclic
  graph and over the state), under both table policies;
* limits: runaway queries (a term growing without bound through recursion, a huge answer
  set, a search that is merely too long) raise ``ReasonerError`` with a clear message within
  a bounded time, and the reasoner and the process still work afterwards;
* thread ownership: using Prolog from another thread raises ``ReasonerError``;
* ``CachedStateMachine`` gives the same answers as the reasoner it wraps.

Nothing here needs ``../shared``.
"""
from __future__ import annotations

import os
import random
import stat
import threading
import time

import pytest

from gdl.kif import parse_rules, parse_term, read_first, rules_from_nodes
from gdl.terms import render

pytest.importorskip("pyswip")

from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from agent.reasoner.statemachine import (CachedStateMachine, ReasonerError, ResourceLimit,  # noqa: E402
                                         goal_vector)


def T(text: str):
    return parse_term(text)


def S(*texts: str) -> frozenset:
    return frozenset(T(t) for t in texts)


def legal_texts(sm, state) -> list:
    return [[render(m) for m in sm.legal_moves(state, i)] for i in range(len(sm.roles))]


def state_texts(state) -> list:
    return sorted(render(f) for f in state)


# ============================================================== a small game, by hand

# Two pebbles on a directed graph with a cycle n1 -> n2 -> n3 -> n1 and an exit n3 -> n4.
# Both players move at once: a step along an edge to a free node (go), a jump to any node
# reachable in two or more steps (far: left-recursive reachability on the cyclic graph), or a
# wait, written (wait) and, while the constant flag holds, also as the constant wait.
PEBBLES = """
(role white) (role black)
(init (at white n1)) (init (at black n3)) (init (step 0)) (init (flag)) (init flag)

(edge n1 n2) (edge n2 n3) (edge n3 n1) (edge n3 n4)
(<= (reach ?x ?y) (edge ?x ?y))
(<= (reach ?x ?z) (reach ?x ?y) (edge ?y ?z))

(succ 0 1) (succ 1 2) (succ 2 3)

(<= (occupied ?y) (true (at ?r ?y)))
(<= (legal ?r (go ?y)) (true (at ?r ?x)) (edge ?x ?y) (not (occupied ?y)))
(<= (legal ?r (far ?y)) (true (at ?r ?x)) (reach ?x ?y) (distinct ?y ?x) (not (edge ?x ?y)))
(<= (legal ?r (wait)) (role ?r))
(<= (legal ?r wait) (role ?r) (true flag))

(<= (next (at ?r ?y)) (does ?r (go ?y)))
(<= (next (at ?r ?y)) (does ?r (far ?y)))
(<= (next (at ?r ?x)) (true (at ?r ?x)) (or (does ?r (wait)) (does ?r wait)))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= (next flag) (true (flag)))

(<= terminal (true (step 3)))
(<= terminal (true (at ?r n4)))

(<= (goal ?r 100) (true (at ?r n4)))
(<= (goal ?r 5) (true (at ?r ?x)) (distinct ?x n4))
(<= (goal ?r 10) (true (at ?r n1)))
(<= (goal ?r 10) (true (at ?r n2)))
"""

# (state, legal per role, terminal, goals per role, joint move taken), worked out by hand.
PEBBLES_WALK = [
    (["(at black n3)", "(at white n1)", "(flag)", "(step 0)", "flag"],
     [["(far n3)", "(far n4)", "(go n2)", "(wait)", "wait"], ["(far n2)", "(go n4)", "(wait)", "wait"]],
     False, [[5, 10], [5]], ["(go n2)", "(wait)"]),
    (["(at black n3)", "(at white n2)", "(step 1)", "flag"],
     [["(far n1)", "(far n4)", "(wait)", "wait"], ["(far n2)", "(go n1)", "(go n4)", "(wait)", "wait"]],
     False, [[5, 10], [5]], ["wait", "(far n2)"]),
    (["(at black n2)", "(at white n2)", "(step 2)"],
     [["(far n1)", "(far n4)", "(go n3)", "(wait)"], ["(far n1)", "(far n4)", "(go n3)", "(wait)"]],
     False, [[5, 10], [5, 10]], ["(far n4)", "(go n3)"]),
    (["(at black n3)", "(at white n4)", "(step 3)"],
     [["(wait)"], ["(far n2)", "(go n1)", "(wait)"]],
     True, [[100], [5]], None),
]

# One builder links nodes; linked is the left-recursive transitive closure of the link
# fluents, so it depends on the state and is tabled per state.
LINKS = """
(role builder)
(init (link a b))
(node a) (node b) (node c)
(<= (linked ?x ?y) (true (link ?x ?y)))
(<= (linked ?x ?z) (linked ?x ?y) (true (link ?y ?z)))
(<= (legal builder (build ?x ?y)) (node ?x) (node ?y) (distinct ?x ?y)
    (not (linked ?x ?y)) (not (linked ?y ?x)))
(<= (next (link ?x ?y)) (does builder (build ?x ?y)))
(<= (next (link ?x ?y)) (true (link ?x ?y)))
(<= terminal (linked a c))
(<= (goal builder 100) (linked a c))
(<= (goal builder 0) (not (linked a c)))
"""


@pytest.fixture(scope="module", params=["recursive", "all"])
def pebbles(request):
    sm = PrologReasoner(parse_rules(PEBBLES), table=request.param)
    yield sm
    sm.close()


def test_pebbles_walk_gives_exactly_the_answers_worked_out_by_hand(pebbles):
    sm = pebbles
    assert sm.roles == ["white", "black"]
    state = sm.initial_state()
    assert isinstance(state, frozenset)
    for i, (expected_state, legal, terminal, goals, move) in enumerate(PEBBLES_WALK):
        assert state_texts(state) == expected_state, f"state {i}"
        assert legal_texts(sm, state) == legal, f"legal moves in state {i}"
        assert sm.is_terminal(state) is terminal, f"terminal in state {i}"
        assert sm.goal_values(state) == goals, f"goals in state {i}"
        if move is not None:
            state = sm.next_state(state, tuple(T(m) for m in move))


def test_zero_argument_functions_and_constants_stay_apart(pebbles):
    sm = pebbles
    s0 = sm.initial_state()
    assert ("flag",) in s0 and "flag" in s0
    moves = sm.legal_moves(s0, 0)
    assert ("wait",) in moves and "wait" in moves
    # the two waits are different moves with different effects: only the constant flag keeps
    # the constant wait legal, and only (flag) brings back flag
    s_no_flag = S("(at white n1)", "(at black n3)", "(step 0)", "(flag)")
    assert "wait" not in sm.legal_moves(s_no_flag, 0)
    assert "flag" in sm.next_state(s_no_flag, (T("(wait)"), T("(wait)")))
    assert "flag" not in sm.next_state(S("(at white n1)", "(at black n3)", "(step 0)", "flag"),
                                       (T("wait"), T("wait")))


def test_goal_values_are_sorted_numerically_and_may_be_several(pebbles):
    # 5 and 10 for a pebble on n1: sorted as numbers (as text "10" would come first)
    values = pebbles.goal_values(S("(at white n1)", "(at black n1)", "(step 0)"))
    assert values == [[5, 10], [5, 10]]
    assert goal_vector(values) == [10, 10]
    # no value at all (no pebble of black)
    assert pebbles.goal_values(S("(at white n4)")) == [[100], []]


def test_states_are_data_any_set_of_fluents_can_be_asked(pebbles):
    sm = pebbles
    # a state never reached in play, with a fluent the rules never mention
    odd = S("(at white n3)", "(at black n3)", "(junk 1)", "never_seen")
    assert legal_texts(sm, odd)[0] == ["(far n2)", "(go n1)", "(go n4)", "(wait)"]
    nxt = sm.next_state(odd, (T("(go n4)"), T("(wait)")))
    assert state_texts(nxt) == ["(at black n3)", "(at white n4)"]
    assert sm.is_terminal(nxt) and not sm.is_terminal(odd)
    # the empty state: no pebble, so no moves but the waits
    assert legal_texts(sm, frozenset()) == [["(wait)"], ["(wait)"]]
    # the same state asked in any order of iteration gives the same answer
    s = sorted(odd, key=render)
    assert sm.legal_moves(frozenset(reversed(s)), 0) == sm.legal_moves(frozenset(s), 0)


def test_a_move_nobody_made_legal_is_still_applied(pebbles):
    # next_state does not check legality: the manager is the referee
    s = pebbles.next_state(pebbles.initial_state(), (T("(far n2)"), T("(go n1)")))
    assert state_texts(s) == ["(at black n1)", "(at white n2)", "(step 1)", "flag"]


def test_random_playout_inside_prolog_ends_in_a_terminal_state(pebbles):
    depth, goals = pebbles.random_playout(pebbles.initial_state(), seed=7)
    assert 1 <= depth <= 3
    assert len(goals) == 2 and all(vs and set(vs) <= {5, 10, 100} for vs in goals)
    assert pebbles.random_playout(pebbles.initial_state(), seed=7) == (depth, goals)


@pytest.mark.parametrize("table", ["recursive", "all", "auto"])
def test_left_recursion_over_the_state_terminates_also_on_cycles(table):
    sm = PrologReasoner(parse_rules(LINKS), table=table)
    try:
        s0 = sm.initial_state()
        assert state_texts(s0) == ["(link a b)"]
        assert legal_texts(sm, s0) == [["(build a c)", "(build b c)", "(build c a)", "(build c b)"]]
        assert not sm.is_terminal(s0) and sm.goal_values(s0) == [[0]]
        s1 = sm.next_state(s0, (T("(build b c)"),))
        assert state_texts(s1) == ["(link a b)", "(link b c)"]
        # linked a c through left recursion: terminal, won, and nothing left to build
        assert sm.is_terminal(s1) and sm.goal_values(s1) == [[100]]
        assert sm.legal_moves(s1, 0) == []
        # a cycle among the fluents: a and b reach each other (and themselves), c is free
        cyc = S("(link a b)", "(link b a)")
        assert legal_texts(sm, cyc) == [["(build a c)", "(build b c)", "(build c a)", "(build c b)"]]
        assert not sm.is_terminal(cyc) and sm.goal_values(cyc) == [[0]]
        # tables of one state do not leak into the next query
        assert sm.legal_moves(s0, 0) == sm.legal_moves(S("(link a b)"), 0)
    finally:
        sm.close()


def test_connectives_and_undefined_relations():
    rules = """
(role r)
(init (on a)) (init (on c))
(node a) (node b) (node c) (node d)
(dark b)
(<= (legal r (same ?x)) (node ?x) (node ?y) (not (distinct ?x ?y)) (true (on ?y)))
(<= (legal r (either ?x)) (node ?x) (or (true (on ?x)) (or (dark ?x) (light ?x))))
(<= (legal r (ghost ?x)) (node ?x) (undefined ?x))
(<= (legal r (free ?x)) (not (true (on ?x))) (not (undefined ?x)) (node ?x))
(<= terminal (undefined))
(goal r 0)
"""
    sm = PrologReasoner(parse_rules(rules))
    try:
        s = sm.initial_state()
        # (not (distinct x y)) is equality; or (nested too) is any disjunct; a relation that is
        # never defined (light, undefined) is simply false; a not written before the literal
        # that binds its variable is evaluated after it
        assert legal_texts(sm, s) == [["(either a)", "(either b)", "(either c)", "(free b)",
                                       "(free d)", "(same a)", "(same c)"]]
        assert not sm.is_terminal(s)
    finally:
        sm.close()


def test_roles_and_initial_state_of_upper_case_rules():
    rules = """(ROLE RED) (ROLE BLUE) (INIT (CELL 1 B)) (LEGAL RED NOOP) (LEGAL BLUE NOOP)
               (<= TERMINAL (TRUE (CELL 1 B))) (GOAL RED 0) (GOAL BLUE 100)"""
    sm = PrologReasoner(parse_rules(rules))
    try:
        assert sm.roles == ["RED", "BLUE"]
        s = sm.initial_state()
        assert s == S("(CELL 1 B)")
        assert sm.legal_moves(s, 1) == ["NOOP"] and sm.is_terminal(s)
        assert sm.goal_values(s) == [[0], [100]]
    finally:
        sm.close()


def test_a_goal_value_that_is_not_an_integer_is_an_error():
    sm = PrologReasoner(parse_rules("(role r) (legal r go) (goal r high) (<= terminal (true x))"))
    try:
        with pytest.raises(ReasonerError, match="not an integer"):
            sm.goal_values(sm.initial_state())
    finally:
        sm.close()


def test_a_closed_reasoner_refuses_queries_and_others_go_on():
    a = PrologReasoner(parse_rules(LINKS))
    b = PrologReasoner(parse_rules(LINKS))
    a.close()
    a.close()  # twice is harmless
    with pytest.raises(ReasonerError, match="closed"):
        a.initial_state()
    assert state_texts(b.initial_state()) == ["(link a b)"]
    b.close()


# ============================================================== translation safety

# Roles, relations, functions and constants named like Prolog built-ins, control constructs,
# operators and quoted-atom tricks.  A counter game: the player in control counts up
# (assertz) or down (retract, only from 1 or 2: the relation ","), the other plays "!";
# "=" is the successor table and "is" says who the other role is.  Whoever brings the
# counter to 3 wins (consult).  The player in control may instead say an item (format): the
# items are constants a careless translation would merge or misread; saying a\b ends the
# game in a draw.  The fluent (true true) is kept only while none of the dangerous
# relations (never defined, so false) holds: (not halt), (not (shell ...)) and so on are
# calls a naive translation would execute.
HOSTILE_ITEMS = ["q", "'q'", "0'a", "97", "a\\b", "\\+", "[]", "{}", "|", "!", "=", ",", "true",
                 "'it''s'", "0x1F", "31", "1.5", "1.50", "007", "7", "-->", "=..", "x\"y", "$me",
                 "_under", "Upper", "a.b", "halt", "(halt)"]
HOSTILE = """
(role halt)
(role shell)
(init (assert 0))
(init (call halt))
(init (true true))
(= 0 1) (= 1 2) (= 2 3)
(, 1) (, 2)
(<= (is ?r ?o) (role ?r) (role ?o) (distinct ?r ?o))
(<= (legal ?r (assertz ?n)) (true (call ?r)) (true (assert ?m)) (= ?m ?n))
(<= (legal ?r (retract ?n)) (true (call ?r)) (true (assert ?m)) (= ?n ?m) (, ?m))
(<= (legal ?r (format ?x)) (true (call ?r)) (item ?x))
(<= (legal ?r !) (true (call ?o)) (is ?r ?o))
(<= (next (assert ?n)) (does ?r (assertz ?n)))
(<= (next (assert ?n)) (does ?r (retract ?n)))
(<= (next (assert ?n)) (true (assert ?n)) (does ?r (format ?x)))
(<= (next (said ?r ?x)) (does ?r (format ?x)))
(<= (next (call ?o)) (true (call ?r)) (is ?r ?o))
(<= (next (true true))
    (true (true true))
    (not halt) (not (halt 1)) (not (halt))
    (not (shell pwned_by_shell)) (not (shell pwned_by_shell 0)) (not (system pwned_by_shell))
    (not (open pwned_by_open write s)) (not (tell pwned_by_tell))
    (not (consult pwned_by_consult)) (not (abolish all)) (not (abort))
    (not (assertz (pwned))) (not (retract (role halt))) (not (call halt)) (not (call (halt)))
    (not (format pwned)) (not (is 1 1)) (not (= 2 2)) (not (\\+ true)) (not !) (not fail)
    (not (true))
    (distinct true (true)) (distinct halt (halt)) (distinct 'q' q) (distinct 0'a 97))
(<= consult (true (assert 3)))
(<= terminal consult)
(<= terminal (true (said ?r a\\b)))
(<= (goal ?r 100) (true (call ?o)) (is ?r ?o) consult)
(<= (goal ?r 0) (true (call ?r)) consult)
(<= (goal ?r 50) (role ?r) (not consult))
""" + "\n".join(f"(item {x})" for x in HOSTILE_ITEMS)


def _format_moves(*extra):
    return sorted([f"(format {x})" for x in HOSTILE_ITEMS] + list(extra))


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Run in an empty directory, with a PATH whose pwned_by_shell command leaves a mark."""
    work = tmp_path / "cwd"
    work.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "shell_ran"
    script = bin_dir / "pwned_by_shell"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    yield work, marker
    assert sorted(os.listdir(work)) == [], "the game created files in the working directory"
    assert not marker.exists(), "the game ran a shell command"


def test_game_named_after_prolog_builtins_plays_as_a_plain_game(sandbox):
    desc = parse_rules(HOSTILE)
    sm = PrologReasoner(desc)
    try:
        assert sm.roles == ["halt", "shell"]
        s0 = sm.initial_state()
        assert state_texts(s0) == ["(assert 0)", "(call halt)", "(true true)"]
        assert legal_texts(sm, s0) == [_format_moves("(assertz 1)"), ["!"]]
        assert not sm.is_terminal(s0) and sm.goal_values(s0) == [[50], [50]]

        s1 = sm.next_state(s0, (T("(assertz 1)"), "!"))
        assert state_texts(s1) == ["(assert 1)", "(call shell)", "(true true)"]
        assert legal_texts(sm, s1) == [["!"], _format_moves("(assertz 2)", "(retract 0)")]
        assert sm.next_state(s1, ("!", T("(retract 0)"))) == s0

        s2 = sm.next_state(s1, ("!", T("(assertz 2)")))
        assert legal_texts(sm, s2)[0] == _format_moves("(assertz 3)", "(retract 1)")
        s3 = sm.next_state(s2, (T("(assertz 3)"), "!"))
        assert state_texts(s3) == ["(assert 3)", "(call shell)", "(true true)"]
        assert sm.is_terminal(s3) and sm.goal_values(s3) == [[100], [0]]
    finally:
        sm.close()


def test_quoted_atom_tricks_stay_distinct_constants(sandbox):
    sm = PrologReasoner(parse_rules(HOSTILE))
    try:
        s0 = sm.initial_state()
        said = {}
        for item in HOSTILE_ITEMS:
            move = T(f"(format {item})")
            assert move in sm.legal_moves(s0, 0), item
            nxt = sm.next_state(s0, (move, "!"))
            [fact] = [f for f in nxt if f[0] == "said"]
            said[item] = fact[2]
            assert render(fact) == f"(said halt {item})"
            assert sm.is_terminal(nxt) is (item == "a\\b")
            assert sm.goal_values(nxt) == [[50], [50]]
        assert len(set(map(repr, said.values()))) == len(HOSTILE_ITEMS)
    finally:
        sm.close()


def test_the_reference_hostile_game_from_a_start_message_with_semicolons(sandbox):
    # ';' cannot be a symbol in a rule file (it starts a comment) but can in a START message,
    # where ggp-base renders rules with spaces.  Role ';', a counter ';', successor '|',
    # moves ',' and '{}', last value '[]'.
    message = ("(START m.1 ; ( ( role ; ) ( init ( ; 0 ) ) ( | 0 1 ) ( | 1 2 ) "
               "( <= ( legal ; ( , ?n ) ) ( true ( ; ?m ) ) ( | ?m ?n ) ) "
               "( [] 2 ) ( <= ( legal ; {} ) ( true ( ; ?m ) ) ( [] ?m ) ) "
               "( <= ( next ( ; ?n ) ) ( does ; ( , ?n ) ) ) "
               "( <= ( next ( ; ?n ) ) ( does ; {} ) ( true ( ; ?n ) ) ) "
               "( <= terminal ( true ( ; 2 ) ) ) "
               "( <= ( goal ; 100 ) ( true ( ; 2 ) ) ) ( <= ( goal ; 0 ) ( not ( true ( ; 2 ) ) ) ) ) 10 10)")
    rules = rules_from_nodes(read_first(message).items[3].items, "<START>")
    sm = PrologReasoner(rules)
    try:
        assert sm.roles == [";"]
        s = sm.initial_state()
        assert state_texts(s) == ["(; 0)"]
        assert legal_texts(sm, s) == [["(, 1)"]]
        s = sm.next_state(s, (T("(, 1)"),))
        s = sm.next_state(s, (T("(, 2)"),))
        assert state_texts(s) == ["(; 2)"]
        assert legal_texts(sm, s) == [["{}"]]
        assert sm.is_terminal(s) and sm.goal_values(s) == [[100]]
        assert sm.next_state(s, ("{}",)) == s
    finally:
        sm.close()


def test_relations_named_like_control_constructs_are_not_control(sandbox):
    # = is a successor table, \+ a fact, -> a derived relation, ; and , and | relations:
    # none is unification, negation, if-then-else, disjunction or conjunction
    rules = r"""
(role robot)
(init (step 0))
(= 0 1) (= 1 2)
(\+ 2)
(<= (-> ?n) (= ?n ?m))
(<= (legal robot go) (true (step ?n)) (-> ?n))
(<= (legal robot (call ?n)) (true (step ?n)) (\+ ?n))
(<= (next (step ?m)) (does robot go) (true (step ?n)) (= ?n ?m))
(<= terminal (true (step ?n)) (\+ ?n))
(<= (goal robot 100) (true (step ?n)) (\+ ?n))
(<= (goal robot 0) (true (step ?n)) (not (\+ ?n)))
"""
    sm = PrologReasoner(parse_rules(rules))
    try:
        s = sm.initial_state()
        seen = []
        while not sm.is_terminal(s):
            seen.append((state_texts(s), legal_texts(sm, s), sm.goal_values(s)))
            s = sm.next_state(s, ("go",))
        assert seen == [(["(step 0)"], [["go"]], [[0]]), (["(step 1)"], [["go"]], [[0]])]
        assert state_texts(s) == ["(step 2)"]
        assert legal_texts(sm, s) == [["(call 2)"]] and sm.goal_values(s) == [[100]]
    finally:
        sm.close()


# ============================================================== limits

RUNAWAY = """
(role r)
(init (phase 0))
(legal r go)
(<= (next (phase 1)) (true (phase 0)))
(<= (next (phase 2)) (true (phase 1)))
(<= terminal (true (phase 9)))
(goal r 0)

; phase 1: a term that grows without bound through recursion
(nat 0)
(<= (nat (s ?x)) (nat ?x))
(<= (legal r (count ?x)) (true (phase 1)) (nat ?x))

; phase 2: a huge answer set, 30^4 legal moves
(d 0) (d 1) (d 2) (d 3) (d 4) (d 5) (d 6) (d 7) (d 8) (d 9)
(d 10) (d 11) (d 12) (d 13) (d 14) (d 15) (d 16) (d 17) (d 18) (d 19)
(d 20) (d 21) (d 22) (d 23) (d 24) (d 25) (d 26) (d 27) (d 28) (d 29)
(<= (legal r (m ?a ?b ?c ?e)) (true (phase 2)) (d ?a) (d ?b) (d ?c) (d ?e))

; phase 3: a long search with no answer and no memory use (30^6 combinations, each
; failing on the undefined relation never)
(<= terminal (true (phase 3)) (d ?a) (d ?b) (d ?c) (d ?e) (d ?f) (d ?g) (never ?a ?b ?c ?e ?f ?g))
"""


def _still_works(sm):
    s0 = sm.initial_state()
    assert state_texts(s0) == ["(phase 0)"]
    assert sm.legal_moves(s0, 0) == ["go"]
    assert state_texts(sm.next_state(s0, ("go",))) == ["(phase 1)"]
    other = PrologReasoner(parse_rules(LINKS))
    assert state_texts(other.initial_state()) == ["(link a b)"]
    other.close()


@pytest.mark.parametrize("table", ["recursive", "all"])
def test_a_term_growing_without_bound_is_stopped_quickly(table):
    sm = PrologReasoner(parse_rules(RUNAWAY), table=table)  # default limits
    try:
        t0 = time.monotonic()
        with pytest.raises(ReasonerError) as info:
            sm.legal_moves(S("(phase 1)"), 0)
        assert time.monotonic() - t0 < 30
        message = str(info.value)
        assert "legal moves of r" in message and "grows without bound" in message
        assert isinstance(info.value, ResourceLimit) and info.value.resource == "table"
        _still_works(sm)
    finally:
        sm.close()


def test_a_huge_answer_set_hits_the_inference_limit():
    sm = PrologReasoner(parse_rules(RUNAWAY), inference_limit=300_000)
    try:
        t0 = time.monotonic()
        with pytest.raises(ReasonerError) as info:
            sm.legal_moves(S("(phase 2)"), 0)
        assert time.monotonic() - t0 < 30
        assert str(info.value) == "legal moves of r exceeded 300,000 inferences (runaway rules?)"
        assert isinstance(info.value, ResourceLimit) and info.value.resource == "inferences"
        _still_works(sm)
    finally:
        sm.close()


def test_a_long_search_hits_the_inference_limit_or_the_wall_clock_limit():
    sm = PrologReasoner(parse_rules(RUNAWAY), inference_limit=1_000_000)
    try:
        with pytest.raises(ReasonerError, match=r"terminal exceeded 1,000,000 inferences"):
            sm.is_terminal(S("(phase 3)"))
        _still_works(sm)
    finally:
        sm.close()
    sm = PrologReasoner(parse_rules(RUNAWAY), time_limit=1.0)  # default inference limit
    try:
        t0 = time.monotonic()
        with pytest.raises(ReasonerError) as info:
            sm.is_terminal(S("(phase 3)"))
        assert time.monotonic() - t0 < 20
        assert str(info.value) == "terminal took longer than 1 s (runaway rules?)"
        assert isinstance(info.value, ResourceLimit) and info.value.resource == "time"
        _still_works(sm)
    finally:
        sm.close()


# ============================================================== threads

def test_using_prolog_from_another_thread_is_refused_clearly():
    sm = PrologReasoner(parse_rules(LINKS))  # this (the owner) thread
    s0 = sm.initial_state()
    errors: dict = {}

    def other_thread():
        for name, call in [("query", lambda: sm.legal_moves(s0, 0)),
                           ("create", lambda: PrologReasoner(parse_rules(LINKS)))]:
            try:
                call()
                errors[name] = None
            except ReasonerError as e:
                errors[name] = str(e)
            except Exception as e:  # anything else is a failure of the test
                errors[name] = f"wrong exception {type(e).__name__}: {e}"

    t = threading.Thread(target=other_thread)
    t.start()
    t.join(60)
    assert not t.is_alive()
    for name in ("query", "create"):
        assert errors[name] is not None, f"{name} from another thread was not refused"
        assert "belongs to another thread" in errors[name] and "not thread-safe" in errors[name]
    # the owner thread goes on as before
    assert legal_texts(sm, s0) == [["(build a c)", "(build b c)", "(build c a)", "(build c b)"]]
    sm.close()


# ============================================================== the cache

class Counting:
    """Wraps a state machine and counts the queries that reach it."""

    def __init__(self, sm):
        self.sm, self.roles, self.calls = sm, sm.roles, 0

    def _count(self, method, *args):
        self.calls += 1
        return getattr(self.sm, method)(*args)

    def initial_state(self):
        return self._count("initial_state")

    def legal_moves(self, state, i):
        return self._count("legal_moves", state, i)

    def next_state(self, state, joint):
        return self._count("next_state", state, joint)

    def is_terminal(self, state):
        return self._count("is_terminal", state)

    def goal_values(self, state):
        return self._count("goal_values", state)

    def __getattr__(self, name):
        return getattr(self.sm, name)


@pytest.mark.parametrize("rules", [PEBBLES, HOSTILE, LINKS], ids=["pebbles", "hostile", "links"])
def test_cached_state_machine_gives_the_answers_of_the_wrapped_reasoner(rules, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plain = PrologReasoner(parse_rules(rules))
    counting = Counting(PrologReasoner(parse_rules(rules)))
    cached = CachedStateMachine(counting, maxsize=64)
    rng = random.Random(5)
    try:
        assert cached.roles == plain.roles
        for _walk in range(6):
            s = cached.initial_state()
            assert s == plain.initial_state()
            for _step in range(12):
                assert cached.is_terminal(s) == plain.is_terminal(s)
                assert cached.goal_values(s) == plain.goal_values(s)
                legal = [cached.legal_moves(s, i) for i in range(len(plain.roles))]
                assert legal == [plain.legal_moves(s, i) for i in range(len(plain.roles))]
                if plain.is_terminal(s) or not all(legal):
                    break
                joint = tuple(rng.choice(ms) for ms in legal)
                nxt = cached.next_state(s, list(joint))  # a list is as good as a tuple
                assert nxt == plain.next_state(s, joint)
                s = nxt
        # a repeated question does not reach the reasoner again
        s0 = cached.initial_state()
        cached.legal_moves(s0, 0)
        before = counting.calls
        for _ in range(3):
            cached.initial_state(), cached.legal_moves(s0, 0), cached.is_terminal(s0), cached.goal_values(s0)
        assert counting.calls == before
        # answers are copies: changing one does not change the cache
        moves = cached.legal_moves(s0, 0)
        moves.clear()
        goals = cached.goal_values(s0)
        goals[0].append(-1)
        assert cached.legal_moves(s0, 0) == plain.legal_moves(s0, 0)
        assert cached.goal_values(s0) == plain.goal_values(s0)
        # the cache stays within its size, and anything else reaches the wrapped reasoner
        assert len(cached._cache) <= 64
        assert cached.table_policy == counting.sm.table_policy
    finally:
        plain.close()
        counting.sm.close()


# ============================================================== what Prolog refuses on load

WIDE = " ".join(f"a{i}" for i in range(1025))
WIDE_GAME = f"""(role p) (init (s 0)) (legal p go) (<= (next (s 1)) (does p go))
(<= terminal (true (s 1))) (goal p 100) (wide {WIDE}) (<= (legal p stay) (wide {WIDE}))"""


def test_a_clause_prolog_skips_on_load_refuses_the_rules():
    """SWI-Prolog reports 'max_procedure_arity' for the 1025-argument fact and loads the rest,
    so the legal moves were [go] instead of [go, stay]: the rules are refused instead."""
    from agent.reasoner.statemachine import RulesRefused, UnsupportedRules
    with pytest.raises(UnsupportedRules, match="max_procedure_arity") as e:
        PrologReasoner(parse_rules(WIDE_GAME))
    assert isinstance(e.value, RulesRefused) and isinstance(e.value, ReasonerError)
    assert "line " in str(e.value) and "gdl_" not in str(e.value)  # no temporary file named
    # the engine is still usable afterwards, and a clean program loads
    sm = PrologReasoner(parse_rules(WIDE_GAME.replace(WIDE, "a b")))
    try:
        assert legal_texts(sm, sm.initial_state()) == [["go", "stay"]]
    finally:
        sm.close()


def test_every_load_message_counts_not_only_errors():
    """Warnings on load are refusals too (here: a syntax error in a program of ours)."""
    from agent.reasoner.prolog import load_program
    from agent.reasoner.statemachine import RulesRefused
    with pytest.raises(RulesRefused, match="Syntax error"):
        load_program(":- module(gdl_bad_syntax, []).\np(a) :- .\n")


def test_failures_come_as_classes_not_message_text(pebbles):
    from agent.reasoner.statemachine import InvalidQuery, PlayoutCap, ResourceLimit
    s = pebbles.initial_state()
    with pytest.raises(InvalidQuery, match="one move per role"):
        pebbles.next_state(s, [T("wait")])
    with pytest.raises(PlayoutCap) as e:
        pebbles.random_playout(s, cap=1, seed=3)
    assert isinstance(e.value, ResourceLimit) and e.value.resource == "playout" and e.value.cap == 1
