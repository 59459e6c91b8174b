#!/usr/bin/env python3
"""The state-machine search on the non-ground engine (``tournament`` persona, from the
initial state), simulations per second of two variants alternating:

    python scripts/chess_search_ab.py RULES [PAIRS] [SECONDS]
        its legal and next queries asked one evaluator call per relation shape (``_ask``, as
        before ``NK.ask_many``) against one call for all (``_ask_many``), in one process;
    python scripts/chess_search_ab.py RULES [PAIRS] [SECONDS] --baseline DIR [--plies N]
        this version against the checkout DIR, each search in a fresh process importing its
        own version, the first of each pair alternating; from the state after N random
        plies (seeded) instead of the initial one.

Used by docs/benchmarks/chess.md (RULES: base chess v0, 5 pairs of 3 s searches; the
sampler: 6 pairs of 5 s from ply 12).
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(root: str, rules: str, seconds: float, seed: int, plies: int) -> None:
    """One search with the ``agent`` package of ``root``: one JSON line."""
    sys.path.insert(0, root)
    import random
    import agent
    if Path(agent.__file__).resolve().parents[1] != Path(root).resolve():
        raise SystemExit(f"imported {agent.__file__}, not the version in {root}")
    from agent.engine.nonground import NonGroundEngine
    from agent.persona import load_persona
    from agent.search import search
    from gdl.kif import read_rules_file
    ng = NonGroundEngine(read_rules_file(rules))
    s = ng.initial_state()
    rng = random.Random(plies)
    for _ in range(plies):
        s = ng.next_state(s, [rng.choice(ng.legal_moves(s, r)) for r in range(len(ng.roles))])
    persona = load_persona("tournament")
    search(ng, s, 0, persona, seed=0, seconds=1.0)    # kernels compiled or loaded first
    r = search(ng, s, 0, persona, seed=seed, seconds=seconds)
    print(json.dumps({"sims_per_s": r.simulations / r.elapsed}), flush=True)


def versus(rules: str, pairs: int, seconds: float, base: str, plies: int) -> None:
    rates: dict = {"this": [], "baseline": []}
    for i in range(pairs):
        for side in (("this", "baseline") if i % 2 == 0 else ("baseline", "this")):
            root = str(ROOT) if side == "this" else base
            out = subprocess.run([sys.executable, __file__, "--child", root, rules, str(seconds),
                                  str(i + 1), str(plies)], capture_output=True, text=True, cwd=root, check=True)
            rates[side].append(json.loads(out.stdout.strip().splitlines()[-1])["sims_per_s"])
            print(side, f"{rates[side][-1]:.2f}", flush=True)
    for side, v in rates.items():
        print(f"{side}: median {statistics.median(v):.2f} simulations/s ({', '.join(f'{x:.1f}' for x in v)})")
    ratio = statistics.median(a / b for a, b in zip(rates["this"], rates["baseline"]))
    print(f"this / baseline: {ratio:.3f} (median of the pairs)")


def per_shape_against_one_call(rules: str, pairs: int, seconds: float) -> None:
    sys.path.insert(0, str(ROOT))
    from agent.engine.nonground import NonGroundEngine
    from agent.persona import load_persona
    from agent.search import driver_sm, search
    from gdl.kif import read_rules_file
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


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--child"]:
        child(args[1], args[2], float(args[3]), int(args[4]), int(args[5]))
        return
    opts = {}
    for flag in ("--baseline", "--plies"):
        if flag in args:
            i = args.index(flag)
            opts[flag] = args[i + 1]
            del args[i:i + 2]
    rules = str(Path(args[0]).resolve())
    pairs = int(args[1]) if len(args) > 1 else 5
    seconds = float(args[2]) if len(args) > 2 else 3.0
    if "--baseline" in opts:
        versus(rules, pairs, seconds, str(Path(opts["--baseline"]).resolve()), int(opts.get("--plies", 0)))
    else:
        per_shape_against_one_call(rules, pairs, seconds)


if __name__ == "__main__":
    main()
