"""Where grounding spends its time and instances, for one rule sheet.

    python scripts/ground_profile.py RULES [--budget S] [--no-factor]

Prints ground and compile times, peak memory, relaxed-fixpoint iterations, ground rule
instances and the compiled network's size (the measurements behind
docs/reports/grounding-big-games.md).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

from gdl.kif import read_rules_file
from agent.engine.compile import compile_program
from agent.engine.ground import GroundingError, ground


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rules")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--no-factor", action="store_true", help="ground without factoring rule bodies")
    ap.add_argument("--max-instances", type=int, default=2_000_000)
    a = ap.parse_args()
    desc = read_rules_file(a.rules)
    t0, c0 = time.monotonic(), time.process_time()
    try:
        gp = ground(desc, seconds=a.budget, factor=not a.no_factor, max_instances=a.max_instances)
        t1, c1 = time.monotonic(), time.process_time()
        game, _ = compile_program(gp)
    except GroundingError as e:
        print(f"refused after {time.monotonic() - t0:.2f} s: {e}")
        return 1
    t2, c2 = time.monotonic(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ground {gp.seconds:.2f} s (fixpoint {gp.fixpoint_seconds:.2f} s, {gp.iterations} iterations), "
          f"compile {t2 - t1:.2f} s, total {t2 - t0:.2f} s wall; CPU: ground {c1 - c0:.2f} s (Prolog "
          f"included), compile {c2 - c1:.2f} s; "
          f"peak RSS {rss:.0f} MB")
    print(f"{gp.n_rules:,} ground rule instances, {len(gp.atoms):,} ground atoms, "
          f"{len(gp.true_atoms):,} fluents, {len(gp.does_atoms):,} moves; "
          f"network: {game.n_atoms:,} atoms, {game.n_nodes:,} nodes, {len(game.out_edge):,} edges")
    return 0


if __name__ == "__main__":
    sys.exit(main())
