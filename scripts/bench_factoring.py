"""Random playouts/s of the compiled engine built with and without factored rule bodies.

    python scripts/bench_factoring.py RULES [RULES ...] [--seconds 10]

Both builds are timed back to back in one process, alternating, so machine load hits both
alike; CPU time is reported too (the machine is shared).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from gdl.kif import read_rules_file
from agent.engine import kernels as K
from agent.engine.compile import compile_program
from agent.engine.ground import ground


def rate(game, seconds: float) -> float:
    init = game.init_state.copy()
    K.playouts_for(game, init, 10, 10_000)  # warm-up (JIT is cached)
    n, t0, c0 = 0, time.monotonic(), time.process_time()
    while time.monotonic() - t0 < seconds:
        done, _, _ = K.playouts_for(game, init, 50, 10_000)
        n += int(done)
    return n / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rules", nargs="+")
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    for path in a.rules:
        desc = read_rules_file(path)
        games = {f: compile_program(ground(desc, seconds=600, factor=f))[0] for f in (False, True)}
        rates = {f: [] for f in games}
        for _ in range(2):
            for f, g in games.items():
                rates[f].append(rate(g, a.seconds / 2))
        r0, r1 = np.median(rates[False]), np.median(rates[True])
        print(f"{path}: playouts per CPU second: plain {r0:,.0f}, factored {r1:,.0f} ({r1 / r0:.2f}x); "
              f"nodes {games[False].n_nodes:,} -> {games[True].n_nodes:,}, "
              f"edges {len(games[False].out_edge):,} -> {len(games[True].out_edge):,}", flush=True)


if __name__ == "__main__":
    main()
