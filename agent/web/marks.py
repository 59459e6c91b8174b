"""What the board marks beside the last move: the cells that won the match, and a piece in
check.  Both are found by asking the rules about edited states, never from symbol names.

    winning_cells(sm, spec, state, keep, owners, roles) -> [(x, y), ...]   at the end of a match
    check_cells(sm, spec, owners, roles, state, prev)   -> [(x, y), ...]   a piece in check

**The winning line** of a terminal state that some role wins (the goal values are not all
equal) is a smallest set of the first board's facts that still decides the match: facts are
taken off one at a time (a cell set to the board's empty content, or the fact dropped where
the board has none), and a fact stays off when the state is still terminal with the same
goal values.  What is left is what the terminal and goal rules read: three in a row in
ticTacToe, four in connectFour, the piece on the last row in breakthrough.  The cells of
``keep`` (the last move) are tried last, so the line shown is the one just made when there
are several.

Limits: a win by counting (most pieces, Othello) or by the opponent having no move leaves
nothing small enough to be a line, and none is shown (at most ``MAX_LINE`` cells, the
board's longer side); a state edited this way may be one no play reaches, which the rules
usually judge as well as any; one edit is tried per fact, so the set is minimal, not the
smallest of all; a budget of ``seconds`` (Prolog on a big game) may leave it unmarked.

**Check**: in a state where one role (R) moves and the other waited, the opponent's threats
are its legal moves on the current board as if it were to move again: the board's facts of
this state with the other facts (whose turn, counters) of the state before, where it was to
move.  A move whose last named cell holds a piece of R's (``owners``, from
``boardview.owners_of``) would capture it; that piece is *in check* when the match depends
on it: taking it off the board makes the state terminal or leaves R no legal move (chess:
without its king a side has none; a game lost by losing that piece).  At the end of a match
(mate) the same threats are read, and the piece's kind is tried on a state of the rules' own
play where R moves (``_turn_state``), since the mated state is terminal already.  Limits: turn-taking games with the moves
naming cells only; a piece whose loss ends the game only later (or by counting) is not
marked; the threats are the opponent's pseudo-legal moves in an edited state, so a rule that
reads a fluent left from the state before (chess's own ``check`` fluents) sees that one.
"""
from __future__ import annotations

import time

from gdl.board import BoardSpec, _args, cells, content_text, matches, move_cells
from gdl.kif import parse_term

MAX_LINE_EXTRA = 0        # a winning set may have at most the board's longer side, plus this


def _empty_fact(spec: BoardSpec, fact):
    """The fact of the same cell with the board's empty content, or None (dropped) where
    the board has no empty content or more than one content argument."""
    if spec.background is None or len(spec.content_args) != 1:
        return None
    a = list(_args(fact))
    a[spec.content_args[0]] = parse_term(spec.background)
    return (fact[0], *a)


def _without(spec: BoardSpec, state: frozenset, fact) -> frozenset:
    empty = _empty_fact(spec, fact)
    rest = state - {fact}
    return rest | {empty} if empty is not None else rest


def _goals(sm, state) -> tuple:
    return tuple(tuple(sorted(v)) for v in sm.goal_values(state))


def winning_cells(sm, spec: BoardSpec, state, keep=(), owners=None, roles=(), seconds: float = 3.0) -> list:
    """The cells of the first board that decide a won terminal state (see the module's
    text), sorted; [] for a draw, a non-terminal state, a set larger than a line or not
    the winner's, or when ``seconds`` run out.  ``owners``/``roles`` as ``check_cells``'."""
    owners = owners or {}
    state = frozenset(state)
    try:
        if not sm.is_terminal(state):
            return []
        goals = _goals(sm, state)
    except Exception:
        return []
    if len({g for g in goals}) < 2:        # everyone scored the same: nobody won
        return []
    deadline = time.monotonic() + seconds
    keep = {tuple(c) for c in keep}
    facts = [f for f in state if matches(spec, f) and _content(spec, f) != spec.background]
    placed = {f: spec.grid_xy(tuple(_args(f)[k] for k in spec.coord_args)) for f in facts}
    facts = [f for f in facts if placed[f] is not None]
    facts.sort(key=lambda f: (placed[f] in keep, placed[f], repr(f)))
    current = state
    for f in facts:
        if time.monotonic() > deadline:
            return []
        trial = _without(spec, current, f)
        try:
            if sm.is_terminal(trial) and _goals(sm, trial) == goals:
                current = trial
        except Exception:
            continue
    kept = [f for f in facts if f in current]
    left = sorted({placed[f] for f in kept})
    if not left or len(left) > max(spec.width, spec.height) + MAX_LINE_EXTRA:
        return []
    # The line is the winner's: its pieces (where owners are known), else one kind of
    # piece.  A set with the loser's pieces is what an edit broke (chess: a side without
    # its king has no move, so "stuck" holds), not a line.
    best = max(max(g, default=0) for g in goals)
    winners = {roles[r] for r, g in enumerate(goals) if r < len(roles) and max(g, default=0) == best}
    kinds = {_content(spec, f) for f in kept}
    who = {owners.get((spec.relation, c)) for c in kinds}
    if (None in who or not owners) and len(kinds) > 1:
        return []
    if None not in who and not who <= winners:
        return []
    return left


def _content(spec: BoardSpec, fact) -> str:
    return content_text(spec, fact)


def check_cells(sm, spec: BoardSpec, owners: dict, roles: list, state, prev,
                seconds: float = 1.5) -> list:
    """Cells of pieces in check in ``state`` (see the module's text), sorted; ``prev`` is the
    state before the last joint move (None at the start: nothing is marked).  ``owners``:
    ``{(relation, content): role name}``; ``roles``: role names in the rules' order."""
    if prev is None:
        return []
    state, prev = frozenset(state), frozenset(prev)
    deadline = time.monotonic() + seconds
    try:
        n = len(sm.roles)
        over = sm.is_terminal(state)
        movers = [] if over else [r for r in range(n) if len(sm.legal_moves(state, r)) > 1]
        before = [r for r in range(n) if len(sm.legal_moves(prev, r)) > 1]
    except Exception:
        return []
    if time.monotonic() > deadline:        # a slow reasoner: the page does not wait for a mark
        return []
    if not movers and before and len(before) == n - 1:   # a forced reply, or mated: the other one
        movers = [r for r in range(n) if r not in before]
    if len(movers) != 1 or not before or movers[0] in before or movers[0] >= len(roles):
        return []                          # not a turn-taking step
    me = roles[movers[0]]
    board = cells(spec, state)
    mine = {xy for xy, cs in board.items() if any(owners.get((spec.relation, c)) == me for c in cs)}
    if not mine:
        return []
    # the opponent to move again on this board: this state's board, the last state's rest
    threat = frozenset(f for f in prev if not matches(spec, f)) | frozenset(f for f in state if matches(spec, f))
    attacked: set = set()
    try:
        for o in before:
            for m in sm.legal_moves(threat, o):
                cs = move_cells(spec, m)
                if cs and cs[-1] in mine:
                    attacked.add(cs[-1])
            if time.monotonic() > deadline:
                return []
    except Exception:
        return []
    out = []
    for xy in sorted(attacked):
        for f in state:
            if not matches(spec, f) or _content(spec, f) == spec.background or _cell(spec, f) != xy:
                continue
            if _matters(sm, spec, state, f, movers[0], over):
                out.append(xy)
                break
        if time.monotonic() > deadline:
            break
    return out


def _cell(spec: BoardSpec, fact):
    return spec.grid_xy(tuple(_args(fact)[k] for k in spec.coord_args))


def _matters(sm, spec: BoardSpec, state, fact, role: int, over: bool) -> bool:
    """Whether the match depends on the piece ``fact`` of ``role``: taking it off this
    state (``role`` to move) makes the state terminal or leaves ``role`` no legal move.  A
    terminal state (mate) says nothing by itself: a piece of the same content is taken off
    a state of the rules' own play where ``role`` moves (``_turn_state``) instead."""
    try:
        if over:
            ref = _turn_state(sm, role)
            if ref is None:
                return False
            same = [f for f in ref if matches(spec, f) and _content(spec, f) == _content(spec, fact)]
            if not same:
                return False
            state, fact = ref, same[0]
        edited = _without(spec, state, fact)
        return sm.is_terminal(edited) or not sm.legal_moves(edited, role)
    except Exception:
        return False


def _turn_state(sm, role: int, plies: int = 4):
    """The first state of the line of first legal moves from the start in which ``role``
    has a choice (None within ``plies``)."""
    st = sm.initial_state()
    for _ in range(plies + 1):
        if sm.is_terminal(st):
            return None
        legal = [sm.legal_moves(st, r) for r in range(len(sm.roles))]
        if len(legal[role]) > 1:
            return st
        if not all(legal):
            return None
        st = sm.next_state(st, tuple(sorted(ls, key=repr)[0] for ls in legal))
    return None
