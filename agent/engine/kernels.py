"""numba kernels of the compiled engine (contract: agent/engine/__init__.py).

A compiled game is an AND/OR rule program over atom ids.  Atom ids: [0, n_base) the state's
fluents, then the ``does`` inputs, then the legal atoms (role-major, in move order), then
one next atom per fluent (``next_atom[i] == next_atom[0] + i``), then other derived atoms
(and extra does inputs for moves no rule reads).  A literal is ``atom * 2 + negated``.
Blocks are runs of entries evaluated once, or (``blk_loop``) an atom-level recursive
component iterated to its least fixpoint; only the recursive ones are evaluated that way at
run time, everything else is a propagation network (below, built in compile._build_net).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

CompiledGame = namedtuple("CompiledGame", [
    "n_roles", "n_words", "n_base", "n_atoms",
    "blk_start", "blk_end", "blk_loop", "phase_blocks",
    "ent_atom", "rule_start", "lit_start", "lits",
    "legal_start", "legal_atom", "does_atom",
    "goal_start", "goal_atom", "goal_value",
    "terminal_atom", "next_atom", "const_true",
    "role_nmoves", "init_state", "atom_block",
    "n_nodes", "node_thr", "out_start", "out_edge", "node_input", "rb_order",
    "lazy", "n_lazy_edge", "n_lazy_src", "legal_gate", "legal_lists", "ons_first", "keep_moves",
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
# The work buffer ``w`` (uint8) holds, in order: node values [0, n_nodes) -- atoms first, so
# ``w[a]`` is atom a's value and callers may read it like a plain value array --, then int32
# areas (views): a counter per node (true inputs minus threshold: the node is true iff it is
# >= 0), a scratch area, and an event stack; last a dirty flag per block.  A change of a
# node is an event: it moves the counters of the nodes it feeds by +-1, and a counter that
# crosses 0 flips its node, which is a new event.  Only what changed is touched (a propnet's
# forward propagation).  Nodes that only feed the goals are not on those paths: their input
# edges are a separate CSR (``lazy_*``, compile._build_net), and ``settle_goals`` brings them
# up to date when goals are read (until then their values are stale): the last area of the
# buffer holds the values of their sources (``lazy_src``) they were last settled with, and
# the sources that differ now are propagated as events.  Atoms of recursive components are recomputed whole when one of
# their inputs changed, because a positive cycle could otherwise keep itself true.  Nodes
# that read moves are exact only while one move per role is on (compile._build_net); moves
# are on only between ``_does_a`` and ``_apply_next`` (or the end of ``next_state``), or, in a
# game that keeps them on (``_switch_moves``), from one step to the next.
#
# Legal lists (games compiled with ``legal_lists``: a role with a long gate run): the
# counters' int32 view goes on past the nodes with four entries per legal atom k, at
# ``E(k) = n_nodes + 4 * k``: [0] the entry of the list slot holding k while its legal atom
# is true, else -1; [1] a list slot: the slots of a gate run (compile._gate_legal) are those
# of its legal atoms, and its first ``count`` slots hold the entries of its true legal atoms,
# unordered; [2] at a run's first atom: that ``count``; [3] the entry of the first atom of k's
# run.  Only the random playouts (``_playouts``) keep and read them: they bring them up to
# date on entry (``_legal_resync``), then step over a copy of the network's edges with one more
# per legal atom k, flagged 3, to E(k) (``list_parts``), passing ``lists = 1``: ``_drain``
# updates the atom's list when it walks that edge, in O(1) (``_legal_sync``: append, or
# swap-remove), and the events of other nodes pay nothing; a move is then picked without
# scanning the role's legal atoms (``_legal_count``, ``_legal_nth``).  Every other caller
# walks the plain edges and passes ``lists = None``:
# numba compiles that version apart with the list code pruned (a type, not a flag: the list
# code alone, never run, made ticTacToe's playouts 25% slower), the same code as without lists.

@njit(cache=True)
def _layout(g):
    n = g.n_nodes
    o_cnt = (n + 7) & ~7
    o_scratch = o_cnt + 4 * n + 16 * g.legal_atom.shape[0] * g.legal_lists  # counters, legal lists
    o_stack = o_scratch + 4 * (g.n_base + 1 + g.n_roles)  # scratch; the moves kept on (at its end)
    cap = 4 * n + 1024
    o_dirty = o_stack + 4 * cap
    return o_cnt, o_scratch, o_stack, cap, o_dirty


@njit(cache=True)
def lazy_parts(g):
    """(lazy_start, lazy_edge, lazy_src, lazy_order) from ``g.lazy`` (compile._build_net)."""
    a = g.n_nodes + 1
    b = a + g.n_lazy_edge
    c = b + g.n_lazy_src
    d = c + (a + g.out_edge.shape[0] + g.legal_atom.shape[0]) * g.legal_lists
    return g.lazy[:a], g.lazy[a:b], g.lazy[b:c], g.lazy[d:]


@njit(cache=True)
def list_parts(g):
    """(list_start, list_edge): in a game with legal lists, the step's edges and one more per
    legal atom k, flagged 3, to its entry ``E(k)`` (compile._build_net; kept in ``g.lazy``)."""
    a = g.n_nodes + 1
    c = a + g.n_lazy_edge + g.n_lazy_src
    return g.lazy[c:c + a], g.lazy[c + a:c + a + g.out_edge.shape[0] + g.legal_atom.shape[0]]


@njit(cache=True)
def _snap(g, w):
    """The lazy sources' values the goal-only nodes were last settled with."""
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    o_snap = o_dirty + g.blk_start.shape[0]
    return w[o_snap:o_snap + g.n_lazy_src]


@njit(cache=True)
def _views(g, w):
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    cnt = w[o_cnt:o_scratch].view(np.int32)
    scratch = w[o_scratch:o_stack].view(np.int32)
    stack = w[o_stack:o_dirty].view(np.int32)
    dirty = w[o_dirty:o_dirty + g.blk_start.shape[0]]
    return cnt, scratch, stack, dirty


@njit(cache=True)
def new_vals(g):
    """A work buffer in the state with no fluent true, fully consistent."""
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    w = np.zeros(o_dirty + g.blk_start.shape[0] + g.n_lazy_src + 8, dtype=np.uint8)
    # The last byte: how a step makes its first events (``_switch_moves``, ``_push_next``):
    # bit 0 the game's order (``ons_first``), bit 1 whether moves stay on between steps
    # (``keep_moves``), read there by the steps and loads: one more element in ``hot``'s
    # tuple, passed by value to every step, cost the small games 8-15% of their playouts.
    w[w.shape[0] - 1] = g.ons_first | (g.keep_moves << 1)
    cnt, scratch, stack, dirty = _views(g, w)
    for r in range(g.n_roles):
        scratch[scratch.shape[0] - 1 - r] = -1   # no move on
    _rebuild(g, w)
    return w


@njit(cache=True)
def _rebuild(g, w):
    """Every value and counter from scratch, in topological order (``rb_order``: nodes, or
    ``-1 - b`` for recursive block b); inputs keep their values."""
    cnt, scratch, stack, dirty = _views(g, w)
    lazy_start, lazy_edge, lazy_src, lazy_order = lazy_parts(g)
    for t in range(g.n_nodes):
        cnt[t] = -g.node_thr[t]
    for item in g.rb_order:
        if item >= 0:
            if g.node_input[item] == 0:
                w[item] = 1 if cnt[item] >= 0 else 0
            _contribute(g.out_start, g.out_edge, w, cnt, item)
            _contribute(lazy_start, lazy_edge, w, cnt, item)
        else:
            b = -1 - item
            eval_blocks(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start,
                        g.lits, w, b, b + 1)
            for e in range(g.blk_start[b], g.blk_end[b]):
                _contribute(g.out_start, g.out_edge, w, cnt, g.ent_atom[e])
                _contribute(lazy_start, lazy_edge, w, cnt, g.ent_atom[e])
    for b in range(dirty.shape[0]):
        dirty[b] = 0
    snap = _snap(g, w)
    for j in range(lazy_src.shape[0]):
        snap[j] = w[lazy_src[j]]


@njit(cache=True)
def _settle_lazy(node_thr, lazy_src, lazy_order, lazy_start, lazy_edge, blk_start, blk_end, blk_loop,
                 ent_atom, rule_start, lit_start, lits, w, cnt):
    """Recompute the goal-only nodes from the rest of the work buffer (which is settled), in
    topological order: counters from their sources' current values, then values."""
    for item in lazy_order:
        if item >= 0:
            cnt[item] = -node_thr[item]
    for s in lazy_src:
        _contribute(lazy_start, lazy_edge, w, cnt, s)
    for item in lazy_order:
        if item >= 0:
            w[item] = 1 if cnt[item] >= 0 else 0
            _contribute(lazy_start, lazy_edge, w, cnt, item)
        else:
            b = -1 - item
            eval_blocks(blk_start, blk_end, blk_loop, ent_atom, rule_start, lit_start, lits, w, b, b + 1)
            for e in range(blk_start[b], blk_end[b]):
                _contribute(lazy_start, lazy_edge, w, cnt, ent_atom[e])


@njit(cache=True)
def _goals_a(lazy_src, snap, lazy_start, lazy_edge, atom_block, w, cnt, stack, dirty, cap):
    """The goal-only nodes up to date by propagating the changes of their sources since they
    were last settled.  Returns as ``_settle_a`` (finish with ``_goals_finish``)."""
    sp = 0
    for j in range(lazy_src.shape[0]):
        v = w[lazy_src[j]]
        if v != snap[j]:
            snap[j] = v
            if sp >= cap:
                return -1
            stack[sp] = lazy_src[j] * 2 + v
            sp += 1
    return _settle_a(lazy_start, lazy_edge, atom_block, w, cnt, stack, dirty, sp, cap, None)


@njit(cache=True)
def _goals_finish(g, w, first):
    """After ``_goals_a``: goal-only recursive blocks, or a recomputation on overflow (rare)."""
    if first >= 0:
        if first >= g.blk_start.shape[0]:
            return
        cnt, scratch, stack, dirty = _views(g, w)
        o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
        lazy_start, lazy_edge, lazy_src, lazy_order = lazy_parts(g)
        if _loops(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits,
                  lazy_start, lazy_edge, g.atom_block, w, cnt, stack, dirty, cap, first):
            return
    cnt, scratch, stack, dirty = _views(g, w)
    lazy_start, lazy_edge, lazy_src, lazy_order = lazy_parts(g)
    for b in range(dirty.shape[0]):
        dirty[b] = 0
    _settle_lazy(g.node_thr, lazy_src, lazy_order, lazy_start, lazy_edge, g.blk_start, g.blk_end,
                 g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits, w, cnt)
    snap = _snap(g, w)
    for j in range(lazy_src.shape[0]):
        snap[j] = w[lazy_src[j]]


@njit(cache=True)
def settle_goals(g, vals):
    """Bring the goal atoms up to date with the state ``vals`` is in: every reader of goal
    atoms calls this first (the goal-only logic is not kept current by the steps)."""
    if g.n_lazy_src == 0:   # goal-only nodes without sources are constants, set by _rebuild
        return
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    lazy_start, lazy_edge, lazy_src, lazy_order = lazy_parts(g)
    f = _goals_a(lazy_src, _snap(g, vals), lazy_start, lazy_edge, g.atom_block, vals, cnt, stack,
                 dirty, cap)
    if f != dirty.shape[0]:
        _goals_finish(g, vals, f)


@njit(cache=True)
def _contribute(out_start, out_edge, w, cnt, s):
    v = w[s]
    for k in range(out_start[s], out_start[s + 1]):
        e = out_edge[k]
        if (e & 2) == 0 and (e & 1) != v:
            cnt[e >> 2] += 1


# Hot paths take plain arrays and never the CompiledGame: numba reference-counts arrays
# with atomic operations, and a function that takes the namedtuple and calls others pays
# that for all of its dozens of arrays on every call (so did numba-level inlining, views
# and slices); that was most of the time of a step.  Rare paths go through ``_finish``.

@njit(cache=True, inline="always")
def _legal_sync(cnt, t, v):
    """The legal atom with entry ``t`` (``E(k)``, see above) is ``v``: list it in its run if it
    is not listed, or swap-remove it.  (Events of one atom may pop out of order, so this
    follows the atom's current value, not the event's.)"""
    slot = cnt[t]
    if v:
        if slot < 0:
            j = cnt[t + 3]
            c = cnt[j + 2]
            slot = j + 4 * c
            cnt[slot + 1] = t
            cnt[t] = slot
            cnt[j + 2] = c + 1
    elif slot >= 0:
        j = cnt[t + 3]
        c = cnt[j + 2] - 1
        cnt[j + 2] = c
        last = cnt[j + 4 * c + 1]
        cnt[slot + 1] = last
        cnt[last] = slot
        cnt[t] = -1


@njit(cache=True)
def _legal_resync(legal_start, legal_gate, legal_atom, cnt, w):
    """The legal lists from scratch, in index order (a game with lists: once per playout, a
    pass over every legal atom)."""
    nl = legal_atom.shape[0]
    b = cnt.shape[0] - 4 * nl
    l0 = legal_atom[0] if nl > 0 else 0
    for r in range(legal_start.shape[0] - 1):
        s = legal_start[r]
        k = 0
        while k < legal_start[r + 1] - s:
            e = legal_gate[1, s + k]
            j0 = b + 4 * (s + k)
            c = 0
            for j in range(s + k, s + e):
                t = b + 4 * j
                cnt[t + 3] = j0
                if w[l0 + j]:
                    slot = j0 + 4 * c
                    cnt[slot + 1] = t
                    cnt[t] = slot
                    c += 1
                else:
                    cnt[t] = -1
            cnt[j0 + 2] = c
            k = e


@njit(cache=True)
def _drain(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, skip, first_dirty, lists):
    """Process pending events; returns the lowest dirty block, or -2 if the stack
    overflowed (the caller rebuilds).  Events never re-dirty ``skip``.  ``lists``: None, or
    1 to keep the legal lists (see above; the edges are then ``list_parts``')."""
    while sp > 0:
        sp -= 1
        item = stack[sp]
        a = item >> 1
        v = item & 1
        for k in range(out_start[a], out_start[a + 1]):
            e = out_edge[k]
            t = e >> 2
            if e & 2:
                if lists is not None:
                    if e & 1:   # a legal atom's edge to its entry (``list_parts``)
                        _legal_sync(cnt, t, w[a])
                        continue
                b = atom_block[t]
                if b != skip:
                    dirty[b] = 1
                    if b < first_dirty:
                        first_dirty = b
            elif (e & 1) != v:
                c = cnt[t] + 1
                cnt[t] = c
                if c == 0:
                    w[t] = 1
                    if sp >= cap:
                        return -2
                    stack[sp] = t * 2 + 1
                    sp += 1
            else:
                c = cnt[t] - 1
                cnt[t] = c
                if c == -1:
                    w[t] = 0
                    if sp >= cap:
                        return -2
                    stack[sp] = t * 2
                    sp += 1
    return first_dirty


# The same function inlined by numba, for the step with legal lists only: there the call cost
# most of the lists' gain (breakthrough 1.02x called, 1.16x inlined), while inlining it in
# every caller made the search 4-11% slower (docs/benchmarks/engine-internals.md, section 4).
_drain_inlined = njit(inline="always")(_drain.py_func)


@njit(cache=True)
def _loops(blk_start, blk_end, blk_loop, ent_atom, rule_start, lit_start, lits,
           out_start, out_edge, atom_block, w, cnt, stack, dirty, cap, first):
    """Recompute dirty recursive components, earliest first (their inputs are settled by
    then), propagating their changes; False if the stack overflowed."""
    nb = blk_start.shape[0]
    while first >= 0:
        b = first
        while b < nb and dirty[b] == 0:
            b += 1
        if b >= nb:
            return True
        e0 = blk_start[b]
        e1 = blk_end[b]
        old = np.empty(e1 - e0, dtype=np.uint8)
        for e in range(e0, e1):
            old[e - e0] = w[ent_atom[e]]
        eval_blocks(blk_start, blk_end, blk_loop, ent_atom, rule_start, lit_start, lits, w, b, b + 1)
        sp = 0
        for e in range(e0, e1):
            a = ent_atom[e]
            if w[a] != old[e - e0]:
                if sp >= cap:
                    return False
                stack[sp] = a * 2 + w[a]
                sp += 1
        dirty[b] = 0
        if _drain(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, b, nb, None) == -2:
            return False
        first = b + 1  # later dirty blocks, old or new, are found by the scan
    return True


@njit(cache=True)
def _settle_a(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, lists):
    """Propagate the ``sp`` events on the stack.  Returns -1 when the caller must rebuild
    (overflow), the first dirty recursive block if any (caller runs ``_loops``), else nb.
    ``lists``: as ``_drain``'s."""
    nb = dirty.shape[0]
    if sp < 0:
        return -1
    if lists is None:
        first = _drain(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, -1, nb, lists)
    else:
        first = _drain_inlined(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, -1, nb, lists)
    if first == -2:
        return -1
    return first


@njit(cache=True)
def _finish(g, w, first):
    """After ``_settle_a``: rebuild on overflow, run dirty recursive blocks (rare paths)."""
    if first < 0:
        _rebuild(g, w)
        return
    if first >= g.blk_start.shape[0]:
        return
    cnt, scratch, stack, dirty = _views(g, w)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    if not _loops(g.blk_start, g.blk_end, g.blk_loop, g.ent_atom, g.rule_start, g.lit_start, g.lits,
                  g.out_start, g.out_edge, g.atom_block, w, cnt, stack, dirty, cap, first):
        _rebuild(g, w)


@intrinsic
def borrowed(typingctx, arr):
    """The array ``arr`` without its reference: the same data, shape and strides, but no
    memory-info pointer, so numba's reference counting of it is a null test instead of an
    atomic add (which was most of a search simulation: 60 % of its samples sat on the
    ``lock xadd`` of NRT_incref/NRT_decref, docs/benchmarks/engine-internals.md section 9).
    Only for arrays that something else keeps alive while the result is used: a compiled
    function's own arguments (its caller holds them), never a local allocation, and never
    returned to Python."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        dst = context.make_array(signature.return_type)(context, builder)
        for field in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(dst, field, getattr(src, field))
        dst.meminfo = context.get_constant_null(types.MemInfoPointer(types.voidptr))
        dst.parent = context.get_constant_null(types.pyobject)
        return dst._getvalue()

    return arr(arr), codegen


@intrinsic
def _u64_at(typingctx, arr, idx):
    """The 8 bytes of the uint8 array ``arr`` from index ``idx`` as one uint64 (an unaligned
    load, no bounds check: the caller keeps ``idx + 8 <= arr.shape[0]``).  A view of the
    buffer as uint64 would need an aligned offset and cost the reference counting of one
    more array per step."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(idx, types.Integer)):
        return None
    sig = types.uint64(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [i]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return sig, codegen


@njit(cache=True)
def _push_set(w, stack, a, v, sp, cap):
    """Set input atom a to v and record the event; returns the new stack size (-1: overflow)."""
    if w[a] == v:
        return sp
    w[a] = v
    if sp < 0 or sp >= cap:
        return -1
    stack[sp] = a * 2 + v
    return sp + 1


# The order of a propagation's first events.  The stack pops the last pushed first, and each
# event's consequences are drained before the next first event: when two fluents that feed
# one node change in opposite directions, the one popped first can flip that node, and the
# other flip it back (a glitch: two events and their edges for nothing).  Which direction
# should go first depends on the game: nineBoardTicTacToe walks a third of the events with
# the fluents turning on first, hex two thirds with those turning off first.
# ``compile.py`` picks it per game (``probe_ons_first``: counted on a few seeded playouts,
# from the network alone); every path that flips fluents pushes in that order.

@njit(cache=True, inline="always")
def _push_state(w, stack, scratch, state, n_base, cap):
    """Set the fluents to the packed ``state``: the first events of a load, in the game's
    order (those turning to ``first`` pushed last, popped first)."""
    first = w[w.shape[0] - 1] & 1
    sp = 0
    k = 0
    for i in range(n_base):
        v = np.uint8((state[i >> 6] >> np.uint64(i & 63)) & np.uint64(1))
        if w[i] != v:
            if v == first:
                scratch[k] = i
                k += 1
            else:
                sp = _push_set(w, stack, i, v, sp, cap)
    for j in range(k):
        sp = _push_set(w, stack, scratch[j], first, sp, cap)
    return sp


@njit(cache=True)
def load_state(g, state, vals):
    """Bring the work buffer to ``state`` (packed bits); only the differences propagate."""
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    sp = _push_state(vals, stack, scratch, state, g.n_base, cap)
    _finish(g, vals, _settle_a(g.out_start, g.out_edge, g.atom_block, vals, cnt, stack, dirty, sp, cap, None))


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


@njit(cache=True, inline="always")
def _legal_list(legal_start, legal_atom, legal_gate, w, role, out):
    """Move k of ``role`` is legal iff its legal atom is true and its gate fluent (if any) is
    (compile._gate_legal); legal atoms of a role are contiguous, in runs of one gate."""
    s = legal_start[role]
    m = legal_start[role + 1] - s
    if m == 0:
        return 0
    l0 = legal_atom[s]
    n = 0
    k = 0
    while k < m:
        e = legal_gate[1, s + k]
        gt = legal_gate[0, s + k]
        if gt < 0 or w[gt] == 1:
            for j in range(k, e):
                if w[l0 + j] == 1:
                    out[n] = j
                    n += 1
        k = e
    return n


@njit(cache=True)
def legal_moves(g, vals, role, out):
    return _legal_list(g.legal_start, g.legal_atom, g.legal_gate, vals, role, out)


@njit(cache=True, inline="always")
def _legal_count(legal_start, legal_gate, cnt, nl, w, role):
    """How many moves ``role`` has, from the legal lists (as ``_legal_list`` decides: one test
    per gate run, not one per legal atom).  ``nl``: the number of legal atoms."""
    b = cnt.shape[0] - 4 * nl + 2
    s = legal_start[role]
    m = legal_start[role + 1] - s
    n = 0
    k = 0
    while k < m:
        gt = legal_gate[0, s + k]
        if gt < 0 or w[gt] == 1:
            n += cnt[b + 4 * (s + k)]
        k = legal_gate[1, s + k]
    return n


@njit(cache=True, inline="always")
def _legal_nth(legal_start, legal_gate, cnt, nl, w, role, i):
    """Move ``i`` (< ``_legal_count``) of ``role``, in the lists' order (not sorted)."""
    b = cnt.shape[0] - 4 * nl
    s = legal_start[role]
    k = 0
    while True:
        gt = legal_gate[0, s + k]
        if gt < 0 or w[gt] == 1:
            c = cnt[b + 4 * (s + k) + 2]
            if i < c:
                return ((cnt[b + 4 * (s + k + i) + 1] - b) >> 2) - s
            i -= c
        k = legal_gate[1, s + k]


@njit(cache=True)
def _legal_area(g, w):
    """The legal lists (see above) as their own view: entry 4 * k + i is ``E(k) + i`` (empty
    in a game compiled without them)."""
    cnt, scratch, stack, dirty = _views(g, w)
    return cnt[g.n_nodes:]


@njit(cache=True)
def goal_vector(g, vals, out):
    """Goal per role: the largest provable value, 0 when none (statemachine.goal_vector)."""
    settle_goals(g, vals)
    _read_goal_vector(g.goal_start, g.goal_atom, g.goal_value, vals, out)


@njit(cache=True, inline="always")
def _read_goal_vector(goal_start, goal_atom, goal_value, vals, out):
    """``goal_vector`` once the goal atoms are settled, from the arrays it reads (a playout
    loop calls this, not a function that takes the CompiledGame)."""
    for r in range(out.shape[0]):
        best = -1
        for k in range(goal_start[r], goal_start[r + 1]):
            if vals[goal_atom[k]] == 1 and goal_value[k] > best:
                best = goal_value[k]
        out[r] = best if best >= 0 else 0


# Moves on between steps, or not (``keep_moves``, picked per game by ``probe_step_mode``).
# A frame axiom ``next(f) <= true(f), does(r, m), ..`` holds for every unaffected fluent while
# a move is on and for none while no move is: with the moves turned off after each step, the
# next atoms of every unchanged fluent flip on and off again on every step (checkers: 72 of
# 368 events a step, and the helpers under them most of the rest).  A propnet that leaves
# the last moves on (ggplib does) pays only for what the new move changes; but where next
# atoms read the moves and the fluents together, the fluents' changes under the old move
# cost more (breakthrough's network as first compiled: 4.4x the events; with its move
# counts against the union, compile.encode_move_in, it keeps them on).  Either way the
# values read are the same:
# legal, terminal and goals never read moves, and the next atoms are read only after the
# joint move is on.  Kept moves are the does atoms in the scratch area's last entries, one
# per role (-1: none).

@njit(cache=True, inline="always")
def _push_joint(does_atom, legal_start, joint, w, stack, v, sp, cap):
    """The moves of ``joint`` set to ``v`` as events on the stack (moves not kept on);
    returns the stack size."""
    for r in range(joint.shape[0]):
        d = does_atom[legal_start[r] + joint[r]]
        if d >= 0:
            sp = _push_set(w, stack, d, v, sp, cap)
    return sp


@njit(cache=True, inline="always")
def _switch_moves(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, scratch, stack,
                  dirty, cap, ev, ed):
    """The moves of ``joint`` on, and the last step's moves that differ off (moves kept on
    between steps), as one batch: their edges move the counters first, and only the nodes
    whose value differs once all of them are applied become events (pushed on the stack).
    One at a time, a node counting the roles' moves across the roles (compile's
    ``encode_move_in``: "at least k roles have their move in U") would see one role's gain
    before the other's loss and flip, then flip back, with all its edges, each time the
    turn passes.  Returns (stack size, or -1 on overflow; the first recursive block made
    dirty, or the block count).  ``ev``/``ed``: None, or the counter build's per-node event
    and edge counts (``count_step``)."""
    top = scratch.shape[0] - 1
    nb = dirty.shape[0]
    first_dirty = nb
    sp = 0
    # The old moves first, then the new: the nodes the new moves flip are listed last, so
    # popped first (as when pushed one by one: a node gains the new move before it loses
    # the old one).
    for v in range(2):
        for r in range(joint.shape[0]):
            d = does_atom[legal_start[r] + joint[r]]
            if v == 0:
                a = np.int64(scratch[top - r])
                if a == d:   # the same move again: it stays on
                    continue
            else:
                a = d
                scratch[top - r] = d
            if a < 0 or w[a] == v:
                continue
            w[a] = v
            if ev is not None:
                ev[a] += 1
                ed[a] += out_start[a + 1] - out_start[a]
            for k in range(out_start[a], out_start[a + 1]):
                e = out_edge[k]
                t = e >> 2
                if e & 2:   # into a recursive component: recomputed by the caller
                    b = atom_block[t]
                    dirty[b] = 1
                    if b < first_dirty:
                        first_dirty = b
                    continue
                before = cnt[t] >= 0
                if (e & 1) != v:
                    cnt[t] += 1
                else:
                    cnt[t] -= 1
                if (cnt[t] >= 0) != before:
                    if sp >= cap:
                        return -1, first_dirty
                    stack[sp] = t
                    sp += 1
    # Keep the nodes whose value differs now (one that crossed twice is listed twice and
    # kept once: the first sets its value).
    n = 0
    for i in range(sp):
        t = stack[i]
        v = 1 if cnt[t] >= 0 else 0
        if w[t] != v:
            w[t] = v
            stack[n] = t * 2 + v
            n += 1
    return n, first_dirty


@njit(cache=True)
def _does_a(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, stack, dirty, cap, v,
            lists):
    """The moves of ``joint`` set to ``v``, propagated, where moves are not kept on; returns
    as ``_settle_a``.  (Apart from ``_does_kept``: one more array argument, with its atomic
    reference count, made the small games' steps 10% slower.)"""
    sp = _push_joint(does_atom, legal_start, joint, w, stack, v, 0, cap)
    return _settle_a(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, lists)


@njit(cache=True)
def _does_kept(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, scratch, stack,
               dirty, cap, lists):
    """``_does_a`` for moves kept on (``_switch_moves``)."""
    sp, first_dirty = _switch_moves(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt,
                                    scratch, stack, dirty, cap, None, None)
    f = _settle_a(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, lists)
    return first_dirty if 0 <= first_dirty < f else f


@njit(cache=True)
def next_state(g, vals, joint, out_state):
    """The state after ``joint`` (int32 move indices) into ``out_state``; ``vals`` is left
    in the current state."""
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    out_start, out_edge, atom_block = g.out_start, g.out_edge, g.atom_block
    if g.keep_moves:
        f = _does_kept(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge, atom_block, vals,
                       cnt, scratch, stack, dirty, cap, None)
    else:
        f = _does_a(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge, atom_block, vals,
                    cnt, stack, dirty, cap, 1, None)
    _finish(g, vals, f)
    for w in range(g.n_words):
        out_state[w] = 0
    nb = g.next_atom[0] if g.n_base > 0 else 0
    for i in range(g.n_base):
        if vals[nb + i] == 1:  # next atoms are contiguous (compile.py)
            out_state[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    if not g.keep_moves:
        _finish(g, vals, _does_a(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge,
                                 atom_block, vals, cnt, stack, dirty, cap, 0, None))


@njit(cache=True)
def read_with_moves(g, vals, joint, atoms, out):
    """The values of ``atoms`` with the moves of ``joint`` on, into ``out`` (uint8): GDL-II's
    percepts, which read the state and the joint move as next values do.  Logic that only
    percepts (or goals) read is left out of the steps (compile._finish_net's lazy part), so it
    is settled here first.  ``vals`` is left in the current state, as ``next_state`` leaves it."""
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    out_start, out_edge, atom_block = g.out_start, g.out_edge, g.atom_block
    if g.keep_moves:
        f = _does_kept(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge, atom_block, vals,
                       cnt, scratch, stack, dirty, cap, None)
    else:
        f = _does_a(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge, atom_block, vals,
                    cnt, stack, dirty, cap, 1, None)
    _finish(g, vals, f)
    settle_goals(g, vals)
    for k in range(atoms.shape[0]):
        out[k] = vals[atoms[k]]
    if not g.keep_moves:
        _finish(g, vals, _does_a(g.does_atom, g.legal_start, joint[:g.n_roles], out_start, out_edge,
                                 atom_block, vals, cnt, stack, dirty, cap, 0, None))


@njit(cache=True, inline="always")
def _push_changed(w, stack, scratch, next0, i0, i1, first, k, sp, cap):
    """Fluents ``i0 .. i1 - 1`` whose next value differs: pushed now, or listed in
    ``scratch`` from ``k`` on (those turning to ``first``, pushed last).  Returns (k, sp)."""
    for i in range(i0, i1):
        v = w[next0 + i]
        if v != w[i]:
            if v == first:
                scratch[k] = i
                k += 1
            else:
                sp = _push_set(w, stack, i, v, sp, cap)
    return k, sp


@njit(cache=True, inline="always")
def _push_next(n_base, next0, does_atom, legal_start, joint, w, scratch, stack, cap, mode):
    """With the moves on and settled: the fluents to their next values, and the moves off
    unless kept on (``mode`` bit 1, see ``_switch_moves``), as the first events of one
    propagation, the fluents turning to ``first`` (``mode`` bit 0) pushed last (popped
    first), the moves in between.  Returns the stack size."""
    # Setting a fluent before the propagation leaves every next atom as it is, so the next
    # values are read in the same pass.
    # Eight fluents at a time: only the words where some next value differs are read byte
    # by byte, in the same order as a plain scan (docs/benchmarks/engine-internals.md
    # section 8).
    first = mode & 1
    sp = 0
    k = 0
    n8 = n_base & ~7
    for q in range(0, n8, 8):
        if _u64_at(w, next0 + q) != _u64_at(w, q):
            k, sp = _push_changed(w, stack, scratch, next0, q, q + 8, first, k, sp, cap)
    k, sp = _push_changed(w, stack, scratch, next0, n8, n_base, first, k, sp, cap)
    if mode < 2:
        sp = _push_joint(does_atom, legal_start, joint, w, stack, 0, sp, cap)
    for j in range(k):
        sp = _push_set(w, stack, scratch[j], first, sp, cap)
    return sp


@njit(cache=True)
def _apply_next(n_base, next0, does_atom, legal_start, joint, out_start, out_edge, atom_block,
                w, cnt, scratch, stack, dirty, cap, lists):
    """With the moves on and settled: read the next values, then turn the moves off and
    the fluents to their next values in one propagation (``_push_next``).  Returns as
    ``_settle_a``.  (No CompiledGame argument and no calls that take one: the callee would
    then reference-count every array at entry.)"""
    sp = _push_next(n_base, next0, does_atom, legal_start, joint, w, scratch, stack, cap, w[w.shape[0] - 1])
    return _settle_a(out_start, out_edge, atom_block, w, cnt, stack, dirty, sp, cap, lists)


@njit(cache=True)
def advance(g, vals, joint):
    """Move the work buffer itself to the state after ``joint`` (no packing)."""
    h = hot(g, vals)
    f = step(h, joint[:g.n_roles])
    if f != h[H_NB]:
        step_finish(g, vals, h, joint[:g.n_roles], f)


# ------------------------------------------------------------------ the step of a playout loop
# A playout loop (``_playouts``, the search's playouts) takes ``h = hot(g, vals)`` once and
# then, per joint move: ``f = step(h, joint); if f != h[H_NB]: step_finish(g, vals, h, joint, f)``.
# ``step`` takes only the dozen arrays it needs: passing the CompiledGame to a function costs
# the atomic reference counting of all its arrays on every call, which was most of a step.

H_NB = 11       # index of the block count in ``hot``: what ``step`` returns when it is done


@njit(cache=True)
def hot(g, vals):
    """The arrays and numbers a playout step reads, as one tuple (see above)."""
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    return (g.does_atom, g.legal_start, g.out_start, g.out_edge, g.atom_block, vals, cnt, scratch,
            stack, dirty, cap, dirty.shape[0], g.n_base, g.next_atom[0] if g.n_base > 0 else 0,
            g.legal_atom, g.terminal_atom, g.legal_gate)


@njit(cache=True, inline="always")
def hot_borrowed(h):
    """``h`` (``hot``) with every array ``borrowed``: for a playout loop inside one compiled
    call whose arguments hold the game and the work buffer (the loop's steps then pay no
    atomic reference counting for them)."""
    return (borrowed(h[0]), borrowed(h[1]), borrowed(h[2]), borrowed(h[3]), borrowed(h[4]), borrowed(h[5]),
            borrowed(h[6]), borrowed(h[7]), borrowed(h[8]), borrowed(h[9]), h[10], h[11], h[12], h[13],
            borrowed(h[14]), h[15], borrowed(h[16]))


@njit(cache=True, inline="always")
def step(h, joint):
    """The work buffer to the state after ``joint``: the moves on, then next values in and
    the moves off.  Returns ``h[H_NB]`` when done; anything else is for ``step_finish``
    (a recursive component to recompute, or a stack overflow: rare)."""
    return _step(h, joint, None, None)


@njit(cache=True, inline="always")
def step_inlined(h, joint):
    """``step`` with its two halves inlined too: for the one call site of a playout loop.
    Random playouts 1.02-1.24x per CPU second (hex 0.91x): the calls made the runtime's
    reference-count calls and spilled what the loop held in registers. Inlined at every call
    site of the search it made breakthrough's search 17 % slower (code size), so the search
    inlines it in its playout loop only (docs/benchmarks/engine-internals.md, section 13)."""
    return _step(h, joint, None, True)


_does_kept_inlined = njit(inline="always")(_does_kept.py_func)
_does_a_inlined = njit(inline="always")(_does_a.py_func)
_apply_next_inlined = njit(inline="always")(_apply_next.py_func)


@njit(cache=True, inline="always")
def _step(h, joint, lists, inlined):
    """``step``, keeping the legal lists when ``lists`` is not None (``_playouts``), with
    its halves inlined when ``inlined`` is not None (``step_inlined``)."""
    does_atom, legal_start, out_start, out_edge, atom_block, w, cnt, scratch, stack, dirty, cap, nb, \
        n_base, next0 = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], \
        h[12], h[13]
    kept = w[w.shape[0] - 1] >> 1
    if inlined is not None:
        if kept:
            f = _does_kept_inlined(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt,
                                   scratch, stack, dirty, cap, lists)
        else:
            f = _does_a_inlined(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, stack,
                                dirty, cap, 1, lists)
    elif kept:
        f = _does_kept(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, scratch, stack,
                       dirty, cap, lists)
    else:
        f = _does_a(does_atom, legal_start, joint, out_start, out_edge, atom_block, w, cnt, stack, dirty,
                    cap, 1, lists)
    if f != nb:
        return -3 - f   # <= -2: the first half needs finishing before the second
    if inlined is not None:
        return _apply_next_inlined(n_base, next0, does_atom, legal_start, joint, out_start, out_edge,
                                   atom_block, w, cnt, scratch, stack, dirty, cap, lists)
    return _apply_next(n_base, next0, does_atom, legal_start, joint, out_start, out_edge, atom_block,
                       w, cnt, scratch, stack, dirty, cap, lists)


@njit(cache=True)
def step_finish(g, vals, h, joint, f):
    """The rare end of ``step`` (whose result was ``f``)."""
    if f <= -2:
        _finish(g, vals, -3 - f)
        does_atom, legal_start, out_start, out_edge, atom_block, w, cnt, scratch, stack, dirty, cap = \
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10]
        f = _apply_next(h[12], h[13], does_atom, legal_start, joint, out_start, out_edge, atom_block,
                        w, cnt, scratch, stack, dirty, cap, None)
        if f == h[H_NB]:
            return
    _finish(g, vals, f)


@njit(cache=True)
def load_into(h, state):
    """``load_state`` on a ``hot`` tuple; returns as ``step`` (finish with ``load_finish``)."""
    w, cnt, scratch, stack, dirty, cap, n_base = h[5], h[6], h[7], h[8], h[9], h[10], h[12]
    sp = _push_state(w, stack, scratch, state, n_base, cap)
    return _settle_a(h[2], h[3], h[4], w, cnt, stack, dirty, sp, cap, None)


@njit(cache=True)
def load_finish(g, vals, f):
    _finish(g, vals, f)


@njit(cache=True)
def pack_into(h, out_state):
    """``current_state`` on a ``hot`` tuple."""
    w, n_base = h[5], h[12]
    for k in range(out_state.shape[0]):
        out_state[k] = 0
    for i in range(n_base):
        if w[i] == 1:
            out_state[i >> 6] |= np.uint64(1) << np.uint64(i & 63)


@njit(cache=True, inline="always")
def legal_into(h, role, out):
    """``legal_moves`` on a ``hot`` tuple: the move indices of ``role`` into out[:n]."""
    return _legal_list(h[1], h[14], h[16], h[5], role, out)


@njit(cache=True, inline="always")
def terminal_in(h):
    t = h[15]
    return t >= 0 and h[5][t] == 1


@njit(cache=True)
def random_playout(g, state, vals, max_depth, out_goals):
    """Uniform random joint moves until terminal: the number of joint moves made, goals in
    ``out_goals``; -1 if ``max_depth`` was hit first, -2 if a role had no legal move.
    ``vals`` ends in the final state."""
    return _playouts(g, state, vals, max_depth, out_goals, 1, True)[1]


@njit(cache=True)
def random_playout_here(g, vals, max_depth, out_goals):
    """As random_playout, from the state ``vals`` is in."""
    return _playouts(g, g.init_state, vals, max_depth, out_goals, 1, False)[1]


@njit(cache=True)
def _playouts(g, state, vals, max_depth, out_goals, count, load):
    """``count`` random playouts from ``state`` (or, without ``load``, one from where
    ``vals`` is): (playouts done, depth of the last or its error code, total depth, goal
    sum)."""
    # the loop's buffers, held here while _playouts_run uses them borrowed
    joint = np.empty(g.n_roles, dtype=np.int32)
    legal = np.empty(max(1, int(g.role_nmoves.max())), dtype=np.int32)
    if g.legal_lists:
        return _playouts_run(g, state, vals, max_depth, out_goals, count, load, list_parts(g), 1, joint, legal)
    return _playouts_run(g, state, vals, max_depth, out_goals, count, load, None, None, joint, legal)


@njit(cache=True)
def _playouts_run(g, state, vals, max_depth, out_goals, count, load, edges, lists, joint, legal):
    """``_playouts``, picking moves from the legal lists when ``lists`` is not None (two
    versions compiled; ``edges``: then ``list_parts``).  Everything is unpacked once: array
    views and slices cost atomic reference counting, which dominated short playouts."""
    n_roles = g.n_roles
    # The game's arrays, the work buffer and the loop's buffers without their references
    # (``borrowed``): all are arguments, held by the caller for the whole loop.
    vals, state, out_goals = borrowed(vals), borrowed(state), borrowed(out_goals)
    joint, legal = borrowed(joint), borrowed(legal)
    legal_start, legal_atom, legal_gate = borrowed(g.legal_start), borrowed(g.legal_atom), borrowed(g.legal_gate)
    out_start, out_edge, atom_block = borrowed(g.out_start), borrowed(g.out_edge), borrowed(g.atom_block)
    n_base = g.n_base
    term = g.terminal_atom
    n_lazy = g.n_lazy_src
    goal_start, goal_atom, goal_value = borrowed(g.goal_start), borrowed(g.goal_atom), borrowed(g.goal_value)
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    nb = dirty.shape[0]
    h = hot_borrowed(hot(g, vals))
    hs = h
    plain_start, plain_edge = out_start, out_edge
    if lists is not None:   # the step walks the edges to the lists too
        out_start, out_edge = borrowed(edges[0]), borrowed(edges[1])
        hs = (h[0], h[1], out_start, out_edge, h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12],
              h[13], h[14], h[15], h[16])
    total = 0
    goal_sum = 0
    depth = 0
    if lists is not None and not load:   # vals may have moved on by other paths
        _legal_resync(legal_start, legal_gate, legal_atom, cnt, vals)
    for p in range(count):
        if load:
            sp = _push_state(vals, stack, scratch, state, n_base, cap)
            f = _settle_a(plain_start, plain_edge, atom_block, vals, cnt, stack, dirty, sp, cap, None)
            if f != nb:
                _finish(g, vals, f)
            if lists is not None:
                # anew, not kept through the load: in index order whatever state vals came
                # from, so a seed gives the same playout
                _legal_resync(legal_start, legal_gate, legal_atom, cnt, vals)
        depth = 0
        while True:
            if term >= 0 and vals[term] == 1:
                if n_lazy:   # the goal-only logic is settled first (goal_vector)
                    settle_goals(g, vals)
                _read_goal_vector(goal_start, goal_atom, goal_value, vals, out_goals)
                for r in range(n_roles):
                    goal_sum += out_goals[r]
                break
            if depth >= max_depth:
                return p, -1, total, goal_sum
            for r in range(n_roles):
                if lists is not None:
                    # the same choice in distribution as the scan, but not the move that
                    # ``legal_moves`` lists at the same index (the lists are unordered)
                    n = _legal_count(legal_start, legal_gate, cnt, legal_atom.shape[0], vals, r)
                    if n == 0:
                        return p, -2, total, goal_sum
                    joint[r] = _legal_nth(legal_start, legal_gate, cnt, legal_atom.shape[0], vals, r,
                                          np.random.randint(n))
                else:
                    n = _legal_list(legal_start, legal_atom, legal_gate, vals, r, legal)
                    if n == 0:
                        return p, -2, total, goal_sum
                    joint[r] = legal[np.random.randint(n)]
            f = _step(hs, joint, lists, True)
            if f != nb:
                step_finish(g, vals, h, joint, f)
                if lists is not None:
                    _legal_resync(legal_start, legal_gate, legal_atom, cnt, vals)
            depth += 1
        total += depth
    return count, depth, total, goal_sum


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True)
def playouts_for(g, state, count, max_depth):
    """Benchmark helper: ``count`` playouts; returns (playouts, total depth, goal sum)."""
    vals = new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    done, last, total, goal_sum = _playouts(g, state, vals, max_depth, goals, count, True)
    if last < 0:
        return -1, total, goal_sum
    return count, total, goal_sum


# ------------------------------------------------------------------ compile-time helpers

@njit(cache=True)
def count_drain(out_start, out_edge, w, cnt, stack, sp, ev, ed):
    """``_drain`` for networks without recursive blocks, counting events (``ev``) and edges
    walked (``ed``) per node: the work of a propagation (``count_step``)."""
    while sp > 0:
        sp -= 1
        item = stack[sp]
        a = item >> 1
        v = item & 1
        ev[a] += 1
        ed[a] += out_start[a + 1] - out_start[a]
        for k in range(out_start[a], out_start[a + 1]):
            e = out_edge[k]
            t = e >> 2
            if (e & 1) != v:
                cnt[t] += 1
                if cnt[t] == 0:
                    w[t] = 1
                    stack[sp] = t * 2 + 1
                    sp += 1
            else:
                cnt[t] -= 1
                if cnt[t] == -1:
                    w[t] = 0
                    stack[sp] = t * 2
                    sp += 1


@njit(cache=True)
def count_step(g, vals, joint, ev, ed, flips):
    """One step of ``joint`` as ``step`` makes it in the mode of ``vals``' last byte (the
    moves on; then the fluents to their next values, and the moves off unless kept on),
    counting the events and edges of both propagations (``count_drain``) and each fluent's
    changes (``flips``): the counter build of ``probe_step_mode`` and
    scripts/profile_playout.py (no recursive blocks)."""
    cnt, scratch, stack, dirty = _views(g, vals)
    o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
    next0 = g.next_atom[0] if g.n_base > 0 else 0
    joint = joint[:g.n_roles]
    if vals[vals.shape[0] - 1] >> 1:
        sp, _ = _switch_moves(g.does_atom, g.legal_start, joint, g.out_start, g.out_edge, g.atom_block, vals,
                              cnt, scratch, stack, dirty, cap, ev, ed)
    else:
        sp = _push_joint(g.does_atom, g.legal_start, joint, vals, stack, 1, 0, cap)
    count_drain(g.out_start, g.out_edge, vals, cnt, stack, sp, ev, ed)
    for i in range(g.n_base):
        if vals[next0 + i] != vals[i]:
            flips[i] += 1
    sp = _push_next(g.n_base, next0, g.does_atom, g.legal_start, joint, vals, scratch, stack, cap,
                    vals[vals.shape[0] - 1])
    count_drain(g.out_start, g.out_edge, vals, cnt, stack, sp, ev, ed)


@njit(cache=True)
def probe_step_mode(g, max_steps):
    """How this network's steps walk the fewest events and edges, as (bit 0) the fluents
    turning on popped first or not (``_push_next``), and (bit 1) the moves kept on between
    steps or not (``_switch_moves``), counted on the steps of seeded random playouts
    (``pick_step_mode``: keeping the moves on costs a fixed amount a step more).  Its own
    random stream (the engine's is not touched); games with recursive components (which this
    count does not follow) get 1: moves off, ons first."""
    return pick_step_mode(probe_step_work(g, max_steps))


# What keeping the moves on costs a step beyond the events and edges it walks, in the
# same units (``_switch_moves``' batch, a call more): ticTacToe's steps, with a quarter less
# work kept on, ran 25% slower, about 23 units a step (nineBoardTicTacToe: 0.5% less work,
# 10% slower, with the earlier path).
KEEP_STEP_COST = 25


@njit(cache=True)
def step_mode_cost(work, mode):
    """The probe's cost of a step mode: its work, plus ``KEEP_STEP_COST`` a step if the
    moves stay on."""
    return work[mode] + (KEEP_STEP_COST * work[4] if mode >= 2 else 0)


@njit(cache=True)
def pick_step_mode(work):
    """``probe_step_mode``'s choice from the work of each mode (``probe_step_work``): the
    cheapest (``step_mode_cost``), the fluents turning on first on a tie."""
    if work[0] < 0:
        return 1
    best = 1
    for mode in (0, 3, 2):
        if step_mode_cost(work, mode) < step_mode_cost(work, best):
            best = mode
    return best


@njit(cache=True)
def probe_step_work(g, max_steps):
    """Events plus edges walked by ``max_steps`` steps of seeded random playouts in each
    step mode (index = mode), with the loads of their initial state, then (index 4) the
    steps; all -1 for a game with recursive components."""
    work = np.full(5, -1, dtype=np.int64)
    if g.blk_start.shape[0] and g.blk_loop.max() == 1:
        return work
    ev = np.zeros(g.n_nodes, dtype=np.int64)
    ed = np.zeros(g.n_nodes, dtype=np.int64)
    flips = np.zeros(g.n_base, dtype=np.int64)
    joint = np.empty(g.n_roles, dtype=np.int32)
    legal = np.empty(max(1, int(g.role_nmoves.max())), dtype=np.int32)
    for mode in range(4):
        vals = new_vals(g)
        vals[vals.shape[0] - 1] = mode
        ev[:] = 0
        ed[:] = 0
        x = np.uint64(88172645463325252)
        steps = 0
        cnt, scratch, stack, dirty = _views(g, vals)
        o_cnt, o_scratch, o_stack, cap, o_dirty = _layout(g)
        while steps < max_steps:
            # The loads count too: with the moves kept on, a load's fluent changes reach the
            # nodes that read the moves (ticTacToe: its playouts are 8 steps, and keeping the
            # moves on, which saved a quarter of the steps' work, made them 30% slower).
            sp = _push_state(vals, stack, scratch, g.init_state, g.n_base, cap)
            count_drain(g.out_start, g.out_edge, vals, cnt, stack, sp, ev, ed)
            depth = 0
            while depth < 1000 and steps < max_steps:
                if g.terminal_atom >= 0 and vals[g.terminal_atom] == 1:
                    break
                stuck = False
                for r in range(g.n_roles):
                    n = _legal_list(g.legal_start, g.legal_atom, g.legal_gate, vals, r, legal)
                    if n == 0:
                        stuck = True
                        break
                    x ^= x << np.uint64(13)
                    x ^= x >> np.uint64(7)
                    x ^= x << np.uint64(17)
                    joint[r] = legal[int(x % np.uint64(n))]
                if stuck:
                    break
                count_step(g, vals, joint, ev, ed, flips)
                depth += 1
                steps += 1
            if depth == 0:
                break
        work[mode] = ev.sum() + ed.sum()
        work[4] = steps
    return work


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
def reach_back(n_nodes, src, dst_node, seeds):
    """1 for the nodes from which a node of ``seeds`` can be reached along the edges
    ``src[i] -> dst_node[i]`` (seeds included), else 0."""
    m = src.shape[0]
    ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    for i in range(m):
        ptr[dst_node[i] + 1] += 1
    for i in range(n_nodes):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    pred = np.empty(m, dtype=np.int64)
    for i in range(m):
        pred[fill[dst_node[i]]] = src[i]
        fill[dst_node[i]] += 1
    seen = np.zeros(n_nodes, dtype=np.uint8)
    todo = np.empty(n_nodes, dtype=np.int64)
    sp = 0
    for x in seeds:
        if seen[x] == 0:
            seen[x] = 1
            todo[sp] = x
            sp += 1
    while sp > 0:
        sp -= 1
        x = todo[sp]
        for j in range(ptr[x], ptr[x + 1]):
            y = pred[j]
            if seen[y] == 0:
                seen[y] = 1
                todo[sp] = y
                sp += 1
    return seen


@njit(cache=True)
def topo_order(n_nodes, src, dst_node, group, n_groups):
    """Kahn's order of the groups of a DAG given by node edges (``group[node]``; edges
    inside a group are ignored); -1 in the result if a cycle remained (an internal error)."""
    indeg = np.zeros(n_groups, dtype=np.int64)
    m = src.shape[0]
    gs = np.empty(m, dtype=np.int64)
    gd = np.empty(m, dtype=np.int64)
    for i in range(m):
        gs[i] = group[src[i]]
        gd[i] = group[dst_node[i]]
        if gs[i] != gd[i]:
            indeg[gd[i]] += 1
    order = np.argsort(gs, kind="mergesort")
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(m):
        ptr[gs[i] + 1] += 1
    for i in range(n_groups):
        ptr[i + 1] += ptr[i]
    queue = np.empty(n_groups, dtype=np.int64)
    qh = 0
    qt = 0
    for i in range(n_groups):
        if indeg[i] == 0:
            queue[qt] = i
            qt += 1
    while qh < qt:
        x = queue[qh]
        qh += 1
        for j in range(ptr[x], ptr[x + 1]):
            y = gd[order[j]]
            if y != x:
                indeg[y] -= 1
                if indeg[y] == 0:
                    queue[qt] = y
                    qt += 1
    if qt < n_groups:
        return queue[:0] - 1
    return queue


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
