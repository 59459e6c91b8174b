"""What both fitters share before they fit (the GA of spec 4.5 in ``experiment.py`` and the
fast fit of 4.6 in ``fast.py``): the decisions a fit works on (one game, a player-match
split, the test player-matches capped), seeded subsamples spread over player-matches, the
CRN seed of a decision, the file name of a player's label, and the error a fit that cannot
run raises.  It sits below both so that neither fitter imports the other.
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict

import numpy as np

from .splits import group_kfold, later_matches


class FitError(ValueError):
    """A fit that cannot run as asked (no decisions, several games...)."""


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("._") or "player"


def decision_seed(experiment_seed: int, match_id: str, role: int, ply: int, replicate: int = 0) -> int:
    """The CRN seed of a decision (spec 4.5 item 1), common to every persona and model:
    ``SHA-256("{experiment_seed}|{match_id}|{role}|{ply}|{replicate}")``, first 8 bytes."""
    h = hashlib.sha256(f"{experiment_seed}|{match_id}|{role}|{ply}|{replicate}".encode()).digest()
    return int.from_bytes(h[:8], "little")


def split(decisions, s):
    """(train, test) by ``s.split`` ("later" or "kfold"; ``s``: either fitter's settings)."""
    if s.split == "later":
        return later_matches(decisions, s.test_fraction)
    if s.split == "kfold":
        folds = group_kfold(decisions, s.folds, s.seed)
        if not 0 <= s.fold < len(folds):
            raise FitError(f"fold {s.fold} does not exist (0..{len(folds) - 1})")
        return folds[s.fold]
    raise FitError(f"unknown split {s.split!r} (later, kfold)")


def _cap_test(test, n: int, seed: int) -> list:
    """At most ``n`` test player-matches per label, drawn with a fixed seed."""
    if n <= 0:
        return test
    by: dict = {}
    for d in test:
        by.setdefault(d.label, set()).add(d.pm)
    keep = set()
    rng = np.random.default_rng(seed)
    for lab in sorted(by):
        pms = sorted(by[lab])
        keep.update(pms[i] for i in rng.permutation(len(pms))[:n])
    return [d for d in test if d.pm in keep]


def prepare(decisions, s) -> tuple:
    """(game, labels, train, test) of a fit, or a FitError saying why it cannot run."""
    if not decisions:
        raise FitError("no decisions selected (check --player, --role, --labels)")
    games = sorted({d.game for d in decisions})
    if len(games) > 1:
        raise FitError(f"the selected records hold {len(games)} different games; fit one at a time "
                       f"with --game NAME")
    train, test = split(decisions, s)
    test = _cap_test(test, s.test_pms, s.seed)
    if not train or not test:
        raise FitError("the split left no training or no test decisions (too few player-matches)")
    return games[0], sorted({d.label for d in decisions}), train, test


def stratified_subsample(decisions, n: int, seed) -> list:
    """Up to ``n`` decisions spread evenly over player-matches (round robin over shuffled
    player-matches, shuffled decisions within each); all of them when there are fewer."""
    if n <= 0 or len(decisions) <= n:
        return list(decisions)
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(repr(seed).encode()).digest()[:8], "little"))
    by = defaultdict(list)
    for d in decisions:
        by[d.pm].append(d)
    groups = [by[k] for k in sorted(by)]
    groups = [[g[i] for i in rng.permutation(len(g))] for g in (groups[j] for j in rng.permutation(len(groups)))]
    out, depth = [], 0
    while len(out) < n:
        for g in groups:
            if depth < len(g):
                out.append(g[depth])
                if len(out) == n:
                    break
        depth += 1
    return out
