"""Our own rule sheets in games/: they parse, validate, and play correctly.

These tests need neither ../shared nor network.  The play tests need the Prolog reasoner
(agent.reasoner.prolog) and are skipped only if that module cannot be imported.
"""
from __future__ import annotations

import importlib
import random
from pathlib import Path

import pytest

from gdl.kif import read_rules_file

GAMES_DIR = Path(__file__).resolve().parents[1] / "games"

# game -> (roles, the longest possible game in moves, the goal vectors a finished game may have)
GAMES = {
    "ticTacToe": (["cross", "nought"], 9, {(100, 0), (0, 100), (50, 50)}),
    "connectFour": (["red", "yellow"], 42, {(100, 0), (0, 100), (50, 50)}),
    "nineBoardTicTacToe": (["cross", "nought"], 81, {(100, 0), (0, 100), (50, 50)}),
    # every move advances one of 16 pawns, each at most 6 ranks before it would win
    "breakthrough": (["white", "black"], 2 * 16 * 6, {(100, 0), (0, 100)}),
}
RANDOM_GAMES = 300          # random playouts run inside Prolog, per game
STEPPED_GAMES = 25          # random games stepped through the state-machine API, per game


def rules_path(game: str) -> Path:
    return GAMES_DIR / f"{game}.kif"


def T(text: str):
    """A ground term from text: T('(place 1 1)') -> ('place', '1', '1')."""
    from gdl.kif import parse_term
    return parse_term(text)


def state(*texts: str) -> frozenset:
    return frozenset(T(t) for t in texts)


# ----------------------------------------------------------------------------- reading
@pytest.mark.parametrize("game", sorted(GAMES))
def test_parses_with_roles_base_and_input(game):
    desc = read_rules_file(rules_path(game))
    assert desc.roles == GAMES[game][0]
    heads = {r.head[0] if isinstance(r.head, tuple) else r.head for r in desc.rules}
    assert {"role", "init", "legal", "next", "terminal", "goal", "base", "input"} <= heads
    assert not desc.warnings


def test_games_readme_lists_every_game():
    readme = (GAMES_DIR / "README.md").read_text()
    on_disk = {p.stem for p in GAMES_DIR.glob("*.kif")}
    assert on_disk == set(GAMES)
    for game in GAMES:
        assert f"{game}.kif" in readme


# ----------------------------------------------------------------------------- validator and CLI
@pytest.mark.parametrize("game", sorted(GAMES))
def test_validator_says_valid(game):
    from gdl.validate import check_file, verdict
    desc, problems = check_file(str(rules_path(game)))
    assert desc is not None
    assert verdict(problems) == "valid", "\n".join(map(str, problems))


def test_cli_check_valid_game(capsys):
    from agent.cli import main
    path = str(rules_path("ticTacToe"))
    assert main(["check", path]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"{path}: valid")


def test_cli_check_missing_file(capsys, tmp_path):
    from agent.cli import main
    missing = tmp_path / "nope.kif"
    assert main(["check", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and str(missing) in err and "Traceback" not in err


def test_cli_check_invalid_rules_exit_1(capsys, tmp_path):
    from agent.cli import main
    bad = tmp_path / "bad.kif"
    bad.write_text("(role a)\n(<= (legal a b)\n")        # unbalanced parenthesis
    assert main(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "error" in out and out.strip().splitlines()[-1].startswith(f"{bad}: invalid")


def test_cli_without_command_shows_help(capsys):
    from agent.cli import main
    assert main([]) == 2
    assert "check" in capsys.readouterr().err


# ----------------------------------------------------------------------------- play
_reasoners: dict = {}


@pytest.fixture(scope="module")
def reasoner_for():
    try:
        prolog = importlib.import_module("agent.reasoner.prolog")
    except ImportError as e:  # only while the reasoner is not written yet
        pytest.skip(f"agent.reasoner.prolog is not importable: {e}")

    def get(game):
        if game not in _reasoners:
            _reasoners[game] = prolog.PrologReasoner(read_rules_file(rules_path(game)))
        return _reasoners[game]
    yield get
    for sm in _reasoners.values():
        sm.close()
    _reasoners.clear()


@pytest.mark.parametrize("game", sorted(GAMES))
def test_random_playouts_end_with_one_goal_per_role(game, reasoner_for):
    sm = reasoner_for(game)
    _roles, longest, outcomes = GAMES[game]
    s0 = sm.initial_state()
    seen = {}
    for seed in range(RANDOM_GAMES):
        depth, goals = sm.random_playout(s0, cap=longest + 1, seed=seed)
        assert all(len(vs) == 1 for vs in goals), f"seed {seed}: goals {goals}"
        vector = tuple(vs[0] for vs in goals)
        assert vector in outcomes, f"seed {seed}: goals {vector} after {depth} moves"
        assert 1 <= depth <= longest
        seen[vector] = seen.get(vector, 0) + 1
    # random play must produce wins for both sides (and, in tic-tac-toe, draws)
    assert seen.get((100, 0)) and seen.get((0, 100)), seen
    if game == "ticTacToe":
        assert seen.get((50, 50)), seen


@pytest.mark.parametrize("game", sorted(GAMES))
def test_stepped_random_games_take_turns(game, reasoner_for):
    sm = reasoner_for(game)
    roles, longest, outcomes = GAMES[game]
    rng = random.Random(game)
    for _ in range(STEPPED_GAMES):
        s = sm.initial_state()
        mover = 0
        for _ply in range(longest + 1):
            if sm.is_terminal(s):
                break
            legal = [sm.legal_moves(s, i) for i in range(len(roles))]
            # exactly the player in control has real moves; the other may only wait
            assert T(f"(control {roles[mover]})") in s
            assert legal[1 - mover] == ["noop"]
            assert legal[mover] and "noop" not in legal[mover]
            assert sm.goal_values(s) and all(len(vs) == 1 for vs in sm.goal_values(s))
            s = sm.next_state(s, [rng.choice(m) for m in legal])
            mover = 1 - mover
        else:
            pytest.fail(f"{game} did not end within {longest} moves")
        assert tuple(vs[0] for vs in map(list, sm.goal_values(s))) in outcomes


def play(sm, s, moves):
    """Apply moves given as text, alternating roles from the one in control."""
    roles = sm.roles
    for mv in moves:
        mover = next(i for i, r in enumerate(roles) if ("control", r) in s)
        joint = ["noop"] * len(roles)
        joint[mover] = T(mv)
        assert joint[mover] in sm.legal_moves(s, mover), f"{mv} is not legal"
        s = sm.next_state(s, joint)
    return s


def test_tictactoe_diagonal_win(reasoner_for):
    sm = reasoner_for("ticTacToe")
    s = play(sm, sm.initial_state(), ["(place 1 1)", "(place 1 2)", "(place 2 2)", "(place 1 3)"])
    assert not sm.is_terminal(s)
    assert T("(place 1 1)") not in sm.legal_moves(s, 0)       # taken squares stay taken
    s = play(sm, s, ["(place 3 3)"])
    assert sm.is_terminal(s) and sm.goal_values(s) == [[100], [0]]


def test_connectfour_gravity_full_column_and_vertical_win(reasoner_for):
    sm = reasoner_for("connectFour")
    s = play(sm, sm.initial_state(), ["(drop 4)"] * 6)
    assert {f for f in s if f[0] == "disc"} == {
        T(f"(disc 4 {r} {'red' if r % 2 else 'yellow'})") for r in range(1, 7)}
    assert T("(drop 4)") not in sm.legal_moves(s, 0) and len(sm.legal_moves(s, 0)) == 6
    s = play(sm, sm.initial_state(), ["(drop 1)", "(drop 2)"] * 3 + ["(drop 1)"])
    assert sm.is_terminal(s) and sm.goal_values(s) == [[100], [0]]


def test_connectfour_diagonal_win(reasoner_for):
    sm = reasoner_for("connectFour")
    # red builds the rising diagonal (1,1) (2,2) (3,3) (4,4)
    s = play(sm, sm.initial_state(), ["(drop 1)", "(drop 2)", "(drop 2)", "(drop 3)", "(drop 3)",
                                      "(drop 4)", "(drop 3)", "(drop 4)", "(drop 4)", "(drop 7)"])
    assert not sm.is_terminal(s)
    s = play(sm, s, ["(drop 4)"])
    assert T("(disc 4 4 red)") in s
    assert sm.is_terminal(s) and sm.goal_values(s) == [[100], [0]]


def test_connectfour_full_board_is_a_draw(reasoner_for):
    sm = reasoner_for("connectFour")
    # columns filled in pairs of rows with a pattern that has no four in a line
    full = {T("(control red)")}
    for c in range(1, 8):
        for r in range(1, 7):
            colour = "red" if ((r - 1) // 2 + c) % 2 else "yellow"
            full.add(T(f"(disc {c} {r} {colour})"))
    full = frozenset(full)
    assert sm.is_terminal(full) and sm.goal_values(full) == [[50], [50]]


def test_nineboard_sends_to_matching_board(reasoner_for):
    sm = reasoner_for("nineBoardTicTacToe")
    s0 = sm.initial_state()
    assert len(sm.legal_moves(s0, 0)) == 81                       # first move: anywhere
    s = play(sm, s0, ["(put 5 1)"])
    assert sm.legal_moves(s, 1) == [T(f"(put 1 {c})") for c in range(1, 10)]


def test_nineboard_full_target_board_frees_the_player(reasoner_for):
    sm = reasoner_for("nineBoardTicTacToe")
    # board 1 full with no line (X O X / X O O / O X X), nought sent to board 1
    marks = "XOXXOOOXX"
    s = state("(control nought)", "(target 1)",
              *(f"(stone 1 {i + 1} {'cross' if m == 'X' else 'nought'})" for i, m in enumerate(marks)))
    assert not sm.is_terminal(s)
    moves = sm.legal_moves(s, 1)
    assert len(moves) == 72 and all(m[1] != "1" for m in moves)


def test_nineboard_line_in_any_board_wins(reasoner_for):
    sm = reasoner_for("nineBoardTicTacToe")
    s = play(sm, sm.initial_state(),
             ["(put 9 7)", "(put 7 9)", "(put 9 5)", "(put 5 9)", "(put 9 3)"])
    assert sm.is_terminal(s) and sm.goal_values(s) == [[100], [0]]


def test_breakthrough_moves_and_captures(reasoner_for):
    sm = reasoner_for("breakthrough")
    s0 = sm.initial_state()
    assert len(s0) == 33                                          # 32 pawns and control
    assert len(sm.legal_moves(s0, 0)) == 22                       # 8 straight + 14 diagonal
    # a white pawn on d4 facing a black pawn on d5 and one on e5
    s = state("(control white)", "(pawn 4 4 white)", "(pawn 4 5 black)", "(pawn 5 5 black)",
              "(pawn 1 8 black)")
    moves = sm.legal_moves(s, 0)
    assert T("(step 4 4 4 5)") not in moves                       # no straight capture
    assert set(moves) == {T("(step 4 4 3 5)"), T("(step 4 4 5 5)")}
    s2 = sm.next_state(s, [T("(step 4 4 5 5)"), "noop"])
    assert s2 == state("(control black)", "(pawn 5 5 white)", "(pawn 4 5 black)", "(pawn 1 8 black)")
    assert not sm.is_terminal(s2)


def test_breakthrough_wins(reasoner_for):
    sm = reasoner_for("breakthrough")
    near = state("(control white)", "(pawn 2 7 white)", "(pawn 8 8 black)")
    s = sm.next_state(near, [T("(step 2 7 2 8)"), "noop"])
    assert sm.is_terminal(s) and sm.goal_values(s) == [[100], [0]]
    last = state("(control black)", "(pawn 3 3 white)", "(pawn 4 4 black)")
    s = sm.next_state(last, ["noop", T("(step 4 4 3 3)")])
    assert sm.is_terminal(s) and sm.goal_values(s) == [[0], [100]]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_validator_simulation_finds_nothing(game, reasoner_for):
    from gdl.validate import simulate_check
    assert simulate_check(reasoner_for(game), walks=20) == []
