"""Ground program -> CompiledGame arrays.

Steps: classify atoms (fluents, moves, derived; static relations are those that depend on
neither ``true`` nor ``does``), order derived atoms by atom-level SCCs (callees first),
evaluate the static part once and fold it away, then keep only what legal/terminal (phase
0), goals (phase 1) and next (phase 2) need.  A negative literal inside an atom-level cycle,
or legal/terminal/goal depending on moves, is refused: the caller falls back to Prolog.
"""
from __future__ import annotations

import numpy as np

from gdl.terms import render, signature

from .ground import GroundingError, GroundProgram
from .kernels import CompiledGame, eval_blocks, rule_offsets, tarjan


class CompileError(GroundingError):
    pass


def _csr(rows: np.ndarray, cols: np.ndarray, n: int):
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols[order], order


def compile_program(gp: GroundProgram):
    """Returns (CompiledGame, tables) where tables holds the Python-side term mappings."""
    atoms = gp.atoms
    n = len(atoms)
    roles = list(gp.roles)
    role_index = {r: i for i, r in enumerate(roles)}
    kind = np.zeros(n, dtype=np.int8)  # 0 derived, 1 true, 2 does
    static = np.zeros(n, dtype=bool)
    for i, a in enumerate(atoms):
        sig = signature(a)
        if sig == ("true", 1):
            kind[i] = 1
        elif sig == ("does", 2):
            kind[i] = 2
        elif sig in gp.static:
            static[i] = True
    # A fluent or move named only under negation was never reached: it is simply false.
    reachable_true = {("true", f) for f in gp.true_atoms}
    reachable_does = {("does", r, m) for r, m in gp.does_atoms}
    for i in np.nonzero(kind > 0)[0]:
        if atoms[i] not in reachable_true and atoms[i] not in reachable_does:
            static[i] = True

    # Rules: heads, literal spans (original ids; +(id+1) / -(id+1) from the grounder).
    flat = gp.flat_rules
    starts = rule_offsets(flat) if len(flat) else np.zeros(0, dtype=np.int64)
    lens = flat[starts] if len(starts) else np.zeros(0, dtype=np.int64)
    heads = flat[starts + 1] - 1 if len(starts) else np.zeros(0, dtype=np.int64)
    n_rules = len(starts)
    all_ls, all_lits = _lits_for(np.arange(n_rules), starts, lens, flat)
    lit_atom, lit_neg = all_lits >> 1, all_lits & 1
    lit_rule = np.repeat(np.arange(n_rules), np.diff(all_ls))

    # Atom-level dependency graph head -> body atom, SCCs in evaluation order.
    indptr, indices, _ = _csr(heads[lit_rule], lit_atom, n) if len(lit_rule) else (
        np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), None)
    comp, ncomp = tarjan(n, indptr, indices)
    comp_size = np.bincount(comp, minlength=ncomp)
    self_loop = np.zeros(n, dtype=bool)
    sl = heads[lit_rule] == lit_atom
    self_loop[heads[lit_rule][sl]] = True
    recursive = (comp_size[comp] > 1) | self_loop
    neg_in_cycle = (lit_neg == 1) & (comp[heads[lit_rule]] == comp[lit_atom]) & recursive[lit_atom]
    if neg_in_cycle.any():
        k = int(np.argmax(neg_in_cycle))
        raise CompileError(f"negation inside a recursive cycle at ground level: "
                           f"{render(atoms[heads[lit_rule][k]])} depends on (not "
                           f"{render(atoms[lit_atom[k]])}) through itself")

    # Static evaluation over the original ids.
    rule_order = np.argsort(heads, kind="stable")
    rule_start = np.zeros(n + 1, dtype=np.int64)
    np.add.at(rule_start, heads + 1, 1)
    rule_start = np.cumsum(rule_start)
    lit_start, lits = _lits_for(rule_order, starts, lens, flat)
    order = np.argsort(comp, kind="stable")  # comp ids are already callees-first
    derived_static = order[static[order]]
    blk_s, blk_e, blk_l = _blocks(derived_static, comp, recursive)
    vals = np.zeros(n, dtype=np.uint8)
    eval_blocks(blk_s, blk_e, blk_l, derived_static.astype(np.int64), rule_start, lit_start, lits,
                vals, 0, len(blk_s))
    static_true = static & (vals == 1)

    # Fold static literals: drop satisfied ones, drop rules with a falsified one.
    lit_static = static[lit_atom]
    lit_sat = static_true[lit_atom] != (lit_neg == 1)
    bad = np.zeros(n_rules, dtype=bool)
    np.logical_or.at(bad, lit_rule, lit_static & ~lit_sat)
    keep_rule = ~bad & ~static[heads]
    keep_lit = keep_rule[lit_rule] & ~lit_static

    # Output atoms and their needs.
    legal_by_role: list = [[] for _ in roles]
    goal_by_role: list = [[] for _ in roles]
    terminal = -1
    next_of: dict = {}
    does_of: dict = {}
    for i, a in enumerate(atoms):
        sig = signature(a)
        if sig == ("legal", 2) and a[1] in role_index:
            legal_by_role[role_index[a[1]]].append((render(a[2]), a[2], i))
        elif sig == ("goal", 2) and a[1] in role_index:
            try:
                value = int(a[2])
            except (TypeError, ValueError):
                raise CompileError(f"goal value {render(a[2])} is not an integer") from None
            goal_by_role[role_index[a[1]]].append((value, i))
        elif sig == ("terminal", -1):
            terminal = i
        elif sig == ("next", 1):
            next_of[a[1]] = i
        elif kind[i] == 2 and a[1] in role_index:
            does_of[(role_index[a[1]], a[2])] = i

    # Keep only the kept rules in a CSR by head (original ids), for reachability.
    kr = np.nonzero(keep_rule)[0]
    k_lit_rule = lit_rule[keep_lit]
    k_lit_atom = lit_atom[keep_lit]
    dep_ptr, dep_idx, _ = _csr(heads[k_lit_rule], k_lit_atom, n) if len(k_lit_rule) else (
        np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), None)

    def needed(outputs, exclude):
        seen = np.zeros(n, dtype=bool)
        todo = [o for o in outputs if not static[o]]
        for o in todo:
            seen[o] = True
        while todo:
            v = todo.pop()
            for w in dep_idx[dep_ptr[v]:dep_ptr[v + 1]]:
                if not seen[w]:
                    seen[w] = True
                    todo.append(w)
        return seen & (kind == 0) & ~static & ~exclude

    no = np.zeros(n, dtype=bool)
    core = needed([i for rl in legal_by_role for _, _, i in rl] + ([terminal] if terminal >= 0 else []), no)
    goalp = needed([i for gl in goal_by_role for _, i in gl], core)
    nextp = needed(list(next_of.values()), core)
    does_dependent = _depends_on(n, dep_ptr, dep_idx, kind == 2)
    if (core | goalp).any() and (does_dependent & (core | goalp)).any():
        raise CompileError("legal, terminal or goal depends on the moves (does): not valid GDL")

    # New ids: fluents, moves, then derived atoms (in evaluation order).
    base = list(gp.true_atoms)
    base_index = {f: k for k, f in enumerate(base)}
    n_base = len(base)
    new_id = np.full(n, -1, dtype=np.int64)
    for i in np.nonzero((kind == 1) & ~static)[0]:
        new_id[i] = base_index[atoms[i][1]]
    does_ids = np.nonzero((kind == 2) & ~static)[0]
    new_id[does_ids] = n_base + np.arange(len(does_ids))
    nxt_free = n_base + len(does_ids)
    live = core | goalp | nextp
    for o in [i for rl in legal_by_role for _, _, i in rl] + [i for gl in goal_by_role for _, i in gl] + \
            ([terminal] if terminal >= 0 else []) + list(next_of.values()):
        live[o] = True
    live &= kind == 0
    live_ids = order[live[order]]
    new_id[live_ids] = nxt_free + np.arange(len(live_ids))
    n_atoms = nxt_free + len(live_ids) + 1
    false_atom = n_atoms - 1  # an atom that is never set: stands for folded-false outputs

    def nid(i):
        return int(new_id[i]) if new_id[i] >= 0 else false_atom

    # Rules of live dynamic atoms, remapped.
    r_keep = kr[live[heads[kr]] & ~static[heads[kr]]]
    r_heads = np.array([new_id[h] for h in heads[r_keep]], dtype=np.int64)
    ro = np.argsort(r_heads, kind="stable")
    r_keep, r_heads = r_keep[ro], r_heads[ro]
    rs = np.zeros(n_atoms + 1, dtype=np.int64)
    np.add.at(rs, r_heads + 1, 1)
    rs = np.cumsum(rs)
    lit_pos = np.nonzero(keep_lit)[0]
    per_rule = np.bincount(lit_rule[lit_pos], minlength=n_rules)
    first = np.zeros(n_rules + 1, dtype=np.int64)
    first[1:] = np.cumsum(per_rule)
    counts = per_rule[r_keep]
    ls = np.zeros(len(r_keep) + 1, dtype=np.int64)
    ls[1:] = np.cumsum(counts)
    src = np.concatenate([lit_pos[first[r]:first[r + 1]] for r in r_keep]) if len(r_keep) else np.zeros(0, np.int64)
    new_lits = (new_id[lit_atom[src]] * 2 + lit_neg[src]).astype(np.int64)
    if (new_id[lit_atom[src]] < 0).any():
        raise CompileError("internal: a literal refers to an atom that was not kept")

    def phase_entries(mask):
        ids = order[mask[order]]
        return ids

    ent, blk_s, blk_e, blk_l, phase_blocks = [], [], [], [], []
    for mask in (core, goalp, nextp, live & ~static):
        ids = phase_entries(mask)
        s, e, l = _blocks(ids, comp, recursive)
        b0 = len(blk_s)
        off = len(ent)
        blk_s.extend((s + off).tolist())
        blk_e.extend((e + off).tolist())
        blk_l.extend(l.tolist())
        ent.extend(new_id[ids].tolist())
        phase_blocks.append((b0, len(blk_s)))

    move_terms, legal_atom, does_atom, legal_start = [], [], [], [0]
    for r, rl in enumerate(legal_by_role):
        rl.sort(key=lambda x: x[0])
        move_terms.append([m for _, m, _ in rl])
        legal_atom.extend(nid(i) for _, _, i in rl)
        does_atom.extend(int(new_id[does_of[(r, m)]]) if (r, m) in does_of else -1 for _, m, _ in rl)
        legal_start.append(len(legal_atom))
    goal_atom, goal_value, goal_start = [], [], [0]
    for gl in goal_by_role:
        goal_atom.extend(nid(i) for _, i in gl)
        goal_value.extend(v for v, _ in gl)
        goal_start.append(len(goal_atom))
    next_atom = np.full(n_base, -1, dtype=np.int64)
    for f, i in next_of.items():
        if f in base_index:
            next_atom[base_index[f]] = nid(i)
    const_true = np.array([new_id[i] for i in np.nonzero(static_true & live)[0]], dtype=np.int64)

    # Forward propagation: which rules mention each atom, and the loop block of each atom.
    n_r = len(r_heads)
    lit_owner = np.repeat(np.arange(n_r), np.diff(ls))
    occ_start, occ_rule, occ_order = _csr(new_lits >> 1, lit_owner, n_atoms) if len(new_lits) else (
        np.zeros(n_atoms + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    occ_neg = (new_lits & 1)[occ_order] if len(new_lits) else np.zeros(0, dtype=np.int64)
    atom_block = np.full(n_atoms, -1, dtype=np.int64)
    b0, b1 = phase_blocks[3]
    for b in range(b0, b1):
        if blk_l[b]:
            atom_block[np.asarray(ent[blk_s[b]:blk_e[b]], dtype=np.int64)] = b

    init = [f for i, a in enumerate(atoms) if signature(a) == ("init", 1) and static_true[i] for f in [a[1]]]
    n_words = max(1, (n_base + 63) // 64)
    init_state = np.zeros(n_words, dtype=np.uint64)
    for f in init:
        k = base_index[f]
        init_state[k >> 6] |= np.uint64(1) << np.uint64(k & 63)

    i64 = lambda x: np.asarray(x, dtype=np.int64)
    g = CompiledGame(
        n_roles=len(roles), n_words=n_words, n_base=n_base, n_atoms=n_atoms,
        blk_start=i64(blk_s), blk_end=i64(blk_e), blk_loop=np.asarray(blk_l, dtype=np.uint8),
        phase_blocks=i64(phase_blocks).reshape(4, 2),
        ent_atom=i64(ent), rule_start=rs, lit_start=ls, lits=new_lits,
        legal_start=i64(legal_start), legal_atom=i64(legal_atom), does_atom=i64(does_atom),
        goal_start=i64(goal_start), goal_atom=i64(goal_atom), goal_value=i64(goal_value),
        terminal_atom=nid(terminal) if terminal >= 0 else -1, next_atom=next_atom,
        const_true=const_true, role_nmoves=i64([len(m) for m in move_terms]), init_state=init_state,
        rule_head=r_heads.astype(np.int64), occ_start=occ_start, occ_rule=occ_rule.astype(np.int64),
        occ_neg=occ_neg.astype(np.int64), atom_block=atom_block,
    )
    tables = {"roles": roles, "base": base, "move_terms": move_terms}
    return g, tables


def _lits_for(rule_order, starts, lens, flat):
    """Literal arrays (atom*2+neg, original ids) for rules in ``rule_order``."""
    counts = lens[rule_order] - 1
    ls = np.zeros(len(rule_order) + 1, dtype=np.int64)
    ls[1:] = np.cumsum(counts)
    if ls[-1] == 0:
        return ls, np.zeros(0, dtype=np.int64)
    idx = np.repeat(starts[rule_order] + 2, counts) + (np.arange(ls[-1]) - np.repeat(ls[:-1], counts))
    raw = flat[idx]
    return ls, (np.abs(raw) - 1) * 2 + (raw < 0)


def _blocks(ids: np.ndarray, comp: np.ndarray, recursive: np.ndarray):
    """Group consecutive entries: a recursive component is one looping block; runs of
    non-recursive atoms form plain blocks."""
    s, e, l = [], [], []
    i, m = 0, len(ids)
    while i < m:
        j = i + 1
        if recursive[ids[i]]:
            while j < m and comp[ids[j]] == comp[ids[i]]:
                j += 1
            s.append(i), e.append(j), l.append(1)
        else:
            while j < m and not recursive[ids[j]]:
                j += 1
            s.append(i), e.append(j), l.append(0)
        i = j
    return np.asarray(s, dtype=np.int64), np.asarray(e, dtype=np.int64), np.asarray(l, dtype=np.uint8)


def _depends_on(n, ptr, idx, targets: np.ndarray) -> np.ndarray:
    """Atoms that (transitively) depend on a target atom."""
    rows = np.repeat(np.arange(n), np.diff(ptr))
    rptr, ridx, _ = _csr(idx, rows, n) if len(idx) else (np.zeros(n + 1, dtype=np.int64), idx, None)
    seen = targets.copy()
    todo = list(np.nonzero(targets)[0])
    while todo:
        v = todo.pop()
        for w in ridx[rptr[v]:rptr[v + 1]]:
            if not seen[w]:
                seen[w] = True
                todo.append(w)
    return seen
