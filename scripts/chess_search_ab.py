#!/usr/bin/env python3
"""The state-machine search on the non-ground engine, its legal and next queries asked one
evaluator call per relation shape (``_ask``, as before ``NK.ask_many``) against one call for
all (``_ask_many``), alternating in one process; simulations per second of each.

    python scripts/chess_search_ab.py RULES [PAIRS] [SECONDS]

Used by docs/benchmarks/chess.md (RULES: base chess v0, 5 pairs of 3 s searches).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.engine.nonground import NonGroundEngine  # noqa: E402
from agent.persona import load_persona  # noqa: E402
from agent.search import driver_sm, search  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402


def main() -> None:
    rules = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    ng = NonGroundEngine(read_rules_file(rules))
    one_call = ng._ask_many

    def per_shape(rels, calls):
        return [ng._ask(r, list(c)) for r, c in zip(rels, calls)]

    persona = load_persona("tournament")
    state = ng.initial_state()
    rates = {"per shape": [], "one call": []}
    for i in range(pairs):
        for kind in (("per shape", "one call") if i % 2 else ("one call", "per shape")):
            ng._ask_many = per_shape if kind == "per shape" else one_call
            driver_sm._cached.clear()          # no query cache carried from one run to the next
            r = search(ng, state, 0, persona, seed=i, seconds=seconds)
            rates[kind].append(r.simulations / r.elapsed)
    for kind, v in rates.items():
        print(f"{kind}: median {statistics.median(v):.2f} simulations/s ({', '.join(f'{x:.1f}' for x in v)})")
    ratio = statistics.median(a / b for a, b in zip(rates["one call"], rates["per shape"]))
    print(f"one call / per shape: {ratio:.3f} (median of the pairs)")


if __name__ == "__main__":
    main()
