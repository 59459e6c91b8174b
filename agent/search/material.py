"""Material: each role's pieces, found from the rules and random play (issue #34).

Strong GGP players (Sancho's piece heuristic among them) value a position in games like
breakthrough or checkers by who has more pieces, a feature the game's outcome in *random*
play hardly explains (``heuristic.py``'s regression rejects it there: random playouts are
decided by a piece running through, whatever the material) but that good play turns on.

Found from the structure alone (no symbol's name is read):

  candidates  a state relation of two or more arguments ("a board": cell x y content) has an
              argument with few constant values, a multiple of the role count or one more
              (the piece kinds, per role, and perhaps "empty"); the facts with one such value
              (six or more) are one candidate set: a kind of piece anywhere on the board.
  material    a set whose count stays the same in most plies of random play (captures are
              rare: ``MAX_CHANGE_RATE``; connectFour's discs, one added every other ply, are
              not material) and whose count in the final state goes with a role's final goal
              (Pearson correlation at least ``MIN_CORRELATION`` over the playouts) is that
              role's material; every role needs some, else the game has none (and a game of
              one role has none: the prior weighs one role's material against the others').

The search uses it as a prior on a move first tried from a node (``tree.seed_prior``; the
compiled driver): its child's material against the root's, turned into a value near the
root's and counted as ``params.MATERIAL_WEIGHT`` simulations, which real simulations then outweigh.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_FACTS = 6             # a candidate set has this many facts at least (a board's squares)
MAX_CHANGE_RATE = 0.4     # material changes in fewer plies than this (captures), per set
MIN_CORRELATION = 0.06    # with a role's final goal, over random playouts
SHARPNESS = 10.0          # how far a share of the material moves the prior (driver_compiled)
MATERIAL_MIX = 0.5        # the material's share of a playout's value where the evaluation cuts it


@dataclass
class Material:
    """Each role's pieces: ``sets[r]`` the fact indices (of the engine's ``base``) that count
    as role r's material; what was measured, for the match record."""
    sets: list               # per role, sorted fact indices
    keys: list               # per role, the candidate keys (relation, argument, value) merged
    correlation: list        # per role, the chosen sets' correlations

    def masks(self, n_words: int) -> np.ndarray:
        """uint64[R, n_words]: role r's pieces as bits of a packed state."""
        return fact_masks(self.sets, n_words)

    def summary(self) -> str:
        parts = [f"role {r}: {len(s)} facts ({', '.join('/'.join(map(str, k)) for k in ks)}; r = "
                 f"{', '.join(f'{c:.2f}' for c in cs)})"
                 for r, (s, ks, cs) in enumerate(zip(self.sets, self.keys, self.correlation))]
        return "material found: " + "; ".join(parts)


def candidates(base, n_roles: int) -> list:
    """[(key, fact indices)]: the candidate piece sets of ``base`` (module docstring), in a
    fixed order (the relations' and values' first appearance in ``base``)."""
    values: dict = {}               # relation -> per argument the constants seen (ordered)
    arity: dict = {}
    for f in base:
        if not isinstance(f, tuple) or len(f) < 3:
            continue
        rel = f[0]
        if arity.setdefault(rel, len(f) - 1) != len(f) - 1:
            arity[rel] = -1         # mixed arities: no board
            continue
        per = values.setdefault(rel, [dict() for _ in range(len(f) - 1)])
        for i, a in enumerate(f[1:]):
            if not isinstance(a, tuple):
                per[i].setdefault(a, None)
    out = []
    for rel, per in values.items():
        if arity[rel] < 0:
            continue
        best = None
        for i, vs in enumerate(per):
            k = len(vs)
            if k >= max(2, n_roles) and k % n_roles in (0, 1) and (best is None or k < len(per[best])):
                best = i
        if best is None:
            continue
        for v in per[best]:
            facts = [j for j, f in enumerate(base)
                     if isinstance(f, tuple) and f[0] == rel and len(f) - 1 == arity[rel] and f[best + 1] == v]
            if len(facts) >= MIN_FACTS:
                out.append(((rel, best, v), facts))
    return out


def fact_masks(index_lists, n_words: int) -> np.ndarray:
    """uint64[len(index_lists), n_words]: each list of fact indices (of an engine's ``base``)
    as bits of a packed state: the candidate sets, a role's material."""
    out = np.zeros((len(index_lists), n_words), np.uint64)
    for k, facts in enumerate(index_lists):
        for i in facts:
            out[k, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return out


def _pearson(x, y) -> float:
    sx, sy = x.std(), y.std()
    if sx == 0 or sy == 0:
        return 0.0
    return float(((x - x.mean()) * (y - y.mean())).mean() / (sx * sy))


def select(cands, changes, plies: int, ends, finals) -> Material | None:
    """The material of a game from random playouts: ``changes[k]`` plies in which set k's
    count changed out of ``plies``, ``ends[p, k]`` its count in playout p's final state,
    ``finals[p, r]`` role r's goal there.  None: no material for some role."""
    n_roles = finals.shape[1]
    # material is a balance between roles: with one role the prior would only pull every new
    # move towards the root's value
    if n_roles < 2 or not cands or plies <= 0 or finals.shape[0] < 2:
        return None
    sets: list = [set() for _ in range(n_roles)]
    keys: list = [[] for _ in range(n_roles)]
    corr: list = [[] for _ in range(n_roles)]
    for k, (key, facts) in enumerate(cands):
        if changes[k] / plies >= MAX_CHANGE_RATE:
            continue
        for r in range(n_roles):
            c = _pearson(ends[:, k].astype(np.float64), finals[:, r])
            if c >= MIN_CORRELATION:
                sets[r].update(facts)
                keys[r].append(key)
                corr[r].append(c)
    if not all(sets):
        return None
    return Material([sorted(s) for s in sets], keys, corr)
