"""A fitted model's table as a persona file holds it (``[model.fit]``), and its check.

The fitter writes the table (``agent.modelling.choicemodel.ChoiceModel.to_dict``, the board
of ``agent.modelling.movefeatures.MoveView.to_dict``) and the model that plays reads it back;
``agent.persona`` checks it whole when a persona file loads, so a broken file fails there
with one line naming the field, never at a move.  The table's words live here, below both
the persona files and the fitting modules (which load personas): the version, the move
features' names, the frequency columns, epsilon's floor, the bounds on its numbers, the
board table.  Plain Python: loading a persona costs no numpy or scipy.
"""
from __future__ import annotations

import math

MODEL_VERSION = 2             # 2: move features (``move``, ``board``); 1 (none) still loads
EPS_MIN = 0.01
FREQ_COLUMNS = ("freq_move", "freq_after_prev", "freq_in_state",
                "logfreq_move", "logfreq_after_prev", "logfreq_in_state")

# The move features' columns (``agent.modelling.movefeatures`` computes them)
ARGS = 3             # move arguments ranked

_CELL = ("cell", "x", "y", "x_rank", "y_rank", "x_min", "x_max", "y_min", "y_max",
         "centre_dx", "centre_dy", "centre_dist", "centre_nearest", "edge_dist", "on_edge", "dx", "dy")
_LAST = ("same_cell", "same_x", "same_y", "adjacent", "dist", "nearest")
NAMES = (_CELL + tuple(f"own_{n}" for n in _LAST) + ("own_same_piece",)
         + tuple(f"opp_{n}" for n in _LAST)
         + ("same_as_opp", "same_as_own", "captures", "captured")
         + tuple(f"arg{k}_{n}" for k in range(1, ARGS + 1) for n in ("rank", "min", "max")))
INDEX = {n: i for i, n in enumerate(NAMES)}


class ModelError(ValueError):
    """A model record that cannot be used (from a persona file)."""


class ViewError(ValueError):
    """A board table that cannot be used (from a persona file)."""


# ------------------------------------------------------------------------------ the board table

def check_board(d, source: str = "<model>") -> None:
    """Raise ``ViewError`` (one line naming the field) unless ``d`` is a board table: empty
    (no board), or a relation, its arity, 2 or 4 coordinate positions each with its ordered
    values (distinct texts), the content positions, the background text."""
    if not isinstance(d, dict):
        raise ViewError(f"{source}: board must be a table")
    if not d:
        return
    need = {"relation", "arity", "coord_args", "coord_values", "content_args", "background"}
    if set(d) != need:
        raise ViewError(f"{source}: board must have exactly {', '.join(sorted(need))}")
    if not isinstance(d["relation"], str) or not d["relation"]:
        raise ViewError(f"{source}: board.relation must be a name")
    if not isinstance(d["background"], str):
        raise ViewError(f"{source}: board.background must be a text")
    n = d["arity"]
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 64:
        raise ViewError(f"{source}: board.arity must be a whole number in [2, 64]")
    coords, content = d["coord_args"], d["content_args"]
    for key, v in (("coord_args", coords), ("content_args", content)):
        if not isinstance(v, list) or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n
                                              for k in v):
            raise ViewError(f"{source}: board.{key} must be argument positions below the arity {n}")
    if len(coords) not in (2, 4) or len(set(coords) | set(content)) != len(coords) + len(content):
        raise ViewError(f"{source}: board.coord_args must be 2 or 4 positions, none among content_args")
    vals = d["coord_values"]
    if (not isinstance(vals, list) or len(vals) != len(coords)
            or not all(isinstance(v, list) and 2 <= len(v) <= 64 and len(set(v)) == len(v)
                       and all(isinstance(t, str) for t in v) for v in vals)):
        raise ViewError(f"{source}: board.coord_values must be one list of 2 to 64 distinct texts "
                        f"per coordinate")


# ------------------------------------------------------------------------------ the loader's checks
# Bounds on a model's numbers: a fitted table is far inside them (|mean| < 10, scale from 1e-9,
# the fit's floor, |weights| < 10), and inside them every score of a move stays a finite number.
MAX_ABS = 1e12
MIN_SCALE = 1e-9
MAX_WEIGHT = 1e6
COUNT_LEVELS = 3


def _numbers(d: dict, key: str, n: int, lo: float, hi: float, source: str) -> None:
    """``d[key]`` is a flat list of ``n`` finite numbers in [lo, hi]."""
    v = d[key]
    if not isinstance(v, list) or len(v) != n:
        size = f"{len(v)} values" if isinstance(v, list) else type(v).__name__
        raise ModelError(f"{source}: {key} must be a list of {n} numbers (one per column), found {size}")
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise ModelError(f"{source}: {key}[{i}] = {_short(x)} must be a number")
        if not math.isfinite(x) or not lo <= x <= hi:
            raise ModelError(f"{source}: {key}[{i}] = {x!r} must be a finite number in [{lo:g}, {hi:g}]")


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _strings(d: dict, key: str, source: str) -> None:
    v = d[key]
    if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
        raise ModelError(f"{source}: {key} must be a list of strings")


def _check_counts(c, source: str) -> None:
    """The move counts (``baselines.MoveCounts.to_dict``): ``counts`` and, where they are not
    the counts summed, ``totals``, three levels each (the move alone, after the previous
    joint move, in the state), tables of whole non-negative counts."""
    if not isinstance(c, dict) or "counts" not in c or not set(c) <= {"counts", "totals"}:
        raise ModelError(f"{source}: counts must be a table with counts (and totals, and nothing else)")
    for key in c:
        levels = c[key]
        if not isinstance(levels, list) or len(levels) != COUNT_LEVELS or not all(isinstance(t, dict) for t in levels):
            raise ModelError(f"{source}: counts.{key} must be {COUNT_LEVELS} tables (one per level)")
        for lvl, table in enumerate(levels):
            for k, n in table.items():
                if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 2 ** 53:
                    raise ModelError(f"{source}: counts.{key}[{lvl}] {_short(k)} = {_short(n)} "
                                     f"must be a whole number of moves, at least 0")


def check_table(d, source: str = "<model>") -> None:
    """Raise ``ModelError`` (one line naming the field) unless ``d`` is a whole fitted model:
    version, names, sizes consistent (one mean, scale and weight per column), numbers finite
    and within bounds, epsilon in [EPS_MIN, 1], counts of the right shape."""
    if not isinstance(d, dict):
        raise ModelError(f"{source}: not a fitted model (a table expected)")
    version = d.get("version")
    if isinstance(version, bool) or version not in (1, MODEL_VERSION):
        raise ModelError(f"{source}: model version {_short(version)} is not {MODEL_VERSION} (or 1)")
    need = ("shared", "tokens", "mean", "scale", "weights", "epsilon", "counts") + (("move", "board") if version >= 2 else ())
    missing = [k for k in need if k not in d]
    if missing:
        raise ModelError(f"{source}: not a fitted model (no {', '.join(missing)})")
    if version < 2 and ("move" in d or "board" in d):
        raise ModelError(f"{source}: a version 1 model has no move features (move, board)")
    _strings(d, "shared", source)
    _strings(d, "tokens", source)
    move = d.get("move", [])
    if version >= 2:
        _strings(d, "move", source)
        unknown = [n for n in move if n not in INDEX]
        if unknown:
            raise ModelError(f"{source}: move feature {_short(unknown[0])} is not one of movefeatures.NAMES")
        if len(set(move)) != len(move):
            raise ModelError(f"{source}: move features must not repeat")
        try:
            check_board(d["board"], source)
        except ViewError as e:
            raise ModelError(str(e)) from None
    k = len(d["shared"]) + len(move) + len(d["tokens"]) + len(FREQ_COLUMNS)
    _numbers(d, "mean", k, -MAX_ABS, MAX_ABS, source)
    _numbers(d, "scale", k, MIN_SCALE, MAX_ABS, source)
    _numbers(d, "weights", k, -MAX_WEIGHT, MAX_WEIGHT, source)
    eps = d["epsilon"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not EPS_MIN <= eps <= 1:
        raise ModelError(f"{source}: epsilon = {_short(eps)} must lie in [{EPS_MIN}, 1]")
    if not isinstance(d.get("info", {}), dict):
        raise ModelError(f"{source}: info must be a table")
    _check_counts(d["counts"], source)
