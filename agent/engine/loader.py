"""``load_engine``: the fastest engine that can play the game, with the reason if not compiled.

Order: compiled game from the cache (same structure seen before, any names), else ground
and compile within the budget and cache it, else the non-ground engine (games that do not
ground: chess, amazons; ``nonground.py``), else the Prolog reasoner.  Every fallback is
logged with its reason and recorded in ``engine.info``; nothing fails silently.
"""
from __future__ import annotations

import logging
import time

from gdl.kif import Description

from . import cache
from .compile import compile_program
from .compiled import CompiledEngine
from .ground import GroundingError, ground
from ..reasoner.prolog import PrologReasoner   # loaded by ground anyway; pyswip itself with the first reasoner

log = logging.getLogger("ggp_persona.engine")


def load_engine(desc: Description, *, budget_seconds: float = 30.0, cache_dir=None,
                use_cache: bool = True, engine: str = "auto", build: bool = True):
    """``engine``: ``auto`` (compiled, else non-ground, else Prolog), ``compiled`` (raise
    GroundingError instead of falling back), ``nonground`` (the same) or ``prolog``.
    ``build=False``: a compiled engine only from the cache (a cache miss is a GroundingError,
    handled as above): for a process that must not ground, since another one does."""
    t0 = time.monotonic()
    if engine == "prolog":
        return _prolog(desc, {"engine": "prolog", "reason": "asked for"})
    if engine == "nonground":
        return _nonground(desc, {"reason": "asked for"}, t0)
    key, canon = cache.structure_key(desc.rules)
    path = cache.entry_path(cache_dir or cache.default_cache_dir(), key)
    if use_cache:
        hit = cache.load(path, canon)
        if hit is not None and [r for r in hit[1]["roles"]] == list(desc.roles):
            game, tables, info = hit
            info = dict(info, source="cache", load_seconds=round(time.monotonic() - t0, 3), key=key)
            return CompiledEngine(game, tables, info)
    try:
        if not build:
            raise GroundingError("not in the engine cache (and not built here)")
        gp = ground(desc, seconds=budget_seconds)
        t1 = time.monotonic()
        game, tables = compile_program(gp)
    except GroundingError as e:
        if engine == "compiled":
            raise
        try:
            sm = _nonground(desc, {"reason": f"not compiled: {e}"}, t0)
        except Exception as e2:  # noqa: BLE001 - any failure of the fallback leaves Prolog
            log.warning("playing on the Prolog reasoner: %s; %s", e, e2)
            return _prolog(desc, {"engine": "prolog", "reason": f"{e}; {e2}"})
        log.warning("playing on the non-ground engine: %s", e)
        return sm
    info = {"engine": "compiled", "ground_seconds": round(gp.seconds, 3),
            "compile_seconds": round(time.monotonic() - t1, 3), "iterations": gp.iterations,
            "ground_rules": gp.n_rules, "atoms": int(game.n_atoms), "fluents": int(game.n_base)}
    if use_cache:
        try:
            cache.save(path, game, tables, canon, info)
        except OSError as e:  # a read-only cache is not a reason to refuse the game
            log.warning("could not write the engine cache %s: %s", path, e)
    return CompiledEngine(game, tables, dict(info, source="built", key=key))


def _nonground(desc, info, t0):
    from .nonground import NonGroundEngine   # its numba kernels, only for games that do not ground
    sm = NonGroundEngine(desc)
    sm.info = dict(info, engine="nonground", build_seconds=round(time.monotonic() - t0, 3),
                   relations=len(sm.c.rel_keys), flat_rules=len(sm.c.flat.rules))
    return sm


def _prolog(desc, info):
    sm = PrologReasoner(desc)
    sm.info = info
    return sm
