"""Drawing and clicking (agent/web/boardview.py): SVG cells and pieces, clicks found from the
move's arguments or from the one cell a move changes (dropping a disc names only a column)."""
from pathlib import Path

from agent.reasoner.prolog import PrologReasoner
from agent.web import boardview as bv
from gdl.kif import read_rules_file
from gdl.terms import render_spaced

GAMES = Path(__file__).resolve().parent.parent / "games"


def _game(name):
    d = read_rules_file(GAMES / name)
    sm = PrologReasoner(d)
    return d, sm, bv.build_view(d, sm)


def test_drop_moves_click_a_whole_column():
    d, sm, view = _game("connectFour.kif")
    state = sm.initial_state()
    legal = [render_spaced(m) for m in sm.legal_moves(state, 0)]
    clicks = bv.click_map(view, sm, state, 0, legal)
    assert len(clicks) == 7
    assert sorted(c["column"] for c in clicks) == list(range(7))
    assert all(c["cells"] == [[c["column"], 0]] for c in clicks)   # the disc lands on the bottom row


def test_place_moves_click_their_cell_and_svg_has_every_cell():
    d, sm, view = _game("ticTacToe.kif")
    state = sm.initial_state()
    legal = [render_spaced(m) for m in sm.legal_moves(state, 0)]
    clicks = bv.click_map(view, sm, state, 0, legal)
    assert {tuple(map(tuple, c["cells"])) for c in clicks} == {((x, y),) for x in range(3) for y in range(3)}
    svg = bv.render_position(view, state)["boards"][0]
    assert svg.count('class="cell"') == 9 and 'class="piece"' not in svg   # blank: background


def test_glyphs_are_distinct_per_content_constant():
    d, sm, view = _game("breakthrough.kif")
    kinds = [g for (rel, c), g in view.glyphs.items()]
    assert len(kinds) == 2 and len(set(kinds)) == 2
    svg = bv.render_position(view, sm.initial_state())["boards"][0]
    assert svg.count('class="piece"') == 32


def test_role_pieces_take_glyphs_in_role_order():
    d, sm, view = _game("connectFour.kif")
    first, second = (str(r) for r in d.roles)
    assert view.glyphs[("disc", first)] == (bv.SHAPES[0], bv.PALETTE[0])
    assert view.glyphs[("disc", second)] == (bv.SHAPES[1], bv.PALETTE[1])
