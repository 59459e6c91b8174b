"""``load_engine``: the fastest engine that can play the game, with the reason if not compiled.

Order: compiled game from the cache (same structure seen before, any names), else ground
and compile within the budget and cache it, else the Prolog reasoner.  Every fallback is
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

log = logging.getLogger("ggp_persona.engine")


def load_engine(desc: Description, *, budget_seconds: float = 30.0, cache_dir=None,
                use_cache: bool = True, engine: str = "auto"):
    """``engine``: ``auto`` (compiled, else Prolog), ``compiled`` (raise GroundingError
    instead of falling back), ``prolog``, or ``topdown`` (the non-ground evaluator:
    plays games that do not ground, such as chess, exactly; as slow as Prolog so far, so
    never chosen by ``auto``)."""
    t0 = time.monotonic()
    if engine == "prolog":
        return _prolog(desc, {"engine": "prolog", "reason": "asked for"})
    if engine == "topdown":
        from .topdown import TopDown
        sm = TopDown(desc)
        sm.info = {"engine": "topdown", "reason": "asked for"}
        return sm
    key, canon = cache.structure_key(desc.rules)
    path = cache.entry_path(cache_dir or cache.default_cache_dir(), key)
    if use_cache:
        hit = cache.load(path, canon)
        if hit is not None and [r for r in hit[1]["roles"]] == list(desc.roles):
            game, tables, info = hit
            info = dict(info, source="cache", load_seconds=round(time.monotonic() - t0, 3), key=key)
            return CompiledEngine(game, tables, info)
    try:
        gp = ground(desc, seconds=budget_seconds)
        t1 = time.monotonic()
        game, tables = compile_program(gp)
    except GroundingError as e:
        if engine == "compiled":
            raise
        log.warning("playing on the Prolog reasoner: %s", e)
        return _prolog(desc, {"engine": "prolog", "reason": str(e)})
    info = {"engine": "compiled", "ground_seconds": round(gp.seconds, 3),
            "compile_seconds": round(time.monotonic() - t1, 3), "iterations": gp.iterations,
            "ground_rules": gp.n_rules, "atoms": int(game.n_atoms), "fluents": int(game.n_base)}
    if use_cache:
        try:
            cache.save(path, game, tables, canon, info)
        except OSError as e:  # a read-only cache is not a reason to refuse the game
            log.warning("could not write the engine cache %s: %s", path, e)
    return CompiledEngine(game, tables, dict(info, source="built", key=key))


def _prolog(desc, info):
    from ..reasoner.prolog import PrologReasoner
    sm = PrologReasoner(desc)
    sm.info = info
    return sm
