"""numba kernels of the compiled engine (contract: agent/engine/__init__.py).

A compiled game is an AND/OR rule program over atom ids, evaluated in a fixed topological
order.  ``vals`` holds one byte per atom: ids [0, n_base) are the state's fluents, then the
``does`` inputs, then derived atoms.  A literal is ``atom * 2 + negated``.  Blocks are runs of
entries evaluated once, or (``blk_loop``) an atom-level recursive component iterated to its
least fixpoint.  Phase blocks: 0 = legal/terminal, 1 = goals, 2 = next, 3 = everything (used
to (re)build a work buffer; afterwards changes propagate forward, see below).
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
    "rule_head", "occ_start", "occ_rule", "occ_neg", "atom_block",
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


# ------------------------------------------------------------------ forward propagation
# The work buffer ``w`` (int32) holds, in order: atom values [0, n_atoms) -- so ``w[a]`` is
# atom a's value and callers may read it like a plain value array --, then per atom the
# number of its rules that fire, per rule the number of its satisfied literals, a dirty flag
# per block, a scratch area, and an event stack.  A change of an atom is an event: it moves
# the counters of the rules that mention it by +-1, and a rule that starts or stops firing
# moves its head's count.  Only what changed is touched (a propnet's forward propagation);
# atom-level recursive components are recomputed whole when one of their rules changes,
# because a positive cycle could otherwise keep itself true.

@njit(cache=True)
def _layout(g):
    n = g.n_atoms
    nr = g.rule_head.shape[0]
    nb = g.blk_start.shape[0]
    o_fire = n
    o_cnt = o_fire + n
    o_dirty = o_cnt + nr
    o_scratch = o_dirty + nb
    o_stack = o_scratch + n
    cap = 4 * n + 1024
    return o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap


@njit(cache=True)
def new_vals(g):
    """A work buffer in the state with no fluent true, fully consistent."""
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    w = np.zeros(o_stack + cap, dtype=np.int32)
    _rebuild(g, w)
    return w


@njit(cache=True)
def _rebuild(g, w):
    """Full evaluation (all blocks in order) and counters from scratch."""
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    for a in g.const_true:
        w[a] = 1
    eval_blocks(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits,
                w, g.phase_blocks[3, 0], g.phase_blocks[3, 1])
    for a in range(g.n_atoms):
        w[o_fire + a] = 0
    for r in range(g.rule_head.shape[0]):
        c = 0
        for k in range(g.lit_start[r], g.lit_start[r + 1]):
            lit = g.lits[k]
            if w[lit >> 1] != (lit & 1):
                c += 1
        w[o_cnt + r] = c
        if c == g.lit_start[r + 1] - g.lit_start[r]:
            w[o_fire + g.rule_head[r]] += 1
    for b in range(g.blk_start.shape[0]):
        w[o_dirty + b] = 0


@njit(cache=True)
def _set(g, w, a, v, sp):
    """Set atom a to v (0/1) and record the event; returns the new stack size (-1: overflow)."""
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    if w[a] == v:
        return sp
    w[a] = v
    if sp < 0 or sp >= cap:
        return -1
    w[o_stack + sp] = a * 2 + v
    return sp + 1


@njit(cache=True)
def _drain(g, w, sp, skip, first_dirty):
    """Process pending events; returns the lowest dirty block (or -1 after an overflow,
    when the buffer was rebuilt from scratch instead).  Events never re-dirty ``skip``."""
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    while sp > 0:
        sp -= 1
        item = w[o_stack + sp]
        a = item >> 1
        v = item & 1
        for o in range(g.occ_start[a], g.occ_start[a + 1]):
            r = g.occ_rule[o]
            need = g.lit_start[r + 1] - g.lit_start[r]
            before = w[o_cnt + r] == need
            w[o_cnt + r] += 1 if v != g.occ_neg[o] else -1
            after = w[o_cnt + r] == need
            if before != after:
                h = g.rule_head[r]
                w[o_fire + h] += 1 if after else -1
                b = g.atom_block[h]
                if b >= 0:
                    if b != skip:
                        w[o_dirty + b] = 1
                        if b < first_dirty:
                            first_dirty = b
                else:
                    nv = 1 if w[o_fire + h] > 0 else 0
                    if nv != w[h]:
                        w[h] = nv
                        if sp >= cap:
                            _rebuild(g, w)
                            return -1
                        w[o_stack + sp] = h * 2 + nv
                        sp += 1
    return first_dirty


@njit(cache=True)
def _settle(g, w, sp):
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    nb = g.blk_start.shape[0]
    if sp < 0:
        _rebuild(g, w)
        return
    first = _drain(g, w, sp, -1, nb)
    while first >= 0:
        # Recursive components, earliest first: their inputs are settled by then.
        b = first
        while b < nb and w[o_dirty + b] == 0:
            b += 1
        if b >= nb:
            return
        e0 = g.blk_start[b]
        e1 = g.blk_end[b]
        for e in range(e0, e1):
            w[o_scratch + e - e0] = w[g.ent_atom[e]]
        eval_blocks(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits,
                    w, b, b + 1)
        sp = 0
        for e in range(e0, e1):
            a = g.ent_atom[e]
            if w[a] != w[o_scratch + e - e0]:
                if sp >= cap:
                    _rebuild(g, w)
                    return
                w[o_stack + sp] = a * 2 + w[a]
                sp += 1
        w[o_dirty + b] = 0
        if _drain(g, w, sp, b, nb) < 0:
            return
        first = b + 1  # later dirty blocks, old or new, are found by the scan


@njit(cache=True)
def load_state(g, state, vals):
    """Bring the work buffer to ``state`` (packed bits); only the differences propagate."""
    sp = 0
    for i in range(g.n_base):
        v = np.int32((state[i >> 6] >> np.uint64(i & 63)) & np.uint64(1))
        sp = _set(g, vals, i, v, sp)
    _settle(g, vals, sp)


@njit(cache=True)
def current_state(g, vals, out_state):
    for w in range(g.n_words):
        out_state[w] = 0
    for i in range(g.n_base):
        if vals[i] == 1:
            out_state[i >> 6] |= np.uint64(1) << np.uint64(i & 63)


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
    for r in range(g.n_roles):
        best = -1
        for k in range(g.goal_start[r], g.goal_start[r + 1]):
            if vals[g.goal_atom[k]] == 1 and g.goal_value[k] > best:
                best = g.goal_value[k]
        out[r] = best if best >= 0 else 0


@njit(cache=True)
def _does(g, vals, joint, v):
    sp = 0
    for r in range(g.n_roles):
        d = g.does_atom[g.legal_start[r] + joint[r]]
        if d >= 0:
            sp = _set(g, vals, d, v, sp)
    _settle(g, vals, sp)


@njit(cache=True)
def next_state(g, vals, joint, out_state):
    """The state after ``joint`` (int32 move indices) into ``out_state``; ``vals`` is left
    in the current state."""
    _does(g, vals, joint, 1)
    for w in range(g.n_words):
        out_state[w] = 0
    for i in range(g.n_base):
        a = g.next_atom[i]
        if a >= 0 and vals[a] == 1:
            out_state[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    _does(g, vals, joint, 0)


@njit(cache=True)
def advance(g, vals, joint):
    """Move the work buffer itself to the state after ``joint`` (no packing)."""
    _does(g, vals, joint, 1)
    o_fire, o_cnt, o_dirty, o_scratch, o_stack, cap = _layout(g)
    # Read every next value before changing any fluent: next atoms depend on fluents.
    for i in range(g.n_base):
        a = g.next_atom[i]
        vals[o_scratch + i] = 1 if (a >= 0 and vals[a] == 1) else 0
    sp = 0
    for r in range(g.n_roles):
        d = g.does_atom[g.legal_start[r] + joint[r]]
        if d >= 0:
            sp = _set(g, vals, d, 0, sp)
    for i in range(g.n_base):
        sp = _set(g, vals, i, vals[o_scratch + i], sp)
    _settle(g, vals, sp)


@njit(cache=True)
def random_playout(g, state, vals, max_depth, out_goals):
    """Uniform random joint moves until terminal: the number of joint moves made, goals in
    ``out_goals``; -1 if ``max_depth`` was hit first, -2 if a role had no legal move.
    ``vals`` ends in the final state."""
    load_state(g, state, vals)
    return random_playout_here(g, vals, max_depth, out_goals)


@njit(cache=True)
def random_playout_here(g, vals, max_depth, out_goals):
    """As random_playout, from the state ``vals`` is in."""
    joint = np.empty(g.n_roles, dtype=np.int32)
    buf = np.empty(g.role_nmoves.max() + 1, dtype=np.int32)
    depth = 0
    while True:
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
        advance(g, vals, joint)
        depth += 1


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True)
def playouts_for(g, state, count, max_depth):
    """Benchmark helper: ``count`` playouts; returns (playouts, total depth, goal sum)."""
    vals = new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    total_depth = 0
    goal_sum = 0
    for _ in range(count):
        d = random_playout(g, state, vals, max_depth, goals)
        if d < 0:
            return -1, total_depth, goal_sum
        total_depth += d
        goal_sum += goals.sum()
    return count, total_depth, goal_sum


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
