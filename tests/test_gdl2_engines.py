"""GDL-II percepts (``sees``) on the fast engines, against the Prolog reasoner (issue 52).

For every sheet of ``../shared/corpus/gdl2``: random matches (seeded; moves drawn as a referee
draws them, ``rng.choice`` over each role's legal moves in role order) played on Prolog to the
end, and at every state the compiled engine, built afresh, gives the same terminal test, legal
moves, goal values, every role's percepts of the joint move and next state.  The non-ground
engine does the same on the sheets of ``NONGROUND``.  Battleship costs Prolog seconds a step,
so its match stops after the placement phase and a few volleys (``CAP``); Prolog's percepts in
a late battleship state, where the translation ran out of table space before, are checked
against the compiled engine's on their own.  A GDL-I game has no percepts on any engine, and a
compiled engine read back from the cache has the same percepts.

Everything that reads ``../shared`` is skipped, with the reason, in a clone without it.
"""
from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest

from conftest import ROOT, SHARED, SHARED_MISSING, needs_shared

pytest.importorskip("pyswip")

from agent.engine import load_engine  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

GDL2 = SHARED / "corpus" / "gdl2"
SEEDS = (0, 1, 2)
# Joint moves per match where the whole match costs Prolog too much: battleship places its
# five ships in five steps, then both roles shoot at once (Prolog: seconds a step).
CAP = {"battleship": 7}
SEEDS_OF = {"battleship": (0,), "phantom_connect_4x4": (0, 1), "phantom_connect_5x5": (0,)}
NONGROUND = ("kuhn_poker", "hidden_goofspiel", "phantom_connect_4x4", "battleship")


def _sheets() -> list:
    if not GDL2.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=SHARED_MISSING), id="no-shared")]
    return sorted(p.stem for p in GDL2.glob("*.kif"))


@functools.lru_cache(maxsize=None)
def _desc(name: str):
    return read_rules_file(GDL2 / f"{name}.kif")


@functools.lru_cache(maxsize=None)
def _matches(name: str) -> tuple:
    """Prolog's random matches of the sheet: per seed, a list of steps (state, terminal, legal
    moves per role, goal values, joint move, percepts per role, next state); the last step of
    a finished match is its terminal state (joint move and what follows None)."""
    pl = PrologReasoner(_desc(name))
    out = []
    try:
        for seed in SEEDS_OF.get(name, SEEDS):
            rng, state, steps = random.Random(seed), pl.initial_state(), []
            while len(steps) < CAP.get(name, 1000):
                roles = range(len(pl.roles))
                terminal, goals = pl.is_terminal(state), pl.goal_values(state)
                legal = [pl.legal_moves(state, r) for r in roles]
                if terminal:
                    steps.append((state, terminal, legal, goals, None, None, None))
                    break
                joint = tuple(rng.choice(ms) for ms in legal)
                percepts = [pl.sees(state, joint, r) for r in roles]
                nxt = pl.next_state(state, joint)
                steps.append((state, terminal, legal, goals, joint, percepts, nxt))
                state = nxt
            out.append(steps)
    finally:
        pl.close()
    return tuple(out)


def _replay(sm, name: str) -> int:
    """Every recorded step of the sheet's matches asked of ``sm``; the number of percepts
    compared (the walks must have some: a sheet whose percepts were all empty would prove
    nothing)."""
    seen = 0
    for m, steps in enumerate(_matches(name)):
        assert sm.initial_state() == steps[0][0]
        for k, (state, terminal, legal, goals, joint, percepts, nxt) in enumerate(steps):
            where = f"{name}, match {m}, step {k}"
            assert sm.is_terminal(state) == terminal, where
            assert [sm.legal_moves(state, r) for r in range(len(legal))] == legal, where
            assert sm.goal_values(state) == goals, where
            if joint is None:
                continue
            for r, expected in enumerate(percepts):
                assert sm.sees(state, joint, r) == expected, f"{where}, role {sm.roles[r]}"
                seen += len(expected)
            assert sm.next_state(state, joint) == nxt, where
    return seen


@needs_shared
@pytest.mark.parametrize("name", _sheets())
def test_compiled_engine_agrees_with_prolog_on_every_state(name, tmp_path):
    sm = load_engine(_desc(name), engine="compiled", cache_dir=tmp_path)
    assert sm.info["source"] == "built"
    assert _replay(sm, name) > 0


@needs_shared
@pytest.mark.parametrize("name", NONGROUND)
def test_nonground_engine_agrees_with_prolog_on_every_state(name):
    sm = load_engine(_desc(name), engine="nonground")
    assert _replay(sm, name) > 0


@needs_shared
def test_prolog_percepts_late_in_battleship():
    """The 45th joint move of the brief's walk (seed 0): Prolog ran out of table space there
    when its tabled relations held the state as an argument (every call variant of the
    recursive ``set`` copied the 124-fluent state into its table)."""
    desc = _desc("battleship")
    sm = load_engine(desc, engine="compiled", use_cache=False)
    rng, state = random.Random(0), sm.initial_state()
    for _ in range(45):
        joint = tuple(rng.choice(sm.legal_moves(state, r)) for r in range(len(sm.roles)))
        last, state = state, sm.next_state(state, joint)
    pl = PrologReasoner(desc)
    try:
        for r in range(len(sm.roles)):
            assert pl.sees(last, joint, r) == sm.sees(last, joint, r)
    finally:
        pl.close()


def test_a_gdl1_game_has_no_percepts(tmp_path):
    desc = read_rules_file(ROOT / "games" / "ticTacToe.kif")
    pl = PrologReasoner(desc)
    engines = [pl, load_engine(desc, engine="compiled", cache_dir=tmp_path), load_engine(desc, engine="nonground")]
    try:
        state = pl.initial_state()
        for _ in range(3):
            joint = tuple(pl.legal_moves(state, r)[0] for r in range(len(pl.roles)))
            for sm in engines:
                assert [sm.sees(state, joint, r) for r in range(len(pl.roles))] == [frozenset()] * 2
            state = pl.next_state(state, joint)
    finally:
        pl.close()


@needs_shared
def test_percepts_survive_the_engine_cache(tmp_path):
    desc = _desc("kuhn_poker")
    built = load_engine(desc, engine="compiled", cache_dir=tmp_path)
    cached = load_engine(desc, engine="compiled", cache_dir=tmp_path)
    assert (built.info["source"], cached.info["source"]) == ("built", "cache")
    assert cached.sees_terms == built.sees_terms
    assert _replay(cached, "kuhn_poker") > 0


@needs_shared
def test_the_referee_checks_percepts_before_it_trusts_the_compiled_engine(tmp_path, monkeypatch):
    from agent.engine.compiled import CompiledEngine
    from agent.referee import open_referee

    desc = _desc("kuhn_poker")
    ref = open_referee(desc, 60, cache_dir=tmp_path)
    assert ref.engine == "compiled"
    standby = open_referee(desc, 60, engine="standby", cache_dir=tmp_path).sm
    state, steps = standby.initial_state(), _matches("kuhn_poker")[0]
    joint, percepts = steps[0][4], steps[0][5]
    assert [standby.sees(state, joint, r) for r in range(len(percepts))] == percepts
    standby.close()
    ref.sm.close()
    # an engine whose percepts are wrong (here: none) is not trusted
    monkeypatch.setattr(CompiledEngine, "sees", lambda self, state, joint, r: frozenset())
    ref = open_referee(desc, 60, cache_dir=tmp_path)
    assert ref.engine == "prolog" and "percepts differ" in ref.reason
    ref.sm.close()
