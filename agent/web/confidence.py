"""How sure the persona's advice is: which of its moves the search can tell apart.

A move's value Q is a mean of ``n`` simulation results within the game's goal range
[lo, hi].  The search keeps no variance per move, so the interval uses the largest variance a
value in [lo, hi] with that mean can have (Bhatia-Davis: (Q - lo)(hi - Q), exact for win/loss
games), with Agresti-Coull's two pseudo-results at each end so that 10 wins out of 10 is not
taken as certain:

    p = (Q - lo) / (hi - lo),  p' = (n p + 2) / (n + 4),  half-width = z (hi - lo) sqrt(p'(1 - p') / (n + 4))

with z = 1.96 (95 %), centred on lo + (hi - lo) p'.  A move is *told apart* from the
persona's choice when these centres differ by more than z times the standard error of the
difference; a move the search proved (its exact value known) has no error.  The moves not told apart are one group, shown without
ranking and said in words ("too few simulations to tell these apart"); moves never tried are
counted, not ranked.

Limits: Q of a tree search is not a mean of independent results (later simulations follow
the better moves), so the interval is a guide, not a guarantee; the bound is wide for games
with graded goals whose results cluster in the middle.
"""
from __future__ import annotations

import math

Z = 1.96
PSEUDO = 4          # pseudo-results (half at each end of the goal range)
MAX_NAMED = 6       # moves named in the sentence; the rest counted


def goal_bounds(description) -> tuple[float, float]:
    """The smallest and largest goal values the rules write in goal heads; (0, 100) when a
    goal value is computed (a variable) or fewer than two values are written."""
    values = []
    for r in description.rules:
        h = r.head
        if isinstance(h, tuple) and len(h) == 3 and h[0] == "goal":
            v = h[2]
            if not (isinstance(v, str) and v.isdigit()):
                return 0.0, 100.0
            values.append(int(v))
    if len(set(values)) < 2:
        return 0.0, 100.0
    return float(min(values)), float(max(values))


def _adjusted(q: float, n: int, lo: float, hi: float) -> tuple[float, float]:
    """Agresti-Coull's centre and 95 % half-width of a value ``q`` from ``n`` results."""
    span = max(hi - lo, 1e-9)
    p = min(1.0, max(0.0, (q - lo) / span))
    p2 = (n * p + PSEUDO / 2) / (n + PSEUDO)
    return lo + span * p2, Z * span * math.sqrt(p2 * (1 - p2) / (n + PSEUDO))


def half_width(q: float, n: int, lo: float, hi: float) -> float | None:
    """The 95 % half-width of a value ``q`` from ``n`` simulations (None: never tried)."""
    return None if n <= 0 else _adjusted(q, n, lo, hi)[1]


def judge(q, visits, best: int | None, lo: float, hi: float, proven=None) -> tuple[list, set]:
    """``(half_widths, tied)``: each move's half-width (0 when proven, None when never
    tried) and the moves not told apart from ``best`` (``best`` included; empty when there
    is no best).  The comparison is between the intervals' centres, each value pulled
    towards the middle of the goal range by the pseudo-results: a move tried once at 89 is
    not "better" than one at 29 over 963 simulations, it is unknown."""
    n_moves = len(q)
    pm, centre = [], []
    for i in range(n_moves):
        exact = proven is not None and i < len(proven) and proven[i] is not None and not math.isnan(float(proven[i]))
        if visits[i] <= 0:
            pm.append(None)
            centre.append(None)
        elif exact:
            pm.append(0.0)
            centre.append(float(q[i]))
        else:
            c, h = _adjusted(float(q[i]), int(visits[i]), lo, hi)
            pm.append(h)
            centre.append(c)
    if best is None or pm[best] is None:
        return pm, set()
    tied = {best}
    for i in range(n_moves):
        if i == best or pm[i] is None:
            continue
        if abs(centre[best] - centre[i]) <= math.hypot(pm[best], pm[i]):
            tied.add(i)
    return pm, tied


def verdict(tied_labels: list, untried: int, legal: int, visits: tuple = ()) -> str | None:
    """The sentence the page shows above the moves, or None when the choice stands out;
    ``visits``: the fewest and most simulations of the tied moves."""
    parts = []
    if len(tied_labels) > 1:
        named = ", ".join(tied_labels[:MAX_NAMED])
        more = f" and {len(tied_labels) - MAX_NAMED} more" if len(tied_labels) > MAX_NAMED else ""
        everything = len(tied_labels) + untried >= legal
        lo, hi = (min(visits), max(visits)) if visits else (0, 0)
        counts = f"{lo}" if lo == hi else f"{lo} to {hi}"
        parts.append(("Too few simulations to tell these moves apart" if everything else
                      "Too few simulations to tell these apart") +
                     f": {named}{more} (their values are within noise of each other: 95 % intervals "
                     f"from {counts} simulation{'s' if hi != 1 else ''} each), so they are not ranked.")
    if untried:
        parts.append(f"{untried} move{'s were' if untried > 1 else ' was'} not tried at all.")
    return " ".join(parts) or None


def rows_in_order(rows: list, tied: set, order: list) -> list:
    """The rows of the moves (``order`` holds their indices), the tied group first in label
    order (not ranked), then the others as ``order`` has them."""
    first = sorted((i for i in order if i in tied), key=lambda i: rows[i]["label"])
    return [rows[i] for i in first] + [rows[i] for i in order if i not in tied]
