"""The fast paths of the compiled engine's kernels agree with its plain ones.

Random playouts move the work buffer with ``advance`` (moves on, next values read, moves off
and fluents changed in one propagation), while the search and the StateMachine wrapper use
``next_state`` + ``load_state``.  Both must give the same states on the same moves, including
games with recursive components (hex), simultaneous moves and 3+ roles, and a work buffer
rebuilt from scratch must equal one moved there step by step.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from gdl.kif import read_rules_file

from conftest import needs_shared

pytest.importorskip("pyswip")

from agent.engine import kernels as K  # noqa: E402
from agent.engine import load_engine  # noqa: E402

GAMES_DIR = Path(__file__).resolve().parents[1] / "games"
CORPUS = ["base/games/hex/v0", "aaai2006/games/bunk_s.3359146085/v0", "base/games/smallest_4player/v0"]


def _walks(path: Path, cache_dir: Path, walks: int, seed: int) -> None:
    eng = load_engine(read_rules_file(path), engine="compiled", budget_seconds=120, cache_dir=cache_dir)
    g = eng.game
    rng = random.Random(seed)
    fast, slow = K.new_vals(g), K.new_vals(g)
    buf = np.zeros(2 * int(g.role_nmoves.max()) + 2, dtype=np.int32)
    a, b = np.zeros(g.n_words, dtype=np.uint64), np.zeros(g.n_words, dtype=np.uint64)
    for _ in range(walks):
        K.load_state(g, g.init_state, fast)
        K.load_state(g, g.init_state, slow)
        for _step in range(300):
            assert K.is_terminal(g, fast) == K.is_terminal(g, slow)
            if K.is_terminal(g, fast):
                break
            joint = np.zeros(g.n_roles, dtype=np.int32)
            for r in range(g.n_roles):
                n = K.legal_moves(g, fast, r, buf)
                assert n > 0 and K.legal_moves(g, slow, r, buf[n:]) == n
                joint[r] = buf[rng.randrange(n)]
            K.next_state(g, slow, joint, b)
            K.load_state(g, b, slow)
            K.advance(g, fast, joint)
            K.current_state(g, fast, a)
            assert (a == b).all()
            # same values everywhere (atoms), not only in the state; goal-only atoms are
            # current once settled (settle_goals), as every reader of goals does
            for v in (fast, slow):
                K.settle_goals(g, v)
            assert (fast[:g.n_atoms] == slow[:g.n_atoms]).all()
            # a fresh buffer has no move on; in a game that keeps the moves on between
            # steps (kernels._push_moves), nodes reading moves differ until they are set
            fresh = K.new_vals(g)
            K.load_state(g, b, fresh)
            fresh[g.does_atom] = slow[g.does_atom]
            K._rebuild(g, fresh)
            K.settle_goals(g, fresh)
            assert (fresh[:g.n_atoms] == slow[:g.n_atoms]).all()


@pytest.mark.parametrize("game", ["ticTacToe", "connectFour", "nineBoardTicTacToe"])
def test_advance_agrees_with_next_state(game, tmp_path):
    _walks(GAMES_DIR / f"{game}.kif", tmp_path, walks=5, seed=1)


@needs_shared
@pytest.mark.parametrize("game", CORPUS, ids=lambda g: g.split("/")[2])
def test_advance_agrees_with_next_state_on_corpus_games(game, shared_dir, tmp_path):
    kif = sorted((shared_dir / "corpus" / "games" / game).glob("*.kif"))[0]
    _walks(kif, tmp_path, walks=3, seed=2)
