"""Intervals and tests shared by every report (match results, fitting, playtesting).

One place for the statistics, so that "a 95 % interval" means the same thing on every page:
Student's t for means, Wilson for proportions, a percentile bootstrap over *groups* (a
player-match, a run) for anything computed from decisions that are not independent.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats as _st


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t interval; with fewer than two values the interval is the mean."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    m = float(x.mean())
    if x.size < 2:
        return (m, m, m)
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    if se == 0.0:
        return (m, m, m)
    h = float(_st.t.ppf(0.5 + level / 2, x.size - 1)) * se
    return (m, m - h, m + h)


def proportion_ci(successes: float, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """Share with Wilson's score interval (sound at 0 and 1, unlike the normal interval)."""
    if n <= 0:
        return (math.nan, math.nan, math.nan)
    p = successes / n
    z = float(_st.norm.ppf(0.5 + level / 2))
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    # Exact at the ends (rounding would give 0.9999999999999999 for n out of n).
    lo = 0.0 if successes <= 0 else max(0.0, centre - h)
    hi = 1.0 if successes >= n else min(1.0, centre + h)
    return (p, lo, hi)


def _boot_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def bootstrap_ci(groups: Sequence, statistic: Callable[[list], float], *, n_boot: int = 2000,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """Percentile bootstrap resampling whole groups (e.g. player-matches) with replacement.

    `statistic` maps a list of groups to a number; the point value is the statistic of the
    groups as given.
    """
    groups = list(groups)
    if not groups:
        return (math.nan, math.nan, math.nan)
    value = float(statistic(groups))
    if len(groups) < 2:
        return (value, value, value)
    reps = np.array([statistic([groups[i] for i in idx])
                     for idx in _boot_indices(len(groups), n_boot, seed)], dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return (value, math.nan, math.nan)
    lo, hi = np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2])
    return (value, float(lo), float(hi))


def paired_bootstrap_diff(groups: Sequence, stat_a: Callable[[list], float],
                          stat_b: Callable[[list], float], *, n_boot: int = 2000, seed: int = 0,
                          level: float = 0.95) -> tuple[float, float, float]:
    """stat_a − stat_b on the same resampled groups each time (a paired comparison)."""
    return bootstrap_ci(groups, lambda g: stat_a(g) - stat_b(g), n_boot=n_boot, seed=seed,
                        level=level)


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Welch's unequal-variance t-test: (t, two-sided p). NaN when either side is too small
    or both are constant and equal."""
    a = np.asarray(list(a), dtype=float)
    b = np.asarray(list(b), dtype=float)
    if a.size < 2 or b.size < 2:
        return (math.nan, math.nan)
    if a.std() == 0 and b.std() == 0:
        if a.mean() == b.mean():
            return (0.0, 1.0)
        return (math.copysign(math.inf, a.mean() - b.mean()), 0.0)
    r = _st.ttest_ind(a, b, equal_var=False)
    return (float(r.statistic), float(r.pvalue))


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Pearson's r with its two-sided p; NaN when there are fewer than three pairs or a
    side is constant."""
    x = np.asarray(list(x), dtype=float)
    y = np.asarray(list(y), dtype=float)
    if x.size != y.size:
        raise ValueError(f"pearson: {x.size} x values but {y.size} y values")
    if x.size < 3 or x.std() == 0 or y.std() == 0:
        return (math.nan, math.nan)
    r = _st.pearsonr(x, y)
    return (float(r.statistic), float(r.pvalue))
