"""Grounding with Prolog: the reachable ground atoms and the ground rule instances.

The classic relaxation: drop every negative literal (an over-approximation of what can ever
be true) and compute the least model of ``true := init | next``, ``does := legal`` with the
relations these read.  That is one positive Datalog program, evaluated semi-naively over
plain Prolog facts (``fixpoint_relations``, the ``fix`` loop); static relations and those
outside it (goal, terminal, those read only under ``not``) are tabled and evaluated on
demand, for the values their callers bind.  Then each
rule is instantiated against the relaxed model: Prolog enumerates the substitutions that satisfy its positive literals and
its ``distinct`` tests, and returns the ground head with every ground body literal.
Negative literals whose atom is outside the relaxed model are always true and vanish later.

Before that, rule bodies are factored (``factor_rules``): body literals joined only by
variables the head does not need become an auxiliary relation over the variables it does
need.  A frame axiom ``next(cell x y p) <= true(cell x y p), does(r, move a b c d),
elsewhere(x y a b), elsewhere(x y c d)`` grounds to one rule per (fluent, move) pair (2.7
million in skirmish); factored, it is ``aux(x y) <= does(..), elsewhere(..), ..`` per
(cell, move) and ``next(..) <= true(..), aux(x y)`` per fluent.  The ground program means
the same: the auxiliary atom is exactly the projection of the factored literals.

Budgets (inferences, wall time, instance count) turn an explosion into ``GroundingError``
so the caller can fall back to the Prolog reasoner.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from gdl.analysis import DOES_SIG, TRUE_SIG, dependencies, expand_or, literal_atom
from gdl.kif import Description, Rule
from gdl.terms import Term, render, signature, variables

from .kernels import rule_offsets
from ..reasoner.prolog import MAX_TABLE_ANSWER_SIZE, TOKEN, Codec, load_program, new_module_name, ordered_body, reset_tables, run_goal
from ..reasoner.statemachine import (GroundingError, ReasonerError, ResourceLimit,  # noqa: F401 (re-exported)
                                     RulesRefused)


@dataclass
class GroundProgram:
    roles: list
    true_atoms: list      # every fluent that can ever hold (relaxed), as terms
    does_atoms: list      # every (role, move) that can ever be done (relaxed)
    atoms: list           # atom id -> ground sentence (("true", f), ("does", r, m), or a relation)
    flat_rules: np.ndarray  # [k, head, lit, ..., k, head, ...]: k = 1 + body size; literal
                            # +(id+1) positive, -(id+1) negative; heads are +(id+1)
    n_rules: int
    static: set           # signatures of relations that depend on neither true nor does
    iterations: int       # rounds of the semi-naive relaxed fixpoint
    seconds: float
    fixpoint_seconds: float


def _lit_text(codec: Codec, rel: dict, lit, var: dict) -> str | None:
    """Relaxed Prolog text of a body literal; None for a dropped (negative) literal."""
    if isinstance(lit, tuple) and lit[0] == "distinct":
        return f"{codec.term_text(lit[1], var)}\\=={codec.term_text(lit[2], var)}"
    if isinstance(lit, tuple) and lit[0] == "not":
        inner = lit[1]
        if isinstance(inner, tuple) and inner[0] == "distinct":
            return f"{codec.term_text(inner[1], var)}=={codec.term_text(inner[2], var)}"
        return None
    return _atom_call(codec, rel, lit, var)


# _NO_ZERO_ARITY: state predicates of propositional fluents take a dummy argument, ``u7(0)``
# (a relic of incremental tabling, which did not invalidate a table over a zero-arity
# predicate; kept so that every state predicate has the same shape).

def _fluent_pred(codec: Codec, fluent: Term) -> str | None:
    """One dynamic predicate per fluent functor (``u<id>``): SWI-Prolog indexes the
    fluent's arguments (a ``t(cell(..))`` fact would be indexed on its functor only)."""
    if isinstance(fluent, str):
        return None if fluent.startswith("?") else "u" + codec.atom(fluent, -1)[1:]
    return "u" + codec.atom(fluent[0], len(fluent) - 1)[1:]


def _head_call(codec: Codec, rel: dict, head: Term, var: dict) -> str:
    """``next`` is split by fluent functor too (``n<id>``): each becomes its ``u<id>``."""
    if signature(head) == ("next", 1):
        u = _fluent_pred(codec, head[1])
        if u is not None:
            f = head[1]
            n = "n" + u[1:]
            if isinstance(f, str) or len(f) == 1:
                return n
            return n + "(" + ",".join(codec.term_text(a, var) for a in f[1:]) + ")"
    return _atom_call(codec, rel, head, var)


def _atom_call(codec: Codec, rel: dict, sentence: Term, var: dict) -> str:
    sig = signature(sentence)
    if sig == TRUE_SIG:
        f = sentence[1]
        u = _fluent_pred(codec, f)
        if u is None:
            return f"t({codec.term_text(f, var)})"
        if isinstance(f, str) or len(f) == 1:
            return u + "(0)"  # see _NO_ZERO_ARITY
        return u + "(" + ",".join(codec.term_text(a, var) for a in f[1:]) + ")"
    if sig == DOES_SIG:
        return f"d({codec.term_text(sentence[1], var)},{codec.term_text(sentence[2], var)})"
    p = rel.setdefault(sig, f"r{len(rel)}")
    if isinstance(sentence, str) or len(sentence) == 1:
        return p
    return p + "(" + ",".join(codec.term_text(a, var) for a in sentence[1:]) + ")"


# Auxiliary relations are named with a space: the KIF reader never makes such a symbol, so
# they cannot collide with a game's relation.
FACTOR_PREFIX = "factor "


def factor_rules(rules: list, filters: dict | None = None) -> list:
    """Split each rule body into groups of literals connected through *local* variables
    (variables not in the head); a group with local variables that is not the whole body
    becomes ``aux(V) <= group`` with V its head variables, and the rule reads ``aux(V)``
    instead.  Grounding then pays for the group's instances once per V, not once per
    combination with the rest of the body.  A group is left in place when its head
    variables are not all bound by its own positive literals (the auxiliary rule would be
    unsafe).  Distinct and negative literals go with the group whose variables they use.

    ``filters``, if given, receives {index of an auxiliary rule in the result: its filter
    literals} (see below): they bound the grounding only and are not part of the ground
    rule."""
    out, n = [], 0
    known: dict = {}  # canonical (kept variables, literals) -> auxiliary name: one per group
    for r in rules:
        body = list(r.body)
        if len(body) < 2:
            out.append(r)
            continue
        head_vars = set(variables(r.head))
        lit_vars = [set(_lit_vars(l)) for l in body]
        parent = list(range(len(body)))

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        first: dict = {}
        for i, vs in enumerate(lit_vars):
            for v in vs - head_vars:
                if v in first:
                    parent[find(i)] = find(first[v])
                else:
                    first[v] = i
        groups: dict = {}
        for i in range(len(body)):
            groups.setdefault(find(i), []).append(i)
        if len(groups) < 2:
            out.append(r)
            continue
        rest, made = [], []
        for idx in groups.values():
            vs = set().union(*(lit_vars[i] for i in idx))
            local = vs - head_vars
            keep = [v for v in _ordered_vars(body[i] for i in idx) if v in head_vars]
            bound = set()
            for i in idx:
                la = literal_atom(body[i])
                if la is not None and la[1]:
                    bound.update(variables(la[0]))
            if not local or not vs <= bound:
                rest.extend(idx)
                continue
            filt = [i for i in range(len(body)) if i not in idx and set(lit_vars[i]) <= set(keep)
                    and (literal_atom(body[i]) or (None, False))[1] and lit_vars[i]]
            lits = tuple(body[i] for i in sorted(idx + filt))
            # The same group in several rules (checkers' four frame rules per move kind) is
            # one auxiliary relation, not four copies of it in the network.
            key = _canonical((tuple(keep), lits, tuple(body[i] for i in filt)))
            if key in known:
                name = known[key]
                rest.append(("aux", (name, *keep) if keep else name))
                continue
            n += 1
            name = known[key] = f"{FACTOR_PREFIX}{n}"
            aux = (name, *keep) if keep else name
            # Positive literals of the rest of the body over the kept variables only are
            # copied in too: they filter the auxiliary relation as they filtered the rule,
            # which is then never grounded for values the rule could not take (chinese
            # checkers: without them a group over three board relations grounds for every
            # cell instead of the occupied ones).  They add no variable, so the projection
            # is the same.  The ground auxiliary rules leave them out (the rule still tests
            # them), so the network does not evaluate them twice.
            made.append((Rule(aux, lits, r.line, r.col), tuple(body[i] for i in filt)))
            rest.append(("aux", aux))
        if not any(isinstance(x, tuple) for x in rest):  # nothing factored
            out.append(r)
            continue
        # the remaining literals keep their order; auxiliary literals come after them
        new_body = tuple(body[x] for x in sorted(i for i in rest if not isinstance(i, tuple))) + \
            tuple(x[1] for x in rest if isinstance(x, tuple))
        out.append(Rule(r.head, new_body, r.line, r.col))
        for rule, filt in made:
            if filt and filters is not None:
                filters[len(out)] = filt
            out.append(rule)
    return out


def _canonical(t):
    """``t`` with its variables renamed ?0, ?1... in order of first occurrence."""
    names: dict = {}

    def walk(x):
        if isinstance(x, str):
            return names.setdefault(x, f"?{len(names)}") if x.startswith("?") else x
        return tuple(walk(a) for a in x)
    return walk(t)


def _lit_vars(lit) -> list:
    """Variables of a body literal (sentence, ``not``, ``distinct``: their arguments)."""
    return variables(lit)


def _ordered_vars(lits) -> list:
    out: list = []
    for lit in lits:
        variables(lit, out)
    return out


def fixpoint_relations(rules: list) -> set:
    """Signatures the relaxed fixpoint needs: ``init``, ``next``, ``legal`` and what they
    depend on through positive literals (the relaxation drops the negative ones).  Only
    these are computed bottom-up to their full relaxed extent; the others (goal, terminal,
    and relations read only under ``not``, like chess's check tests) are evaluated on
    demand by the instance queries, for the argument values their readers ask about."""
    pos: dict = {}
    for r in rules:
        s = pos.setdefault(signature(r.head), set())
        for lit in r.body:
            la = literal_atom(lit)
            if la is not None and la[1]:
                s.add(signature(la[0]))
    need: set = set()
    todo = [("init", 1), ("next", 1), ("legal", 2)]
    while todo:
        sig = todo.pop()
        if sig not in need:
            need.add(sig)
            todo.extend(pos.get(sig, ()))
    return need


def _join_order(first, rest: list) -> list:
    """``first`` (the last round's facts), then greedily the positive literal sharing the
    most variables already bound (the earliest in the rule on ties), each test as soon as
    its variables are bound.  The rule's own order can start with a literal unrelated to
    the new facts (chess: every move, then the king's cell), a cross product per round."""
    out, bound, rest = [first], set(first[2]), list(rest)
    while rest:
        ready = [x for x in rest if not x[1] and x[2] <= bound]
        pos = [x for x in rest if x[1]]
        if ready:
            nxt = ready[0]
        elif pos:
            nxt = max(pos, key=lambda x: (len(x[2] & bound) > 0, len(x[2] & bound), -rest.index(x)))
        else:
            nxt = rest[0]  # a test on variables no literal binds: unsafe, left last
        out.append(nxt)
        rest.remove(nxt)
        if nxt[1]:
            bound |= nxt[2]
    return out


def _exists_suffix(lits: list, head_vars: set, first_prefix: str) -> str:
    """Body text with the literals after the first point where every head variable is
    bound wrapped in ``once``: from there they only test that some value of the local
    variables exists, and the head is the same whichever does.  A rule whose head drops
    most of its variables (chess's ``next (check ...)``: a move, the king's cell, every
    attacker's cell) then derives each head once per binding of its head variables instead
    of once per solution of its body.  ``lits``: (text, positive?, variables), in order;
    the first text gets ``first_prefix`` (the last round's facts)."""
    texts = [first_prefix + lits[0][0]] + [x[0] for x in lits[1:]]
    bound: set = set()
    for p, (_, positive, vs, *_) in enumerate(lits):
        if positive:
            bound |= vs
        if head_vars <= bound:
            rest = texts[p + 1:]
            if rest and set().union(*(x[2] for x in lits[p + 1:])) - head_vars:
                return ", ".join(texts[:p + 1] + [f"once(({', '.join(rest)}))"])
            break
    return ", ".join(texts)


def _is_call(lit) -> bool:
    """A positive sentence (a relation, true or does), not a distinct test or a negation."""
    return not (isinstance(lit, tuple) and lit[0] in ("distinct", "not"))


def ground(desc: Description, *, seconds: float = 20.0, inferences: int = 2_000_000_000,
           max_instances: int = 2_000_000, factor: bool = True) -> GroundProgram:
    """``factor``: factor rule bodies first (see ``factor_rules``); off only to measure."""
    t0 = time.monotonic()
    rules = [rr for r in desc.rules for rr in expand_or(r)
             if signature(r.head) not in (TRUE_SIG, DOES_SIG)]
    filters: dict = {}
    if factor:
        rules = factor_rules(rules, filters)
    deps = dependencies(rules)
    static = set(deps.edges) - deps.depending_on([TRUE_SIG, DOES_SIG])
    # Computed by the fixpoint: what init, next and legal read that depends on the state.
    # Static relations stay tabled: complete once called, asked only for the values the
    # joins bind (materialised whole, ronaldinho's 65,280 pairs of distinct cells cost more
    # than the tables).
    dyn = (fixpoint_relations(rules) - static) | {("init", 1), ("next", 1), ("legal", 2)}
    codec, rel = Codec(), {}
    module = new_module_name("ground")
    clauses: dict = {}   # tabled relations outside the fixpoint: predicate -> clauses
    seeds, steps = [], []  # the fixpoint's rules (see below)
    fact_preds: set = set()
    instance_queries = []
    for i, r in enumerate(rules):
        var: dict = {}
        head = _head_call(codec, rel, r.head, var)
        head_q = _quote_atom(codec, rel, r.head, var)
        ordered = ordered_body(r.body)
        # (text, positive?, variables, read from the fixpoint's facts?)
        lits = [(t, _is_call(l), set(variables(l)), _is_call(l) and signature(l) in dyn | {TRUE_SIG, DOES_SIG})
                for l, t in ((l, _lit_text(codec, rel, l, var)) for l in ordered) if t is not None]
        body = [x[0] for x in lits]
        if signature(r.head) in dyn:
            # Semi-naive: a rule can derive a new fact only from a fact new in the last
            # round, so it runs once per positive literal with that literal read from the
            # last round's facts (``e<pred>``, first) and the others from all facts.
            fact_preds.add(head.split("(")[0])
            calls = [k for k, x in enumerate(lits) if x[3]]
            if not calls:
                seeds.append(f"step0({head})" + (" :- " + ", ".join(body) if body else "") + ".")
            for k in calls:
                order = _join_order(lits[k], [x for j, x in enumerate(lits) if j != k])
                steps.append(f"step({head}) :- " + _exists_suffix(order, set(variables(r.head)), "e") + ".")
        else:
            clauses.setdefault(head.split("(")[0], []).append(head + (" :- " + ", ".join(body) if body else "") + ".")
        # The instance query: same positive part, but it reports every literal, negatives too.
        report = []
        skip = list(filters.get(i, ()))
        for l in ordered:
            if l in skip:
                skip.remove(l)
                continue
            la = literal_atom(l)
            if la is None:
                continue  # distinct and (not (distinct ..)): decided by Prolog
            sent, positive = la
            report.append(("" if positive else "n(") + _quote_atom(codec, rel, sent, var) + ("" if positive else ")"))
        instance_queries.append((head_q, body, report))
    for sig in ("init", 1), ("next", 1), ("legal", 2):
        rel.setdefault(sig, f"r{len(rel)}")
    fluents = {}  # u-predicate -> (data pattern text, call text)
    for r in rules:
        for sent in [r.head] + [la[0] for la in map(literal_atom, r.body) if la]:
            sig = signature(sent)
            arg = sent[1] if sig in (TRUE_SIG, ("init", 1), ("next", 1)) else None
            u = None if arg is None else _fluent_pred(codec, arg)
            if u is not None and u not in fluents:
                k = -1 if isinstance(arg, str) else len(arg) - 1
                vs = [f"A{j}" for j in range(max(k, 0))]
                data = codec.atom(arg if isinstance(arg, str) else arg[0], k) + (f"({','.join(vs)})" if vs else "")
                # (state predicate call, next predicate call, arity of the state predicate)
                fluents[u] = (data, u + (f"({','.join(vs)})" if vs else "(0)"),
                              "n" + u[1:] + (f"({','.join(vs)})" if vs else ""), max(k, 1))
    init, nxt, legal = rel[("init", 1)], rel[("next", 1)], rel[("legal", 2)]
    # Every predicate of the fixpoint is a set of facts, with its last round's new facts in
    # e<pred>: state (u<functor>, u_other, d), next (n<functor>) and the fixpoint relations.
    preds = {p: max(sig[1], 0) for sig, p in rel.items() if sig not in (TRUE_SIG, DOES_SIG)}
    facts = {"u_other": 1, "d": 2}
    for u, (_, _, ncall, k) in fluents.items():
        facts[u] = k
        facts[ncall.split("(")[0]] = ncall.count(",") + 1 if "(" in ncall else 0
    facts.update({p: n for p, n in preds.items() if p in fact_preds or p not in clauses})
    declared = [f"{p}/{n}" for p, n in sorted(facts.items())] + [f"e{p}/{n}" for p, n in sorted(facts.items())]
    out = [f":- module({module}, []).", ":- style_check(-singleton).",
           f":- dynamic([{', '.join(declared)}]).", ":- dynamic([step0/1, step/1])."]
    for u, (data, call, _, _) in fluents.items():
        out.append(f"t({data}) :- {call}.")
    out.append("t(X) :- u_other(X).")
    for u, (data, call, _, _) in fluents.items():
        out.append(f"et({data}) :- e{call}.")
    out.append("et(X) :- eu_other(X).")
    # true := init | next, does := legal: rules of the same fixpoint.
    for u, (data, call, _, _) in fluents.items():
        out.append(f"tconv({data}, {call}) :- !.")
    out.append("tconv(X, u_other(X)).")
    out.extend(seeds)
    for u, (_, call, ncall, _) in fluents.items():
        out.append(f"step({call}) :- e{ncall}.")
    out.append(f"step(T) :- e{init}(X), tconv(X, T).")
    out.append(f"step(T) :- e{nxt}(X), tconv(X, T).")
    out.append(f"step(d(R, A)) :- e{legal}(R, A).")
    out.extend(steps)
    for p, n in sorted(preds.items()):
        if p in clauses:  # relations outside the fixpoint: tabled, evaluated after it
            out.append(f":- table {p}/{n}.")
    for p in clauses:
        out.extend(clauses[p])
    clear = ", ".join(f"retractall(e{p}" + (f"({','.join('_' * n)})" if n else "") + ")"
                      for p, n in sorted(facts.items()))
    out.append(f"""
% The relaxed fixpoint, semi-naive: each round runs the rules on the facts new in the last
% round (a trie tells new facts from known ones), until a round adds nothing.  Facts are
% plain dynamic predicates, indexed by SWI-Prolog on whatever arguments the joins bind: no
% table per call pattern (incremental tabling made one for every bound call of a relation,
% 991,375 tables in chess, 70 % of its time in variant lookups).
% A round's duplicates go first, in sort/2 (most of chinese checkers' derivations are
% repeats, and a trie insert costs more than sorting).
fix(N) :- trie_new(Tr), findall(H, step0(H), Hs0), sort(Hs0, Hs), add_new(Hs, Tr, New), loop(New, Tr, 0, N).
loop([], _, K, K) :- !.
loop(New, Tr, K, N) :- clear_delta, maplist(add_delta, New), findall(H, step(H), Hs0), sort(Hs0, Hs),
    add_new(Hs, Tr, New1), K1 is K + 1, loop(New1, Tr, K1, N).
add_new([], _, []).
add_new([H|Hs], Tr, New) :- check_fact(H),
    ( trie_insert(Tr, H) -> assertz(H), New = [H|New1] ; New = New1 ), add_new(Hs, Tr, New1).
% An unsafe rule derives a fact with a variable; a recursive rule can grow a term for ever
% (the same guard as the reasoner's tabled answers).
check_fact(H) :- ( ground(H) -> true ; throw(gdl_error(unsafe_rule(H))) ),
    term_size(H, S), ( S =< {MAX_TABLE_ANSWER_SIZE} -> true
    ; throw(error(resource_error(tripwire(max_table_answer_size, S)), _)) ).
add_delta(H) :- H =.. [F|As], atom_concat(e, F, E), D =.. [E|As], assertz(D).
clear_delta :- {clear or 'true'}.
q_fix(T) :- fix(N), format(atom(T), '~w', [N]).
q_facts(T) :- findall(X, t(X), L1), findall([R,A], d(R, A), L2), format(atom(T), '~w', [[L1, L2]]).
% Ground atoms are interned in a trie: rules come back as integers, each atom is sent once.
:- dynamic atom_trie/1.
aid(A, I) :- atom_trie(Tr), ( trie_lookup(Tr, A, I) -> true
    ; flag({module}_n, I, I + 1), trie_insert(Tr, A, I) ).
lid(n(A), Id) :- !, aid(A, I), Id is -(I + 1).
lid(A, Id) :- aid(A, I), Id is I + 1.
emit(L, T) :- length(L, N), flat(L, F), atomic_list_concat(F, ',', Body), format(atom(T), '~w;~w', [N, Body]).
% [[h, l1, l2], ...] -> [k, h, l1, l2, ...] with k = length of each (a plain predicate: a yall
% lambda here copied itself per instance, a third of the instance queries' time).
flat([], []).
flat([R|Rs], [K|F]) :- length(R, K), append(R, F1, F), flat(Rs, F1).
% An unsafe rule (a variable bound by no positive literal) has non-ground instances: refused.
safe(L) :- ( ground(L) -> true ; throw(gdl_error(unsafe_rule(L))) ).
q_atoms(T) :- atom_trie(Tr), findall(I-A, trie_gen(Tr, A, I), Ps), keysort(Ps, S), pairs_values(S, As),
    format(atom(T), '~w', [As]).
""")
    for i, (head, body, report) in enumerate(instance_queries):
        goal = ", ".join(body) if body else "true"
        out.append(f"q_inst({i}, T) :- findall(Ids, (({goal}), safe([{head}|[{','.join(report)}]]), "
                   f"maplist(lid, [{head}|[{','.join(report)}]], Ids)), L), emit(L, T).")

    def left() -> float:  # every Prolog call gets the rest of the budget as a wall-clock limit
        return seconds - (time.monotonic() - t0)
    try:
        try:
            load_program("\n".join(out) + "\n")
        except RulesRefused as e:  # e.g. a fluent of over 1024 arguments: Prolog may still play it
            raise GroundingError(f"the grounding program: {e}") from None
        try:
            iterations = int(run_goal(module, "q_fix(T)", inferences, "grounding (relaxed fixpoint)", left()))
        except RulesRefused:
            raise GroundingError("a rule derives an atom with a variable that no positive literal "
                                 "binds (an unsafe rule)") from None
        t_fix = time.monotonic() - t0
        _check_time(t0, seconds, "the relaxed fixpoint")
        facts = codec.decode(run_goal(module, "q_facts(T)", inferences, "grounding facts", left()))
        true_atoms = [f for f in facts[0]]
        does_atoms = [(d[0], d[1]) for d in facts[1]]
        run_goal(module, "trie_new(Tr), assertz(atom_trie(Tr)), T = x", inferences, "grounding setup")
        chunks, n_rules = [], 0
        for i in range(len(instance_queries)):
            try:
                text = run_goal(module, f"q_inst({i},T)", inferences, f"grounding rule {i + 1}", left())
            except RulesRefused:
                r = rules[i]
                raise GroundingError(f"the rule for {render(r.head)} at line {r.line} is unsafe: an "
                                     f"instance keeps a variable that no positive literal binds") from None
            count_text, _, body_text = text.partition(";")
            n_rules += int(count_text)
            if n_rules > max_instances:
                raise GroundingError(f"more than {max_instances:,} ground rule instances")
            if body_text:
                chunks.append(np.array(body_text.split(","), dtype=np.int64))
            _check_time(t0, seconds, f"rule {i + 1} of {len(instance_queries)}")
        inv_rel = {p: sig for sig, p in rel.items()}
        atoms = _decode_literals(codec, inv_rel, run_goal(module, "q_atoms(T)", inferences, "grounding atoms", left()))
        flat = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
        if factor:
            flat, n_rules = inline_single_rule_aux(flat, atoms)
    except GroundingError:
        raise
    except ResourceLimit as e:
        if e.resource == "time" and left() <= 0.05:  # Prolog's message names the time that was
            raise GroundingError(f"grounding took longer than its {seconds:g} s budget "  # left
                                 f"(stopped in {e.what})") from None
        raise GroundingError(str(e)) from None
    except ReasonerError as e:
        raise GroundingError(str(e)) from None
    finally:
        reset_tables()
        try:
            run_goal(module, "forall(current_predicate(P/N), (functor(H,P,N), "
                             "(predicate_property(H, imported_from(_)) -> true ; abolish(P/N)))), T = x",
                     10**9, "cleanup")
        except ReasonerError:
            pass
    return GroundProgram(desc.roles, true_atoms, does_atoms, atoms, flat, n_rules, static, iterations,
                         time.monotonic() - t0, t_fix)


def inline_single_rule_aux(flat: np.ndarray, atoms: list) -> tuple:
    """Ground auxiliary atoms with exactly one rule are substituted back into the rules
    that read them: there the projection saved nothing (the local variables had one value,
    e.g. ``y + 1``), and an extra AND node per use only slowed playouts (reversi: 0.76x).
    Auxiliary atoms with several rules (a real projection: an OR) stay.  Returns the new
    flat rules and their count."""
    if not len(flat):
        return flat, 0
    starts = rule_offsets(flat)
    heads = flat[starts + 1] - 1
    is_aux = np.fromiter((signature(a)[0].startswith(FACTOR_PREFIX) for a in atoms), dtype=bool, count=len(atoms))
    single = is_aux & (np.bincount(heads, minlength=len(atoms)) == 1)
    if not single.any():
        return flat, len(starts)
    lens = flat[starts] + 1
    rule_of = np.repeat(np.arange(len(starts)), lens)
    is_lit = np.ones(len(flat), dtype=bool)
    is_lit[starts] = False
    is_lit[starts + 1] = False
    hit = is_lit & (flat > 0) & single[np.clip(np.abs(flat) - 1, 0, len(atoms) - 1)]
    affected = np.unique(rule_of[hit])
    drop = np.zeros(len(starts), dtype=bool)
    drop[affected] = True
    drop[single[heads]] = True  # the inlined rules themselves: nothing reads them any more
    body_of = {int(heads[r]): flat[starts[r] + 2:starts[r] + lens[r]].tolist() for r in np.nonzero(single[heads])[0]}
    rebuilt = []
    for r in affected.tolist():
        if single[heads[r]]:
            continue
        lits = []
        for x in flat[starts[r] + 2:starts[r] + lens[r]].tolist():
            lits.extend(body_of[x - 1] if x > 0 and (x - 1) in body_of else (x,))
        rebuilt.extend([len(lits) + 1, int(flat[starts[r] + 1])] + lits)
    kept = flat[~drop[rule_of]]
    out = np.concatenate([kept, np.asarray(rebuilt, dtype=np.int64)])
    return out, int((~drop).sum()) + sum(1 for r in affected.tolist() if not single[heads[r]])


def _check_time(t0: float, seconds: float, where: str) -> None:
    if time.monotonic() - t0 > seconds:
        raise GroundingError(f"grounding took longer than {seconds:g} s (at {where})")


# Ground literals come back as data: relation calls are wrapped as q<N>(args) so that the
# decoder can tell relations (q), true (t), does (d) and negation (n) from game symbols (s).
def _quote_atom(codec: Codec, rel: dict, sentence: Term, var: dict) -> str:
    sig = signature(sentence)
    if sig == TRUE_SIG:
        return f"t({codec.term_text(sentence[1], var)})"
    if sig == DOES_SIG:
        return f"d({codec.term_text(sentence[1], var)},{codec.term_text(sentence[2], var)})"
    p = "q" + rel.setdefault(sig, f"r{len(rel)}")[1:]
    args = [] if isinstance(sentence, str) or len(sentence) == 1 else \
        [codec.term_text(a, var) for a in sentence[1:]]
    return p + "(" + ",".join(args + ["x"]) + ")"  # trailing x: keeps zero-arity calls compound


def _decode_literals(codec: Codec, inv_rel: dict, text: str) -> list:
    """Parse ``[Lit, ...]`` where literals are q/t/d-wrapped data (see _quote_atom)."""
    toks = TOKEN.findall(text)
    pos = 0

    def term():
        nonlocal pos
        t, pos = codec.read_term(toks, pos, GroundingError)
        return t

    def literal():
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok == "t":
            pos += 1
            a = term()
            pos += 1
            return ("true", a)
        if tok == "d":
            pos += 1
            r = term()
            pos += 1  # ,
            a = term()
            pos += 1
            return ("does", r, a)
        sig = inv_rel.get("r" + tok[1:]) if tok[:1] == "q" else None  # q<N>(args..., x)
        if sig is None:
            raise GroundingError(f"the grounder's output holds {tok!r} where a literal belongs")
        name, ar = sig
        pos += 1  # (
        args = []
        while toks[pos] != "x":
            args.append(term())
            pos += 1  # ,
        pos += 2  # x )
        return name if ar < 0 else (name,) + tuple(args)

    out = []
    pos = 1  # [
    try:
        if toks[pos] == "]":
            return out
        while True:
            out.append(literal())
            tok = toks[pos]
            pos += 1
            if tok == "]":
                return out
    except IndexError:
        raise GroundingError(f"the grounder's output ends early: {text[:200]!r}") from None
