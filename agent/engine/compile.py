"""Ground program -> CompiledGame arrays.

Steps: classify atoms (fluents, moves, derived; static relations are those that depend on
neither ``true`` nor ``does``), order derived atoms by atom-level SCCs (callees first),
evaluate the static part once and fold it away, then keep only what legal/terminal (phase
0), goals (phase 1) and next and GDL-II's percepts (``sees``, phase 2) need.  A negative literal inside an atom-level cycle,
or legal/terminal/goal depending on moves, is refused: the caller falls back to Prolog.
"""
from __future__ import annotations

import numpy as np

from gdl.terms import render, signature

from .ground import GroundingError, GroundProgram
from .kernels import (CompiledGame, eval_blocks, pick_step_mode, probe_step_work, reach_back, rule_offsets,
                      step_mode_cost, tarjan, topo_order)


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

    # Fold static literals: drop satisfied ones, drop rules with a falsified one.  Then a
    # derived atom of a state-dependent relation with no rule left is false in every state:
    # the relaxed grounder names such atoms under ``not`` (checkers' frame axiom asks "no
    # capture over this square" of every move and square: 10,000 atoms no jump can make
    # true).  They are folded like static ones, to a fixpoint; left in, each was a network
    # node whose negation fed a helper per (move, square) that flipped whenever the move did.
    while True:
        lit_static = static[lit_atom]
        lit_sat = static_true[lit_atom] != (lit_neg == 1)
        bad = np.zeros(n_rules, dtype=bool)
        np.logical_or.at(bad, lit_rule, lit_static & ~lit_sat)
        keep_rule = ~bad & ~static[heads]
        has_rule = np.zeros(n, dtype=bool)
        has_rule[heads[keep_rule]] = True
        dead = (kind == 0) & ~static & ~has_rule
        if not dead.any():
            break
        static |= dead  # static_true stays False for them
    keep_lit = keep_rule[lit_rule] & ~lit_static

    # Output atoms and their needs.
    legal_by_role: list = [[] for _ in roles]
    goal_by_role: list = [[] for _ in roles]
    sees_by_role: list = [[] for _ in roles]   # GDL-II percepts: (text, percept, atom)
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
        elif sig == ("sees", 2) and a[1] in role_index:
            sees_by_role[role_index[a[1]]].append((render(a[2]), a[2], i))
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
    # Percepts are read as next values are, with the joint move on: what they need is kept
    # with next's (phase 2), and they are outputs (below), never folded or left to the goals.
    sees_ids = [i for sl in sees_by_role for _, _, i in sl]
    nextp = needed(list(next_of.values()) + sees_ids, core)
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
            ([terminal] if terminal >= 0 else []) + list(next_of.values()) + sees_ids:
        live[o] = True
    live &= kind == 0
    # Legal atoms (role-major, in move order) and then one next slot per fluent get
    # contiguous ids, so the kernels read moves and next values as runs of bytes; a fluent
    # without a next atom gets a slot no rule sets (always false).
    for rl in legal_by_role:
        rl.sort(key=lambda x: x[0])
    legal_ids = [i for rl in legal_by_role for _, _, i in rl]
    new_id[legal_ids] = nxt_free + np.arange(len(legal_ids))
    next_base = nxt_free + len(legal_ids)
    for f, i in next_of.items():
        if f in base_index:
            new_id[i] = next_base + base_index[f]
    rest_from = next_base + n_base
    live_ids = order[live[order]]
    rest = live_ids[new_id[live_ids] < 0]
    new_id[rest] = rest_from + np.arange(len(rest))
    n_atoms = rest_from + len(rest) + 1
    false_atom = n_atoms - 1  # an atom that is never set: stands for folded-false outputs
    # Every move gets a does input, even one no rule reads: then exactly one does input per
    # role is on while next values are computed, which _build_net relies on.
    missing = [(r, m) for r, rl in enumerate(legal_by_role) for _, m, _ in rl
               if not ((r, m) in does_of and new_id[does_of[(r, m)]] >= 0)]
    extra_does = {key: n_atoms + j for j, key in enumerate(missing)}
    n_atoms += len(missing)

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
        move_terms.append([m for _, m, _ in rl])
        legal_atom.extend(nid(i) for _, _, i in rl)
        does_atom.extend(int(new_id[does_of[(r, m)]]) if (r, m) not in extra_does else extra_does[(r, m)]
                         for _, m, _ in rl)
        legal_start.append(len(legal_atom))
    goal_atom, goal_value, goal_start = [], [], [0]
    for gl in goal_by_role:
        goal_atom.extend(nid(i) for _, i in gl)
        goal_value.extend(v for v, _ in gl)
        goal_start.append(len(goal_atom))
    sees_terms, sees_atom, sees_start = [], [], [0]
    for sl in sees_by_role:
        sl.sort(key=lambda x: x[0])
        sees_terms.append([p for _, p, _ in sl])
        sees_atom.extend(nid(i) for _, _, i in sl)
        sees_start.append(len(sees_atom))
    const_true = np.array([new_id[i] for i in np.nonzero(static_true & live)[0]], dtype=np.int64)

    next_atom = next_base + np.arange(n_base, dtype=np.int64)
    atom_block = np.full(n_atoms, -1, dtype=np.int64)
    b0, b1 = phase_blocks[3]
    for b in range(b0, b1):
        if blk_l[b]:
            atom_block[np.asarray(ent[blk_s[b]:blk_e[b]], dtype=np.int64)] = b
    if len(legal_atom) and not (np.diff(legal_atom) == 1).all():
        raise CompileError("internal: legal atoms are not contiguous")
    role_does = [does_atom[legal_start[r]:legal_start[r + 1]] for r in range(len(roles))]
    # What a playout step must keep current: legal moves, terminal, next values.  Goal-only
    # logic is left to kernels.settle_goals, run when goals are read.
    eager_outputs = np.asarray(list(legal_atom) + list(next_atom) + ([nid(terminal)] if terminal >= 0 else []),
                               dtype=np.int64)
    # Percepts are read like goals (their values are read, so no node of theirs is bypassed or
    # merged away), with the joint move on: the logic only they read is left out of the steps
    # too, brought up to date when they are read (kernels.read_with_moves).
    finish_net = _build_net(n_atoms, nxt_free, rs, ls, new_lits, atom_block, const_true, role_does, eager_outputs,
                            np.asarray(legal_atom, dtype=np.int64), n_base, np.asarray(legal_start, dtype=np.int64),
                            np.asarray(goal_atom + sees_atom, dtype=np.int64))

    n_union, n_merged, net = finish_net(True, True)

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
        atom_block=atom_block, ons_first=1, keep_moves=0, **net,
    )
    # How a step makes its first events, by what it costs this network: their order
    # (kernels._push_next) and whether moves stay on between steps (kernels._switch_moves).
    work = probe_step_work(g, PROBE_STEPS)
    mode = int(pick_step_mode(work))
    merge = True

    def probed(net):
        other = g._replace(**net)
        w = probe_step_work(other, PROBE_STEPS)
        return other, w, int(pick_step_mode(w))

    if n_merged and work[0] >= 0:
        # Merged nodes no longer hold back their inputs' changes inside one propagation: a
        # reader can flip and flip back where the merged node stayed put (pentago's next
        # atoms: 15 to 31 events a step, against checkers' 75 to 51 in all). So the network
        # without merges is probed too, and the cheaper kept (a recursive game, which the
        # probe does not count, keeps them: hex ran 1.03x and 1.12x in two A/Bs).
        g_whole, work_whole, mode_whole = probed(finish_net(True, False)[2])
        if step_mode_cost(work_whole, mode_whole) < step_mode_cost(work, mode):
            g, work, mode, merge = g_whole, work_whole, mode_whole, False
    if n_union:
        # Counting moves against their union (encode_move_in) pays where the moves stay on
        # between steps; with them turned off and on each step it costs more (pentago). So
        # the network without it is probed too, and the one that walks less is kept.
        g_plain, work_plain, mode_plain = probed(finish_net(False, merge)[2])
        if work[0] < 0 or step_mode_cost(work_plain, mode_plain) < step_mode_cost(work, mode):
            g, mode = g_plain, mode_plain
    g = g._replace(ons_first=mode & 1, keep_moves=mode >> 1)
    tables = {"roles": roles, "base": base, "move_terms": move_terms, "sees_terms": sees_terms,
              "sees_atom": np.asarray(sees_atom, dtype=np.int64),
              "sees_start": np.asarray(sees_start, dtype=np.int64)}
    return g, tables


def _build_net(n_atoms, n_inputs, rule_start, lit_start, lits, atom_block, const_true, role_does, eager_outputs,
               legal_atom, n_base, legal_start, read_outputs):
    """The forward-propagation network (see kernels.py), as ``finish(union, merge)``, which
    builds it with or without the union counts and the merges.  Atoms are nodes [0, n_atoms); a
    derived atom with one rule is that rule's AND node, one with several rules an OR node
    over its rules' alternatives; helper nodes (ids from n_atoms on) are shared when equal.
    A node is true iff its counter (true inputs minus threshold) is >= 0; inputs arrive
    through edges ``target * 4 + loop * 2 + negated``.  Atoms of recursive components only
    receive LOOP edges: they are recomputed whole (a positive cycle must not keep itself
    true).  ``rb_order`` is a topological order for rebuilding a work buffer.

    Nodes from which none of ``eager_outputs`` (legal, terminal, next) can be reached only
    feed the goals (or GDL-II's percepts: ``read_outputs`` are both): in reversi they were
    three quarters of the propagation events (piece counts updated on every move).  Edges into them are kept apart (``lazy_start``/
    ``lazy_edge``, by source node; all four arrays are one, ``lazy``) so a playout step never walks them; ``lazy_src`` (the
    other nodes with such edges) and ``lazy_order`` (the goal-only nodes and recursive
    blocks in topological order) let kernels.settle_goals recompute them when goals are read.
    Only when they take an eighth of the edges or more: a reading has a fixed cost.

    Frame axioms ground to one rule per (fluent, move): ``next(f) <= true(f), does(r, m)``
    for every move m that leaves f alone, so one fluent change touched hundreds of rules
    and one move hundreds more.  So: rules of an atom that differ only in one positive
    ``does`` literal are merged into one rule reading a shared helper "the joint move has a
    move in S" (``move_in``), literals shared by several rules of an atom are factored out
    (``factor``).  As exactly one move per role is on whenever next values are read, the
    helper may count the moves outside S instead (fewer edges); its value while no move is
    on is meaningless and never read: legal, terminal and goals cannot depend on does."""
    role_of = {}
    all_moves = []
    for r, ds in enumerate(role_does):
        all_moves.append(frozenset(int(d) for d in ds))
        for d in ds:
            role_of[int(d)] = r
    src, dst, thr_extra = [], [], []
    thr = np.zeros(n_atoms, dtype=np.int64)
    thr[n_inputs:] = 1  # an atom without rules is false
    memo = {}

    shared = {}

    def node(t, inputs):
        """A helper node; identical ones are shared (same threshold and inputs)."""
        key = (t, tuple(sorted(inputs)))
        nid = shared.get(key)
        if nid is not None:
            return nid
        nid = shared[key] = n_atoms + len(thr_extra)
        thr_extra.append(t)
        for a, neg in key[1]:
            src.append(a)
            dst.append(nid * 4 + neg)
        return nid

    pending = {}  # move_in node id -> {role: its moves in S}; encoded after the loop

    def move_in(moves):
        """A node true iff the current joint move has a move of ``moves`` (does ids); its
        inputs are chosen once every such node is known (``encode_move_in``)."""
        key = frozenset(moves)
        if key in memo:
            return memo[key]
        per_role = {}
        for d in moves:
            per_role.setdefault(role_of[d], set()).add(d)
        nid = memo[key] = n_atoms + len(thr_extra)
        thr_extra.append(0)
        pending[nid] = per_role
        return nid

    def count_roles(per_role, k):
        """Inputs and threshold of "at least k roles have their move in their set": roles in
        P count their moves in S, roles in Q count the moves outside S negated (|C_r| - [move
        of r in C_r]), whichever has fewer edges; a role whose set is all its moves counts
        always.  A role's switch between two moves on the same side leaves the node alone."""
        inputs, t = [], k
        for r, sr in sorted(per_role.items()):
            cr = all_moves[r] - sr
            if not cr:
                t -= 1
            elif len(cr) < len(sr):
                inputs.extend((d, 1) for d in cr)
                t += len(cr) - 1
            else:
                inputs.extend((d, 0) for d in sr)
        return inputs, max(t, 0)

    def encode_move_in(union):
        """Edges and thresholds of the move_in nodes.  Counted per role (``count_roles``),
        a move that many sets leave out is an input of all of them: breakthrough's noop
        (no cell's frame axiom names it) fed the 64 cells' nodes and was turned on and off
        every step, 77 % of the edges a step walked.  So, where no dearer in edges, a node
        counts against the union U_r of every node's set of role r: "some role has its move
        in S_r" is sum_r [m_r in U_r] - sum_r [m_r in U_r - S_r] >= 1, the first sum one
        shared counter per value (``Y_k`` = at least k roles in U), the second the few
        moves each node leaves out of U, negated; exactly one move per role being on, the
        count is exact.  A move outside every U (the noop) then feeds no node, and Y_k stays
        as it is while the roles take turns.  Returns how many nodes count that way (none
        unless ``union``)."""
        unions = {}
        for per_role in pending.values():
            for r, sr in per_role.items():
                unions.setdefault(r, set()).update(sr)
        ys = None
        n_union = 0
        for nid, per_role in pending.items():
            inputs, t = count_roles(per_role, 1)
            if union:
                left = [d for r, ur in unions.items() for d in ur - per_role.get(r, set())]
                if len(unions) + len(left) <= len(inputs):
                    if ys is None:
                        ys = [node(*reversed(count_roles(unions, k))) for k in range(1, len(unions) + 1)]
                    inputs = [(y, 0) for y in ys] + [(d, 1) for d in left]
                    t = 1 + len(left)
                    n_union += 1
            thr_extra[nid - n_atoms] = t
            for a, neg in sorted(inputs):
                src.append(a)
                dst.append(nid * 4 + neg)
        return n_union

    def factor(rules):
        """The alternatives of an OR of rules (literal lists) as inputs, or None if one
        rule is empty (true).  A literal shared by several rules is factored out,
        (l & x) | (l & y) | z -> (l & (x | y)) | z, most shared first: a fluent read by a
        few hundred frame rules of one next atom then feeds one node."""
        if any(not r for r in rules):
            return None
        # Shared literals by how many rules read them, counted once (any factoring is exact;
        # recounting after each step made this quadratic on big frame-axiom ORs).
        where = {}
        for i, r in enumerate(rules):
            for x in r:
                where.setdefault(x, []).append(i)
        left = [True] * len(rules)
        alts = []
        for lit in sorted((x for x in where if len(where[x]) >= 2), key=lambda x: (-len(where[x]), x)):
            idx = [i for i in where[lit] if left[i]]
            if len(idx) < 2:
                continue
            for i in idx:
                left[i] = False
            inner = factor([[x for x in rules[i] if x != lit] for i in idx])
            if inner is None:
                alts.append(lit)
                continue
            inner_in = inner[0] if len(inner) == 1 else (node(1, sorted(set(inner))), 0)
            both = sorted({lit, inner_in})
            alts.append((node(len(both), both), 0))
        alts.extend(r[0] if len(r) == 1 else (node(len(r), r), 0)
                    for i, r in enumerate(rules) if left[i])
        return sorted(set(alts))

    def is_does(a):
        return a in role_of

    # Atoms with one rule (most of them) in bulk: that rule's AND node.
    nrules = np.diff(rule_start)
    single = np.zeros(n_atoms, dtype=bool)
    single[n_inputs:] = (nrules[n_inputs:] == 1) & (atom_block[n_inputs:] < 0)
    sa = np.nonzero(single)[0]
    sr = rule_start[sa]
    sl = lit_start[sr + 1] - lit_start[sr]
    thr[sa] = sl
    if sl.sum():
        pos = np.repeat(lit_start[sr] - np.cumsum(sl) + sl, sl) + np.arange(sl.sum())
        bulk_src = (lits[pos] >> 1).tolist()
        bulk_dst = (np.repeat(sa, sl) * 4 + (lits[pos] & 1)).tolist()
    else:
        bulk_src, bulk_dst = [], []
    others = np.nonzero(~single)[0]
    l_atom, l_neg, l_start = (lits >> 1).tolist(), (lits & 1).tolist(), lit_start.tolist()
    for a in others[others >= n_inputs].tolist():
        r0, r1 = rule_start[a], rule_start[a + 1]
        rules = [list(zip(l_atom[l_start[r]:l_start[r + 1]], l_neg[l_start[r]:l_start[r + 1]]))
                 for r in range(r0, r1)]
        if atom_block[a] >= 0:
            for body in rules:
                for b, neg in body:
                    src.append(b)
                    dst.append(a * 4 + 2 + neg)
            continue
        if len(rules) >= 2:
            groups, kept = {}, []
            for body in rules:
                dl = [(b, neg) for b, neg in body if is_does(b)]
                if len(dl) == 1 and dl[0][1] == 0:
                    key = tuple(sorted(set(x for x in body if x != dl[0])))
                    groups.setdefault(key, []).append(dl[0][0])
                else:
                    kept.append(body)
            for key, moves in groups.items():
                if len(moves) == 1:
                    kept.append(list(key) + [(moves[0], 0)])
                else:
                    kept.append(list(key) + [(move_in(moves), 0)])
            rules = [sorted(set(body)) for body in kept]
            # Literals common to every rule are factored out: (c & x) | (c & y) becomes
            # c & (x | y), so c (often the turn fluent) feeds one node instead of each rule.
            common = set(rules[0]).intersection(*rules[1:]) if len(rules) >= 2 else set()
            if common:
                rests = [[x for x in body if x not in common] for body in rules]
                head = sorted(common)
                if all(rests):
                    alts = [r[0] if len(r) == 1 else (node(len(r), r), 0) for r in rests]
                    head.append((node(1, sorted(set(alts))), 0))
                rules = [head]
        if len(rules) >= 2:
            alts = factor(rules)
            if alts is None:  # a rule without literals: always true
                thr[a] = 0
                continue
            if len(alts) >= 2:
                for b, neg in alts:
                    src.append(b)
                    dst.append(a * 4 + neg)
                continue
            rules = [[alts[0]]]
        if len(rules) == 1:
            thr[a] = len(rules[0])
            for b, neg in rules[0]:
                src.append(b)
                dst.append(a * 4 + neg)
            continue
        for body in rules:
            if len(body) == 1:
                src.append(body[0][0])
                dst.append(a * 4 + body[0][1])
            else:
                src.append(node(len(body), body))
                dst.append(a * 4)
    thr[const_true] = 0
    before = (len(src), len(thr_extra), set(shared))

    def finish(union, merge):
        """This network with or without the union counts and the merges: the loop over the
        rules above, most of the build's time, runs once for every variant probed."""
        n_union = encode_move_in(union)
        net_src = np.asarray(src + bulk_src, dtype=np.int64)
        net_dst = np.asarray(dst + bulk_dst, dtype=np.int64)
        node_thr = np.concatenate([thr, np.asarray(thr_extra, dtype=np.int64)]).astype(np.int32)
        del src[before[0]:], dst[before[0]:], thr_extra[before[1]:]   # as before encoding
        for key in set(shared) - before[2]:
            del shared[key]
        return _finish_net(net_src, net_dst, node_thr, n_union, merge, n_inputs, list(role_of), eager_outputs,
                           read_outputs, legal_atom, legal_start, n_base, atom_block)
    return finish


def _finish_net(src, dst, node_thr, n_union, merge, n_inputs, does_atoms, eager_outputs, read_outputs, legal_atom,
                legal_start, n_base, atom_block):
    """``_build_net``'s network from its edges: gates, copies bypassed, merges (if ``merge``),
    the goal-only part apart, the CSR arrays and the rebuild order.  Returns (union counts,
    merged nodes, the CompiledGame fields)."""
    src, dst, node_thr, legal_gate, legal_run_end = _gate_legal(src, dst, node_thr, legal_atom, legal_start,
                                                                n_base, atom_block)
    n_nodes = len(node_thr)
    if n_nodes * 4 >= 2 ** 31:
        raise CompileError("the game is too large for the propagation network")
    node_input = np.zeros(n_nodes, dtype=np.uint8)
    node_input[:n_inputs] = 1
    node_input[does_atoms] = 1
    read = node_input == 1
    read[eager_outputs] = True
    read[read_outputs] = True
    src, dst, copies = _bypass_copies(src, dst, node_thr, read)
    merged = np.zeros(n_nodes, dtype=bool)
    if merge:
        src, dst, node_thr, merged = _merge_into_reader(src, dst, node_thr, read, atom_block)
    gone = copies | merged   # nodes left without edges, never to change
    lazy = (reach_back(n_nodes, src, dst >> 2, eager_outputs) == 0) & (node_input == 0) & ~gone
    to_lazy = lazy[dst >> 2]
    if to_lazy.sum() * 8 < len(dst):
        # A small goal-only part (a line or two, as in connectFour) costs less to keep
        # current than to settle at every goal reading: the search reads goals at every leaf.
        lazy[:] = False
        to_lazy[:] = False

    def csr(sel):
        if not sel.any():
            return np.zeros(n_nodes + 1, dtype=np.int64), dst[:0]
        ptr, edges, _ = _csr(src[sel], dst[sel], n_nodes)
        return ptr, edges

    out_start, out_edge = csr(~to_lazy)
    # With legal lists (kernels): the same edges and one per legal atom k, flagged 3, to the
    # counter index n_nodes + 4 * k, walked by the random playouts only.
    lists = _wants_legal_lists(legal_start, legal_run_end)
    list_csr = []
    if lists:
        nl = len(legal_atom)
        if (n_nodes + 4 * nl) * 4 >= 2 ** 31:
            raise CompileError("the game is too large for the propagation network")
        list_start, list_edge, _ = _csr(
            np.concatenate([src[~to_lazy], np.asarray(legal_atom, dtype=np.int64)]),
            np.concatenate([dst[~to_lazy], (n_nodes + 4 * np.arange(nl, dtype=np.int64)) * 4 + 3]), n_nodes)
        list_csr = [list_start, list_edge]
    lazy_start, lazy_edge = csr(to_lazy)
    lazy_src = np.unique(src[to_lazy & ~lazy[src]]).astype(np.int64)
    # Rebuild order: recursive blocks as single groups (ids n_nodes + block).
    order, group, n_blocks = _group_order(n_nodes, src, dst >> 2, atom_block)
    loop_atoms = np.nonzero(atom_block >= 0)[0]
    used = np.zeros(n_nodes + n_blocks, dtype=bool)
    used[group] = True
    order = order[used[order]]
    rb_order = np.where(order < n_nodes, order, -1 - (order - n_nodes))
    block_lazy = np.zeros(n_blocks + 1, dtype=bool)
    block_lazy[atom_block[loop_atoms]] = lazy[loop_atoms]  # a block's atoms reach the same outputs
    item_lazy = np.where(rb_order >= 0, lazy[np.maximum(rb_order, 0)], block_lazy[np.maximum(-1 - rb_order, 0)])
    return n_union, int(merged.sum()), {
        "n_nodes": int(n_nodes), "node_thr": node_thr, "out_start": out_start,
        "out_edge": out_edge.astype(np.int32), "node_input": node_input, "rb_order": rb_order.astype(np.int64),
        # one array each (kernels.lazy_parts and list_parts split it): every function that
        # takes the CompiledGame pays a reference count per array, and the search calls many
        "lazy": np.concatenate([lazy_start, lazy_edge, lazy_src, *list_csr, rb_order[item_lazy]]).astype(np.int64),
        "n_lazy_edge": int(len(lazy_edge)), "n_lazy_src": int(len(lazy_src)),
        "legal_gate": np.stack([legal_gate, legal_run_end]).astype(np.int64).reshape(2, -1),
        "legal_lists": int(lists)}


def _group_order(n, src, tgt, atom_block):
    """A topological order of the network's nodes, each recursive block one group (id
    n + block): (order, group of each node, number of blocks)."""
    n_blocks = int(atom_block.max()) + 1 if len(atom_block) else 0
    group = np.arange(n, dtype=np.int64)
    loop_atoms = np.nonzero(atom_block >= 0)[0]
    group[loop_atoms] = n + atom_block[loop_atoms]
    order = topo_order(n, src, tgt, group, n + n_blocks)
    if len(order) < n + n_blocks:
        raise CompileError("internal: the propagation network has a cycle")
    return order, group, n_blocks


def _in_loops(src, dst, n):
    """Nodes in a recursive component, or read by one (its literals): the edges between them
    are flagged 2, and ``eval_blocks`` computes and reads those nodes' values."""
    loop = (dst & 2) != 0
    in_loop = np.zeros(n, dtype=bool)
    in_loop[src[loop]] = True
    in_loop[dst[loop] >> 2] = True
    return in_loop


def _bypass_copies(src, dst, node_thr, read):
    """Nodes that only copy one input (threshold 1, one edge in: ``x``, or ``not x`` through a
    negated edge) and that nothing reads by value: their edges out move to the input (with
    the polarity flipped for ``not x``), and they are left without edges, never to change.
    Such copies are derived atoms with one one-literal rule, and atoms whose rules were merged
    into one helper (``move_in``, ``factor``): in checkers 474 of them made 18 of a step's 93
    events, each an event of its own after its input's.  Kept: ``read`` (inputs, legal, next,
    terminal and goal atoms, whose values are read from the work buffer), the atoms of
    recursive components and their literals (edges flagged 2: ``eval_blocks`` computes and
    reads those values).
    Returns (src, dst, copies): the rewritten edges and a mask of the bypassed nodes."""
    n = len(node_thr)
    tgt = dst >> 2
    indeg = np.bincount(tgt, minlength=n)
    copies = (indeg == 1) & (node_thr == 1) & ~read & ~_in_loops(src, dst, n)
    if not copies.any():
        return src, dst, copies
    into = copies[tgt]                       # the one edge into each copy
    c = tgt[into]
    root = np.arange(n, dtype=np.int64)
    flip = np.zeros(n, dtype=np.int64)
    root[c] = src[into]
    flip[c] = dst[into] & 1
    # A chain of copies resolves to its first non-copy (the network is acyclic): pointer
    # jumping, the flips adding up along the way.
    while True:
        r = root[c]
        more = copies[r]
        if not more.any():
            break
        flip[c[more]] ^= flip[r[more]]
        root[c[more]] = root[r[more]]
    keep = ~into
    src, dst = src[keep], dst[keep]
    moved = copies[src]
    dst = np.where(moved, dst ^ flip[src], dst)
    src = np.where(moved, root[src], src)
    return src, dst, copies


def _merge_into_reader(src, dst, node_thr, read, atom_block):
    """An OR read only by another OR is part of it, and so is an AND read only by an AND:
    ``OR(OR(a, b), c) = OR(a, b, c)``, ``AND(AND(a, b), c) = AND(a, b, c)``, and through a
    negated edge ``AND(not OR(a, b), c) = AND(not a, not b, c)``, ``OR(not AND(a, b), c) =
    OR(not a, not b, c)``.  Such a node (one edge out, to a node of the matching kind, and
    nothing reading its value: ``read``, recursive components and their literals) gives its
    inputs to its reader and is left without edges.  A change of one of its inputs then
    moves the reader's counter directly, one event instead of two.  In checkers the frame
    axioms keep a cell through an OR of ORs of the move sets that leave it alone. (An OR
    is a node of threshold 1; an AND one whose threshold is its number of inputs; both
    kinds stay what they are after a merge.)  Returns (src, dst, node_thr, merged)."""
    n = len(node_thr)
    tgt = dst >> 2
    loop = (dst & 2) != 0
    indeg = np.bincount(tgt, minlength=n).astype(np.int64)
    outdeg = np.bincount(src, minlength=n)
    thr = node_thr.astype(np.int64)
    is_or = thr == 1
    is_and = (thr == indeg) & (thr >= 1) & ~is_or
    cand = (outdeg == 1) & (indeg >= 2) & ~read & ~_in_loops(src, dst, n) & (is_or | is_and)
    merged = np.zeros(n, dtype=bool)
    if not cand.any():
        return src, dst, node_thr, merged
    out_of = np.full(n, -1, dtype=np.int64)
    ce = np.nonzero(cand[src])[0]
    out_of[src[ce]] = ce
    order = _group_order(n, src, tgt, atom_block)[0]   # inputs before readers: own merges first
    order = order[order < n]
    into = np.full(n, -1, dtype=np.int64)
    flip = np.zeros(n, dtype=np.int64)
    for i in order[cand[order]].tolist():
        e = out_of[i]
        p, neg = int(tgt[e]), int(dst[e] & 1)
        if loop[e] or not (is_or[p] or is_and[p]):
            continue
        same_kind = is_or[p] == is_or[i]
        if same_kind == (neg == 0):   # OR into OR, AND into AND; or through not, the other kind
            if is_and[p]:
                thr[p] += (thr[i] if neg == 0 else indeg[i]) - 1
            indeg[p] += indeg[i] - 1
            into[i], flip[i] = p, neg
            merged[i] = True
    if not merged.any():
        return src, dst, node_thr, merged
    keep = ~merged[src]          # the merged nodes' edges out go
    src, dst = src[keep], dst[keep]
    # Each edge into a merged node goes on to the node that took its inputs, flips adding up.
    t = dst >> 2
    f = np.zeros(len(dst), dtype=np.int64)
    while True:
        m = merged[t]
        if not m.any():
            break
        f[m] ^= flip[t[m]]
        t[m] = into[t[m]]
    dst = t * 4 + (dst & 2) + ((dst & 1) ^ f)
    return src, dst, thr.astype(node_thr.dtype), merged


LEGAL_LIST_MIN_RUN = 128
PROBE_STEPS = 1000  # steps of random playouts per mode: milliseconds in small games, ~0.1 s in skirmish


def _wants_legal_lists(legal_start, run_end) -> bool:
    """Whether the random playouts should pick moves from legal lists kept by the propagation
    (kernels, "Legal lists") rather than scan the legal atoms of the gate runs that are on:
    where some role has a gate run of ``LEGAL_LIST_MIN_RUN`` legal atoms or more, so a scan is
    long (breakthrough 154, checkers 639: 1.16x and 1.06x, docs/benchmarks/engine-internals.md).
    Shorter runs keep the scan: it is cheap there, and legal atoms may flip more often than
    they are scanned (nineBoardTicTacToe: 125 flips a step, runs of 81)."""
    longest = 0
    for r in range(len(legal_start) - 1):
        ends = np.unique(run_end[legal_start[r]:legal_start[r + 1]])   # each run's end, relative
        if len(ends):
            longest = max(longest, int(np.diff(ends, prepend=0).max()))
    return longest >= LEGAL_LIST_MIN_RUN


def _gate_legal(src, dst, node_thr, legal_atom, legal_start, n_base, atom_block):
    """Turn fluents out of the legal atoms' AND nodes.  A "whose turn" fluent is a positive
    input of every legal move of its role, and it flips on every move: its edges were most
    of the edges a step walked (65% in breakthrough), and every legal atom of both roles was
    scanned to pick a move.  For a legal atom that is an AND node, the positive fluent input
    shared by the most legal atoms (if by two or more) becomes its *gate*: the edge goes, the
    threshold drops by one, and the move is legal iff the node and the gate fluent are both
    true (``legal_gate[0, k]``, -1 for none).  Legal atoms of a role come in runs of one gate
    (``legal_gate[1, k]``: the end of k's run, relative to the role's first legal atom), so a
    role whose gate is off is skipped in one test.

    A gated node's own value no longer holds the gate, so a legal atom that feeds other nodes
    is gated only if each of them is a plain OR (threshold 1, positive inputs, outside
    recursive components): "some legal move" in checkers, read by its terminal rule.  There
    the gate is pushed through the OR: OR(g & x1, .., g & xn, y) = OR(g & OR(x1..xn), y), one
    edge from g instead of n (its legal atoms were 56% of the edges a checkers step walked).
    Returns (src, dst, node_thr, legal_gate, legal_run_end); helper nodes are appended."""
    n_nodes = len(node_thr)
    node_thr = node_thr.copy()
    tgt = dst >> 2
    gate = np.full(n_nodes, -1, dtype=np.int64)
    extra_thr = []
    if len(legal_atom) and len(src):
        indeg = np.bincount(tgt, minlength=n_nodes)
        # plain OR nodes: threshold 1, every input positive and not a loop edge, no block
        plain = (node_thr == 1)
        plain[:len(atom_block)] &= atom_block < 0
        plain[tgt[(dst & 3) != 0]] = False
        # a node may be gated if all it feeds is plain ORs
        feeds_other = np.zeros(n_nodes, dtype=bool)
        feeds_other[src[~plain[tgt]]] = True
        ok = np.zeros(n_nodes, dtype=bool)
        ok[legal_atom] = True
        ok[:len(atom_block)] &= atom_block < 0
        ok &= ~feeds_other & (indeg == node_thr) & (node_thr > 0)
        cand = np.nonzero(ok[tgt] & ((dst & 3) == 0) & (src < n_base))[0]
        counts = np.bincount(src[cand], minlength=max(n_base, 1))
        cand = cand[counts[src[cand]] >= 2]
        # per legal atom, the candidate fluent read by the most legal atoms (then the lowest id)
        order = np.lexsort((src[cand], -counts[src[cand]], tgt[cand]))
        first = cand[order[np.unique(tgt[cand][order], return_index=True)[1]]]
        gate[tgt[first]] = src[first]
        node_thr[tgt[first]] -= 1
        keep = np.ones(len(src), dtype=bool)
        keep[first] = False
        # Edges out of gated nodes into ORs: per (OR, gate), one helper g & OR(sources).
        out = np.nonzero(keep & (gate[src] >= 0))[0]
        keep[out] = False
        groups: dict = {}
        for e in out.tolist():
            groups.setdefault((int(tgt[e]), int(gate[src[e]])), []).append(int(src[e]))
        add_src, add_dst = [], []
        for (c, g), members in sorted(groups.items()):
            inner = members[0]
            if len(members) >= 2:
                inner = n_nodes + len(extra_thr)
                extra_thr.append(1)
                add_src.extend(members)
                add_dst.extend([inner * 4] * len(members))
            both = n_nodes + len(extra_thr)
            extra_thr.append(2)
            add_src.extend([g, inner, both])
            add_dst.extend([both * 4, both * 4, c * 4])
        src = np.concatenate([src[keep], np.asarray(add_src, dtype=np.int64)])
        dst = np.concatenate([dst[keep], np.asarray(add_dst, dtype=np.int64)])
    if extra_thr:
        node_thr = np.concatenate([node_thr, np.asarray(extra_thr, dtype=node_thr.dtype)])
    legal_gate = gate[legal_atom] if len(legal_atom) else np.zeros(0, dtype=np.int64)
    run_end = np.zeros(len(legal_atom), dtype=np.int64)
    for r in range(len(legal_start) - 1):
        s, e = int(legal_start[r]), int(legal_start[r + 1])
        end = e - s
        for k in range(e - 1, s - 1, -1):
            if k < e - 1 and legal_gate[k] != legal_gate[k + 1]:
                end = k + 1 - s
            run_end[k] = end
    return src, dst, node_thr, legal_gate, run_end


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
