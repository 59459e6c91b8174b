"""Moves that can end the game, found from the compiled rules (issue #34).

A playout that takes a winning move when its mover has one ("decisive moves", Teytaud and
Teytaud 2010) plays endings as players do, not as a random walk that steps past a win.
Stepping every legal move to find one cost 3.7-16x the simulations (search-equal-time.md).
Most moves cannot end the game at all: a move can only end it by turning on a fluent that
terminal reads (positively), and only the moves of a rule of that fluent's ``next`` that is
not its frame axiom can turn it on.  Those are this module's candidates; a playout steps
only a legal candidate, and keeps it when the state it reaches is terminal with the mover's
best goal.

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


def candidates(g) -> np.ndarray:
    """uint8[n_roles, max moves]: 1 for a move that may end the game (see above), for the
    roles where such moves are at most ``MAX_SHARE`` of their moves; all 0 elsewhere."""
    R = int(g.n_roles)
    width = int(max(1, max(int(x) for x in g.role_nmoves)))
    out = np.zeros((R, width), np.uint8)
    move_of = {}
    is_move = np.zeros(int(g.n_atoms), dtype=bool)
    for r in range(R):
        for k in range(int(g.legal_start[r]), int(g.legal_start[r + 1])):
            a = int(g.does_atom[k])
            move_of[a] = (r, k - int(g.legal_start[r]))
            is_move[a] = True
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


def best_goals(g) -> np.ndarray:
    """Each role's best goal value (the largest its goal rules name): what a win must give."""
    return np.array([max((float(v) for v in g.goal_value[g.goal_start[r]:g.goal_start[r + 1]]), default=0.0)
                     for r in range(int(g.n_roles))])


def candidate_terms(engine) -> list | None:
    """Per role, the set of its candidate moves as terms; None for an engine whose rules are
    not compiled (the candidates are read from the ground rules)."""
    g = getattr(engine, "game", None)
    if g is None or not hasattr(g, "rule_start"):
        return None
    c = candidates(g)
    return [{engine.move_terms[r][k] for k in np.nonzero(c[r])[0]} for r in range(c.shape[0])]
