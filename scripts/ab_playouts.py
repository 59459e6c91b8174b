#!/usr/bin/env python3
"""Raw random playouts of the compiled engine (``--engine nonground``: of the non-ground one),
this version against an earlier checkout, in CPU time: for an engine change measured on a
machine shared with other long jobs, where wall-clock rates move with the load but a
process's CPU time much less.

    git worktree add ../base main
    python scripts/ab_playouts.py --baseline ../base --games ticTacToe connectFour --reps 7

One process per version, game and rep (each imports its own ``agent`` package, with its own
numba cache; the game is built once per version into a temporary engine cache): the two load
the game, warm up, then run the same number of playouts one after the other, the first of
the pair alternating (``kernels.playouts_for`` from the initial state, seeded by the rep),
timed with ``time.process_time``.  Fresh processes per rep, because a process's memory layout
alone moved the same code by up to 25% (ticTacToe 0.74 in one pair of processes, 1.01 in the
next): a pair kept for all reps measures its layout, not the code.  The ratio is taken rep by rep (this / baseline playouts per CPU
second) and its median reported, with both medians and the average depths (equal depths:
the two versions play the same game).  Results are appended as JSON lines to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_engines import rules_path   # the same games as engine.md (scripts/ is on sys.path)
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)
GAMES = ["ticTacToe", "connectFour", "breakthrough", "checkers", "reversi", "hex", "pentago",
         "nineBoardTicTacToe"]


def serve(key: str, root: Path, budget: float, cache_dir: str, engine: str) -> None:
    """Child: load (or build) ``key`` with the ``agent`` package of ``root``; then answer
    ``N SEED`` lines (N playouts, timed) with one JSON line each."""
    sys.path.insert(0, str(root))
    import agent
    if Path(agent.__file__).resolve().parents[1] != root.resolve():
        raise SystemExit(f"imported {agent.__file__}, not the version in {root}")
    from gdl.kif import read_rules_file
    desc = read_rules_file(rules_path(key))
    if engine == "nonground":   # its playout loop in numba (``NK.playout``), from the initial state
        from agent.engine.nonground import NonGroundEngine
        sm = NonGroundEngine(desc)
        s0 = sm.initial_state()

        def playouts(n: int, seed: int):
            depth = 0
            for i in range(n):
                depth += sm.random_playout(s0, cap=10_000, seed=seed * 100_003 + i)[0]
            return n, depth
    else:
        from agent.engine import kernels as K
        from agent.engine import load_engine
        g = load_engine(desc, engine="compiled", budget_seconds=budget, cache_dir=cache_dir).game

        def playouts(n: int, seed: int):
            K.seed(seed)
            done, depth, _ = K.playouts_for(g, g.init_state, n, 10_000)
            return done, depth
    playouts(1, 0)   # kernels loaded (or compiled) first
    t0 = time.process_time()
    n = 0
    while time.process_time() - t0 < 1.0:   # warm-up, and the rate for the parent's calibration
        n += playouts(1 if engine == "nonground" else 10, 0)[0]
    print(json.dumps({"rate": n / (time.process_time() - t0)}), flush=True)
    for line in sys.stdin:
        n, s = (int(x) for x in line.split())
        t0 = time.process_time()
        done, depth = playouts(n, s)
        cpu = time.process_time() - t0
        print(json.dumps({"playouts": int(done), "depth": int(depth), "cpu": cpu}), flush=True)


class Child:
    def __init__(self, key: str, root: Path, budget: float, cache_dir: str, engine: str):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(root / ".cache" / "numba"))
        self.p = subprocess.Popen([sys.executable, __file__, "--serve", key, "--root", str(root),
                                   "--budget", str(budget), "--cache", cache_dir, "--engine", engine],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env, cwd=root)

    def read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"child exited with {self.p.wait()}")
        return json.loads(line)

    def run(self, n: int, seed: int) -> dict:
        self.p.stdin.write(f"{n} {seed}\n")
        self.p.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="a checkout of the earlier version (required)")
    ap.add_argument("--games", nargs="+", default=GAMES)
    ap.add_argument("--reps", type=int, default=7, help="alternating runs per version")
    ap.add_argument("--cpu-seconds", type=float, default=2.0, help="CPU time of one run")
    ap.add_argument("--budget", type=float, default=120.0, help="grounding budget (s)")
    ap.add_argument("--engine", choices=("compiled", "nonground"), default="compiled",
                    help="the engine whose playouts are timed (nonground: chess's)")
    ap.add_argument("--out", help="append one JSON line per game here")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.serve, Path(a.root), a.budget, a.cache, a.engine)
        return
    if not a.baseline:
        ap.error("--baseline is required: a checkout of the earlier version")
    base = Path(a.baseline).resolve()
    with Progress() as prog, tempfile.TemporaryDirectory() as tmp:
        task = prog.add_task("games", total=len(a.games) * a.reps)
        caches = {}
        for side in ("this", "base"):   # never the user's engine cache
            caches[side] = os.path.join(tmp, side)
            os.mkdir(caches[side])
        for key in a.games:
            prog.update(task, description=key)
            n = 0
            ours, theirs, ratios, depths = [], [], [], set()
            for rep in range(a.reps):
                this = Child(key, ROOT, a.budget, caches["this"], a.engine)
                that = Child(key, base, a.budget, caches["base"], a.engine)
                rate = min(this.read()["rate"], that.read()["rate"])
                n = n or max(1, int(rate * a.cpu_seconds))
                pair = [this, that] if rep % 2 == 0 else [that, this]   # who goes first alternates
                res = {id(c): c.run(n, rep + 1) for c in pair}
                this.close()
                that.close()
                x, y = res[id(this)], res[id(that)]
                ours.append(x["playouts"] / x["cpu"])
                theirs.append(y["playouts"] / y["cpu"])
                ratios.append(ours[-1] / theirs[-1])
                depths.add((round(x["depth"] / n, 2), round(y["depth"] / n, 2)))
                prog.advance(task)
            row = {"game": key, "engine": a.engine, "playouts_per_run": n, "ratio": round(statistics.median(ratios), 3),
                   "ratios": [round(r, 3) for r in ratios],
                   "this_per_cpu_s": round(statistics.median(ours)), "baseline_per_cpu_s": round(statistics.median(theirs)),
                   "avg_depth_this_baseline": sorted(depths)}
            prog.console.print(json.dumps(row))
            if a.out:
                with benchrows.append(a.out) as f:
                    f.add(row)


if __name__ == "__main__":
    main()
