"""Move features that mean the same in every game, found from the rules' structure.

The choice model's other move columns are the move's own tokens and counts: they repeat a
move seen in the same position, and say nothing in a position never seen.  A person who
always plays the leftmost open column has a habit that these columns cannot carry to a new
position; the columns here can: each says where a move lands on the board and how that
relates to the other legal moves and to the last moves, in terms that do not depend on the
game's symbols (games arrive scrambled).

The board is ``gdl.board``'s (a fluent with coordinate arguments over integers or chains,
their order from the rules).  For each legal move:

- its *target* cell: the last cell the move's arguments name (``board.move_cells``: the
  destination of ``(move x1 y1 x2 y2)``, the cell of ``(mark x y)``), else the cell the move
  fills in the next state (``(drop 3)`` names a column only: its disc lands somewhere);
  its *source*: the first named cell of a move that names two, else the one cell it empties;
- the target's column and row (0..1), its rank along each among the legal moves' targets
  (0 = lowest), whether it is the lowest or highest, its distance to the centre and to the
  edge and whether it is the nearest to the centre, the step from source to target;
- its relation to the mover's own last move and to the opponent's last move (same cell,
  column, row, adjacent, distance, the nearest of the legal moves), moving the piece moved
  last, the same move as the opponent's last or my own last;
- whether it captures: a content (piece) other than the one the move puts down is on fewer
  cells after it (the others' moves in the successor: each role's first legal move);
- for each of the move's first ``ARGS`` arguments whose values are ordered (a coordinate
  domain of the board, or integers): its rank among the legal moves of the same form.

A column that is the same for every legal move of a decision says nothing in a conditional
logit, so a missing last move or board leaves zeros and costs nothing.

``history``: the last ``HISTORY`` steps before the decision, oldest first, each (state
before the step, joint move); a role *acted* in a step when its move has arguments or it had
another legal move (a noop is neither).  The same function computes the columns for the
fitter (recorded decisions) and for live play (``agent.modelplay``).
"""
from __future__ import annotations

import math

import numpy as np

from gdl.board import BoardSpec, cells, detect_board, move_cells, sample_states

# the columns' names and the board table's check are the persona file's (read without numpy)
from agent.modeltable import ARGS, INDEX, NAMES, check_board

HISTORY = 8          # steps of history kept with a decision (enough for the mover's and one opponent's last move)


# ------------------------------------------------------------------------------ the view

class MoveView:
    """What the features read of a game: its board (``BoardSpec`` or None).  Kept in a fitted
    model's table, so live play reads the very board the fit read."""

    def __init__(self, board: BoardSpec | None):
        self.board = board

    @classmethod
    def detect(cls, description, engine, states=(), seconds: float = 3.0) -> "MoveView":
        """The game's board from ``states`` (recorded ones) and a few random walks."""
        sample = list(states)[:300]
        try:
            sample += sample_states(engine, walks=4, steps=120, seconds=seconds)
        except Exception:    # a walk that fails: the recorded states alone
            pass
        if not sample:
            return cls(None)
        try:
            specs = detect_board(description, sample)
        except (RecursionError, ValueError, TypeError):
            specs = []
        return cls(specs[0] if specs else None)

    def to_dict(self) -> dict:
        b = self.board
        if b is None:
            return {}
        return {"relation": b.relation, "arity": b.arity, "coord_args": list(b.coord_args),
                "coord_values": [list(v) for v in b.coord_values], "content_args": list(b.content_args),
                "background": b.background or ""}

    @classmethod
    def from_dict(cls, d, source: str = "<model>") -> "MoveView":
        check_board(d, source)
        if not d:
            return cls(None)
        return cls(BoardSpec(d["relation"], d["arity"], tuple(d["coord_args"]),
                             tuple(tuple(v) for v in d["coord_values"]), tuple(d["content_args"]),
                             (), d["background"] or None))


# ------------------------------------------------------------------------------ the columns

def _occupied(grid: dict, xy, background) -> tuple:
    return tuple(c for c in grid.get(xy, ()) if c != background and c != "")


def _changed(before: dict, after: dict, background) -> tuple[list, list]:
    """(cells filled or changed to a new content, cells emptied), in grid order."""
    placed, emptied = [], []
    for xy in sorted(set(before) | set(after)):
        b, a = _occupied(before, xy, background), _occupied(after, xy, background)
        if a == b:
            continue
        if a:
            placed.append(xy)
        else:
            emptied.append(xy)
    return placed, emptied


def _kinds(grid: dict, background) -> dict:
    count: dict = {}
    for xy in grid:
        for c in _occupied(grid, xy, background):
            count[c] = count.get(c, 0) + 1
    return count


def _effect(board: BoardSpec, move, before_grid: dict, after_state) -> tuple:
    """(target, source, what the move put down, captured count) of one move."""
    bg = board.background
    named = move_cells(board, move)
    placed, emptied = ([], [])
    after_grid = None
    if after_state is not None:
        after_grid = cells(board, after_state)
        placed, emptied = _changed(before_grid, after_grid, bg)
    target = named[-1] if named else (placed[0] if placed else None)
    source = named[0] if len(named) >= 2 else (emptied[0] if len(emptied) == 1 and target is not None
                                                and emptied[0] != target else None)
    own = set(_occupied(after_grid, target, bg)) if after_grid is not None and target is not None else set()
    captured = 0
    if after_grid is not None:
        k0, k1 = _kinds(before_grid, bg), _kinds(after_grid, bg)
        captured = sum(max(0, n - k1.get(c, 0)) for c, n in k0.items() if c not in own)
    return target, source, captured


def _acted(engine, state, role: int, move) -> bool:
    if isinstance(move, tuple):
        return True
    try:
        return len(engine.legal_moves(state, role)) >= 2
    except Exception:
        return False


def last_moves(view: MoveView, engine, role: int, history, state) -> tuple:
    """((own move, own target), (opponent's move, opponent's target)): the latest move each
    made in ``history`` (None where none), targets as in ``_effect``."""
    steps = list(history or ())
    own = opp = None
    for j in range(len(steps) - 1, -1, -1):
        s, joint = steps[j]
        after = steps[j + 1][0] if j + 1 < len(steps) else state
        for q, m in enumerate(joint):
            if (q == role and own is not None) or (q != role and opp is not None):
                continue
            if not _acted(engine, s, q, m):
                continue
            target = None
            if view.board is not None:
                target = _effect(view.board, m, cells(view.board, s), after)[0]
            if q == role:
                own = (m, target)
            else:
                opp = (m, target)
        if own is not None and opp is not None:
            break
    return own, opp


def _successors(engine, state, role: int, moves) -> list:
    """The next state of each move, the other roles playing their first legal move."""
    try:
        others = [engine.legal_moves(state, q) if q != role else None for q in range(len(engine.roles))]
    except Exception:
        return [None] * len(moves)
    out = []
    for m in moves:
        joint = tuple(m if q == role else (o[0] if o else None) for q, o in enumerate(others))
        try:
            out.append(engine.next_state(state, joint) if None not in joint else None)
        except Exception:
            out.append(None)
    return out


def _rank(values: list) -> tuple:
    """(rank 0..1, is lowest, is highest) per value (None: no rank), among distinct values."""
    known = sorted({v for v in values if v is not None})
    n = len(known)
    pos = {v: i for i, v in enumerate(known)}
    out = []
    for v in values:
        if v is None or n < 2:
            out.append((0.0, 0.0, 0.0))
        else:
            out.append((pos[v] / (n - 1), float(pos[v] == 0), float(pos[v] == n - 1)))
    return out


def _flat(t) -> list:
    if isinstance(t, str):
        return []
    out = []
    for a in t[1:]:
        out += [a] if isinstance(a, str) else _flat(a)
    return out


def _arg_orders(board: BoardSpec | None, moves) -> list:
    """For each of the first ``ARGS`` argument positions: each move's order value there, or
    None.  Values are ordered by the board's first coordinate domain that holds all the
    values at that position (among moves of the same form), else as integers."""
    forms: dict = {}
    for j, m in enumerate(moves):
        key = (m[0], len(m)) if isinstance(m, tuple) else None
        forms.setdefault(key, []).append(j)
    out = [[None] * len(moves) for _ in range(ARGS)]
    domains = list(board.coord_values) if board is not None else []
    for key, idx in forms.items():
        if key is None:
            continue
        args = [_flat(moves[j]) for j in idx]
        for k in range(ARGS):
            vals = [a[k] if k < len(a) else None for a in args]
            if any(v is None for v in vals):
                continue
            order = None
            for dom in domains:
                if all(v in dom for v in vals):
                    order = [dom.index(v) for v in vals]
                    break
            if order is None and all(v.lstrip("-").isdigit() for v in vals):
                order = [int(v) for v in vals]
            if order is not None:
                for j, o in zip(idx, order):
                    out[k][j] = o
    return out


def compute(view: MoveView, engine, state, role: int, moves, history=()) -> np.ndarray:
    """The columns ``NAMES`` (one row per move) of one decision."""
    n = len(moves)
    X = np.zeros((n, len(NAMES)))
    if n == 0:
        return X
    own, opp = last_moves(view, engine, role, history, state)
    own_move, own_t = own if own is not None else (None, None)
    opp_move, opp_t = opp if opp is not None else (None, None)
    for j, m in enumerate(moves):
        X[j, INDEX["same_as_opp"]] = float(opp_move is not None and m == opp_move)
        X[j, INDEX["same_as_own"]] = float(own_move is not None and m == own_move)
    for k, order in enumerate(_arg_orders(view.board, moves), 1):
        for j, (r, lo, hi) in enumerate(_rank(order)):
            X[j, INDEX[f"arg{k}_rank"]], X[j, INDEX[f"arg{k}_min"]], X[j, INDEX[f"arg{k}_max"]] = r, lo, hi
    b = view.board
    if b is None:
        return X
    grid = cells(b, state)
    succ = _successors(engine, state, role, moves)
    eff = [_effect(b, m, grid, s1) for m, s1 in zip(moves, succ)]
    W, H = b.width, b.height
    cx, cy = (W - 1) / 2, (H - 1) / 2
    side = max(W, H) - 1
    half = max(1, (min(W, H) - 1) // 2)
    targets = [t for t, _, _ in eff]
    xs = _rank([t[0] if t else None for t in targets])
    ys = _rank([t[1] if t else None for t in targets])
    centre = [math.hypot(t[0] - cx, t[1] - cy) if t else None for t in targets]
    best_centre = min((c for c in centre if c is not None), default=None)

    def cheb(a, c):
        return max(abs(a[0] - c[0]), abs(a[1] - c[1]))

    near_own = min((cheb(t, own_t) for t in targets if t and own_t), default=None)
    near_opp = min((cheb(t, opp_t) for t in targets if t and opp_t), default=None)
    for j, (t, src, captured) in enumerate(eff):
        X[j, INDEX["captures"]] = float(captured > 0)
        X[j, INDEX["captured"]] = math.tanh(captured / 2.0)
        if t is None:
            continue
        x, y = t
        row = {"cell": 1.0, "x": x / max(1, W - 1), "y": y / max(1, H - 1),
               "x_rank": xs[j][0], "x_min": xs[j][1], "x_max": xs[j][2],
               "y_rank": ys[j][0], "y_min": ys[j][1], "y_max": ys[j][2],
               "centre_dx": abs(x - cx) / max(cx, 0.5), "centre_dy": abs(y - cy) / max(cy, 0.5),
               "centre_dist": centre[j] / max(math.hypot(cx, cy), 0.5),
               "centre_nearest": float(abs(centre[j] - best_centre) < 1e-9),
               "edge_dist": min(x, W - 1 - x, y, H - 1 - y) / half,
               "on_edge": float(min(x, W - 1 - x, y, H - 1 - y) == 0)}
        if src is not None:
            row["dx"], row["dy"] = (x - src[0]) / max(1, W - 1), (y - src[1]) / max(1, H - 1)
        for prefix, last, near in (("own", own_t, near_own), ("opp", opp_t, near_opp)):
            if last is None:
                continue
            d = cheb(t, last)
            row.update({f"{prefix}_same_cell": float(d == 0), f"{prefix}_same_x": float(x == last[0]),
                        f"{prefix}_same_y": float(y == last[1]), f"{prefix}_adjacent": float(d == 1),
                        f"{prefix}_dist": d / max(1, side), f"{prefix}_nearest": float(d == near)})
        if own_t is not None and src is not None:
            row["own_same_piece"] = float(src == own_t)
        for name, v in row.items():
            X[j, INDEX[name]] = v
    return X
