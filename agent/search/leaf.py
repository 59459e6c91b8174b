"""The leaf evaluator: what one simulation backs up for each role (spec 2.4-2.6, 6.4).

One implementation, called by both drivers (``driver_sm`` from Python, ``driver_compiled``
from its numba loop), kept apart from the tree search as OpenSpiel keeps its evaluators
apart from its MCTS.  A driver only reads its engine: the goal atoms that hold, whether the
end state is terminal, how long the simulation was, legal-move counts and fact counts.
Everything those numbers mean is decided here:

  the goal reading     ``goal_scores``: the value a role scores, the largest provable goal,
                       0 when none (as ``statemachine.goal_vector``); ``goal_feature``: the
                       spec 6.4 feature, the value when the rules give exactly one, else 50
  the utility          ``raw_features`` (spec 6.4 table) and ``utility`` (the weighted,
                       calibrated mix rescaled to 0..100)
  the leaf value       ``evaluate``: goal (terminal or proven) or ``charge_defaults`` at a
                       cut-off, the lambda-mix with the utility, ``charge_discount`` once for
                       a charged simulation, then the personality bias (spec 2.6)

Goals are passed around as a ``(3, n_roles)`` float array (``G_COUNT``: how many goal facts
hold, ``G_LO``/``G_HI``: their smallest and largest value), which is all either reading needs.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .params import P_CHARGE_DISCOUNT, P_ME, RP_AGGR, RP_DEF, RP_DEFAULT, RP_LAMBDA
from .rng import BIAS, uniform

G_COUNT, G_LO, G_HI = range(3)

FIXED = ("goal", "win", "loss", "draw", "length", "mobility", "opp_mobility", "own_facts",
         "opp_facts")
F_GOAL, F_WIN, F_LOSS, F_DRAW, F_LENGTH, F_MOB, F_OPP_MOB, F_OWN, F_OPP = range(len(FIXED))
N_FIXED = len(FIXED)
NO_GOAL_FEATURE = 50.0      # spec 8.38: no single goal value (none, or several) reads as 50


# --------------------------------------------------------------------------- goals
def read_goals(goal_values) -> np.ndarray:
    """The goal array of a state machine's ``goal_values`` (per role, the provable values)."""
    gr = np.zeros((3, len(goal_values)))
    for r, vs in enumerate(goal_values):
        if vs:
            gr[G_COUNT, r], gr[G_LO, r], gr[G_HI, r] = len(vs), min(vs), max(vs)
    return gr


@njit(cache=True)
def goal_scores(gr, out):
    """The value each role scores: the largest provable goal, 0 when none."""
    for r in range(out.shape[0]):
        out[r] = gr[G_HI, r] if gr[G_COUNT, r] > 0 else 0.0


@njit(cache=True)
def goal_feature(gr, r):
    """The spec 6.4 ``goal`` feature: the goal when the rules give exactly one value, else 50."""
    if gr[G_COUNT, r] > 0 and gr[G_LO, r] == gr[G_HI, r]:
        return gr[G_HI, r]
    return NO_GOAL_FEATURE


# --------------------------------------------------------------------------- features
@njit(cache=True)
def carry_mobility(mobility, counts):
    """Carried-forward mobility (spec 6.4): a role's move count where it had a choice."""
    for q in range(mobility.shape[0]):
        if counts[q] >= 2:
            mobility[q] = counts[q]


@njit(cache=True)
def raw_features(gr, terminal, length, mobility, role_facts, rel_counts, me, raw):
    """Raw spec 6.4 features of an end state for role ``me`` into ``raw``: ``role_facts[q]``
    = true facts mentioning role q, ``rel_counts[k]`` = true facts of relation k,
    ``mobility`` = carried-forward move counts, ``length`` = plies from the decision root."""
    R = mobility.shape[0]
    raw[:] = 0.0
    g_me = goal_feature(gr, me)
    raw[F_GOAL] = g_me
    if terminal:
        if R == 1:
            win = g_me >= 100.0
            loss = g_me <= 0.0
        else:
            best = -1.0
            for q in range(R):
                if q != me:
                    best = max(best, goal_feature(gr, q))
            win = g_me > best
            loss = g_me < best
        raw[F_WIN] = 1.0 if win else 0.0
        raw[F_LOSS] = 1.0 if loss else 0.0
        raw[F_DRAW] = 1.0 if (not win and not loss) else 0.0
    raw[F_LENGTH] = length
    raw[F_MOB] = mobility[me]
    raw[F_OWN] = role_facts[me]
    if R > 1:
        om = 0.0
        of = 0.0
        for q in range(R):
            if q != me:
                om += mobility[q]
                of += role_facts[q]
        raw[F_OPP_MOB] = om / (R - 1)
        raw[F_OPP] = of / (R - 1)
    for k in range(rel_counts.shape[0]):
        raw[N_FIXED + k] = rel_counts[k]


@njit(cache=True)
def utility(raw, lo, hi, w):
    """u in 0..100: the weighted sum of normalised features rescaled by its own range."""
    U = 0.0
    ulo = 0.0
    uhi = 0.0
    for k in range(raw.shape[0]):
        if w[k] == 0.0:
            continue
        d = hi[k] - lo[k]
        phi = 0.5 if d == 0.0 else min(max((raw[k] - lo[k]) / d, 0.0), 1.0)
        U += w[k] * phi
        ulo += min(0.0, w[k])
        uhi += max(0.0, w[k])
    if uhi == ulo:
        return 50.0
    return 100.0 * (U - ulo) / (uhi - ulo)


# --------------------------------------------------------------------------- the leaf value
@njit(cache=True)
def uses_utility(params, rp):
    """Whether ``evaluate`` reads the raw features (the persona mixes in a utility)."""
    return rp[RP_LAMBDA, int(params[P_ME])] > 0.0


@njit(cache=True)
def bias(v, aggr, defe, coin):
    """Personality bias (spec 2.6): above 85 none; 60-85 aggressive; below 35 defensive;
    in between the coin picks; the result stays on the 0..100 scale."""
    if v >= 85.0:
        return v
    if v > 60.0:
        f = aggr
    elif v < 35.0:
        f = defe
    else:
        f = aggr if coin < 0.5 else defe
    return min(max(v * f, 0.0), 100.0)


@njit(cache=True, inline="always")
def evaluate(params, rp, scores, exact, charged, raw, lo, hi, w, rng, out):
    """Each role's backed-up value of a simulation's end into ``out``: ``scores`` (goal
    values) if ``exact`` (terminal or proven) else the charge default; the deciding role mixes
    in its utility of ``raw`` (when ``uses_utility``); charge discount once if ``charged``;
    then the bias."""
    me = int(params[P_ME])
    u_me = utility(raw, lo, hi, w) if rp[RP_LAMBDA, me] > 0.0 else 0.0
    for r in range(out.shape[0]):
        g = scores[r] if exact else rp[RP_DEFAULT, r]
        lam = rp[RP_LAMBDA, r]
        v = g if lam == 0.0 else (1.0 - lam) * g + lam * u_me
        if charged:
            v *= params[P_CHARGE_DISCOUNT]
        coin = uniform(rng, BIAS)  # drawn for every role and simulation: streams stay aligned
        out[r] = bias(v, rp[RP_AGGR, r], rp[RP_DEF, r], coin)
