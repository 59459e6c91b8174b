"""Boards found from the rules' structure, never from symbol names (games arrive scrambled).

A *board* is a fluent relation some of whose arguments are coordinates: arguments whose
values form a small ordered domain -- integers, or constants ordered by a *chain*, a binary
static relation given as facts in which every constant has at most one successor and one
predecessor and that links them all in one line (``(succ 1 2) (succ 2 3)``,
``(next_file a b)`` ...).  The remaining arguments are the cell's *content*.

    detect_board(description, states) -> [BoardSpec]   best board first
    cells(spec, state) -> {(x, y): content}             a state's facts on the grid
    move_cells(spec, move) -> [(x, y), ...]             the cells a move's arguments name

Coordinates: the first coordinate argument is ``x`` (column, left to right), the second
``y`` (row); with four coordinate arguments (a board of boards such as nine-board
tic-tac-toe) they pair as (outer x, outer y, inner x, inner y).  Which way ``y`` runs on the
screen is the drawer's choice.

The domains come from sample states (``sample_states``: the initial state and a few random
walks), since a fluent's values are only known by playing the rules; integer domains are
filled between their smallest and largest value, chain domains between their first and last
member seen.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass

from gdl.analysis import DOES_SIG, TRUE_SIG, dependencies
from gdl.terms import render

MAX_SIDE = 26          # a coordinate domain larger than this is a counter, not a board side
MIN_SIDE = 2
MAX_KINDS = 16       # more content values than this: bookkeeping, not pieces
RESERVED = frozenset("init true next role does goal legal terminal base input distinct not or".split())


@dataclass(frozen=True)
class BoardSpec:
    relation: str                 # fluent name
    arity: int
    coord_args: tuple             # argument positions of the coordinates (2 or 4): x, y[, x2, y2]
    coord_values: tuple           # for each coordinate argument: its ordered domain (texts)
    content_args: tuple           # the other argument positions
    content_values: tuple = ()    # every content text seen, sorted
    background: str | None = None  # the content filling most of the board at the start (empty)
    facts_seen: int = 0           # distinct facts of this relation in the samples

    @property
    def x_arg(self) -> int:
        return self.coord_args[0]

    @property
    def y_arg(self) -> int:
        return self.coord_args[1]

    @property
    def width(self) -> int:
        """Columns of the drawn grid (outer x times inner x for a board of boards)."""
        w = len(self.coord_values[0])
        return w * len(self.coord_values[2]) if len(self.coord_args) == 4 else w

    @property
    def height(self) -> int:
        h = len(self.coord_values[1])
        return h * len(self.coord_values[3]) if len(self.coord_args) == 4 else h

    def grid_xy(self, coords: tuple) -> tuple[int, int] | None:
        """Grid column and row (0-based) of the coordinate texts, or None when off the board."""
        try:
            idx = [self.coord_values[k].index(c) for k, c in enumerate(coords)]
        except ValueError:
            return None
        if len(idx) == 4:
            return (idx[0] * len(self.coord_values[2]) + idx[2],
                    idx[1] * len(self.coord_values[3]) + idx[3])
        return idx[0], idx[1]

    def to_dict(self) -> dict:
        return {"relation": self.relation, "arity": self.arity, "coord_args": list(self.coord_args),
                "coord_values": [list(v) for v in self.coord_values],
                "content_args": list(self.content_args), "content_values": list(self.content_values),
                "background": self.background, "width": self.width, "height": self.height}


def _text(t) -> str:
    return render(t)


def _args(fact) -> tuple:
    return tuple(fact[1:]) if isinstance(fact, tuple) else ()


def _is_int(s) -> bool:
    return isinstance(s, str) and (s.isdigit() or (s[:1] == "-" and s[1:].isdigit()))


# ------------------------------------------------------------------------------ chains

def chains(description) -> list[list[str]]:
    """Every binary static relation given only as ground facts that orders its constants in
    one line.  A relation that also has rules, or forks, or loops, or is not connected, is
    no chain."""
    deps = dependencies(description.rules)
    dynamic = deps.depending_on([TRUE_SIG, DOES_SIG])
    facts: dict = {}
    ruled: set = set()
    for r in description.rules:
        h = r.head
        if not isinstance(h, tuple) or len(h) != 3 or h[0] in RESERVED:
            continue
        if r.body or not all(isinstance(a, str) and not a.startswith("?") for a in h[1:]):
            ruled.add(h[0])
            continue
        facts.setdefault(h[0], []).append((h[1], h[2]))
    out = []
    for rel, pairs in facts.items():
        if rel in ruled or (rel, 2) in dynamic or len(pairs) < 1:
            continue
        succ, pred = {}, {}
        ok = True
        for a, b in set(pairs):
            if a == b or a in succ or b in pred:
                ok = False
                break
            succ[a], pred[b] = b, a
        if not ok:
            continue
        starts = [a for a in succ if a not in pred]
        if len(starts) != 1:
            continue
        line = [starts[0]]
        while line[-1] in succ and len(line) <= len(succ):
            line.append(succ[line[-1]])
        if len(line) == len(succ) + 1:       # every pair used: one line, no cycle
            out.append(line)
    return out


def _order(values: set, lines: list) -> list | None:
    """``values`` in order, filled to a contiguous range; None when they are not ordered."""
    if all(_is_int(v) for v in values):
        lo, hi = min(map(int, values)), max(map(int, values))
        return [str(i) for i in range(lo, hi + 1)]
    best = None
    for line in lines:
        if values <= set(line):
            pos = sorted(line.index(v) for v in values)
            seg = line[pos[0]:pos[-1] + 1]
            if best is None or len(seg) < len(best):
                best = seg
    return best


# ------------------------------------------------------------------------------ detection

def detect_board(description, states) -> list[BoardSpec]:
    """Board specs for the fluents seen in ``states`` (iterables of fluent terms; the first is
    the initial state), best first: more cells covered, then more facts seen."""
    states = [list(s) for s in states]
    by_rel: dict = {}
    for s in states:
        for f in s:
            if isinstance(f, tuple) and len(f) >= 3:
                by_rel.setdefault((f[0], len(f) - 1), set()).add(f)
    lines = chains(description)
    specs = []
    for (rel, n), facts in by_rel.items():
        domains = []
        for k in range(n):
            vals = {a[k] for a in map(_args, facts)}
            ordered = None
            if all(isinstance(v, str) for v in vals):
                ordered = _order(vals, lines)
            domains.append(ordered if ordered and MIN_SIDE <= len(ordered) <= MAX_SIDE else None)
        coords = [k for k in range(n) if domains[k] is not None]
        if len(coords) < 2:
            continue
        coords = coords[:4] if len(coords) >= 4 else coords[:2]
        content = tuple(k for k in range(n) if k not in coords)
        spec = BoardSpec(rel, n, tuple(coords), tuple(tuple(domains[k]) for k in coords), content)
        content_vals = sorted({content_text(spec, f) for f in facts})
        background = None
        first = [f for f in states[0] if isinstance(f, tuple) and f[0] == rel and len(f) - 1 == n] if states else []
        if content and first:
            common, count = Counter(content_text(spec, f) for f in first).most_common(1)[0]
            if count * 2 >= spec.width * spec.height:   # fills half the board: the empty square
                background = common
        specs.append(BoardSpec(rel, n, spec.coord_args, spec.coord_values, content,
                               tuple(content_vals), background, len(facts)))
    # Pieces come in few kinds; a relation with many content values (group numbers, counters
    # per cell) is bookkeeping drawn after the board proper.
    specs.sort(key=lambda s: (len(s.content_values) > MAX_KINDS,
                              -len({_coords(s, f) for f in by_rel[(s.relation, s.arity)]}),
                              -s.facts_seen, s.relation))
    return specs


def _coords(spec: BoardSpec, fact) -> tuple:
    a = _args(fact)
    return tuple(a[k] for k in spec.coord_args)


def content_text(spec: BoardSpec, fact) -> str:
    """The content arguments of a fact as one text ('' when the fluent has no content)."""
    a = _args(fact)
    return " ".join(_text(a[k]) for k in spec.content_args)


def matches(spec: BoardSpec, fact) -> bool:
    return isinstance(fact, tuple) and fact[0] == spec.relation and len(fact) - 1 == spec.arity


def cells(spec: BoardSpec, state) -> dict:
    """``{(column, row): [content, ...]}`` (0-based grid positions) of the facts of ``state``
    on this board; several facts can share a cell."""
    out: dict = {}
    for f in state:
        if matches(spec, f):
            xy = spec.grid_xy(_coords(spec, f))
            if xy is not None:
                out.setdefault(xy, []).append(content_text(spec, f))
    for v in out.values():
        v.sort()
    return out


def _flat(t) -> list:
    if isinstance(t, str):
        return [t]
    return [c for a in t[1:] for c in _flat(a)]


def move_cells(spec: BoardSpec, move) -> list:
    """Grid cells (column, row) that the move's arguments name, left to right: runs of
    consecutive arguments in the coordinates' domains, in the fluent's coordinate order."""
    if isinstance(move, str):
        return []
    args = _flat(move)
    k, n = 0, len(spec.coord_args)
    out = []
    while k + n <= len(args):
        run = tuple(args[k:k + n])
        xy = spec.grid_xy(run)
        if xy is not None:
            out.append(xy)
            k += n
        else:
            k += 1
    return out


# ------------------------------------------------------------------------------ samples

def sample_states(sm, walks: int = 6, steps: int = 120, seed: int = 0, seconds: float = 5.0) -> list:
    """The initial state, then the states of ``walks`` random walks of at most ``steps`` joint
    moves, within about ``seconds``: what ``detect_board`` needs to see each fluent's values."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    init = sm.initial_state()
    out = [init]
    for _ in range(walks):
        s = init
        for _ in range(steps):
            if sm.is_terminal(s) or time.monotonic() > deadline:
                break
            joint = []
            for r in range(len(sm.roles)):
                legal = sm.legal_moves(s, r)
                if not legal:
                    return out
                joint.append(rng.choice(sorted(legal, key=render)))
            s = sm.next_state(s, tuple(joint))
            out.append(s)
    return out
