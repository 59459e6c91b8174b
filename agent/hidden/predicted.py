"""Search against the predicted opponent (prediction-based search, Dockhorn 2020).

The determinised ensemble (``search.ensemble``) plays every role in each sampled state as
if it knew everything and played its best.  A database of an opponent's matches says more
than which hidden states are likely: it says how that opponent moves (it never calls with
the lowest card, it always holds a black one).  Sampling with the predictive prior uses the
prediction for the past only; here it is used for the future too.  In each of the belief's
most likely states our move's value is its exact expectation when every other role moves
as the prior predicts in each state it reaches (``random`` uniformly, by GDL-II's
semantics), and we take our best move at each later step: a best reply to the predicted
opponent, pooled over the states by their probabilities.

Exact search is only possible where the tree from a state is small (the card games, bids,
short games): ``NODES`` states at most over all the sampled states of a decision, and the
deadline; past either, ``values`` returns ``None`` and the caller searches as before.  The
determinisation's weakness (we act in each state as if we knew it) stays.
"""
from __future__ import annotations

import itertools
import random
import time

import numpy as np

from gdl.gdl2 import RANDOM

from agent.reasoner.statemachine import goal_vector

NODES = 20_000       # next states computed per decision, at most, over all sampled states
STATES = 32          # of the belief's most likely states searched, at most
TIE = 0.01           # of the game's goal range, as in the ensemble


class _TooLarge(Exception):
    """The tree did not fit the decision's budget of states or time."""


class _Walk:
    """One decision's exact search: the budget left and the values found, by (state, step)."""

    def __init__(self, engine, role_index: int, prior, deadline: float, nodes: int):
        self.engine, self.role, self.prior = engine, role_index, prior
        self.deadline, self.left = deadline, nodes
        self.memo: dict = {}
        self.roles = list(engine.roles)

    def value(self, state, step: int) -> float:
        key = (state, step)
        v = self.memo.get(key)
        if v is None:
            if self.engine.is_terminal(state):
                v = float(goal_vector(self.engine.goal_values(state))[self.role])
            else:
                v = max(self.move_values(state, step).values())
            self.memo[key] = v
        return v

    def move_values(self, state, step: int) -> dict:
        """Our legal moves' expected values in ``state``, ``step`` joint moves into the match."""
        engine = self.engine
        options = []        # per role: [(move, probability)]
        for i, name in enumerate(self.roles):
            legal = engine.legal_moves(state, i)
            if not legal:
                raise _TooLarge   # a role without moves in a live state: not a tree we can value
            if i == self.role:
                options.append([(m, 1.0) for m in legal])
            elif name == RANDOM or len(legal) == 1:
                options.append([(m, 1.0 / len(legal)) for m in legal])
            else:
                options.append(list(zip(legal, self.prior.probabilities(engine, state, i, legal, step))))
        values: dict = {}
        others = [o for i, o in enumerate(options) if i != self.role]
        for mine, _ in options[self.role]:
            total = 0.0
            for combo in itertools.product(*others):
                self.left -= 1
                if self.left < 0 or (self.left % 256 == 0 and time.monotonic() > self.deadline):
                    raise _TooLarge
                moves = [m for m, _ in combo]
                p = 1.0
                for _, q in combo:
                    p *= q
                moves.insert(self.role, mine)
                total += p * self.value(engine.next_state(state, tuple(moves)), step + 1)
            values[mine] = total
        return values


def values(engine, distribution: list, role_index: int, legal: list, prior, step: int, *,
           deadline: float, seed: int, goal_span: float = 100.0, nodes: int = NODES) -> dict | None:
    """Our move among ``legal`` by its expected value against the predicted opponent over the
    belief's most likely live states (``distribution``: [(state, probability)]); ``step``:
    joint moves made so far.  Fields as the ensemble gives them (``q``: the pooled expected
    values, in the rules' goal points; ``simulations``: states valued), or ``None`` where the
    trees do not fit ``nodes`` states or the deadline."""
    live = [(s, p) for s, p in distribution[:STATES] if not engine.is_terminal(s)]
    if not live:
        return None
    walk = _Walk(engine, role_index, prior, deadline, nodes)
    index = {m: i for i, m in enumerate(legal)}
    q_sum = np.zeros(len(legal))
    w_sum = np.zeros(len(legal))
    try:
        for state, p in live:
            for m, v in walk.move_values(state, step).items():
                i = index.get(m)
                if i is not None:          # a move legal in this sample only: not ours to play
                    q_sum[i] += p * v
                    w_sum[i] += p
    except _TooLarge:
        return None
    q = np.where(w_sum > 0, q_sum / np.maximum(w_sum, 1e-12), -1.0)
    top = float(q.max())
    near = [i for i in range(len(legal)) if q[i] >= top - TIE * goal_span]
    best = near[0] if len(near) == 1 else random.Random(seed).choice(near)
    return {"move": legal[best], "moves": legal, "q": [float(x) for x in q],
            "visits": [0] * len(legal), "simulations": nodes - walk.left, "playouts": 0,
            "proven_descents": 0, "samples": len(live),
            "sample_mass": round(float(sum(p for _, p in live)), 4), "method": "predicted"}
