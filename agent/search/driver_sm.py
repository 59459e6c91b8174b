"""Driver A: the persona search over any StateMachine (e.g. the Prolog reasoner).

Python runs the simulation loop and asks the state machine for moves, successors and
goals; every decision of the search itself (selection, values, backpropagation, solver,
MAST draws, final choice) is a numba function of ``tree`` shared with the compiled driver.
Slow but general: this is how the player works when a game cannot be compiled.
"""
from __future__ import annotations

import time
import weakref

import numpy as np

from ..engine import nonground_kernels as NK
from ..reasoner.statemachine import CachedStateMachine, PlayoutCap, ReasonerError
from . import decisive as D
from . import features as F
from . import heuristic as H
from . import leaf as L
from . import playout_nonground as PN
from . import tree as T
from .common import (Progress, SearchResult, SearchSettings, SearchTree, amaf_rows, compact_into, node_capacity,
                     root_choice, root_proven, root_settled, searched, settings_of, start_counts)
from .params import (P_CHARGE_DEPTH, P_DECISIVE, P_EPSILON, P_EVAL_DEPTH, P_GRAVE, P_HORIZON, P_LIMIT, P_ME,
                     P_NST, P_RAVE, P_SOLVER, P_TRANSPOSE, RP_DEFAULT, RP_LAMBDA, build)
from .rng import PLAYOUT, make_rng, randint

_cached: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

# Nodes of a tree grown on a clock: a state machine's search (at most a few thousand
# simulations a second) reaches this only over many decisions of reuse; every node keeps its
# state as terms too (a few KB in chess), so this bounds the tree's memory.  A full pool
# degrades (simulations go on from the frontier), it does not stop the search.
CLOCKED_NODES = 50_000


def cached(sm):
    """One query cache per state machine, kept across decisions (states recur a lot)."""
    if isinstance(sm, CachedStateMachine):
        return sm
    try:
        c = _cached.get(sm)
        if c is None:
            c = _cached[sm] = CachedStateMachine(sm)
        return c
    except TypeError:       # not weak-referenceable: cache for this call only
        return CachedStateMachine(sm)


class _Clocked:
    """A state machine whose queries are timed: ``cost`` estimates what the next real query
    takes (a moving average of those that missed the cache), so that a search on a clock
    starts no query it cannot finish by its deadline."""

    REAL = 1e-3          # shorter than this: a cache hit, says nothing of the engine

    def __init__(self, sm):
        self.sm = sm
        self.roles = sm.roles
        self.cost = 0.0

    def _timed(self, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        dt = time.perf_counter() - t
        if dt > self.REAL:
            self.cost = dt if self.cost == 0.0 else 0.7 * self.cost + 0.3 * dt
        return out

    def legal_moves(self, s, r):
        return self._timed(self.sm.legal_moves, s, r)

    def next_state(self, s, joint):
        return self._timed(self.sm.next_state, s, joint)

    def sees(self, s, joint, r):
        return self._timed(self.sm.sees, s, joint, r)

    def is_terminal(self, s):
        return self._timed(self.sm.is_terminal, s)

    def goal_values(self, s):
        return self._timed(self.sm.goal_values, s)


class _Ctx:
    """Everything one decision's simulations share."""

    def __init__(self, sm, st: SearchTree, params, rp, rng, persona, deadline=None, thesis=False,
                 heuristic=None, decisive=None):
        self.sm = sm
        # decisive.analyse_terms: the moves that may win, those that may stop each (None: no
        # anti-decisive moves), each role's best goal, the narrowing of the first in each
        # state (None: not narrowed); all None without decisive moves
        self.win_moves, self.stoppers, self.best, self.narrowing = decisive or (None, None, None, None)
        self.heuristic = heuristic  # read when params[P_EVAL_DEPTH] > 0
        self.deadline = deadline    # perf_counter time; None: no clock
        self.st = st
        self.p = params
        self.rp = rp
        self.rng = rng
        self.R = len(sm.roles)
        self.me = int(params[P_ME])
        self.out = np.zeros(self.R, np.int32)
        self.values = np.zeros(self.R)
        self.zeros = np.zeros(self.R)
        self.util = None
        self.raw = self.lo = self.hi = self.w = np.zeros(1)
        if rp[RP_LAMBDA, self.me] > 0:
            cal = F.calibrate(sm)
            self.util = (cal, F.FactIndex(sm.roles))
            self.w = F.weight_vector(persona.utility_weights, cal)
            self.lo, self.hi = cal.lo[self.me], cal.hi[self.me]
            self.raw = np.zeros(len(self.w))
        # On an engine with a sampler (the non-ground engine: chess's legal moves each ask
        # whether the king is left attacked) the playouts run in numba (playout_nonground),
        # their moves drawn from the candidates, each tested only when drawn: where nothing
        # reads a ply's number of legal moves (the utility's mobility, the decisive moves) and
        # not in thesis mode (its draws follow the legal order)
        self.engine = getattr(sm, "sm", sm)     # under the query cache
        sampling = (getattr(self.engine, "samples_moves", False) and self.util is None
                    and self.win_moves is None and not thesis)
        self.loop = PN.Loop(self.engine, self.R) if sampling else None
        self.p_mast = params.copy()     # playout_move with its MAST draw always taken
        self.p_mast[P_EPSILON] = 1.0
        if deadline is not None:
            self.sm = _Clocked(sm)
        # Prolog runs a uniform playout in one query; only valid when nothing needs the
        # playout's moves (MAST off, RAVE off), its end state (no utility) or its wins, when no clock
        # runs (one query cannot be cut at a deadline), and not in thesis mode (its moves
        # come from Prolog's random stream, not the playout stream of the seed)
        self.prolog_playout = (params[P_EPSILON] == 0 and params[P_RAVE] == 0 and self.util is None
                               and deadline is None and not thesis and params[P_EVAL_DEPTH] <= 0
                               and decisive is None)

    def late(self) -> bool:
        """Past the deadline, or too near it to finish another reasoner query."""
        return self.deadline is not None and time.perf_counter() + self.sm.cost >= self.deadline

    # ---------------------------------------------------------------- moves
    def ids(self, r: int, moves) -> list:
        st = self.st
        index, terms = st.move_index[r], st.move_terms[r]
        out = []
        for m in moves:
            i = index.get(m)
            if i is None:
                i = index[m] = len(terms)
                terms.append(m)
            out.append(i)
        need = max(len(t) for t in st.move_terms)
        if need > st.arrays.mast_n.shape[1]:
            m = max(need, 2 * st.arrays.mast_n.shape[1])
            st.arrays = T.grow(st.arrays, n_move_ids=m,
                               max_amaf_rows=min(st.arrays.amaf_n.shape[0], amaf_rows(st.capacity, self.R, m)))
        return out

    def expand(self, node: int) -> bool:
        s = self.st.states[node]
        legal = [self.ids(r, self.sm.legal_moves(s, r)) for r in range(self.R)]
        if any(not m for m in legal):
            raise ReasonerError(f"a role has no legal move in a non-terminal state: {sorted(map(str, s))[:8]}")
        counts = np.array([len(m) for m in legal], np.int32)
        moves = np.array([i for m in legal for i in m], np.int32)
        a = self.st.arrays
        if a.meta[T.M_SLOTS] + len(moves) > a.slot_move.shape[0]:
            self.st.arrays = T.grow(a, max_slots=2 * a.slot_move.shape[0] + len(moves))
        return bool(T.init_slots(self.st.arrays, node, counts, moves))

    def widen_root(self, progress) -> None:
        """One-ply look-ahead (live play, on a clock): generate every child of the root where
        only the deciding role moves, before any playout, until the deadline.  A slow engine
        then still knows its immediate wins and losses (``common.fallback_choice``) when
        not one playout finishes; the children would be the first |A| expansions anyway."""
        st, sm, me = self.st, self.sm, self.me
        a = st.arrays
        if T.mover_of(a, 0) != me:
            return
        slots = np.array([a.slot_off[0, r] for r in range(self.R)], np.int32)
        for k in range(int(a.slot_count[0, me])):
            slots[me] = a.slot_off[0, me] + k
            if self.late() or T.pool_full(a):
                return
            if T.get_child(a, 0, slots) >= 0:
                continue
            joint = [st.move_terms[r][a.slot_move[slots[r]]] for r in range(self.R)]
            s2 = sm.next_state(st.states[0], joint)
            if self.late():
                return
            if self.linked(0, [0], slots, s2) < 0:
                term = sm.is_terminal(s2)
                self.add(0, slots, s2, term, self.scores(s2) if term else self.zeros)
            progress(st, 0)

    def linked(self, node: int, path: list, slots, s2) -> int:
        """The node already holding ``s2`` (a transposition, live play only), linked as the
        child of ``node`` for ``slots``; -1 when there is none (or only one on ``path``: a
        repeated state in the same descent is a new node).  As driver B's ``T.tt_find``."""
        a = self.st.arrays
        if self.p[P_TRANSPOSE] <= 0 or T.mover_of(a, node) == T.MIXED:
            return -1
        c = self.st.index.get(s2, -1)
        if c < 0 or c in path:
            return -1
        T.link_child(a, node, slots, c)
        return c

    def add(self, node: int, slots, s2, term, goals) -> int:
        child = int(T.add_child(self.st.arrays, node, slots, term, goals))
        self.st.states.append(s2)
        self.st.index.setdefault(s2, child)
        return child

    # ---------------------------------------------------------------- one simulation
    def simulate(self) -> bool:
        """One simulation; False when the deadline came before it reached its leaf (then
        nothing is backed up).  A playout reached and cut by the deadline ends there as a
        cut-off (charge default, spec 2.4), like one cut by ``charge_depth``."""
        st, p, sm = self.st, self.p, self.sm
        horizon = int(p[P_HORIZON])
        grave = p[P_GRAVE]
        solver = p[P_SOLVER] > 0
        node, ref, depth = 0, 0, 0
        path, jsl = [0], []
        mobility = np.ones(self.R)
        while True:
            a = st.arrays
            if a.terminal[node] or (solver and node != 0 and a.proven[node]) or depth >= horizon:
                break
            if not a.ready[node]:
                if self.late():
                    return False
                if not self.expand(node):
                    break
            a = st.arrays
            L.carry_mobility(mobility, a.slot_count[node])
            if a.visits[node] > grave and a.amaf_row[node] >= 0:
                ref = node
            T.select(a, node, ref, p, self.rng, self.out)
            child = int(T.get_child(a, node, self.out))
            new = child < 0
            if new:
                if T.pool_full(a):
                    a.meta[T.M_FULL_NODES] += 1
                    break            # degrade: simulate from this frontier node
                if self.late():
                    return False
                joint = [st.move_terms[r][a.slot_move[self.out[r]]] for r in range(self.R)]
                s2 = sm.next_state(st.states[node], joint)
                if self.late():
                    return False
                child = self.linked(node, path, self.out, s2)
                if child >= 0:
                    new = False     # a node already searched: the descent goes on
                else:
                    term = sm.is_terminal(s2)
                    goals = self.scores(s2) if term else self.zeros
                    child = self.add(node, self.out, s2, term, goals)
            path.append(child)
            jsl.append(self.out.copy())
            node = child
            depth += 1
            if new:
                break
        a = st.arrays
        extra = 0
        pm: list = []
        s = st.states[node]
        if a.terminal[node] or (solver and node != 0 and a.proven[node]):
            a.meta[T.M_PROVEN_ENDS] += 1
            exact, charged, goals, n_steps = True, False, a.pval[node].copy(), 0
            extra = int(a.pdepth[node])
            end_terminal = bool(a.terminal[node])
        else:
            a.meta[T.M_PLAYOUTS] += 1     # (st.arrays: the playout may grow a copy of it)
            last = [int(a.slot_move[k]) for k in jsl[-1]] if jsl else None
            exact, goals, s, n_steps, end_terminal, charged = self.playout(s, pm, mobility, last)
        if self.util is not None:
            self.features(s, end_terminal, depth + n_steps + extra, mobility)
        L.evaluate(p, self.rp, goals, exact, charged, self.raw, self.lo, self.hi, self.w,
                   self.rng, self.values)
        pmoves = np.array(pm, np.int32).reshape(len(pm), self.R)
        jslots = np.array(jsl, np.int32).reshape(len(jsl), self.R)
        T.backprop(st.arrays, p, np.array(path, np.int64), depth, jslots, pmoves, len(pm),
                   self.values, extra)
        return True

    def playout(self, s, pm: list, mobility: list, last=None):
        """A charge from ``s`` (non-terminal): (exact, goals, end state, steps, terminal,
        charged).  One that has not ended after ``P_EVAL_DEPTH`` plies (when that is on) is
        scored by the game's evaluation, as driver B does: not charged.  ``last``: the move
        ids of the tree's last ply (NST's context for the first playout ply), if any."""
        cd = int(self.p[P_CHARGE_DEPTH])
        ed = int(self.p[P_EVAL_DEPTH])
        cut = cd if ed <= 0 else min(cd, ed)
        sm = self.sm
        if self.prolog_playout and cd > 0:
            seed = randint(self.rng, PLAYOUT, 2 ** 31 - 1)
            try:
                n, gv = sm.random_playout(s, cap=cd, seed=seed)
                return True, self.scores(None, gv), s, n, True, True
            except PlayoutCap:
                return False, self.zeros, s, cd, False, True
        if self.loop is not None:
            return self.playout_in_numba(s, pm, last, cut, ed)
        steps = 0
        terminal = False
        before = None   # (state, joint, chooser) of the last ply, for anti-decisive moves
        while steps < cut:
            # the clock is read before every query: one query is all a deadline can overrun
            if self.late():
                break
            if steps > 0 and sm.is_terminal(s):
                terminal = True
                break
            joint, ids_row, counts = [], [], []
            for r in range(self.R):
                if self.late():
                    break
                before_ply = pm[-1] if pm else last     # NST: the role after r's move in it
                ctx = before_ply[(r + 1) % self.R] if before_ply is not None else -1
                legal = sm.legal_moves(s, r)
                ids = self.ids(r, legal)
                k = int(T.playout_move(self.st.arrays, self.p, r, np.array(ids, np.int32),
                                       len(ids), self.rng, ctx)) if legal else -1
                if k < 0:
                    raise ReasonerError("a role has no legal move in a non-terminal state")
                joint.append(legal[k])
                ids_row.append(ids[k])
                counts.append(len(legal))
            if len(joint) < self.R or self.late():
                break                       # cut by the deadline within this ply
            L.carry_mobility(mobility, np.array(counts, np.int64))
            choosers = [r for r in range(self.R) if counts[r] >= 2]
            chooser = choosers[0] if len(choosers) == 1 else -1
            won = self.first_win(s, joint, chooser) if self.win_moves is not None and chooser >= 0 else None
            if won is not None:
                if before is not None and before[2] >= 0 and before[2] != chooser:
                    saved = self.rescue(before, chooser, won[0])
                    if saved is not None:   # the last ply takes the move that stops the win:
                        m, s = saved        # this ply again, after it
                        c = before[2]
                        pm[-1][c] = self.ids(c, [m])[0]
                        before[1][c] = m
                        continue
                m, s = won
                ids_row[chooser] = self.ids(chooser, [m])[0]
            else:
                if self.stoppers is not None:
                    before = (s, list(joint), chooser)
                s = sm.next_state(s, joint)
            pm.append(ids_row)
            steps += 1
        if not terminal and steps == cut and steps > 0 and not self.late():
            terminal = sm.is_terminal(s)    # reached in the last step allowed
        if terminal:
            return True, self.scores(s), s, steps, True, True
        if ed > 0 and steps == ed:
            # (a state reached at the deadline, its end not asked: the evaluation is still a
            # better guess than the charge default)
            self.st.arrays.meta[T.M_EVALUATED] += 1
            return True, self.heuristic.value(s), s, steps, False, False
        return False, self.zeros, s, steps, False, True

    def playout_in_numba(self, s, pm: list, last, cut: int, ed: int):
        """``playout`` with its plies run by ``playout_nonground.plies``, a few at a time (the
        deadline is read between them): the same draws from the same stream."""
        eng, lp = self.engine, self.loop
        rng0, steps, terminal = self.rng.copy(), 0, False
        pmv = np.zeros((max(cut, 1), self.R), np.int32)
        lastv = np.array(last if last is not None else [-1] * self.R, np.int32)
        goals = np.zeros(self.R, np.int64)
        eng.load(s)
        try:
            while not self.late():
                a = self.st.arrays
                st, ply, x = lp.run(a, self.p, self.p_mast, self.rng, pmv, steps,
                                    min(cut, steps + PN.CHUNK), lastv, goals)
                if st == PN.NEED_IDS:       # the tree's ids for new moves, then that ply
                    steps = ply
                    for r, k, values in lp.missing(x):
                        lp.ids.add(r, k, values, self.ids(r, [eng.move_of(k, values)])[0])
                    continue
                if st == NK.E_OUT:          # nothing of that ply drawn yet
                    steps = ply
                    lp.grow()
                    continue
                if st != NK.OK:             # a pool too small: the same playout again
                    eng.grow_for(st, "a playout")
                    self.rng[:] = rng0
                    steps = 0
                    eng.load(s)
                    continue
                steps, terminal = ply, x == 1
                if terminal or steps >= cut:
                    break
        finally:
            eng.unload()
        pm.extend(pmv[:steps].tolist())
        if terminal:
            return True, self.scores(None, [[int(g)] for g in goals]), s, steps, True, True
        if ed > 0 and steps == ed:
            self.st.arrays.meta[T.M_EVALUATED] += 1
            return True, self.heuristic.value(eng.loaded_state()), s, steps, False, False
        return False, self.zeros, s, steps, False, True

    def first_win(self, s, joint, c):
        """Driver B's ``_take_win``: role ``c``'s first legal candidate (in the legal order)
        that, with the others' moves of ``joint``, reaches a terminal state with its best
        goal: (move, that state), else None."""
        sm = self.sm
        may = self.win_moves[c] if self.narrowing is None else self.win_moves[c] & D.near_moves(self.narrowing, s, c)
        for m in sm.legal_moves(s, c):
            if m in may:
                trial = list(joint)
                trial[c] = m
                after = sm.next_state(s, trial)
                if sm.is_terminal(after) and sm.goal_values(after)[c] >= self.best[c]:
                    return m, after
        return None

    def rescue(self, before, d, win):
        """Driver B's ``_rescue``: role ``d`` wins at once with ``win`` after the last ply's
        ``before`` (state, joint, chooser ``c``).  ``c``'s first other legal move that may stop
        ``win`` after which the game goes on and ``d``, choosing alone, has no win: (move, the
        state after it), else None.  Where the candidates are narrowed, then ``c``'s other
        moves too (a move that enabled the win: ``_rescue``'s pass 1)."""
        s, joint, c = before
        stoppers = self.stoppers[(d, win)]
        sm = self.sm
        legal = sm.legal_moves(s, c)
        first = [m for m in legal if (c, m) in stoppers]
        rest = [m for m in legal if (c, m) not in stoppers] if self.narrowing is not None else []
        for m in first + rest:
            if m == joint[c]:
                continue
            trial = list(joint)
            trial[c] = m
            after = sm.next_state(s, trial)
            if sm.is_terminal(after):
                continue
            answer = [sm.legal_moves(after, r) for r in range(self.R)]
            if any(len(answer[r]) != 1 for r in range(self.R) if r != d):
                continue
            if self.first_win(after, [ms[0] for ms in answer], d) is None:
                return m, after
        return None

    def scores(self, s, goal_values=None) -> np.ndarray:
        """What each role scores in ``s`` (leaf.goal_scores)."""
        out = np.zeros(self.R)
        L.goal_scores(L.read_goals(self.sm.goal_values(s) if goal_values is None else goal_values), out)
        return out

    def features(self, s, terminal: bool, length: int, mobility) -> None:
        """The raw features of the end state ``s`` into ``self.raw``."""
        cal, facts = self.util
        sm = self.sm
        if not terminal and not self.late():   # past the deadline: mobility as carried so far
            L.carry_mobility(mobility, np.array([len(sm.legal_moves(s, r)) for r in range(self.R)], np.int64))
        self.raw[:] = F.raw_features(s, terminal, sm.goal_values(s), length, mobility, self.me,
                                     facts, cal.relations)


def new_sm_tree(sm, state, max_nodes: int, amaf: bool = True, nst: bool = False) -> SearchTree:
    """``amaf=False`` (a persona without RAVE: nothing reads or writes AMAF statistics):
    one AMAF row, which compaction keeps at one, instead of up to ``AMAF_BYTES`` copied at
    every widening of the move ids.  ``nst``: an NST table (live play, ``P_NST``)."""
    R = len(sm.roles)
    m0 = 16
    max_nodes = node_capacity(max_nodes, R, 0, 4)
    arrays = T.new_tree(R, m0, max_nodes, max_nodes * 4 + 64, amaf_rows(max_nodes, R, 256) if amaf else 1,
                        0, T.NST_SLOTS if nst else 1)
    st = SearchTree("sm", arrays, state, [[] for _ in range(R)], [{} for _ in range(R)], [state], {state: 0})
    term = sm.is_terminal(state)
    goals = np.zeros(R)
    if term:
        L.goal_scores(L.read_goals(sm.goal_values(state)), goals)
    T.reset_root(st.arrays, term, goals)
    return st


def search(sm, state, role_index: int, persona, settings: SearchSettings | None = None,
           tree: SearchTree | None = None, on_progress=None, **keywords) -> SearchResult:
    """``settings.material`` and ``threads`` are the compiled driver's: this one searches one
    tree and tries moves without a material prior."""
    t0 = time.perf_counter()
    s = settings_of(settings, keywords)
    seed, limit, seconds, solver, max_nodes, thesis = s.seed, s.limit, s.seconds, s.solver, s.max_nodes, s.thesis
    heuristic = s.heuristic
    engine = sm
    sm = cached(sm)
    R = len(sm.roles)
    params, rp = build(persona, R, role_index, solver=solver, limit=limit, thesis=thesis,
                       eval_depth=H.EVAL_DEPTH if heuristic is not None else 0)
    if thesis:
        tree = None     # spec 2.1: a fresh tree and MAST table per decision
    n_limit = int(params[P_LIMIT]) if (limit is not None or seconds is None) else None
    if sm.is_terminal(state):
        raise ValueError("cannot search from a terminal state")
    want = max_nodes or ((n_limit + 1) if n_limit else CLOCKED_NODES)
    if seconds is not None and max_nodes is None:
        # on a clock the persona's ``limit`` (the tournament preset's is 10 million) is not
        # what this driver can reach: its arrays would be sized for it (TREE_BYTES), and
        # every widening of the slots copied them, in the time and memory of the search
        want = min(want, CLOCKED_NODES)
    st = tree if (tree is not None and tree.kind == "sm" and tree.root_state == state) else None
    if st is not None:      # its search goes on: MAST kept (driver_compiled._tree_for says why)
        room = st.nodes + want                           # room for this decision's nodes
        if seconds is not None:
            room = min(room, max(CLOCKED_NODES, st.nodes))  # on a clock: the bound holds
        if max_nodes is None and room > st.capacity:
            st = compact_into(st, 0, room)
    else:
        st = new_sm_tree(sm, state, want, amaf=params[P_RAVE] > 0, nst=params[P_NST] > 0)
    rng = make_rng(seed)
    deadline = None if seconds is None else t0 + seconds
    decisive = D.analyse_terms(engine) if params[P_DECISIVE] > 0 else None
    ctx = _Ctx(sm, st, params, rp, rng, persona, deadline, thesis, heuristic, decisive)
    if not st.arrays.ready[0] and not ctx.expand(0):
        raise MemoryError("no room for the root's moves")
    progress = Progress(on_progress, params, role_index, rp[RP_DEFAULT, role_index])
    progress(ctx.st, 0)
    if deadline is not None and not thesis:
        ctx.widen_root(progress)
    start_counts(ctx.st.arrays)
    sims = 0
    while (n_limit is None or sims < n_limit) and not ctx.late() and not root_settled(ctx.st.arrays, params):
        sims += ctx.simulate()
        progress(ctx.st, sims)
    progress(ctx.st, sims, final=True)
    return finish(ctx.st, params, rp, rng, role_index, sims, t0)


def finish(st: SearchTree, params, rp, rng, me: int, sims: int, t0: float) -> SearchResult:
    a = st.arrays
    ids, q, n, k = root_choice(a, params, rp[RP_DEFAULT, me], rng, me)
    moves = [st.move_terms[me][i] for i in ids]
    return SearchResult(move=moves[k], moves=moves, q=q, visits=n, simulations=sims,
                        elapsed=time.perf_counter() - t0, tree=st, proven=root_proven(a, me),
                        nodes=st.nodes, pool_full=int(a.meta[T.M_FULL_NODES]), **searched(a))
