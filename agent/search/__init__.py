"""The persona Monte Carlo tree search (spec sections 2 and 6.4).

    search(engine, state, role_index, persona, settings, tree=None, on_progress=None)
        -> SearchResult(move, moves, q, visits, simulations, ...)
    SearchSettings(seed, limit=None, seconds=None, solver=True, max_nodes=None, thesis=False,
                   threads=1, heuristic=None, material=None)
    advance(tree, joint_move) -> tree for the next decision (or None)
    search_batch(engine, items, persona, seed, *, limit=None, thesis=True) -> [SearchResult]

``engine`` is either a compiled engine (``agent.engine.compiled.CompiledEngine``: the whole
search runs in numba) or any StateMachine (e.g. ``PrologReasoner``: Python drives the same
numba tree functions and the same leaf evaluator).  States are frozensets of terms.

``settings.limit`` overrides the persona's simulations per decision; with ``seconds`` alone
the search runs until the time is up; with both, whichever ends first (live play: a persona
plays with the fewer of its ``limit`` and the clock, spec 6.6).  Same seed, same result
(without a clock: a clock makes any search depend on timing, and ``threads`` are used only
on one).

``thesis=True`` is exactly the search of spec 2.8 (what scoring recorded decisions needs): a
fresh tree and MAST table, no solver, a final choice by the spec alone.  ``thesis=False``
(live play) adds the deviations README lists: tree reuse, the MCTS-Solver, the visit-share
filter of the final choice, transpositions, decisive and anti-decisive moves in playouts and,
on a clock, the one-ply look-ahead and deadline cut-offs.

``on_progress(move, simulations)``: called while the search runs with the best-so-far move
(a term of the legal list) whenever it changes, at most every 0.1 s, and once at the end if
the last call named another move (``common.Progress``).
"""
from __future__ import annotations

import hashlib
import numbers

from . import driver_compiled as _driver_compiled
from . import driver_sm as _driver_sm
from . import leaf as _leaf
from . import params as _params
from . import rng as _rng
from . import tree as _tree
from .common import SearchResult, SearchSettings, SearchTree, advance, is_compiled, settings_of
from .jitguard import guard as _guard

_guard([_tree, _leaf, _rng], [_tree, _leaf, _rng, _params])

__all__ = ["search", "search_batch", "advance", "SearchResult", "SearchSettings", "SearchTree", "item_seed"]


def search(engine, state, role_index: int, persona, settings: SearchSettings | None = None,
           tree: SearchTree | None = None, on_progress=None, **keywords) -> SearchResult:
    """One decision for ``role_index`` in ``state`` with ``settings`` (``SearchSettings``:
    seed, budget, switches, the game's evaluation inputs).  ``tree``: a tree from a previous
    result, moved on with ``advance``; used when its root is ``state`` (not in thesis mode).
    ``settings.solver=False`` turns off the terminal solver (for baselines); ``max_nodes``
    bounds the node pool; ``heuristic``: the game's evaluation (``heuristic.learn``), which
    ends playouts after ``heuristic.EVAL_DEPTH`` plies in live play; ``material``: each
    role's pieces (``material.Material``, from ``heuristic.Learner``), a prior on the moves
    the compiled engine's search tries (the state-machine driver has none).  ``threads``: on
    a clock, the compiled engine searches that many trees of the root at once, one per
    thread, and the choice reads their root statistics together (root parallelism; the
    state-machine driver searches on one thread).  ``keywords``: the older form
    (``seed=``, ``limit=``, ...) of callers not yet moved (``common.settings_of``)."""
    settings = settings_of(settings, keywords)
    driver = _driver_compiled if is_compiled(engine) else _driver_sm
    return driver.search(engine, state, role_index, persona, settings, tree=tree, on_progress=on_progress)


def item_seed(seed: int, index: int) -> int:
    """The seed of item ``index`` of a batch seeded with ``seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}|{index}".encode()).digest()[:8], "little")


def _item(it, seed: int, i: int):
    """(state, role, seed) of a batch item: (state, role), (state, role, seed),
    (state, role, move) or (state, role, move, seed); a recorded move is not searched with
    (every legal move gets its Q), so it is only skipped here."""
    if len(it) not in (2, 3, 4):
        raise ValueError(f"batch item {i}: expected (state, role[, move][, seed]), got {len(it)} fields")
    own = it[-1] if len(it) > 2 and isinstance(it[-1], numbers.Integral) and not isinstance(it[-1], bool) else None
    if len(it) == 4 and own is None:
        raise ValueError(f"batch item {i}: the fourth field must be an integer seed")
    return it[0], int(it[1]), int(own) if own is not None else item_seed(seed, i)


def search_batch(engine, items, persona, seed: int, *, limit: int | None = None,
                 thesis: bool = True, solver: bool = True) -> list[SearchResult]:
    """Many decisions with one persona (scoring recorded decisions): ``items`` are
    (state, role_index[, move][, seed]) tuples; each gets a fresh tree and MAST table
    (spec 2.1), so each result depends only on (state, role, persona, seed).  Without its
    own seed, item i uses ``item_seed(seed, i)``.  ``thesis=True`` (the default here) is
    exactly the spec's search.  The compiled engine runs the whole batch in one numba call;
    results carry no trees."""
    items = [_item(it, seed, i) for i, it in enumerate(items)]
    if is_compiled(engine):
        return _driver_compiled.search_batch(engine, items, persona, limit=limit, solver=solver, thesis=thesis)
    out = []
    for state, role, s in items:
        r = _driver_sm.search(engine, state, role, persona,
                              SearchSettings(seed=s, limit=limit, solver=solver, thesis=thesis))
        r.tree = None
        out.append(r)
    return out
