"""Random-playout benchmark, counted the way gdl-perf counts it.

From the initial state, every role plays a uniformly random legal move until a terminal
state, then the goals are read; a warm-up first, then playouts are counted for a fixed
wall time.  Each engine runs its playouts in its own native loop (numba for the compiled
engine, Prolog for the reasoner), as the peer engines' figures were measured.
"""
from __future__ import annotations

import time

import numpy as np

from .reasoner.statemachine import ReasonerError

PLAYOUT_CAP = 10_000  # joint moves; a longer playout means the game does not terminate


def _compiled_runner(engine, seed: int):
    """A function (n) -> (playouts, total depth, goal sum) over the numba kernel."""
    from .engine import kernels as K   # numba kernels: only for the compiled engine's figures

    K.seed(seed)
    g, init = engine.game, engine.game.init_state

    def run(n):
        done, depth, goals = K.playouts_for(g, init, n, PLAYOUT_CAP)
        if done < 0:
            raise ReasonerError("a playout broke: a role had no legal move, or it hit "
                                f"{PLAYOUT_CAP} joint moves")
        return int(done), int(depth), int(goals)
    return run


def _statemachine_runner(sm, seed: int):
    """The same for any engine with ``random_playout`` (the Prolog reasoner)."""
    init = sm.initial_state()
    first = [True]

    def run(n):
        depth = goals = 0
        for _ in range(n):
            d, gv = sm.random_playout(init, cap=PLAYOUT_CAP, seed=seed if first[0] else None)
            first[0] = False
            depth += d
            goals += sum(max(v) if v else 0 for v in gv)
        return n, depth, goals
    return run


def _timed(run, seconds: float, batch: int) -> tuple:
    playouts = depth = goals = 0
    t0 = time.perf_counter()
    while True:
        p, d, g = run(batch)
        playouts, depth, goals = playouts + p, depth + d, goals + g
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return playouts, depth, goals, elapsed
        # aim for batches of about a tenth of a second: the clock is read rarely
        rate = playouts / max(elapsed, 1e-9)
        batch = max(1, min(int(rate * 0.1), int(rate * (seconds - elapsed)) + 1))


def bench_engine(engine, seconds: float = 20.0, warmup: float = 5.0, seed: int = 1) -> dict:
    """Playouts per second of ``engine`` from its initial state: one dict of figures."""
    run = (_compiled_runner(engine, seed) if hasattr(engine, "game")
           else _statemachine_runner(engine, seed))
    batch = 1
    if warmup > 0:
        p, _, _, el = _timed(run, warmup, 1)
        batch = max(1, int(p / max(el, 1e-9) * 0.1))
    playouts, depth, goals, elapsed = _timed(run, seconds, batch)
    n_roles = len(engine.roles)
    return {
        "playouts_per_sec": round(playouts / elapsed, 2),
        "state_changes_per_sec": round(depth / elapsed, 2),
        "avg_depth": round(depth / playouts, 3) if playouts else None,
        "avg_goals": round(goals / (playouts * n_roles), 3) if playouts else None,
        "playouts": playouts,
        "seconds": round(elapsed, 3),
    }


def median_runs(engine, runs: int, **kw) -> dict:
    """``runs`` measurements; the figures of the median run by playouts/s, with all rates."""
    results = [bench_engine(engine, **kw) for _ in range(max(1, runs))]
    rates = [r["playouts_per_sec"] for r in results]
    med = results[int(np.argsort(rates)[len(rates) // 2])]
    return dict(med, runs=rates) if runs > 1 else med
