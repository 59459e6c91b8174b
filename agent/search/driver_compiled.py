"""Driver B: the persona search with its whole simulation loop in numba, on the compiled
engine's kernels (contract in ``agent.engine``).  Same tree functions as driver A; node
states are stored packed in the tree, move ids are the engine's move indices.

A time budget runs the loop in chunks (numba cannot read the clock); chunking never changes
the result of a fixed ``limit``.  ``search_batch`` runs many fresh-tree decisions in one call.
"""
from __future__ import annotations

import sys
import threading
import time
import weakref

import numpy as np
from numba import njit

from gdl.terms import canonical_sorted

from ..engine import kernels as K
from . import decisive as D
from . import features as F
from . import heuristic as H
from . import leaf as L
from . import material as M
from . import packed as PK
from . import params as P
from . import rng as RNG
from . import tree as T
from .common import (Progress, SearchResult, SearchSettings, SearchTree, amaf_rows, can_grow, compact_into,
                     node_capacity, root_choice, root_proven, root_settled, searched, settings_of, share, start_counts)
from .jitguard import guard
from .material import MATERIAL_MIX, SHARPNESS
# numba helpers on packed states, shared with the evaluation's sampler (packed.py)
from .packed import count_bits as _count
from .packed import popcount as _popcount
from .packed import read_goals as _read_goals
from .packed import scores as _scores
from .params import (P_CHARGE_DEPTH, P_DECISIVE, P_EVAL_DEPTH, P_GRAVE, P_HORIZON, P_LIMIT, P_MATERIAL, P_ME,
                     P_NST, P_RAVE, P_SOLVER, P_TRANSPOSE, RP_DEFAULT, build)
from .rng import make_rng

DEFAULT_TIMED_NODES = 100_000      # node pool for time-limited searches without max_nodes
HELPER_SEED_STEP = 0x632BE59BD9B4E019   # thread i's streams: make_rng(seed + i * this), mixed apart
NO_LEGAL_MOVE = -2


# --------------------------------------------------------------------------- numba side
@njit(cache=True, inline="always")
def _legal(h, r, out, rank, sort):
    """Role r's legal move ids into ``out`` in canonical term order (the order every
    StateMachine answers in, so both drivers draw the same moves from the same streams);
    the engine's own order when it is canonical already (``sort`` 0).  ``h``: kernels.hot."""
    n = K.legal_into(h, r, out)
    if sort:
        for i in range(1, n):       # insertion sort by rank: moves arrive nearly sorted
            m = out[i]
            k = rank[r, m]
            j = i - 1
            while j >= 0 and rank[r, out[j]] > k:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = m
    return n


@njit(cache=True, inline="always")
def _expand(g, h, tree, node, vals, counts, mbuf, lbuf, rank, sort):
    """Legal moves of ``node`` into its slots: 1 done, 0 slot pool full, NO_LEGAL_MOVE.
    ``h``: kernels.hot of ``vals`` (inlined with ``h``, no call takes the CompiledGame or the
    Tree on this path: each such call reference-counts all their arrays)."""
    f = K.load_into(h, tree.state[node])
    if f != h[K.H_NB]:
        K.load_finish(g, vals, f)
    k = 0
    for r in range(g.n_roles):
        n = _legal(h, r, lbuf, rank, sort)
        if n == 0:
            return NO_LEGAL_MOVE
        counts[r] = n
        for j in range(n):
            mbuf[k + j] = lbuf[j]
        k += n
    return 1 if T.init_slots(tree, node, counts, mbuf[:k]) else 0


@njit(cache=True, inline="always")
def _recount(near, c):
    """Condition ``c`` into or out of the near list after its counts changed."""
    missing, broken, near_list, near_at, n_near = near[8], near[9], near[11], near[12], near[13]
    now = missing[c] == 1 and broken[c] == 0
    at = near_at[c]
    if now and at < 0:
        near_list[n_near[0]] = c
        near_at[c] = n_near[0]
        n_near[0] += 1
    elif not now and at >= 0:
        n_near[0] -= 1
        last = near_list[n_near[0]]
        near_list[at] = last
        near_at[last] = at
        near_at[c] = -1


@njit(cache=True, inline="always")
def _guard_holds(vals, near, k):
    """Whether one of the rules by which completing move ``k`` (an entry of ``on_move``)
    turns its fluent on holds in the state of ``vals`` (``decisive.near_arrays``: each
    rule's literals over the fluents; a rule [-1]: the move is not tested, it holds)."""
    guard_start, rule_start, guard_lit = near[14], near[15], near[16]
    for q in range(guard_start[k], guard_start[k + 1]):
        holds = True
        for x in guard_lit[rule_start[q]:rule_start[q + 1]]:
            if x < 0:
                break
            if (vals[x >> 1] == 1) == (x & 1 == 1):
                holds = False
                break
        if holds:
            return True
    return False


@njit(cache=True, inline="always")
def _near(vals, near):
    """Marks the moves that may end the game in the state of ``vals`` where the candidates
    are narrowed (decisive.near_arrays): a move's mark is then the stamp when it may turn on
    the one positive fluent a condition of terminal lacks while its other literals hold.
    The conditions' counts follow the fluents that changed since the last call (8 at a time:
    a scan of every condition at every ply cost a connectFour playout 2.6x its time)."""
    cond_start, cond_lit, on_start, on_move, fl_start, fl_cond = near[:6]
    mark, stamp, missing, broken, seen, near_list, n_near = near[6], near[7], near[8], near[9], near[10], near[11], near[13]
    n_base = on_start.shape[0] - 1
    for k in range(0, n_base, 8):
        if K._u64_at(vals, k) == K._u64_at(seen, k):
            continue
        for f in range(k, min(k + 8, n_base)):
            on = vals[f] == 1
            if on == (seen[f] == 1):
                continue
            seen[f] = vals[f]
            d = 1 if on else -1
            for j in range(fl_start[f], fl_start[f + 1]):
                c = fl_cond[j] >> 1
                if fl_cond[j] & 1:
                    broken[c] += d
                else:
                    missing[c] -= d
                _recount(near, c)
    stamp[0] += 1
    s = stamp[0]
    for i in range(n_near[0]):
        c = near_list[i]
        for j in range(cond_start[c], cond_start[c + 1]):
            f = cond_lit[j] >> 1
            if vals[f] != 1:    # (the positive one missing: negated fluents come after it)
                for k in range(on_start[f], on_start[f + 1]):
                    # only where one of the move's rules for f holds in this state (stepping
                    # every drop into a column whose line lacks a cell higher up tripled a
                    # connectFour playout's steps)
                    if _guard_holds(vals, near, k):
                        mark[on_move[k, 0], on_move[k, 1]] = s
                break


@njit(cache=True, inline="always")
def _may_win(wins, near, narrow, r, m):
    """Role ``r``'s move ``m`` may end the game (in the state ``_near`` read last)."""
    return wins[r, m] >= 0 and (not narrow or near[6][r, m] == near[7][0])


@njit(cache=True)
def _take_win(g, h, vals, joint, c, moves, n, best, gr, saved):
    """Steps role ``c``'s candidate ``moves[:n]`` in turn (with the other roles' moves of
    ``joint``) from the state of ``h``: the first that reaches a terminal state where ``c``
    has its best goal is kept (its id returned, the work buffer left in that state); after
    one that does not, the state is loaded back.  -1 when none wins (``joint`` unchanged).
    Rare, so it may take ``g`` (a call pays its arrays' reference counting)."""
    nb = h[K.H_NB]
    K.pack_into(h, saved)
    keep = joint[c]
    for i in range(n):
        joint[c] = moves[i]
        f = K.step(h, joint)
        if f != nb:
            K.step_finish(g, vals, h, joint, f)
        if K.terminal_in(h):
            _read_goals(g, vals, gr)
            if gr[L.G_COUNT, c] > 0 and gr[L.G_LO, c] >= best[c]:
                return moves[i]
        f = K.load_into(h, saved)
        if f != nb:
            K.load_finish(g, vals, f)
    joint[c] = keep
    return -1


@njit(cache=True)
def _rescue(g, h, vals, state, last, c, win, d, legal, dlegal, moves, jbuf, wins, stops, best, gr, saved,
            rank, sort, near):
    """Anti-decisive moves: role ``d`` wins at once with the joint move ``win`` after role ``c``
    played ``last`` from the packed ``state``.  Steps those of ``c``'s other legal moves from
    ``state`` that may stop ``d``'s (``stops``, decisive.analyse), then, where the candidates
    are narrowed, ``c``'s other moves, in turn: the first after
    which the game goes on and ``d`` has no winning move (the same test as ``_take_win``'s)
    replaces ``c``'s in ``last`` and is returned, the work buffer in the state after it.  -1
    when every move lets ``d`` win: the buffer is then back in the state of ``d``'s win.
    Called only where a win is near (on breakthrough 2.5 times a playout, each stepping the
    few legal stoppers), so it may take ``g``."""
    nb = h[K.H_NB]
    f = K.load_into(h, state)
    if f != nb:
        K.load_finish(g, vals, f)
    n = _legal(h, c, legal, rank, sort)
    played = last[c]
    R = last.shape[0]
    fresh = True
    narrow = near[0].shape[0] > 1
    # Pass 0 steps the stoppers.  Where the candidates are narrowed (any move may complete a
    # line) a move can also *enable* a win, by making the missing cell reachable (a disc
    # dropped under it): no stopper is then legal but not playing the move saves the game.
    # There pass 1 steps c's other moves (connectFour: at most 7), as a player avoids
    # playing under a threat, so the playouts' endings come from zugzwang, not from a gift.
    row = wins[d, win[d]]
    for k in range(n * (2 if narrow else 1)):
        i = k % n
        stopper = stops[row, c, legal[i]] != 0
        if legal[i] == played or stopper != (k < n):     # pass 0: stoppers only; pass 1: the rest
            continue
        if not fresh:
            f = K.load_into(h, state)
            if f != nb:
                K.load_finish(g, vals, f)
        fresh = False
        last[c] = legal[i]
        f = K.step(h, last)
        if f != nb:
            K.step_finish(g, vals, h, last, f)
        if K.terminal_in(h):
            continue
        single = True   # d alone chooses again, as it did after the move played
        for r in range(R):
            if r != d:
                if _legal(h, r, dlegal, rank, sort) != 1:
                    single = False
                jbuf[r] = dlegal[0]
        if not single:
            continue
        nd = _legal(h, d, dlegal, rank, sort)
        if narrow:
            _near(vals, near)
        k = 0
        for j in range(nd):
            if _may_win(wins, near, narrow, d, dlegal[j]):
                moves[k] = dlegal[j]
                k += 1
        jbuf[d] = dlegal[0]
        if k == 0 or _take_win(g, h, vals, jbuf, d, moves, k, best, gr, saved) < 0:
            return legal[i]
    last[c] = played
    f = K.load_into(h, state)
    if f != nb:
        K.load_finish(g, vals, f)
    for joint in (last, win):
        f = K.step(h, joint)
        if f != nb:
            K.step_finish(g, vals, h, joint, f)
    return -1


@njit(cache=True)
def _evaluation(state, ev_w, ev_b, out):
    """Each role's evaluation of a packed state (``heuristic.Heuristic``: the intercept
    ``ev_b`` plus ``ev_w``'s value of every fact that holds), clipped to the goal scale."""
    R = out.shape[0]
    for r in range(R):
        out[r] = ev_b[r]
    for w in range(state.shape[0]):
        x = state[w]
        while x != 0:
            low = x & (~x + np.uint64(1))
            i = w * 64 + _popcount(low - np.uint64(1))
            for r in range(R):
                out[r] += ev_w[r, i]
            x ^= low
    for r in range(R):
        out[r] = min(max(out[r], 0.0), 100.0)


@njit(cache=True)
def _root_material(tree, pmasks, base, root_q):
    """Each role's material in the root's state (into ``base``) and the root's value for it
    (into ``root_q``: its slots' mean, 50 until the root has been visited 50 times), what
    ``_material_prior`` measures a new state against."""
    for r in range(pmasks.shape[0]):
        base[r] = _count(tree.state[0], pmasks[r])
        root_q[r] = 50.0
        if tree.visits[0] >= 50:
            off = tree.slot_off[0, r]
            n = 0.0
            q = 0.0
            for k in range(tree.slot_count[0, r]):
                n += tree.slot_n[off + k]
                q += tree.slot_n[off + k] * tree.slot_q[off + k]
            if n > 0:
                root_q[r] = q / n


@njit(cache=True, inline="always")
def _lean(x):
    """-1..1: how far a share ``x`` of a role's material won (or lost) moves a value, the
    logistic of ``material.SHARPNESS`` (the prior and the cut's material value)."""
    return 2.0 / (1.0 + np.exp(-SHARPNESS * x)) - 1.0


@njit(cache=True)
def _material_prior(state, pmasks, base, root_q, out):
    """Each role's prior value of a packed state from its material (``material.py``): the
    share of the material won or lost since the root that is the role's (in pieces a role
    had at the root), through a logistic of ``material.SHARPNESS``, moves the root's value
    towards 100 or 0 by that much."""
    R = pmasks.shape[0]
    mean = 0.0
    total = 0.0
    for r in range(R):
        out[r] = _count(state, pmasks[r]) - base[r]
        mean += out[r] / R
        total += base[r]
    per_role = max(total / R, 1.0)
    for r in range(R):
        x = (out[r] - mean) / per_role
        h = _lean(x)
        q = root_q[r]
        out[r] = q + h * (100.0 - q) if h > 0 else q + h * q


@njit(cache=True)
def _material_value(state, pmasks, out):
    """Each role's value of a packed state from its material alone (``material.py``): its
    pieces against the mean of the roles', as a share of a role's mean count, through the
    logistic of ``material.SHARPNESS``, from 50 towards 100 or 0 (no piece left: 50)."""
    R = pmasks.shape[0]
    mean = 0.0
    for r in range(R):
        out[r] = _count(state, pmasks[r])
        mean += out[r] / R
    per_role = max(mean, 1.0)
    for r in range(R):
        x = (out[r] - mean) / per_role
        out[r] = 50.0 + 50.0 * _lean(x)


@njit(cache=True)
def _features(g, vals, state, terminal, length, mobility, me, role_masks, rel_masks, lbuf,
              gr, role_facts, rel_counts, raw):
    """The raw features (``leaf.raw_features``) of a packed end state, ``vals`` loaded with it."""
    R = g.n_roles
    if not terminal:
        for r in range(R):
            n = K.legal_moves(g, vals, r, lbuf)
            if n >= 2:
                mobility[r] = n
    _read_goals(g, vals, gr)
    for q in range(R):
        role_facts[q] = _count(state, role_masks[q])
    for k in range(rel_masks.shape[0]):
        rel_counts[k] = _count(state, rel_masks[k])
    L.raw_features(gr, terminal, length, mobility, role_facts, rel_counts, me, raw)


@njit(cache=True, nogil=True)    # nogil: root-parallel threads (``SearchSettings.threads``) run at once
def simulate(g, tree, params, rp, rng, n_sims, vals, w, lo, hi, role_masks, rel_masks, rank, sort, ev_w, ev_b,
             pmasks, wins, stops, best, near):
    """Run ``n_sims`` simulations from node 0 (spec 2.8): how many ran (fewer once the solver
    proves the root), NO_LEGAL_MOVE on broken rules.  ``ev_w``, ``ev_b``: the game's evaluation
    (``_evaluation``), read when ``params[P_EVAL_DEPTH]`` > 0.  Decisive and anti-decisive
    moves in playouts when ``params[P_DECISIVE]`` > 0: ``wins[r, move]`` >= 0 for a move that
    may end the game, ``stops`` the moves that may stop it (``decisive.analyse``), ``best``
    each role's best goal (``decisive.best_goals``), ``near`` the candidates' narrowing in
    each state (``decisive.near_arrays``; no conditions: not narrowed).  ``pmasks[r]``: role
    r's material (``material.py``), a prior on new moves when ``params[P_MATERIAL]`` > 0."""
    R = g.n_roles
    horizon = int(params[P_HORIZON])
    cd = int(params[P_CHARGE_DEPTH])
    maxm = 1
    total = 0
    for r in range(R):
        maxm = max(maxm, g.role_nmoves[r])
        total += g.role_nmoves[r]
    # the loop's buffers, held here while _simulate runs on them borrowed
    bufs = (np.zeros(horizon + 2, np.int64), np.zeros((horizon + 1, R), np.int32),
            np.zeros((max(cd, 1), R), np.int32), np.zeros(R, np.int32), np.zeros(R, np.int32),
            np.zeros(maxm + 1, np.int32), np.zeros(R, np.int32), np.zeros(total + 1, np.int32),
            np.zeros(g.n_words, np.uint64), np.zeros((3, R)), np.zeros(R), np.zeros(R), np.ones(R),
            np.zeros(R), np.zeros(rel_masks.shape[0]), np.zeros(w.shape[0]), np.zeros(maxm + 1),
            np.zeros((2, g.n_words), np.uint64), np.zeros(R, np.int32), np.zeros(maxm + 1, np.int32),
            np.zeros(R, np.int32), np.zeros(R), np.zeros(R), np.zeros(R),
            np.zeros((2, g.n_words), np.uint64), np.zeros((2, R), np.int64))
    return _simulate(g, tree, params, rp, rng, n_sims, vals, w, lo, hi, role_masks, rel_masks, rank, sort, bufs,
                     ev_w, ev_b, pmasks, wins, stops, best, near)


@njit(cache=True)
def _simulate(g, tree, params, rp, rng, n_sims, vals, w, lo, hi, role_masks, rel_masks, rank, sort, bufs,
              ev_w, ev_b, pmasks, wins, stops, best, near):
    """``simulate`` on its buffers (``bufs``)."""
    # The arguments without their references (kernels.borrowed): the caller holds them for
    # the whole loop, whose calls then pay no atomic reference counting for them (it was
    # most of a simulation's time).
    tree = T.borrowed_tree(tree)
    b = K.borrowed
    params, rp, rng, vals, w, lo, hi = b(params), b(rp), b(rng), b(vals), b(w), b(lo), b(hi)
    role_masks, rel_masks, rank, ev_w, ev_b = b(role_masks), b(rel_masks), b(rank), b(ev_w), b(ev_b)
    path, jslots, pmoves, sl, joint, lbuf = b(bufs[0]), b(bufs[1]), b(bufs[2]), b(bufs[3]), b(bufs[4]), b(bufs[5])
    counts, mbuf, cur, gr, goals, values = b(bufs[6]), b(bufs[7]), b(bufs[8]), b(bufs[9]), b(bufs[10]), b(bufs[11])
    mobility, role_facts, rel_counts, raw, wbuf = b(bufs[12]), b(bufs[13]), b(bufs[14]), b(bufs[15]), b(bufs[16])
    wins, stops, best = b(wins), b(stops), b(best)
    near = (b(near[0]), b(near[1]), b(near[2]), b(near[3]), b(near[4]), b(near[5]), b(near[6]), b(near[7]),
            b(near[8]), b(near[9]), b(near[10]), b(near[11]), b(near[12]), b(near[13]), b(near[14]),
            b(near[15]), b(near[16]))
    plies, last, lbuf2, jbuf = b(bufs[17]), b(bufs[18]), b(bufs[19]), b(bufs[20])
    pbase, proot, prior, qstate, qcount = b(bufs[21]), b(bufs[22]), b(bufs[23]), b(bufs[24]), b(bufs[25])
    pmasks = b(pmasks)
    R = g.n_roles
    horizon = int(params[P_HORIZON])
    grave = params[P_GRAVE]
    cd = int(params[P_CHARGE_DEPTH])
    ed = int(params[P_EVAL_DEPTH])
    cut = cd if ed <= 0 else min(cd, ed)
    solver = params[P_SOLVER] > 0
    me = int(params[P_ME])
    use_util = L.uses_utility(params, rp)
    transpose = params[P_TRANSPOSE] > 0 and tree.tt.shape[0] > 1
    decisive = params[P_DECISIVE] > 0
    track = decisive and stops.shape[0] > 0   # the last ply's state and moves kept, for _rescue
    narrow = decisive and near[0].shape[0] > 1
    weight = int(params[P_MATERIAL])
    material = weight > 0 and pmasks.shape[0] == R
    if material:
        _root_material(tree, pmasks, pbase, proot)
    # A playout the evaluation would cut in the middle of an exchange (a capture made, the
    # recapture not yet) scores a state whose material is about to change: with material,
    # it runs on past ``ed`` until a ply that changes no role's material, at most
    # ``H.QUIET_PLIES`` more, and the state that ply started from is scored (quiescence,
    # found from the material alone).
    quiet = material and 0 < ed < cd
    limit = min(cd, ed + H.QUIET_PLIES) if quiet else cut
    # The playout loop calls no function that takes the CompiledGame or the Tree (their
    # reference counting per call cost more than a playout step): kernels.hot's arrays,
    # the MAST arrays, and vals moved on in place from the new leaf to the playout's end.
    h = K.hot_borrowed(K.hot(g, vals))   # vals and g are arguments: they outlive the loop
    nb = h[K.H_NB]
    mast_q, mast_n = tree.mast_q, tree.mast_n
    nst_key, nst_n, nst_q = tree.nst_key, tree.nst_n, tree.nst_q
    for done in range(n_sims):
        if solver and tree.proven[0] == 1:
            return done     # common.root_settled: nothing left to search
        at = -1  # the node whose state vals holds, when known
        node = 0
        depth = 0
        ref = 0
        path[0] = 0
        mobility[:] = 1.0
        while True:
            if (tree.terminal[node] == 1 or (solver and node != 0 and tree.proven[node] == 1)
                    or depth >= horizon):
                break
            if tree.ready[node] == 0:
                e = _expand(g, h, tree, node, vals, counts, mbuf, lbuf, rank, sort)
                if e == NO_LEGAL_MOVE:
                    return NO_LEGAL_MOVE
                if e == 0:
                    break
            L.carry_mobility(mobility, tree.slot_count[node])
            if tree.visits[node] > grave and tree.amaf_row[node] >= 0:
                ref = node
            T.select(tree, node, ref, params, rng, sl)
            child = T.get_child(tree, node, sl)
            new = child < 0
            if new:
                if T.pool_full(tree):
                    tree.meta[T.M_FULL_NODES] += 1
                    break
                f = K.load_into(h, tree.state[node])
                if f != nb:
                    K.load_finish(g, vals, f)
                for r in range(R):
                    joint[r] = tree.slot_move[sl[r]]
                f = K.step(h, joint)
                if f != nb:
                    K.step_finish(g, vals, h, joint, f)
                K.pack_into(h, cur)
                if material:
                    _material_prior(cur, pmasks, pbase, proot, prior)
                    T.seed_prior(tree, node, sl, prior, weight)
                hv = np.uint64(0)
                if transpose:
                    hv = T.state_hash(cur)
                    if T.mover_of(tree, node) != T.MIXED:
                        child = T.tt_find(tree, hv, cur)
                        for i in range(depth + 1):   # never a cycle back into this descent
                            if path[i] == child:
                                child = -1
                        if child >= 0:
                            T.link_child(tree, node, sl, child)
                            new = False     # a node already searched: the descent goes on
                if new:
                    term = K.terminal_in(h)
                    if term:
                        _scores(g, vals, gr, goals)
                    child = T.add_child(tree, node, sl, term, goals)
                    tree.state[child, :] = cur
                    if transpose:
                        T.tt_put(tree, hv, child)
                at = child
            path[depth + 1] = child
            jslots[depth, :] = sl
            depth += 1
            node = child
            if new:
                break
        extra = 0
        npm = 0
        if tree.terminal[node] == 1 or (solver and node != 0 and tree.proven[node] == 1):
            tree.meta[T.M_PROVEN_ENDS] += 1
            exact = True
            charged = False
            end_terminal = tree.terminal[node] == 1
            for r in range(R):
                goals[r] = tree.pval[node, r]
            extra = tree.pdepth[node]
            if use_util:
                cur[:] = tree.state[node]
                if at != node:
                    K.load_state(g, cur, vals)
        else:
            tree.meta[T.M_PLAYOUTS] += 1
            charged = True
            if at != node:
                f = K.load_into(h, tree.state[node])
                if f != nb:
                    K.load_finish(g, vals, f)
            before = -1     # the role that chose the last ply's move (anti-decisive), if one did
            settled = False     # a quiet state found past ``ed``: ``cur`` holds it
            while npm < limit:
                if npm > 0 and K.terminal_in(h):
                    break
                if quiet and npm >= ed:
                    # each state from ``ed`` on with its material, by ply parity (a rescued
                    # ply redoes this ply: the state before it is kept)
                    qs = npm & 1
                    K.pack_into(h, qstate[qs])
                    same = True
                    for r in range(R):
                        c = _count(qstate[qs], pmasks[r])
                        same = same and c == qcount[1 - qs, r]
                        qcount[qs, r] = c
                    if npm > ed and same:
                        npm -= 1
                        cur[:] = qstate[1 - qs]
                        settled = True
                        break
                if track:
                    K.pack_into(h, plies[npm & 1])
                chooser = -1
                n_wins = 0
                if narrow:
                    _near(vals, near)
                for r in range(R):
                    n = _legal(h, r, lbuf, rank, sort)
                    if n == 0:
                        return NO_LEGAL_MOVE
                    if n >= 2:
                        mobility[r] = n
                        chooser = r if chooser == -1 else -2
                        if decisive:
                            for i in range(n):
                                if _may_win(wins, near, narrow, r, lbuf[i]):
                                    mbuf[n_wins] = lbuf[i]
                                    n_wins += 1
                    # NST's context: the next role's move in the ply before (read where NST is on)
                    ctx = -1
                    if depth + npm > 0:
                        ctx = T.ply_move(tree, jslots, pmoves, depth, depth + npm - 1, (r + 1) % R)
                    k = T.mast_move(mast_q, mast_n, params, r, lbuf, n, rng, wbuf, nst_key, nst_n, nst_q, ctx)
                    joint[r] = lbuf[k]
                    pmoves[npm, r] = lbuf[k]
                if n_wins > 0 and chooser >= 0:
                    won = _take_win(g, h, vals, joint, chooser, mbuf, n_wins, best, gr, cur)
                    if won >= 0:    # the state is the win's: the loop ends at its terminal test
                        if before >= 0 and before != chooser:
                            saved = _rescue(g, h, vals, plies[(npm - 1) & 1], last, before, joint, chooser,
                                            lbuf2, lbuf, mbuf, jbuf, wins, stops, best, gr, cur, rank, sort,
                                            near)
                            if saved >= 0:  # the last ply takes the move that stops the win: this
                                pmoves[npm - 1, before] = saved     # ply again, after it
                                continue
                        pmoves[npm, chooser] = won
                        npm += 1
                        continue
                if track:
                    before = chooser
                    last[:] = joint
                f = K.step_inlined(h, joint)   # vals moves on: no packing, no reload
                if f != nb:
                    K.step_finish(g, vals, h, joint, f)
                npm += 1
            if (use_util or ed > 0) and not settled:
                K.pack_into(h, cur)
            exact = K.terminal_in(h) and not settled
            end_terminal = exact
            if exact:
                _scores(g, vals, gr, goals)
            elif ed > 0 and npm >= ed:
                # cut by the evaluation, not by the persona's charge depth: its values are
                # the leaf's, as a terminal's goals are (no charge default, no discount)
                _evaluation(cur, ev_w, ev_b, goals)
                if material:
                    # random play's outcomes weigh material less than good play does (the
                    # regression's states are random play's): the cut's value is mixed with
                    # the material's own (``prior`` is free outside a descent)
                    _material_value(cur, pmasks, prior)
                    for r in range(R):
                        goals[r] = (1.0 - MATERIAL_MIX) * goals[r] + MATERIAL_MIX * prior[r]
                tree.meta[T.M_EVALUATED] += 1
                if npm > ed:
                    tree.meta[T.M_EXTENDED] += 1
                exact = True
                charged = False
        if use_util:
            _features(g, vals, cur, end_terminal, depth + npm + extra, mobility, me, role_masks,
                      rel_masks, lbuf, gr, role_facts, rel_counts, raw)
        L.evaluate(params, rp, goals, exact, charged, raw, lo, hi, w, rng, values)
        T.backprop(tree, params, path, depth, jslots, pmoves, npm, values, extra)
    return n_sims


@njit(cache=True)
def init_root(g, tree, state, vals, rank, sort):
    """Fresh tree with ``state`` as root (expanded): 1 ok, 0 terminal, NO_LEGAL_MOVE."""
    R = g.n_roles
    K.load_state(g, state, vals)
    term = K.is_terminal(g, vals)
    goals = np.zeros(R)
    if term:
        _scores(g, vals, np.zeros((3, R)), goals)
    T.reset_root(tree, term, goals)
    tree.state[0, :] = state
    T.tt_index(tree)        # the root alone (a fresh tree: what the last search left is cleared)
    if term:
        return 0
    maxm = 1
    total = 0
    for r in range(R):
        maxm = max(maxm, g.role_nmoves[r])
        total += g.role_nmoves[r]
    e = _expand(g, K.hot(g, vals), tree, 0, vals, np.zeros(R, np.int32), np.zeros(total + 1, np.int32),
                np.zeros(maxm + 1, np.int32), rank, sort)
    return 1 if e == 1 else NO_LEGAL_MOVE


@njit(cache=True)
def run_batch(g, tree, params_by_role, rp_by_role, states, roles, rngs, vals, w, lo_by_role,
              hi_by_role, role_masks, rel_masks, rank, sort, q_out, n_out, move_out, count_out,
              choice_out, ev_w, ev_b, wins, stops, best, near):
    """One fresh search per item (state row, role, rng row): Q, visits, move ids, count and
    the persona's choice per item.  count_out[i] = 0 for a terminal state, -1 on error."""
    for i in range(states.shape[0]):
        me = roles[i]
        params = params_by_role[me]
        rp = rp_by_role[me]
        rng = rngs[i]
        st = init_root(g, tree, states[i], vals, rank, sort)
        if st != 1:
            count_out[i] = 0 if st == 0 else -1
            continue
        if simulate(g, tree, params, rp, rng, int(params[P_LIMIT]), vals, w, lo_by_role[me],
                    hi_by_role[me], role_masks, rel_masks, rank, sort, ev_w, ev_b, np.zeros((0, 1), np.uint64),
                    wins, stops, best, near) < 0:
            count_out[i] = -1
            continue
        cnt = tree.slot_count[0, me]
        off = tree.slot_off[0, me]
        T.root_stats(tree, me, rp[RP_DEFAULT, me], q_out[i], n_out[i])
        for k in range(cnt):
            move_out[i, k] = tree.slot_move[off + k]
        count_out[i] = cnt
        choice_out[i] = T.choose(tree, params, q_out[i, :cnt], n_out[i, :cnt], rng)


guard([sys.modules[__name__]], [K, T, L, RNG, P, F, M, H, PK, sys.modules[__name__]])


# --------------------------------------------------------------------------- Python side
class _EngineData:
    """Per-engine constants: move lookup, canonical move order, utility masks (lazily)."""

    def __init__(self, engine):
        g = engine.game
        self.move_terms = [list(ms) for ms in engine.move_terms]
        self.move_index = [{m: k for k, m in enumerate(ms)} for ms in self.move_terms]
        self.n_move_ids = int(max(1, max(int(x) for x in g.role_nmoves)))
        # rank[r, id]: the move's place in canonical term order; sort = 0 when the engine's
        # order is canonical already (usual; not after a cache hit on a scrambled game)
        self.rank = np.zeros((len(self.move_terms), self.n_move_ids), np.int64)
        for r, ms in enumerate(self.move_terms):
            order = {m: i for i, m in enumerate(canonical_sorted(ms))}
            self.rank[r, :len(ms)] = [order[m] for m in ms]
        self.sort = int(any((self.rank[r, :len(ms)] != np.arange(len(ms))).any()
                            for r, ms in enumerate(self.move_terms)))
        self.vals = K.new_vals(g)
        self.util: dict = {}
        self.evaluation = (None, None)     # (heuristic, its arrays): the last one asked for
        self._decisive = None
        self._game = g
        self._scratch: dict = {}

    def scratch(self, i: int):
        """Thread ``i``'s own (vals, near) for root-parallel searches (``vals`` and ``near``
        change as a simulation runs); thread 0's are ``vals`` and ``decisive()``'s."""
        if i == 0:
            return self.vals, self.decisive()[3]
        if i not in self._scratch:
            self._scratch[i] = (K.new_vals(self._game), tuple(a.copy() for a in self.decisive()[3]))
        return self._scratch[i]

    def decisive(self):
        """``decisive.analyse`` shaped as the tree's move ids, ``decisive.best_goals`` and
        ``decisive.near_arrays``."""
        if self._decisive is None:
            rows, stops, cond = D.analyse(self._game)
            R, k = rows.shape
            wins = np.full((R, self.n_move_ids), -1, np.int32)
            wins[:, :k] = rows
            wide = np.zeros((stops.shape[0], R, self.n_move_ids), np.uint8)
            wide[:, :, :k] = stops
            self._decisive = (wins, wide, D.best_goals(self._game), D.near_arrays(self._game, cond, self.n_move_ids))
        return self._decisive

    def evaluation_arrays(self, engine, heuristic):
        """(ev_w[R, n_base], ev_b[R]) of the game's evaluation; zeros when there is none.
        A match has one evaluation: the last one's arrays are kept."""
        if self.evaluation[1] is None or self.evaluation[0] is not heuristic:
            R = len(engine.roles)
            if heuristic is None:
                arrays = (np.zeros((R, 1)), np.zeros(R))
            else:
                arrays = (heuristic.bit_values(engine.base), heuristic.intercept.copy())
            self.evaluation = (heuristic, arrays)
        return self.evaluation[1]

    def utility_arrays(self, engine, persona):
        """(w, lo[R, K], hi[R, K], role_masks, rel_masks) for the persona's weights."""
        R, W = len(engine.roles), int(engine.game.n_words)
        if persona.utility_lambda <= 0:
            z = np.zeros((R, 1))
            return np.zeros(1), z, z, np.zeros((R, W), np.uint64), np.zeros((0, W), np.uint64)
        if "cal" not in self.util:
            cal = F.calibrate(engine)
            facts = F.FactIndex(engine.roles)
            role_masks = np.zeros((R, W), np.uint64)
            rel_masks = np.zeros((len(cal.relations), W), np.uint64)
            rel_pos = {p: i for i, p in enumerate(cal.relations)}
            for i, f in enumerate(engine.base):
                bit = np.uint64(1) << np.uint64(i & 63)
                for q in facts.roles_in(f):
                    role_masks[q, i >> 6] |= bit
                k = rel_pos.get(F.relation_of(f))
                if k is not None:
                    rel_masks[k, i >> 6] |= bit
            self.util = {"cal": cal, "role_masks": role_masks, "rel_masks": rel_masks}
        cal = self.util["cal"]
        return (F.weight_vector(persona.utility_weights, cal), cal.lo, cal.hi,
                self.util["role_masks"], self.util["rel_masks"])


_data: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def engine_data(engine) -> _EngineData:
    d = _data.get(engine)
    if d is None:
        d = _data[engine] = _EngineData(engine)
    return d


def new_compiled_tree(engine, data: _EngineData, max_nodes: int, root_slots: int = 0,
                      budget: int | None = None, amaf: bool = True, nst: bool = False) -> SearchTree:
    """``amaf=False`` (a persona without RAVE: nothing reads or writes AMAF statistics): one
    AMAF row, which compaction keeps at one (copying the rows was a third of moving the tree
    on to the next ply, issue #34).  ``nst``: an NST table (live play, ``P_NST``)."""
    g = engine.game
    R = len(engine.roles)
    per_node = max(8, root_slots + 8)
    max_nodes = node_capacity(max_nodes, R, int(g.n_words), per_node, budget)
    arrays = T.new_tree(R, data.n_move_ids, max_nodes, max_nodes * per_node + 64,
                        amaf_rows(max_nodes, R, data.n_move_ids) if amaf else 1, int(g.n_words),
                        T.NST_SLOTS if nst else 1)
    return SearchTree("compiled", arrays, None, data.move_terms, data.move_index, budget=budget)


def _root_slots(engine, state) -> int:
    return sum(len(engine.legal_moves(state, r)) for r in range(len(engine.roles)))


def _tree_for(engine, data, tree, state, packed, want, max_nodes, seconds, vals, budget, amaf, nst):
    """``tree`` when its root is ``state`` (grown if it must), else a fresh tree whose root
    is expanded on ``vals``."""
    st = None
    if (tree is not None and tree.kind == "compiled" and tree.arrays.ready[0]
            and np.array_equal(tree.arrays.state[0], packed)):
        st = tree
        # MAST is kept: a tree whose root is this state was searched from it a moment ago
        # (pondering's slices, then the decision), and its search goes on.  A tree moved on
        # to another state starts a table of its own (``compact_into``), as spec 2.4 has it:
        # one table per decision.  (Reset at every slice, pondering's playouts drew from a
        # table 0.1 s old.)
        # Room for this decision's nodes.  On a clock what it adds is unknown (a full pool
        # degrades, it does not fail) and ``want`` is the persona's limit (the tournament
        # preset's 10 million, beyond TREE_BYTES), so the tree is rebuilt only when less than
        # DEFAULT_TIMED_NODES are free, only when the copy can be larger (at TREE_BYTES a
        # nearly full tree was copied whole at every call), and to twice its size: grown by
        # DEFAULT_TIMED_NODES alone, a tree pondered in 0.1 s slices had less than that free
        # again after each slice and was copied at every one (half of pondering's time).
        free = st.capacity - st.nodes
        grown = st.nodes + want if seconds is None else max(st.nodes + want, 2 * st.capacity)
        if max_nodes is None and st.nodes + want > st.capacity and (
                seconds is None or free < DEFAULT_TIMED_NODES) and can_grow(st, grown):
            st = compact_into(st, 0, grown)
    if st is None:
        st = new_compiled_tree(engine, data, want, _root_slots(engine, state), budget, amaf, nst)
        status = init_root(engine.game, st.arrays, packed, vals, data.rank, data.sort)
        if status == 0:
            raise ValueError("cannot search from a terminal state")
        if status < 0:
            raise RuntimeError("a role has no legal move in a non-terminal state")
    return st


class _Shared:
    """What the threads of one search share: simulations run by each, whether one of them
    proved the root, the first error."""

    def __init__(self, threads: int):
        self.ran = [0] * threads    # each thread writes its own entry: no lost update
        self.stop = False
        self.error = None

    @property
    def sims(self) -> int:
        return sum(self.ran)


def _run(g, data, i, st, vals, near, rng, params, rp, ev, pmasks, util, me, n_limit, deadline, shared,
         progress=None):
    """Thread ``i``'s simulations on ``st`` (on ``vals``, ``near``: its own) until the limit
    (every thread's simulations together), the deadline, or a proven root in any thread."""
    w, lo, hi, rmask, relmask = util
    wins, stops, best = data.decisive()[:3]
    chunk = 64
    if progress is not None and progress.callback is not None and deadline is None:
        chunk = 4096        # reports need a loop in chunks (numba cannot call back)
    elif deadline is not None:
        # on a clock the first chunk is one simulation, and the chunks grow from the rate
        # measured (at most doubling): a first chunk of 64 ran before the clock was read, and a
        # slow state's 64 simulations overran the GDL-II ensemble's slices on battleship
        chunk = 1
    while not shared.stop and (n_limit is None or shared.sims < n_limit):
        n = chunk if n_limit is None else min(chunk, n_limit - shared.sims)
        if deadline is None and (progress is None or progress.callback is None):
            n = n_limit - shared.sims
        c0 = time.perf_counter()
        ran = simulate(g, st.arrays, params, rp, rng, n, vals, w, lo[me], hi[me], rmask, relmask,
                       data.rank, data.sort, ev[0], ev[1], pmasks, wins, stops, best, near)
        if ran < 0:
            raise RuntimeError("a role has no legal move in a non-terminal state")
        shared.ran[i] += ran
        if progress is not None:
            progress(st, shared.sims)
        if root_settled(st.arrays, params):
            shared.stop = True
            break
        if deadline is not None:
            now = time.perf_counter()
            if now >= deadline:
                break
            # chunks of about 20 ms, never past the deadline by much; at most twice the last
            # chunk: the first ones run while the tree is small and fast, so their rate
            # overestimates the next chunk's (a 0.05 s breakthrough search overran by ~35 %)
            rate = n / max(now - c0, 1e-6)
            chunk = int(max(1, min(2 * n, rate * 0.02, rate * (deadline - now))))


def _helper(*args):
    shared = args[-1]
    try:
        _run(*args)
    except BaseException as e:  # re-raised by the calling thread
        shared.error = e
        shared.stop = True


def search(engine, state, role_index: int, persona, settings: SearchSettings | None = None,
           tree: SearchTree | None = None, on_progress=None, **keywords) -> SearchResult:
    t0 = time.perf_counter()
    s = settings_of(settings, keywords)
    seed, limit, seconds, solver, max_nodes, thesis = s.seed, s.limit, s.seconds, s.solver, s.max_nodes, s.thesis
    heuristic, material, threads = s.heuristic, s.material, s.threads
    g = engine.game
    data = engine_data(engine)
    R = len(engine.roles)
    params, rp = build(persona, R, role_index, solver=solver, limit=limit, thesis=thesis,
                       eval_depth=H.EVAL_DEPTH if heuristic is not None else 0, material=material is not None)
    ev = data.evaluation_arrays(engine, heuristic)
    pmasks = (material.masks(int(g.n_words)) if params[P_MATERIAL] > 0
              else np.zeros((0, int(g.n_words)), np.uint64))
    if thesis:
        tree = None     # spec 2.1: a fresh tree and MAST table per decision
    n_limit = int(params[P_LIMIT]) if (limit is not None or seconds is None) else None
    # Root parallelism only on a clock: a search of a fixed size stays one reproducible tree
    threads = max(1, int(threads)) if seconds is not None and not thesis else 1
    budget = share(threads)
    packed = engine.pack(state)
    want = max_nodes or ((n_limit + 1) if n_limit else DEFAULT_TIMED_NODES)
    # thread i's tree: the one moved on with ``tree`` (its helpers, by ``advance``), else fresh
    kept = [tree, *tree.helpers] if tree is not None else []
    amaf, nst = params[P_RAVE] > 0, params[P_NST] > 0
    trees = [_tree_for(engine, data, t, state, packed, want, max_nodes, seconds, data.scratch(i)[0], budget, amaf,
                       nst)
             for i, t in enumerate((kept + [None] * threads)[:threads])]
    st = trees[0]
    st.helpers = trees[1:]
    rng = make_rng(seed)
    util = data.utility_arrays(engine, persona)
    for t in trees:
        start_counts(t.arrays)
    deadline = None if seconds is None else t0 + seconds
    progress = Progress(on_progress, params, role_index, rp[RP_DEFAULT, role_index])
    shared = _Shared(threads)

    def run_args(i):
        rng_i = rng if i == 0 else make_rng(int(seed) + i * HELPER_SEED_STEP)
        return (g, data, i, trees[i], *data.scratch(i), rng_i, params, rp, ev, pmasks, util, role_index, n_limit,
                deadline, shared)

    workers = [threading.Thread(target=_helper, args=run_args(i), daemon=True) for i in range(1, threads)]
    for w in workers:
        w.start()
    try:
        _run(*run_args(0), progress)
    except BaseException:
        shared.stop = True      # the other threads end at once
        raise
    finally:
        for w in workers:
            w.join()
    if shared.error is not None:
        raise shared.error
    progress(st, shared.sims, final=True)
    return _finish(st, data, params, rp, rng, role_index, shared.sims, t0)


def _finish(st, data, params, rp, rng, me, sims, t0) -> SearchResult:
    # the tree whose root is proven, if a thread proved it (its proof is what ``choose``
    # plays), else the first thread's; the others' visits and values added to its root's
    trees = [st, *st.helpers]
    first = next((t for t in trees if t.arrays.proven[0]), st)
    others = [t.arrays for t in trees if t is not first]
    a = first.arrays
    ids, q, n, k = root_choice(a, params, rp[RP_DEFAULT, me], rng, me, others)
    proven = root_proven(a, me)
    order = sorted(range(len(ids)), key=lambda j: data.rank[me][ids[j]])   # canonical, as driver A
    moves = [data.move_terms[me][ids[j]] for j in order]
    counts = [searched(t.arrays) for t in trees]
    return SearchResult(move=data.move_terms[me][ids[k]], moves=moves, q=q[order], visits=n[order],
                        simulations=sims, elapsed=time.perf_counter() - t0, tree=st, threads=len(trees),
                        proven=proven[order], nodes=sum(t.nodes for t in trees),
                        pool_full=sum(int(t.arrays.meta[T.M_FULL_NODES]) for t in trees),
                        **{key: sum(c[key] for c in counts) for key in counts[0]})


def search_batch(engine, items, persona, *, limit: int | None = None, solver: bool = True,
                 thesis: bool = True):
    """items: (state, role, seed) triples.  One numba call, one tree reused (reset) per item."""
    t0 = time.perf_counter()
    g = engine.game
    data = engine_data(engine)
    R = len(engine.roles)
    pr = [build(persona, R, r, solver=solver, limit=limit, thesis=thesis) for r in range(R)]
    params_by_role = np.stack([p for p, _ in pr])
    rp_by_role = np.stack([rp for _, rp in pr])
    n_items = len(items)
    states = np.zeros((n_items, int(g.n_words)), np.uint64)
    for i, (s, _, _) in enumerate(items):
        states[i] = engine.pack(s)
    roles = np.array([r for _, r, _ in items], np.int64)
    rngs = np.stack([make_rng(s) for _, _, s in items]) if n_items else np.zeros((0, 4), np.uint64)
    n_limit = int(params_by_role[0, P_LIMIT])
    maxm = data.n_move_ids
    root_slots = max(_root_slots(engine, s) for s, _, _ in items) if n_items else 0
    st = new_compiled_tree(engine, data, n_limit + 1, root_slots, nst=params_by_role[0, P_NST] > 0)
    w, lo, hi, rmask, relmask = data.utility_arrays(engine, persona)
    q = np.zeros((n_items, maxm))
    n = np.zeros((n_items, maxm), np.int64)
    mv = np.zeros((n_items, maxm), np.int64)
    cnt = np.zeros(n_items, np.int64)
    choice = np.zeros(n_items, np.int64)
    run_batch(g, st.arrays, params_by_role, rp_by_role, states, roles, rngs, data.vals, w, lo, hi,
              rmask, relmask, data.rank, data.sort, q, n, mv, cnt, choice, np.zeros((R, 1)), np.zeros(R),
              *data.decisive())
    elapsed = (time.perf_counter() - t0) / max(1, n_items)
    out = []
    for i in range(n_items):
        c = int(cnt[i])
        if c == 0:
            raise ValueError(f"batch item {i}: cannot search from a terminal state")
        if c < 0:
            raise RuntimeError(f"batch item {i}: a role has no legal move in a non-terminal state")
        me = int(roles[i])
        ids = [int(x) for x in mv[i, :c]]
        order = sorted(range(c), key=lambda j: data.rank[me][ids[j]])
        out.append(SearchResult(
            move=data.move_terms[me][ids[int(choice[i])]], moves=[data.move_terms[me][ids[j]] for j in order],
            q=q[i, :c][order], visits=n[i, :c][order], simulations=n_limit, elapsed=elapsed, tree=None))
    return out
