"""What the page draws for one game: its boards (``gdl.board``) as SVG, the other fluents as
a list, and which cells each legal move is made by clicking.

Everything here is found from the rules' structure; symbol names are only shown, never
interpreted.  Glyphs and colours follow each content constant's rank among the board's
content values, so a constant keeps its glyph throughout a game.
"""
from __future__ import annotations

import hashlib
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from html import escape

from agent.web import pieceset
from gdl.board import BoardSpec, cells, detect_board, matches, move_cells, sample_states
from gdl.kif import parse_term
from gdl.terms import render

MAX_BOARDS = 3
# A board is drawn in SVG units with its grid's longer side about BOARD_UNITS long; the page
# scales the SVG to the room the window gives it (style.css, ``--aspect``), so these units
# set only the proportions of labels and lines to cells.
BOARD_UNITS = 480
LABEL_PX = 18
LAST_FILL = ("#f2df74", "#e8d25a")    # the cells of the last move (light and dark squares)
WIN_FILL = ("#a8dcae", "#8fcf97")     # the cells that won the match (``marks.winning_cells``)
CHECK_FILL = "#ef8a7e"                # a piece in check (``marks.check_cells``)


def parse_state(texts) -> frozenset:
    """A state from fact texts (events and records hold texts)."""
    return frozenset(parse_term(t) for t in texts)


# Each role's pieces share a colour: the first role light, the second dark, then others.
# (fill, outline and label colour)
ROLE_COLOURS = [("#f7f3e8", "#3b3024", "#3b3024"), ("#262626", "#000000", "#ffffff"),
                ("#c0392b", "#6e1f17", "#ffffff"), ("#2e86c1", "#1a4d70", "#ffffff"),
                ("#27ae60", "#145a32", "#ffffff"), ("#8e44ad", "#4a235a", "#ffffff")]
# A role named after a colour is drawn in it (the name is only a label: any name works)
NAMED = {"white": "#f7f3e8", "black": "#262626", "red": "#c0392b", "yellow": "#f1c40f", "blue": "#2e86c1",
         "green": "#27ae60", "orange": "#e67e22", "purple": "#8e44ad", "brown": "#8d6e63", "pink": "#f1948a"}
NEUTRAL = [("#95a5a6", "#4d5656", "#ffffff"), ("#d5c4a1", "#6e5a3a", "#3b3024"), ("#7f8c8d", "#2c3e50", "#ffffff")]
SIDE_SHAPES = ["circle", "square", "triangle", "diamond", "hexagon", "star", "ring"]


@dataclass
class BoardView:
    specs: list                     # BoardSpec, best first (at most MAX_BOARDS drawn)
    glyphs: dict = field(default_factory=dict)  # (relation, content text) -> (shape, fill, outline, text colour)
    owners: dict = field(default_factory=dict)  # (relation, content text) -> role name (absent: no owner)
    roles: list = field(default_factory=list)
    hidden: list = field(default_factory=list)  # bookkeeping on the board's cells: counted, not drawn
    flip: dict = field(default_factory=dict)    # role name -> True: its side is at the top as drawn (``sides``)
    sets: dict = field(default_factory=dict)    # relation -> ``pieceset.PieceSet`` (X/O, stones, chess or letters)

    def to_dict(self) -> dict:
        return {"boards": [s.to_dict() for s in self.specs]}


def build_view(description, sm, seconds: float = 5.0) -> BoardView:
    """Detect the boards from the initial state and a few random walks (on ``sm``), and who
    owns each piece from which role's moves make it."""
    states, steps = sample_walks(sm, seconds=seconds)
    return view_from_specs(detect_board(description, states), description.roles, steps, sm, description)


def sample_walks(sm, walks: int = 6, steps: int = 120, seed: int = 0, seconds: float = 5.0):
    """``(states, transitions)`` of random walks: transitions are ``(state, movers, next)``
    where ``movers`` are the roles that had a choice (more than one legal move)."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    init = sm.initial_state()
    states, trans = [init], []
    for _ in range(walks):
        st = init
        for _ in range(steps):
            if sm.is_terminal(st) or time.monotonic() > deadline:
                break
            joint, movers = [], []
            for r in range(len(sm.roles)):
                legal = sorted(sm.legal_moves(st, r), key=render)
                if not legal:
                    return states, trans
                if len(legal) > 1:
                    movers.append(r)
                joint.append(rng.choice(legal))
            nxt = sm.next_state(st, tuple(joint))
            trans.append((st, tuple(movers), nxt))
            states.append(nxt)
            st = nxt
    return states, trans


def owners_of(spec: BoardSpec, roles, transitions) -> dict:
    """Which role owns each content value of a board, from the rules' structure: a role
    constant among its arguments, else the one role whose moves put it on the board (in
    steps where only that role had a choice); contents made by several roles have none."""
    role_texts = [render(r) for r in roles]
    out = {}
    for c in spec.content_values:
        named = [r for r in role_texts if r in c.split()]
        if len(named) == 1:
            out[c] = named[0]
    made: dict = {}
    for before, movers, after in transitions:
        if len(movers) != 1:
            continue
        a, b = cells(spec, before), cells(spec, after)
        for xy, contents in b.items():
            new = set(contents) - set(a.get(xy, []))
            for c in new:
                if c != spec.background:
                    made.setdefault(c, Counter())[movers[0]] += 1
    for c, counts in made.items():
        if c in out:
            continue
        r, n = counts.most_common(1)[0]
        if n >= 0.8 * sum(counts.values()) and r < len(role_texts):
            out[c] = role_texts[r]
    return out


def view_from_specs(specs, roles=(), transitions=(), sm=None, description=None) -> BoardView:
    """Colour by owning role (``owners_of``), a distinct shape per kind within a side; the
    contents no role owns get neutral colours.  A kind keeps its glyph throughout a game.
    Each drawn board's set of pieces (X and O, stones, chess figures, else these letter
    discs) is chosen by ``pieceset.choose`` from the same structure (``sm`` and
    ``description``: the rules, for the moves' vectors and the king; without them, from the
    sampled steps alone)."""
    specs, hidden = _drawn(list(specs))
    role_texts = [render(r) for r in roles]
    colours = []
    for i, r in enumerate(role_texts):
        fill, line, text = ROLE_COLOURS[i % len(ROLE_COLOURS)]
        if r.lower() in NAMED:
            fill = NAMED[r.lower()]
            dark = sum(int(fill[k:k + 2], 16) for k in (1, 3, 5)) < 3 * 150
            line, text = ("#000000", "#ffffff") if dark else ("#3b3024", "#3b3024")
        colours.append((fill, line, text))
    glyphs, owners, flip, sets = {}, {}, {}, {}
    for s in specs:
        own = owners_of(s, roles, transitions)
        # the most numerous kinds at the start first (pawns before kings), then by name
        start_cells = cells(s, transitions[0][0]) if transitions else {}
        start = Counter(c for v in start_cells.values() for c in v)
        own.update(_owner_by_place(s, start_cells, own))
        if s is specs[0]:
            flip = sides(s, role_texts, start_cells, own, transitions)
        try:
            sets[s.relation] = pieceset.choose(s, role_texts, own, start_cells, list(transitions), sm, description)
        except Exception as e:   # a reasoner failure costs the figures, never the board
            sets[s.relation] = pieceset.PieceSet(why=f"not chosen: {type(e).__name__}")
        kinds = sorted((c for c in s.content_values if c != s.background), key=lambda c: (-start[c], c))
        per_side: dict = {}
        for c in kinds:
            side = own.get(c)
            k = per_side.get(side, 0)
            per_side[side] = k + 1
            if side is not None:
                fill, line, text = colours[role_texts.index(side)]
                owners[(s.relation, c)] = side
            else:
                fill, line, text = NEUTRAL[k % len(NEUTRAL)]
            glyphs[(s.relation, c)] = (SIDE_SHAPES[k % len(SIDE_SHAPES)], fill, line, text)
    return BoardView(specs, glyphs, owners, role_texts, hidden, flip, sets)


def sides(spec: BoardSpec, role_texts: list, start_cells: dict, owners: dict, transitions=()) -> dict:
    """Which roles sit at the top of a board as drawn (row 0 at the bottom), from the rules'
    structure: a role's pieces in the initial state, their mean row above the middle (black's
    army in chess); for a role with no piece at the start, the way its pieces move in the
    sampled steps (a piece of the mover's that leaves one cell for another: moving down means
    it started at the top).  A role with neither (noughts and crosses, a dropped disc) or
    pieces spread around the middle is not turned.  ``{role name: True}`` for the roles whose
    page turns the board (180 degrees: their side at the bottom)."""
    if len(role_texts) < 2 or spec.height < 2:
        return {}
    middle = (spec.height - 1) / 2
    rows: dict = {}
    for (x, y), contents in start_cells.items():
        for c in contents:
            if owners.get(c) in role_texts:
                rows.setdefault(owners[c], []).append(y)
    moves: dict = {}
    for before, movers, after in transitions:
        if len(movers) != 1 or movers[0] >= len(role_texts):
            continue
        mover = role_texts[movers[0]]
        if mover in rows:
            continue
        a, b = cells(spec, before), cells(spec, after)
        for c in {c for v in a.values() for c in v if owners.get(c) == mover}:
            gone = [xy for xy, v in a.items() if c in v and c not in b.get(xy, [])]
            came = [xy for xy, v in b.items() if c in v and c not in a.get(xy, [])]
            if len(gone) == 1 and len(came) == 1 and came[0][1] != gone[0][1]:
                moves.setdefault(mover, []).append(1 if came[0][1] > gone[0][1] else -1)
    out = {}
    for r in role_texts:
        if r in rows:
            top = sum(rows[r]) / len(rows[r]) - middle > 0.25
        elif len(moves.get(r, ())) >= 3:
            top = sum(moves[r]) < 0        # mostly moving down: it comes from the top
        else:
            continue
        if top:
            out[r] = True
    # everyone at the top (a board drawn upside down for all) says nothing about sides
    return out if len(out) < len(role_texts) else {}


def flipped(view: BoardView, role_index: int | None) -> bool:
    """Whether the page of role ``role_index`` draws the first board turned."""
    if role_index is None or not 0 <= role_index < len(view.roles):
        return False
    return bool(getattr(view, "flip", {}).get(view.roles[role_index]))

def _drawn(specs):
    """``(drawn, hidden)``: the first board and the other boards worth a grid of their own.
    A later board on the first board's squares (its coordinates within the first's: marks
    such as "has moved" or "in check") or with more kinds than pieces come in (group
    numbers) is bookkeeping: its facts are counted under the boards, not drawn."""
    if not specs:
        return [], []
    main = specs[0]
    drawn, hidden = [main], []
    for s in specs[1:]:
        inside = len(s.coord_values) <= len(main.coord_values) and all(
            set(v) <= set().union(*map(set, main.coord_values)) for v in s.coord_values)
        if inside or len(s.content_values) > MAX_KINDS or len(drawn) >= MAX_BOARDS:
            hidden.append(s)
        else:
            drawn.append(s)
    return drawn, hidden


def _owner_by_place(spec: BoardSpec, start_cells: dict, owners: dict) -> dict:
    """Owners of the kinds no move was seen to make, from where they stand at the start:
    the side owning most of the other pieces on the same row (a king among its army)."""
    out = {}
    unowned = {c for v in start_cells.values() for c in v if c != spec.background and c not in owners}
    for c in unowned:
        sides = Counter()
        for (x, y), v in start_cells.items():
            if c in v:
                for (x2, y2), v2 in start_cells.items():
                    if y2 == y:
                        sides.update(owners[k] for k in v2 if k in owners)
        if sides:
            (side, n), = sides.most_common(1)
            if n > 0.8 * sum(sides.values()):
                out[c] = side
    return out


def _label(text: str, owner: str | None = None) -> str:
    """A piece's label: its name (without its owner's, which the colour says), shortened."""
    words = text.split()
    if owner and len(words) > 1 and owner in words:
        words.remove(owner)
    if not words:
        return ""
    if owner and words == [owner]:      # the piece is named after its side: its initial
        return owner[:1].upper()
    if len(words) > 1:
        return "".join(w[0] for w in words)[:3]
    return words[0][:3]


def _shape(shape: str, cx: float, cy: float, r: float, fill: str, line: str = "#333") -> str:
    paint = f'fill="{fill}" stroke="{line}" stroke-width="{max(1.0, r * .09):.1f}"'

    def poly(points):
        return f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}" {paint}/>'
    if shape == "circle":
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" {paint}/>'
    if shape == "square":
        return f'<rect x="{cx - r * .85:.1f}" y="{cy - r * .85:.1f}" width="{r * 1.7:.1f}" height="{r * 1.7:.1f}" rx="3" {paint}/>'
    if shape == "triangle":
        return poly([(cx, cy - r), (cx + r, cy + r * .8), (cx - r, cy + r * .8)])
    if shape == "diamond":
        return poly([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)])
    if shape == "hexagon":
        return poly([(cx + r * a, cy + r * b) for a, b in
                     ((1, 0), (.5, .87), (-.5, .87), (-1, 0), (-.5, -.87), (.5, -.87))])
    if shape == "ring":
        return (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r * .8:.1f}" fill="none" stroke="{fill}" '
                f'stroke-width="{r * .35:.1f}"/><circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r * .98:.1f}" fill="none" '
                f'stroke="{line}" stroke-width="1"/>')
    pts = []
    for k in range(10):
        rr = r if k % 2 == 0 else r * .45
        a = -math.pi / 2 + k * math.pi / 5
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return poly(pts)


def _pieces(view: BoardView, spec: BoardSpec, contents, cx0: float, cy0: float, px: float,
            xy=None, age: int = 0) -> list:
    """The pieces of one cell (up to four, side by side), centred at (cx0, cy0); each names
    its cell and content (``data-x``, ``data-y``, ``data-content``).  ``age`` > 0: the cell
    as its viewer last saw it that many steps ago (GDL-II), drawn faded."""
    out = []
    where = f' data-x="{xy[0]}" data-y="{xy[1]}"' if xy is not None else ""
    faded = f' data-age="{age}" opacity="0.45"' if age else ""
    ago = f", last seen {age} step{'s' if age > 1 else ''} ago" if age else ""
    contents = [c for c in contents if c != spec.background]
    for k, c in enumerate(contents[:4]):
        shape, fill, line, ink = view.glyphs.get((spec.relation, c), ("circle", "#95a5a6", "#4d5656", "#fff"))
        owner = view.owners.get((spec.relation, c))
        n = len(contents[:4])
        r = px * (0.36 if n == 1 else 0.2)
        cx = cx0 + (0 if n == 1 else (k % 2 - .5) * px / 2)
        cy = cy0 + (0 if n == 1 else (k // 2 - .5) * px / 2)
        side = f' data-owner="{escape(owner)}"' if owner else ""
        fig = _figure(view, spec, c)
        head = (f'<g class="piece"{side}{where} data-content="{escape(c)}"{faded}'
                + (f' data-figure="{fig}"' if fig else "") + ' pointer-events="none">'
                + f'<title>{escape(c)}' + (f" ({escape(owner)})" if owner else "") + ago + '</title>')
        if fig:
            out.append(head + _figure_svg(view, spec, c, fig, cx, cy, r) + "</g>")
            continue
        label = _label(c, owner)
        size = max(8.0, r * (1.1 if len(label) == 1 else .85 if len(label) == 2 else .68))
        out.append(head + _shape(shape, cx, cy, r, fill, line)
                   + f'<text x="{cx:.1f}" y="{cy + size * .36:.1f}" text-anchor="middle" '
                     f'font-size="{size:.0f}" font-weight="bold" fill="{ink}">'
                   + escape(label) + "</text></g>")
    return out


def _set_name(view: BoardView, spec: BoardSpec) -> str:
    ps = getattr(view, "sets", {}).get(spec.relation)
    return ps.name if ps is not None else "letters"


def _figure(view: BoardView, spec: BoardSpec, content: str) -> str | None:
    """The figure of a content in its board's set (``pieceset``): "X", "O", "stone", a
    chess letter (KQRBNP), or None (its letter disc)."""
    ps = getattr(view, "sets", {}).get(spec.relation)
    return ps.figure(content) if ps is not None else None


MARK_INK = {"X": "#1d3557", "O": "#b3261e"}      # pen colours of X and O
CHESS_FONT = "DejaVu Sans, Segoe UI Symbol, Noto Sans Symbols2, Symbola, sans-serif"


def _figure_svg(view: BoardView, spec: BoardSpec, content: str, fig: str, cx: float, cy: float, r: float) -> str:
    """A piece drawn as its set's figure, centred at (cx, cy) in a cell whose disc radius
    would be ``r``: X and O as pen strokes, a stone as a shaded disc in its owner's colour,
    a chess figure as its Unicode character: white's outlined figure over the solid one
    filled white, black's solid figure over itself drawn wider in grey (the font's solid
    figures have holes that would show the square) and a light edge, so that each side
    reads the same on light and dark squares."""
    _shape_name, fill, line, _ink = view.glyphs.get((spec.relation, content), ("circle", "#95a5a6", "#4d5656", "#fff"))
    w = max(1.5, r * .26)
    if fig == "X":
        d = r * .82
        return (f'<path d="M{cx - d:.1f},{cy - d:.1f}L{cx + d:.1f},{cy + d:.1f}M{cx + d:.1f},{cy - d:.1f}'
                f'L{cx - d:.1f},{cy + d:.1f}" stroke="{MARK_INK["X"]}" stroke-width="{w:.1f}" stroke-linecap="round" fill="none"/>')
    if fig == "O":
        return (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r * .8:.1f}" stroke="{MARK_INK["O"]}" '
                f'stroke-width="{w:.1f}" fill="none"/>')
    if fig == "stone":
        rr = r * 1.12
        return (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{rr:.1f}" fill="{fill}" stroke="{line}" '
                f'stroke-width="{max(1.0, rr * .06):.1f}"/>'
                f'<ellipse cx="{cx - rr * .32:.1f}" cy="{cy - rr * .36:.1f}" rx="{rr * .34:.1f}" ry="{rr * .2:.1f}" '
                f'transform="rotate(-35 {cx - rr * .32:.1f} {cy - rr * .36:.1f})" fill="#ffffff" opacity="0.35"/>')
    ps = view.sets[spec.relation]
    white = view.owners.get((spec.relation, content)) == ps.white
    size = r * 2.5
    text = (f'x="{cx:.1f}" y="{cy + size * .35:.1f}" text-anchor="middle" font-size="{size:.0f}" '
            f'font-family="{CHESS_FONT}" stroke-linejoin="round"')
    solid = pieceset.chess_char(fig, False)

    def under(colour, width):     # the solid figure, its holes closed by a wide stroke
        return f'<text {text} fill="{colour}" stroke="{colour}" stroke-width="{size * width:.1f}">{solid}</text>'
    if white:
        return under("#ffffff", .1) + f'<text {text} fill="#1a1a1a">{pieceset.chess_char(fig, True)}</text>'
    return under("#f4efe6", .14) + under("#505050", .09) + f'<text {text} fill="#111111">{solid}</text>'


def hex_svg(view: BoardView, spec: BoardSpec, state, index: int = 0, highlight=(), seen=None,
            flip: bool = False, marks=None) -> str:
    """A board whose rules link each cell to six neighbours, drawn as hexagons: the rows
    shifted by half a cell so that the diagonal neighbour of the rules touches.  ``seen``
    and ``flip`` as ``board_svg``'s (turned, each cell takes the place of its mirror through
    the centre, which keeps every neighbour a neighbour)."""
    w, h = spec.width, spec.height
    sq3 = math.sqrt(3)
    span = w + (h - 1) / 2                      # hex widths across the rhombus
    size = max(9.0, BOARD_UNITS / (sq3 * span))
    shift = 1 if spec.hex_diagonal == 1 else -1
    fs = max(9.0, min(14.0, size * .5))
    xs, ys = spec.coord_values
    left = size + max(LABEL_PX, 0.62 * fs * max(len(v[:4]) for v in ys) + 6)   # the row labels' room

    def centre(gx, gy):
        if flip:
            gx, gy = w - 1 - gx, h - 1 - gy
        row = h - 1 - gy                         # row 0 at the bottom, as coordinates are counted
        q = gx + shift * row / 2 + (0 if shift == 1 else (h - 1) / 2)
        return left + sq3 * size * q, 1 + size + 1.5 * size * row
    W = int(left + sq3 * size * span + 2)
    H = int(1 + 2 * size + 1.5 * size * (h - 1) + fs + 8)
    occupied = cells(spec, state)
    hl = set(map(tuple, highlight))
    win, chk = _marked(marks)
    out = [f'<svg class="board hex{" flipped" if flip else ""}" data-board="{index}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{W}" height="{H}" viewBox="0 0 {W} {H}" style="--aspect:{W / H:.4f}" '
           f'data-pieces="{_set_name(view, spec)}" font-family="sans-serif">']
    if seen is not None:
        out.append(_unseen_pattern(index))
    for gy in range(h):
        for gx in range(w):
            cx, cy = centre(gx, gy)
            pts = " ".join(f"{cx + size * math.cos(math.radians(30 + 60 * k)):.1f},"
                           f"{cy + size * math.sin(math.radians(30 + 60 * k)):.1f}" for k in range(6))
            cls = "cell last" if (gx, gy) in hl else "cell"
            fill = LAST_FILL[0] if (gx, gy) in hl else "#f0d9b5"
            if (gx, gy) in chk:
                cls, fill = cls + " check", CHECK_FILL
            elif (gx, gy) in win:
                cls, fill = cls + " win", WIN_FILL[0]
            if seen is not None and (gx, gy) not in seen:
                out.append(f'<polygon class="{cls} unseen" data-x="{gx}" data-y="{gy}" points="{pts}" '
                           f'fill="url(#unseen{index})" stroke="#8a7355" stroke-width="1"><title>not seen</title></polygon>')
                out.append(_question(cx, cy, size))
                continue
            out.append(f'<polygon class="{cls}" data-x="{gx}" data-y="{gy}" points="{pts}" '
                       f'fill="{fill}" stroke="#8a7355" stroke-width="1"' + _close_cell("polygon", cls))
            out.extend(_pieces(view, spec, occupied.get((gx, gy), []), cx, cy, size * 1.55, (gx, gy),
                               (seen or {}).get((gx, gy), 0)))
    xs, ys = spec.coord_values
    bottom, left_col = (h - 1, w - 1) if flip else (0, 0)    # the row drawn lowest, the column leftmost
    for gx in range(w):
        cx, cy = centre(gx, bottom)
        out.append(f'<text x="{cx:.1f}" y="{cy + size + fs + 2:.1f}" text-anchor="middle" font-size="{fs:.0f}" '
                   f'fill="#555">{escape(xs[gx][:4])}</text>')
    for gy in range(h):
        cx, cy = centre(left_col, gy)
        out.append(f'<text x="{cx - size * .87 - 3:.1f}" y="{cy + fs * .35:.1f}" text-anchor="end" '
                   f'font-size="{fs:.0f}" fill="#555">{escape(ys[gy][:4])}</text>')
    out.append(_win_line(win, centre, size * 0.25))
    out.append("</svg>")
    return "".join(out)


def _unseen_pattern(index: int) -> str:
    """The hatching of the cells a GDL-II role has not seen (one per board: ids are per page)."""
    return (f'<defs><pattern id="unseen{index}" width="7" height="7" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="7" height="7" fill="#d5d5d5"/>'
            f'<line x1="0" y1="0" x2="0" y2="7" stroke="#b3b3b3" stroke-width="3"/></pattern></defs>')


def _question(cx: float, cy: float, px: float) -> str:
    size = max(9.0, px * .45)
    return (f'<text class="unseen-mark" x="{cx:.1f}" y="{cy + size * .36:.1f}" text-anchor="middle" '
            f'font-size="{size:.0f}" fill="#777" pointer-events="none">?</text>')


def board_svg(view: BoardView, spec: BoardSpec, state, index: int = 0, highlight=(), seen=None,
              flip: bool = False, marks=None) -> str:
    """One board as SVG: column 0 on the left, row 0 at the bottom (as coordinates are
    usually counted); every cell is a ``.cell`` (a rect, or a hexagon on a hex board) with
    ``data-x``/``data-y``.  ``seen`` (a GDL-II role's view, ``person_boards``): None when
    every cell is known, else ``{(x, y): steps since the role saw that cell}``; a cell not in
    it is drawn hatched with a "?" (``.unseen``), one seen earlier than now faded.
    ``highlight``: the cells of the last move, filled in yellow (``.last``).  ``flip``: turned
    180 degrees (the last column on the left, the last row at the bottom: the player whose
    side is at the top sees it at the bottom); the cells keep their ``data-x``/``data-y``.
    ``marks``: ``{"win": cells, "check": cells}`` (``agent.web.marks``), filled green (the
    winning line, joined by a stroke when it is straight) and red (``.win``, ``.check``)."""
    if getattr(spec, "layout", "square") == "hex":
        return hex_svg(view, spec, state, index, highlight, seen, flip, marks)
    w, h = spec.width, spec.height
    px = max(16, int(BOARD_UNITS / max(w, h)))
    xs, ys = (spec.coord_values[2], spec.coord_values[3]) if nested_of(spec) else spec.coord_values[:2]
    fs = max(9.0, min(14.0, px * .4))
    band = int(fs + 8)            # the column letters' row under the board
    # the row labels' column is as wide as the longest label (up to 4 letters) needs: "ocho"
    # and "cuat" were clipped at the edge in 18 px
    lx = max(LABEL_PX, band, int(0.62 * fs * max(len(v[:4]) for v in ys)) + 8)
    W, H = lx + w * px + 2, band + h * px + 2
    occupied = cells(spec, state)
    nested = len(spec.coord_args) == 4
    sub_w = len(spec.coord_values[2]) if nested else w
    sub_h = len(spec.coord_values[3]) if nested else h
    out = [f'<svg class="board{" flipped" if flip else ""}" data-board="{index}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{W}" height="{H}" viewBox="0 0 {W} {H}" style="--aspect:{W / H:.4f}" '
           f'data-pieces="{_set_name(view, spec)}" font-family="sans-serif">']
    if seen is not None:
        out.append(_unseen_pattern(index))
    hl = set(map(tuple, highlight))
    win, chk = _marked(marks)

    def col(gx):      # the drawn column and row of a cell
        return w - 1 - gx if flip else gx

    def row(gy):
        return gy if flip else h - 1 - gy
    for gy in range(h):
        for gx in range(w):
            x, y = lx + col(gx) * px, 1 + row(gy) * px
            shade = "#f0d9b5" if (gx + gy) % 2 else "#e4c89c"
            if nested and ((gx // sub_w) + (gy // sub_h)) % 2:
                shade = "#d9e4ef" if (gx + gy) % 2 else "#c9d7e6"
            if (gx, gy) in hl:
                shade = LAST_FILL[(gx + gy) % 2]
            cls = "cell last" if (gx, gy) in hl else "cell"
            if (gx, gy) in chk:
                cls, shade = cls + " check", CHECK_FILL
            elif (gx, gy) in win:
                cls, shade = cls + " win", WIN_FILL[(gx + gy) % 2]
            if seen is not None and (gx, gy) not in seen:
                out.append(f'<rect class="{cls} unseen" data-x="{gx}" data-y="{gy}" x="{x}" y="{y}" '
                           f'width="{px}" height="{px}" fill="url(#unseen{index})" stroke="#8a7355" '
                           f'stroke-width="0.5"><title>not seen</title></rect>')
                out.append(_question(x + px / 2, y + px / 2, px))
                continue
            out.append(f'<rect class="{cls}" data-x="{gx}" data-y="{gy}" x="{x}" y="{y}" '
                       f'width="{px}" height="{px}" fill="{shade}" stroke="#8a7355" stroke-width="0.5"'
                       + _close_cell("rect", cls))
            out.extend(_pieces(view, spec, occupied.get((gx, gy), []), x + px / 2, y + px / 2, px, (gx, gy),
                               (seen or {}).get((gx, gy), 0)))
    if nested:  # thick lines between the inner boards
        for k in range(0, w + 1, sub_w):
            x = lx + k * px
            out.append(f'<line x1="{x}" y1="1" x2="{x}" y2="{1 + h * px}" stroke="#333" stroke-width="3"/>')
        for k in range(0, h + 1, sub_h):
            y = 1 + k * px
            out.append(f'<line x1="{lx}" y1="{y}" x2="{lx + w * px}" y2="{y}" stroke="#333" stroke-width="3"/>')
    for gx in range(w):
        # centred in the band under the grid, the letters' descent inside the drawing
        out.append(f'<text x="{lx + col(gx) * px + px / 2}" y="{H - (band + 1) / 2 + fs * .35:.1f}" '
                   f'text-anchor="middle" font-size="{fs:.0f}" '
                   f'fill="#555">{escape(xs[gx % len(xs)][:4])}</text>')
    for gy in range(h):
        out.append(f'<text x="{lx / 2}" y="{1 + row(gy) * px + px / 2 + fs * .35:.1f}" text-anchor="middle" '
                   f'font-size="{fs:.0f}" fill="#555">{escape(ys[gy % len(ys)][:4])}</text>')
    out.append(_win_line(win, lambda gx, gy: (lx + col(gx) * px + px / 2, 1 + row(gy) * px + px / 2), px * 0.09))
    out.append("</svg>")
    return "".join(out)


def nested_of(spec: BoardSpec) -> bool:
    return len(spec.coord_args) == 4


def _close_cell(tag: str, cls: str) -> str:
    """The end of a cell's element: with a title saying what its mark means (on hover)."""
    words = "in check" if " check" in cls else "winning line" if " win" in cls else ""
    return f"><title>{words}</title></{tag}>" if words else "/>"


def _marked(marks) -> tuple[set, set]:
    marks = marks or {}
    return set(map(tuple, marks.get("win") or ())), set(map(tuple, marks.get("check") or ()))


def _win_line(win: set, centre, width: float) -> str:
    """A stroke through the winning cells when they lie on one straight line of adjacent
    cells (a row, a column, a diagonal), over the pieces; '' otherwise."""
    if len(win) < 2:
        return ""
    pts = sorted(win)
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    n = len(pts) - 1
    dx, dy = (x1 - x0) / n, (y1 - y0) / n
    if {dx, dy} - {-1, 0, 1} or pts != sorted((x0 + round(k * dx), y0 + round(k * dy)) for k in range(n + 1)):
        return ""
    (ax, ay), (bx, by) = centre(x0, y0), centre(x1, y1)
    return (f'<line class="win-line" x1="{ax:.1f}" y1="{ay:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="#1e7b3a" '
            f'stroke-width="{max(3.0, width):.1f}" stroke-linecap="round" opacity="0.6" pointer-events="none"/>')


def changed_cells(view: BoardView, before, after) -> list:
    """Cells of the first board whose content differs between two states (the last move)."""
    if not view.specs or before is None:
        return []
    a, b = cells(view.specs[0], before), cells(view.specs[0], after)
    return sorted(xy for xy in set(a) | set(b) if a.get(xy) != b.get(xy))


def other_facts(view: BoardView, state) -> list[str]:
    """Facts on no drawn board, as sorted texts."""
    many = [s for s in view.hidden if sum(1 for f in state if matches(s, f)) > 6]
    out = sorted(render(f) for f in state if not any(matches(s, f) for s in view.specs + many))
    for s in many:
        n = sum(1 for f in state if matches(s, f))
        if n:
            out.append(f"({s.relation} …): {n} fact{'s' if n > 1 else ''} on the board's squares, not drawn")
    return out


def words(text: str) -> str:
    """A term as a person reads it: without its outer parentheses and ggp-base's inner
    spacing (``( hand first k )`` → ``hand first k``; a nested term keeps its own:
    ``revealed x (cell 1 2)``)."""
    try:
        t = parse_term(text)
    except Exception:
        return _bare(str(text))
    r = render(t)
    return r[1:-1] if isinstance(t, tuple) else r


def _cell_of(spec: BoardSpec, fact):
    got = cells(spec, [fact])
    return next(iter(got), None)


def person_position(view: BoardView, init_state, steps, own_move=None, flip: bool = False) -> dict:
    """What a GDL-II role's page draws from what that role knows, and nothing else: the
    initial state (the rules give it to everyone) and its percepts of each step (``steps``,
    sets of terms, oldest first).  At the start every cell is as the rules set it.  Later,
    each cell of a board is drawn as the role last saw it (percepts on the board's relation,
    or the initial state): seen in the last step's percepts, plain; earlier, faded; never
    seen since the start (it may have changed unseen), hatched with a "?".  The other
    facts are the percepts no board draws, in words: the last step's, then earlier ones
    whose relation the last step does not report again, with their step."""
    p = len(steps)
    facts, seens = set(), []
    for spec in view.specs:
        if p == 0:
            facts |= {f for f in init_state if matches(spec, f)}
            seens.append(None)
            continue
        last: dict = {}
        for k, ps in enumerate([init_state] + list(steps)):
            here: dict = {}
            for f in ps:
                if matches(spec, f):
                    xy = _cell_of(spec, f)
                    if xy is not None:
                        here.setdefault(xy, set()).add(f)
            for xy, fs in here.items():
                last[xy] = (k, fs)
        seens.append({xy: p - k for xy, (k, _) in last.items()})
        for _, fs in last.values():
            facts |= fs
    hl = []
    if own_move is not None and view.specs:
        try:
            hl = move_cells(view.specs[0], parse_term(own_move))
        except Exception:
            hl = []
    boards = [board_svg(view, s, facts, i, hl if i == 0 else (), seens[i], flip=flip and i == 0)
              for i, s in enumerate(view.specs)]

    def undrawn(ps):
        return sorted((f for f in ps if not any(matches(s, f) for s in view.specs)), key=render)
    if p == 0:
        others = [f"{words(render(f))} (the start)" for f in undrawn(init_state)]
    else:
        now = undrawn(steps[-1])
        others = [words(render(f)) for f in now]
        named = {f[0] if isinstance(f, tuple) else f for f in now}
        shown = set(now)
        for k in range(p - 1, 0, -1):
            for f in undrawn(steps[k - 1]):
                head = f[0] if isinstance(f, tuple) else f
                if f not in shown and head not in named:
                    shown.add(f)
                    others.append(f"{words(render(f))} (step {k})")
    return {"boards": boards, "others": others, "flipped": bool(flip and view.specs)}


SET_WORDS = {"marks": "X and O", "stones": "stones", "chess": "chess figures", "pawns": "chess pawns",
             "knights": "chess knights"}


def _set_note(ps) -> str:
    """What the legend says of a set: its name and what in the rules chose it."""
    return f"Drawn as {SET_WORDS.get(ps.name, ps.name)}: {ps.why} (found from the rules; the names are only labels)."


def legend(view: BoardView) -> list[dict]:
    """The pieces beside the board: each content's drawing (its figure, else its shape),
    name and owner; ``figure`` and ``set`` name its set's figure (None: a letter disc)."""
    out = []
    specs = {s.relation: s for s in view.specs}
    for (rel, c), (shape, fill, line, _ink) in view.glyphs.items():
        spec = specs.get(rel)
        fig = _figure(view, spec, c) if spec is not None else None
        drawn = _figure_svg(view, spec, c, fig, 11, 11, 8) if fig else _shape(shape, 10, 10, 8, fill, line)
        size = 22 if fig else 20
        ps = view.sets.get(rel) if fig else None
        out.append({"relation": rel, "content": c, "shape": shape, "colour": fill, "owner": view.owners.get((rel, c)),
                    "figure": fig, "set": ps.name if ps else None, "note": _set_note(ps) if ps else None,
                    "svg": f'<svg width="{size}" height="{size}" viewBox="0 0 {size} {size}">{drawn}</svg>'})
    return out


def render_position(view: BoardView, state, highlight=(), flip: bool = False, marks=None) -> dict:
    """The boards (SVG texts) and the other facts of a state; ``flip``: the first board
    turned (``flipped``), ``highlight``: the last move's cells on it, ``marks``: its
    winning line and pieces in check (``board_svg``)."""
    return {"boards": [board_svg(view, s, state, i, highlight if i == 0 else (), flip=flip and i == 0,
                                 marks=marks if i == 0 else None)
                       for i, s in enumerate(view.specs)],
            "others": other_facts(view, state), "flipped": bool(flip and view.specs)}


def click_map(view: BoardView, sm, state, role_index: int, legal_texts: list) -> list[dict]:
    """For each legal move of the role: the cells of the first board that make it, in click
    order (``cells``), or a whole column (``column``) when the move names only the column of
    the cell it changes (dropping a disc).  Moves that name no cell are made from the list."""
    if not view.specs:
        return [{"move": m, "cells": [], "column": None} for m in legal_texts]
    spec = view.specs[0]
    out, unnamed = [], []
    for m in legal_texts:
        term = parse_term(m)
        cs = move_cells(spec, term)
        out.append({"move": m, "cells": [list(c) for c in cs], "column": None})
        if not cs and not isinstance(term, str):
            unnamed.append(len(out) - 1)
    if unnamed and sm is not None and len(unnamed) <= 40:
        # Moves whose arguments are not a whole cell: play each and see which one cell of
        # the board changes.  Others play their first legal move (turn-taking: a noop).
        others = [sorted(sm.legal_moves(state, r), key=render) for r in range(len(sm.roles))]
        if all(others):
            before = cells(spec, state)
            for k in unnamed:
                joint = [o[0] for o in others]
                joint[role_index] = parse_term(out[k]["move"])
                after = cells(spec, sm.next_state(state, tuple(joint)))
                changed = [xy for xy in set(before) | set(after) if before.get(xy) != after.get(xy)]
                if len(changed) != 1:
                    continue
                x, y = changed[0]
                args = list(_atoms(parse_term(out[k]["move"])))
                if len(spec.coord_args) == 2 and spec.coord_values[0][x] in args:
                    args.remove(spec.coord_values[0][x])      # ("drop 1" on cell (1, 1): the
                    if spec.coord_values[1][y] not in args:   # one argument is the column)
                        out[k]["column"] = x
                out[k]["cells"] = [[x, y]]
    return out


def _cell_name(spec: BoardSpec, xy) -> str:
    """A cell named by its coordinates as the axes show them: ``e4`` when one coordinate is
    a number and the other a letter, else ``x,y`` (with four coordinates, outer/inner)."""
    x, y = xy
    if len(spec.coord_args) == 4:
        sw, sh = len(spec.coord_values[2]), len(spec.coord_values[3])
        ox, oy, ix, iy = x // sw, y // sh, x % sw, y % sh
        v = spec.coord_values
        return f"{v[0][ox][:4]},{v[1][oy][:4]}/{v[2][ix][:4]},{v[3][iy][:4]}"
    xl, yl = spec.coord_values[0][x][:4], spec.coord_values[1][y][:4]
    if len(xl) == 1 and len(yl) == 1 and (xl.isdigit() != yl.isdigit()):
        return xl + yl if not xl.isdigit() else yl + xl
    return f"{xl},{yl}"


def _bare(text: str) -> str:
    t = text.strip()
    return t[1:-1].strip() if t.startswith("(") and t.endswith(")") else t


def move_label(view: BoardView | None, move_text: str) -> str:
    """A move named by the cells it names on the first board (``from → to``), or its own
    text without the outer parentheses when it names none."""
    if view is None or not view.specs or not isinstance(move_text, str):
        return _bare(str(move_text))
    try:
        term = parse_term(move_text)
    except Exception:
        return _bare(move_text)
    spec = view.specs[0]
    cs = move_cells(spec, term)
    if not cs:
        return _bare(move_text)
    name = " → ".join(_cell_name(spec, c) for c in cs)
    # what else the move says (a promotion's piece, a kind of move) stays, after the cells
    rest = list(_atoms(term))
    for c in cs:
        for k, v in enumerate(_cell_coords(spec, c)):
            if v in rest:
                rest.remove(v)
    extra = [a for a in rest if a not in spec.coord_values[0] and a not in spec.coord_values[1]]
    if len(cs) == 1 and extra and len(extra) <= 2:
        return f"{name} ({' '.join(e[:12] for e in extra)})"
    return name


def _cell_coords(spec: BoardSpec, xy) -> list:
    x, y = xy
    if len(spec.coord_args) == 4:
        sw, sh = len(spec.coord_values[2]), len(spec.coord_values[3])
        return [spec.coord_values[0][x // sw], spec.coord_values[1][y // sh],
                spec.coord_values[2][x % sw], spec.coord_values[3][y % sh]]
    return [spec.coord_values[0][x], spec.coord_values[1][y]]


def click_label(view: BoardView, click: dict) -> str:
    """The name of a move of the click map: its cells, or its column (dropping a disc)."""
    if click.get("column") is not None and view.specs:
        spec = view.specs[0]
        return f"column {spec.coord_values[0][click['column']] if len(spec.coord_args) == 2 else click['column'] + 1}"
    if click.get("cells") and view.specs:
        named = move_label(view, click["move"])
        if named != _bare(click["move"]):
            return named
        return " → ".join(_cell_name(view.specs[0], tuple(c)) for c in click["cells"])
    return move_label(view, click["move"])


def move_names(view: BoardView, sm, state, role_index: int, move_texts: list) -> dict:
    """``{move text: name}`` as the page's buttons name the moves (``click_label`` of the
    click map): the one labelling of the buttons and the advice, so that a move the
    buttons call "column 5" is never "drop 5" elsewhere.  ``sm``/``state`` None: from the
    cells the moves name only (GDL-II: the true state is not the page's to read)."""
    return {c["move"]: click_label(view, c) for c in click_map(view, sm, state, role_index, list(move_texts))}


def pass_moves(joint_moves) -> set:
    """Moves that are passes, found from a record alone: a constant (no arguments) played
    by more than one role (turn-taking games give every waiting role the same noop)."""
    by_move: dict = {}
    for jm in joint_moves or []:
        if not isinstance(jm, list):
            continue
        for r, m in enumerate(jm):
            t = _bare(str(m))
            if t and " " not in t and "(" not in t:
                by_move.setdefault(t, set()).add(r)
    return {m for m, rs in by_move.items() if len(rs) > 1}


def random_position(sm, plies: int, seed: int = 0):
    """The state after ``plies`` random joint moves (fewer when the game ends): a preview."""
    states = sample_states(sm, walks=1, steps=plies, seed=seed, seconds=30) if plies else [sm.initial_state()]
    return states[-1]


def _atoms(t):
    if isinstance(t, str):
        yield t
    else:
        for a in t[1:]:
            yield from _atoms(a)


def game_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
