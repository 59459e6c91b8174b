"""Moves that can end the game, found from the compiled rules (issue #34).

A playout that takes a winning move when its mover has one ("decisive moves", Teytaud and
Teytaud 2010) plays endings as players do, not as a random walk that steps past a win.
Stepping every legal move to find one cost 3.7-16x the simulations (search-equal-time.md).
Most moves cannot end the game at all: a move can only end it by turning on a fluent that
terminal reads (positively), and only the moves of a rule of that fluent's ``next`` that is
not its frame axiom can turn it on.  Those are this module's candidates; a playout steps
only a legal candidate, and keeps it when the state it reaches is terminal with the mover's
best goal.

``analyse`` also finds, for each candidate, the moves of the other roles that may stop it
(a capture, a block): when the next mover could win at once, a playout's last move is
replaced by one of those that leaves no win (anti-decisive moves).

Read from the ground rules' structure alone (``CompiledGame``'s rule arrays), so a scrambled
game gets the same candidates.  Not found: a win made by turning a fluent *off* (capturing
the last piece where terminal reads "no piece left" under ``not``); such a move is simply
not tried.
"""
from __future__ import annotations

import numpy as np

# A role's candidates are used when at most this share of its moves are candidates: then a
# legal one is rare and mostly a win (breakthrough: the moves onto the last row, 14 % of a
# role's moves).  Where every move can end the game (connectFour, the tic-tac-toes: any
# mark may complete a line), finding a win means stepping every move, which cost more
# than it gave (0.27 at equal time on connectFour).
MAX_SHARE = 0.25


def _positive_body(g, atom):
    """The rules of ``atom`` as lists of the atoms they read positively."""
    out = []
    for r in range(g.rule_start[atom], g.rule_start[atom + 1]):
        lits = g.lits[g.lit_start[r]:g.lit_start[r + 1]]
        out.append([int(x >> 1) for x in lits if (x & 1) == 0])
    return out


def _read_by_terminal(g) -> set:
    """The fluents terminal reads positively, through any chain of rules."""
    t = int(g.terminal_atom)
    if t < 0:
        return set()
    seen = {t}
    todo = [t]
    while todo:
        a = todo.pop()
        for body in _positive_body(g, a):
            for b in body:
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
    return {a for a in seen if a < g.n_base}


def _moves_below(g, atoms, is_move) -> set:
    """The move atoms read positively by ``atoms`` or anything they read positively."""
    found = set()
    seen = set()
    todo = list(atoms)
    while todo:
        a = todo.pop()
        if a in seen:
            continue
        seen.add(a)
        if is_move[a]:
            found.add(a)
        elif a >= g.n_base:
            for body in _positive_body(g, a):
                todo.extend(body)
    return found


def _moves(g):
    """(move atom -> (role, move id), bool per atom: is a move atom)."""
    move_of = {}
    is_move = np.zeros(int(g.n_atoms), dtype=bool)
    for r in range(int(g.n_roles)):
        for k in range(int(g.legal_start[r]), int(g.legal_start[r + 1])):
            a = int(g.does_atom[k])
            move_of[a] = (r, k - int(g.legal_start[r]))
            is_move[a] = True
    return move_of, is_move


def candidates(g) -> np.ndarray:
    """uint8[n_roles, max moves]: 1 for a move that may end the game (see above), for the
    roles where such moves are at most ``MAX_SHARE`` of their moves; all 0 elsewhere."""
    R = int(g.n_roles)
    width = int(max(1, max(int(x) for x in g.role_nmoves)))
    out = np.zeros((R, width), np.uint8)
    move_of, is_move = _moves(g)
    turning_on = []
    for f in _read_by_terminal(g):
        for body in _positive_body(g, int(g.next_atom[f])):
            if f not in body:   # (a frame axiom keeps the fluent on, never turns it on)
                turning_on.extend(body)
    for a in _moves_below(g, turning_on, is_move):
        r, k = move_of[a]
        out[r, k] = 1
    for r in range(R):
        if out[r].sum() > MAX_SHARE * int(g.role_nmoves[r]):
            out[r] = 0
    return out


# The stoppers' analysis keeps, for every atom, the fluents and moves it reads (with the
# polarity they are read in); past this many entries in all it gives up (the game then gets
# no anti-decisive moves: a filter, not a rule).
MAX_READS = 2_000_000
# ... and past this many entries of its table (candidates x roles x moves), none: the game
# gets decisive moves only.
MAX_STOPS = 8_000_000


class _TooBig(Exception):
    pass


def _reads(g, is_move):
    """(reads, rule_reads): reads(atom) -> (positive, negative), the fluents and moves
    ``atom`` reads through its rules, with their polarity (a literal under ``not`` flips it).
    Memoised; a recursive cycle reads what its members read outside the cycle."""
    memo: dict = {}
    size = [0]

    def rule_reads(r):
        """The same for one rule (its index in the rule arrays), not memoised."""
        pos, neg = set(), set()
        for x in g.lits[g.lit_start[r]:g.lit_start[r + 1]]:
            b, n = int(x >> 1), int(x & 1)
            if b < g.n_base or is_move[b]:
                (neg if n else pos).add(b)
            else:
                p2, n2 = reads(b)
                pos |= n2 if n else p2
                neg |= p2 if n else n2
        return pos, neg

    def reads(a):
        hit = memo.get(a)
        if hit is not None:
            return hit
        memo[a] = (frozenset(), frozenset())    # (a cycle back to a reads nothing more)
        pos, neg = set(), set()
        for r in range(g.rule_start[a], g.rule_start[a + 1]):
            p, n = rule_reads(r)
            pos |= p
            neg |= n
        size[0] += len(pos) + len(neg)
        if size[0] > MAX_READS:
            raise _TooBig
        memo[a] = (frozenset(pos), frozenset(neg))
        return memo[a]

    return reads, rule_reads


def analyse(g):
    """(cand_row int32[R, max moves], stops uint8[rows, R, max moves]).

    ``cand_row[d, w]``: the row of role d's move w in ``stops`` when w is a candidate
    (``candidates``), else -1.  ``stops[row, c, m]``: 1 where role c's move m may stop w:
    turn off a fluent w's legality reads positively (capture the piece that would move) or
    turn on one it reads under ``not`` (block its square).  A move turns a fluent on through
    a rule of its ``next`` that is not a frame axiom; it may turn it off where it can falsify
    every frame axiom of the fluent (a move outside the moves of that role the axiom reads
    positively, or one it reads under ``not``).  Where the analysis is too big, every move
    of the other roles is a stopper (the rescue then tries them all); where the table would
    be too big, it has no rows (decisive moves only)."""
    wins = candidates(g)
    R, width = wins.shape
    cand_row = np.full((R, width), -1, np.int32)
    rows = list(zip(*np.nonzero(wins)))
    for i, (d, w) in enumerate(rows):
        cand_row[d, w] = i
    if not rows or len(rows) * R * width > MAX_STOPS:
        return cand_row, np.ones((0, R, width), np.uint8)
    stops = np.ones((len(rows), R, width), np.uint8)
    move_of, is_move = _moves(g)
    role_moves = [{a for a, (r, _) in move_of.items() if r == role} for role in range(R)]
    reads, rule_reads = _reads(g, is_move)
    size = 0
    try:
        turn_on: dict = {}      # move atom -> fluents it may turn on
        turn_off: dict = {}     # move atom -> fluents it may turn off
        for f in range(int(g.n_base)):
            nxt = int(g.next_atom[f])
            frames = []
            for r in range(g.rule_start[nxt], g.rule_start[nxt + 1]):
                pos, neg = rule_reads(r)
                if f in pos:
                    frames.append((pos, neg))
                else:
                    for m in pos:
                        if is_move[m]:
                            turn_on.setdefault(m, set()).add(f)
            if not frames:
                continue    # nothing keeps it: whether it stays is not up to a move
            off = None      # the moves that may falsify every frame axiom of f
            for pos, neg in frames:
                kept_by = {x for x in pos if is_move[x]}
                may = set().union(*(role_moves[r] for r in {move_of[x][0] for x in kept_by})) - kept_by
                may |= {x for x in neg if is_move[x]}
                off = may if off is None else off & may
            for m in off:
                turn_off.setdefault(m, set()).add(f)
            size += len(off)
            if size > MAX_READS:
                raise _TooBig
        for i, (d, w) in enumerate(rows):
            lpos, lneg = reads(int(g.legal_atom[int(g.legal_start[d]) + w]))
            stops[i] = 0
            for m, (c, k) in move_of.items():
                if c != d and (turn_off.get(m, set()) & lpos or turn_on.get(m, set()) & lneg):
                    stops[i, c, k] = 1
    except (_TooBig, RecursionError):
        stops[:] = 1
    return cand_row, stops


def best_goals(g) -> np.ndarray:
    """Each role's best goal value (the largest its goal rules name): what a win must give."""
    return np.array([max((float(v) for v in g.goal_value[g.goal_start[r]:g.goal_start[r + 1]]), default=0.0)
                     for r in range(int(g.n_roles))])


def analyse_terms(engine):
    """``analyse`` in terms, for a driver that plays moves as terms: (per role, the set of its
    candidate moves; per (role, candidate), the set of (role, move) that may stop it, or None
    where ``analyse`` has no table; ``best_goals``).  None for an engine whose rules are not
    compiled (the analysis reads the ground rules) or a game without candidates."""
    g = getattr(engine, "game", None)
    if g is None or not hasattr(g, "rule_start"):
        return None
    rows, stops = analyse(g)
    if not (rows >= 0).any():
        return None
    terms = engine.move_terms
    wins = [{terms[d][w] for w in np.nonzero(rows[d] >= 0)[0]} for d in range(rows.shape[0])]
    stoppers = None
    if stops.shape[0]:
        stoppers = {(d, terms[d][w]): {(c, terms[c][m]) for c, m in zip(*np.nonzero(stops[rows[d, w]]))}
                    for d in range(rows.shape[0]) for w in np.nonzero(rows[d] >= 0)[0]}
    return wins, stoppers, best_goals(g)
