"""Designer utilities (spec 6.4), the parts that read states as terms: fact counts,
per-game calibration, the persona's weight vector.  What the features mean and the utility
``u`` itself are ``leaf.py``'s (one implementation for both drivers).

Features come from the rules and the state only: goal values, terminality, plies, legal-move
counts, and counts of true facts (those mentioning a role constant, and per relation).
Nothing reads symbol names for meaning.

Raw feature vector per role (``K = N_FIXED + len(relations)``):
  goal, win, loss, draw, length, mobility, opp_mobility, own_facts, opp_facts, rel:<p>...
Normalisation is one rule for all, ``clip((x - lo) / (hi - lo), 0, 1)`` (0.5 if hi == lo),
with fixed bounds for goal (0..100), win/loss/draw (0..1) and length (0..L_ref), and
calibrated bounds (5th/95th percentiles of random playouts) for the rest.
"""
from __future__ import annotations

import hashlib
import random
import weakref
from dataclasses import dataclass

import numpy as np

from . import leaf as L
from .leaf import (F_DRAW, F_GOAL, F_LENGTH, F_LOSS, F_MOB, F_OPP, F_OPP_MOB, F_OWN,  # noqa: F401
                   F_WIN, FIXED, N_FIXED, carry_mobility)

CALIBRATION_PLAYOUTS = 100
CALIBRATION_CAP = 200


@dataclass
class Calibration:
    """Per-game feature bounds, shared by every persona (spec 8.40)."""
    relations: list           # relation names of the state facts, sorted
    lo: np.ndarray            # float64[n_roles, K]
    hi: np.ndarray            # float64[n_roles, K]
    l_ref: float              # 95th percentile of random playout length

    def index(self, feature: str) -> int:
        if feature in FIXED:
            return FIXED.index(feature)
        if feature.startswith("rel:") and feature[4:] in self.relations:
            return N_FIXED + self.relations.index(feature[4:])
        return -1


def relation_of(fact) -> str:
    return fact[0] if isinstance(fact, tuple) else fact


def _mentions(term, consts: frozenset) -> bool:
    if isinstance(term, tuple):
        return any(_mentions(a, consts) for a in term[1:])
    return term in consts


class FactIndex:
    """Which roles each fact mentions (as an argument, at any depth); memoised per fact."""

    def __init__(self, roles):
        self.roles = list(roles)
        self._memo: dict = {}

    def roles_in(self, fact) -> tuple:
        v = self._memo.get(fact)
        if v is None:
            args = fact[1:] if isinstance(fact, tuple) else ()
            v = tuple(i for i, r in enumerate(self.roles)
                      if any(_mentions(a, frozenset([r])) for a in args))
            self._memo[fact] = v
        return v


def fact_counts(state, facts: FactIndex, relations: list):
    """(true facts mentioning each role, true facts of each relation) of a state as terms."""
    per_role = np.zeros(len(facts.roles))
    rel = np.zeros(len(relations))
    rel_pos = {p: i for i, p in enumerate(relations)}
    for f in state:
        for q in facts.roles_in(f):
            per_role[q] += 1
        i = rel_pos.get(relation_of(f))
        if i is not None:
            rel[i] += 1
    return per_role, rel


def raw_features(state, terminal: bool, goal_values: list, length: int, mobility,
                 role: int, facts: FactIndex, relations: list) -> np.ndarray:
    """Raw features of ``state`` (terms) for ``role`` (``leaf.raw_features``);
    ``mobility`` = carried-forward move counts per role along the trajectory (spec 6.4)."""
    per_role, rel = fact_counts(state, facts, relations)
    x = np.zeros(N_FIXED + len(relations))
    L.raw_features(L.read_goals(goal_values), terminal, float(length),
                   np.asarray(mobility, np.float64), per_role, rel, role, x)
    return x


def rules_seed(sm) -> int:
    """Calibration seed from what every engine shows of the rules (roles, initial state),
    so both drivers calibrate a game identically."""
    text = repr(sorted(map(repr, sm.roles))) + repr(sorted(map(repr, sm.initial_state())))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


# per engine object: two games may share roles and initial state, so the seed is no key
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def calibrate(sm, playouts: int = CALIBRATION_PLAYOUTS, cap: int = CALIBRATION_CAP) -> Calibration:
    """Bounds from uniform random playouts from the initial state (spec 6.4); cached."""
    owner = getattr(sm, "sm", sm)           # a CachedStateMachine shares its engine's entry
    key = (playouts, cap)
    try:
        hit = _CACHE.get(owner, {}).get(key)
    except TypeError:                       # not weak-referenceable: no cache
        owner, hit = None, None
    if hit is not None:
        return hit
    seed = rules_seed(sm)
    rnd = random.Random(seed)
    roles = list(sm.roles)
    n = len(roles)
    facts = FactIndex(roles)
    s0 = sm.initial_state()
    trajectories = []
    relations: set = set()
    lengths = []
    for _ in range(playouts):
        s, ply, traj = s0, 0, []
        mobility = np.ones(n)
        while True:
            term = sm.is_terminal(s)
            legal = [] if term else [sm.legal_moves(s, q) for q in range(n)]
            if legal:
                carry_mobility(mobility, np.array([len(m) for m in legal], np.int64))
            traj.append((s, term, sm.goal_values(s), ply, mobility.copy()))
            relations.update(relation_of(f) for f in s)
            if term or ply >= cap:
                break
            s = sm.next_state(s, [rnd.choice(m) for m in legal])
            ply += 1
        lengths.append(ply)
        trajectories.append(traj)
    rels = sorted(relations)
    l_ref = float(max(1.0, np.percentile(lengths, 95)))
    K = N_FIXED + len(rels)
    lo = np.zeros((n, K))
    hi = np.zeros((n, K))
    for q in range(n):
        xs = np.array([raw_features(s, t, g, ply, mob, q, facts, rels)
                       for traj in trajectories for (s, t, g, ply, mob) in traj])
        lo[q] = np.percentile(xs, 5, axis=0)
        hi[q] = np.percentile(xs, 95, axis=0)
        lo[q, F_GOAL], hi[q, F_GOAL] = 0.0, 100.0
        for f in (F_WIN, F_LOSS, F_DRAW):
            lo[q, f], hi[q, f] = 0.0, 1.0
        lo[q, F_LENGTH], hi[q, F_LENGTH] = 0.0, l_ref
    cal = Calibration(rels, lo, hi, l_ref)
    if owner is not None:
        _CACHE.setdefault(owner, {})[key] = cal
    return cal


def weight_vector(weights: dict, cal: Calibration) -> np.ndarray:
    """The persona's weights over this game's features; ``rel:<p>`` for a relation the game
    lacks weighs nothing (game-specific weights on another game)."""
    w = np.zeros(cal.lo.shape[1])
    for name, value in weights.items():
        i = cal.index(name)
        if i >= 0:
            w[i] = value
    return w
