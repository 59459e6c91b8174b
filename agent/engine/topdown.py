"""A non-ground GDL evaluator: top-down, tabled per call, for games that do not ground.

Chess does not ground within a start clock: its check tests carry a square to ignore, and
the relaxed model of those relations runs to millions of atoms (docs/benchmarks/
engine-internals.md, grounding section). Asked in a real state, though, each check test is a
walk along a few lines. This evaluator answers the state machine's queries the way a
Prolog engine would, but with every call tabled for the query (as ggp-base's prover does):

- ``_call(goal)`` returns the ground instances of ``goal`` (a sentence that may hold
  variables); its table is keyed by the goal up to variable renaming (a *variant*).
- Recursion through tables (``connected`` in hex, a path through itself) is completed by
  iteration: a call that meets a table still being evaluated reads the answers it has so
  far, and the leader of that group of calls evaluates again until no table in the group
  gains an answer (linear tabling). Negation only meets complete tables: GDL is stratified.
- Tables of relations that read neither ``true`` nor ``does`` live as long as the
  evaluator; those that read ``true`` only as long as the state; those that read ``does``
  for one joint move.
- Body literals are ordered as ggp-base orders them (``ordered_body``: each ``not`` and
  ``distinct`` right after the positive literal that binds its last variable).

This is the semantic reference of the non-ground engine: plain Python, exact, slow.
"""
from __future__ import annotations

import random

from gdl.analysis import DOES_SIG, TRUE_SIG, dependencies, expand_or
from gdl.kif import Description
from gdl.terms import canonical_sorted, signature
from agent.reasoner.prolog import ordered_body
from agent.reasoner.statemachine import (BrokenRules, InvalidQuery, PlayoutCap, ResourceLimit)

_COMPLETE, _ACTIVE, _WAITING, _STALE = 0, 1, 2, 3


def _is_var(t) -> bool:
    return t.__class__ is str and t[:1] == "?"


def _subst(t, env):
    if t.__class__ is str:
        return env.get(t, t) if t[:1] == "?" else t
    return (t[0],) + tuple(_subst(a, env) for a in t[1:])


def _ground(t) -> bool:
    if t.__class__ is str:
        return t[:1] != "?"
    return all(_ground(a) for a in t[1:])


def _match(pattern, term, env) -> bool:
    """Bind the variables of ``pattern`` so that it equals the ground ``term`` (in place;
    the caller passes a copy it may throw away)."""
    if pattern.__class__ is str:
        if pattern[:1] == "?":
            bound = env.get(pattern)
            if bound is None:
                env[pattern] = term
                return True
            return bound == term
        return pattern == term
    if term.__class__ is str or len(term) != len(pattern) or term[0] != pattern[0]:
        return False
    for p, t in zip(pattern[1:], term[1:]):
        if not _match(p, t, env):
            return False
    return True


def _head_env(head, goal, env) -> bool:
    """Bind the head's variables to the ground parts of ``goal``; False when they clash.
    A goal variable matches anything here; answers are checked against the goal after."""
    if head.__class__ is str:
        if head[:1] == "?":
            if not _ground(goal):
                return True
            bound = env.get(head)
            if bound is None:
                env[head] = goal
                return True
            return bound == goal
        return _is_var(goal) or head == goal
    if goal.__class__ is str:
        return goal[:1] == "?"
    if len(goal) != len(head) or goal[0] != head[0]:
        return False
    return all(_head_env(h, g, env) for h, g in zip(head[1:], goal[1:]))


def _variant(goal):
    """The goal with its variables renamed in order of first occurrence (the table key)."""
    names: dict = {}

    def walk(t):
        if t.__class__ is str:
            if t[:1] == "?":
                return names.setdefault(t, f"?{len(names)}")
            return t
        return (t[0],) + tuple(walk(a) for a in t[1:])
    return walk(goal)


class _Table:
    __slots__ = ("answers", "seen", "state", "dfn", "low")

    def __init__(self):
        self.answers: list = []
        self.seen: set = set()
        self.state = _STALE
        self.dfn = self.low = 0


class TopDown:
    """The state-machine interface (``agent.reasoner.statemachine``) on the evaluator."""

    def __init__(self, description: Description, inference_limit: int = 50_000_000):
        self.roles = description.roles
        rules = [rr for r in description.rules for rr in expand_or(r)]
        deps = dependencies(rules)
        self._moves = deps.depending_on([DOES_SIG]) - {DOES_SIG}
        self._states = deps.depending_on([TRUE_SIG]) - {TRUE_SIG} - self._moves
        self._rules: dict = {}
        for r in rules:
            self._rules.setdefault(signature(r.head), []).append((r.head, tuple(ordered_body(r.body))))
        self.inference_limit = inference_limit
        self._static_tables: dict = {}
        self._state_tables: dict = {}
        self._move_tables: dict = {}
        self._state = None
        self._does: dict = {}           # role -> move of the joint move being applied
        self._stack: list = []          # tables being evaluated, innermost last
        self._waiting: list = []        # followers done with an iteration, waiting for their leader
        self._dfn = 0
        self._looped = False            # a table still being evaluated was read
        self._added = 0                 # answers added, ever (the iteration's change test)
        self._inferences = 0
        self.closed = False

    # ------------------------------------------------------------ the evaluator
    def _tables(self, sig) -> dict:
        if sig in self._moves:
            return self._move_tables
        if sig in self._states:
            return self._state_tables
        return self._static_tables

    def _solve(self, goal) -> list:
        """Ground instances of ``goal``."""
        sig = signature(goal)
        if sig == TRUE_SIG:
            return [("true", f) for f in self._state if _match(goal[1], f, {})]
        if sig == DOES_SIG:
            return [("does", r, m) for r, m in self._does.items() if _match(goal, ("does", r, m), {})]
        if sig not in self._rules:
            return []
        tables = self._tables(sig)
        key = _variant(goal)
        t = tables.get(key)
        if t is None:
            t = tables[key] = _Table()
        elif t.state == _COMPLETE:
            return t.answers
        elif t.state != _STALE:   # being evaluated: read what it has, and iterate
            self._looped = True
            if self._stack:
                self._stack[-1].low = min(self._stack[-1].low, t.low)
            return list(t.answers)
        self._dfn += 1
        t.dfn = t.low = self._dfn
        t.state = _ACTIVE
        self._stack.append(t)
        outer_looped = self._looped
        while True:
            self._looped = False
            added = self._added
            self._evaluate(goal, sig, t)
            looped = self._looped
            if t.low < t.dfn or not looped or self._added == added:
                break
            for other in self._group_of(t):   # the leader goes again: so do its followers
                other.state = _STALE
        self._stack.pop()
        if t.low < t.dfn:   # a follower: complete when its leader is
            t.state = _WAITING
            self._waiting.append(t)
            self._stack[-1].low = min(self._stack[-1].low, t.low)
            self._looped = True
        else:
            for other in self._group_of(t):
                other.state = _COMPLETE
            t.state = _COMPLETE
            self._looped = outer_looped
        return t.answers if t.state == _COMPLETE else list(t.answers)

    def _group_of(self, leader: _Table) -> list:
        """Take the followers of ``leader`` off the waiting list: the tables that finished
        waiting for it started after it did, so they are the list's tail."""
        out = []
        while self._waiting and self._waiting[-1].dfn > leader.dfn:
            out.append(self._waiting.pop())
        return out

    def _evaluate(self, goal, sig, t) -> None:
        for head, body in self._rules[sig]:
            env: dict = {}
            if not _head_env(head, goal, env):
                continue
            for e in self._body(body, 0, env):
                answer = _subst(head, e)
                if answer not in t.seen and _match(goal, answer, {}):
                    t.seen.add(answer)
                    t.answers.append(answer)
                    self._added += 1

    def _body(self, body, i, env):
        if i == len(body):
            yield env
            return
        self._inferences += 1
        if self._inferences > self.inference_limit:
            raise ResourceLimit(f"the query ran out of its {self.inference_limit:,} inferences",
                                "inferences")
        lit = body[i]
        head = lit[0] if lit.__class__ is tuple else None
        if head == "distinct":
            a, b = _subst(lit[1], env), _subst(lit[2], env)
            if a != b:
                yield from self._body(body, i + 1, env)
            return
        if head == "not":
            inner = lit[1]
            if inner.__class__ is tuple and inner[0] == "distinct":
                if _subst(inner[1], env) == _subst(inner[2], env):
                    yield from self._body(body, i + 1, env)
                return
            if not self._solve(_subst(inner, env)):
                yield from self._body(body, i + 1, env)
            return
        pattern = _subst(lit, env)
        for answer in self._solve(pattern):
            e = dict(env)
            if _match(pattern, answer, e):
                yield from self._body(body, i + 1, e)

    def _query(self, goal, state=None, does=None) -> list:
        if self.closed:
            raise InvalidQuery("the evaluator was closed")
        if state is not None and state != self._state:
            self._state = state
            self._state_tables = {}
            self._move_tables = {}
        if does is not None:
            self._move_tables = {}
            self._does = does
        elif self._move_tables:
            self._move_tables = {}
            self._does = {}
        self._inferences = 0
        self._stack, self._waiting = [], []
        self._looped = False
        try:
            return self._solve(goal)
        except BaseException:
            for tables in (self._static_tables, self._state_tables, self._move_tables):
                for k in [k for k, t in tables.items() if t.state != _COMPLETE]:
                    del tables[k]   # half-evaluated: a later query must not read them
            raise
        finally:
            if does is not None:
                self._move_tables = {}
                self._does = {}

    # ------------------------------------------------------------ the interface
    def initial_state(self) -> frozenset:
        return frozenset(a[1] for a in self._query(("init", "?x"), state=frozenset()))

    def legal_moves(self, state, role_index: int) -> list:
        role = self.roles[role_index]
        return canonical_sorted({a[2] for a in self._query(("legal", role, "?m"), state=frozenset(state))})

    def next_state(self, state, joint_move) -> frozenset:
        joint_move = tuple(joint_move)
        if len(joint_move) != len(self.roles):
            raise InvalidQuery(f"a joint move needs one move per role ({len(self.roles)}), "
                               f"got {len(joint_move)}")
        does = dict(zip(self.roles, joint_move))
        return frozenset(a[1] for a in self._query(("next", "?x"), state=frozenset(state), does=does))

    def is_terminal(self, state) -> bool:
        return bool(self._query("terminal", state=frozenset(state)))

    def goal_values(self, state) -> list:
        out = []
        for role in self.roles:
            values = {a[2] for a in self._query(("goal", role, "?v"), state=frozenset(state))}
            out.append(sorted(_goal_int(v) for v in values))
        return out

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        rng = random.Random(seed)
        state = frozenset(state)
        depth = 0
        while not self.is_terminal(state):
            if depth >= cap:
                raise PlayoutCap(cap)
            joint = []
            for i, role in enumerate(self.roles):
                moves = self.legal_moves(state, i)
                if not moves:
                    raise BrokenRules(f"{role} has no legal move in a non-terminal state")
                joint.append(rng.choice(moves))
            state = self.next_state(state, joint)
            depth += 1
        return depth, self.goal_values(state)

    def close(self) -> None:
        self.closed = True
        self._static_tables = self._state_tables = self._move_tables = {}


def _goal_int(v):
    if v.__class__ is str:
        try:
            return int(v)
        except ValueError:
            raise BrokenRules(f"goal value {v!r} is not an integer") from None
    raise BrokenRules(f"goal value {v!r} is not a constant")
