"""The compiled driver's playout loop moves the engine's work buffer on in place (one
``kernels.step`` per joint move, no packing, no reload), draws MAST moves on the MAST arrays
and skips AMAF statistics when RAVE is off.  None of that may change a search: on the same
compiled engine, the state-machine driver (a Python loop over next_state / load_state, the
Tree-taking playout_move, AMAF always kept) must give exactly the same Q-values and visits,
with the solver on (live play), in thesis mode (fitting), with RAVE, and with a utility.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from agent.engine import load_engine
from agent.persona import load_persona
from agent.search import SearchSettings, driver_compiled, driver_sm
from gdl.kif import read_rules_file

from conftest import needs_shared, sweep

pytest.importorskip("pyswip")

GAMES = Path(__file__).resolve().parents[1] / "games"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def _same(a, b):
    assert a.moves == b.moves
    assert a.q.tolist() == b.q.tolist()
    assert a.visits.tolist() == b.visits.tolist()
    assert a.move == b.move


def _walk_states(eng, plies, seed):
    """The initial state and a few states along a seeded random walk: every 8th ply in the
    suite (the opening and ply 8), every 4th from scripts/full_sweeps.py (ply 4 too: a third
    of these 2.5 minutes of Python search, issue 53)."""
    import random
    rng = random.Random(seed)
    s = eng.initial_state()
    out = [s]
    for _ in range(plies):
        if eng.is_terminal(s):
            break
        s = eng.next_state(s, [rng.choice(eng.legal_moves(s, r)) for r in range(len(eng.roles))])
        if not eng.is_terminal(s):
            out.append(s)
    return out[::sweep(8, 4)]


def _check(eng, persona, limit, thesis, plies=8):
    """Both drivers on states of a walk (the initial state, ply 8 and in full ply 4), each role."""
    for i, state in enumerate(_walk_states(eng, plies, 5)):
        for role in range(len(eng.roles)):
            a = driver_sm.search(eng, state, role, persona,
                                 SearchSettings(seed=100 + i, limit=limit, thesis=thesis))
            b = driver_compiled.search(eng, state, role, persona,
                                       SearchSettings(seed=100 + i, limit=limit, thesis=thesis))
            _same(a, b)


@pytest.mark.parametrize("game", ["connectFour", "breakthrough"])
@pytest.mark.parametrize("thesis", [False, True])
def test_champion_same_search_on_both_drivers(game, thesis, tmp_path):
    eng = load_engine(read_rules_file(GAMES / f"{game}.kif"), engine="compiled", cache_dir=tmp_path)
    _check(eng, load_persona("champion"), 300, thesis)


@pytest.mark.parametrize("name", ["sanguine", "survivor"])
def test_other_personas_same_search_on_both_drivers(name, tmp_path):
    """Presets with RAVE/GRAVE or a utility mix (end-state features, packed at the end)."""
    eng = load_engine(read_rules_file(GAMES / "nineBoardTicTacToe.kif"), engine="compiled",
                      cache_dir=tmp_path)
    _check(eng, load_persona(name), 200, False)


@needs_shared
@pytest.mark.parametrize("rel", ["aaai2006/games/bunk_s.3359146085/v0",     # simultaneous moves
                                 "base/games/smallest_4player/v0"])         # four roles
def test_corpus_games_same_search_on_both_drivers(rel, tmp_path):
    d = SHARED / "corpus" / "games" / rel
    kif = next(d.glob("*.kif"))
    eng = load_engine(read_rules_file(kif), engine="compiled", cache_dir=tmp_path)
    _check(eng, load_persona("champion"), 200, False)
