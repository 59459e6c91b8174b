"""One decision interface for everything that chooses a move (issue 53).

    Situation   what a decider is asked: the state, the role and its legal moves, a seed,
                a deadline, the last joint moves
    Decision    what it answers: the move, and what it learned of every legal move
    Decider     the protocol: ``decide(situation, on_best=None) -> Decision``

The deciders: the persona search (``agent.player.SearchDecider``), a fitted player model
(``agent.modelplay.ModelDecider``), flat Monte Carlo (``agent.player.FlatMonteCarlo``: the
no-search baseline and the stand-in when a search fails) and a uniformly random choice
(``RandomChoice``: the match runner's random player).  ``agent.player.Player`` keeps a
match's state, picks the decider of its persona at each decision, falls back on the next
one when it fails, and writes the ``Decision`` into the match record.

``on_best(move, simulations)``: a decider that takes time reports its best move so far
(a term of the legal moves) whenever it changes; one that answers at once may report once.

This module imports nothing of the project: every decider and every reader of decisions
stands above it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Protocol

# the counts a search gives of its simulations (agent.search.SearchResult), kept as they are
COUNTS = ("playouts", "proven_descents", "transpositions", "evaluated", "extended")


@dataclass(frozen=True)
class Situation:
    """A decision to make: ``role`` chooses among ``legal`` in ``state`` (a player without
    rules of its own, the runner's random player, gives no state, its role's name and the
    referee's move texts)."""
    state: object
    role: int | str                     # the role's index in the rules' roles
    legal: list
    seed: int
    deadline: float | None = None       # time.monotonic() by which the move is due (None: no clock)
    prev: tuple | None = None           # the last joint move (None at the first step)
    history: tuple = ()                 # the match's last steps, oldest first: (state, joint move)


@dataclass
class Decision:
    """A decider's answer.  ``moves`` are the legal moves the per-move lists are for (the
    decider's order); ``q`` the value of each (0-100 scale; None: not tried), ``visits``
    how often it was tried, ``p`` the probability a model gives it."""
    move: object
    moves: list | None = None
    q: list | None = None
    visits: list | None = None
    p: list | None = None
    simulations: int | None = None
    playouts: int | None = None
    proven_descents: int | None = None
    transpositions: int | None = None
    evaluated: int | None = None        # playouts ended by the game's evaluation
    extended: int | None = None         # of them, run on to a quiet state
    threads: int = 1                    # trees searched at once (root parallelism)
    fallback: str | None = None         # why a stand-in decided: the error of the decider meant to (None: it did)
    extra: dict = field(default_factory=dict)   # what a decider adds (agent/hidden: the states it searched)

    @property
    def value(self) -> float | None:
        """The chosen move's value (its ``q``), when the decider gave one."""
        if self.moves is None or self.q is None or self.move not in self.moves:
            return None
        return self.q[self.moves.index(self.move)]

    @classmethod
    def of(cls, result) -> "Decision":
        """A Decision from a search result (``agent.search.SearchResult``), another
        ``Decision``, or a dict of the same fields (what agent/hidden's ensemble returns).
        Per-move lists whose length is not the moves' are left out; ``simulations``
        falls back on the playouts, then on the visits' sum."""
        if isinstance(result, Decision):
            return result
        if isinstance(result, dict):
            get = result.get
        else:
            def get(k, default=None):
                return getattr(result, k, default)
        moves = get("moves")
        moves = None if moves is None else list(moves)

        def per_move(values, cast):
            if moves is None or values is None or len(list(values)) != len(moves):
                return None
            return [None if v is None else cast(v) for v in values]

        q, visits, p = per_move(get("q"), float), per_move(get("visits"), int), per_move(get("p"), float)
        sims = get("simulations", None)
        if sims is None:
            sims = get("playouts", None)
        if sims is None and visits is not None:
            sims = sum(visits)
        counts = {k: (None if get(k, None) is None else int(get(k))) for k in COUNTS}
        known = {"move", "moves", "q", "visits", "p", "simulations", "threads", "fallback", *COUNTS}
        extra = {k: v for k, v in result.items() if k not in known} if isinstance(result, dict) else {}
        return cls(move=get("move"), moves=moves, q=q, visits=visits, p=p,
                   simulations=None if sims is None else int(sims), threads=int(get("threads", 1) or 1),
                   fallback=get("fallback", None), extra=extra, **counts)

    def fields(self) -> dict:
        """The dict shape of a decision the player used before this record (the keys that
        hold something; ``threads`` only when more than one)."""
        out = {"move": self.move}
        if self.moves is not None:
            out["moves"] = list(self.moves)
            for k in ("q", "visits", "p"):
                if getattr(self, k) is not None:
                    out[k] = getattr(self, k)
        out["simulations"] = self.simulations
        for k in COUNTS:
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.threads > 1:
            out["threads"] = self.threads
        return {**out, **self.extra}


class Decider(Protocol):
    """Anything that chooses a move (see the module's text)."""

    def decide(self, situation: Situation,
               on_best: Callable[[object, int], None] | None = None) -> Decision: ...


class RandomChoice:
    """A uniformly random legal move, at once (ggp-base's RandomGamer; the baseline of any
    strength claim).  Its random numbers are its own, from ``seed`` (None: the system's)."""

    def __init__(self, seed: int | None = None):
        self.rng = random.Random(seed)

    def decide(self, situation: Situation, on_best=None) -> Decision:
        move = self.rng.choice(situation.legal)
        if on_best is not None:
            on_best(move, 0)
        return Decision(move=move, moves=list(situation.legal), simulations=0)
