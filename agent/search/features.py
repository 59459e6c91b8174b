"""Designer utilities (spec 6.4): features of a simulation's end state, per-game calibration,
and the persona's utility ``u`` on the 0..100 scale.

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
from numba import njit

FIXED = ("goal", "win", "loss", "draw", "length", "mobility", "opp_mobility", "own_facts",
         "opp_facts")
F_GOAL, F_WIN, F_LOSS, F_DRAW, F_LENGTH, F_MOB, F_OPP_MOB, F_OWN, F_OPP = range(len(FIXED))
N_FIXED = len(FIXED)

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


def goal_raw(values: list) -> float:
    return float(values[0]) if len(values) == 1 else 50.0  # none or several: neutral (8.38)


def raw_features(state, terminal: bool, goal_values: list, length: int, mobility: list,
                 role: int, facts: FactIndex, relations: list) -> np.ndarray:
    """Raw features of ``state`` for ``role``; ``mobility`` = carried-forward move counts
    per role along the trajectory (spec 6.4)."""
    n = len(goal_values)
    x = np.zeros(N_FIXED + len(relations))
    g = [goal_raw(v) for v in goal_values]
    x[F_GOAL] = g[role]
    if terminal:
        others = [g[q] for q in range(n) if q != role]
        best_other = max(others) if others else None
        if best_other is None:
            win, loss = g[role] >= 100, g[role] <= 0
        else:
            win, loss = g[role] > best_other, g[role] < best_other
        x[F_WIN], x[F_LOSS], x[F_DRAW] = float(win), float(loss), float(not win and not loss)
    x[F_LENGTH] = length
    x[F_MOB] = mobility[role]
    opp = [q for q in range(n) if q != role]
    if opp:
        x[F_OPP_MOB] = sum(mobility[q] for q in opp) / len(opp)
    per_role = [0] * n
    rel_pos = {p: i for i, p in enumerate(relations)}
    for f in state:
        for q in facts.roles_in(f):
            per_role[q] += 1
        i = rel_pos.get(relation_of(f))
        if i is not None:
            x[N_FIXED + i] += 1
    x[F_OWN] = per_role[role]
    if opp:
        x[F_OPP] = sum(per_role[q] for q in opp) / len(opp)
    return x


def carry_mobility(mobility: list, counts) -> None:
    """Update carried-forward mobility with a state's legal-move counts (in place)."""
    for q, c in enumerate(counts):
        if c >= 2:
            mobility[q] = c


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
        mobility = [1] * n
        while True:
            term = sm.is_terminal(s)
            legal = [] if term else [sm.legal_moves(s, q) for q in range(n)]
            if legal:
                carry_mobility(mobility, [len(m) for m in legal])
            traj.append((s, term, sm.goal_values(s), ply, list(mobility)))
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


@njit(cache=True)
def utility(raw, lo, hi, w):
    """u in 0..100: the weighted sum of normalised features rescaled by its own range."""
    U = 0.0
    ulo = 0.0
    uhi = 0.0
    for k in range(raw.shape[0]):
        if w[k] == 0.0:
            continue
        d = hi[k] - lo[k]
        phi = 0.5 if d == 0.0 else min(max((raw[k] - lo[k]) / d, 0.0), 1.0)
        U += w[k] * phi
        ulo += min(0.0, w[k])
        uhi += max(0.0, w[k])
    if uhi == ulo:
        return 50.0
    return 100.0 * (U - ulo) / (uhi - ulo)
