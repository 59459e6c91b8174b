"""The persona Monte Carlo tree search (spec sections 2 and 6.4).

    search(engine, state, role_index, persona, *, seed, limit=None, seconds=None, tree=None)
        -> SearchResult(move, moves, q, visits, simulations, elapsed, tree, ...)
    advance(tree, joint_move) -> tree for the next decision (or None)
    search_batch(engine, items, persona, seed) -> [SearchResult]   fresh tree per item

``engine`` is either a compiled engine (``agent.engine.compiled.CompiledEngine``: the whole
search runs in numba) or any StateMachine (e.g. ``PrologReasoner``: Python drives the same
numba tree functions).  States are frozensets of terms in both cases.

``limit`` overrides the persona's simulations per decision; with ``seconds`` alone the search
runs until the time is up; with both, whichever ends first.  Same seed, same result.
"""
from __future__ import annotations

import hashlib

from . import features as _features
from . import leaf as _leaf
from . import params as _params
from . import rng as _rng
from . import tree as _tree
from .common import SearchResult, SearchTree, advance
from .jitguard import guard as _guard

_guard([_tree, _leaf, _rng], [_tree, _leaf, _rng, _params])

__all__ = ["search", "search_batch", "advance", "SearchResult", "SearchTree", "item_seed"]


def _compiled(engine) -> bool:
    return hasattr(engine, "game") and hasattr(getattr(engine, "game"), "n_words")


def search(engine, state, role_index: int, persona, *, seed: int, limit: int | None = None,
           seconds: float | None = None, tree: SearchTree | None = None, solver: bool = True,
           max_nodes: int | None = None) -> SearchResult:
    """One decision for ``role_index`` in ``state``.  ``tree``: a tree from a previous
    result, moved on with ``advance``; used when its root is ``state``.  ``solver=False``
    turns off the terminal solver (for baselines); ``max_nodes`` bounds the node pool."""
    if _compiled(engine):
        from .driver_compiled import search as run
    else:
        from .driver_sm import search as run
    return run(engine, state, role_index, persona, seed=seed, limit=limit, seconds=seconds,
               tree=tree, solver=solver, max_nodes=max_nodes)


def item_seed(seed: int, index: int) -> int:
    """The seed of item ``index`` of a batch seeded with ``seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}|{index}".encode()).digest()[:8], "little")


def search_batch(engine, items, persona, seed: int, *, limit: int | None = None,
                 solver: bool = True) -> list[SearchResult]:
    """Many decisions with one persona: ``items`` are (state, role_index) or
    (state, role_index, seed) tuples; each gets a fresh tree and MAST table (spec 2.1),
    so each result depends only on (state, role, persona, seed).  Without its own seed,
    item i uses ``item_seed(seed, i)``.  The compiled engine runs the whole batch in one
    numba call and returns results without trees."""
    items = [(it[0], it[1], it[2] if len(it) > 2 else item_seed(seed, i)) for i, it in enumerate(items)]
    if _compiled(engine):
        from .driver_compiled import search_batch as run_batch
        return run_batch(engine, items, persona, limit=limit, solver=solver)
    from .driver_sm import search as run
    out = []
    for state, role, s in items:
        r = run(engine, state, role, persona, seed=s, limit=limit, solver=solver)
        r.tree = None
        out.append(r)
    return out
