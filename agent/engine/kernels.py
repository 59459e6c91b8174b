"""numba kernels of the compiled engine (contract: agent/engine/__init__.py).

A compiled game is an AND/OR rule program over atom ids, evaluated in a fixed topological
order.  ``vals`` holds one byte per atom: ids [0, n_base) are the state's fluents, then the
``does`` inputs, then derived atoms.  A literal is ``atom * 2 + negated``.  Blocks are runs of
entries evaluated once, or (``blk_loop``) an atom-level recursive component iterated to its
least fixpoint.  Phases: 0 = legal/terminal (every step), 1 = goals (on demand), 2 = next.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

CompiledGame = namedtuple("CompiledGame", [
    "n_roles", "n_words", "n_base", "n_atoms",
    "blk_start", "blk_end", "blk_loop", "phase_blocks",
    "ent_atom", "rule_start", "lit_start", "lits",
    "legal_start", "legal_atom", "does_atom",
    "goal_start", "goal_atom", "goal_value",
    "terminal_atom", "next_atom", "const_true",
    "role_nmoves", "init_state",
])


@njit(cache=True)
def _fires(atom, rule_start, lit_start, lits, vals):
    for r in range(rule_start[atom], rule_start[atom + 1]):
        ok = True
        for k in range(lit_start[r], lit_start[r + 1]):
            lit = lits[k]
            if vals[lit >> 1] == (lit & 1):
                ok = False
                break
        if ok:
            return 1
    return 0


@njit(cache=True)
def eval_blocks(blk_start, blk_end, blk_loop, ent_atom, rule_start, lit_start, lits, vals, b0, b1):
    for b in range(b0, b1):
        e0 = blk_start[b]
        e1 = blk_end[b]
        if blk_loop[b]:
            for e in range(e0, e1):
                vals[ent_atom[e]] = 0
            changed = True
            while changed:
                changed = False
                for e in range(e0, e1):
                    a = ent_atom[e]
                    if vals[a] == 0 and _fires(a, rule_start, lit_start, lits, vals) == 1:
                        vals[a] = 1
                        changed = True
        else:
            for e in range(e0, e1):
                a = ent_atom[e]
                vals[a] = _fires(a, rule_start, lit_start, lits, vals)


@njit(cache=True)
def _phase(g, vals, p):
    eval_blocks(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits,
                vals, g.phase_blocks[p, 0], g.phase_blocks[p, 1])


@njit(cache=True)
def new_vals(g):
    vals = np.zeros(g.n_atoms, dtype=np.uint8)
    for a in g.const_true:
        vals[a] = 1
    return vals


@njit(cache=True)
def load_state(g, state, vals):
    for i in range(g.n_base):
        vals[i] = (state[i >> 6] >> np.uint64(i & 63)) & np.uint64(1)
    _phase(g, vals, 0)


@njit(cache=True)
def is_terminal(g, vals):
    return g.terminal_atom >= 0 and vals[g.terminal_atom] == 1


@njit(cache=True)
def legal_moves(g, vals, role, out):
    n = 0
    s = g.legal_start[role]
    for k in range(s, g.legal_start[role + 1]):
        if vals[g.legal_atom[k]] == 1:
            out[n] = k - s
            n += 1
    return n


@njit(cache=True)
def goal_vector(g, vals, out):
    """Goal per role: the largest provable value, 0 when none (statemachine.goal_vector)."""
    _phase(g, vals, 1)
    for r in range(g.n_roles):
        best = -1
        for k in range(g.goal_start[r], g.goal_start[r + 1]):
            if vals[g.goal_atom[k]] == 1 and g.goal_value[k] > best:
                best = g.goal_value[k]
        out[r] = best if best >= 0 else 0


@njit(cache=True)
def next_state(g, vals, joint, out_state):
    for r in range(g.n_roles):
        d = g.does_atom[g.legal_start[r] + joint[r]]
        if d >= 0:
            vals[d] = 1
    _phase(g, vals, 2)
    for w in range(g.n_words):
        out_state[w] = 0
    for i in range(g.n_base):
        a = g.next_atom[i]
        if a >= 0 and vals[a] == 1:
            out_state[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    for r in range(g.n_roles):
        d = g.does_atom[g.legal_start[r] + joint[r]]
        if d >= 0:
            vals[d] = 0


@njit(cache=True)
def random_playout(g, state, vals, max_depth, out_goals):
    """Uniform random joint moves until terminal: the number of joint moves made, goals in
    ``out_goals``; -1 if ``max_depth`` was hit first, -2 if a role had no legal move."""
    cur = state.copy()
    nxt = np.empty_like(state)
    joint = np.empty(g.n_roles, dtype=np.int32)
    buf = np.empty(g.role_nmoves.max() + 1, dtype=np.int32)
    depth = 0
    while True:
        load_state(g, cur, vals)
        if is_terminal(g, vals):
            goal_vector(g, vals, out_goals)
            return depth
        if depth >= max_depth:
            return -1
        for r in range(g.n_roles):
            n = legal_moves(g, vals, r, buf)
            if n == 0:
                return -2
            joint[r] = buf[np.random.randint(n)]
        next_state(g, vals, joint, nxt)
        cur, nxt = nxt, cur
        depth += 1


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True)
def playouts_for(g, state, seconds_cycles, max_depth):
    """Benchmark helper: ``seconds_cycles`` playouts; returns (playouts, total depth, goal sum)."""
    vals = new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    total_depth = 0
    goal_sum = 0
    for _ in range(seconds_cycles):
        d = random_playout(g, state, vals, max_depth, goals)
        if d < 0:
            return -1, total_depth, goal_sum
        total_depth += d
        goal_sum += goals.sum()
    return seconds_cycles, total_depth, goal_sum


# ------------------------------------------------------------------ compile-time helpers

@njit(cache=True)
def rule_offsets(flat):
    """Offsets of rules in ``[k, head, lits..., k, head, ...]``."""
    n = 0
    i = 0
    while i < flat.shape[0]:
        n += 1
        i += flat[i] + 1
    starts = np.empty(n, dtype=np.int64)
    i = 0
    j = 0
    while i < flat.shape[0]:
        starts[j] = i
        j += 1
        i += flat[i] + 1
    return starts


@njit(cache=True)
def tarjan(n, indptr, indices):
    """SCCs of a CSR graph, iteratively: (component of each node, components in reverse
    topological order of the edges, i.e. callees first)."""
    index = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    on = np.zeros(n, dtype=np.uint8)
    comp = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    sp = 0
    cs_node = np.empty(n, dtype=np.int64)
    cs_edge = np.empty(n, dtype=np.int64)
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        depth = 0
        cs_node[0] = root
        cs_edge[0] = indptr[root]
        index[root] = counter
        low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
        on[root] = 1
        while depth >= 0:
            v = cs_node[depth]
            e = cs_edge[depth]
            if e < indptr[v + 1]:
                cs_edge[depth] = e + 1
                w = indices[e]
                if index[w] < 0:
                    index[w] = counter
                    low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    on[w] = 1
                    depth += 1
                    cs_node[depth] = w
                    cs_edge[depth] = indptr[w]
                elif on[w] == 1 and index[w] < low[v]:
                    low[v] = index[w]
            else:
                if low[v] == index[v]:
                    while True:
                        sp -= 1
                        w = stack[sp]
                        on[w] = 0
                        comp[w] = ncomp
                        if w == v:
                            break
                    ncomp += 1
                depth -= 1
                if depth >= 0:
                    u = cs_node[depth]
                    if low[v] < low[u]:
                        low[u] = low[v]
    return comp, ncomp
