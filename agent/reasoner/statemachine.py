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
    sees(state, joint_move, role_index) -> frozenset
                                                GDL-II: every P with (sees ROLE P) when
                                                joint_move is made in state (empty without
                                                sees rules); ``random`` is an ordinary role
                                                here (``gdl.gdl2``)
    random_playout(state, cap, seed) -> (joint moves made, goal values at the end)
                                                uniformly random joint moves until terminal;
                                                PlayoutCap after ``cap`` joint moves
    close()                                     free what the engine holds (idempotent)

Failures are exceptions of the classes below, one per kind, so callers decide by class,
never by reading message text.
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
    def sees(self, state: State, joint_move, role_index: int) -> frozenset: ...
    def goal_values(self, state: State) -> list: ...
    def random_playout(self, state: State, cap: int = 10_000, seed: int | None = None) -> tuple: ...
    def close(self) -> None: ...


class ReasonerError(Exception):
    """Every reasoner or engine failure; the subclasses say which kind."""


class RulesRefused(ReasonerError):
    """Rules that cannot be played as given: unreadable, invalid, our role missing, or refused
    by Prolog when loaded (every error and warning it reports on load counts)."""


class UnsupportedRules(RulesRefused):
    """Valid GDL beyond a limit of our machinery (SWI-Prolog's 1024 arguments per predicate,
    its reader's nesting depth): refused rather than played as a different game."""


class ResourceLimit(ReasonerError):
    """A query ran out of a resource before answering: ``resource`` is one of
    ``inferences``, ``time``, ``table`` (a tabled answer too large), ``stack`` or
    ``playout`` (a playout reached its length cap); ``what``: the query that ran out."""

    def __init__(self, message: str, resource: str, what: str = ""):
        super().__init__(message)
        self.resource = resource
        self.what = what


class PlayoutCap(ResourceLimit):
    """A random playout made ``cap`` joint moves without reaching a terminal state."""

    def __init__(self, cap: int):
        super().__init__(f"the playout hit its length cap ({cap} joint moves; the game may not "
                         f"terminate)", "playout")
        self.cap = cap


class BrokenRules(ReasonerError):
    """The rules broke in play: a role without a legal move in a non-terminal state, a goal
    value that is not an integer, a query Prolog raised an error on."""


class GroundingError(ReasonerError):
    """The compiled engine could not be built for these rules (a budget ran out, or the
    grounder cannot take them); the Prolog reasoner may still play them."""


class InvalidQuery(ReasonerError, ValueError):
    """A question asked wrongly: a joint move with the wrong number of moves, a move the game
    never has, a closed engine."""


def goal_int(v) -> int:
    """A goal value as the rules give it (a constant) as an integer, or BrokenRules."""
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            raise BrokenRules(f"goal value {v!r} is not an integer") from None
    raise BrokenRules(f"goal value {v!r} is not a constant")


def goal_vector(goal_values: list) -> list[int]:
    """One value per role for search and scoring: the value when exactly one is provable,
    the largest when several are (a rule-sheet bug), 0 when none is."""
    return [max(vs) if vs else 0 for vs in goal_values]


class CachedStateMachine:
    """LRU memo of the state queries; states repeat a lot in search and replays."""

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

    def sees(self, state, joint_move, role_index):
        jm = tuple(joint_move)
        return self._memo(("sees", state, jm, role_index), lambda: self.sm.sees(state, jm, role_index))

    def is_terminal(self, state):
        return self._memo(("terminal", state), lambda: self.sm.is_terminal(state))

    def goal_values(self, state):
        return [list(v) for v in self._memo(("goals", state),
                                            lambda: tuple(tuple(v) for v in self.sm.goal_values(state)))]

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        return self.sm.random_playout(state, cap=cap, seed=seed)  # random: never memoised

    def close(self) -> None:
        self._cache.clear()
        self.sm.close()

    def __getattr__(self, attr):  # anything else (info, game, ...) goes to the wrapped engine
        return getattr(self.sm, attr)
