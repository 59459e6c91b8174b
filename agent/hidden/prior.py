"""Priors over the moves a history sampler cannot see: uniform, or learned from recorded
matches (predictive determinisation, Dockhorn 2020, chapter 5).

A prior answers ``probabilities(sm, state, role_index, legal, step)``: one probability per
legal move of a role in a complete (sampled) state, ``step`` joint moves into the match.
``random`` moves uniformly by GDL-II's own semantics, whatever the records say.

The predictive prior counts the moves each role made in recorded matches of the same rules
(the full records a referee keeps) at three levels: the move alone, the move at that step
of the match, and the move in exactly that state (a state holds the role's private facts,
its card or its placement, so a habit that depends on them is learned there).  A level's
share of a move is its count over the level's total in that context; the levels are added
with growing weights (the more specific, the more it counts when it has data) and mixed
with a uniform floor, so that a move never seen keeps some probability: a database that
does not represent the opponent must not make the true history impossible.  Moves and
states are keys and nothing else: no game knowledge.
"""
from __future__ import annotations

import json
from collections import Counter

from gdl.gdl2 import RANDOM
from gdl.kif import GdlError, parse_term, read_first
from gdl.terms import render_spaced

from agent.modelling.baselines import state_key

FLOOR = 0.1                     # the uniform share of every predictive probability
WEIGHTS = (1.0, 2.0, 4.0)       # move alone, move at this step, move in this state


class UniformPrior:
    kind = "uniform"

    def probabilities(self, sm, state, role_index: int, legal: list, step: int) -> list:
        return [1.0 / len(legal)] * len(legal)

    def describe(self) -> dict:
        return {"sampling": self.kind}


def _move_key(m) -> str:
    """A move as a key: its text in ggp-base's spacing, lower case (records keep texts)."""
    text = m if isinstance(m, str) else render_spaced(m)
    return " ".join(text.lower().split())


class MoveFrequencyPrior:
    """Move counts per role (by its index in the rules) from whole recorded matches."""
    kind = "predictive"

    def __init__(self, roles: list, source: str = "records"):
        self.roles = list(roles)
        self.source = source
        self.counts = [Counter() for _ in roles]    # (level, context, move) -> count
        self.totals = [Counter() for _ in roles]    # (level, context) -> count
        self.matches = 0

    def _contexts(self, step: int, state) -> tuple:
        return ("", str(step), state_key(state) if state is not None else None)

    def add_match(self, joint_moves: list, states: list | None = None) -> None:
        """One recorded match: its joint moves (terms or texts, role order) and, when the
        record has them, the states they were made in."""
        self.matches += 1
        for k, jm in enumerate(joint_moves):
            ctx = self._contexts(k, states[k] if states is not None and k < len(states) else None)
            for i, m in enumerate(list(jm)[:len(self.roles)]):
                key = _move_key(m)
                for level, c in enumerate(ctx):
                    if c is None:
                        continue
                    self.counts[i][(level, c, key)] += 1
                    self.totals[i][(level, c)] += 1

    def probabilities(self, sm, state, role_index: int, legal: list, step: int) -> list:
        n = len(legal)
        if self.roles[role_index] == RANDOM or self.matches == 0:
            return [1.0 / n] * n
        keys = [_move_key(m) for m in legal]
        scores = [0.0] * n
        for level, c in enumerate(self._contexts(step, state)):
            total = self.totals[role_index][(level, c)]
            if total:
                for j, key in enumerate(keys):
                    scores[j] += WEIGHTS[level] * self.counts[role_index][(level, c, key)] / total
        mass = sum(scores)
        if mass <= 0:
            return [1.0 / n] * n
        return [FLOOR / n + (1 - FLOOR) * s / mass for s in scores]

    def describe(self) -> dict:
        return {"sampling": self.kind, "database": self.source, "matches": self.matches}


def from_records(paths, roles: list) -> MoveFrequencyPrior:
    """A predictive prior from Match JSON records of the same rules with every role's moves
    (a referee's: our runner's GDL-II records keep the whole match); the states, where
    recorded, are read as ggp-base writes them."""
    prior = MoveFrequencyPrior(roles, source=f"{len(paths)} records")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        moves = record.get("moves") or []
        states = None
        if record.get("states"):
            try:
                states = [_state(s) for s in record["states"]]
            except (ValueError, GdlError):
                states = None
        if moves:
            prior.add_match(moves, states)
    return prior


def _state(text: str) -> frozenset:
    """A state as ggp-base's records write it (``( ( cell 1 1 b ) ( control x ) )``)."""
    node = read_first(text)
    if node is None or node.is_atom:
        raise ValueError(f"a state must be a list: {text[:80]!r}")
    return frozenset(parse_term(repr(n)) for n in node.items)
