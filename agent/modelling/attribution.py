"""Attribution: which fitted persona is an unknown player most like?

A query is a set of player-matches of one player; each persona's score is the total
log-likelihood (its fitted choice parameters) of the query's decisions; personas are
ranked by score.  Accuracy is measured on held-out player-matches: each label's test
player-matches, in time order, are cut into disjoint queries of k (1, 3, 10), so no
player-match counts twice and the Wilson interval is honest.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from agent.stats import proportion_ci

QUERY_SIZES = (1, 3, 10)


def rank(loglik_by_persona: dict) -> list:
    """Persona names, most likely first (ties by name)."""
    return sorted(loglik_by_persona, key=lambda p: (-loglik_by_persona[p], p))


def stays_first(logp_by_name: dict, n_boot: int = 1000, seed: int = 0) -> float:
    """How sure the ranking's first place is: the share of bootstrap resamples of the
    decisions (the same resample for every name: the scores are paired) in which the name
    first on all decisions is still first.  ``logp_by_name``: {name: per-decision log P}."""
    names = list(logp_by_name)
    if len(names) < 2:
        return 1.0
    lp = np.array([np.asarray(logp_by_name[n], float) for n in names])      # names x decisions
    best = names.index(rank({n: float(lp[i].sum()) for i, n in enumerate(names)})[0])
    if lp.shape[1] == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, lp.shape[1], size=(n_boot, lp.shape[1]))
    sums = lp[:, idx].sum(axis=2)                                             # names x resamples
    return float(np.mean(sums.argmax(axis=0) == best))


def pm_logliks(decisions, logp_by_persona: dict) -> dict:
    """{pm: {persona: sum of log P over the pm's decisions}}; ``logp_by_persona[name]`` is
    aligned with ``decisions``."""
    out: dict = defaultdict(lambda: defaultdict(float))
    for name, lps in logp_by_persona.items():
        for d, lp in zip(decisions, lps):
            out[d.pm][name] += float(lp)
    return out


def accuracy(decisions, logp_by_persona: dict, truth: dict, sizes=QUERY_SIZES) -> list:
    """[{k, queries, correct, accuracy, lo, hi, mean_rank}] for each query size.
    ``truth``: {label: persona name that should win}."""
    per_pm = pm_logliks(decisions, logp_by_persona)
    by_label = defaultdict(list)
    for d in sorted(decisions, key=lambda d: (d.start, d.pm)):
        if d.label in truth and d.pm not in by_label[d.label]:
            by_label[d.label].append(d.pm)
    rows = []
    for k in sizes:
        n = correct = 0
        ranks = []
        for label, pms in sorted(by_label.items()):
            for i in range(0, len(pms) - k + 1, k):
                total = defaultdict(float)
                for pm in pms[i:i + k]:
                    for name, v in per_pm[pm].items():
                        total[name] += v
                order = rank(total)
                n += 1
                correct += order[0] == truth[label]
                ranks.append(order.index(truth[label]) + 1)
        p, lo, hi = proportion_ci(correct, n) if n else (float("nan"),) * 3
        rows.append({"k": k, "queries": n, "correct": correct, "accuracy": p, "lo": lo, "hi": hi,
                     "mean_rank": sum(ranks) / len(ranks) if ranks else float("nan"),
                     "chance": 1 / max(1, len(logp_by_persona))})
    return rows
