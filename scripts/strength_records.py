#!/usr/bin/env python3
"""Per-match detail for docs/benchmarks/strength.md: what our search did in each match played
under ggp-base's GameServer (../shared/tools/sancho/), read from our server's records.

    python scripts/strength_records.py RESULTS_DIR OUR_LOG_DIR [--sancho-log FILE] [--exclude ID ...]

RESULTS_DIR: the GameServer's Match JSON files (match.sh's OUT/results); OUR_LOG_DIR: the
records our server wrote (``serve --log-dir``), matched by match id.  One Markdown row per
match: our role, the winner, plies, the moves our search decided, the moves the server sent
for us as a fallback (ply: reason), and the medians per searched move of simulations,
playouts, transpositions, the root's visits (the move's simulations plus those of the tree
it reused: earlier moves and pondering) and seconds; then the opponent's "MCTS iterations last turn" (Sancho
logs it) as median and quartiles, when its log is given.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=0):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def rows(results: Path, ours: Path, exclude: set) -> list:
    out = []
    for f in sorted(results.glob("*.json"), key=lambda p: [int(t) if t.isdigit() else t for t in p.stem.split(".")]):
        if f.stem in exclude:
            continue
        gm = json.loads(f.read_text())
        rec_path = ours / f"{gm['matchId']}.json"
        if not rec_path.exists():
            continue
        rec = json.loads(rec_path.read_text())
        names = gm.get("playerNamesFromHost") or []
        goals = gm.get("goalValues") or []
        winner = names[goals.index(max(goals))] if goals and goals.count(max(goals)) == 1 else "draw"
        searched = [d for d in rec.get("x-decisions", []) if d.get("search") == "agent.search" and not d.get("fallback")]
        fallbacks = [d for d in rec.get("x-decisions", []) if d.get("fallback")]
        out.append({
            "match": gm["matchId"], "role": rec.get("x-role"), "winner": winner,
            "plies": len(gm.get("moves") or []), "searched": len(searched),
            "fallbacks": ", ".join(f"{d['ply']}: {d.get('fallback_reason') or 'fallback'}" for d in fallbacks) or "none",
            "sims": median(d.get("simulations") for d in searched),
            "playouts": median(d.get("playouts") for d in searched),
            "transpositions": median(d.get("transpositions") for d in searched),
            "evaluated": median(d.get("evaluated") for d in searched),   # playouts the evaluation ended
            "extended": median(d.get("extended") for d in searched),     # of them, run on to a quiet state
            # the root's visits: this move's simulations, plus what a reused (and pondered) tree brought
            "root": median(sum((d.get("visits") or {}).values()) for d in searched),
            "seconds": median(d.get("elapsed") for d in searched),
            "rss": (rec.get("x-peak-rss-mb") or {}).get("player"),
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("ours", type=Path)
    ap.add_argument("--sancho-log", type=Path)
    ap.add_argument("--exclude", nargs="*", default=[], help="match ids left out (say why in the report)")
    args = ap.parse_args()
    table = rows(args.results, args.ours, set(args.exclude))
    print("| match | we play | winner | plies | searched moves | fallback moves (ply: reason) | "
          "simulations / move | playouts / move | of them evaluated | extended to a quiet state | transpositions / move | root visits / move | "
          "s / move | player peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['match']} | {r['role']} | {r['winner']} | {r['plies']} | {r['searched']} | {r['fallbacks']} | "
              f"{fmt(r['sims'])} | {fmt(r['playouts'])} | {fmt(r['evaluated'])} | {fmt(r['extended'])} | {fmt(r['transpositions'])} | "
              f"{fmt(r['root'])} | "
              f"{fmt(r['seconds'], 2)} | "
              f"{r['rss'] if r['rss'] is not None else '-'} |")
    if args.sancho_log and args.sancho_log.exists():
        its = [int(m.group(1)) for m in re.finditer(r"MCTS iterations last turn = (\d+)", args.sancho_log.read_text())]
        its = [x for x in its if x > 0]
        if its:
            q = statistics.quantiles(its, n=4)
            print(f"\nOpponent's MCTS iterations a turn (its log, turns with any): median {fmt(statistics.median(its))}, "
                  f"quartiles {fmt(q[0])}-{fmt(q[2])}, {len(its)} turns.")


if __name__ == "__main__":
    main()
