"""Playtest metrics from run records (plain dicts from ``play.play_run``): rates, means with
95 % intervals, Welch tests, the agreement matrix, variant properties against metrics.

Pure functions over data, so each can be checked by hand on small inputs.
"""
from __future__ import annotations

import itertools
import math

from agent.stats import mean_ci, pearson, proportion_ci, welch

OUTCOMES = ("win", "draw", "loss")
FEATURES = ("goal", "mobility", "opp_mobility", "own_facts", "opp_facts")


def metric_values(runs: list) -> dict:
    """Per-run values of every numeric metric: name -> list (one per run)."""
    out = {"win": [float(r["outcome"] == "win") for r in runs],
           "draw": [float(r["outcome"] == "draw") for r in runs],
           "loss": [float(r["outcome"] == "loss") for r in runs],
           "length": [float(r["length"]) for r in runs],
           "final goal": [float(r["goals"][r["role"]]) for r in runs]}
    for f in FEATURES:
        out[f"end {f}"] = [float(r["features"][f]) for r in runs]
    us = [r["utility"] for r in runs]
    if us and all(isinstance(u, float) and not math.isnan(u) for u in us):
        out["end utility"] = us
    return out


def summary(runs: list) -> dict:
    """Metric -> (mean, lo, hi): Wilson intervals for outcome rates, Student t for the rest."""
    vals = metric_values(runs)
    n = len(runs)
    out = {}
    for k, v in vals.items():
        if k in OUTCOMES:
            out[k] = proportion_ci(sum(v), n)
        else:
            out[k] = mean_ci(v)
    out["runs"] = n
    return out


def welch_table(groups: dict, metrics=None) -> list:
    """Welch t-tests between every pair of groups (label -> runs), per metric:
    rows (metric, a, b, mean a, mean b, t, p)."""
    vals = {g: metric_values(rs) for g, rs in groups.items()}
    rows = []
    names = metrics or (list(next(iter(vals.values())).keys()) if vals else [])
    for a, b in itertools.combinations(list(groups), 2):
        for m in names:
            if m not in vals[a] or m not in vals[b]:
                continue
            xa, xb = vals[a][m], vals[b][m]
            t, p = welch(xa, xb)
            rows.append({"metric": m, "a": a, "b": b,
                         "mean_a": sum(xa) / len(xa) if xa else math.nan,
                         "mean_b": sum(xb) / len(xb) if xb else math.nan, "t": t, "p": p})
    return rows


def agreement_matrix(hits: dict, owners: list, alike: dict | None = None) -> dict:
    """``hits[(A, B)]`` = list of per-run lists of 1/0 (B's choice equals A's on A's states).
    Returns the matrix of AARs (row = trace owner A, column = B), the within (A = B) and
    between (A != B) per-run AARs, and Welch's test of within against between.
    ``alike[(A, B)]`` (optional) = 1/0 per A-state, B's choice equals A's own judged choice:
    returned as the ``alike`` matrix (the share of A's states where A and B choose alike)."""
    matrix = [[math.nan] * len(owners) for _ in owners]
    within, between = [], []
    for i, a in enumerate(owners):
        for j, b in enumerate(owners):
            per_run = [sum(x) / len(x) for x in hits.get((a, b), []) if x]
            flat = [v for x in hits.get((a, b), []) for v in x]
            if flat:
                matrix[i][j] = sum(flat) / len(flat)
            (within if i == j else between).extend(per_run)
    t, p = welch(within, between)
    diag = [matrix[i][i] for i in range(len(owners))]
    not_separated = []
    for i, j in itertools.combinations(range(len(owners)), 2):
        # A pair does not separate when either persona agrees with the other as much as
        # with itself on its own states.
        if not (matrix[i][i] > matrix[i][j] and matrix[j][j] > matrix[j][i]):
            not_separated.append((owners[i], owners[j]))
    same = [[math.nan] * len(owners) for _ in owners]
    for i, a in enumerate(owners):
        for j, b in enumerate(owners):
            xs = (alike or {}).get((a, b), [])
            if xs:
                same[i][j] = sum(xs) / len(xs)
    return {"owners": owners, "matrix": matrix, "alike": same, "within": mean_ci(within),
            "between": mean_ci(between), "t": t, "p": p, "diagonal": diag,
            "diagonal_dominant": all(matrix[i][i] > matrix[i][j] for i in range(len(owners))
                                     for j in range(len(owners)) if i != j),
            "not_separated": not_separated,
            # personas whose own choices on their states beat every other persona's
            "self_dominant": [a for i, a in enumerate(owners)
                              if all(matrix[i][i] > matrix[i][j] for j in range(len(owners)) if j != i)]}


def correlations(properties: dict, metrics: dict) -> list:
    """Pearson r between each variant property and each persona metric across variants.
    ``properties[variant][prop]``, ``metrics[persona][variant][metric]`` (means)."""
    variants = list(properties)
    rows = []
    props = sorted({k for v in properties.values() for k in v})
    for persona, by_variant in metrics.items():
        names = sorted({m for v in by_variant.values() for m in v})
        for prop in props:
            for m in names:
                xs = [properties[v][prop] for v in variants if v in by_variant]
                ys = [by_variant[v][m] for v in variants if v in by_variant]
                r, p = pearson(xs, ys)
                rows.append({"persona": persona, "property": prop, "metric": m,
                             "n": len(xs), "r": r, "p": p})
    return rows


def fact_shares(runs: list) -> dict:
    """Fact -> share of runs in which it was true at some point."""
    counts: dict = {}
    for r in runs:
        for f in r["facts"]:
            counts[f] = counts.get(f, 0) + 1
    return {f: c / len(runs) for f, c in counts.items()} if runs else {}


def inert_weights(weights: dict, lo, hi) -> list:
    """The persona's weighted features that the search can never see change in this game:
    calibration (spec 6.4) gave them one value (``hi <= lo``), so phi is always 0.5.
    ``lo``/``hi``: the role's calibrated bounds over ``names`` (FIXED, then rel:<p>)."""
    from agent.search.features import FIXED   # the search's module loads numba (about 0.6 s): the report needs only these names
    out = []
    for name, w in weights.items():
        if not w:
            continue
        k = FIXED.index(name) if name in FIXED else None
        if k is not None and hi[k] <= lo[k]:
            out.append(name)
    return sorted(out)


def same_in_game(personas: dict, inert: dict) -> list:
    """Pairs of personas whose utilities differ only in inert weights (same lambda and the
    same weights on every feature that can change): the same player in this game, whatever
    their names say.  ``personas``: label -> (lambda, weights); ``inert``: label -> list."""
    def active(label):
        lam, w = personas[label]
        return lam, tuple(sorted((k, v) for k, v in w.items() if v and k not in inert[label]))
    labels = list(personas)
    return [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
            if personas[a] != personas[b] and active(a) == active(b)]

