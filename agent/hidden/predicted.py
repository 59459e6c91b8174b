"""Search against the predicted opponent (prediction-based search, Dockhorn 2020).

The determinised ensemble (``search.ensemble``) plays every role in each sampled state as
if it knew everything and played its best.  A database of an opponent's matches says more
than which hidden states are likely: it says how that opponent moves (it never calls with
the lowest card, it always holds a black one).  Sampling with the predictive prior uses the
prediction for the past only; here it is used for the future too.  In each of the belief's
most likely states our move's value is its exact expectation when every other role moves
as the prior predicts in each state it reaches (``random`` uniformly, by GDL-II's
semantics), and we take our best move at each later step among the states we could not
tell apart then (grouped by what we would have seen): a best reply to the predicted
opponent over the belief.

Exact search is only possible where the tree from a state is small (the card games, bids,
short games): ``NODES`` states at most over all the sampled states of a decision, and the
deadline; past either, ``values`` returns ``None`` and the caller searches as before.  The
opponents' predicted moves depend on the whole state (the records' counts do), not on what
they see: the database's view of them, not a model of their belief.
"""
from __future__ import annotations

import itertools
import random
import time

import numpy as np

from gdl.gdl2 import RANDOM

from agent.reasoner.statemachine import goal_vector

from .prior import view_key

MIN_SUPPORT = 1      # recorded moves of an opponent on the view the search reaches, at least
NODES = 20_000       # next states computed per decision, at most, over all sampled states
STATES = 32          # of the belief's most likely states searched, at most
TIE = 0.01           # of the game's goal range, as in the ensemble


class _TooLarge(Exception):
    """The tree did not fit the decision's budget of states or time, or it reaches an
    opponent's situation the database never saw (``MIN_SUPPORT``)."""


class _Walk:
    """One decision's exact search over beliefs: a node is what we would know at one of our
    later decisions (the states still possible, each with its probability so far), so that
    our later moves are chosen once for all the states we could not tell apart, as in play;
    choosing them per state would assume we will know what is hidden (strategy fusion), and
    in Kuhn poker it valued checking with the middle card as if we would then know when to
    fold."""

    def __init__(self, engine, role_index: int, prior, deadline: float, nodes: int):
        self.engine, self.role, self.prior = engine, role_index, prior
        self.deadline, self.left = deadline, nodes
        self.roles = list(engine.roles)

    def _spend(self) -> None:
        self.left -= 1
        if self.left < 0 or (self.left % 256 == 0 and time.monotonic() > self.deadline):
            raise _TooLarge

    def _others(self, state, step: int, views) -> list:
        """The other roles' joint moves in ``state`` with their probabilities: as the prior
        predicts on each role's view where it is followed (``views``), else in the state;
        ``random`` uniformly."""
        options = []
        for i, name in enumerate(self.roles):
            if i == self.role:
                continue
            legal = self.engine.legal_moves(state, i)
            if not legal:
                raise _TooLarge   # a role without moves in a live state: not a tree we can value
            if name == RANDOM or len(legal) == 1:
                options.append([(m, 1.0 / len(legal)) for m in legal])
            else:
                view = None if views is None else views[i]
                # a prediction the database never saw made is the levels below it (the
                # move's share at this step): in Kuhn poker the persona's king facing a bet
                # was never recorded, the step's folds made it fold half the time, and the
                # search bluffed the jack into calls.  A best reply is for what was seen.
                if self.prior.support(state, i, legal, step, view=view) < MIN_SUPPORT:
                    raise _TooLarge
                options.append(list(zip(legal, self.prior.probabilities(self.engine, state, i, legal, step,
                                                                        view=view))))
        out = []
        for combo in itertools.product(*options):
            p = 1.0
            for _, q in combo:
                p *= q
            out.append(([m for m, _ in combo], p))
        return out

    def move_values(self, belief: list, step: int, moves: list) -> dict:
        """Each of our ``moves``' value at a node: the probability-weighted sum over the
        node's live states (``belief``: [(state, probability, the roles' views or None)]) of
        what follows, our later choices made per belief node.  Sums, not means: a node's mass is the same for every
        move, so the best move is the same."""
        engine, role = self.engine, self.role
        values = {}
        for mine in moves:
            children: dict = {}       # what we would see next -> [(state, probability)]
            for state, p, views in belief:
                for others, q in self._others(state, step, views):
                    self._spend()
                    joint = list(others)
                    joint.insert(role, mine)
                    joint = tuple(joint)
                    seen = engine.sees(state, joint, role)
                    children.setdefault(seen, []).append(
                        (engine.next_state(state, joint), p * q, _advance(engine, views, state, joint)))
            values[mine] = sum(self.value(node, step + 1) for node in children.values())
        return values

    def value(self, belief: list, step: int) -> float:
        total, live = 0.0, []
        for state, p, views in belief:
            if self.engine.is_terminal(state):
                total += p * float(goal_vector(self.engine.goal_values(state))[self.role])
            else:
                live.append((state, p, views))
        if live:
            # our moves are the same in every state we cannot tell apart (GDL-II tells a role
            # its legal moves); those legal in all of them, should a sheet say otherwise
            mine = set(self.engine.legal_moves(live[0][0], self.role))
            for state, _, _ in live[1:]:
                mine &= set(self.engine.legal_moves(state, self.role))
            if not mine:
                raise _TooLarge
            total += max(self.move_values(live, step, sorted(mine, key=str)).values())
        return total


def _advance(engine, views, state, joint):
    """The roles' views (``prior.view_key``; None: not followed) one step on, after
    ``joint`` in ``state``; None when no view is followed."""
    if views is None:
        return None
    return tuple(v if v is None else view_key(v, joint[i], engine.sees(state, joint, i))
                 for i, v in enumerate(views))


def _views(engine, role_index: int, history) -> tuple | None:
    """Each other role's view after ``history`` ((states, joint moves) of a sampled
    history), ``None`` for us and ``random``; None without a history."""
    if history is None:
        return None
    states, joints = history
    views = tuple(None if i == role_index or r == RANDOM else "" for i, r in enumerate(engine.roles))
    for state, joint in zip(states, joints):
        views = _advance(engine, views, state, joint)
    return views


def values(engine, distribution: list, role_index: int, legal: list, prior, step: int, *,
           deadline: float, seed: int, goal_span: float = 100.0, nodes: int = NODES,
           histories: dict | None = None) -> dict | None:
    """Our move among ``legal`` by its expected value against the predicted opponent over the
    belief's most likely live states (``distribution``: [(state, probability)]); ``step``:
    joint moves made so far.  Fields as the ensemble gives them (``q``: the pooled expected
    values, in the rules' goal points; ``simulations``: states valued), or ``None`` where the
    trees do not fit ``nodes`` states or the deadline.  ``histories``: a sampled history
    (states, joint moves) of each state, from which the other roles' views are followed, so
    that the prior predicts them on what they saw (``Belief.histories``); without it, by
    state."""
    live = [(s, p) for s, p in distribution[:STATES] if not engine.is_terminal(s)]
    if not live:
        return None
    walk = _Walk(engine, role_index, prior, deadline, nodes)
    try:
        found = walk.move_values([(s, p, _views(engine, role_index, (histories or {}).get(s)))
                                  for s, p in live], step, legal)
    except _TooLarge:
        return None
    mass = sum(p for _, p in live)
    q = np.array([found[m] / mass for m in legal])
    top = float(q.max())
    near = [i for i in range(len(legal)) if q[i] >= top - TIE * goal_span]
    best = near[0] if len(near) == 1 else random.Random(seed).choice(near)
    return {"move": legal[best], "moves": legal, "q": [float(x) for x in q],
            "visits": [0] * len(legal), "simulations": nodes - walk.left, "playouts": 0,
            "proven_descents": 0, "samples": len(live),
            "sample_mass": round(float(mass), 4), "method": "predicted"}
