"""Board detection from the rules' structure (gdl/board.py): coordinates over integers or
chains, content, background, cells and clicked moves; the same boards when every symbol is
renamed."""
import re
from pathlib import Path

from agent.match.rules import Scrambler, read_rules
from agent.reasoner.prolog import PrologReasoner
from agent.web.boardview import build_view
from gdl.board import arithmetic_orders, cells, chains, detect_board, move_cells, sample_states, static_relations
from gdl.kif import parse_rules, read_rules_file

GAMES = Path(__file__).resolve().parent.parent / "games"

# A 3x2 board whose columns are constants ordered only by a chain fact relation; the piece
# moves from cell to cell; a counter (step) and a unary fluent are not boards.
CHAIN_GAME = """
(role p)
(after left mid) (after mid right)
(row 1) (row 2)
(init (at left 1 stone)) (init (at right 2 gem)) (init (step 0))
(<= (legal p (slide ?x ?y ?x2 ?y)) (true (at ?x ?y stone)) (after ?x ?x2))
(<= (legal p wait) (true (step 0)))
(<= (next (at ?x2 ?y stone)) (does p (slide ?x ?y ?x2 ?y)))
(<= (next (at ?x ?y stone)) (true (at ?x ?y stone)) (does p wait))
(<= (next (at ?x ?y gem)) (true (at ?x ?y gem)))
(<= (next (step 1)) (true (step 0)))
(<= terminal (true (step 1)))
(goal p 100)
"""


def _specs(text: str):
    d = parse_rules(text)
    sm = PrologReasoner(d)
    return d, sm, detect_board(d, sample_states(sm, walks=3, steps=40, seconds=30))


def test_tictactoe_board_and_blank_background():
    d = read_rules_file(GAMES / "ticTacToe.kif")
    sm = PrologReasoner(d)
    specs = detect_board(d, sample_states(sm, walks=3, steps=20))
    s = specs[0]
    assert (s.relation, s.coord_args, s.content_args) == ("square", (0, 1), (2,))
    assert s.coord_values == (("1", "2", "3"), ("1", "2", "3"))
    assert s.background == "blank"          # it fills the whole board at the start
    assert set(s.content_values) == {"blank", "cross", "nought"}
    grid = cells(s, sm.initial_state())
    assert len(grid) == 9 and all(v == ["blank"] for v in grid.values())
    assert move_cells(s, ("place", "2", "3")) == [(1, 2)]
    assert move_cells(s, "noop") == []


def test_chain_orders_constant_coordinates_and_counters_are_not_boards():
    d, sm, specs = _specs(CHAIN_GAME)
    assert chains(d) == [["left", "mid", "right"]]
    assert [s.relation for s in specs] == ["at"]
    s = specs[0]
    assert s.coord_values == (("left", "mid", "right"), ("1", "2"))
    assert cells(s, sm.initial_state()) == {(0, 0): ["stone"], (2, 1): ["gem"]}
    # from-cell then to-cell, in the fluent's coordinate order
    assert move_cells(s, ("slide", "left", "1", "mid", "1")) == [(0, 0), (1, 0)]


def test_same_board_when_every_symbol_is_renamed():
    text = read_rules((GAMES / "breakthrough.kif").read_text())[0][1:-1]  # rules, no comments
    scr = Scrambler(text, seed=3)
    plain = _specs(text)[2][0]
    scrambled = _specs(scr.text(text))[2][0]
    assert scrambled.relation == scr.forward[plain.relation] != plain.relation
    assert scrambled.coord_args == plain.coord_args
    assert scrambled.coord_values == plain.coord_values     # integers are never renamed
    assert sorted(scr.forward[c] for c in plain.content_values) == list(scrambled.content_values)


def test_scrambled_chain_still_orders():
    scr = Scrambler(CHAIN_GAME, seed=1)
    d, sm, specs = _specs(scr.text(CHAIN_GAME))
    assert specs[0].coord_values[0] == tuple(scr.forward[c] for c in ("left", "mid", "right"))


def test_chain_must_be_one_line_or_one_ring():
    forked = parse_rules("(role p) (s a b) (s a c) (u 1 2) (u 3 4) (v x y) (v y x) (v z w) (v w z)")
    assert chains(forked) == []
    ring = parse_rules("(role p) (t y z) (t z x) (t x y)")   # a torus side, cut at its first constant
    assert chains(ring) == [["x", "y", "z"]]
    assert chains(parse_rules("(role a) (role b) (opp a b) (opp b a)")) == []   # 2-ring: alternation


def test_roles_in_turn_order_are_not_coordinates():
    text = """(role r1) (role r2) (role r3) (after r1 r2) (after r2 r3) (n 1) (n 2) (n 3)
    (init (score r1 1)) (init (score r2 2)) (init (score r3 3)) (init (turn r1))
    (<= (legal ?r wait) (role ?r)) (<= (next (score ?r ?s)) (true (score ?r ?s)))
    (<= (next (turn ?y)) (true (turn ?x)) (after ?x ?y)) (<= terminal (true (turn r3)))
    (<= (goal ?r 0) (role ?r))"""
    assert _specs(text)[2] == []


def test_no_board_in_a_game_without_a_grid():
    text = """(role p) (init (count 3))
    (<= (legal p (take 1)) (true (count ?n)) (distinct ?n 0))
    (<= (next (count 2)) (true (count 3))) (<= (next (count 1)) (true (count 2)))
    (<= (next (count 0)) (true (count 1))) (<= terminal (true (count 0))) (goal p 100)"""
    assert _specs(text)[2] == []


def test_board_of_boards_pairs_four_coordinates():
    text = """(role p) (i 1) (i 2)
    (<= (init (m ?a ?b ?c ?d e)) (i ?a) (i ?b) (i ?c) (i ?d))
    (<= (legal p (put ?a ?b ?c ?d)) (true (m ?a ?b ?c ?d e)))
    (<= (next (m ?a ?b ?c ?d x)) (does p (put ?a ?b ?c ?d)))
    (<= (next (m ?a ?b ?c ?d ?v)) (true (m ?a ?b ?c ?d ?v)) (not (does p (put ?a ?b ?c ?d))))
    (<= terminal (true (m 2 2 2 2 x))) (goal p 100)"""
    s = _specs(text)[2][0]
    assert s.coord_args == (0, 1, 2, 3) and (s.width, s.height) == (4, 4)
    assert s.grid_xy(("2", "1", "1", "2")) == (2, 1)
    assert move_cells(s, ("put", "2", "2", "2", "2")) == [(3, 3)]


# ------------------------------------------------------------------ orders by arithmetic facts

def test_arithmetic_facts_order_coordinates_where_no_chain_does():
    # a step constant makes (add c ?x ?y) a successor; a step of two makes two lines (none)
    plus = parse_rules("(role p) (add one a b) (add one b c) (add one c d) (add two a c) (add two b d)")
    assert chains(plus) == []
    assert arithmetic_orders(static_relations(plus)) == [["a", "b", "c", "d"]]
    # the step in the middle: (sum ?x k ?y)
    mid = parse_rules("(role p) (sum q k r) (sum r k s) (sum s k t)")
    assert arithmetic_orders(static_relations(mid)) == [["q", "r", "s", "t"]]
    # a strict total order given as all its pairs, smallest first
    less = parse_rules("(role p) (lt m n) (lt m o) (lt n o) (lt m z) (lt n z) (lt o z)")
    assert arithmetic_orders(static_relations(less)) == [["m", "n", "o", "z"]]
    # neither a line nor an order: a pair both ways, or a fork with a missing pair
    assert arithmetic_orders(static_relations(parse_rules("(role p) (lt m n) (lt n m) (lt m o)"))) == []
    assert arithmetic_orders(static_relations(parse_rules("(role p) (lt m n) (lt m o) (lt m z) (lt n o)"))) == []


KNIGHT_THROUGH = "base/games/knightThrough/v0/knightThrough.kif"
NUMBER_WORDS = "naught uno dos tres cuatro cinco seis siete ocho".split()


def _renumbered(text: str, numbers) -> str:
    """The rules with the integers ``numbers`` renamed to words (goal values stay), as a
    scrambler that renamed numbers too would leave them: only arithmetic facts order them."""
    return re.sub(r"(?<=[\s(])(\d+)(?=[\s)])",
                  lambda m: NUMBER_WORDS[int(m.group(1))] if int(m.group(1)) in numbers else m.group(1), text)


def test_scrambled_knightthrough_gets_the_same_board_as_the_plain_one(shared_dir):
    # coordinates ordered only by (plus 1 ?x ?y) facts once their numbers are words
    text = read_rules((shared_dir / "corpus" / "games" / KNIGHT_THROUGH).read_text())[0][1:-1]
    plain = _specs(text)[2][0]
    scr = Scrambler(text, seed=11)
    scrambled = _specs(scr.text(text))[2][0]                    # the project's scrambler
    renamed = _specs(_renumbered(scr.text(text), range(1, 9)))[2][0]
    assert (plain.width, plain.height) == (8, 8)
    for s in (scrambled, renamed):
        assert s.relation == scr.forward[plain.relation]
        assert (s.coord_args, s.content_args) == (plain.coord_args, plain.content_args)
        assert (s.width, s.height) == (plain.width, plain.height)
        assert sorted(s.content_values) == sorted(scr.forward[c] for c in plain.content_values)
    # the same orientation: each axis runs the same way (words for 1..8, in order), and the
    # page turns the board for the same side
    assert renamed.coord_values == tuple(tuple(NUMBER_WORDS[int(v)] for v in vs) for vs in plain.coord_values)
    flips = []
    for t in (text, _renumbered(scr.text(text), range(1, 9))):
        d = parse_rules(t)
        flips.append(build_view(d, PrologReasoner(d), seconds=2).flip)
    assert flips[1] == {scr.forward[r]: True for r in flips[0]} and len(flips[0]) == 1
