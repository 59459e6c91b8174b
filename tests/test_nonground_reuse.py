"""scripts/nonground_reuse.py (chess.md's bound on carrying tables across states): the tables
it reads from the work space are the engine's answers, and its shares are shares."""
from __future__ import annotations

import json
from pathlib import Path

from agent.engine.nonground import NonGroundEngine
from gdl.kif import read_rules_file

from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
TTT = ROOT / "games" / "ticTacToe.kif"


def _script():
    return load_script("nonground_reuse")


def test_the_tables_read_hold_the_legal_moves_the_engine_answers():
    reuse = _script()
    ng = NonGroundEngine(read_rules_file(TTT))
    s = ng.initial_state()
    moves = ng.legal_moves(s, 0)
    legal = [(rel, key, ans) for rel, key, ans in reuse.tables(ng) if ng.c.rel_keys[rel][0] == "legal"]
    rows = set().union(*(ans for _, _, ans in legal))
    assert legal and len(rows) == len(moves) == 9
    assert {ng._decoded(rel, row[1:]) for rel, _, ans in legal for row in ans} == set(moves)


def test_reuse_shares_are_fractions_and_calls_only_grow(capsys):
    _script().main([str(TTT), "--plies", "9", "--playouts", "3", "--seed", "1"])
    out = json.loads(capsys.readouterr().out)
    shares = out["same_as_within"]
    assert 0 <= shares["1"] <= shares["2"] <= shares["8"] <= 1
    growth = out["calls_after_each_playout"]
    assert len(growth) == 3 and growth == sorted(growth) and growth[-1] == out["distinct_calls"] > 0
