#!/usr/bin/env python3
"""GDL-II percepts on each engine: build time and ``sees`` queries per second for every sheet
of ../shared/corpus/gdl2, the compiled and non-ground engines against the Prolog reasoner (the
table of docs/benchmarks/gdl2.md).

    python scripts/bench_gdl2_engines.py                    # every sheet, markdown on stdout
    python scripts/bench_gdl2_engines.py --sheets kuhn_poker battleship --budget 5

Build: from the rules to a ready engine, the compiled engine ground and compiled afresh (no
cache; the numba kernels already loaded, as in the server's pre-started processes), the
non-ground engine and the Prolog reasoner (translation, load and its table probe).

Rate: the same (state, joint move) pairs for every engine, the states of seeded random matches
(``rng.choice`` over each role's legal moves in role order, as a referee draws them), at most
``--pairs`` of them; each pair asked for every role's percepts in role order, as a referee asks
them after a step.  An engine answers until ``--budget`` seconds have passed (at least one
pair); the rate is role queries per second.  The fast engines read every role's percepts of a
pair at once and answer the other roles from that, which the rate includes.  Every answer of
the fast engines is checked against Prolog's on the pairs Prolog answered.

Times are this process's CPU seconds (``time.process_time``; every engine runs in it, Prolog
through pyswip too): on the shared 2-core machine wall time measured the other processes' load
(the same sheet's rate moved 3x between two runs).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.engine import load_engine  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

GDL2 = ROOT.parent / "shared" / "corpus" / "gdl2"


def pairs_of(sm, count: int) -> list:
    """(state, joint move) of seeded random matches on ``sm``, ``count`` at most."""
    out, seed = [], 0
    while len(out) < count and seed < 100:
        rng, state = random.Random(seed), sm.initial_state()
        while len(out) < count and not sm.is_terminal(state):
            joint = tuple(rng.choice(sm.legal_moves(state, r)) for r in range(len(sm.roles)))
            out.append((state, joint))
            state = sm.next_state(state, joint)
        seed += 1
    return out


def rate(sm, pairs: list, budget: float) -> tuple:
    """(role queries per second, the answers: per pair, every role's percepts)."""
    answers = []
    t0 = time.process_time()
    for state, joint in pairs:
        answers.append([sm.sees(state, joint, r) for r in range(len(sm.roles))])
        if time.process_time() - t0 > budget:
            break
    return len(answers) * len(sm.roles) / max(time.process_time() - t0, 1e-9), answers


def timed(build):
    t0 = time.process_time()
    sm = build()
    return sm, time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sheets", nargs="*", help="sheet names (default: every sheet of the corpus)")
    ap.add_argument("--pairs", type=int, default=200, help="(state, joint move) pairs per sheet")
    ap.add_argument("--budget", type=float, default=20.0, help="CPU seconds of queries per engine and sheet")
    args = ap.parse_args()
    if not GDL2.is_dir():
        sys.exit(f"no GDL-II corpus at {GDL2} (../shared beside the clone)")
    names = args.sheets or sorted(p.stem for p in GDL2.glob("*.kif"))
    # numba's kernels loaded (every one a query here calls) before anything is timed
    warm = read_rules_file(GDL2 / "rock_paper_scissors.kif")
    for engine in ("compiled", "nonground"):
        sm = load_engine(warm, engine=engine, use_cache=False)
        rate(sm, pairs_of(sm, 1), 1.0)
    rows = []
    for name in names:
        desc = read_rules_file(GDL2 / f"{name}.kif")
        compiled, t_compiled = timed(lambda: load_engine(desc, engine="compiled", use_cache=False))
        nonground, t_nonground = timed(lambda: load_engine(desc, engine="nonground"))
        prolog, t_prolog = timed(lambda: PrologReasoner(desc))
        pairs = pairs_of(compiled, args.pairs)
        r_prolog, ref = rate(prolog, pairs, args.budget)
        r_compiled, got_c = rate(compiled, pairs, args.budget)
        r_nonground, got_n = rate(nonground, pairs, args.budget)
        for got, what in ((got_c, "compiled"), (got_n, "non-ground")):
            k = min(len(got), len(ref))
            if got[:k] != ref[:k]:
                sys.exit(f"{name}: the {what} engine's percepts differ from Prolog's")
        prolog.close()
        rows.append((name, len(desc.roles), len(pairs), t_compiled, t_nonground, t_prolog,
                     r_compiled, r_nonground, r_prolog))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print("| sheet | roles | pairs | build compiled (s) | build non-ground (s) | build Prolog (s) "
          "| sees/s compiled | sees/s non-ground | sees/s Prolog | compiled / Prolog |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, nr, np_, tc, tn, tp, rc, rn, rp in rows:
        print(f"| {name} | {nr} | {np_} | {tc:.2f} | {tn:.2f} | {tp:.2f} | {rc:,.0f} | {rn:,.0f} | "
              f"{rp:,.1f} | {rc / rp:,.1f}x |")


if __name__ == "__main__":
    main()
