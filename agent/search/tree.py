"""The search tree in preallocated numpy arrays, and the persona search logic on it (numba).

One implementation serves both drivers: ``driver_sm`` calls these functions step by step
from Python over any state machine, ``driver_compiled`` calls them from one njit loop.
What a simulation's end is worth (goals, charge defaults, utility, bias) is ``leaf.py``'s.

Layout (``Tree``, a namedtuple of arrays; node 0 is always the root):
  nodes   visits, terminal, proven (+ ``pval`` goals per role, ``pdepth`` plies to that
          outcome), ``ready`` (legal moves known), per role ``slot_off``/``slot_count``
          into the slot pool, children as a linked list (``first_child``/``next_sib`` with
          the joint ``child_key``), ``amaf_row`` (or -1), ``state`` (packed, driver B only)
  tt      driver B: node ids by a hash of their packed state, so that a state reached by
          another move order from a node where at most one role chooses is the node already
          there (a transposition: the tree becomes a graph; driver A keeps a dict).  A node
          so linked is in that parent's slots, and in the sibling list of its first parent
          only.  Never an ancestor in the same descent: a repeated state is a new node.
  slots   one per (node, role, legal move): move id, visits, mean, and the child reached
          when that role is the only one with a choice (``slot_child``: O(1) lookup in
          turn-taking games)
  amaf    dense rows [row, role, move id]: GRAVE reads them from an ancestor, where the
          move scored need not be legal (e.g. other boards in nine-board tic-tac-toe),
          so they cannot live on the slots
  mast    [role, move id], reset per decision (spec 8.11)
  nst     live play: the mean value of a role's move played as the reply to a move of the next
          role in the ply before (an NST 2-gram), in a hash table keyed by (role, that move,
          this move), reset with MAST; one slot (never read) where NST is off

Pools are bounded.  A full node pool stops expansion (simulations continue from the
frontier), a full slot pool leaves a node unexpanded, a full AMAF pool leaves new nodes
without AMAF rows (GRAVE then uses the nearest ancestor that has one): the search
degrades, never fails.

Move ids are per role (driver A interns terms, driver B uses the engine's move indices).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .params import (P_C, P_EPSILON, P_MAST_TAU, P_ME, P_MIN_SHARE, P_NICE, P_NST, P_RANDOM_ERROR,
                     P_RAVE, P_SOLVER, P_TREE_DISCOUNT)
from .rng import CHOICE, PLAYOUT, TREE, randint, uniform
from ..engine.kernels import borrowed

Tree = namedtuple("Tree", [
    "meta", "visits", "terminal", "proven", "pval", "pdepth", "ready", "slot_off",
    "slot_count", "first_child", "next_sib", "child_key", "amaf_row", "state",
    "slot_move", "slot_n", "slot_q", "slot_child",
    "amaf_n", "amaf_q", "mast_n", "mast_q",
    "seen", "set_r", "set_m", "tt", "nst_key", "nst_n", "nst_q",
])

# meta entries.  What one decision searched (the drivers zero these two when it starts):
# M_PLAYOUTS simulations whose leaf was evaluated by walking the game (a playout, or a cut-off
# at charge_depth 0), M_PROVEN_ENDS simulations that ended in a terminal or proven node (a
# tree descent only, the value known: no playout).  Their sum is the simulations run.
# M_TRANSPOSED: moves of this decision's descents that reached a state already in the tree.
# M_EVALUATED: playouts (counted in M_PLAYOUTS) ended by the game's evaluation (heuristic.py).
# M_EXTENDED: of those, the ones run past the evaluation's depth to a quiet state
# (heuristic.QUIET_PLIES).
(M_NODES, M_SLOTS, M_AMAF, M_FULL_NODES, M_FULL_SLOTS, M_PLAYOUTS, M_PROVEN_ENDS, M_TRANSPOSED,
 M_EVALUATED, M_EXTENDED) = range(10)
N_META = 10

WIN = 100.0          # a goal this high cannot be improved on: a proven win for the mover
MIXED = -2           # mover_of(): more than one role has a choice (simultaneous moves)


@njit(cache=True, inline="always")
def borrowed_tree(t):
    """``t`` with every array ``kernels.borrowed``: for a search loop inside one compiled call
    that has the tree as an argument (its calls then pay no atomic reference counting)."""
    b = borrowed
    return Tree(b(t.meta), b(t.visits), b(t.terminal), b(t.proven), b(t.pval), b(t.pdepth), b(t.ready),
                b(t.slot_off), b(t.slot_count), b(t.first_child), b(t.next_sib), b(t.child_key), b(t.amaf_row),
                b(t.state), b(t.slot_move), b(t.slot_n), b(t.slot_q), b(t.slot_child), b(t.amaf_n), b(t.amaf_q),
                b(t.mast_n), b(t.mast_q), b(t.seen), b(t.set_r), b(t.set_m), b(t.tt), b(t.nst_key),
                b(t.nst_n), b(t.nst_q))


def new_tree(n_roles: int, n_move_ids: int, max_nodes: int, max_slots: int,
             max_amaf_rows: int, state_words: int = 0, nst_slots: int = 1) -> Tree:
    """Empty tree arrays; ``reset_root`` makes it usable.  ``nst_slots``: the NST table's
    size (a power of two; ``NST_SLOTS`` for a tree that live play searches, 1 where NST is off)."""
    N, S, A, R, M = max(1, max_nodes), max(1, max_slots), max(1, max_amaf_rows), n_roles, max(1, n_move_ids)
    return Tree(
        meta=np.zeros(N_META, np.int64),
        visits=np.zeros(N, np.int64),
        terminal=np.zeros(N, np.uint8),
        proven=np.zeros(N, np.uint8),
        pval=np.zeros((N, R), np.float64),
        pdepth=np.zeros(N, np.int32),
        ready=np.zeros(N, np.uint8),
        slot_off=np.zeros((N, R), np.int64),
        slot_count=np.zeros((N, R), np.int32),
        first_child=np.full(N, -1, np.int32),
        next_sib=np.full(N, -1, np.int32),
        child_key=np.zeros(N, np.int64),
        amaf_row=np.full(N, -1, np.int32),
        state=np.zeros((N, state_words), np.uint64),
        slot_move=np.zeros(S, np.int32),
        slot_n=np.zeros(S, np.int64),
        slot_q=np.zeros(S, np.float64),
        slot_child=np.full(S, -1, np.int32),
        amaf_n=np.zeros((A, R, M), np.int32),
        amaf_q=np.zeros((A, R, M), np.float32),
        mast_n=np.zeros((R, M), np.int64),
        mast_q=np.zeros((R, M), np.float64),
        seen=np.zeros((R, M), np.uint8),
        set_r=np.zeros(R * M, np.int32),
        set_m=np.zeros(R * M, np.int32),
        tt=np.full(tt_size(N) if state_words > 0 else 1, -1, np.int32),
        nst_key=np.zeros(nst_slots, np.int64),
        nst_n=np.zeros(nst_slots, np.int64),
        nst_q=np.zeros(nst_slots, np.float64),
    )


def tt_size(max_nodes: int) -> int:
    """Transposition table slots for ``max_nodes`` nodes: a power of two, at least twice as many."""
    return 1 << max(4, (2 * max_nodes - 1).bit_length())


def grow(tree: Tree, *, n_move_ids: int = 0, max_slots: int = 0, max_amaf_rows: int = 0) -> Tree:
    """A copy with room for more move ids or slots (driver A learns moves as it goes).
    ``max_amaf_rows`` (with more move ids): the AMAF rows the wider table may keep.  Each
    row is R x move ids wide, so a game with thousands of moves (chess) would otherwise
    multiply the table's bytes with every widening (gigabytes); the nodes whose rows are
    dropped go without AMAF statistics, as nodes beyond the row budget always did."""
    R = tree.mast_n.shape[0]
    M = max(n_move_ids, tree.mast_n.shape[1])
    S = max(max_slots, tree.slot_move.shape[0])
    t = tree._replace(
        slot_move=np.resize(tree.slot_move, S), slot_n=np.resize(tree.slot_n, S),
        slot_q=np.resize(tree.slot_q, S), slot_child=np.resize(tree.slot_child, S))
    if M > tree.mast_n.shape[1]:
        A = tree.amaf_n.shape[0]
        if max_amaf_rows > 0 and max_amaf_rows < A:
            A = max_amaf_rows
            amaf_row = tree.amaf_row.copy()
            amaf_row[amaf_row >= A] = -1
            meta = tree.meta.copy()
            meta[M_AMAF] = min(int(meta[M_AMAF]), A)
            t = t._replace(amaf_row=amaf_row, meta=meta)
        m0 = tree.mast_n.shape[1]
        amaf_n = np.zeros((A, R, M), np.int32); amaf_n[:, :, :m0] = tree.amaf_n[:A]
        amaf_q = np.zeros((A, R, M), np.float32); amaf_q[:, :, :m0] = tree.amaf_q[:A]
        mast_n = np.zeros((R, M), np.int64); mast_n[:, :m0] = tree.mast_n
        mast_q = np.zeros((R, M), np.float64); mast_q[:, :m0] = tree.mast_q
        t = t._replace(amaf_n=amaf_n, amaf_q=amaf_q, mast_n=mast_n, mast_q=mast_q,
                       seen=np.zeros((R, M), np.uint8), set_r=np.zeros(R * M, np.int32),
                       set_m=np.zeros(R * M, np.int32))
    return t


# --------------------------------------------------------------------------- pool
@njit(cache=True, inline="always")
def _init_node(tree, n, terminal, goals):
    R = tree.pval.shape[1]
    tree.visits[n] = 0
    tree.terminal[n] = terminal
    tree.proven[n] = terminal          # a terminal is its own proof
    tree.pdepth[n] = 0
    for r in range(R):
        tree.pval[n, r] = goals[r] if terminal else 0.0
        tree.slot_off[n, r] = -1
        tree.slot_count[n, r] = 0
    tree.ready[n] = 0
    tree.first_child[n] = -1
    tree.next_sib[n] = -1
    tree.child_key[n] = 0
    a = tree.meta[M_AMAF]
    if a < tree.amaf_n.shape[0]:
        tree.meta[M_AMAF] = a + 1
        tree.amaf_row[n] = a
        tree.amaf_n[a, :, :] = 0
        tree.amaf_q[a, :, :] = 0.0
    else:
        tree.amaf_row[n] = -1


@njit(cache=True)
def reset_root(tree, terminal, goals):
    """Forget everything (fresh tree and MAST, spec 2.1) and create the root as node 0."""
    for k in range(tree.meta.shape[0]):
        tree.meta[k] = 0
    reset_mast(tree)
    tree.meta[M_NODES] = 1
    _init_node(tree, 0, terminal, goals)


@njit(cache=True)
def reset_mast(tree):
    """MAST and NST start afresh."""
    tree.mast_n[:, :] = 0
    tree.mast_q[:, :] = 0.0
    tree.nst_key[:] = 0
    tree.nst_n[:] = 0
    tree.nst_q[:] = 0.0


@njit(cache=True, inline="always")
def init_slots(tree, node, counts, moves):
    """Give ``node`` its legal moves: ``counts[r]`` move ids per role, concatenated in
    ``moves``.  False when the slot pool is full (the node then stays a leaf)."""
    R = counts.shape[0]
    total = 0
    for r in range(R):
        total += counts[r]
    s0 = tree.meta[M_SLOTS]
    if s0 + total > tree.slot_move.shape[0]:
        tree.meta[M_FULL_SLOTS] += 1
        return False
    k = 0
    for r in range(R):
        tree.slot_off[node, r] = s0 + k
        tree.slot_count[node, r] = counts[r]
        for j in range(counts[r]):
            s = s0 + k
            tree.slot_move[s] = moves[k]
            tree.slot_n[s] = 0
            tree.slot_q[s] = 0.0
            tree.slot_child[s] = -1
            k += 1
    tree.meta[M_SLOTS] = s0 + total
    tree.ready[node] = 1
    return True


@njit(cache=True, inline="always")
def mover_of(tree, node):
    """The one role with more than one legal move; -1 if none has; MIXED if several have."""
    m = -1
    for r in range(tree.slot_count.shape[1]):
        if tree.slot_count[node, r] > 1:
            if m >= 0:
                return MIXED
            m = r
    return m


@njit(cache=True, inline="always")
def joint_key(tree, node, slots):
    key = 0
    mult = 1
    for r in range(slots.shape[0]):
        key += (slots[r] - tree.slot_off[node, r]) * mult
        mult *= tree.slot_count[node, r]
    return key


@njit(cache=True, inline="always")
def get_child(tree, node, slots):
    """Child of ``node`` for the joint move given as slot indices, or -1."""
    m = mover_of(tree, node)
    if m != MIXED:
        return tree.slot_child[slots[max(m, 0)]]
    key = joint_key(tree, node, slots)
    c = tree.first_child[node]
    while c >= 0:
        if tree.child_key[c] == key:
            return c
        c = tree.next_sib[c]
    return -1


@njit(cache=True, inline="always")
def add_child(tree, node, slots, terminal, goals):
    """A new child for the joint move ``slots``; -1 when the node pool is full."""
    n = tree.meta[M_NODES]
    if n >= tree.visits.shape[0]:
        tree.meta[M_FULL_NODES] += 1
        return -1
    tree.meta[M_NODES] = n + 1
    _init_node(tree, n, terminal, goals)
    tree.child_key[n] = joint_key(tree, node, slots)
    tree.next_sib[n] = tree.first_child[node]
    tree.first_child[node] = n
    m = mover_of(tree, node)
    if m != MIXED:
        tree.slot_child[slots[max(m, 0)]] = n
    return n


@njit(cache=True, inline="always")
def pool_full(tree):
    return tree.meta[M_NODES] >= tree.visits.shape[0]


# --------------------------------------------------------------------------- transpositions
@njit(cache=True, inline="always")
def state_hash(state):
    """64-bit hash of a packed state (splitmix64's mixing per word)."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for w in range(state.shape[0]):
        h ^= state[w]
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


@njit(cache=True, inline="always")
def _holds(tree, n, state):
    for w in range(state.shape[0]):
        if tree.state[n, w] != state[w]:
            return False
    return True


@njit(cache=True)
def tt_find(tree, h, state):
    """The first node made that holds ``state`` (hash ``h``), or -1.  Linear probing in a
    table at least twice the node pool, from which nothing is deleted (a fresh tree clears
    it, a copy rebuilds it): exact, and the same node driver A's dict finds."""
    mask = np.uint64(tree.tt.shape[0] - 1)
    i = h & mask
    while True:
        n = tree.tt[np.int64(i)]
        if n < 0:
            return -1
        if _holds(tree, n, state):
            return n
        i = (i + np.uint64(1)) & mask


@njit(cache=True)
def tt_put(tree, h, node):
    """Remember ``node`` under ``h`` (after any node made before it with the same state)."""
    mask = np.uint64(tree.tt.shape[0] - 1)
    i = h & mask
    while tree.tt[np.int64(i)] >= 0:
        i = (i + np.uint64(1)) & mask
    tree.tt[np.int64(i)] = node


@njit(cache=True)
def tt_index(tree):
    """The table of every node, in id order (a fresh tree, or a copy that renumbered them)."""
    if tree.tt.shape[0] <= 1 or tree.state.shape[1] == 0:
        return
    tree.tt[:] = -1
    for n in range(tree.meta[M_NODES]):
        tt_put(tree, state_hash(tree.state[n]), n)


@njit(cache=True, inline="always")
def link_child(tree, node, slots, child):
    """Make the existing ``child`` the one reached by the joint move ``slots`` from ``node``,
    a node where at most one role has a choice (``slot_child`` is the only lookup there)."""
    tree.slot_child[slots[max(mover_of(tree, node), 0)]] = child
    tree.meta[M_TRANSPOSED] += 1


# --------------------------------------------------------------------------- selection
@njit(cache=True)
def _proven_win(slot_child, proven, pval, slot, r):
    # the three arrays, not the Tree: these are not inlined, and a call that takes the Tree
    # pays the reference counting of all its arrays (it was most of a solver search's time)
    c = slot_child[slot]
    return c >= 0 and proven[c] == 1 and pval[c, r] >= WIN


@njit(cache=True)
def _proven_loss(slot_child, proven, pval, slot, r):
    c = slot_child[slot]
    return c >= 0 and proven[c] == 1 and pval[c, r] <= 0.0


@njit(cache=True)
def _proven_visited(slot_child, proven, slot_n, slot):
    c = slot_child[slot]
    return c >= 0 and proven[c] == 1 and slot_n[slot] > 0


@njit(cache=True, inline="always")
def score(tree, node, r, slot, row, lnN, rave, C):
    """Thesis score form (spec 2.3): beta*AMAF_ref + (1-beta)*UCT; unvisited: AMAF or +inf.
    The one place to change for a different tree policy (spec 6.5)."""
    n = tree.slot_n[slot]
    m = 0
    w = 0.0
    if row >= 0:
        mid = tree.slot_move[slot]
        m = tree.amaf_n[row, r, mid]
        w = tree.amaf_q[row, r, mid]
    beta = np.sqrt(rave / (3.0 * n + rave)) if rave > 0 else 0.0
    if n == 0:
        return w if (beta > 0 and m > 0) else np.inf
    u = tree.slot_q[slot] + C * np.sqrt(lnN / n)
    return beta * w + (1.0 - beta) * u if m > 0 else u


@njit(cache=True, inline="always")
def select(tree, node, ref, params, rng, out):
    """Decoupled selection: each role picks a slot from its own statistics (into ``out``)."""
    R = out.shape[0]
    rave = params[P_RAVE]
    C = params[P_C]
    me = int(params[P_ME])
    solver = params[P_SOLVER] > 0
    N = tree.visits[node]
    lnN = np.log(N) if N > 0 else 0.0
    row = tree.amaf_row[ref]
    mover = mover_of(tree, node)
    for r in range(R):
        off = tree.slot_off[node, r]
        cnt = tree.slot_count[node, r]
        if cnt == 1:
            out[r] = off
            continue
        choice = -1
        if node == 0 and r == me:
            # root rule (spec 2.3): every root move once before any twice, so all get a Q
            ties = 0
            for k in range(cnt):
                if tree.slot_n[off + k] == 0:
                    ties += 1
                    if randint(rng, TREE, ties) == 0:
                        choice = off + k
        skip_lost = False
        if choice < 0 and solver and mover == r:
            # MCTS-Solver: a proven win for the mover is played (only the root can still
            # ask: elsewhere such a node is proven itself and never searched below); proven
            # losses are skipped while anything else is left, else the thesis score form
            # keeps feeding a lost move (its exploration term grows inside (1 - beta))
            best_d = 1 << 30
            lost = 0
            for k in range(cnt):
                s = off + k
                if _proven_win(tree.slot_child, tree.proven, tree.pval, s, r):
                    d = tree.pdepth[tree.slot_child[s]]
                    if d < best_d:
                        best_d = d
                        choice = s
                lost += _proven_loss(tree.slot_child, tree.proven, tree.pval, s, r)
            skip_lost = 0 < lost < cnt
        if choice < 0:
            best = -np.inf
            ties = 0
            for k in range(cnt):
                s = off + k
                if skip_lost and _proven_loss(tree.slot_child, tree.proven, tree.pval, s, r):
                    continue
                if solver and mover == r and _proven_visited(tree.slot_child, tree.proven, tree.slot_n, s):
                    # a proven child's value is known (its Q is the proof's, backprop): no
                    # exploration bonus, so it is revisited only while nothing unproven looks
                    # as good, instead of soaking up visits (each a descent that learns nothing)
                    v = tree.slot_q[s]
                else:
                    v = score(tree, node, r, s, row, lnN, rave, C)
                if v > best:
                    best = v
                    choice = s
                    ties = 1
                elif v == best:
                    ties += 1
                    if randint(rng, TREE, ties) == 0:
                        choice = s
        out[r] = choice


@njit(cache=True, inline="always")
def seed_prior(tree, node, sl, prior, weight):
    """Each role's slot ``sl[r]`` at ``node`` tried for the first time (a role with a choice)
    starts at ``prior[r]``, the value of the state it led to, counted as ``weight``
    simulations (material.py): the real simulations then outweigh it as they come."""
    for r in range(sl.shape[0]):
        s = sl[r]
        if tree.slot_count[node, r] > 1 and tree.slot_n[s] == 0:
            tree.slot_n[s] = weight
            tree.slot_q[s] = prior[r]


# --------------------------------------------------------------------------- playout
@njit(cache=True)
def playout_move(tree, params, r, ids, n, rng, ctx=-1):
    """Index into ``ids[:n]`` of role r's playout move: a MAST Gibbs draw with probability
    epsilon, else uniform (spec 2.4); unplayed moves count as 100.  ``ctx``: the move of the
    role after r in the ply before (-1: none), for NST (``mast_move``)."""
    return mast_move(tree.mast_q, tree.mast_n, params, r, ids, n, rng, np.empty(max(n, 1)),
                     tree.nst_key, tree.nst_n, tree.nst_q, ctx)


# NST (live play).  Tak, Winands and Bjornsson (2012) found the N-gram selection technique
# (a move's value as the reply to the moves before it) ahead of MAST in most GGP games; here
# its 2-grams: a role's move after the move the next role made in the ply before (in a
# turn-taking game of two, the opponent's last move).  A pair's mean counts once it has been
# seen NST_MIN times (their threshold); the playout's value of a move is then the mean of its
# MAST and NST values.  The table is a hash table of NST_SLOTS (a pair found within
# NST_PROBES slots of its hash, else not recorded: the table degrades, it does not grow), so
# games with thousands of moves (chess) need no table of moves squared.
NST_SLOTS = 1 << 16
NST_MIN = 7
NST_PROBES = 8


@njit(cache=True, inline="always")
def nst_pair(r, ctx, m):
    """The table's key of role r's move m after ``ctx`` (never 0, the empty slot's)."""
    return ((np.int64(ctx) + 1) << 36) | (np.int64(m) << 8) | np.int64(r)


@njit(cache=True, inline="always")
def nst_slot(keys, key, insert):
    """The slot of ``key`` (with ``insert``, a free slot taken for it), else -1."""
    mask = keys.shape[0] - 1
    i = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
    for _ in range(NST_PROBES):
        k = keys[i]
        if k == key:
            return i
        if k == 0:
            if insert:
                keys[i] = key
                return i
            return -1
        i = (i + 1) & mask
    return -1


@njit(cache=True)
def mast_move(mast_q, mast_n, params, r, ids, n, rng, wbuf, nst_key, nst_n, nst_q, ctx):
    """``playout_move`` on the MAST and NST arrays themselves, for a playout loop: a call
    that takes the Tree pays the reference counting of all its arrays, more than a playout
    step costs.  ``wbuf`` (n floats) holds each move's value, then its weight, so the draw
    computes each exp once."""
    if n == 1:
        return 0
    eps = params[P_EPSILON]
    if eps <= 0.0 or uniform(rng, PLAYOUT) >= eps:
        return randint(rng, PLAYOUT, n)
    tau = params[P_MAST_TAU]
    nst = ctx >= 0 and params[P_NST] > 0 and nst_key.shape[0] > 1
    top = -np.inf
    for k in range(n):
        m = ids[k]
        v = mast_q[r, m] if mast_n[r, m] > 0 else 100.0
        if nst:
            j = nst_slot(nst_key, nst_pair(r, ctx, m), False)
            if j >= 0 and nst_n[j] >= NST_MIN:
                v = 0.5 * (v + nst_q[j])
        wbuf[k] = v
        if v > top:
            top = v
    total = 0.0
    for k in range(n):
        e = np.exp((wbuf[k] - top) / tau)
        wbuf[k] = e
        total += e
    x = uniform(rng, PLAYOUT) * total
    acc = 0.0
    for k in range(n):
        acc += wbuf[k]
        if x < acc:
            return k
    return n - 1


# --------------------------------------------------------------------------- backpropagation
@njit(cache=True, inline="always")
def _add_move(tree, k, r, m):
    if tree.seen[r, m] == 0:
        tree.seen[r, m] = 1
        tree.set_r[k] = r
        tree.set_m[k] = m
        return k + 1
    return k


@njit(cache=True, inline="always")
def ply_move(tree, jslots, pmoves, depth, t, r):
    """Role r's move id at ply t of a simulation: its tree plies (``jslots``), then its
    playout's (``pmoves``)."""
    return tree.slot_move[jslots[t, r]] if t < depth else pmoves[t - depth, r]


@njit(cache=True, inline="always")
def backprop(tree, params, path, depth, jslots, pmoves, n_pmoves, values, extra):
    """Credit one simulation (spec 2.8).  ``path[0..depth]`` are the nodes (root first),
    ``jslots[i]`` the slots taken from ``path[i]``, ``pmoves[:n_pmoves]`` the playout's move
    ids per role, ``extra`` plies beyond the leaf (a proven leaf's distance to its end)."""
    R = values.shape[0]
    td = params[P_TREE_DISCOUNT]
    solver = params[P_SOLVER] > 0
    amaf = params[P_RAVE] > 0  # without RAVE no score reads AMAF (score: beta 0): skip it
    K = 0
    for k in range(n_pmoves):
        for r in range(R):
            K = _add_move(tree, K, r, pmoves[k, r])
    for i in range(depth, -1, -1):
        nd = path[i]
        if i < depth:
            for r in range(R):
                K = _add_move(tree, K, r, tree.slot_move[jslots[i, r]])
        tree.visits[nd] += 1
        f = td ** (depth - i + extra)
        if i < depth:
            # the move into a proven leaf: its Q is the proof's value (biased as every value
            # is), not a mean with the playouts run before the proof; only for the slot that
            # leads to that one child (the mover's; every role's when all are forced), not
            # the slots of roles without a choice or of simultaneous moves (a mean over children)
            m = mover_of(tree, nd) if (solver and i == depth - 1 and tree.proven[path[depth]] == 1) else MIXED
            for r in range(R):
                s = jslots[i, r]
                tree.slot_n[s] += 1
                if m != MIXED and (m < 0 or m == r):
                    tree.slot_q[s] = values[r] * f
                else:
                    tree.slot_q[s] += (values[r] * f - tree.slot_q[s]) / tree.slot_n[s]
        row = tree.amaf_row[nd] if amaf else -1
        if row >= 0:
            # AMAF: every move a role made from here on, once (its first occurrence)
            for k in range(K):
                r = tree.set_r[k]
                m = tree.set_m[k]
                c = tree.amaf_n[row, r, m] + 1
                tree.amaf_n[row, r, m] = c
                tree.amaf_q[row, r, m] += (values[r] * f - tree.amaf_q[row, r, m]) / c
    for k in range(K):
        r = tree.set_r[k]
        m = tree.set_m[k]
        tree.mast_n[r, m] += 1
        tree.mast_q[r, m] += (values[r] - tree.mast_q[r, m]) / tree.mast_n[r, m]
        tree.seen[r, m] = 0
    if params[P_NST] > 0 and tree.nst_key.shape[0] > 1:
        # every pair of consecutive plies, the tree's then the playout's, each occurrence
        for t in range(1, depth + n_pmoves):
            for r in range(R):
                m = ply_move(tree, jslots, pmoves, depth, t, r)
                ctx = ply_move(tree, jslots, pmoves, depth, t - 1, (r + 1) % R)
                j = nst_slot(tree.nst_key, nst_pair(r, ctx, m), True)
                if j >= 0:
                    tree.nst_n[j] += 1
                    tree.nst_q[j] += (values[r] - tree.nst_q[j]) / tree.nst_n[j]
    if solver and tree.proven[path[depth]] == 1:
        for i in range(depth - 1, -1, -1):
            if not try_prove(tree, path[i]):
                break


# --------------------------------------------------------------------------- solver
@njit(cache=True)
def try_prove(tree, node):
    """Prove ``node`` from its children where one role moves (turn-taking, or all forced):
    a child won for the mover proves it (nearest such win), so do all children proven (the
    mover's best outcome; nearest if at least a draw, else the farthest).  Simultaneous
    nodes are never proven."""
    if tree.proven[node] == 1:
        return True
    if tree.ready[node] == 0:
        return False
    m = mover_of(tree, node)
    if m == MIXED:
        return False
    r = max(m, 0)
    off = tree.slot_off[node, r]
    cnt = tree.slot_count[node, r]
    win = -1
    best = -1
    all_proven = True
    for k in range(cnt):
        c = tree.slot_child[off + k]
        if c < 0 or tree.proven[c] == 0:
            all_proven = False
            continue
        v = tree.pval[c, r]
        if v >= WIN and (win < 0 or tree.pdepth[c] < tree.pdepth[win]):
            win = c
        if best < 0:
            best = c
        else:
            bv = tree.pval[best, r]
            if v > bv or (v == bv and (tree.pdepth[c] < tree.pdepth[best] if v >= 50.0
                                       else tree.pdepth[c] > tree.pdepth[best])):
                best = c
    if win < 0:
        if not all_proven:
            return False
        win = best
    tree.proven[node] = 1
    tree.pdepth[node] = tree.pdepth[win] + 1
    for q in range(tree.pval.shape[1]):
        tree.pval[node, q] = tree.pval[win, q]
    return True


# --------------------------------------------------------------------------- root results
@njit(cache=True)
def root_stats(tree, me, default, q_out, n_out):
    """Q and visits of the deciding role's root moves, in slot order; unvisited: default."""
    off = tree.slot_off[0, me]
    for k in range(tree.slot_count[0, me]):
        n = tree.slot_n[off + k]
        n_out[k] = n
        q_out[k] = tree.slot_q[off + k] if n > 0 else default


@njit(cache=True)
def choose(tree, params, q, n, rng):
    """Final choice (spec 2.7) over the deciding role's root moves (``q``, visits ``n``):
    RandomError, else uniform among moves within NiceThreshold of the best Q.  Index into q.

    Live-play deviations (off in thesis mode, listed in README), both because a Q from a
    handful of playouts is noise: only moves with at least ``P_MIN_SHARE`` of the most
    visited move's visits compete on Q (the thesis score form rarely revisits a move whose
    AMAF looks poor, so one lucky playout gave a Q of 99 that beat 990 visits at 47); and
    with the solver on, a proven win is played and proven losses are avoided while
    anything else is left."""
    me = int(params[P_ME])
    cnt = tree.slot_count[0, me]
    if uniform(rng, CHOICE) < params[P_RANDOM_ERROR]:
        return randint(rng, CHOICE, cnt)
    off = tree.slot_off[0, me]
    ok = np.ones(cnt, np.bool_)
    if params[P_SOLVER] > 0 and mover_of(tree, 0) == me:
        win = -1
        for k in range(cnt):
            if _proven_win(tree.slot_child, tree.proven, tree.pval, off + k, me):
                d = tree.pdepth[tree.slot_child[off + k]]
                if win < 0 or d < tree.pdepth[tree.slot_child[off + win]] or (
                        d == tree.pdepth[tree.slot_child[off + win]] and q[k] > q[win]):
                    win = k
        if win >= 0:
            return win
        lost = 0
        for k in range(cnt):
            if _proven_loss(tree.slot_child, tree.proven, tree.pval, off + k, me):
                ok[k] = False
                lost += 1
        if lost == cnt:
            # every move loses: the one that loses latest (the opponent may still err, and
            # it is the proof's own value, as try_prove reads it)
            far = 0
            for k in range(1, cnt):
                if tree.pdepth[tree.slot_child[off + k]] > tree.pdepth[tree.slot_child[off + far]]:
                    far = k
            return far
    most = 0
    for k in range(cnt):
        if ok[k] and n[k] > most:
            most = n[k]
    share = params[P_MIN_SHARE]
    for k in range(cnt):
        if ok[k] and n[k] < share * most:
            ok[k] = False
    top = -np.inf
    for k in range(cnt):
        if ok[k] and q[k] > top:
            top = q[k]
    nt = params[P_NICE]
    ties = 0
    pick = 0
    for k in range(cnt):
        if ok[k] and top - q[k] <= nt:
            ties += 1
            if randint(rng, CHOICE, ties) == 0:
                pick = k
    return pick


# --------------------------------------------------------------------------- reuse
@njit(cache=True)
def compact(src, dst, new_root, old_to_new):
    """Copy the subtree under ``new_root`` of ``src`` into ``dst`` (which it resets), with
    ``new_root`` as node 0; ``old_to_new[i]`` gets each kept node's new id (else -1).
    Stops copying (drops deeper nodes) if ``dst`` runs out of room."""
    R = src.pval.shape[1]
    for k in range(dst.meta.shape[0]):
        dst.meta[k] = 0
    old_to_new[:] = -1
    queue = np.empty(src.meta[M_NODES], np.int64)
    queued = np.zeros(src.meta[M_NODES], np.bool_)
    queue[0] = new_root
    queued[new_root] = True
    head = 0
    tail = 1
    dummy = np.zeros(R)
    # nodes in breadth-first order, so a parent is copied before its children
    while head < tail:
        o = queue[head]
        head += 1
        n = dst.meta[M_NODES]
        if n >= dst.visits.shape[0]:
            break
        dst.meta[M_NODES] = n + 1
        old_to_new[o] = n
        _init_node(dst, n, src.terminal[o], dummy)
        dst.visits[n] = src.visits[o]
        dst.proven[n] = src.proven[o]
        dst.pdepth[n] = src.pdepth[o]
        dst.child_key[n] = src.child_key[o]
        for r in range(R):
            dst.pval[n, r] = src.pval[o, r]
        for w in range(src.state.shape[1]):
            dst.state[n, w] = src.state[o, w]
        ro = src.amaf_row[o]
        rn = dst.amaf_row[n]
        if ro >= 0 and rn >= 0:
            dst.amaf_n[rn, :, :] = src.amaf_n[ro, :, :]
            dst.amaf_q[rn, :, :] = src.amaf_q[ro, :, :]
        if src.ready[o] == 1:
            total = 0
            for r in range(R):
                total += src.slot_count[o, r]
            s0 = dst.meta[M_SLOTS]
            if s0 + total <= dst.slot_move.shape[0]:
                dst.meta[M_SLOTS] = s0 + total
                dst.ready[n] = 1
                k = 0
                for r in range(R):
                    so = src.slot_off[o, r]
                    dst.slot_off[n, r] = s0 + k
                    dst.slot_count[n, r] = src.slot_count[o, r]
                    for j in range(src.slot_count[o, r]):
                        dst.slot_move[s0 + k] = src.slot_move[so + j]
                        dst.slot_n[s0 + k] = src.slot_n[so + j]
                        dst.slot_q[s0 + k] = src.slot_q[so + j]
                        dst.slot_child[s0 + k] = src.slot_child[so + j]  # old ids, fixed below
                        k += 1
                c = src.first_child[o]
                while c >= 0:
                    if not queued[c]:
                        queued[c] = True
                        queue[tail] = c
                        tail += 1
                    c = src.next_sib[c]
                # a transposed child is in the slots only (another parent's sibling list)
                so0 = src.slot_off[o, 0]   # a node's slots are contiguous (init_slots)
                for s in range(so0, so0 + total):
                    c = src.slot_child[s]
                    if c >= 0 and not queued[c]:
                        queued[c] = True
                        queue[tail] = c
                        tail += 1
    # relink children with new ids; dropped children vanish from lists and slots
    for o in range(src.meta[M_NODES]):
        n = old_to_new[o]
        if n < 0 or dst.ready[n] == 0:
            continue
        c = src.first_child[o]
        prev = -1
        while c >= 0:
            nc = old_to_new[c]
            if nc >= 0:
                if prev < 0:
                    dst.first_child[n] = nc
                else:
                    dst.next_sib[prev] = nc
                prev = nc
            c = src.next_sib[c]
        for r in range(R):
            off = dst.slot_off[n, r]
            for j in range(dst.slot_count[n, r]):
                oc = dst.slot_child[off + j]
                dst.slot_child[off + j] = old_to_new[oc] if oc >= 0 else -1
    tt_index(dst)
    return dst.meta[M_NODES]
