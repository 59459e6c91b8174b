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
    for cmd in ("check", "trace", "bench", "serve", "replay", "persona", "warm"):
        assert cmd in out


def test_warm_runs_what_a_match_runs_and_says_what_it_compiled(capsys, caplog):
    """`warm` (the test command runs it first): the server's own warm-up, its two halves in
    two processes, then whole, complete (a broken piece would log "warm-up incomplete"),
    with the count of numba's compilations."""
    assert main(["warm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warm: ") and "numba compilations in" in out
    assert "warm-up incomplete" not in caplog.text


# ------------------------------------------------------------------ hostile inputs
# Every command answers bad or unsupported rules, and reasoner failures, with one clear line
# on stderr and a non-zero exit status: never a traceback.

WIDE = " ".join(f"a{i}" for i in range(1025))
HOSTILE = {
    # SWI-Prolog skips a clause of over 1024 arguments: the validator refuses the rules
    "wide.kif": f"""(role p) (init (s 0)) (legal p go) (<= (next (s 1)) (does p go))
        (<= terminal (true (s 1))) (goal p 100) (wide {WIDE}) (<= (legal p stay) (wide {WIDE}))""",
    # valid GDL, but no playout ever ends: the playout cap is reached
    "endless.kif": """(role p) (init (s 0)) (legal p go) (<= (next (s 0)) (does p go))
        (<= terminal (true (s 1))) (goal p 100)""",
    # a fluent of 1100 arguments: Prolog plays it (a term), the grounder cannot (a predicate)
    "widefluent.kif": f"""(role p) (init (f {WIDE} a)) (init (s 0)) (legal p go)
        (<= (next (s 1)) (does p go)) (<= (next (f {WIDE} ?x)) (true (f {WIDE} ?x)))
        (<= terminal (true (s 1))) (goal p 100)""",
    "syntax.kif": "(role p) (init (s 0) (legal p go",
}


def _hostile(tmp_path, name):
    path = tmp_path / name
    path.write_text(HOSTILE[name])
    return str(path)


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ggp-persona: "), err
    return lines[0]


@needs_shared
def test_trace_compiled_on_unsafe_rules_is_a_message(capsys):
    """It was a bare ``KeyError: ')'`` from the grounder's literal decoder."""
    game = SHARED / "corpus" / "games" / "benderng" / "games" / "dresdensingleplayer1" / "v0"
    code, _, err = _run(capsys, ["trace", str(game / "dresdensingleplayer1.kif"),
                                 str(PROVER / "benderng-dresdensingleplayer1-v0.json"), "--engine", "compiled"])
    assert code == 1
    assert "invalid rules, not played" in _one_error_line(err) and "unsafe rule" in err


@needs_shared
def test_the_grounder_names_an_unsafe_rule():
    """The decoder's root: an instance of an unsafe rule keeps an unbound variable, which the
    grounder now reports with the rule, instead of a decoder KeyError."""
    from agent.engine.ground import GroundingError, ground
    from gdl.kif import read_rules_file
    game = SHARED / "corpus" / "games" / "benderng" / "games" / "dresdensingleplayer1" / "v0"
    with pytest.raises(GroundingError, match=r"rule for \(next \(andmunur \?barein \?whosell\)\) at line "
                                             r"20 is unsafe"):
        ground(read_rules_file(game / "dresdensingleplayer1.kif"))


def test_over_wide_relations_are_refused_by_every_command(tmp_path, capsys):
    wide = _hostile(tmp_path, "wide.kif")
    code, out, _ = _run(capsys, ["check", wide])
    assert code == 1 and ":2:" in out and "SWI-Prolog's limit of 1,024" in out and "invalid" in out
    for argv in (["trace", wide, str(_trace_of_our_game(tmp_path)[0])],
                 ["bench", wide, "--engine", "prolog", "--seconds", "0.1", "--warmup", "0"]):
        code, _, err = _run(capsys, argv)
        assert code == 1 and "invalid rules, not played" in _one_error_line(err)


@pytest.mark.parametrize("engine", ["prolog", "compiled"])
def test_bench_when_playouts_never_end_is_a_message(tmp_path, capsys, engine):
    code, _, err = _run(capsys, ["bench", _hostile(tmp_path, "endless.kif"), "--engine", engine,
                                 "--seconds", "0.1", "--warmup", "0", "--no-cache"])
    assert code == 1 and "10000" in _one_error_line(err).replace(",", "")


def test_rules_only_prolog_can_load_are_a_message_for_the_compiled_engine(tmp_path, capsys):
    rules = _hostile(tmp_path, "widefluent.kif")
    code, _, err = _run(capsys, ["bench", rules, "--engine", "compiled", "--no-cache",
                                 "--seconds", "0.1", "--warmup", "0"])
    line = _one_error_line(err)
    assert code == 1 and "no compiled engine" in line and "max_procedure_arity" in line
    code, out, _ = _run(capsys, ["bench", rules, "--engine", "prolog", "--seconds", "0.2", "--warmup", "0"])
    assert code == 0 and json.loads(out)["avg_depth"] == 1


def test_syntax_errors_and_missing_files(tmp_path, capsys):
    bad = _hostile(tmp_path, "syntax.kif")
    code, out, _ = _run(capsys, ["check", bad])
    assert code == 1 and "invalid" in out
    for cmd in (["trace", bad, str(_trace_of_our_game(tmp_path)[0])], ["bench", bad]):
        code, _, err = _run(capsys, cmd)
        assert code == 2 and "does not parse" in err
    missing = str(tmp_path / "missing.kif")
    for cmd in (["check", missing], ["bench", missing], ["trace", missing, missing],
                ["replay", missing], ["persona", "show", missing]):
        code, _, err = _run(capsys, cmd)
        assert code == 2 and err.strip(), cmd


def test_replay_of_a_record_with_refused_rules_is_a_failed_record(tmp_path, capsys):
    record = {"matchId": "wide.1", "x-rules": "( " + HOSTILE["wide.kif"] + " )",
              "states": ["( ( s 0 ) )"], "moves": [], "isCompleted": False}
    (tmp_path / "wide.json").write_text(json.dumps(record))
    code, out, _ = _run(capsys, ["replay", str(tmp_path / "wide.json")])
    assert code == 1 and "FAIL" in out and "max_procedure_arity" in out


def test_bad_persona_and_server_config_files_are_messages(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    code, _, err = _run(capsys, ["persona", "show", str(bad)])
    assert code == 1 and "not valid TOML" in err
    code, _, err = _run(capsys, ["serve", "--personas-config", str(bad)])
    assert code == 2 and "not valid TOML" in _one_error_line(err)


def test_personas_config_is_read_with_the_toml_helper(tmp_path):
    from agent.server.config import ConfigError, load_persona_rules
    cfg = tmp_path / "personas.toml"
    cfg.write_text('default = "champion"\n[[match]]\nregex = "^Base\\\\.chess\\\\."\npersona = "sanguine"\n')
    rules, default = load_persona_rules(cfg)
    assert default == "champion" and rules[0].matches("Base.chess.1") and not rules[0].matches("Basexchess")
    cfg.write_bytes(b'default = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_persona_rules(cfg)
