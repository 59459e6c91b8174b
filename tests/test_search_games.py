"""Tactics on real rule sheets, both drivers: win a won position in one move and block an
immediate loss, in tic-tac-toe and connect four, with our sheets (games/) and the corpus's
(../shared, skipped when absent).  States are built as frozensets of terms."""
from __future__ import annotations

import pytest

from agent.persona import load_persona
from agent.search import SearchSettings, search
from test_search_support import ConnectFour, TicTacToe, c4_variants, ttt_variants

SHARED_MISSING = "../shared (the corpus) is not beside this clone"

CHAMPION = load_persona("champion")


def _engine(kind, path):
    from test_search_support import reasoner
    if kind == "prolog":
        return reasoner(path)
    return compiled(path)


_compiled: dict = {}


def compiled(path):
    from agent.engine import load_engine
    from gdl.kif import read_rules_file
    key = str(path)
    if key not in _compiled:
        _compiled[key] = load_engine(read_rules_file(path), engine="compiled", use_cache=False)
    return _compiled[key]


def _cases(variants):
    out = []
    for name, path, corpus in variants:
        for kind in ("prolog", "compiled"):
            marks = [pytest.mark.skipif(not path.exists(), reason=SHARED_MISSING)] if corpus else []
            out.append(pytest.param(path, corpus, kind, id=f"{name}-{kind}", marks=marks))
    return out


# driver A pays ~1 ms per Prolog query: fewer simulations there, and still enough
LIMITS = {"prolog": 300, "compiled": 1000}
SEEDS = {"prolog": (1, 2), "compiled": (1, 2, 3, 4, 5)}


@pytest.mark.parametrize("path,corpus,kind", _cases(ttt_variants()))
def test_tictactoe_wins_in_one_and_blocks(path, corpus, kind):
    g = TicTacToe(path, corpus)
    eng = _engine(kind, path)
    win = g.state("xx. oo. ...", "x")
    block = g.state("xx. .o. ...", "o")
    for seed in SEEDS[kind]:
        r = search(eng, win, 0, CHAMPION, SearchSettings(seed=seed, limit=LIMITS[kind]))
        assert r.move == g.move(1, 3), (seed, list(zip(r.moves, r.q, r.visits)))
        r = search(eng, block, 1, CHAMPION, SearchSettings(seed=seed, limit=LIMITS[kind]))
        assert r.move == g.move(1, 3), (seed, list(zip(r.moves, r.q, r.visits)))


@pytest.mark.parametrize("path,corpus,kind", _cases(c4_variants()))
def test_connect_four_wins_in_one_and_blocks(path, corpus, kind):
    g = ConnectFour(path, corpus)
    eng = _engine(kind, path)
    win = g.state(["ry", "ry", "ry", "", "", "", ""], "r")             # row 1: red on 1-3
    vertical = g.state(["rrr", "yyy", "", "", "", "", ""], "r")        # red stacks column 1
    block = g.state(["ry", "ry", "r", "", "", "", ""], "y")            # red threatens column 4
    seeds = SEEDS[kind][:1] if kind == "prolog" else SEEDS[kind]
    for seed in seeds:
        assert search(eng, win, 0, CHAMPION, SearchSettings(seed=seed, limit=LIMITS[kind])).move == g.move(4)
        assert search(eng, vertical, 0, CHAMPION, SearchSettings(seed=seed, limit=LIMITS[kind])).move == g.move(1)
        r = search(eng, block, 1, CHAMPION, SearchSettings(seed=seed, limit=LIMITS[kind]))
        assert r.move == g.move(4), (seed, list(zip(r.moves, r.q, r.visits)))


@pytest.mark.parametrize("path,corpus,kind", _cases(ttt_variants()[:1]))
def test_tictactoe_solver_proves_endgame(path, corpus, kind):
    # x to move can fork: (3 3) threatens (1 3)... every line is short enough to prove
    g = TicTacToe(path, corpus)
    eng = _engine(kind, path)
    s = g.state("x.. .o. ..x", "o")     # o must not take a corner... small tree, fully solvable
    r = search(eng, s, 1, CHAMPION, SearchSettings(seed=1, limit=LIMITS[kind] * 3))
    proven = {m: v for m, v in zip(r.moves, r.proven) if v == v}
    assert proven, "no root move proven"
    assert all(v in (0.0, 50.0, 100.0) for v in proven.values())
    # o's only non-losing replies are the edges; corners lose to a fork
    for corner in ((1, 3), (3, 1)):
        if g.move(*corner) in proven:
            assert proven[g.move(*corner)] == 0.0
    assert r.move not in (g.move(1, 3), g.move(3, 1))
