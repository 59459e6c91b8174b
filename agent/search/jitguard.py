"""Stale numba caches: numba keys a cached function on its own bytecode only, so a change in
an njit function it calls from another file (tree.py, kernels.py...) would leave the old
machine code in use.  ``guard`` flushes the given modules' cached functions whenever the
sources they depend on change (a digest kept beside the cache)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core.registry import CPUDispatcher


def guard(modules: list, depends_on: list) -> None:
    digest = hashlib.sha256()
    for m in depends_on:
        digest.update(Path(m.__file__).read_bytes())
    stamp = digest.hexdigest()
    dispatchers = [v for m in modules for v in vars(m).values()
                   if isinstance(v, CPUDispatcher) and v.__module__ == m.__name__
                   and getattr(v, "_cache", None) is not None]
    if not dispatchers:
        return
    try:
        path = Path(dispatchers[0]._cache.cache_path) / f"{modules[0].__name__}.deps"
        if path.exists() and path.read_text() == stamp:
            return
        for d in dispatchers:
            d._cache.flush()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(stamp)
    except OSError:
        pass    # a read-only cache: numba recompiles or uses it as it is
