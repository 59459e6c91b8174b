"""Q-values of personas on decisions: the one scoring task, common random numbers, a cache.

Scoring is the cost of fitting, so:
- one top-level task function, ``score_task``, runs ``search_batch`` (the spec's search:
  ``limit`` simulations, fresh tree per decision) on a chunk of decisions for one persona;
  ``agent.compute.run_tasks`` runs the chunks on a local process pool, in this process
  (``workers=0``) or on Dask, with the same results since every decision carries its seed;
- the seed of a decision is common to all personas (CRN, spec 4.5 item 1):
  ``prepare.decision_seed``;
- Q-values are deterministic in (persona, decision, seed), so the ``Scorer`` caches them
  per (persona key, decision, replicate) and saves the cache to disk for resumed runs.
"""
from __future__ import annotations

import hashlib
import pickle
from dataclasses import asdict
from pathlib import Path

import numpy as np

from agent.compute import run_tasks
from agent.matchlog import atomic_write_bytes

from .prepare import decision_seed

# Imports inside functions: the engines and the search (numba, 0.5-0.9 s to import) are
# loaded by the processes that score (``score_task``); the GA's own process schedules the
# tasks and reads the Q cache without them.

SEARCH_VERSION = "thesis-1"   # change when the scoring search changes: old cached Q no longer apply
CHUNK = 40            # decisions per task: small enough to spread over workers

_ENGINES: dict = {}   # per process: game key -> engine (load_engine reads its disk cache)


def persona_key(persona, limit: int | None) -> str:
    """Identifies the Q-values a persona produces: every field but the choice parameters
    (random_error, nice_threshold, kappa never change Q) and the names."""
    d = asdict(persona)
    for k in ("name", "kind", "description", "random_error", "nice_threshold", "kappa"):
        d.pop(k)
    if d.get("model") is None:     # keys of personas without a model stay what they were
        d.pop("model", None)
    d["limit"] = limit if limit is not None else d["limit"]
    d["search"] = SEARCH_VERSION
    return hashlib.sha256(repr(sorted(d.items())).encode()).hexdigest()[:24]


def score_task(task: dict) -> list:
    """Worker: Q-values (in each decision's move order) of ``task['persona']`` on
    ``task['items']`` = [(state, role, seed, moves)] of game ``task['game']``."""
    from agent.engine.loader import load_engine
    from agent.search import search_batch
    eng = _ENGINES.get(task["game"])
    if eng is None:
        eng = _ENGINES[task["game"]] = load_engine(task["rules"])
    items = [(s, r, seed) for s, r, seed, _ in task["items"]]
    # thesis=True: exactly the spec's search (no solver, no choice-time filter), spec 4.5
    results = search_batch(eng, items, task["persona"], 0, limit=task["limit"], thesis=True)
    out = []
    for (_, _, _, moves), res in zip(task["items"], results):
        qmap = {m: float(q) for m, q in zip(res.moves, res.q)}
        out.append(np.array([qmap[m] for m in moves]))
    return out


class Scorer:
    """Q-values of personas on decisions, computed once (cache in memory and on disk)."""

    def __init__(self, games: dict, *, seed: int = 0, limit: int | None = None,
                 cache_file=None, scheduler=None, workers=None, progress=True):
        self.games, self.seed, self.limit = games, seed, limit
        self.scheduler, self.workers, self.progress = scheduler, workers, progress
        self.cache_file = Path(cache_file) if cache_file else None
        self.cache: dict = {}
        self.computed = 0
        if self.cache_file and self.cache_file.is_file():
            try:
                self.cache = pickle.loads(self.cache_file.read_bytes())
            except Exception:  # a damaged cache costs time, never results
                self.cache = {}

    def save(self) -> None:
        if self.cache_file:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.cache_file, pickle.dumps(self.cache, protocol=pickle.HIGHEST_PROTOCOL))

    def q(self, personas, decisions, replicate: int = 0, description: str = "scoring") -> list:
        """[[Q vector per decision] per persona]; computes only what the cache lacks."""
        keys = [persona_key(p, self.limit) for p in personas]
        tasks, where = [], []
        unique = {}   # a GA generation holds unchanged copies of popular parents: each genome once
        for pk, p in zip(keys, personas):
            unique.setdefault(pk, p)
        for pk, p in unique.items():
            missing = {}
            for d in decisions:
                ck = (pk, self.seed, d.key, replicate)
                if ck not in self.cache:
                    missing.setdefault(d.game, {})[ck] = d
            for game, ds in missing.items():
                ds = list(ds.items())
                for i in range(0, len(ds), CHUNK):
                    part = ds[i:i + CHUNK]
                    tasks.append({"game": game, "rules": self.games[game], "persona": p, "limit": self.limit,
                                  "items": [(d.state, d.role, decision_seed(self.seed, d.match_id, d.role, d.ply,
                                                                            replicate), d.moves) for _, d in part]})
                    where.append([ck for ck, _ in part])

        def keep(i, result):
            for ck, q in zip(where[i], result):
                self.cache[ck] = q
            self.computed += len(result)

        if tasks:
            try:
                run_tasks(score_task, tasks, scheduler=self.scheduler, workers=self.workers,
                          description=f"{description} ({sum(map(len, where))} decisions)",
                          on_result=keep, progress=self.progress)
            except BaseException:
                self.save()      # Ctrl-C or a failed task: keep every finished chunk for the resume
                raise
        return [[self.cache[(pk, self.seed, d.key, replicate)] for d in decisions] for pk in keys]
