"""The state-machine interface every reasoner and engine offers, and a query cache.

A *state* is a ``frozenset`` of ground fluent terms (the contents of the ``true`` facts);
a *joint move* is a tuple with one ground move term per role, in role order.  Engines may
keep faster private representations internally but speak this one at the boundary, so the
search, the server, the trace checker and the validator's simulation checks work with any.

    roles: list            role terms, in the order of the (role ...) facts
    initial_state() -> State
    legal_moves(state, role_index) -> list      sorted by canonical text
    next_state(state, joint_move) -> State
    is_terminal(state) -> bool
    goal_values(state) -> list[list[int]]       every provable value per role, sorted
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Protocol

State = frozenset


class StateMachine(Protocol):
    roles: list

    def initial_state(self) -> State: ...
    def legal_moves(self, state: State, role_index: int) -> list: ...
    def next_state(self, state: State, joint_move) -> State: ...
    def is_terminal(self, state: State) -> bool: ...
    def goal_values(self, state: State) -> list: ...


class ReasonerError(Exception):
    """A query could not be answered: it ran away (limits), or the rules broke at run time."""


def goal_vector(goal_values: list) -> list[int]:
    """One value per role for search and scoring: the value when exactly one is provable,
    the largest when several are (a rule-sheet bug), 0 when none is."""
    return [max(vs) if vs else 0 for vs in goal_values]


class CachedStateMachine:
    """LRU memo of the four state queries; states repeat a lot in search and replays."""

    def __init__(self, sm, maxsize: int = 50_000):
        self.sm = sm
        self.roles = sm.roles
        self.maxsize = maxsize
        self._cache: OrderedDict = OrderedDict()

    def _memo(self, key, compute):
        c = self._cache
        if key in c:
            c.move_to_end(key)
            return c[key]
        value = compute()
        c[key] = value
        if len(c) > self.maxsize:
            c.popitem(last=False)
        return value

    def initial_state(self):
        return self._memo(("init",), self.sm.initial_state)

    def legal_moves(self, state, role_index):
        return list(self._memo(("legal", state, role_index), lambda: tuple(self.sm.legal_moves(state, role_index))))

    def next_state(self, state, joint_move):
        jm = tuple(joint_move)
        return self._memo(("next", state, jm), lambda: self.sm.next_state(state, jm))

    def is_terminal(self, state):
        return self._memo(("terminal", state), lambda: self.sm.is_terminal(state))

    def goal_values(self, state):
        return [list(v) for v in self._memo(("goals", state),
                                            lambda: tuple(tuple(v) for v in self.sm.goal_values(state)))]

    def __getattr__(self, attr):  # anything else (close, name, ...) goes to the wrapped engine
        return getattr(self.sm, attr)
