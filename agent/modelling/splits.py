"""Splits by player-match, never by decision (spec 4.5 item 6).

A player-match (match id, role) is wholly on one side of every split.  ``later_matches``
holds out, per label, the last ``fraction`` of its player-matches by match start time (the
default test set: it asks whether a model of a player's past predicts its future);
``group_kfold`` deals each label's player-matches into k folds (leave-one-out below 10).
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np


def player_matches(decisions) -> dict:
    """{label: [(start, pm), ...]} sorted by start time, then match id."""
    out = defaultdict(set)
    for d in decisions:
        out[d.label].add((d.start, d.pm))
    return {lab: sorted(v) for lab, v in out.items()}


def later_matches(decisions, fraction: float = 0.3) -> tuple[list, list]:
    """(train, test) decisions: per label, the last ``fraction`` of its player-matches by
    start time are the test side (at least one, when the label has two or more)."""
    if not 0 < fraction < 1:
        raise ValueError(f"test fraction {fraction} must be between 0 and 1")
    test_pms = set()
    for lab, pms in player_matches(decisions).items():
        if len(pms) < 2:
            continue
        k = min(len(pms) - 1, max(1, math.ceil(fraction * len(pms))))
        test_pms.update(pm for _, pm in pms[-k:])
    train = [d for d in decisions if d.pm not in test_pms]
    test = [d for d in decisions if d.pm in test_pms]
    return train, test


def group_kfold(decisions, k: int = 5, seed: int = 0) -> list[tuple[list, list]]:
    """[(train, test)] for k folds dealt per label over shuffled player-matches; a label
    with fewer than 10 player-matches is split leave-one-out (as many folds as it has)."""
    rng = np.random.default_rng(seed)
    fold_of: dict = {}
    n_folds = k
    for lab, pms in sorted(player_matches(decisions).items()):
        ids = [pm for _, pm in pms]
        order = rng.permutation(len(ids))
        kk = len(ids) if len(ids) < 10 else k
        n_folds = max(n_folds, kk)
        for j, i in enumerate(order):
            fold_of[ids[i]] = j % kk
    folds = []
    for f in range(n_folds):
        test = [d for d in decisions if fold_of[d.pm] == f]
        if test:
            folds.append(([d for d in decisions if fold_of[d.pm] != f], test))
    return folds
