"""Priors over the moves a history sampler cannot see: uniform, or learned from recorded
matches (predictive determinisation, Dockhorn 2020, chapter 5).

A prior answers ``probabilities(sm, state, role_index, legal, step)``: one probability per
legal move of a role in a complete (sampled) state, ``step`` joint moves into the match.  ``random`` moves uniformly by GDL-II's own
semantics, whatever the records say.  The predictive prior counts the moves each role made
in recorded matches of the same rules: the move alone and the move at that step of the
match, mixed with a uniform floor so that a move never seen keeps some probability (a
database that does not represent the opponent must not make the true history impossible).
Moves are keys and nothing else: no game knowledge.
"""
from __future__ import annotations

import json
from collections import Counter

from gdl.gdl2 import RANDOM
from gdl.terms import render_spaced

FLOOR = 0.05        # the uniform share of every predictive probability
STEP_WEIGHT = 2.0   # how much more the move at this step counts than the move at any step


class UniformPrior:
    kind = "uniform"

    def probabilities(self, sm, state, role_index: int, legal: list, step: int) -> list:
        return [1.0 / len(legal)] * len(legal)

    def describe(self) -> dict:
        return {"sampling": self.kind}


class MoveFrequencyPrior:
    """Move counts per role (by its index in the rules) from whole recorded matches."""
    kind = "predictive"

    def __init__(self, roles: list, source: str = "records"):
        self.roles = list(roles)
        self.source = source
        self.any_step = [Counter() for _ in roles]      # move text -> count
        self.at_step: list[Counter] = [Counter() for _ in roles]   # (step, move text) -> count
        self.steps = [Counter() for _ in roles]          # step -> moves counted there
        self.matches = 0

    def add_match(self, joint_moves: list) -> None:
        """One recorded match: its joint moves as lists of move texts in role order."""
        self.matches += 1
        for k, jm in enumerate(joint_moves):
            for i, text in enumerate(jm[:len(self.roles)]):
                text = " ".join(str(text).lower().split())
                self.any_step[i][text] += 1
                self.at_step[i][(k, text)] += 1
                self.steps[i][k] += 1

    def probabilities(self, sm, state, role_index: int, legal: list, step: int) -> list:
        n = len(legal)
        if self.roles[role_index] == RANDOM or self.matches == 0:
            return [1.0 / n] * n
        texts = [render_spaced(m).lower() for m in legal]
        any_counts = [self.any_step[role_index][t] for t in texts]
        at_counts = [self.at_step[role_index][(step, t)] for t in texts] if step is not None else [0] * n
        scores = []
        for a, b in zip(any_counts, at_counts):
            scores.append(a + STEP_WEIGHT * b)
        total = sum(scores)
        if total <= 0:
            return [1.0 / n] * n
        return [FLOOR / n + (1 - FLOOR) * s / total for s in scores]

    def describe(self) -> dict:
        return {"sampling": self.kind, "database": self.source, "matches": self.matches}


def from_records(paths, roles: list) -> MoveFrequencyPrior:
    """A predictive prior from Match JSON records (our runner's or the server's, with every
    role's moves: GDL-II records keep the whole match) of the same rules."""
    prior = MoveFrequencyPrior(roles, source=f"{len(paths)} records")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        moves = record.get("moves") or []
        if moves:
            prior.add_match(moves)
    return prior
