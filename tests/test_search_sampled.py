"""The state-machine search's playouts on an engine with a sampler (the non-ground engine on
legal rules guarded by a check, as chess's are) run in numba (``playout_nonground``): moves
drawn from the candidates, each tested only when drawn.

What must hold: the moves a search plays out are legal, and the draw has playout_move's
distribution over the legal moves (its MAST and uniform halves each restricted to them),
whatever illegal candidates come with them.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from agent.engine.nonground import NonGroundEngine
from agent.persona import load_persona
from agent.reasoner.prolog import PrologReasoner
from agent.search import SearchSettings, driver_sm
from agent.search import tree as T
from agent.search.params import P_CHARGE_DEPTH, P_EPSILON, build
from agent.search.rng import make_rng
from gdl.kif import parse_rules
from test_nonground import GUARDED

# GUARDED without its checks: its legal moves are the candidates GUARDED's sampler draws from
UNGUARDED = (GUARDED.replace("(not (attacked ?r ?y))", "").replace("(not (attacked ?r ?x))", "")
             .replace("(not (attacked a 1))", ""))


def _context(engine, s, seed, epsilon=None, depth=None, nst=True):
    """A decision's context from ``s`` on a fresh tree."""
    sm = driver_sm.CachedStateMachine(engine)
    persona = load_persona("tournament")
    params, rp = build(persona, len(engine.roles), 0, solver=True, limit=100)
    if epsilon is not None:
        params[P_EPSILON] = epsilon
    if depth is not None:
        params[P_CHARGE_DEPTH] = depth
    st = driver_sm.new_sm_tree(sm, s, 100, amaf=False, nst=nst)
    ctx = driver_sm._Ctx(sm, st, params, rp, make_rng(seed), persona)
    assert engine.samples_moves and ctx.loop is not None     # the numba loop plays out
    return ctx


def playouts_are_legal(engine, ref, s0, seeds, n) -> None:
    """The search's playouts from ``s0`` replayed on ``ref``: every move legal where it was
    drawn; where one ended, the end terminal and its scores from ``ref``'s goals."""
    for seed in seeds:
        ctx = _context(engine, s0, seed)
        for _ in range(n):
            pm = []
            exact, goals, _, steps, terminal, _ = ctx.playout(s0, pm, np.ones(len(engine.roles)))
            assert steps == len(pm) > 0
            s = s0
            for row in pm:
                assert not ref.is_terminal(s)
                joint = [ctx.st.move_terms[r][i] for r, i in enumerate(row)]
                for r, m in enumerate(joint):
                    assert m in ref.legal_moves(s, r), (r, m)
                s = ref.next_state(s, joint)
            assert terminal == ref.is_terminal(s)
            if terminal:
                assert exact and list(goals) == list(ctx.scores(None, ref.goal_values(s)))


def test_the_search_plays_out_legal_moves_to_a_terminal_state():
    """Playouts replayed on Prolog."""
    desc = parse_rules(GUARDED)
    engine, ref = NonGroundEngine(desc), PrologReasoner(desc)
    try:
        playouts_are_legal(engine, ref, engine.initial_state(), seeds=(1, 2, 3), n=12)
    finally:
        ref.close()


def test_a_search_on_the_sampler_runs():
    engine = NonGroundEngine(parse_rules(GUARDED))
    r = driver_sm.search(engine, engine.initial_state(), 0, load_persona("tournament"),
                         SearchSettings(seed=3, limit=300))
    assert r.simulations > 50     # (the solver may settle the root before the limit)


def _guarded_choice(sm, free):
    """A state and role where ``free`` (the rules without checks) has legal moves that fail
    their check in ``sm``: (state, role, candidates, legal moves)."""
    from itertools import product
    seen, todo = {sm.initial_state()}, [sm.initial_state()]
    while todo:
        s = todo.pop(0)
        if sm.is_terminal(s):
            continue
        for r in range(len(sm.roles)):
            cands, legal = free.legal_moves(s, r), sm.legal_moves(s, r)
            assert set(legal) <= set(cands)
            if len(legal) >= 2 and len(cands) > len(legal):
                return s, r, cands, legal
        for joint in product(*[sm.legal_moves(s, i) for i in range(len(sm.roles))]):
            n = sm.next_state(s, joint)
            if n not in seen:
                seen.add(n)
                todo.append(n)
    raise AssertionError("no state with a refused candidate")


@pytest.mark.parametrize("epsilon", [0.0, 0.6, 1.0])
def test_the_sampled_draw_is_playout_move_over_the_legal_moves(epsilon):
    """One-ply playouts from a state whose candidates include moves that fail their check:
    the first move's frequencies against playout_move's own draw over the legal moves."""
    engine = NonGroundEngine(parse_rules(GUARDED))
    free = PrologReasoner(parse_rules(UNGUARDED))
    try:
        s, r, cands, legal = _guarded_choice(engine, free)
    finally:
        free.close()
    ctx = _context(engine, s, 5, epsilon=epsilon, depth=1, nst=False)
    ctx.prolog_playout = False   # without MAST or a clock the engine's own playout would run
    ids = ctx.ids(r, cands)
    a = ctx.st.arrays
    a.mast_n[r, ids] = 10            # MAST values far apart: a skewed Gibbs draw
    a.mast_q[r, ids] = np.linspace(0, 100, len(ids))
    n = 6000
    got = Counter()
    for _ in range(n):
        pm = []
        ctx.playout(s, pm, np.ones(2))
        got[ctx.st.move_terms[r][pm[0][r]]] += 1
    legal_ids = np.array([ids[cands.index(m)] for m in legal], np.int32)
    rng = make_rng(9)
    want = Counter(legal[int(T.playout_move(ctx.st.arrays, ctx.p, r, legal_ids, len(legal_ids), rng, -1))]
                   for _ in range(n))
    assert set(got) <= set(legal)
    tv = sum(abs(got[m] - want[m]) for m in legal) / (2 * n)
    assert tv < 0.04, (got, want)
