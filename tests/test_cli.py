"""The ``trace``, ``bench``, ``serve`` and ``replay`` subcommands: exit statuses, output shape,
and that a divergence or a broken engine is reported, not hidden."""
from __future__ import annotations

import json

import pytest

from agent.cli import main

from conftest import ROOT, SHARED, needs_shared

TTT = str(ROOT / "games" / "ticTacToe.kif")
PROVER = SHARED / "reference" / "prover"
CORPUS_TTT = SHARED / "corpus" / "games" / "base" / "games" / "ticTacToe" / "v0" / "ticTacToe.kif"


def _trace_of_our_game(tmp_path, moves=3):
    """A ggp-trace/1 file for our tic-tac-toe made with the Prolog reasoner."""
    from agent.reasoner.prolog import PrologReasoner
    from gdl.kif import read_rules_file
    from gdl.terms import render

    sm = PrologReasoner(read_rules_file(TTT))
    s, steps = sm.initial_state(), []
    for _ in range(moves):
        legal = [[render(m) for m in sm.legal_moves(s, i)] for i in range(2)]
        step = {"state": sorted(render(f) for f in s), "terminal": sm.is_terminal(s), "legal": legal,
                "goals": sm.goal_values(s)}
        joint = [sm.legal_moves(s, i)[0] for i in range(2)]
        step["move"] = [render(m) for m in joint]
        steps.append(step)
        s = sm.next_state(s, joint)
    steps.append({"state": sorted(render(f) for f in s), "terminal": sm.is_terminal(s),
                  "legal": [[render(m) for m in sm.legal_moves(s, i)] for i in range(2)],
                  "goals": sm.goal_values(s)})
    trace = {"format": "ggp-trace/1", "game": "ours/ticTacToe", "rules": "games/ticTacToe.kif",
             "roles": [render(r) for r in sm.roles], "walks": [{"seed": 1, "truncated": True, "steps": steps}]}
    sm.close()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    return path, trace


@pytest.mark.parametrize("engine", ["prolog", "compiled"])
def test_trace_exact_and_divergent(tmp_path, capsys, engine):
    path, trace = _trace_of_our_game(tmp_path)
    assert main(["trace", TTT, str(path), "--engine", engine]) == 0
    out = capsys.readouterr().out
    assert "exact agreement" in out and "state 4/4" in out
    trace["walks"][0]["steps"][2]["legal"][0].pop()  # the recorded list misses a move
    path.write_text(json.dumps(trace))
    assert main(["trace", TTT, str(path), "--engine", engine]) == 1
    out = capsys.readouterr().out
    assert "first divergence: walk 0 step 2 field legal" in out and "legal 3/4" in out


def test_trace_usage_errors(tmp_path, capsys):
    assert main(["trace", TTT, str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    assert main(["trace", TTT, str(bad)]) == 2
    assert "not a ggp-trace/1 file" in capsys.readouterr().err


@needs_shared
def test_trace_reference_file():
    assert main(["trace", str(CORPUS_TTT), str(PROVER / "base-ticTacToe-v0.json"), "--engine", "compiled"]) == 0


def test_bench_both_engines_prints_rates_and_ratio(capsys):
    assert main(["bench", TTT, "--engine", "both", "--seconds", "0.5", "--warmup", "0.2"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x.get("engine") for x in lines[:2]] == ["prolog", "compiled"]
    for x in lines[:2]:
        assert x["playouts_per_sec"] > 0 and x["playouts"] > 0
        assert 5 <= x["avg_depth"] <= 9  # tic-tac-toe: at least 5 and at most 9 marks
        assert 0 <= x["avg_goals"] <= 100
        assert x["state_changes_per_sec"] == pytest.approx(x["playouts_per_sec"] * x["avg_depth"], rel=0.01)
    assert lines[2]["compiled_over_prolog"] > 1


def test_bench_compiled_failure_is_exit_1(capsys, tmp_path):
    # A game whose grounding cannot finish: the counter never stops growing.
    rules = tmp_path / "unbounded.kif"
    deep = "(s " * 40 + "0" + ")" * 40
    rules.write_text("(role p) (init (c 0)) (<= (next (c (s ?x))) (true (c ?x))) (legal p go) "
                     f"(<= terminal (true (c {deep}))) (goal p 100)")
    assert main(["bench", str(rules), "--engine", "compiled", "--budget", "1", "--no-cache",
                 "--seconds", "0.1", "--warmup", "0"]) == 1
    assert "no compiled engine" in capsys.readouterr().err


def test_bench_usage_errors(capsys, tmp_path):
    assert main(["bench", str(tmp_path / "nope.kif")]) == 2
    assert main(["bench", TTT, "--seconds", "0"]) == 2
    broken = tmp_path / "broken.kif"
    broken.write_text("(role a) (init (x)")
    assert main(["bench", str(broken)]) == 2
    assert "does not parse" in capsys.readouterr().err


def test_serve_rejects_bad_settings(capsys):
    assert main(["serve", "--port", "70000"]) == 2
    assert main(["serve", "--name", "two words"]) == 2
    assert main(["serve", "--persona", "no-such-persona"]) == 2
    err = capsys.readouterr().err
    assert "--port" in err and "--name" in err


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for cmd in ("check", "trace", "bench", "serve", "replay", "persona"):
        assert cmd in out
