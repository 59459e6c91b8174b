#!/usr/bin/env python3
"""Champion tuning (spec 3.3: rave, grave, exploration_factor are starting values, to be
confirmed by round-robin): variants of the champion against plain UCT at equal
simulations, sides alternating.  Prints one line per variant.

    python scripts/bench_search_tune.py --game connectFour --n 20 --sims 1000
    python scripts/bench_search_tune.py --game breakthrough --n 40 --seconds 0.05   # equal time
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_search import baseline, play_game, score_ci  # noqa: E402
from agent.engine import load_engine  # noqa: E402
from agent.persona import load_persona  # noqa: E402
from agent.search import item_seed  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

VARIANTS = {
    "spec": {},
    "rave50": {"rave": 50},
    "rave0": {"rave": 0, "grave": 0},
    "eps0": {"epsilon": 0.0},
    "grave0": {"grave": 0},
    "c80": {"exploration_factor": 80},
    "c20": {"exploration_factor": 20},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="connectFour")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--seconds", type=float, help="equal time per move instead of equal simulations")
    ap.add_argument("--opponent", default="uct")
    ap.add_argument("--set", nargs="*", default=[], help="extra variant as k=v,k=v")
    args = ap.parse_args(argv)
    eng = load_engine(read_rules_file(ROOT / "games" / f"{args.game}.kif"), engine="compiled")
    champion = load_persona("champion")
    opp = baseline(args.opponent) if args.opponent in ("flat", "uct") else load_persona(args.opponent)
    variants = {k: VARIANTS[k] for k in args.variants}
    for spec in args.set:
        variants[spec] = {k: (float(v) if "." in v else int(v)) for k, v in (kv.split("=") for kv in spec.split(","))}
    for name, changes in variants.items():
        p = champion.replace(**changes)
        scores = []
        for i in range(args.n):
            players = [None, None]
            players[i % 2] = (p, True)
            players[1 - i % 2] = (opp, args.opponent not in ("flat", "uct"))
            mode, budget = ("time", args.seconds) if args.seconds else ("sims", args.sims)
            res = play_game(eng, players, mode, budget, item_seed(7, f"{args.game}|{i}"))
            me, other = res["goals"][i % 2], res["goals"][1 - i % 2]
            scores.append(1.0 if me > other else 0.5 if me == other else 0.0)
        m, lo, hi = score_ci(scores)
        at = f"{args.seconds:g} s a move" if args.seconds else f"{args.sims} simulations"
        print(f"{args.game} {name:<12} vs {args.opponent} at {at}: {m:.3f} [{lo:.3f}, {hi:.3f}] over {args.n}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
