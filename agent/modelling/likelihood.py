"""The behaviour likelihood of spec 4.5 item 4, its choice-parameter grid, and thesis fitness.

    P(a|s) = RE/|A| + (1-RE) * exp(k*Qh(a)) / sum_b exp(k*Qh(b)),
    Qh(a) = Q* if Q* - Q(a) <= NT else Q(a)

RE (random_error), NT (nice_threshold) and k (kappa) never change the search's Q-values, so
they are fitted after the search by a grid over cached Q (the three grids of the spec).
Decisions have different numbers of legal moves: Q-values are padded into one matrix with
a mask, and everything below is vectorised over decisions.
"""
from __future__ import annotations

import math

import numpy as np

RE_GRID = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
NT_GRID = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 35.0, 50.0, 100.0)
KAPPA_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
THESIS_KAPPA = 0.1


def pad(qs) -> tuple[np.ndarray, np.ndarray]:
    """Q-value vectors of different lengths -> (Q matrix, mask of real moves)."""
    m = max((len(q) for q in qs), default=1)
    Q = np.zeros((len(qs), m))
    mask = np.zeros((len(qs), m), bool)
    for i, q in enumerate(qs):
        Q[i, :len(q)] = q
        mask[i, :len(q)] = True
    return Q, mask


def log_boltzmann(Q, mask, nt: float, kappa: float) -> np.ndarray:
    """log of the Boltzmann part over Qh, per decision and move (-inf off the mask)."""
    Qm = np.where(mask, Q, -np.inf)
    best = Qm.max(axis=1, keepdims=True)
    qh = np.where(best - Q <= nt, best, Q)
    z = np.where(mask, kappa * (qh - best), -np.inf)
    return z - np.logaddexp.reduce(z, axis=1, keepdims=True)


def log_probs_all(Q, mask, re: float, nt: float, kappa: float) -> np.ndarray:
    """log P(a|s) for every move (N x M; -inf off the mask)."""
    n = mask.sum(axis=1, keepdims=True)
    lb = log_boltzmann(Q, mask, nt, kappa)
    with np.errstate(divide="ignore"):
        out = np.logaddexp(math.log(re) - np.log(n) if re > 0 else -np.inf,
                           (math.log1p(-re) if re < 1 else -np.inf) + lb)
    return np.where(mask, out, -np.inf)


def log_probs(Q, mask, chosen, re: float, nt: float, kappa: float) -> np.ndarray:
    """log P(recorded move | s) per decision."""
    lp = log_probs_all(Q, mask, re, nt, kappa)
    return lp[np.arange(len(chosen)), np.asarray(chosen)]


def fit_choice(Q, mask, chosen) -> dict:
    """The (RE, NT, kappa) of the grids maximising the mean log-likelihood per decision
    (pooled over decisions, spec 4.5 item 4).  Ties: the first in grid order."""
    chosen = np.asarray(chosen)
    rows = np.arange(len(chosen))
    n = mask.sum(axis=1)
    best = {"ll": -math.inf}
    for nt in NT_GRID:
        for kappa in KAPPA_GRID:
            lb = log_boltzmann(Q, mask, nt, kappa)[rows, chosen]
            for re in RE_GRID:
                with np.errstate(divide="ignore"):
                    lp = np.logaddexp(math.log(re) - np.log(n) if re > 0 else -np.inf,
                                      (math.log1p(-re) if re < 1 else -np.inf) + lb)
                ll = float(np.mean(lp))
                if ll > best["ll"]:
                    best = {"ll": ll, "random_error": re, "nice_threshold": nt, "kappa": kappa}
    return best


def thesis_log_fitness(Q, mask, chosen, groups) -> float:
    """log F of eq. 3.9: the mean over player-matches of each one's mean log P, with the
    plain Boltzmann model at kappa = 0.1 (RE and NT inert, as in the thesis)."""
    lp = log_boltzmann(Q, mask, -math.inf, THESIS_KAPPA)   # no NT: Qh = Q
    lp = lp[np.arange(len(chosen)), np.asarray(chosen)]
    by = {}
    for g, x in zip(groups, lp):
        by.setdefault(g, []).append(x)
    return float(np.mean([np.mean(v) for v in by.values()]))
