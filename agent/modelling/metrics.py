"""Per-decision metrics of spec 5.1 and their bootstrap intervals over player-matches.

Every model is reduced to two vectors per decision: ``scores`` (what it ranks moves by:
Q for a persona, log-probability for a probability model) and ``logp`` (its probability of
each move).  From them, per decision:

    logp        log P(recorded move)                       (likelihood; exp(mean) reported)
    expected    P(recorded move)                           (expected AAR)
    argmax      1/t if the recorded move is among the t top-scored moves, else 0 (AAR of argmax)
    choose      P(CHOOSE picks the recorded move): RE/|A| + (1-RE)*[rec in C]/|C| with
                C = {a: Q* - Q(a) <= NT} for a persona, = expected for a probability model.
                The exact expectation of the AAR of CHOOSE, not one noisy sample of it.
    top1/2/5    the recorded move among the k top-scored moves (ties shared)
    regret      Q* - Q(recorded) for personas (NaN for probability models)
    cset        |C|: how many moves CHOOSE picks among (NaN for probability models). A
                persona with a wide C does not predict its argmax move: the likelihood
                treats every move of C alike, so a fit that widens C (NT > 0) can gain
                log-likelihood while its argmax AAR falls.
"""
from __future__ import annotations

import math

import numpy as np

from agent.stats import bootstrap_ci, paired_bootstrap_diff

METRICS = ("logp", "expected", "argmax", "choose", "top1", "top2", "top5", "regret", "cset")
TOPK = (1, 2, 5)


def _topk_share(score: np.ndarray, rec: int, k: int) -> float:
    better = int(np.sum(score > score[rec]))
    tied = int(np.sum(score == score[rec]))
    return float(min(max(k - better, 0), tied) / tied)


def decision_metrics(scores, logps, chosen, *, choice=None, is_q=True) -> dict:
    """Arrays of per-decision metrics.  ``choice``: the persona's RE and NT (for CHOOSE)."""
    n = len(chosen)
    out = {m: np.zeros(n) for m in METRICS}
    for i, (s, lp, c) in enumerate(zip(scores, logps, chosen)):
        s = np.asarray(s, float)
        out["logp"][i] = lp[c]
        out["expected"][i] = math.exp(lp[c])
        for k in TOPK:
            out[f"top{k}"][i] = _topk_share(s, c, k)
        out["argmax"][i] = out["top1"][i]
        if is_q:
            re, nt = (choice or {}).get("random_error", 0.0), (choice or {}).get("nice_threshold", 0.0)
            cset = s.max() - s <= nt
            out["choose"][i] = re / len(s) + (1 - re) * (cset[c] / cset.sum())
            out["regret"][i] = s.max() - s[c]
            out["cset"][i] = cset.sum()
        else:
            out["choose"][i] = out["expected"][i]
            out["regret"][i] = out["cset"][i] = math.nan
    return out


def random_metrics(n_moves) -> dict:
    """The uniform-random model's metrics per decision (spec 5.1's random baseline)."""
    n = np.asarray(n_moves, float)
    out = {"logp": -np.log(n), "expected": 1 / n, "argmax": 1 / n, "choose": 1 / n,
           "regret": np.full(len(n), math.nan), "cset": n}
    for k in TOPK:
        out[f"top{k}"] = np.minimum(k, n) / n
    return out


def groups_of(pms, values) -> list:
    """Per player-match (sum, count) of ``values`` (the unit the bootstrap resamples)."""
    acc: dict = {}
    for g, v in zip(pms, values):
        s = acc.setdefault(g, [0.0, 0])
        s[0] += v
        s[1] += 1
    return [tuple(acc[g]) for g in sorted(acc)]


def _pooled(groups) -> float:
    c = sum(g[1] for g in groups)
    return sum(g[0] for g in groups) / c if c else math.nan


def interval(pms, values, *, n_boot=1000, seed=0) -> tuple:
    """(mean per decision, lo, hi): the pooled mean with a 95 % bootstrap interval over
    player-matches (spec 4.5 item 8)."""
    vals = np.asarray(values, float)
    if np.all(np.isnan(vals)):
        return (math.nan, math.nan, math.nan)
    return bootstrap_ci(groups_of(pms, vals), _pooled, n_boot=n_boot, seed=seed)


def paired_interval(pms, a, b, *, n_boot=1000, seed=0) -> tuple:
    """(mean(a) - mean(b), lo, hi) on the same resampled player-matches."""
    acc: dict = {}
    for g, x, y in zip(pms, a, b):
        s = acc.setdefault(g, [0.0, 0.0, 0])
        s[0] += x
        s[1] += y
        s[2] += 1
    groups = [tuple(acc[g]) for g in sorted(acc)]

    def mean_a(gs):
        return sum(g[0] for g in gs) / sum(g[2] for g in gs)

    def mean_b(gs):
        return sum(g[1] for g in gs) / sum(g[2] for g in gs)

    return paired_bootstrap_diff(groups, mean_a, mean_b, n_boot=n_boot, seed=seed)
