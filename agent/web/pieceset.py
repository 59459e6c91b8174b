"""Which set of pieces the page draws for a board, chosen from the rules' structure alone.

Games arrive scrambled, so no symbol name decides anything here: the choice reads who owns
each content (``boardview.owners_of``), what the board holds at the start, how contents
come and go in the sampled steps, the cells the legal moves name, and, for chess's king,
what the rules do when a piece is taken off.

    choose(spec, roles, owners, start_cells, transitions, sm) -> PieceSet

The sets:

- ``marks``: X and O (the first role's kind X).  Two roles, one kind each, the board empty
  at the start, contents only ever put on empty cells: never moved, never taken off, not
  stacked from one edge (ticTacToe and its kin, nine-board tic-tac-toe, gomoku).
- ``stones``: discs in each role's colour (black and white unless a role is named after a
  colour).  One kind per role, contents put on cells and never moved, and either taken off
  or turned over (Othello, Go-like captures), or stacked from one edge of the board (a
  dropped disc: connectFour), or on a hex board (hex).
- ``chess``: the Unicode chess figures.  Pieces that move, every side with several kinds,
  and one kind per side, alone at the start, that the rules single out: taking it off a
  position where its side moves ends the match or leaves that side no legal move (the
  king); or else, where taking it off ends nothing (chess_200), the kind the rules of the
  end read first (``_named_by_the_end``).  Every other kind gets
  the figure its moves show (the vectors from its cell to the cells its legal moves reach,
  seen from its side): only (1, 2) jumps a knight; forward steps of one or two, at most one
  column aside, a pawn; lines of more than one step along rows and columns a rook, along
  diagonals a bishop, both a queen.  A kind whose moves were not seen, or that moves like
  none of them (or like another kind of its side), keeps its letter disc.  The side that
  moves first gets the white figures.
- ``pawns`` / ``knights``: a game whose pieces move with one kind per side whose moves are a
  pawn's (breakthrough) or a knight's (knightThrough): that figure.
- ``letters``: anything else (and whatever the above could not decide): the discs and
  shapes in the owner's colour with the content's name shortened, as before.

Mirrored kinds (one side's kind standing where the other side's stands, the board turned
upside down) pool their moves, so both sides of chess get the same figure for a kind.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from agent.web.marks import _matters as match_depends_on   # the check marks' own test
from gdl.analysis import dependencies, expand_or
from gdl.board import BoardSpec, cells, matches, move_cells, content_text
from gdl.terms import signature

FIGURES = "KQRBNP"
# The chess figures as text: white's outlined, black's solid.  U+FE0E asks for the text
# presentation (some fonts draw the black pawn as a coloured emoji).
WHITE = dict(zip(FIGURES, "\u2654\u2655\u2656\u2657\u2658\u2659"))
BLACK = dict(zip(FIGURES, "\u265a\u265b\u265c\u265d\u265e\u265f"))
TEXT_STYLE = "\ufe0e"


@dataclass
class PieceSet:
    name: str = "letters"             # marks | stones | chess | pawns | knights | letters
    figures: dict = field(default_factory=dict)   # content text -> "X"/"O", "stone", or a chess letter
    white: str | None = None          # the role drawn with white chess figures
    why: str = ""                     # one line: what in the rules chose the set

    def figure(self, content: str):
        return self.figures.get(content)


def chess_char(letter: str, white: bool) -> str:
    return (WHITE if white else BLACK)[letter] + TEXT_STYLE


# ------------------------------------------------------------------------------ what happens

@dataclass
class _Traffic:
    """How the contents of a board come and go in the sampled steps."""
    moved: Counter = field(default_factory=Counter)     # left one cell for another in a step
    placed: Counter = field(default_factory=Counter)    # appeared with none of its kind leaving
    removed: Counter = field(default_factory=Counter)   # left a cell and came nowhere
    placements: list = field(default_factory=list)      # (cells before, (x, y)) of each placement
    vectors: dict = field(default_factory=dict)         # content -> Counter of (dx, dy) moves
    over_filled: int = 0                                 # placements on a piece that stays there


def traffic(spec: BoardSpec, transitions) -> _Traffic:
    t = _Traffic()
    bg = spec.background
    for before, _movers, after in transitions:
        a, b = cells(spec, before), cells(spec, after)
        kinds = {c for v in list(a.values()) + list(b.values()) for c in v if c != bg}
        for c in kinds:
            was = {xy for xy, v in a.items() if c in v}
            now = {xy for xy, v in b.items() if c in v}
            gone, came = was - now, now - was
            if gone and came:
                t.moved[c] += 1
                if len(gone) == 1 and len(came) == 1:
                    (x0, y0), (x1, y1) = next(iter(gone)), next(iter(came))
                    t.vectors.setdefault(c, Counter())[(x1 - x0, y1 - y0)] += 1
            elif came:
                t.placed[c] += len(came)
                for xy in came:
                    t.placements.append((a, xy))
                    if any(k != bg and k in b.get(xy, []) for k in a.get(xy, [])):
                        t.over_filled += 1      # put on a piece that stays: stacked
            elif gone:
                t.removed[c] += len(gone)
    return t


def stacked(spec: BoardSpec, placements) -> bool:
    """Whether every placement lands on an edge row or on a piece below it (one direction
    for all): discs dropped into columns.  At least three placements off the edge row, so
    that a few lucky placements of a game without gravity do not count."""
    bg = spec.background
    for down in (-1, 1):
        edge = 0 if down == -1 else spec.height - 1
        off_edge = 0
        for before, (x, y) in placements:
            if y == edge:
                continue
            off_edge += 1
            if not any(k != bg for k in before.get((x, y + down), [])):
                break
        else:
            if off_edge >= 3:
                return True
    return False


# ------------------------------------------------------------------------------ figures by moves

def figure_of(vectors) -> str | None:
    """The chess figure whose moves these are, seen from the piece's side (forward is +y),
    or None: knight (every vector a (1, 2) jump), pawn (forward steps of one or two, at most
    one column aside), rook / bishop / queen (straight lines, some longer than one step:
    along rows and columns, along diagonals, both)."""
    vs = [v for v in vectors if v != (0, 0)]
    if not vs:
        return None
    if all(sorted((abs(dx), abs(dy))) == [1, 2] for dx, dy in vs):
        return "N"
    if all(dy > 0 and abs(dx) <= 1 and dy <= 2 for dx, dy in vs):
        return "P"
    orth = [v for v in vs if v[0] == 0 or v[1] == 0]
    diag = [v for v in vs if abs(v[0]) == abs(v[1])]
    if len(orth) + len(diag) != len(vs) or not any(max(abs(dx), abs(dy)) >= 2 for dx, dy in vs):
        return None
    # a slider moves both ways along its lines: a piece seen going forward only (a lance,
    # a draughts man's jumps) is not one
    if all(dy > 0 for _, dy in vs):
        return None
    if orth and diag:
        return "Q"
    return "R" if orth else "B"


def _move_vectors(spec: BoardSpec, sm, role_texts, owners, states, deadline) -> dict:
    """``{content: Counter of (dx, dy)}`` from the legal moves that name two cells, the first
    holding a piece of the role that may make the move."""
    out: dict = {}
    for st in states:
        if time.monotonic() > deadline:
            break
        board = cells(spec, st)
        for r, role in enumerate(role_texts):
            try:
                legal = sm.legal_moves(st, r)
            except Exception:
                return out
            if len(legal) < 2:
                continue
            for m in legal:
                cs = move_cells(spec, m)
                if len(cs) < 2 or cs[0] == cs[1]:
                    continue
                for c in board.get(cs[0], []):
                    if owners.get(c) == role:
                        out.setdefault(c, Counter())[(cs[1][0] - cs[0][0], cs[1][1] - cs[0][1])] += 1
    return out


def _mirror(spec: BoardSpec, kinds_a, kinds_b, start: dict) -> dict:
    """Pairs of kinds of two sides that stand where each other stands with the board turned
    upside down (rows mirrored, or the board turned 180 degrees): ``{a: b, b: a}``."""
    w, h = spec.width, spec.height
    out = {}
    for a in kinds_a:
        sa = start.get(a, set())
        if not sa:
            continue
        flips = ({(x, h - 1 - y) for x, y in sa}, {(w - 1 - x, h - 1 - y) for x, y in sa})
        same = [b for b in kinds_b if start.get(b, set()) in flips]
        if len(same) == 1:
            out[a], out[same[0]] = same[0], a
    return out


def _forward(spec: BoardSpec, side_kinds, start) -> int:
    """+1 when a side's pieces start below the middle (they move up), -1 above, 0 neither."""
    ys = [y for c in side_kinds for _, y in start.get(c, ())]
    if not ys:
        return 0
    off = sum(ys) / len(ys) - (spec.height - 1) / 2
    return 1 if off < -0.25 else -1 if off > 0.25 else 0


def _turn_state(transitions, r: int):
    """A sampled state where role ``r`` alone has a choice (its side to move)."""
    for before, movers, _after in transitions:
        if tuple(movers) == (r,):
            return before
    return None


def _named_by_the_end(description, spec: BoardSpec, sides: dict, start: dict) -> dict:
    """``{role: kind}``: for each side, the one kind standing alone at the start that the
    rules of the end name nearest: the fewest steps of the dependency graph from
    ``terminal`` or ``goal`` to a rule that reads the kind on the board (``(true (cell ?x ?y
    king))``) or sets it apart (``(distinct ?piece king)``), nearer than any other kind of
    its side (chess_200: "only kings left" ends the match, and check decides the goals;
    every piece is read further down, where the legal moves are).  Empty where no kind is
    nearest for every side."""
    deps = dependencies(description.rules)
    dist = {("terminal", 0): 0, ("goal", 2): 0}
    todo = list(dist)
    while todo:                                    # breadth first from the end
        h = todo.pop(0)
        for b in deps.edges.get(h, ()):
            if b not in dist:
                dist[b] = dist[h] + 1
                todo.append(b)
    nearest: dict = {}                             # constant -> fewest steps

    def note(const, d):
        if isinstance(const, str) and not const.startswith("?"):
            nearest[const] = min(d, nearest.get(const, d))

    def scan(lit, d):
        if not isinstance(lit, tuple):
            return
        if lit[0] in ("not", "or"):
            for x in lit[1:]:
                scan(x, d)
        elif lit[0] == "distinct":
            for a, b in ((lit[1], lit[2]), (lit[2], lit[1])):
                if isinstance(a, str) and a.startswith("?"):
                    note(b, d)
        elif lit[0] == "true" and isinstance(lit[1], tuple) and matches(spec, lit[1]):
            for k in spec.content_args:
                note(lit[1][1 + k], d)
    for rule in description.rules:
        for r in expand_or(rule):
            d = dist.get(signature(r.head))
            if d is not None:
                for lit in r.body:
                    scan(lit, d)
    out = {}
    for role, kinds in sides.items():
        def steps(c):              # a kind's own words (its owner's name left out)
            return min((nearest.get(w, 10**6) for w in c.split() if w != role), default=10**6)
        ranked = sorted(kinds, key=steps)
        if len(ranked) < 2 or steps(ranked[0]) >= steps(ranked[1]) or len(start.get(ranked[0], ())) != 1:
            return {}
        out[role] = ranked[0]
    return out


def _vital(spec: BoardSpec, sm, state, kind: str, r: int) -> bool:
    facts = sorted((f for f in state if matches(spec, f) and content_text(spec, f) == kind), key=repr)
    return bool(facts) and match_depends_on(sm, spec, frozenset(state), facts[0], r, False)


# ------------------------------------------------------------------------------ the choice

def choose(spec: BoardSpec, role_texts: list, owners: dict, start_cells: dict, transitions=(),
           sm=None, description=None, seconds: float = 3.0) -> PieceSet:
    """The set of pieces for ``spec`` (see the module's text).  ``owners``: ``{content:
    role name}``; ``start_cells``: the initial state's ``cells``; ``transitions``: sampled
    ``(state, movers, next state)``; ``sm``: the state machine, for the moves' vectors and
    the king (without it only what the steps show is used); ``description``: the rules, for
    a king the rules of the end name where taking it off ends nothing."""
    deadline = time.monotonic() + seconds
    bg = spec.background
    kinds = [c for c in spec.content_values if c != bg]
    if not kinds or len(role_texts) < 2:
        return PieceSet(why="no pieces of two sides")
    if any(c not in owners for c in kinds):
        return PieceSet(why="a content no role owns")
    sides: dict = {}
    for c in kinds:
        sides.setdefault(owners[c], []).append(c)
    if len(sides) < 2:
        return PieceSet(why="the pieces of one side only")
    order = [r for r in role_texts if r in sides]
    t = traffic(spec, transitions)
    start = {}
    for xy, v in start_cells.items():
        for c in v:
            if c != bg:
                start.setdefault(c, set()).add(xy)
    if not sum(t.moved.values()):
        return _placed(spec, order, sides, t, start)
    return _moving(spec, role_texts, order, sides, owners, t, start, transitions, sm, description, deadline)


def _placed(spec, order, sides, t, start) -> PieceSet:
    """Contents that are only ever put on cells: X and O, or stones."""
    if any(len(v) != 1 for v in sides.values()):
        return PieceSet(why="several kinds of a side, none moving")
    if t.over_filled:
        return PieceSet(why="pieces put on pieces that stay (stacked)")
    if sum(t.placed.values()) < 3:
        return PieceSet(why="too few placements seen")
    one = {r: sides[r][0] for r in order}
    if sum(t.removed.values()):
        why = "pieces put on cells and taken off or turned over"
    elif spec.layout == "hex":
        why = "pieces put on the cells of a hex board"
    elif stacked(spec, t.placements):
        why = "pieces dropped: each lands on an edge row or on a piece"
    elif start or len(order) != 2:
        return PieceSet(why="pieces at the start or more than two sides, never taken")
    else:
        return PieceSet("marks", {one[order[0]]: "X", one[order[1]]: "O"},
                        why="two sides put one mark each on empty cells, never moved or taken")
    return PieceSet("stones", {c: "stone" for c in one.values()}, why=why)


def _moving(spec, role_texts, order, sides, owners, t, start, transitions, sm, description, deadline) -> PieceSet:
    """Pieces that move: chess figures where a king is found, a pawn or knight set where
    every side has one kind moving like one of them."""
    states = [b for b, _, _ in transitions][:200]
    vectors = {c: Counter(v) for c, v in t.vectors.items()}
    if sm is not None:
        for c, v in _move_vectors(spec, sm, role_texts, owners, states, deadline).items():
            vectors.setdefault(c, Counter()).update(v)
    fwd = {r: _forward(spec, sides[r], start) for r in order}
    if len(order) != 2 or 0 in fwd.values():
        return PieceSet(why="pieces move, but not two sides facing each other")
    pairs = _mirror(spec, sides[order[0]], sides[order[1]], start)

    def seen(c):          # the moves of a kind and of its mirror, forward as +y
        out = [(dx, dy * fwd[owners[c]]) for dx, dy in vectors.get(c, ())]
        if c in pairs:
            m = pairs[c]
            out += [(dx, dy * fwd[owners[m]]) for dx, dy in vectors.get(m, ())]
        return out
    first = _first_mover(transitions, role_texts) or order[0]
    if all(len(sides[r]) == 1 for r in order):
        figs = {r: figure_of(seen(sides[r][0])) for r in order}
        if len(set(figs.values())) == 1 and figs[order[0]] in ("P", "N"):
            name = {"P": "pawns", "N": "knights"}[figs[order[0]]]
            return PieceSet(name, {sides[r][0]: figs[r] for r in order}, first,
                            f"one kind a side, moving as a chess {'pawn' if name == 'pawns' else 'knight'} moves")
        return PieceSet(why="one kind a side, moving like no chess figure")
    kings = _kings(spec, role_texts, order, sides, start, transitions, sm)
    why = "several kinds a side, one whose loss ends the match (the king), the others by their moves"
    if kings is None and description is not None:
        kings = _named_by_the_end(description, spec, {r: sides[r] for r in order}, start) or None
        why = "several kinds a side, one the rules of the end name first (the king), the others by their moves"
    if kings is None:
        return PieceSet(why="no one piece a side whose loss ends the match")
    figures = {}
    for r in order:
        found = {c: figure_of(seen(c)) for c in sides[r] if c != kings[r]}
        twice = {f for f in found.values() if list(found.values()).count(f) > 1}
        figures[kings[r]] = "K"
        figures.update({c: f for c, f in found.items() if f is not None and f not in twice})
    if any(sum(1 for c in sides[r] if c in figures) < 2 for r in order):
        return PieceSet(why="a king, but no other figure found from the moves")
    return PieceSet("chess", figures, first, why)


def _kings(spec, role_texts, order, sides, start, transitions, sm) -> dict | None:
    """``{role: kind}``: the one kind of each side, alone at the start, whose loss in a
    position where that side moves ends the match or leaves the side no move; None where
    some side has no such kind (or there are no rules to ask)."""
    if sm is None:
        return None
    kings = {}
    for r in order:
        state = _turn_state(transitions, role_texts.index(r))
        if state is None:
            return None
        few = [c for c in sides[r] if len(start.get(c, ())) == 1]
        # at most two questions to the rules per kind (few kinds: a king and a queen), so
        # no clock here: the moves' clock above may have run out on a slow reasoner
        vital = [c for c in few if _vital(spec, sm, state, c, role_texts.index(r))]
        if len(vital) != 1:
            return None
        kings[r] = vital[0]
    return kings


def _first_mover(transitions, role_texts):
    for _before, movers, _after in transitions[:1]:
        if len(movers) == 1 and movers[0] < len(role_texts):
            return role_texts[movers[0]]
    return None
