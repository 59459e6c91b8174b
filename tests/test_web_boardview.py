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


def _scrambled(path, seed=7):
    from agent.match.rules import Scrambler, read_rules
    from gdl.kif import parse_rules
    rules = read_rules(Path(path).read_text())[0][1:-1]
    d = parse_rules(Scrambler(rules, seed=seed).text(rules), "scrambled")
    sm = PrologReasoner(d)
    return d, sm, bv.build_view(d, sm, seconds=3)


def test_pieces_take_their_owners_colour_found_from_the_rules_on_scrambled_sheets():
    """Scrambled breakthrough: no name says whose pawn is whose; the walks do (the role
    whose moves put a piece on the board owns it)."""
    d, sm, view = _scrambled(GAMES / "breakthrough.kif")
    roles = [str(r) for r in d.roles]
    assert sorted(view.owners.values()) == sorted(roles)            # one kind per side
    fills = {view.owners[k]: g[1] for k, g in view.glyphs.items()}
    assert fills[roles[0]] != fills[roles[1]]
    svg = bv.render_position(view, sm.initial_state())["boards"][0]
    assert svg.count(f'data-owner="{roles[0]}"') == 16 and svg.count(f'data-owner="{roles[1]}"') == 16


def test_kinds_within_a_side_get_distinct_glyphs():
    from tests.conftest import SHARED
    sheet = SHARED / "corpus/games/base/games/checkers/v1/checkers.kif"
    if not sheet.is_file():
        import pytest
        pytest.skip("../shared is not beside this clone")
    d, sm, view = _scrambled(sheet, seed=3)
    by_side = {}
    for k, g in view.glyphs.items():
        by_side.setdefault(view.owners.get(k), []).append(g)
    sides = [s for s in by_side if s is not None]
    assert len(sides) == 2                                 # men and kings of two sides
    for s in sides:
        assert len({g[0] for g in by_side[s]}) == len(by_side[s])     # a shape per kind
        assert len({g[1] for g in by_side[s]}) == 1                   # one colour per side
    assert by_side[sides[0]][0][1] != by_side[sides[1]][0][1]


def test_moves_are_named_by_their_cells_and_passes_are_found():
    d, sm, view = _game("breakthrough.kif")
    state = sm.initial_state()
    legal = [render_spaced(m) for m in sm.legal_moves(state, 0)]
    labels = [bv.move_label(view, m) for m in legal]
    assert all(" → " in lb and "(" not in lb for lb in labels)       # from → to, no raw text
    d, sm, view = _game("ticTacToe.kif")
    legal = [render_spaced(m) for m in sm.legal_moves(sm.initial_state(), 0)]
    assert all(len(bv.move_label(view, m)) <= 5 for m in legal)       # "x,y"
    assert bv.pass_moves([["(mark 1 1)", "noop"], ["noop", "(mark 2 2)"]]) == {"noop"}


def test_hex_adjacency_in_the_rules_draws_hexagons():
    """Scrambled hex: a static relation links every cell to six others (a row, a column
    and one diagonal): the board is drawn as hexagons; square games stay square."""
    from tests.conftest import SHARED
    sheet = SHARED / "corpus/games/base/games/hex/v0/hex.kif"
    if not sheet.is_file():
        import pytest
        pytest.skip("../shared is not beside this clone")
    d, sm, view = _scrambled(sheet, seed=11)
    spec = view.specs[0]
    assert spec.layout == "hex" and spec.hex_diagonal in (1, -1)
    svg = bv.render_position(view, sm.initial_state())["boards"][0]
    assert svg.count('<polygon class="cell"') == spec.width * spec.height == 81
    for game in ("breakthrough.kif", "connectFour.kif", "ticTacToe.kif"):
        assert all(s.layout == "square" for s in _game(game)[2].specs)


def _cell_boxes(svg):
    """{(x, y): (drawn x, drawn y)} of a square board's cells, and the cells marked last."""
    import re
    boxes, last = {}, set()
    for m in re.finditer(r'<rect class="([^"]*)" data-x="(\d+)" data-y="(\d+)" x="(\d+)" y="(\d+)"', svg):
        xy = (int(m.group(2)), int(m.group(3)))
        boxes[xy] = (int(m.group(4)), int(m.group(5)))
        if "last" in m.group(1).split():
            last.add(xy)
    return boxes, last


def test_the_board_is_turned_for_the_side_that_starts_at_the_top_on_scrambled_sheets():
    """Scrambled breakthrough: the role whose pawns start on the rows drawn at the top gets
    the board turned (its pawns at the bottom, its cells still named by their coordinates);
    the other role does not, and neither does anyone in games without sides (noughts and
    crosses, a dropped disc)."""
    import re
    d, sm, view = _scrambled(GAMES / "breakthrough.kif")
    roles = [str(r) for r in d.roles]
    state = sm.initial_state()
    plain = bv.render_position(view, state, flip=bv.flipped(view, 0))
    turned = bv.render_position(view, state, flip=bv.flipped(view, 1))
    assert [bv.flipped(view, r) for r in range(2)] == [False, True]
    assert not plain["flipped"] and turned["flipped"] and 'class="board flipped"' in turned["boards"][0]

    def mean_y(svg, owner):      # where a side's pieces are drawn (SVG y grows downwards)
        ys = [float(m.group(1)) for m in re.finditer(
            rf'<g class="piece" data-owner="{owner}"[^>]*>.*?<text x="[\d.]+" y="([\d.]+)"', svg)]
        assert len(ys) == 16
        return sum(ys) / len(ys)
    for svg, me, other in ((plain["boards"][0], roles[0], roles[1]), (turned["boards"][0], roles[1], roles[0])):
        assert mean_y(svg, me) > mean_y(svg, other)          # my side at the bottom
    (b0, _), (b1, _) = _cell_boxes(plain["boards"][0]), _cell_boxes(turned["boards"][0])
    assert set(b0) == set(b1) and len(b0) == 64
    corner = min(b0)                                         # column 0, row 0
    assert b0[corner] == (min(x for x, _ in b0.values()), max(y for _, y in b0.values()))   # bottom left
    assert b1[corner] == (max(x for x, _ in b1.values()), min(y for _, y in b1.values()))   # top right
    for game in ("ticTacToe.kif", "connectFour.kif"):
        view = _game(game)[2]
        assert not any(bv.flipped(view, r) for r in range(2)) and not view.flip


def test_the_last_move_is_highlighted_on_the_board():
    d, sm, view = _game("breakthrough.kif")
    s0 = sm.initial_state()
    move = sorted(sm.legal_moves(s0, 0), key=render_spaced)[0]
    s1 = sm.next_state(s0, (move, sm.legal_moves(s0, 1)[0]))
    changed = bv.changed_cells(view, s0, s1)
    assert len(changed) == 2                                 # the pawn's from- and to-cell
    for flip in (False, True):
        svg = bv.render_position(view, s1, changed, flip=flip)["boards"][0]
        _, last = _cell_boxes(svg)
        assert last == set(map(tuple, changed))
        assert svg.count(f'fill="{bv.LAST_FILL[0]}"') + svg.count(f'fill="{bv.LAST_FILL[1]}"') == 2
    assert set(map(tuple, changed)) == set(bv.move_cells(view.specs[0], move))   # the cells the move names
