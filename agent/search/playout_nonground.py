"""``driver_sm``'s playouts on the non-ground engine with a sampler, the loop in numba.

A Python loop over the engine's queries would pay for every ply's conversions between
terms and the engine's rows (the state loaded, the next state decoded, each candidate move
decoded and looked up in the tree's move index): on chess about as much as the engine's own
work. Here a stretch of plies runs in one call: the engine's candidate rows
(``NK.candidate_rows``), each move's id found in a table of rows (``RowIds``), then
``playout_move``'s draw over the legal moves without testing them all: its coin tossed once,
then MAST's draw or a uniform one over the candidates not yet refused, each tested when
drawn (``NK.group_legal``). Each half of playout_move's mixture keeps its proportions among
the moves that stay, so this is playout_move over the legal moves alone
(``tests/test_search_sampled.py`` measures it). The next state (``NK.advance``) is loaded in
the engine's work space.

A candidate whose row has no id yet stops the stretch (``NEED_IDS``, its rows in
``missing``): Python gives it its id (``_Ctx.ids``: the tree's move index) and calls again
from the same ply; the state and its tables are still loaded.
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..engine import kernels as K
from ..engine import nonground_kernels as NK
from ..reasoner.statemachine import ResourceLimit
from . import params as PARAMS
from . import rng as RNG
from . import tree as T
from .jitguard import guard
from .params import P_EPSILON
from .rng import PLAYOUT, randint, uniform

NEED_IDS = 100          # a status beside the engine's own
ID_SLOTS = 1 << 12      # first size of a RowIds table (it doubles when half full)


CHUNK = 8               # plies a call runs before the deadline is read again


class Loop:
    """The buffers ``plies`` runs on for one engine and decision, and the ids it has met."""

    def __init__(self, engine, n_roles: int, cap: int = 256):
        self.engine = engine
        self.R = n_roles
        self.wmax = int(engine.c.width.max())
        self.ids = RowIds(self.wmax)
        self._missing = np.zeros((64, 2 + self.wmax), np.int32)
        self._alloc(cap, 16 * cap)

    def _alloc(self, cap: int, vals: int) -> None:
        R = self.R
        self.bufs = np.zeros((R, vals), np.int32)
        self.ents = np.zeros((R, 3, cap), np.int64)
        self.reps = np.zeros((R, cap), np.int64)
        self.rep = np.zeros((R, cap), np.int64)
        self.cand_ids = np.zeros((R, cap), np.int32)
        self.nreps = np.zeros((R, 2), np.int64)
        self.wbuf = np.zeros(cap)

    def grow(self) -> None:
        cap, vals = 4 * self.ents.shape[2], 4 * self.bufs.shape[1]
        if vals > (1 << 24):
            raise ResourceLimit(f"a role's candidate moves need more than {1 << 24:,} values", "table")
        self._alloc(cap, vals)

    def run(self, a, params, p_mast, rng, pm, ply, stop, last, goals):
        e = self.engine
        W = e.W
        n = W.st_vals.shape[0]
        return plies(e.P, W, e.G, self.bufs, self.ents, self.reps, self.nreps, self.rep,
                     self.cand_ids, np.zeros(n, np.int32), np.zeros(n, np.int32),
                     np.empty(W.callbuf.shape[0], np.int32), np.empty(2 + self.wmax, np.int32),
                     self.ids.head, self.ids.next, self.ids.key, self.ids.id, a.mast_q, a.mast_n,
                     params, p_mast, rng, self.wbuf, a.nst_key, a.nst_n, a.nst_q, pm, ply, stop,
                     last, goals, self._missing)

    def missing(self, n: int) -> list:
        """The rows ``plies`` found without an id: (role, legal index, values)."""
        out = []
        for row in self._missing[:n].tolist():
            r, k = row[0], row[1]
            w = int(self.engine.c.width[self.engine.G.legal_rels[k]])
            out.append((r, k, tuple(row[2:2 + w])))
        return out


class RowIds:
    """Move ids by (role, legal index, row): a chained hash table in arrays, filled from
    Python (``add``), read in numba (``_find``)."""

    def __init__(self, width: int, slots: int = ID_SLOTS):
        self.width = width
        self.rows: list = []        # (role, k, values, id), to rebuild a larger table
        self._alloc(slots)

    def _alloc(self, slots: int) -> None:
        self.head = np.full(slots, -1, np.int64)
        self.next = np.full(slots // 2, -1, np.int64)
        self.key = np.zeros((slots // 2, 2 + self.width), np.int32)   # role, k, values
        self.id = np.zeros(slots // 2, np.int32)
        self.n = 0

    def add(self, r: int, k: int, values, move_id: int) -> None:
        if self.n >= self.next.shape[0]:
            rows = self.rows
            self._alloc(2 * self.head.shape[0])
            self.rows = []
            for row in rows:
                self.add(*row)
        self.rows.append((r, k, values, move_id))
        e = self.n
        self.key[e, 0], self.key[e, 1] = r, k
        self.key[e, 2:2 + len(values)] = values
        self.id[e] = move_id
        slot = _slot(self.key[e], len(values) + 2, self.head.shape[0])
        self.next[e] = self.head[slot]
        self.head[slot] = e
        self.n += 1


@njit(cache=True)
def _slot(key, n, nslots):
    h = np.uint64(0x2545F4914F6CDD1D)
    for j in range(n):
        h = (h ^ np.uint64(key[j] & 0xFFFFFFFF)) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)
    return np.int64(h >> np.uint64(2)) & (nslots - 1)


@njit(cache=True)
def _find(head, nxt, key, ids, r, k, buf, s, w, probe):
    """The id of role r's move (legal index k, values ``buf[s:s + w]``), -1 if none."""
    probe[0] = r
    probe[1] = k
    for j in range(w):
        probe[2 + j] = buf[s + j]
    e = head[_slot(probe, w + 2, head.shape[0])]
    while e >= 0:
        same = key[e, 0] == r and key[e, 1] == k
        j = 0
        while same and j < w:
            same = key[e, 2 + j] == buf[s + j]
            j += 1
        if same:
            return ids[e]
        e = nxt[e]
    return -1


@njit(cache=True)
def plies(P, W, G, bufs, ents, reps, nreps, rep, cand_ids, newvals, newrel, call, probe,
          id_head, id_next, id_key, id_ids, mast_q, mast_n, params, p_mast, rng, wbuf,
          nst_key, nst_n, nst_q, pm, ply, stop, last, out_goals, missing):
    """Plies ``ply``, ``ply + 1``... of a playout from the loaded state, until ``stop`` (whose
    state is asked whether it ends) or a terminal state: role r's move id at ply t into ``pm[t, r]``. (status, plies done,
    terminal); at a terminal state the goals are in ``out_goals``. NEED_IDS: the rows of the
    ply's candidates without an id are in ``missing`` (role, legal index, values; the count
    is the status's second value), nothing of the ply drawn. Per role r: ``bufs[r]``,
    ``ents[r]`` the candidate rows (``NK.candidate_rows``; E_OUT: too small), ``rep[r]``,
    ``reps[r]`` their moves (``NK.group_rows``), ``cand_ids[r]`` the moves' ids; ``wbuf``
    MAST's weights."""
    R = G.role_syms.shape[0]
    eps = params[P_EPSILON]
    while True:
        if ply > 0 and G.term_rel >= 0:     # (the playout starts from a state known not to end)
            W.reg[NK.R_INF] = 0
            st, t, n = NK._ask(P, W, G.term_rel, call)
            if st != NK.OK:
                return st, ply, 0
            if n > 0:
                st = NK.goals_into(P, W, G, call, out_goals)
                return st, ply, 1
        if ply >= stop:
            return NK.OK, ply, 0
        nmiss = 0
        for r in range(R):
            st, n = NK.candidate_rows(P, W, G, G.role_syms[r], call, bufs[r], ents[r])
            if st != NK.OK:
                return st, ply, 0
            nreps[r, 0] = n
            nreps[r, 1] = NK.group_rows(P, G, bufs[r], ents[r], n, rep[r], reps[r])
            for j in range(nreps[r, 1]):
                e = reps[r, j]
                k = ents[r][0, e]
                w = P.rel_width[G.legal_rels[k]]
                s = ents[r][2, e]
                m = _find(id_head, id_next, id_key, id_ids, r, k, bufs[r], s, w, probe)
                if m < 0:
                    if nmiss >= missing.shape[0]:
                        return NEED_IDS, ply, nmiss
                    missing[nmiss, 0] = r
                    missing[nmiss, 1] = k
                    for q in range(w):
                        missing[nmiss, 2 + q] = bufs[r][s + q]
                    nmiss += 1
                cand_ids[r, j] = m
        if nmiss > 0:
            return NEED_IDS, ply, nmiss
        nd = 0
        pos = 0
        for r in range(R):
            n, nrep = nreps[r, 0], nreps[r, 1]
            # NST's context: the move of the role after r in the ply before
            if ply > 0:
                ctx = pm[ply - 1, (r + 1) % R]
            else:
                ctx = last[(r + 1) % R]
            mast = eps > 0 and nrep > 1 and uniform(rng, PLAYOUT) < eps
            ids = np.empty(nrep, np.int32)
            alive = np.empty(nrep, np.int64)
            for j in range(nrep):
                alive[j] = j
            na = nrep
            chosen = -1
            while na > 0:
                if na == 1:
                    j = 0
                elif mast:
                    for q in range(na):
                        ids[q] = cand_ids[r, alive[q]]
                    j = T.mast_move(mast_q, mast_n, p_mast, r, ids, na, rng, wbuf, nst_key,
                                    nst_n, nst_q, ctx)
                else:
                    j = randint(rng, PLAYOUT, na)
                st, e = NK.group_legal(P, W, bufs[r], ents[r], n, rep[r], reps[r, alive[j]], call)
                if st != NK.OK:
                    return st, ply, 0
                if e >= 0:
                    chosen = alive[j]
                    break
                for q in range(j, na - 1):     # in order, as the Python loop's list.pop
                    alive[q] = alive[q + 1]
                na -= 1
            if chosen < 0:
                return NK.E_NO_MOVE, ply, 0
            pm[ply, r] = cand_ids[r, chosen]
            e = reps[r, chosen]
            k = ents[r][0, e]
            drel = G.legal_does[k]
            if drel >= 0:
                s = ents[r][2, e]
                W.does_rel[nd] = drel
                W.does_start[nd] = pos
                for q in range(P.rel_width[drel]):
                    W.does_vals[pos + q] = bufs[r][s + q]
                pos += P.rel_width[drel]
                nd += 1
        W.reg_does[0] = nd
        st = NK.advance(P, W, G, call, newvals, newrel)
        if st != NK.OK:
            return st, ply, 0
        ply += 1


# numba's cache keys these functions on their own code: flushed when the engine's kernels or
# the tree's draw they call change
guard([sys.modules[__name__]], [K, NK, T, RNG, PARAMS, sys.modules[__name__]])
