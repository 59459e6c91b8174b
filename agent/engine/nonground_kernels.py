"""The non-ground evaluator on arrays, in numba: the flat rules (``gdl.flatten``), every
value a symbol id, every relation a set of int32 rows.

A query is ``solve(P, W, rel, call)``: the answers of relation ``rel`` for the call values
``call`` (FREE where the argument is a variable), by tabled top-down evaluation (every call
tabled, as ggp-base's prover does), its recursion turned into an explicit stack of contexts
(one per table being evaluated, with the rule and body position it stands at), so that a
deep recursion is a bigger array, not a crashed process:

- a table is the answers of one call (relation, call values); a context evaluates the rules
  of its table one at a time, each body literal by literal with backtracking: a positive
  literal of a derived relation reads the table of its call (evaluating it first, in a new
  context, when it is new), one of a static relation or of ``true`` reads an index of its rows
  by the positions the call binds, one of ``does`` the joint move's rows;
- cycles through tables complete by iteration (linear tabling): a context that reads a
  table still being evaluated lowers its ``low`` mark, and the group's leader evaluates again
  until the group gains no answer (negation only meets complete tables: GDL is stratified);
- every table, answer and index row lives in bump-allocated pools with chained hash tables;
  a state change empties them, a ``next`` query's own tables are rolled back after it (they
  read ``does``). A full pool is an error code: the caller grows the arrays and asks again.

Arrays: ``P`` (the program, fixed) and ``W`` (the work space) are tuples built by
``agent.engine.nonground``; the index constants below name their fields.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from .kernels import borrowed

Program = namedtuple("Program", (
    "rel_kind rel_width rel_rule_start rel_rule_end rule_nvars rule_head_start rule_body_start "
    "rule_body_end lit_kind lit_rel lit_code_start codes fact_vals rel_fact_start rel_fact_count "
    "imap_key imap_val ix_head ix_head_start ix_nslots ix_row ix_next rel_first lit_alt lit_need"))

Work = namedtuple("Work", (
    "reg dims root callbuf rowbuf tab_rel tab_key tab_state tab_dfn tab_low tab_head tab_tail tab_first "
    "tab_count tab_slot tab_hnext tkeys th_head ans_tab ans_start ans_next ans_slot ans_hnext "
    "ans_vals ah_head waiting ctx_tab ctx_rule ctx_phase ctx_level ctx_added ctx_outer_looped "
    "ctx_vars ctx_cur ctx_end ctx_src ctx_sub ctx_bound st_vals st_rel_start st_rel_count "
    "six_head six_head_start six_nslots six_row six_next does_rel does_start does_vals reg_does"))


FREE = -1
COMPLETE, ACTIVE, WAITING, STALE = 0, 1, 2, 3
K_RULES, K_FACTS, K_TRUE, K_DOES = 0, 1, 2, 3
L_POS, L_NEG, L_DIST, L_EQ = 0, 1, 2, 3
OK, E_TABLES, E_ANSWERS, E_DEPTH, E_INFERENCES, E_UNSAFE, E_NEGATION = 0, 1, 2, 3, 4, 5, 6

# registers (W.reg)
R_NTAB, R_NKEY, R_NANS, R_NVAL, R_DFN, R_ADDED, R_LOOPED, R_INF, R_INF_LIMIT, R_NWAIT = range(10)
R_MARK, R_DIRTY = 10, 11     # tables below R_MARK are kept by a rollback; one gained an answer
R_ROWS = 12                  # rows read (a work count for profiles)
N_REGS = 13

# context phases
PH_RULE, PH_ENTER, PH_RESUME, PH_RETRY, PH_SCAN = 0, 1, 2, 3, 4
# row sources of a body level
S_NONE, S_TABLE, S_CHAIN, S_RANGE, S_DOES = 0, 1, 2, 3, 4


@njit(cache=True, inline="always")
def _mix(h, v):
    h = (h ^ np.uint64(v & 0xFFFFFFFF)) * np.uint64(0x9E3779B97F4A7C15)
    return h ^ (h >> np.uint64(31))


@njit(cache=True, inline="always")
def _hash_vals(seed, vals, start, n):
    """A hash of ``seed`` and ``vals[start:start + n]`` (non-negative int64)."""
    h = _mix(np.uint64(0x2545F4914F6CDD1D), seed)
    for j in range(n):
        h = _mix(h, vals[start + j])
    return np.int64(h >> np.uint64(2))


@njit(cache=True)
def build_index(rows, row_start, width, nrows, mask, heads, head_start, nslots, ix_row, ix_next, e0):
    """Chain the ``nrows`` rows of ``rows`` (from ``row_start``) by the values at the positions
    of ``mask``: ``heads[head_start + slot]`` -> first entry, entries from ``e0``. Returns the
    next free entry."""
    for s in range(nslots):
        heads[head_start + s] = -1
    e = e0
    key = np.empty(width, np.int32)
    for r in range(nrows):
        k = 0
        base = row_start + r * width
        for j in range(width):
            if (mask >> j) & 1:
                key[k] = rows[base + j]
                k += 1
        slot = _hash_vals(mask, key, 0, k) & (nslots - 1)
        ix_row[e] = r
        ix_next[e] = heads[head_start + slot]
        heads[head_start + slot] = e
        e += 1
    return e


@njit(cache=True)
def imap_slot(rel, mask, n):
    """The first slot of (relation, mask) in the index map of size ``n`` (a power of 2)."""
    return np.int64(_mix(_mix(np.uint64(7), rel), mask) >> np.uint64(2)) & (n - 1)


@njit(cache=True, inline="always")
def _find_index(imap_key, imap_val, rel, mask):
    n = imap_key.shape[0]
    k = rel * 4294967296 + mask
    s = imap_slot(rel, mask, n)
    while imap_val[s] >= 0:
        if imap_key[s] == k:
            return imap_val[s]
        s = (s + 1) & (n - 1)
    return -1


@njit(cache=True, inline="always")
def _same(a, sa, b, sb, n):
    """a[sa:sa + n] == b[sb:sb + n]"""
    for j in range(n):
        if a[sa + j] != b[sb + j]:
            return False
    return True


@njit(cache=True, inline="always")
def _unbind(vars_, vbase, mask):
    """Free the variables whose bits are set in ``mask``."""
    if mask != 0:
        for k in range(64):
            if (mask >> k) & 1:
                vars_[vbase + k] = FREE


@njit(cache=True, inline="always")
def _table_of(P, W, rel, call, cstart):
    """The table of (rel, call values), created (STALE: to evaluate) when new; -1: full."""
    width = P.rel_width[rel]
    reg = W.reg
    nslots = W.th_head.shape[0]
    h = _hash_vals(rel, call, cstart, width)
    slot = h & (nslots - 1)
    t = W.th_head[slot]
    while t >= 0:
        if W.tab_rel[t] == rel and _same(W.tkeys, W.tab_key[t], call, cstart, width):
            return t
        t = W.tab_hnext[t]
    t = reg[R_NTAB]
    if t >= W.tab_rel.shape[0] or reg[R_NKEY] + width > W.tkeys.shape[0]:
        return -1
    reg[R_NTAB] = t + 1
    W.tab_rel[t] = rel
    ks = reg[R_NKEY]
    reg[R_NKEY] = ks + width
    first = P.rel_first[rel]
    ground = 1
    for j in range(width):
        v = call[cstart + j]
        W.tkeys[ks + j] = v
        if v == FREE:
            ground = 0
    W.tab_key[t] = ks
    W.tab_first[t] = first | ground   # complete at the first answer (``solve``)
    W.tab_state[t] = STALE
    W.tab_head[t] = -1
    W.tab_tail[t] = -1
    W.tab_count[t] = 0
    W.tab_slot[t] = slot
    W.tab_hnext[t] = W.th_head[slot]
    W.th_head[slot] = t
    return t


@njit(cache=True, inline="always")
def _add_answer(W, t, vals, width):
    """Add an answer row to table t unless it has it: 1 added, 0 known, -1 full."""
    reg = W.reg
    nslots = W.ah_head.shape[0]
    slot = _hash_vals(t, vals, 0, width) & (nslots - 1)
    a = W.ah_head[slot]
    while a >= 0:
        if W.ans_tab[a] == t and _same(W.ans_vals, W.ans_start[a], vals, 0, width):
            return 0
        a = W.ans_hnext[a]
    a = reg[R_NANS]
    if a >= W.ans_tab.shape[0] or reg[R_NVAL] + width > W.ans_vals.shape[0]:
        return -1
    reg[R_NANS] = a + 1
    s = reg[R_NVAL]
    reg[R_NVAL] = s + width
    for j in range(width):
        W.ans_vals[s + j] = vals[j]
    W.ans_start[a] = s
    W.ans_tab[a] = t
    W.ans_next[a] = -1
    W.ans_slot[a] = slot
    W.ans_hnext[a] = W.ah_head[slot]
    W.ah_head[slot] = a
    if W.tab_tail[t] >= 0:
        W.ans_next[W.tab_tail[t]] = a
    else:
        W.tab_head[t] = a
    W.tab_tail[t] = a
    W.tab_count[t] += 1
    reg[R_ADDED] += 1
    if t < reg[R_MARK]:
        reg[R_DIRTY] = 1
    return 1


@njit(cache=True)
def rollback(W, ntab, nkey, nans, nval):
    """Drop every table and answer made after the marks (a ``next`` query's), newest first:
    each was pushed on the front of its hash chain, so unlinking restores the chains. An
    older table that gained answers meanwhile (``R_DIRTY``) cannot be rolled back: the
    caller resets everything instead."""
    reg = W.reg
    for a in range(reg[R_NANS] - 1, nans - 1, -1):
        W.ah_head[W.ans_slot[a]] = W.ans_hnext[a]
    for t in range(reg[R_NTAB] - 1, ntab - 1, -1):
        W.th_head[W.tab_slot[t]] = W.tab_hnext[t]
    reg[R_NTAB] = ntab
    reg[R_NKEY] = nkey
    reg[R_NANS] = nans
    reg[R_NVAL] = nval
    reg[R_MARK] = 0


@njit(cache=True)
def reset(W):
    """Empty every table (a new state)."""
    reg = W.reg
    for a in range(reg[R_NANS]):
        W.ah_head[W.ans_slot[a]] = -1
    for t in range(reg[R_NTAB]):
        W.th_head[W.tab_slot[t]] = -1
    reg[R_NTAB] = 0
    reg[R_NKEY] = 0
    reg[R_NANS] = 0
    reg[R_NVAL] = 0
    reg[R_NWAIT] = 0
    reg[R_MARK] = 0
    reg[R_DIRTY] = 0


@njit(cache=True, inline="always")
def _row_values(P, W, kind, rel, row):
    """(array, start) of row ``row`` of a fact relation."""
    if kind == K_FACTS:
        return P.fact_vals, P.rel_fact_start[rel] + row * P.rel_width[rel]
    return W.st_vals, W.st_rel_start[rel] + row * P.rel_width[rel]


@njit(cache=True, inline="always")
def _match(codes, cstart, width, vals, vstart, vars_, vbase):
    """Bind the literal's unbound variables to the row: the mask of the variables bound here
    (bit v), or -1 on a clash (then nothing stays bound)."""
    bound = 0
    for j in range(width):
        c = codes[cstart + j]
        v = vals[vstart + j]
        if c >= 0:
            if c != v:
                _unbind(vars_, vbase, bound)
                return -1
        else:
            x = -c - 1
            cur = vars_[vbase + x]
            if cur == FREE:
                vars_[vbase + x] = v
                bound |= 1 << x
            elif cur != v:
                _unbind(vars_, vbase, bound)
                return -1
    return bound


@njit(cache=True, inline="always")
def _borrowed_program(P):
    return Program(
        borrowed(P.rel_kind),
        borrowed(P.rel_width),
        borrowed(P.rel_rule_start),
        borrowed(P.rel_rule_end),
        borrowed(P.rule_nvars),
        borrowed(P.rule_head_start),
        borrowed(P.rule_body_start),
        borrowed(P.rule_body_end),
        borrowed(P.lit_kind),
        borrowed(P.lit_rel),
        borrowed(P.lit_code_start),
        borrowed(P.codes),
        borrowed(P.fact_vals),
        borrowed(P.rel_fact_start),
        borrowed(P.rel_fact_count),
        borrowed(P.imap_key),
        borrowed(P.imap_val),
        borrowed(P.ix_head),
        borrowed(P.ix_head_start),
        borrowed(P.ix_nslots),
        borrowed(P.ix_row),
        borrowed(P.ix_next),
        borrowed(P.rel_first),
        borrowed(P.lit_alt),
        borrowed(P.lit_need))


@njit(cache=True, inline="always")
def _borrowed_work(W):
    return Work(
        borrowed(W.reg),
        borrowed(W.dims),
        borrowed(W.root),
        borrowed(W.callbuf),
        borrowed(W.rowbuf),
        borrowed(W.tab_rel),
        borrowed(W.tab_key),
        borrowed(W.tab_state),
        borrowed(W.tab_dfn),
        borrowed(W.tab_low),
        borrowed(W.tab_head),
        borrowed(W.tab_tail),
        borrowed(W.tab_first),
        borrowed(W.tab_count),
        borrowed(W.tab_slot),
        borrowed(W.tab_hnext),
        borrowed(W.tkeys),
        borrowed(W.th_head),
        borrowed(W.ans_tab),
        borrowed(W.ans_start),
        borrowed(W.ans_next),
        borrowed(W.ans_slot),
        borrowed(W.ans_hnext),
        borrowed(W.ans_vals),
        borrowed(W.ah_head),
        borrowed(W.waiting),
        borrowed(W.ctx_tab),
        borrowed(W.ctx_rule),
        borrowed(W.ctx_phase),
        borrowed(W.ctx_level),
        borrowed(W.ctx_added),
        borrowed(W.ctx_outer_looped),
        borrowed(W.ctx_vars),
        borrowed(W.ctx_cur),
        borrowed(W.ctx_end),
        borrowed(W.ctx_src),
        borrowed(W.ctx_sub),
        borrowed(W.ctx_bound),
        borrowed(W.st_vals),
        borrowed(W.st_rel_start),
        borrowed(W.st_rel_count),
        borrowed(W.six_head),
        borrowed(W.six_head_start),
        borrowed(W.six_nslots),
        borrowed(W.six_row),
        borrowed(W.six_next),
        borrowed(W.does_rel),
        borrowed(W.does_start),
        borrowed(W.does_vals),
        borrowed(W.reg_does))


@njit(cache=True)
def solve(P, W, rel, call):
    """Evaluate the table of (rel, call); returns (status, table)."""
    # every array borrowed: numba takes no reference on each read of a field (see
    # kernels.borrowed); P and W are held by the caller for the whole call
    P = _borrowed_program(P)
    W = _borrowed_work(W)
    reg = W.reg
    t = _table_of(P, W, rel, call, 0)
    if t < 0:
        return E_TABLES, -1
    if W.tab_state[t] == COMPLETE:
        return OK, t
    d = 0
    _push(P, W, d, t)
    maxd = W.dims[0]
    maxv = W.dims[1]
    maxb = W.dims[2]
    callbuf = W.callbuf
    rowbuf = W.rowbuf
    while d >= 0:
        t = W.ctx_tab[d]
        ph = W.ctx_phase[d]
        trel = W.tab_rel[t]
        vb = d * maxv
        if ph == PH_RULE:
            r = W.ctx_rule[d]
            if r >= P.rel_rule_end[trel]:
                # every rule done: iterate (a leader that read unfinished tables and gained
                # answers), or finish the table
                if (W.tab_low[t] == W.tab_dfn[t] and reg[R_LOOPED] != 0
                        and reg[R_ADDED] != W.ctx_added[d]):
                    while reg[R_NWAIT] > 0 and W.tab_dfn[W.waiting[reg[R_NWAIT] - 1]] > W.tab_dfn[t]:
                        W.tab_state[W.waiting[reg[R_NWAIT] - 1]] = STALE
                        reg[R_NWAIT] -= 1
                    W.ctx_rule[d] = P.rel_rule_start[trel]
                    W.ctx_added[d] = reg[R_ADDED]
                    reg[R_LOOPED] = 0
                    continue
                if W.tab_low[t] < W.tab_dfn[t]:
                    W.tab_state[t] = WAITING
                    W.waiting[reg[R_NWAIT]] = t
                    reg[R_NWAIT] += 1
                    reg[R_LOOPED] = 1
                    if d > 0:
                        c = W.ctx_tab[d - 1]
                        if W.tab_low[t] < W.tab_low[c]:
                            W.tab_low[c] = W.tab_low[t]
                else:
                    while reg[R_NWAIT] > 0 and W.tab_dfn[W.waiting[reg[R_NWAIT] - 1]] > W.tab_dfn[t]:
                        W.tab_state[W.waiting[reg[R_NWAIT] - 1]] = COMPLETE
                        reg[R_NWAIT] -= 1
                    W.tab_state[t] = COMPLETE
                    reg[R_LOOPED] = W.ctx_outer_looped[d]
                d = _pop(W, d)
                continue
            # start rule r: bind the head to the call
            for v in range(P.rule_nvars[r]):
                W.ctx_vars[vb + v] = FREE
            hs = P.rule_head_start[r]
            ks = W.tab_key[t]
            ok = True
            for j in range(P.rel_width[trel]):
                kv = W.tkeys[ks + j]
                if kv == FREE:
                    continue
                c = P.codes[hs + j]
                if c >= 0:
                    if c != kv:
                        ok = False
                        break
                else:
                    x = -c - 1
                    cur = W.ctx_vars[vb + x]
                    if cur == FREE:
                        W.ctx_vars[vb + x] = kv
                    elif cur != kv:
                        ok = False
                        break
            if not ok:
                W.ctx_rule[d] = r + 1
                continue
            W.ctx_level[d] = 0
            W.ctx_phase[d] = PH_ENTER
            continue

        r = W.ctx_rule[d]
        i = W.ctx_level[d]
        nbody = P.rule_body_end[r] - P.rule_body_start[r]
        li = d * maxb + i
        if ph == PH_ENTER:
            reg[R_INF] += 1
            if reg[R_INF] > reg[R_INF_LIMIT]:
                return E_INFERENCES, -1
            if i == nbody:
                # an answer: the head under the bindings
                hs = P.rule_head_start[r]
                w = P.rel_width[trel]
                for j in range(w):
                    c = P.codes[hs + j]
                    if c >= 0:
                        rowbuf[j] = c
                    else:
                        x = W.ctx_vars[vb - c - 1]
                        if x == FREE:
                            return E_UNSAFE, -1
                        rowbuf[j] = x
                added = _add_answer(W, t, rowbuf, w)
                if added < 0:
                    return E_ANSWERS, -1
                if (added > 0 and W.tab_first[t] != 0 and W.tab_low[t] == W.tab_dfn[t]
                        and (reg[R_NWAIT] == 0 or W.tab_dfn[W.waiting[reg[R_NWAIT] - 1]] < W.tab_dfn[t])):
                    # complete at the first answer: a call with every argument bound has no
                    # other, an existence relation's reader needs no other; only when no
                    # table of its evaluation still waits for a fixpoint (an answer found is
                    # true whatever the iteration would add)
                    W.tab_state[t] = COMPLETE
                    reg[R_LOOPED] = W.ctx_outer_looped[d]
                    d = _pop(W, d)
                    continue
                _backtrack(W, d, i)
                continue
            lit = P.rule_body_start[r] + i
            kind = P.lit_kind[lit]
            cs = P.lit_code_start[lit]
            W.ctx_bound[li] = 0
            if kind == L_DIST or kind == L_EQ:
                a = P.codes[cs]
                b = P.codes[cs + 1]
                va = a if a >= 0 else W.ctx_vars[vb - a - 1]
                vb2 = b if b >= 0 else W.ctx_vars[vb - b - 1]
                if va == FREE or vb2 == FREE:
                    return E_UNSAFE, -1
                if (va != vb2) == (kind == L_DIST):
                    W.ctx_src[li] = S_NONE
                    W.ctx_level[d] = i + 1
                else:
                    _backtrack(W, d, i)
                continue
            lrel = P.lit_rel[lit]
            width = P.rel_width[lrel]
            rk = P.rel_kind[lrel]
            mask = 0
            for j in range(width):
                c = P.codes[cs + j]
                v = c if c >= 0 else W.ctx_vars[vb - c - 1]
                callbuf[j] = v
                if v != FREE:
                    mask |= 1 << j
            if kind == L_NEG and mask != (1 << width) - 1:
                return E_UNSAFE, -1
            if rk == K_RULES:
                if P.lit_alt[lit] >= 0 and (mask & P.lit_need[lit]) == P.lit_need[lit]:
                    lrel = P.lit_alt[lit]    # one answer is all this literal needs
                u = _table_of(P, W, lrel, callbuf, 0)
                if u < 0:
                    return E_TABLES, -1
                W.ctx_sub[li] = u
                st = W.tab_state[u]
                if st == STALE:
                    if d + 1 >= maxd:
                        return E_DEPTH, -1
                    W.ctx_phase[d] = PH_RESUME
                    d += 1
                    _push(P, W, d, u)
                    continue
                if st != COMPLETE:
                    if kind == L_NEG:
                        return E_NEGATION, -1
                    reg[R_LOOPED] = 1
                    if W.tab_low[u] < W.tab_low[t]:
                        W.tab_low[t] = W.tab_low[u]
                W.ctx_phase[d] = PH_RESUME
                continue
            if rk == K_DOES:
                W.ctx_src[li] = S_DOES
                W.ctx_cur[li] = 0
                W.ctx_end[li] = W.reg_does[0]
            else:
                ix = -1
                if mask != 0:
                    ix = _find_index(P.imap_key, P.imap_val, lrel, mask)
                if ix < 0:
                    W.ctx_src[li] = S_RANGE
                    W.ctx_cur[li] = 0
                    W.ctx_end[li] = P.rel_fact_count[lrel] if rk == K_FACTS else W.st_rel_count[lrel]
                else:
                    k = 0
                    for j in range(width):
                        if (mask >> j) & 1:
                            rowbuf[k] = callbuf[j]
                            k += 1
                    if rk == K_FACTS:
                        slot = _hash_vals(mask, rowbuf, 0, k) & (P.ix_nslots[ix] - 1)
                        W.ctx_cur[li] = P.ix_head[P.ix_head_start[ix] + slot]
                    else:
                        slot = _hash_vals(mask, rowbuf, 0, k) & (W.six_nslots[ix] - 1)
                        W.ctx_cur[li] = W.six_head[W.six_head_start[ix] + slot]
                    W.ctx_src[li] = S_CHAIN
                    W.ctx_end[li] = ix
            if kind == L_NEG:
                if _next_row(P, W, d, r, i, li, vb, False) >= 0:
                    _backtrack(W, d, i)
                else:
                    W.ctx_src[li] = S_NONE
                    W.ctx_level[d] = i + 1
                continue
            W.ctx_phase[d] = PH_SCAN
            continue
        if ph == PH_RESUME:
            # a callee finished, or a table to read: its answers are the source
            lit = P.rule_body_start[r] + i
            u = W.ctx_sub[li]
            if P.lit_kind[lit] == L_NEG:
                if W.tab_state[u] != COMPLETE:
                    return E_NEGATION, -1
                if W.tab_count[u] > 0:
                    _backtrack(W, d, i)
                else:
                    W.ctx_src[li] = S_NONE
                    W.ctx_phase[d] = PH_ENTER
                    W.ctx_level[d] = i + 1
                continue
            W.ctx_src[li] = S_TABLE
            W.ctx_cur[li] = W.tab_head[u]
            W.ctx_phase[d] = PH_SCAN
            continue
        if ph == PH_RETRY:
            _unbind(W.ctx_vars, vb, W.ctx_bound[li])
            W.ctx_bound[li] = 0
            if W.ctx_src[li] == S_NONE:
                _backtrack(W, d, i)
                continue
            W.ctx_phase[d] = PH_SCAN
            continue
        # PH_SCAN: the next row of the source that matches
        reg[R_INF] += 1
        if _next_row(P, W, d, r, i, li, vb, True) >= 0:
            W.ctx_phase[d] = PH_ENTER
            W.ctx_level[d] = i + 1
        else:
            _backtrack(W, d, i)
    return OK, W.root[0]


@njit(cache=True, inline="always")
def _push(P, W, d, t):
    reg = W.reg
    if d == 0:
        W.root[0] = t
    reg[R_DFN] += 1
    W.tab_dfn[t] = reg[R_DFN]
    W.tab_low[t] = reg[R_DFN]
    W.tab_state[t] = ACTIVE
    W.ctx_tab[d] = t
    W.ctx_rule[d] = P.rel_rule_start[W.tab_rel[t]]
    W.ctx_phase[d] = PH_RULE
    W.ctx_added[d] = reg[R_ADDED]
    W.ctx_outer_looped[d] = reg[R_LOOPED]
    reg[R_LOOPED] = 0


@njit(cache=True, inline="always")
def _pop(W, d):
    """Leave context d (its table done or waiting): the caller's context resumes."""
    d -= 1
    if d >= 0:
        W.ctx_phase[d] = PH_RESUME
    return d


@njit(cache=True, inline="always")
def _backtrack(W, d, i):
    """Back to the level before i (its next alternative), or the next rule at level 0."""
    if i == 0:
        W.ctx_rule[d] += 1
        W.ctx_phase[d] = PH_RULE
    else:
        W.ctx_level[d] = i - 1
        W.ctx_phase[d] = PH_RETRY


@njit(cache=True, inline="always")
def _next_row(P, W, d, r, i, li, vb, bind):
    """Advance the level's source to a row that matches the literal (binding its variables
    when ``bind``, else only testing); returns 0 when found, -1 when exhausted."""
    lit = P.rule_body_start[r] + i
    lrel = P.lit_rel[lit]
    width = P.rel_width[lrel]
    cs = P.lit_code_start[lit]
    src = W.ctx_src[li]
    rk = P.rel_kind[lrel]
    while True:
        if src == S_TABLE:
            a = W.ctx_cur[li]
            if a < 0:
                return -1
            W.ctx_cur[li] = W.ans_next[a]
            arr = W.ans_vals
            start = W.ans_start[a]
        elif src == S_CHAIN:
            e = W.ctx_cur[li]
            if e < 0:
                return -1
            if rk == K_FACTS:
                W.ctx_cur[li] = P.ix_next[e]
                row = P.ix_row[e]
            else:
                W.ctx_cur[li] = W.six_next[e]
                row = W.six_row[e]
            arr, start = _row_values(P, W, rk, lrel, row)
        elif src == S_RANGE:
            row = W.ctx_cur[li]
            if row >= W.ctx_end[li]:
                return -1
            W.ctx_cur[li] = row + 1
            arr, start = _row_values(P, W, rk, lrel, row)
        else:  # S_DOES
            k = W.ctx_cur[li]
            if k >= W.ctx_end[li]:
                return -1
            W.ctx_cur[li] = k + 1
            if W.does_rel[k] != lrel:
                continue
            arr = W.does_vals
            start = W.does_start[k]
        W.reg[R_ROWS] += 1
        b = _match(P.codes, cs, width, arr, start, W.ctx_vars, vb)
        if b < 0:
            continue
        if bind:
            W.ctx_bound[li] = b
        else:
            _unbind(W.ctx_vars, vb, b)
        return 0


@njit(cache=True)
def answer_rows(W, t, out):
    """The answers of table t into the rows of ``out`` (``W.tab_count[t]`` of them)."""
    a = W.tab_head[t]
    i = 0
    w = out.shape[1]
    while a >= 0:
        s = W.ans_start[a]
        for j in range(w):
            out[i, j] = W.ans_vals[s + j]
        i += 1
        a = W.ans_next[a]


# ---------------------------------------------------------------- states and playouts
Game = namedtuple("Game", (
    "legal_rels legal_does next_rels next_true term_rel goal_rel role_syms sym_int "
    "six_ix six_rel six_mask samp_start samp_end samp_cand samp_chk"))
E_STATE, E_NO_MOVE, E_CAP, E_GOAL, E_OUT = 7, 8, 9, 10, 11
NOT_INT = -(1 << 62)     # G.sym_int of a symbol that is not an integer


@njit(cache=True)
def index_state(P, W, G):
    """Build the state's indexes (every (true relation, mask) the rules look up) from its
    rows; False when the index space is too small."""
    hs = 0
    e = 0
    for k in range(G.six_ix.shape[0]):
        ix = G.six_ix[k]
        rel = G.six_rel[k]
        cnt = W.st_rel_count[rel]
        ns = 2
        while ns < 2 * cnt:
            ns *= 2
        if hs + ns > W.six_head.shape[0] or e + cnt > W.six_row.shape[0]:
            return False
        W.six_head_start[ix] = hs
        W.six_nslots[ix] = ns
        e = build_index(W.st_vals, W.st_rel_start[rel], P.rel_width[rel], cnt, G.six_mask[k],
                        W.six_head, hs, ns, W.six_row, W.six_next, e)
        hs += ns
    return True


@njit(cache=True, inline="always")
def _fact_ok(P, rel, row, call):
    w = P.rel_width[rel]
    s = P.rel_fact_start[rel] + row * w
    for j in range(w):
        if call[j] != FREE and P.fact_vals[s + j] != call[j]:
            return False
    return True


@njit(cache=True)
def _ask(P, W, rel, call):
    """Answer (rel, call) for a derived or a static relation: (status, table or -1, count)."""
    if P.rel_kind[rel] == K_FACTS:
        n = 0
        for row in range(P.rel_fact_count[rel]):
            if _fact_ok(P, rel, row, call):
                n += 1
        return OK, -1, n
    st, t = solve(P, W, rel, call)
    if st != OK:
        return st, -1, 0
    return OK, t, W.tab_count[t]


@njit(cache=True)
def _nth(P, W, rel, call, t, n):
    """(values array, start) of the n-th answer of ``_ask(P, W, rel, call)``."""
    if t >= 0:
        a = W.tab_head[t]
        for _ in range(n):
            a = W.ans_next[a]
        return W.ans_vals, W.ans_start[a]
    for row in range(P.rel_fact_count[rel]):
        if _fact_ok(P, rel, row, call):
            if n == 0:
                return P.fact_vals, P.rel_fact_start[rel] + row * P.rel_width[rel]
            n -= 1
    return P.fact_vals, 0


@njit(cache=True)
def ask_many(P, W, rels, calls, out_vals, out_count):
    """Several queries in one call (the state machine's legal and next queries ask a
    relation per shape, and each call from Python costs more than a chess table): the
    answers of ``(rels[i], calls[i])``, in ``_ask``'s order, their values one after the other
    in ``out_vals``, ``out_count[i]`` rows each.  (status, index of the query that failed or
    values written); E_OUT when ``out_vals`` is too small (the caller grows it).  Each
    query has its own inference count, as when asked alone."""
    pos = 0
    for i in range(rels.shape[0]):
        rel = rels[i]
        call = calls[i]
        W.reg[R_INF] = 0
        st, t, n = _ask(P, W, rel, call)
        if st != OK:
            return st, i
        w = P.rel_width[rel]
        if pos + n * w > out_vals.shape[0]:
            return E_OUT, i
        out_count[i] = n
        if t >= 0:
            a = W.tab_head[t]
            while a >= 0:
                s = W.ans_start[a]
                for j in range(w):
                    out_vals[pos + j] = W.ans_vals[s + j]
                pos += w
                a = W.ans_next[a]
        else:
            for row in range(P.rel_fact_count[rel]):
                if _fact_ok(P, rel, row, call):
                    s = P.rel_fact_start[rel] + row * w
                    for j in range(w):
                        out_vals[pos + j] = P.fact_vals[s + j]
                    pos += w
    return OK, pos


@njit(cache=True)
def load_rows(P, W, G, vals, rels, nrow):
    """Empty every table and load a state: ``nrow`` rows, row q of the ``true`` relation
    ``rels[q]``, their values one after the other in ``vals`` (each relation's rows keep
    their order). False when the work space is too small for it."""
    reset(W)
    nval = 0
    for q in range(nrow):
        nval += P.rel_width[rels[q]]
    if nval > W.st_vals.shape[0]:
        return False
    for rel in range(W.st_rel_count.shape[0]):
        W.st_rel_count[rel] = 0
    for q in range(nrow):
        W.st_rel_count[rels[q]] += 1
    pos = 0
    for rel in range(W.st_rel_count.shape[0]):
        W.st_rel_start[rel] = pos
        pos += W.st_rel_count[rel] * P.rel_width[rel]
        W.st_rel_count[rel] = 0
    src = 0
    for q in range(nrow):
        rel = rels[q]
        w = P.rel_width[rel]
        dst = W.st_rel_start[rel] + W.st_rel_count[rel] * w
        for j in range(w):
            W.st_vals[dst + j] = vals[src + j]
        src += w
        W.st_rel_count[rel] += 1
    for rel in range(W.st_rel_count.shape[0]):
        _sort_rows(W.st_vals, W.st_rel_start[rel], W.st_rel_count[rel], P.rel_width[rel])
    return index_state(P, W, G)


@njit(cache=True, inline="always")
def _less(a, sa, b, sb, w):
    """a[sa:sa + w] < b[sb:sb + w], lexicographically."""
    for j in range(w):
        if a[sa + j] != b[sb + j]:
            return a[sa + j] < b[sb + j]
    return False


@njit(cache=True)
def _sort_rows(vals, start, n, w):
    """Sort the n rows of width w from ``start`` (an insertion sort: a next state's rows come
    nearly in order), so that a state's rows, hence the order of its answers and of a
    playout's draws, do not depend on how it was reached (``NonGroundEngine._load`` sorts
    the same way)."""
    row = np.empty(max(w, 1), np.int32)
    for i in range(1, n):
        a = start + i * w
        if not _less(vals, a, vals, a - w, w):
            continue
        for j in range(w):
            row[j] = vals[a + j]
        k = i
        while k > 0:
            b = start + (k - 1) * w
            if not _less(row, 0, vals, b, w):
                break
            for j in range(w):
                vals[b + w + j] = vals[b + j]
            k -= 1
        for j in range(w):
            vals[start + k * w + j] = row[j]


@njit(cache=True)
def candidate_rows(P, W, G, role, call, buf, ent):
    """Every candidate row of ``role``'s moves (the sampler's relations,
    ``nonground.Compiled._sampler``; a legal relation without a sampler gives its rows, with
    no check): their values one after the other in ``buf``; row e's legal index, check
    relation (-1: none) and start in ``buf`` in ``ent[0, e]``, ``ent[1, e]``, ``ent[2, e]``.
    (status, rows); E_OUT when ``buf`` or ``ent`` is too small (the caller grows them)."""
    n = 0
    pos = 0
    for k in range(G.legal_rels.shape[0]):
        lrel = G.legal_rels[k]
        ns = G.samp_end[k] - G.samp_start[k]
        for q in range(max(ns, 1)):
            rel = lrel if ns == 0 else G.samp_cand[G.samp_start[k] + q]
            chk = -1 if ns == 0 else G.samp_chk[G.samp_start[k] + q]
            w = P.rel_width[rel]
            call[0] = role
            for j in range(1, w):
                call[j] = FREE
            W.reg[R_INF] = 0
            st, t, m = _ask(P, W, rel, call)
            if st != OK:
                return st, 0
            a = W.tab_head[t] if t >= 0 else -1
            row = -1
            for _ in range(m):
                if pos + w > buf.shape[0] or n >= ent.shape[1]:
                    return E_OUT, 0
                if t >= 0:      # a derived relation's answers
                    arr, s = W.ans_vals, W.ans_start[a]
                    a = W.ans_next[a]
                else:           # a static one's rows that match the call
                    row += 1
                    while not _fact_ok(P, rel, row, call):
                        row += 1
                    arr, s = P.fact_vals, P.rel_fact_start[rel] + row * w
                for j in range(w):
                    buf[pos + j] = arr[s + j]
                ent[0, n] = k
                ent[1, n] = chk
                ent[2, n] = pos
                pos += w
                n += 1
    return OK, n


@njit(cache=True)
def group_rows(P, G, buf, ent, n, rep, reps):
    """Group the n candidate rows by move (legal index and head): ``rep[e]`` is the first row
    of row e's move, ``reps`` the first rows in row order; returns the number of moves."""
    nslots = 2
    while nslots < 2 * n:
        nslots *= 2
    head = np.full(nslots, -1, np.int64)
    nxt = np.empty(max(n, 1), np.int64)
    nrep = 0
    for e in range(n):
        k = ent[0, e]
        w = P.rel_width[G.legal_rels[k]]
        slot = _hash_vals(k, buf, ent[2, e], w) & (nslots - 1)
        f = head[slot]
        while f >= 0 and not (ent[0, f] == k and _same(buf, ent[2, f], buf, ent[2, e], w)):
            f = nxt[f]
        if f >= 0:
            rep[e] = f
        else:
            rep[e] = e
            nxt[e] = head[slot]
            head[slot] = e
            reps[nrep] = e
            nrep += 1
    return nrep


@njit(cache=True)
def group_legal(P, W, buf, ent, n, rep, g, call):
    """Whether the move whose first row is g is legal: (status, a row of it whose check
    passes, or -1). A check is a ground call: it passes when it has its answer."""
    for e in range(g, n):
        if rep[e] != g:
            continue
        chk = ent[1, e]
        if chk < 0:
            return OK, e
        for q in range(P.rel_width[chk]):
            call[q] = buf[ent[2, e] + q]
        W.reg[R_INF] = 0
        st, t = solve(P, W, chk, call)
        if st != OK:
            return st, -1
        if W.tab_count[t] > 0:
            return OK, e
    return OK, -1


@njit(cache=True)
def sample_legal(P, W, G, role, call, buf, ent):
    """A uniformly random legal move of ``role`` without evaluating every legal move: the
    candidate rows (``candidate_rows``) grouped by move, then a random move after another,
    tested (``group_legal``) until one passes; a move that fails leaves the draw. (status,
    legal index k, start of its row in ``buf``), k = -1 when the role has no legal move."""
    st, n = candidate_rows(P, W, G, role, call, buf, ent)
    if st != OK:
        return st, -1, 0
    rep = np.empty(max(n, 1), np.int64)
    reps = np.empty(max(n, 1), np.int64)
    nrep = group_rows(P, G, buf, ent, n, rep, reps)
    while nrep > 0:
        j = np.random.randint(nrep)
        st, e = group_legal(P, W, buf, ent, n, rep, reps[j], call)
        if st != OK:
            return st, -1, 0
        if e >= 0:
            return OK, ent[0, e], ent[2, e]
        reps[j] = reps[nrep - 1]
        nrep -= 1
    return OK, -1, 0


@njit(cache=True, inline="always")
def _record_move(P, W, G, trail, stride, depth, nroles, r, k, arr, s, nd, pos):
    """Role r's move (legal index k, row ``arr[s:]``): into the trail when it is kept, and as
    the joint move's ``does`` row nd at ``pos`` (the caller moves both on)."""
    lrel = G.legal_rels[k]
    if trail.shape[0] > 0:
        base = (depth * nroles + r) * stride
        if base + stride <= trail.shape[0]:
            trail[base] = k
            for j in range(P.rel_width[lrel]):
                trail[base + 1 + j] = arr[s + j]
    drel = G.legal_does[k]
    if drel >= 0:
        W.does_rel[nd] = drel
        W.does_start[nd] = pos
        for j in range(P.rel_width[drel]):
            W.does_vals[pos + j] = arr[s + j]


@njit(cache=True)
def playout(P, W, G, seed, cap, newvals, newrel, out_goals, trail, buf, ent):
    """A uniformly random playout from the loaded state: (status, depth). The state moves on
    in W (its rows and indexes); ``newvals``/``newrel``: scratch for the next state's rows;
    ``out_goals[r]``: the goal of role r at the end (``statemachine.goal_vector``'s rule: the
    largest provable, 0 if none). ``trail`` (empty: not kept): the moves made, a row of
    ``W.callbuf.shape[0] + 1`` values per role and step: the legal relation's place in
    ``G.legal_rels``, then its row. ``buf``, ``ent``: scratch for ``sample_legal``, which
    draws the moves when the game has a sampler (the same distribution, other draws)."""
    stride = W.callbuf.shape[0] + 1
    np.random.seed(seed)
    nroles = G.role_syms.shape[0]
    nlegal = G.legal_rels.shape[0]
    call = np.empty(W.callbuf.shape[0], np.int32)
    calls = np.empty((nlegal, W.callbuf.shape[0]), np.int32)
    tabs = np.empty(nlegal, np.int64)
    counts = np.empty(nlegal, np.int64)
    depth = 0
    sampled = False
    for k in range(nlegal):
        if G.samp_end[k] > G.samp_start[k]:
            sampled = True
    while True:
        W.reg[R_INF] = 0
        if G.term_rel >= 0:
            st, t, n = _ask(P, W, G.term_rel, call)
            if st != OK:
                return st, depth
            if n > 0:
                break
        if depth >= cap:
            return E_CAP, depth
        # a random legal move per role, over every shape of move; its does row
        nd = 0
        pos = 0
        for r in range(nroles):
            if sampled:
                st, k, s = sample_legal(P, W, G, G.role_syms[r], call, buf, ent)
                if st != OK:
                    return st, depth
                if k < 0:
                    return E_NO_MOVE, depth
                lrel = G.legal_rels[k]
                _record_move(P, W, G, trail, stride, depth, nroles, r, k, buf, s, nd, pos)
                drel = G.legal_does[k]
                if drel >= 0:
                    pos += P.rel_width[drel]
                    nd += 1
                continue
            total = 0
            for k in range(nlegal):
                lrel = G.legal_rels[k]
                calls[k, 0] = G.role_syms[r]
                for j in range(1, P.rel_width[lrel]):
                    calls[k, j] = FREE
                st, t, n = _ask(P, W, lrel, calls[k])
                if st != OK:
                    return st, depth
                tabs[k] = t
                counts[k] = n
                total += n
            if total == 0:
                return E_NO_MOVE, depth
            pick = np.random.randint(total)
            k = 0
            while pick >= counts[k]:
                pick -= counts[k]
                k += 1
            lrel = G.legal_rels[k]
            arr, s = _nth(P, W, lrel, calls[k], tabs[k], pick)
            _record_move(P, W, G, trail, stride, depth, nroles, r, k, arr, s, nd, pos)
            drel = G.legal_does[k]
            if drel >= 0:
                pos += P.rel_width[drel]
                nd += 1
        W.reg_does[0] = nd
        st = advance(P, W, G, call, newvals, newrel)
        if st != OK:
            return st, depth
        depth += 1
    st = goals_into(P, W, G, call, out_goals)
    return st, depth


@njit(cache=True)
def advance(P, W, G, call, newvals, newrel):
    """The next state of the loaded one under the joint move in ``W.does_*`` (``reg_does``
    rows), loaded in its place: its rows grouped by true relation (``newvals``/``newrel``:
    scratch). A status."""
    nrow = 0
    nval = 0
    for k in range(G.next_rels.shape[0]):
        nrel = G.next_rels[k]
        trel = G.next_true[k]
        w = P.rel_width[nrel]
        for j in range(w):
            call[j] = FREE
        st, t, n = _ask(P, W, nrel, call)
        if st != OK:
            return st
        if trel < 0:
            continue
        a = W.tab_head[t] if t >= 0 else -1
        for q in range(n):
            if nrow >= newrel.shape[0] or nval + w > newvals.shape[0]:
                return E_STATE
            if t >= 0:
                arr = W.ans_vals
                s = W.ans_start[a]
                a = W.ans_next[a]
            else:   # a static relation asked with every argument free: row q
                arr = P.fact_vals
                s = P.rel_fact_start[nrel] + q * w
            newrel[nrow] = trel
            for j in range(w):
                newvals[nval + j] = arr[s + j]
            nval += w
            nrow += 1
    W.reg_does[0] = 0
    if not load_rows(P, W, G, newvals, newrel, nrow):
        return E_STATE
    return OK


@njit(cache=True)
def goals_into(P, W, G, call, out_goals):
    """``out_goals[r]``: role r's goal in the loaded state (``statemachine.goal_vector``'s
    rule: the largest provable, 0 if none). A status."""
    for r in range(G.role_syms.shape[0]):
        out_goals[r] = 0
        if G.goal_rel < 0:
            continue
        call[0] = G.role_syms[r]
        call[1] = FREE
        st, t, n = _ask(P, W, G.goal_rel, call)
        if st != OK:
            return st
        for q in range(n):
            arr, s = _nth(P, W, G.goal_rel, call, t, q)
            v = G.sym_int[arr[s + 1]]
            if v == NOT_INT:
                return E_GOAL
            if q == 0 or v > out_goals[r]:
                out_goals[r] = v
    return OK

