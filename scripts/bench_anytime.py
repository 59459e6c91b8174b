#!/usr/bin/env python3
"""Anytime search and search speed, measured through the player's real path.

Part 1 (``anytime``): games the player runs on the Prolog reasoner (a playout takes longer
than the clock), ``Player.decide`` with a play clock along a seeded random match: how far
past its deadline the answer comes, how many simulations finished, how soon the first
best-so-far move was reported (``on_best``), how often not one simulation finished (then the
one-ply look-ahead chose).

Part 2 (``speed``): simulations per second of the compiled driver from the initial state
(``agent.search.search`` with a fixed limit), for a thesis persona and a utility persona;
``--label`` names the code measured, so runs of two versions sit side by side.

Results go to a JSON-lines file (one line per measurement; finished measurements are
skipped when rerun, so an interrupted run resumes), then the Markdown report.

    python scripts/bench_anytime.py                        # both parts, then the report
    python scripts/bench_anytime.py --part speed --label before
    python scripts/bench_anytime.py --report-only
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path

from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.engine import load_engine  # noqa: E402
from agent.persona import load_persona  # noqa: E402
from agent.search import SearchSettings, search  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)
from gdl.terms import render_spaced  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "games" / "base" / "games"
RESULTS = ROOT / "docs" / "benchmarks" / "anytime-results.jsonl"
REPORT = ROOT / "docs" / "benchmarks" / "anytime.md"
SLOW_GAMES = ["chess", "skirmish"]
SPEED_GAMES = ["ticTacToe", "connectFour", "breakthrough", "nineBoardTicTacToe"]
SPEED_PERSONAS = ["champion", "sanguine", "survivor"]


def rules_text(path: Path) -> str:
    """The rule sheet as a START message carries it: one list, comments gone."""
    return "(" + re.sub(r";[^\n]*", "", path.read_text(errors="replace")) + ")"


def anytime(game: str, clock: float, decisions: int, seed: int) -> dict:
    from agent.player import Player
    path = CORPUS / game / "v0" / f"{game}.kif"
    desc = read_rules_file(path)
    p = Player(rules_text(path), render_spaced(desc.roles[0]), clock, seed=seed, use_engine=False)
    p.prepare()
    p.load()
    rnd = random.Random(seed)
    rows = []
    while len(rows) < decisions and not p.is_terminal():
        first = []
        t0 = time.monotonic()
        d = p.decide(t0 + clock, on_best=lambda m, n: first.append(time.monotonic() - t0) if not first else None)
        elapsed = time.monotonic() - t0
        if len(d["legal"]) > 1:
            rows.append({"over": elapsed - clock, "sims": d["simulations"] or 0,
                         "first": first[0] if first else None})
        joint = [d["move"]] + [render_spaced(rnd.choice(p.sm.legal_moves(p.state, r)))
                               for r in range(1, len(desc.roles))]
        p.observe(joint)
    p.close()
    over = [r["over"] for r in rows]
    firsts = [r["first"] for r in rows if r["first"] is not None]
    return {"decisions": len(rows), "over_max": max(over), "over_median": statistics.median(over),
            "sims_median": statistics.median(r["sims"] for r in rows),
            "no_simulation": sum(r["sims"] == 0 for r in rows),
            "first_report_median": statistics.median(firsts) if firsts else None,
            "reported": len(firsts)}


def speed(game: str, persona_name: str, limit: int) -> dict:
    eng = load_engine(read_rules_file(ROOT / "games" / f"{game}.kif"), engine="compiled")
    p = load_persona(persona_name)
    s0 = eng.initial_state()
    search(eng, s0, 0, p, SearchSettings(seed=1, limit=100))          # warm-up (numba, calibration)
    t0 = time.perf_counter()
    r = search(eng, s0, 0, p, SearchSettings(seed=1, limit=limit))
    return {"sims_per_s": r.simulations / (time.perf_counter() - t0)}


def run(args) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    for rec in benchrows.read(out):
        done.add(tuple(rec["key"]))
    jobs = []
    if args.part in ("all", "anytime"):
        jobs += [("anytime", g, c) for g in args.games for c in args.clocks]
    if args.part in ("all", "speed"):
        jobs += [("speed", args.label, g, p) for g in SPEED_GAMES for p in SPEED_PERSONAS]
    jobs = [j for j in jobs if tuple(j) not in done]
    with benchrows.append(out) as f, Progress() as bar:
        task = bar.add_task("measuring", total=len(jobs))
        for job in jobs:
            bar.update(task, description=" ".join(map(str, job)))
            if job[0] == "anytime":
                res = anytime(job[1], job[2], args.decisions, args.seed)
            else:
                res = speed(job[2], job[3], args.limit)
            f.write(json.dumps({"key": list(job), "load": os.getloadavg()[0], **res}) + "\n")
            f.flush()
            bar.advance(task)


def report(args) -> str:
    recs = benchrows.read(args.out)
    lines = ["# Anytime search and search speed", "",
             "Measured through the real paths (`Player.decide` on the Prolog reasoner; "
             "`agent.search.search` on the compiled engine). Commands (the first on a checkout "
             "of the older commit, writing to this results file):", "",
             "```", 'python scripts/bench_anytime.py --part speed --label "before: 13cf51a"',
             'python scripts/bench_anytime.py --part speed --label "after: one leaf evaluator"',
             "python scripts/bench_anytime.py --part anytime --decisions 8 --clocks 1 3", "```", "",
             f"Machine: {platform.processor() or platform.machine()}, Python "
             f"{platform.python_version()}, a 2-core host shared with other work; `load` is the "
             "1-minute load average when the row was measured (figures at load 20+ are slow "
             "by a factor of several).", "",
             "## Answering by the deadline on a slow engine", "",
             "Player on the Prolog reasoner, our role first, a seeded random opponent, one row "
             "per (game, play clock). *Over* = answer time minus the clock (the server subtracts "
             "its own margin before it gives the player a deadline; a single reasoner query is "
             "what a deadline can overrun). *First report* = time until `on_best` first named "
             "a move.", "",
             "| game | clock (s) | decisions | over: median / max (s) | simulations (median) | "
             "decisions with no finished simulation | first report, median (s) | load |",
             "|---|---|---|---|---|---|---|---|"]
    for r in recs:
        k = r["key"]
        if k[0] != "anytime":
            continue
        first = "—" if r["first_report_median"] is None else f"{r['first_report_median']:.2f}"
        lines.append(f"| {k[1]} | {k[2]} | {r['decisions']} | {r['over_median']:.2f} / "
                     f"{r['over_max']:.2f} | {r['sims_median']:g} | {r['no_simulation']} | "
                     f"{first} | {r['load']:.0f} |")
    lines += ["", "## Search speed of the compiled driver", "",
              "Simulations per second from the initial state (one search of "
              f"{args.limit} simulations after a warm-up), per code version (`label`).", "",
              "| label | game | persona | simulations/s | load |", "|---|---|---|---|---|"]
    for r in recs:
        k = r["key"]
        if k[0] == "speed":
            lines.append(f"| {k[1]} | {k[2]} | {k[3]} | {r['sims_per_s']:,.0f} | {r['load']:.0f} |")
    text = "\n".join(lines) + "\n"
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(Path(args.report), text.encode())
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["all", "anytime", "speed"], default="all")
    ap.add_argument("--games", nargs="+", default=SLOW_GAMES)
    ap.add_argument("--clocks", nargs="+", type=float, default=[1.0, 3.0])
    ap.add_argument("--decisions", type=int, default=8)
    ap.add_argument("--limit", type=int, default=3000)
    ap.add_argument("--label", default="current")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        if args.part != "speed" and not CORPUS.is_dir():
            sys.exit(f"the corpus is not beside this clone ({CORPUS.parent.parent.parent}); "
                     "use --part speed")
        run(args)
    print(report(args))


if __name__ == "__main__":
    main()
