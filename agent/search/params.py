"""A persona as the two float arrays the numba search reads.

Scalars go in ``params`` (indices below); per-role values in ``role_params[k, role]``, with a
persona's ``[self, others]`` pairs spread over the roles of the game (spec 8.2, 8.32).
Plain arrays rather than a jitted class: one compiled search serves every persona, so
fitting many parameter sets never recompiles.
"""
from __future__ import annotations

import numpy as np

(P_RAVE, P_GRAVE, P_CHARGE_DEPTH, P_HORIZON, P_C, P_LIMIT, P_TREE_DISCOUNT,
 P_CHARGE_DISCOUNT, P_EPSILON, P_RANDOM_ERROR, P_NICE, P_MAST_TAU, P_SOLVER, P_ME,
 P_MIN_SHARE, P_TRANSPOSE, P_EVAL_DEPTH, P_DECISIVE, P_NST, P_MATERIAL) = range(20)
N_PARAMS = 20

MATERIAL_WEIGHT = 6.0  # simulations a material prior counts as (live play: material.py)
MIN_VISIT_SHARE = 0.1  # live play: visits a move needs, relative to the most visited, to compete on Q

RP_DEFAULT, RP_AGGR, RP_DEF, RP_LAMBDA = range(4)
N_ROLE_PARAMS = 4


def build(persona, n_roles: int, me: int, *, solver: bool = True, limit: int | None = None,
          thesis: bool = False, eval_depth: int = 0, material: bool = False):
    """(params, role_params) for ``persona`` deciding for role ``me``.

    ``thesis``: exactly the search of spec 2.8 (no solver, no visit-share filter in the final
    choice, a tree: no transpositions); otherwise the live-play deviations listed in README
    are on.  The solver is also
    off when the persona mixes in a utility (lambda > 0): a proven goal value says nothing
    about the features that persona also values.  ``eval_depth``: a playout that has not
    ended after that many plies is scored by the game's evaluation (``heuristic.py``; live
    play only, and not for a persona with a utility: the same reason as the solver).
    ``material``: the game has material (``material.py``), a prior on new moves in live play
    (not with a utility either)."""
    p = np.zeros(N_PARAMS, dtype=np.float64)
    p[P_RAVE] = persona.rave
    p[P_GRAVE] = persona.grave
    p[P_CHARGE_DEPTH] = persona.charge_depth
    p[P_HORIZON] = persona.horizon
    p[P_C] = persona.exploration_factor
    p[P_LIMIT] = persona.limit if limit is None else limit
    p[P_TREE_DISCOUNT] = persona.tree_discount
    p[P_CHARGE_DISCOUNT] = persona.charge_discount
    p[P_EPSILON] = persona.epsilon
    p[P_RANDOM_ERROR] = persona.random_error
    p[P_NICE] = persona.nice_threshold
    p[P_MAST_TAU] = persona.mast_tau
    p[P_SOLVER] = 1.0 if (solver and not thesis and persona.utility_lambda == 0) else 0.0
    p[P_ME] = me
    p[P_MIN_SHARE] = 0.0 if thesis else MIN_VISIT_SHARE
    # a state reached by two move orders is one node (both drivers, from nodes where at most
    # one role chooses): its statistics then count every path's simulations (issue #34)
    p[P_TRANSPOSE] = 0.0 if thesis else 1.0
    p[P_EVAL_DEPTH] = 0 if (thesis or persona.utility_lambda != 0) else eval_depth
    # a playout takes a move that wins at once when its mover has one, among the few moves
    # the rules let end the game, and replaces a move that lets the next mover win by one
    # that may stop it (decisive.py; both drivers on a compiled engine: issue #34)
    p[P_DECISIVE] = 0.0 if thesis else 1.0
    # a playout move's MAST value is averaged with its value as the reply to the move the
    # next role made in the ply before (NST's 2-grams, Tak, Winands and Bjornsson 2012),
    # once that pair has been seen often enough (tree.py, NST_MIN; issue #34)
    p[P_NST] = 0.0 if thesis else 1.0
    # a move first tried from a node starts at a value from the material it wins or loses,
    # worth that many simulations (material.py, tree.seed_prior; issue #34)
    p[P_MATERIAL] = MATERIAL_WEIGHT if (material and not thesis and persona.utility_lambda == 0) else 0.0
    rp = np.zeros((N_ROLE_PARAMS, n_roles), dtype=np.float64)
    for r in range(n_roles):
        k = 0 if r == me else 1
        rp[RP_DEFAULT, r] = persona.charge_defaults[k]
        rp[RP_AGGR, r] = persona.aggressiveness[k]
        rp[RP_DEF, r] = persona.defensiveness[k]
    rp[RP_LAMBDA, me] = persona.utility_lambda  # opponents stay goal-maximisers (spec 6.4)
    return p, rp
