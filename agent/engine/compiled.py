"""``CompiledEngine``: a CompiledGame behind the StateMachine interface (frozensets of terms)."""
from __future__ import annotations

import numpy as np

from gdl.terms import canonical_sorted

from ..reasoner.statemachine import BrokenRules, InvalidQuery, PlayoutCap
from . import kernels as K


class CompiledEngine:
    """Answers the StateMachine queries with the numba kernels; ``game`` is the raw
    CompiledGame for numba callers (the search), ``move_terms[r][k]`` names move k of role r."""

    def __init__(self, game, tables: dict, info: dict | None = None):
        self.game = game
        self.roles = tables["roles"]
        self.base = tables["base"]
        self.move_terms = tables["move_terms"]
        # GDL-II percepts: role r's candidates are sees_terms[r], their atoms
        # sees_atom[sees_start[r]:sees_start[r + 1]] (kernels.read_with_moves reads them)
        self.sees_terms = tables["sees_terms"]
        self.sees_atom = tables["sees_atom"]
        self.sees_start = tables["sees_start"]
        # role r's candidates: (their atoms, their terms in the same order)
        self._sees_of = [(np.ascontiguousarray(self.sees_atom[self.sees_start[r]:self.sees_start[r + 1]]),
                          list(self.sees_terms[r])) for r in range(len(self.roles))]
        self._sees_memo = (None, None)   # ((state, joint move), {role: its percepts})
        self.info = info or {}
        self._base_index = {f: i for i, f in enumerate(self.base)}
        self._move_index = [{m: k for k, m in enumerate(ms)} for ms in self.move_terms]
        # each move's place in the canonical order, so that a legal list is sorted by numbers
        # (sorting by the terms' text was most of a legal-move query from Python)
        self._move_rank = []
        for r, ms in enumerate(self.move_terms):
            rank = np.zeros(len(ms), dtype=np.int64)
            for place, m in enumerate(canonical_sorted(ms)):
                rank[self._move_index[r][m]] = place
            self._move_rank.append(rank)
        self._vals = K.new_vals(game)
        self._loaded = None

    # -- packing
    def pack(self, state) -> np.ndarray:
        # a fluent the rules can never produce (no index) is irrelevant to them
        idx = np.fromiter((i for i in map(self._base_index.get, state) if i is not None), dtype=np.int64)
        bits = np.zeros(self.game.n_words, dtype=np.uint64)
        # in numpy, not bit by bit in Python: numpy's scalar operations made packing most of
        # a percept query (1.4 ms of a battleship state's 124 fluents)
        np.bitwise_or.at(bits, idx >> 6, np.left_shift(np.uint64(1), (idx & 63).astype(np.uint64)))
        return bits

    def unpack(self, bits) -> frozenset:
        # the set bits found by numpy: a Python test of every fluent's bit was most of a
        # battleship next_state from Python (0.3 ms of 0.5 over its 1,402 fluents), the
        # GDL-II belief's replay step
        on = np.flatnonzero(np.unpackbits(np.asarray(bits, dtype="<u8").view(np.uint8),
                                          bitorder="little")[:len(self.base)])
        return frozenset(map(self.base.__getitem__, on.tolist()))

    def _load(self, state):
        if self._loaded is not state:
            K.load_state(self.game, self.pack(state), self._vals)
            self._loaded = state
        return self._vals

    # -- StateMachine
    def initial_state(self) -> frozenset:
        return self.unpack(self.game.init_state)

    def legal_moves(self, state, role_index: int) -> list:
        vals = self._load(state)
        out = np.zeros(int(self.game.role_nmoves[role_index]) + 1, dtype=np.int32)
        n = K.legal_moves(self.game, vals, role_index, out)
        idx = out[:n]
        terms = self.move_terms[role_index]
        return [terms[k] for k in idx[np.argsort(self._move_rank[role_index][idx])].tolist()]

    def move_index(self, role_index: int, move) -> int:
        k = self._move_index[role_index].get(move)
        if k is None:
            raise InvalidQuery(f"{move!r} is never a legal move of role {self.roles[role_index]!r}")
        return k

    def _checked(self, joint_move) -> tuple:
        joint_move = tuple(joint_move)
        if len(joint_move) != len(self.roles):
            raise InvalidQuery(f"a joint move needs one move per role ({len(self.roles)}), "
                               f"got {len(joint_move)}")
        return joint_move

    def _joint(self, joint_move):
        """(the joint move as a tuple, its move indices)"""
        joint_move = self._checked(joint_move)
        return joint_move, np.array([self.move_index(r, m) for r, m in enumerate(joint_move)], dtype=np.int32)

    def next_state(self, state, joint_move) -> frozenset:
        joint_move, joint = self._joint(joint_move)
        vals = self._load(state)
        out = np.zeros(self.game.n_words, dtype=np.uint64)
        K.next_state(self.game, vals, joint, out)
        return self.unpack(out)

    def sees(self, state, joint_move, role_index: int) -> frozenset:
        """GDL-II: the percepts of ``role_index`` when ``joint_move`` is made in ``state`` (kept
        for the next query of another role on the same state and move)."""
        joint_move = self._checked(joint_move)
        if not len(self.sees_atom):   # no percept in the rules (GDL-I)
            return frozenset()
        key, percepts = self._sees_memo
        if key is None or key[0] is not state or key[1] != joint_move:   # not a state's __eq__
            percepts = {}
            self._sees_memo = ((state, joint_move), percepts)
        p = percepts.get(role_index)
        if p is None:
            # only this role's candidates are read (a belief asks for its own role's alone)
            atoms, terms = self._sees_of[role_index]
            out = np.zeros(len(atoms), dtype=np.uint8)
            K.read_with_moves(self.game, self._load(state), self._joint(joint_move)[1], atoms, out)
            # a few of many candidates (battleship: 1% of 7,000)
            p = percepts[role_index] = frozenset(map(terms.__getitem__, np.flatnonzero(out).tolist()))
        return p

    def is_terminal(self, state) -> bool:
        return bool(K.is_terminal(self.game, self._load(state)))

    def goal_values(self, state) -> list:
        vals = self._load(state)
        g = self.game
        K.settle_goals(g, vals)
        return [sorted({int(g.goal_value[k]) for k in range(g.goal_start[r], g.goal_start[r + 1])
                        if vals[g.goal_atom[k]]}) for r in range(g.n_roles)]

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        if seed is not None:
            K.seed(seed)
        goals = np.zeros(self.game.n_roles, dtype=np.int32)
        d = K.random_playout(self.game, self.pack(state), self._vals, cap, goals)
        self._loaded = None  # the work buffer now holds the playout's last state
        if d == -2:
            raise BrokenRules("a role has no legal move in a non-terminal state")
        if d == -1:
            raise PlayoutCap(cap)
        return int(d), [[int(v)] for v in goals]

    def close(self) -> None:
        pass  # nothing outside Python's memory: the arrays go with the object
