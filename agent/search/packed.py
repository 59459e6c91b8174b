"""Numba helpers on a compiled engine's packed states, below both the search's compiled driver
and the game's evaluation: bit counts of a packed state (``count_bits``), the goals that hold
(``read_goals``, ``scores``, as ``leaf`` reads them), and the uniform random playouts the
evaluation and the material are learned from (``sample_playouts``, ``heuristic.Learner``).
They stand apart so that ``heuristic.py`` needs nothing of ``driver_compiled.py``, which
uses the evaluation (issue 53: the two imported each other)."""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..engine import kernels as K
from . import leaf as L
from . import rng as RNG
from .jitguard import guard


@njit(cache=True)
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, inline="always")
def read_goals(g, vals, gr):
    """The goal facts that hold, as ``leaf`` reads them: count, smallest, largest per role."""
    if g.n_lazy_src:   # (the call alone costs a fifth of a connectFour playout)
        K.settle_goals(g, vals)
    for r in range(g.n_roles):
        c = 0
        lo = 0.0
        hi = 0.0
        for k in range(g.goal_start[r], g.goal_start[r + 1]):
            if vals[g.goal_atom[k]] == 1:
                v = float(g.goal_value[k])
                if c == 0 or v < lo:
                    lo = v
                if c == 0 or v > hi:
                    hi = v
                c += 1
        gr[L.G_COUNT, r] = c
        gr[L.G_LO, r] = lo
        gr[L.G_HI, r] = hi


@njit(cache=True, inline="always")
def scores(g, vals, gr, out):
    read_goals(g, vals, gr)
    L.goal_scores(gr, out)


@njit(cache=True)
def count_bits(state, mask):
    c = 0
    for w in range(state.shape[0]):
        c += popcount(state[w] & mask[w])
    return c


@njit(cache=True)
def sample_playouts(g, s0, vals, rng, n_playouts, cap, stride, states, owner, finals, first, masks, changes, ends):
    """Uniform random playouts from the packed state ``s0`` for the game's evaluation
    (``heuristic.Learner``, which imports this module and not the driver): one non-terminal state in ``stride`` (from a random offset) into
    ``states`` (packed) with its playout's number (``first`` onwards) in ``owner``, each
    playout's goals into ``finals``.  For material (``material.py``): the plies in which the
    count of each candidate set (``masks[k]``) changed, added to ``changes[k]``, and its count
    in each playout's final state, into ``ends``.  A playout past ``cap`` plies is dropped; one
    that would overflow ``states`` is dropped and ends the call.  Returns (states stored,
    playouts kept, playouts tried, plies of the playouts kept), or (-1, 0, 0, 0) on broken rules."""
    R = g.n_roles
    h = K.hot(g, vals)
    nb = h[K.H_NB]
    maxm = 1
    for r in range(R):
        maxm = max(maxm, g.role_nmoves[r])
    lbuf = np.zeros(maxm + 1, np.int32)
    joint = np.zeros(R, np.int32)
    gr = np.zeros((3, R))
    goals = np.zeros(R)
    S = masks.shape[0]
    cur = np.zeros(g.n_words, np.uint64)
    count = np.zeros(S, np.int64)
    changed = np.zeros(S, np.int64)     # this playout's, added to ``changes`` if it is kept
    k = 0
    p = 0
    plies = 0
    for tried in range(n_playouts):
        f = K.load_into(h, s0)
        if f != nb:
            K.load_finish(g, vals, f)
        start = k
        steps = 0
        offset = RNG.randint(rng, RNG.PLAYOUT, stride)
        if S > 0:
            for j in range(S):
                count[j] = count_bits(s0, masks[j])
                changed[j] = 0
        while not K.terminal_in(h) and steps < cap:
            if steps % stride == offset:
                if k >= states.shape[0]:
                    return start, p, tried + 1, plies   # the sample is full: what came before stands
                K.pack_into(h, states[k])
                owner[k] = first + p
                k += 1
            for r in range(R):
                n = K.legal_into(h, r, lbuf)
                if n == 0:
                    return -1, 0, 0, 0
                joint[r] = lbuf[RNG.randint(rng, RNG.PLAYOUT, n)]
            f = K.step(h, joint)
            if f != nb:
                K.step_finish(g, vals, h, joint, f)
            steps += 1
            if S > 0:
                K.pack_into(h, cur)
                for j in range(S):
                    c = count_bits(cur, masks[j])
                    if c != count[j]:
                        changed[j] += 1
                        count[j] = c
        if not K.terminal_in(h):
            k = start               # past the cap: a game without end, dropped
            continue
        scores(g, vals, gr, goals)
        finals[p, :] = goals
        for j in range(S):
            changes[j] += changed[j]
            ends[p, j] = count[j]
        p += 1
        plies += steps
    return k, p, n_playouts, plies


guard([sys.modules[__name__]], [K, L, RNG, sys.modules[__name__]])
