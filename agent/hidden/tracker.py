"""Our legal moves for the current step of a GDL-II match, whatever the player does.

The server's GDL-II referee answers for us when the player is cold, late or gone, so it must
know our legal moves for every step, on time.  It follows one complete history, advanced step
by step from our own moves and percepts, on a budget per step:

* the other roles' moves are tried one candidate at a time (ours fixed to the move we sent,
  when legal there), each checked by one ``sees`` query, until one gives exactly our
  percepts (a history consistent with every percept so far) or the budget is spent; one
  candidate is always tried, so a step costs at least one ``sees``, one next state and one
  legal-move query;
* when none fits in time (a hidden choice made steps ago, which no move of this step can
  change, or a budget too short), the closest candidate is taken and its next state patched
  to what the percepts name (``belief.patch``): a *closest* history, said so.

Candidates are tried in random order, those whose arguments appear in this step's new
percepts first (a shot at a cell is seen as a shot at that cell): structure only, no symbol
means anything.  The belief of ``agent.hidden.belief`` with one particle did the same work
before, but checked every candidate of a step (battleship on Prolog: 120 placements at 0.15 s
a ``sees``, 18-36 s a step) and rebuilt from the initial state when the history failed, with
no bound: the referee fell behind the match, and the server, knowing no legal move for the
current step, guessed from an earlier one (illegal ``PLACE`` moves through the shooting
phase under Dresden's GameController: docs/benchmarks/gdl2.md, "A discarded start").
"""
from __future__ import annotations

import itertools
import math
import random
import time

from agent.reasoner.statemachine import ReasonerError

from .belief import patch
from .repair import flat, named

ENUMERATE = 4096     # joint moves listed (and ordered) per step; beyond, distinct random draws


def fluent_shapes(description) -> frozenset:
    """(name, arity) of every fact a state of the rules can hold: the heads of ``next``
    rules and the ``init`` facts.  A percept of one of these shapes names a state fact, so a
    closest history's state takes it (``belief.patch``), even when the history never held a
    fact of that shape: the first hit of a blind board's shot, which every later step's
    percepts repeat."""
    shapes = set()
    for r in description.rules:
        h = r.head
        if isinstance(h, tuple) and len(h) == 2 and h[0] in ("next", "init"):
            t = h[1]
            shapes.add((t[0], len(t)) if isinstance(t, tuple) else (t, 0))
    return frozenset(shapes)


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class OneHistory:
    """One history consistent with our view where one is found in time; else the closest
    one found, patched (see the module docstring)."""

    def __init__(self, sm, role_index: int, rng: random.Random | None = None, shapes=None):
        self.sm = sm
        self.shapes = shapes            # fluent_shapes of the rules (None: the state's own)
        self.role_index = role_index
        self.rng = rng or random.Random(0)
        self.n_roles = len(sm.roles)
        self.state = sm.initial_state()
        self.steps = 0
        self.missed: list = []          # the steps (1-based) whose percepts the history misses
        self.last_percepts = frozenset()
        self.tried = 0                  # candidates checked at the last step

    # ------------------------------------------------------------------ observing
    def observe(self, own, percepts, deadline: float, goes_on: bool = True) -> list:
        """Advance by one step: our move ``own`` (a term, or None when unknown) and our
        ``percepts`` (a set of terms).  Candidates are checked until one explains the
        percepts or ``deadline`` (monotonic) passes, one at least.  ``goes_on``: the match
        is known to go on (a PLAY came): a history that ends here is taken only when no
        other fits.  Returns notes on anything odd; raises ``ReasonerError`` only when no
        candidate can be computed at all."""
        percepts = frozenset(percepts)
        notes = []
        state = self.state
        per_role = [self.sm.legal_moves(state, i) for i in range(self.n_roles)]
        if any(not ms for ms in per_role):
            raise ReasonerError(f"step {self.steps + 1}: a role has no legal move in the history's state")
        mine = per_role[self.role_index]
        if own is not None and own in mine:
            per_role[self.role_index] = [own]
        elif own is not None:
            notes.append(f"our move {own} is not legal in the history's state: any of ours is assumed")
        new = percepts - self.last_percepts
        best = None             # (rank, joint move, what we would see, next state or None)
        self.tried = 0
        failure = None
        for jm in self._candidates(per_role, new):
            if (best is not None or self.tried >= 3) and time.monotonic() >= deadline:
                break   # one candidate that could be computed, at least (3 tries past the deadline)
            self.tried += 1
            try:
                seen = self.sm.sees(state, jm, self.role_index)
                nxt = None
                if seen == percepts:
                    nxt = self.sm.next_state(state, jm)
                    if not (goes_on and self.sm.is_terminal(nxt)):
                        self._advance(nxt, percepts)
                        return notes
                    rank = 2.0   # explains the step, but ends a match that goes on
                else:
                    rank = _jaccard(seen, percepts)
            except ReasonerError as e:
                failure = e
                continue
            if best is None or rank > best[0]:
                best = (rank, jm, seen, nxt)
        if best is None:
            raise failure or ReasonerError(f"step {self.steps + 1}: no candidate joint move")
        rank, jm, seen, nxt = best
        if nxt is None:
            nxt = self.sm.next_state(state, jm)
        if rank < 2.0:
            nxt = patch(nxt, seen, percepts, self.shapes)
            self.missed.append(self.steps + 1)
            notes.append(f"step {self.steps + 1}: no joint move of {self.tried} tried explains our "
                         f"percepts; the closest one, its state patched to what we saw")
        self._advance(nxt, percepts)
        return notes

    def _advance(self, state, percepts) -> None:
        self.state = state
        self.steps += 1
        self.last_percepts = percepts

    def _candidates(self, per_role: list, new: frozenset):
        """Joint moves in the order they are tried: listed and shuffled when there are at
        most ``ENUMERATE``, those whose moves' arguments appear in a new percept first;
        else distinct random draws."""
        total = math.prod(len(ms) for ms in per_role)
        if total <= ENUMERATE:
            cands = list(itertools.product(*per_role))
            self.rng.shuffle(cands)
            seen = [flat(p) for p in new]
            if seen:
                cands.sort(key=lambda jm: named(jm, seen, self.role_index), reverse=True)   # stable: ties stay shuffled
            yield from cands
            return
        drawn = set()
        for _ in range(total):
            jm = tuple(self.rng.choice(ms) for ms in per_role)
            if jm not in drawn:
                drawn.add(jm)
                yield jm

    # ------------------------------------------------------------------ reading
    def legal(self) -> list:
        """Our legal moves in the history's state."""
        return self.sm.legal_moves(self.state, self.role_index)

    def is_terminal(self) -> bool:
        return self.sm.is_terminal(self.state)

    def how(self) -> str:
        """Where the legal moves come from, in words, for the record and the log."""
        if self.steps == 0:
            return "referee: initial state"
        if not self.missed:
            return "referee: history consistent with every percept"
        steps = ("..., " if len(self.missed) > 3 else "") + ", ".join(map(str, self.missed[-3:]))
        return (f"referee: closest history (percepts of {len(self.missed)} step"
                f"{'s' * (len(self.missed) != 1)} not explained: {steps})")
