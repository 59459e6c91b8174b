"""GDL validator: static checks of a rule sheet and dynamic checks by random play.

``validate(desc)`` checks the restrictions of the GDL specification (Love et al. 2008; see the
project's notes on GDL restrictions) on a parsed ``Description`` and returns ``Problem``s, each
``error`` (the game is undefined, ambiguous or unplayable: refuse it) or ``warning`` (against
the specification, but real games do it and real players still play them).

``simulate_check(sm)`` walks random paths through any object with the state-machine interface
(``agent/reasoner/statemachine.py``) and reports what only play can show: a role without a
legal move in a non-terminal state, a terminal state where a role has no or several goal
values, goal values that are not integers in 0..100.

``check(desc, sm)`` runs both, ``verdict(problems)`` sums them up as ``valid`` / ``warning`` /
``invalid``, and ``check_file(path)`` reads a file and never raises for bad content (reader
errors become problems).

Design notes:

* ``(p)`` and ``p`` are identified (with a warning) before any other check, as players do.
* Relations are identified by name and arity.  A name used with several arities is a
  warning, unless a body literal asks for an arity nobody defines while the name is defined
  with another one: then players that match by name and arity and players that match by name
  (ggp-base's prover ignores surplus arguments) play different games, so it is an error.
* Stratification is checked on relation names first.  A cycle through ``not`` there is
  re-examined rule by rule, linking a body literal only to the rule heads it unifies with
  (so ``(goal robot 100)`` depending on ``(not (goal robot 0))`` is no cycle).  A cycle that
  survives is an error; one that disappears is a warning (some players stratify by name only).
"""
from __future__ import annotations

import itertools
import random
import time
from collections import defaultdict

from .analysis import STATE_WORDS, dependencies, dependency_path, expand_or, strongly_connected
from .description import Description, GdlError, Problem, Rule
from .kif import decode_bytes, parse_rules
from .terms import Term, is_var, render

__all__ = ["validate", "simulate_check", "check", "verdict", "check_file"]

# Fixed arities of the GDL keywords; -1 = a proposition (no parentheses at all).  ``sees`` is
# GDL-II's (Thielscher 2010): (sees r p), role r perceives p after the joint move.
KEYWORD_ARITY = {"role": 1, "init": 1, "true": 1, "does": 2, "next": 1, "legal": 2,
                 "goal": 2, "terminal": -1, "base": 1, "input": 2, "sees": 2}
_KEYWORD_MEANING = {
    "role": "(role r): the role name", "init": "(init f): a fluent of the initial state",
    "true": "(true f): a fluent of the current state", "does": "(does r m): a role and its move",
    "next": "(next f): a fluent of the next state", "legal": "(legal r m): a role and a move",
    "goal": "(goal r v): a role and its goal value", "terminal": "written terminal, not (terminal ...)",
    "base": "(base f): a possible fluent", "input": "(input r m): a role and a possible move",
    "sees": "(sees r p): a role and what it perceives (GDL-II)"}
KEYWORDS = frozenset(KEYWORD_ARITY)
RESERVED = frozenset(("<=", "not", "or", "distinct"))
HEAD_ONLY = ("init", "next", "base", "input", "sees")  # never in rule bodies
STATIC_ONLY = ("init", "base", "input")                # must not depend on STATE_WORDS
MOVE_FREE = ("legal", "goal", "terminal")              # must not depend on does

# SWI-Prolog takes at most 1024 arguments per predicate (its max_procedure_arity flag); a
# clause over that is reported and skipped while the rest loads, which changes the game.  Our
# reasoner passes the state and the joint move as two more arguments to every relation that
# depends on true or does, so those may have two arguments fewer.
PROLOG_MAX_ARITY = 1024
STATE_ARGUMENTS = 2

_REFINE_LIMIT = 2_000_000  # unification attempts allowed when refining a cycle through not
_GREEDY = 0.5  # share of probing steps that go to the successor with the least visited fluents


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _args_text(n: int) -> str:
    return "no arguments (a bare proposition)" if n < 0 else _plural(n, "argument")


# ============================================================================ term helpers

def _strip_parens(t: Term, found: list) -> Term:
    """``(f)`` -> ``f`` everywhere in a term; the names stripped go to ``found``."""
    if isinstance(t, str):
        return t
    if len(t) == 1:
        found.append(t[0])
        return t[0]
    args = tuple(_strip_parens(a, found) for a in t[1:])
    return t if args == t[1:] else (t[0],) + args


def _strip_literal(lit, found: list):
    if _is_connective(lit):
        if lit[0] == "not":
            return ("not", _strip_literal(lit[1], found))
        if lit[0] == "or":
            return ("or",) + tuple(_strip_literal(d, found) for d in lit[1:])
        return ("distinct",) + tuple(_strip_parens(a, found) for a in lit[1:])
    return _strip_parens(lit, found)


def _sig(t: Term) -> tuple:
    return (t, -1) if isinstance(t, str) else (t[0], len(t) - 1)


def _vars(t: Term, out: set) -> set:
    if isinstance(t, str):
        if t[:1] == "?":
            out.add(t)
    else:
        for a in t[1:]:
            _vars(a, out)
    return out


def _lit_vars(lit, out: set) -> set:
    """Variables anywhere in a literal (inside not/or/distinct too)."""
    if _is_connective(lit):
        for a in lit[1:]:
            _lit_vars(a, out)
        return out
    return _vars(lit, out)


def _is_connective(lit) -> bool:
    """After reading, bodies hold connectives only as ``not``/``or``/``distinct`` tuples.

    A *sentence* named ``not``/``or``/``distinct`` cannot occur in a body (the reader turns
    those lists into connectives), so a tuple with that head in a body is a connective."""
    return isinstance(lit, tuple) and lit[0] in ("not", "or", "distinct")


def _sentences(lit, positive=True):
    """Yield ``(sentence, positive)`` for every sentence of a body literal."""
    if _is_connective(lit):
        if lit[0] == "not":
            yield from _sentences(lit[1], not positive)
        elif lit[0] == "or":
            for d in lit[1:]:
                yield from _sentences(d, positive)
        return
    yield lit, positive


def _symbols(t: Term, out: list, is_arg: bool, variables: set):
    """Collect ``(symbol, is_function_name, is_object_constant)`` for every symbol of a term,
    and its variables into ``variables``."""
    if isinstance(t, str):
        if t[:1] != "?":
            out.append((t, False, is_arg))
        else:
            variables.add(t)
        return
    out.append((t[0], is_arg, False))
    for a in t[1:]:
        _symbols(a, out, True, variables)


def _rename(t: Term, tag: str) -> Term:
    if isinstance(t, str):
        return t + tag if t[:1] == "?" else t
    return (t[0],) + tuple(_rename(a, tag) for a in t[1:])


def _walk(t, theta):
    while isinstance(t, str) and t[:1] == "?" and t in theta:
        t = theta[t]
    return t


def _unifiable(a: Term, b: Term) -> bool:
    """Whether two terms (variables already apart) unify; no occurs check (over-approximates)."""
    theta: dict = {}
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        x, y = _walk(x, theta), _walk(y, theta)
        if x == y:
            continue
        if isinstance(x, str) and x[:1] == "?":
            theta[x] = y
        elif isinstance(y, str) and y[:1] == "?":
            theta[y] = x
        elif isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y) and x[0] == y[0]:
            todo.extend(zip(x[1:], y[1:]))
        else:
            return False
    return True


# ============================================================================ static checks

class _Validator:
    def __init__(self, desc: Description):
        self.desc = desc
        self.source = desc.source
        self.problems: list[Problem] = []
        self.rules: list[Rule] = []       # with (f) -> f

    # ------------------------------------------------------------------ reporting
    def report(self, level: str, message: str, rule: Rule | None = None, lit: int | None = None):
        line = col = 0
        if rule is not None:
            line, col = rule.line, rule.col
            if lit is not None and lit < len(rule.body_pos):
                line, col = rule.body_pos[lit]
        self.problems.append(Problem(level, message, self.source, line, col))

    def error(self, message, rule=None, lit=None):
        self.report("error", message, rule, lit)

    def warning(self, message, rule=None, lit=None):
        self.report("warning", message, rule, lit)

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Problem]:
        self.reader_warnings()
        self.normalise()
        self.check_prolog_style()
        self.check_rule_shapes()
        self.check_required()
        self.check_arities()
        self.check_symbols()
        self.check_undefined()
        deps = dependencies(self.rules)
        self.check_dependency_restrictions(deps)
        self.check_stratification(deps)
        self.check_recursion(deps)
        self.check_prolog_limits(deps)
        seen, out = set(), []
        for p in self.problems:
            if p not in seen:
                seen.add(p)
                out.append(p)
        out.sort(key=lambda p: (p.line, p.col))
        return out

    def reader_warnings(self):
        """The reader's own warnings (empty rule bodies), naming the rule's head."""
        at = {(r.line, r.col): r for r in self.desc.rules}
        for w in self.desc.warnings:
            r = at.get((w.line, w.col))
            if r is not None and "empty body" in w.message:
                w = Problem(w.level, f"the rule for {render(r.head)} has an empty body; read as the "
                                     f"fact {render(r.head)}. GDL writes facts without <=, and some "
                                     f"players reject (<= head) with nothing after it",
                            w.source, w.line, w.col)
            self.problems.append(w)

    # ------------------------------------------------------------------ (f) -> f
    def normalise(self):
        first: dict = {}
        counts: dict = defaultdict(int)
        for r in self.desc.rules:
            found: list = []
            head = _strip_parens(r.head, found)
            body = tuple(_strip_literal(l, found) for l in r.body)
            for name in found:
                counts[name] += 1
                first.setdefault(name, r)
            self.rules.append(Rule(head, body, r.line, r.col, r.body_pos) if found else r)
        for name, r in first.items():
            more = counts[name] - 1
            self.warning(f"({name}) is written with empty parentheses; read as {name}. GDL writes a "
                         f"proposition or constant without parentheses, and players that keep ({name}) "
                         f"and {name} apart read a different game"
                         + (f" ({_plural(more, 'more occurrence')})" if more else ""), r)

    # ------------------------------------------------------------------ name(args) at top level
    def check_prolog_style(self):
        rules = self.desc.rules
        for a, b in zip(rules, rules[1:]):
            if (a.is_fact and isinstance(a.head, str) and b.line == a.line
                    and b.col == a.col + len(a.head)):
                self.error(f"'{a.head}(' looks like Prolog or function-call notation: at top level it "
                           f"reads as the proposition {a.head} followed by a separate list; GDL writes "
                           f"sentences in prefix form, ({a.head} arg1 arg2 ...)", a)

    # ------------------------------------------------------------------ per-rule checks
    def check_rule_shapes(self):
        role_seen: dict = {}
        for r in self.rules:
            head = r.head
            hname = head if isinstance(head, str) else head[0]
            # --- keyword placement in heads
            if hname in ("true", "does"):
                what = "stated as a fact" if r.is_fact else "the head of a rule"
                why = ("the current state only comes from init and next" if hname == "true"
                       else "moves only come from the players")
                self.error(f"{hname} is {what}: {render(head)}; GDL allows {hname} only in rule "
                           f"bodies ({why})", r)
            if hname == "role":
                if not r.is_fact:
                    self.error(f"role is defined by a rule: {render(head)}; GDL requires roles to be "
                               f"ground facts such as (role white)", r)
                elif isinstance(head, tuple) and len(head) == 2 and not _vars(head, set()):
                    key = head[1]
                    if key in role_seen:
                        self.warning(f"role {render(key)} is declared twice (also at line "
                                     f"{role_seen[key].line}); it is one role, but ggp-base lists it "
                                     f"twice and expects a move for each", r)
                    else:
                        role_seen[key] = r
            # --- facts
            if r.is_fact:
                vs = _vars(head, set())
                if vs:
                    self.error(f"the fact {render(head)} contains the variable"
                               f"{'s' if len(vs) > 1 else ''} {', '.join(sorted(vs))}; GDL allows "
                               f"variables only in rules with a body that binds them", r)
            else:
                self.check_safety(r)
            # --- goal values
            if hname == "goal" and isinstance(head, tuple) and len(head) == 3:
                v = head[2]
                if isinstance(v, tuple):
                    self.error(f"goal value {render(v)} in {render(head)} is not a number; GDL goal "
                               f"values are integers from 0 to 100", r)
                elif not is_var(v):
                    if not (v.isascii() and v.isdigit()):
                        self.error(f"goal value {v} in {render(head)} is not an integer; GDL goal "
                                   f"values are integers from 0 to 100", r)
                    elif int(v) > 100:
                        self.error(f"goal value {v} in {render(head)} is above 100; GDL goal values "
                                   f"are integers from 0 to 100", r)
            # --- body literals
            for i, lit in enumerate(r.body):
                self.check_literal(r, i, lit, nested_in_or=False)

    def check_literal(self, r: Rule, i: int, lit, nested_in_or: bool):
        if _is_connective(lit):
            kw = lit[0]
            if kw == "not":
                inner = lit[1]
                if _is_connective(inner):
                    if inner[0] == "distinct":
                        self.warning(f"(not (distinct {render(inner[1])} {render(inner[2])})) negates a "
                                     f"distinct; GDL allows not only on sentences. Read as equality "
                                     f"of the two terms, as real games intend", r, i)
                    else:
                        self.error(f"not is applied to ({inner[0]} ...); GDL allows not only on an "
                                   f"atomic sentence, not on a negation or a disjunction", r, i)
                    self.check_literal(r, i, inner, nested_in_or)
                else:
                    self.check_body_sentence(r, i, inner)
            elif kw == "or":
                if nested_in_or:
                    self.warning("a disjunction (or ...) is nested inside another one; its meaning is "
                                 "clear but GDL does not expect nested or, and some players reject it",
                                 r, i)
                if len(lit) == 1:
                    self.warning("(or) without disjuncts is always false, so this rule never applies",
                                 r, i)
                for d in lit[1:]:
                    self.check_literal(r, i, d, nested_in_or=True)
            return
        self.check_body_sentence(r, i, lit)

    def check_body_sentence(self, r: Rule, i: int, s):
        name = s if isinstance(s, str) else s[0]
        if name == "sees":
            # GDL-II (Thielscher 2010): percepts are only what the referee tells the players;
            # nothing of the game (init, legal, next, goal, terminal, helpers) may depend on them
            self.error(f"sees is used in a rule body: {render(s)}; GDL-II allows sees only in rule "
                       f"heads and facts (percepts are what the players are told, and no rule of "
                       f"the game may depend on them)", r, i)
        elif name in HEAD_ONLY:
            self.error(f"{name} is used in a rule body: {render(s)}; GDL allows {name} only in rule "
                       f"heads and facts", r, i)

    # ------------------------------------------------------------------ safety
    def check_safety(self, r: Rule):
        """Every variable must occur in a positive body sentence (an ``or`` binds a variable
        only if every disjunct does); checked recursively into disjuncts."""
        bound = set()
        for lit in r.body:
            self._binds(lit, bound)
        hv = _vars(r.head, set()) - bound
        if hv:
            self.error(f"unsafe rule: the head variable{'s' if len(hv) > 1 else ''} "
                       f"{', '.join(sorted(hv))} of {render(r.head)} "
                       f"{'do' if len(hv) > 1 else 'does'} not occur in any positive literal of the "
                       f"body; GDL requires every variable of a rule to appear in a positive "
                       f"(not negated, not distinct) body sentence", r)
        for i, lit in enumerate(r.body):
            self._safe_literal(r, i, lit, bound)

    def _binds(self, lit, out: set) -> set:
        if _is_connective(lit):
            if lit[0] == "or":
                common = None
                for d in lit[1:]:
                    b = self._binds(d, set())
                    common = b if common is None else common & b
                out |= common or set()
            return out
        return _vars(lit, out)

    def _safe_literal(self, r: Rule, i: int, lit, bound: set):
        if not _is_connective(lit):
            return
        if lit[0] == "or":
            for d in lit[1:]:
                self._safe_literal(r, i, d, bound | self._binds(d, set()))
            return
        missing = _lit_vars(lit, set()) - bound
        if missing:
            where = "a negation" if lit[0] == "not" else "a distinct"
            shown = _literal_text(lit)
            self.error(f"unsafe rule: the variable{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(sorted(missing))} in {where} {shown} "
                       f"{'occur' if len(missing) > 1 else 'occurs'} in no positive literal of the "
                       f"body of {render(r.head)}; GDL requires every variable in not and distinct "
                       f"to be bound by a positive body sentence", r, i)

    # ------------------------------------------------------------------ role/terminal/goal/legal
    def check_required(self):
        heads = {(r.head if isinstance(r.head, str) else r.head[0]) for r in self.rules}
        if not self.desc.roles and not any(
                r.is_fact and isinstance(r.head, tuple) and r.head[0] == "role" for r in self.rules):
            self.error("the game defines no role; GDL requires at least one ground fact (role r)")
        if "terminal" not in heads:
            self.error("the game defines no terminal rule; GDL requires terminal to be defined, or "
                       "no match could ever end")
        if "goal" not in heads:
            self.error("the game defines no goal; GDL requires (goal r v) for the roles in terminal "
                       "states")
        if "legal" not in heads:
            self.error("the game defines no legal move; GDL requires (legal r m) rules or facts")

    # ------------------------------------------------------------------ Prolog's limits
    def check_prolog_limits(self, deps):
        """Relations too wide for a Prolog predicate (see PROLOG_MAX_ARITY): refused, since
        the reasoner would play without their clauses."""
        dynamic = deps.depending_on([("true", 1), ("does", 2)])
        reported: set = set()
        for r in self.rules:
            for lit, sent in [(None, r.head)] + [(j, s) for j, l in enumerate(r.body)
                                                 for s, _ in _sentences(l)]:
                sig = _sig(sent)
                if sig in reported or sig[0] in ("true", "does"):
                    continue
                extra = STATE_ARGUMENTS if sig in dynamic else 0
                if sig[1] + extra > PROLOG_MAX_ARITY:
                    reported.add(sig)
                    why = (f" (it depends on the state, which the reasoner passes as {extra} more "
                           f"arguments)" if extra else "")
                    self.error(f"{sig[0]} has {sig[1]:,} arguments: more than SWI-Prolog's limit of "
                               f"{PROLOG_MAX_ARITY - extra:,} for this relation{why}; Prolog would "
                               f"skip its clauses and play a different game", r, lit)

    # ------------------------------------------------------------------ arities
    def check_arities(self):
        # relation name -> arity -> first (rule, literal index or None) ; separately defined arities
        rel_uses: dict = defaultdict(dict)
        rel_defs: dict = defaultdict(dict)
        body_uses: list = []
        fluent_defs: dict = defaultdict(dict)    # from init/next heads
        fluent_open = False                       # some init/next head has a variable argument
        move_defs: dict = defaultdict(dict)      # from legal heads
        move_open = False
        fluent_uses: list = []
        move_uses: list = []
        fn_arities: dict = defaultdict(dict)
        keyword_bad: set = set()

        def kw_check(s, r, i):
            n, a = _sig(s)
            want = KEYWORD_ARITY[n]
            if a != want and (n, r.line, r.col, i) not in keyword_bad:
                keyword_bad.add((n, r.line, r.col, i))
                self.error(f"{render(s)} has {_args_text(a)}; the keyword {n} takes "
                           f"{_args_text(want)}, {_KEYWORD_MEANING[n]}", r, i)
                return False
            return a == want

        def functions(t, r, i):
            if isinstance(t, tuple):
                fn_arities[t[0]].setdefault(len(t) - 1, (r, i))
                for a in t[1:]:
                    functions(a, r, i)

        for r in self.rules:
            h = r.head
            n, a = _sig(h)
            if n in KEYWORDS:
                if kw_check(h, r, None):
                    if n in ("init", "next"):
                        f = h[1]
                        if is_var(f):
                            fluent_open = True
                        else:
                            fluent_defs[_sig(f)[0]].setdefault(_sig(f)[1], r)
                    elif n == "legal":
                        m = h[2]
                        if is_var(m):
                            move_open = True
                        else:
                            move_defs[_sig(m)[0]].setdefault(_sig(m)[1], r)
            else:
                rel_uses[n].setdefault(a, (r, None))
                rel_defs[n].setdefault(a, r)
            if isinstance(h, tuple):
                for t in h[1:]:
                    functions(t, r, None)
            for i, lit in enumerate(r.body):
                for s, _pos in _sentences(lit):
                    n, a = _sig(s)
                    if n in KEYWORDS:
                        if kw_check(s, r, i):
                            if n == "true" and not is_var(s[1]):
                                fluent_uses.append((s[1], r, i))
                            elif n == "does" and not is_var(s[2]):
                                move_uses.append((s[2], r, i))
                    else:
                        rel_uses[n].setdefault(a, (r, i))
                        body_uses.append((s, r, i))
                    if isinstance(s, tuple):
                        for t in s[1:]:
                            functions(t, r, i)
                if _is_connective(lit):
                    self._distinct_functions(lit, functions, r, i)

        # relations used with several arities
        for n, by_arity in rel_uses.items():
            if len(by_arity) > 1:
                (a1, (r1, i1)), (a2, (r2, i2)) = sorted(by_arity.items(), key=lambda kv: _order(kv[1]))[:2]
                self.warning(f"the relation {n} is used with {_args_text(a1)} (line {r1.line}) and with "
                             f"{_args_text(a2)}; GDL requires one arity per relation name (players "
                             f"that tell relations apart by arity read this as "
                             f"{len(by_arity)} different relations)", r2, i2)
        # body literals asking for an arity that only exists under another arity: ambiguous
        reported = set()
        for s, r, i in body_uses:
            n, a = _sig(s)
            defs = rel_defs.get(n)
            if defs and a not in defs and (n, a) not in reported:
                reported.add((n, a))
                other = ", ".join(_args_text(x) for x in sorted(defs))
                self.error(f"{render(s)} asks for {n} with {_args_text(a)}, but {n} is only defined "
                           f"with {other} (line {min(defs.values(), key=lambda q: q.line).line}); GDL "
                           f"requires one arity per relation name, and players disagree on what this "
                           f"literal means (no match at all, or a match ignoring the extra arguments)",
                           r, i)
        if not fluent_open:
            self._ambiguous_terms(fluent_uses, fluent_defs, "fluent", "init or next")
        if not move_open:
            self._ambiguous_terms(move_uses, move_defs, "move", "legal")
        # functions with several arities
        for n, by_arity in fn_arities.items():
            if len(by_arity) > 1:
                (a1, (r1, i1)), (a2, (r2, i2)) = sorted(by_arity.items(), key=lambda kv: _order(kv[1]))[:2]
                self.warning(f"the function {n} is used with {_args_text(a1)} (line {r1.line}) and with "
                             f"{_args_text(a2)}; GDL requires one arity per function name", r2, i2)

    def _distinct_functions(self, lit, functions, r, i):
        if lit[0] == "distinct":
            for t in lit[1:]:
                functions(t, r, i)
        else:
            for d in lit[1:]:
                if _is_connective(d):
                    self._distinct_functions(d, functions, r, i)

    def _ambiguous_terms(self, uses, defs, kind, producer):
        reported = set()
        for t, r, i in uses:
            n, a = _sig(t)
            d = defs.get(n)
            if d and a not in d and (n, a) not in reported:
                reported.add((n, a))
                other = ", ".join(_args_text(x) for x in sorted(d))
                self.error(f"the {kind} {render(t)} has {_args_text(a)}, but every {kind} named {n} that "
                           f"{producer} can produce has {other}; GDL requires one arity per name, and "
                           f"players disagree on whether this matches", r, i)

    # ------------------------------------------------------------------ symbols: reserved words,
    # keywords inside terms, case
    def check_symbols(self):
        spellings: dict = defaultdict(dict)   # lower -> spelling -> first rule
        kw_fn: dict = {}
        kw_const: dict = {}
        reserved: set = set()
        for r in self.rules:
            out: list = []
            variables: set = set()
            # head: its name is a relation name, arguments are terms
            h = r.head
            if isinstance(h, str):
                out.append((h, False, False))
            else:
                out.append((h[0], False, False))
                for a in h[1:]:
                    _symbols(a, out, True, variables)
            for lit in r.body:
                self._literal_symbols(lit, out, variables)
            rule_vars: dict = {}
            for sym, is_fn, is_const in out:
                low = sym.lower()
                spellings[low].setdefault(sym, r)
                if sym in RESERVED or low in RESERVED:
                    if (sym, r.line) not in reserved:
                        reserved.add((sym, r.line))
                        self.error(f"{sym} is a reserved word of GDL ({'the rule arrow' if sym == '<=' else 'a logical connective'}) "
                                   f"and appears to be used as a "
                                   f"{'constant' if is_const else 'function name' if is_fn else 'relation name'} "
                                   f"here; GDL does not allow reserved words as names", r)
                elif sym in KEYWORDS:
                    if is_fn:
                        kw_fn.setdefault(sym, r)
                    elif is_const:
                        kw_const.setdefault(sym, r)
            for v in sorted(variables) if len(variables) > 1 else ():
                rule_vars.setdefault(v.lower(), []).append(v)
            for low, vs in rule_vars.items():
                if len(vs) > 1:
                    self.warning(f"the variables {' and '.join(vs)} differ only in case within one rule; "
                                 f"they are different variables for case-sensitive players but the same "
                                 f"for case-insensitive ones", r)
        for sym, r in kw_fn.items():
            self.warning(f"the keyword {sym} is used as a function name inside a term (e.g. ({sym} ...) "
                         f"as an argument); GDL reserves {sym} for sentences, though term-based players "
                         f"treat it as an ordinary function", r)
        for sym, r in kw_const.items():
            self.warning(f"the keyword {sym} is used as an object constant; GDL reserves it for "
                         f"sentences, though term-based players treat it as an ordinary constant", r)
        for low, by in spellings.items():
            if len(by) > 1:
                names = sorted(by, key=lambda s: (by[s].line, by[s].col))
                self.warning(f"the symbols {' and '.join(names)} differ only in case; case-sensitive "
                             f"players (ggp-base) read them as different symbols, case-insensitive ones "
                             f"(Dresden's) as the same, so the game can mean different things",
                             by[names[1]])

    def _literal_symbols(self, lit, out, variables):
        if _is_connective(lit):
            if lit[0] == "distinct":
                for t in lit[1:]:
                    _symbols(t, out, True, variables)
            else:
                for d in lit[1:]:
                    self._literal_symbols(d, out, variables)
            return
        if isinstance(lit, str):
            out.append((lit, False, False))
        else:
            out.append((lit[0], False, False))
            for a in lit[1:]:
                _symbols(a, out, True, variables)

    # ------------------------------------------------------------------ relations nobody defines
    def check_undefined(self):
        """A body sentence whose relation no rule or fact defines (at any arity) is always
        false: valid GDL, but almost always a typo (a misspelt name)."""
        defined = {r.head if isinstance(r.head, str) else r.head[0] for r in self.rules}
        reported: set = set()
        for r in self.rules:
            for i, lit in enumerate(r.body):
                for sent, _ in _sentences(lit):
                    name = sent if isinstance(sent, str) else sent[0]
                    if (name in defined or name in reported or name in ("true", "does")
                            or name in HEAD_ONLY or is_var(name)):
                        continue
                    reported.add(name)
                    self.warning(f"{name} is used here but no rule or fact defines it, so it is "
                                 f"never true; a misspelt name?", r, i)

    # ------------------------------------------------------------------ dependency restrictions
    def check_dependency_restrictions(self, deps):
        by_name: dict = defaultdict(list)
        for sig in deps.edges:
            by_name[sig[0]].append(sig)
        heads_by_sig: dict = {}
        for r in self.rules:
            heads_by_sig.setdefault(_sig(r.head), r)

        def check(sources, forbidden, why):
            targets = {s for w in forbidden for s in by_name.get(w, ())}
            if not targets:
                return
            for src_name in sources:
                for src in by_name.get(src_name, ()):
                    path = dependency_path(deps.edges, src, targets)
                    if path:
                        chain = " -> ".join(s[0] for s in path)
                        via = f" (through {chain})" if len(path) > 2 else ""
                        self.error(f"{src_name} depends on {path[-1][0]}{via}; {why}",
                                   heads_by_sig.get(src))

        check(STATIC_ONLY, STATE_WORDS,
              "GDL requires init, base and input to be fixed before play, so they must not depend on "
              "true, does, next, legal, goal or terminal")
        check(MOVE_FREE, ("does",),
              "GDL requires legal, goal and terminal to depend on the state only, never on the moves "
              "being made (does)")

    # ------------------------------------------------------------------ stratification
    def check_stratification(self, deps):
        bad_comps = set()
        for h, bs in deps.edges.items():
            for b, neg in bs.items():
                if neg and deps.scc_of.get(h) == deps.scc_of.get(b):
                    bad_comps.add(deps.scc_of[h])
        if not bad_comps:
            return
        expanded = [rr for r in self.rules for rr in expand_or(r)]
        for c in sorted(bad_comps):
            comp = set(deps.components[c])
            self._refine(comp, expanded)

    def _refine(self, comp: set, expanded: list):
        rules = [r for r in expanded if not r.is_fact and _sig(r.head) in comp]
        heads_by_sig: dict = defaultdict(list)
        for j, r in enumerate(rules):
            heads_by_sig[_sig(r.head)].append(j)
        work = sum(len(heads_by_sig.get(_sig(lit[1] if _is_connective(lit) and lit[0] == "not" else lit), ()))
                   for r in rules for lit in r.body if not _is_connective(lit) or lit[0] == "not")
        if work > _REFINE_LIMIT:   # hostile size: keep the relation-level verdict
            names = ", ".join(sorted({s[0] for s in comp}))
            one = "," not in names
            self.error(f"the relation{'' if one else 's'} {names} depend{'s' if one else ''} on "
                       f"{'itself' if one else 'each other'} through not; GDL requires "
                       f"stratified negation (the cycle is too large to check whether constant "
                       f"arguments break it)", rules[0] if rules else None)
            return
        renamed_heads = [_rename(r.head, "#h") for r in rules]
        succ: list = [[] for _ in rules]
        neg_edges: list = []   # (i, j, literal index, literal)
        first_neg = None       # (i, literal index, literal): an example for the warning
        for i, r in enumerate(rules):
            for k, lit in enumerate(r.body):
                neg = False
                s = lit
                if _is_connective(lit):
                    if lit[0] != "not" or _is_connective(lit[1]):
                        continue
                    neg, s = True, lit[1]
                sig = _sig(s)
                if sig not in comp:
                    continue
                if neg and first_neg is None:
                    first_neg = (i, k, s)
                rs = _rename(s, "#b")
                for j in heads_by_sig.get(sig, ()):
                    if _unifiable(rs, renamed_heads[j]):
                        succ[i].append(j)
                        if neg:
                            neg_edges.append((i, j, k, s))
        comp_of = {}
        for c, members in enumerate(strongly_connected(range(len(rules)), {i: set(out) for i, out in enumerate(succ)})):
            for i in members:
                comp_of[i] = c
        names = ", ".join(sorted({s[0] for s in comp}))
        cyclic = [(i, j, k, s) for i, j, k, s in neg_edges if comp_of[i] == comp_of[j]]
        if cyclic:
            done = set()
            for i, j, k, s in cyclic:
                r = rules[i]
                key = (r.line, r.col, k)
                if key in done:
                    continue
                done.add(key)
                self.error(f"{render(r.head)} depends on (not {render(s)}), which depends on "
                           f"{render(r.head) if i == j else 'it'} again: a cycle through negation "
                           f"({'relation ' + names if ',' not in names else 'relations ' + names}); "
                           f"GDL requires stratified negation (no relation may depend on itself "
                           f"through not), otherwise the rules have no single meaning", r, k)
        else:
            i, k, s = (neg_edges[0][0], neg_edges[0][2], neg_edges[0][3]) if neg_edges else first_neg
            r = rules[i]
            self.warning(f"by relation name, {names} depend{'s' if ',' not in names else ''} on "
                         f"{'itself' if ',' not in names else 'each other'} through not (e.g. "
                         f"{render(r.head)} on (not {render(s)})), which GDL's stratification "
                         f"forbids; told apart by their constant arguments the cycle disappears, so "
                         f"the game is well defined, but players that stratify by relation name only "
                         f"will reject it", r, k)

    # ------------------------------------------------------------------ recursion restriction
    def check_recursion(self, deps):
        for r in self.rules:
            if r.is_fact:
                continue
            hs = _sig(r.head)
            if hs not in deps.scc_of or not deps.recursive(hs):
                continue
            head_args = set(r.head[1:]) if isinstance(r.head, tuple) else set()
            outside = set()
            for lit in r.body:
                self._nonrec_binds(lit, hs, deps, outside)
            for i, lit in enumerate(r.body):
                for s, positive in _sentences(lit):
                    if not positive or isinstance(s, str) or not deps.same_cycle(hs, _sig(s)):
                        continue
                    for v in s[1:]:
                        if v in head_args:
                            continue
                        vs = _vars(v, set())
                        if not vs or vs <= outside:
                            continue
                        self.error(f"recursion restriction violated: in the recursive literal "
                                   f"{render(s)} of the rule for {render(r.head)}, the argument "
                                   f"{render(v)} is not ground, not an argument of the head, and "
                                   f"{', '.join(sorted(vs - outside))} "
                                   f"{'is' if len(vs - outside) == 1 else 'are'} bound by no positive "
                                   f"literal outside the recursion; GDL requires this so that "
                                   f"recursive rules cannot build ever larger terms", r, i)

    def _nonrec_binds(self, lit, hs, deps, out: set) -> set:
        if _is_connective(lit):
            if lit[0] == "or":
                common = None
                for d in lit[1:]:
                    b = self._nonrec_binds(d, hs, deps, set())
                    common = b if common is None else common & b
                out |= common or set()
            return out
        if not deps.same_cycle(hs, _sig(lit)):
            _vars(lit, out)
        return out


def _literal_text(lit) -> str:
    if _is_connective(lit):
        return "(" + " ".join([lit[0]] + [_literal_text(a) if lit[0] != "distinct" else render(a)
                                          for a in lit[1:]]) + ")"
    return render(lit)


def _order(pos):
    r, i = pos
    if i is not None and i < len(r.body_pos):
        return r.body_pos[i]
    return (r.line, r.col)


def validate(desc: Description) -> list[Problem]:
    """Static checks of a parsed rule sheet; problems sorted by position."""
    return _Validator(desc).run()


# ============================================================================ dynamic checks

def simulate_check(sm, walks: int = 10, max_steps: int = 200, seed: int = 0,
                   time_limit: float | None = 30.0, probe: int = 256, paths=(),
                   source: str | None = None) -> list[Problem]:
    """Play through ``sm`` (any object with the state-machine interface) and report what only
    play can show:

    * a non-terminal state where a role has no legal move (error: the game cannot go on);
    * a terminal state where a role has no goal value or several (warning: GDL requires
      exactly one, but real games have such states and are still played);
    * a goal value in a terminal state that is not an integer in 0..100 (error).

    Walks alternate between two kinds.  Even-numbered walks pick uniformly random joint
    moves.  Odd-numbered walks *probe*: at each state they look at up to ``probe`` joint moves
    (all of them when there are no more, else a random sample), check every terminal state
    among the successors, and carry on into a non-terminal successor while there is one.  Probing
    walks reach the deep end of a game (step limits) and the states where several things end at
    once, which is where goal definitions are usually broken.  ``paths`` are joint-move
    sequences (tuples of moves in role order) replayed first, e.g. from match records; every
    state on them is checked.

    Each kind of problem is reported once per role, with the moves that lead to the first state
    showing it and how often it was seen.  Walks stop at ``max_steps`` joint moves and when
    ``time_limit`` seconds are used up.  If the reasoner raises, checking stops with a warning
    that says so (that is not a finding about the rules)."""
    src = source or getattr(sm, "source", None) or "<simulation>"
    rng = random.Random(seed)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    found: dict = {}     # key -> [level, message, count]
    order: list = []
    names = [render(r) for r in sm.roles]
    seen: dict = defaultdict(int)    # fluent -> how often probing walks stood on it

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() > deadline

    def note(key, level, message):
        if key in found:
            found[key][2] += 1
        else:
            found[key] = [level, message, 1]
            order.append(key)

    def check_terminal(state, path):
        values = sm.goal_values(state)
        for k, name in enumerate(names):
            vs = list(values[k]) if k < len(values) else []
            for v in vs:
                if not _goal_ok(v):
                    note(("range", k, str(v)), "error",
                         f"role {name} has the goal value {v} in the terminal state reached "
                         f"{_where(path)}; GDL goal values are integers from 0 to 100")
            if not vs:
                note(("nogoal", k), "warning",
                     f"role {name} has no goal value in the terminal state reached {_where(path)}; "
                     f"GDL requires exactly one goal value per role in every terminal state")
            elif len(set(map(str, vs))) > 1:
                note(("manygoals", k), "warning",
                     f"role {name} has several goal values ({', '.join(map(str, vs))}) in the "
                     f"terminal state reached {_where(path)}; GDL requires exactly one goal value "
                     f"per role in every terminal state")

    def legal_lists(state, path):
        lists = []
        for k, name in enumerate(names):
            moves = list(sm.legal_moves(state, k))
            if not moves:
                note(("nolegal", k), "error",
                     f"role {name} has no legal move in the non-terminal state reached "
                     f"{_where(path)}; GDL requires every role to have a legal move in every "
                     f"non-terminal state (the game cannot go on)")
                return None
            lists.append(moves)
        return lists

    def candidates(lists):
        total = 1
        for ms in lists:
            total *= len(ms)
        if total <= probe:
            return [tuple(jm) for jm in itertools.product(*lists)]
        picked = {tuple(rng.choice(ms) for ms in lists) for _ in range(probe)}
        return sorted(picked, key=lambda jm: [render(m) for m in jm])

    def replay(path):
        state = sm.initial_state()
        done: list = []
        for jm in list(path) + [None]:
            if sm.is_terminal(state):
                check_terminal(state, done)
                return
            lists = legal_lists(state, done)
            if lists is None or jm is None:
                return
            jm = tuple(jm)
            for k, name in enumerate(names):
                if k >= len(jm) or jm[k] not in lists[k]:
                    move = render(jm[k]) if k < len(jm) else "nothing"
                    note(("replay", len(found)), "warning",
                         f"a replayed line of play stops: {move} is not a legal move for role "
                         f"{name} in the state reached {_where(done)}")
                    return
            done.append(jm)
            state = sm.next_state(state, jm)

    def walk(probing: bool):
        state = sm.initial_state()
        path: list = []
        if sm.is_terminal(state):
            check_terminal(state, path)
            return
        for _step in range(max_steps):
            lists = legal_lists(state, path)
            if lists is None or out_of_time():
                return
            if not probing:
                jm = tuple(rng.choice(ms) for ms in lists)
                path.append(jm)
                state = sm.next_state(state, jm)
                if sm.is_terminal(state):
                    check_terminal(state, path)
                    return
                continue
            going_on = []
            for jm in candidates(lists):
                child = sm.next_state(state, jm)
                if sm.is_terminal(child):
                    check_terminal(child, path + [jm])
                else:
                    going_on.append((jm, child))
                if out_of_time():
                    return
            if not going_on:
                return
            if rng.random() < _GREEDY:   # towards the least visited fluents: explores, makes progress
                scores = [(sum(1 for f in child if not seen[f]), -sum(seen[f] for f in child),
                           rng.random(), n) for n, (_jm, child) in enumerate(going_on)]
                jm, state = going_on[max(scores)[-1]]
            else:
                jm, state = going_on[rng.randrange(len(going_on))]
            for f in state:
                seen[f] += 1
            path.append(jm)

    stopped = None
    try:
        for path in paths:
            replay(path)
        for k in range(walks):
            if out_of_time():
                break
            walk(probing=k % 2 == 1)
    except Exception as e:  # the reasoner gave up: not a finding about the rules
        stopped = e
    problems = []
    for key in order:
        level, message, count = found[key]
        if count > 1:
            message += f" (seen {count} times)"
        problems.append(Problem(level, message, src))
    if stopped is not None:
        problems.append(Problem("warning", f"the simulation check could not be completed: the "
                                           f"reasoner failed with {type(stopped).__name__}: "
                                           f"{stopped}", src))
    return problems


def _where(path) -> str:
    if not path:
        return "in the initial state"
    shown = " ".join("[" + " ".join(render(m) for m in jm) + "]" for jm in path[:6])
    more = f" ... ({len(path)} joint moves in all)" if len(path) > 6 else ""
    return f"after the joint moves {shown}{more}"


def _goal_ok(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return 0 <= v <= 100
    if isinstance(v, str):
        return v.isascii() and v.isdigit() and int(v) <= 100
    return False


# ============================================================================ combined

def check(desc: Description, sm=None, **simulate_options) -> list[Problem]:
    """Static checks, then (when ``sm`` is given and no static error was found) the
    simulation check; a state machine built from invalid rules has no defined behaviour."""
    problems = validate(desc)
    if sm is not None and not any(p.level == "error" for p in problems):
        simulate_options.setdefault("source", desc.source)
        problems += simulate_check(sm, **simulate_options)
    return problems


def verdict(problems) -> str:
    levels = {getattr(p, "level", "") for p in problems}
    if "error" in levels:
        return "invalid"
    if "warning" in levels:
        return "warning"
    return "valid"


def check_file(path, sm_factory=None, **simulate_options):
    """Read and check a rule file: ``(description or None, problems)``.

    Reader errors (bad bytes, unbalanced parentheses, malformed rules) become problems;
    nothing about the file's content raises.  An unreadable file raises ``OSError``.
    ``sm_factory(description)``, if given, builds a state machine for the simulation check;
    if building it fails, that is reported as a warning."""
    with open(path, "rb") as f:
        data = f.read()
    source = str(path)
    try:
        desc = parse_rules(decode_bytes(data, source), source)
    except GdlError as e:
        return None, list(e.problems)
    except RecursionError:
        return None, [Problem("error", "the rules are nested too deeply to be read", source)]
    try:
        problems = validate(desc)
    except RecursionError:
        return desc, [Problem("error", "the rules are nested too deeply to be checked", source)]
    if sm_factory is not None and not any(p.level == "error" for p in problems):
        try:
            sm = sm_factory(desc)
        except Exception as e:
            problems.append(Problem("warning", f"the simulation check could not start: "
                                               f"{type(e).__name__}: {e}", source))
        else:
            simulate_options.setdefault("source", source)
            problems += simulate_check(sm, **simulate_options)
    return desc, problems
