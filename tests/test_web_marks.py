"""The winning line and a piece in check (agent/web/marks.py), found by asking the rules about
edited states: ticTacToe's and connectFour's lines, chess's check and mate, the same cells
when every symbol is renamed, and how the board draws them."""
from pathlib import Path

import pytest

from agent.match.rules import Scrambler, read_rules
from agent.reasoner.prolog import PrologReasoner
from agent.reasoner.statemachine import CachedStateMachine
from agent.web import boardview as bv
from agent.web.marks import check_cells, winning_cells
from agent.web.work import board_marks
from gdl.kif import parse_rules, parse_term

GAMES = Path(__file__).resolve().parent.parent / "games"
CHESS = "base/games/chess/v0/chess.kif"


def _game(text: str, seconds: float = 2.0):
    d = parse_rules(text)
    sm = CachedStateMachine(PrologReasoner(d))
    return sm, bv.build_view(d, sm, seconds=seconds)


def _play(sm, moves):
    """(state before the last joint move, state after) of a line of moves: the role with a
    choice plays the next move text, the others their only move."""
    st, prev = sm.initial_state(), None
    for text in moves:
        want = parse_term(text)
        joint = []
        for r in range(len(sm.roles)):
            legal = sm.legal_moves(st, r)
            joint.append(want if want in legal else legal[0])
        assert want in joint, text
        prev, st = st, sm.next_state(st, tuple(joint))
    return prev, st


def _marks(sm, view, moves):
    prev, st = _play(sm, moves)
    return board_marks(sm, view, st, prev, bv.changed_cells(view, prev, st)), st


def _rules(path: Path) -> str:
    return read_rules(path.read_text())[0][1:-1]


TTT_WIN = ["(place 1 1)", "(place 2 1)", "(place 2 2)", "(place 3 1)", "(place 3 3)"]
C4_WIN = ["(drop 1)", "(drop 2)", "(drop 1)", "(drop 2)", "(drop 1)", "(drop 2)", "(drop 1)"]


def test_tictactoe_winning_line_is_the_diagonal_and_is_drawn():
    sm, view = _game(_rules(GAMES / "ticTacToe.kif"))
    found, st = _marks(sm, view, TTT_WIN)
    assert found == {"win": [[0, 0], [1, 1], [2, 2]], "check": []}
    svg = bv.render_position(view, st, marks=found)["boards"][0]
    assert svg.count('class="cell win"') + svg.count('class="cell last win"') == 3
    assert 'class="win-line"' in svg
    # before the end nothing is marked
    before, _ = _marks(sm, view, TTT_WIN[:4])
    assert before == {"win": [], "check": []}


def test_a_draw_has_no_winning_line():
    sm, view = _game(_rules(GAMES / "ticTacToe.kif"))
    draw = ["(place 1 1)", "(place 2 2)", "(place 3 3)", "(place 1 2)", "(place 3 2)",
            "(place 3 1)", "(place 1 3)", "(place 2 3)", "(place 2 1)"]
    prev, st = _play(sm, draw)
    assert sm.is_terminal(st) and len({tuple(g) for g in sm.goal_values(st)}) == 1
    assert winning_cells(sm, view.specs[0], st, (), view.owners, view.roles) == []


def test_connectfour_winning_four_in_a_column():
    sm, view = _game(_rules(GAMES / "connectFour.kif"))
    found, _ = _marks(sm, view, C4_WIN)
    assert found["win"] == [[0, 0], [0, 1], [0, 2], [0, 3]]
    assert found["check"] == []          # dropped discs are never captured


@pytest.mark.parametrize("name, moves", [("ticTacToe.kif", TTT_WIN), ("connectFour.kif", C4_WIN)])
def test_the_same_cells_when_every_symbol_is_renamed(name, moves):
    text = _rules(GAMES / name)
    plain = _marks(*_game(text), moves)[0]
    scr = Scrambler(text, seed=4)
    scrambled = _marks(*_game(scr.text(text)), [scr.text(m) for m in moves])[0]
    assert scrambled == plain and plain["win"]


def test_chess_check_and_mate(shared_dir):
    sm, view = _game(_rules(shared_dir / "corpus" / "games" / CHESS), seconds=1.0)
    spec = view.specs[0]
    e8, e1 = spec.grid_xy(("e", "8")), spec.grid_xy(("e", "1"))
    # 1. e4 f5 2. Qh5+: black's king is in check (its one reply is g6, which ends it)
    check = ["(move wp e 2 e 4)", "(move bp f 7 f 5)", "(move wq d 1 h 5)"]
    assert _marks(sm, view, check)[0] == {"win": [], "check": [list(e8)]}
    assert _marks(sm, view, check + ["(move bp g 7 g 6)"])[0]["check"] == []
    # black's queen attacked by the knight (1. e4 d5 2. exd5 Qxd5 3. Nc3) is not in check:
    # the match does not depend on it
    attacked = ["(move wp e 2 e 4)", "(move bp d 7 d 5)", "(move wp e 4 d 5)", "(move bq d 8 d 5)",
                "(move wn b 1 c 3)"]
    assert _marks(sm, view, attacked)[0]["check"] == []
    # fool's mate: the mated king marked; no "line" from edits that only break the rules
    mate = ["(move wp f 2 f 3)", "(move bp e 7 e 5)", "(move wp g 2 g 4)", "(move bq d 8 h 4)"]
    found, st = _marks(sm, view, mate)
    assert sm.is_terminal(st) and found == {"win": [], "check": [list(e1)]}
    svg = bv.render_position(view, st, marks=found)["boards"][0]
    assert svg.count("cell check") == 1 and 'data-x="4" data-y="0"' in svg.split("cell check")[1][:40]


def test_nothing_marked_at_the_start_or_without_a_board():
    sm, view = _game(_rules(GAMES / "ticTacToe.kif"))
    st = sm.initial_state()
    assert check_cells(sm, view.specs[0], view.owners, view.roles, st, None) == []
    assert board_marks(sm, bv.BoardView([]), st, None) == {"win": [], "check": []}


def test_scrambled_chess_check_on_the_same_cell(shared_dir):
    text = _rules(shared_dir / "corpus" / "games" / CHESS)
    scr = Scrambler(text, seed=2)
    sm, view = _game(scr.text(text), seconds=1.0)
    check = ["(move wp e 2 e 4)", "(move bp f 7 f 5)", "(move wq d 1 h 5)"]
    found = _marks(sm, view, [scr.text(m) for m in check])[0]
    assert found["check"] == [list(view.specs[0].grid_xy((scr.forward["e"], "8")))]


def test_a_stroke_only_through_a_straight_line_of_cells():
    sm, view = _game(_rules(GAMES / "ticTacToe.kif"))
    st = sm.initial_state()
    for cells, straight in (([[0, 2], [1, 1], [2, 0]], True), ([[0, 0], [0, 1], [0, 2]], True),
                            ([[0, 0], [1, 2]], False), ([[0, 0], [2, 2]], False)):
        svg = bv.render_position(view, st, marks={"win": cells, "check": []})["boards"][0]
        assert ('class="win-line"' in svg) == straight, cells
        assert svg.count("<title>winning line</title>") == len(cells)
