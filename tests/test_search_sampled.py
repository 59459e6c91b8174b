"""The state-machine search draws its playout moves from the engine's candidates when the
engine has a sampler (``NonGroundEngine.move_candidates``: legal rules guarded by a check,
as chess's are), testing each candidate only when drawn (``driver_sm._Ctx.sampled_move``).

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
from agent.search import driver_sm
from agent.search import tree as T
from agent.search.params import P_EPSILON, build
from agent.search.rng import make_rng
from gdl.kif import parse_rules
from test_nonground import GUARDED


class Recording:
    """The engine, every joint move of a next_state checked against its legal moves."""

    def __init__(self, sm):
        self.sm = sm
        self.roles = sm.roles
        self.joints = 0
        self.candidates = 0

    def next_state(self, s, joint):
        for i, m in enumerate(joint):
            assert m in self.sm.legal_moves(s, i), (sorted(map(str, s)), i, m)
        self.joints += 1
        return self.sm.next_state(s, joint)

    def move_candidates(self, s, r):
        self.candidates += 1
        return self.sm.move_candidates(s, r)

    def __getattr__(self, attr):
        return getattr(self.sm, attr)


def test_a_search_plays_out_only_legal_moves_drawn_from_candidates(monkeypatch):
    """The Python loop (the numba one plays the same playouts: below)."""
    monkeypatch.setattr(driver_sm.PN, "Loop", lambda *a: None)
    sm = Recording(NonGroundEngine(parse_rules(GUARDED)))
    s0 = sm.initial_state()
    r = driver_sm.search(sm, s0, 0, load_persona("tournament"), seed=3, limit=300)
    assert r.simulations > 50     # (the solver may settle the root before the limit)
    assert sm.candidates > 0 and sm.joints > 0


def _contexts(engine, s, seed):
    """Two decisions' contexts from ``s`` on fresh trees, the same random stream: the first
    plays out in numba, the second in Python."""
    out = []
    for loop in (True, False):
        sm = driver_sm.CachedStateMachine(engine)
        persona = load_persona("tournament")
        params, rp = build(persona, len(engine.roles), 0, solver=True, limit=100)
        st = driver_sm.new_sm_tree(sm, s, 100, amaf=False, nst=True)
        ctx = driver_sm._Ctx(sm, st, params, rp, make_rng(seed), persona)
        assert ctx.sampling and ctx.loop is not None
        if not loop:
            ctx.loop = None
        out.append(ctx)
    return out


def playouts_agree(engine, s, seeds, n):
    """The numba loop and the Python loop: the same moves, ends and scores."""
    for seed in seeds:
        fast, slow = _contexts(engine, s, seed)
        for _ in range(n):
            pm_f, pm_s = [], []
            a = fast.playout(s, pm_f, np.ones(len(engine.roles)))
            b = slow.playout(s, pm_s, np.ones(len(engine.roles)))
            moves_f = [[fast.st.move_terms[r][i] for r, i in enumerate(row)] for row in pm_f]
            moves_s = [[slow.st.move_terms[r][i] for r, i in enumerate(row)] for row in pm_s]
            assert moves_f == moves_s
            assert (a[0], a[3], a[4], a[5]) == (b[0], b[3], b[4], b[5])
            assert list(a[1]) == list(b[1])
            assert len(pm_f) == a[3] > 0


def test_the_numba_playouts_are_the_python_ones():
    engine = NonGroundEngine(parse_rules(GUARDED))
    playouts_agree(engine, engine.initial_state(), seeds=(1, 2, 3), n=12)


def _guarded_choice(sm):
    """A state and role whose candidates include moves that fail their check."""
    from itertools import product
    seen, todo = {sm.initial_state()}, [sm.initial_state()]
    while todo:
        s = todo.pop(0)
        if sm.is_terminal(s):
            continue
        for r in range(len(sm.roles)):
            cands, legal = sm.move_candidates(s, r), sm.legal_moves(s, r)
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
    engine = NonGroundEngine(parse_rules(GUARDED))
    s, r, cands, legal = _guarded_choice(engine)
    sm = driver_sm.cached(engine)
    persona = load_persona("tournament")
    params, rp = build(persona, 2, 0, solver=True, limit=100)
    params[P_EPSILON] = epsilon
    st = driver_sm.new_sm_tree(sm, s, 100, amaf=False, nst=False)
    ctx = driver_sm._Ctx(sm, st, params, rp, make_rng(5), persona)
    ctx.sampling = True
    ids = ctx.ids(r, cands)
    st.arrays.mast_n[r, ids] = 10            # MAST values far apart: a skewed Gibbs draw
    st.arrays.mast_q[r, ids] = np.linspace(0, 100, len(ids))
    n = 6000
    got = Counter(cands[ctx.sampled_move(s, r, ids, -1)] for _ in range(n))
    legal_ids = np.array([ids[cands.index(m)] for m in legal], np.int32)
    rng = make_rng(9)
    want = Counter(legal[int(T.playout_move(st.arrays, params, r, legal_ids, len(legal_ids), rng, -1))]
                   for _ in range(n))
    assert set(got) <= set(legal)
    tv = sum(abs(got[m] - want[m]) for m in legal) / (2 * n)
    assert tv < 0.04, (got, want)
