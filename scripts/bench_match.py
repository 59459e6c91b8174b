#!/usr/bin/env python3
"""Match runner benchmark: what refereeing costs per step, with players that answer at once.

Random players (uniform legal moves from the referee's list) play whole matches through
``agent.match.runner.run_match``, the real path: referee process (next state, every
role's legal moves, terminal, goals), the record written atomically after every step, the
events.  Measured per game: the referee's start-up (rules to the first state) and the wall
time of each step (from one ``move`` event to the next), so the figure is the delay a person
or a persona waits on top of its own thinking.

    python scripts/bench_match.py                      # default games, then the report
    python scripts/bench_match.py --games ticTacToe --matches 2 --out m.jsonl --report m.md
    python scripts/bench_match.py --referee auto        # the exact compiled engine refereeing
    python scripts/bench_match.py --report-only

Results go to docs/benchmarks/match-results.jsonl, one line per game, as each finishes
(an interrupted run keeps the games done; ``--resume`` skips them).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)

GAMES = ["ticTacToe", "connectFour", "breakthrough", "nineBoardTicTacToe", "checkers", "chess"]
RESULTS = ROOT / "docs" / "benchmarks" / "match-results.jsonl"
REPORT = ROOT / "docs" / "benchmarks" / "match.md"


def rules_path(key: str) -> Path:
    local = ROOT / "games" / f"{key}.kif"
    if local.is_file():
        return local
    d = SHARED / "corpus" / "games" / "base" / "games" / key
    latest = max(d.glob("v*"), key=lambda p: int(p.name[1:]))
    return latest / f"{key}.kif"


async def one_game(key: str, matches: int, max_plies: int, seed: int, referee: str) -> dict:
    from agent.match.players import RandomPlayer
    from agent.match.runner import run_match
    path = rules_path(key)
    text = path.read_text(encoding="utf-8")
    opens, steps, lengths, completed, engines = [], [], [], 0, set()
    with tempfile.TemporaryDirectory() as out:
        for k in range(matches):
            stamps = []
            t0 = time.perf_counter()

            def on_event(ev):
                stamps.append((ev["type"], time.perf_counter()))

            players = [RandomPlayer(f"random{i}", seed * 100 + k * 10 + i) for i in range(_roles(text))]
            rec = await run_match(text, players, start_clock=5, play_clock=5, out_dir=out, seed=seed + k,
                                  on_event=on_event, max_plies=max_plies, match_id=f"bench.{key}.{k}",
                                  referee=referee)
            engines.add(rec["x-referee"]["engine"])
            opens.append(stamps[0][1] - t0)
            times = [t for kind, t in stamps if kind in ("start", "move")]
            steps += [b - a for a, b in zip(times, times[1:])]
            lengths.append(len(rec["moves"]))
            completed += bool(rec["isCompleted"])
    steps.sort()
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path("../shared") / path.relative_to(SHARED)
    return {"game": key, "referee": referee, "engines": sorted(engines), "rules": str(shown),
            "matches": matches, "completed": completed, "steps": len(steps),
            "mean_match_steps": round(statistics.fmean(lengths), 1),
            "open_seconds_median": round(statistics.median(opens), 3),
            "step_ms_median": round(1000 * statistics.median(steps), 2),
            "step_ms_p95": round(1000 * steps[int(0.95 * (len(steps) - 1))], 2),
            "step_ms_max": round(1000 * steps[-1], 2)}


def _roles(text: str) -> int:
    from agent.match.rules import read_rules
    return len(read_rules(text)[1].roles)


def report(rows: list[dict], command: str, path: Path) -> None:
    lines = ["# Match runner: refereeing cost per step", "",
             "Random players answering at once play whole matches through `run_match` (referee "
             "process: `standby` is the Prolog reasoner unless it runs out of limits, `auto` the exact compiled engine when it builds, every role's legal moves each step, the record "
             "written atomically after every step). A step is the wall time from one `move` "
             "event to the next: the delay a player waits on top of its own thinking. Matches "
             "longer than the step cap are aborted (counted in steps, not in completed).", "",
             f"Command: `{command}`", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
             f"{platform.python_version()}.", "",
             "| game | referee (engine) | matches (completed) | steps | mean steps/match | referee start (median s) "
             "| step median ms | step p95 ms | step max ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        engine = f"{r.get('referee', 'standby')} ({', '.join(r.get('engines', ['prolog']))})"
        lines.append(f"| {r['game']} | {engine} | {r['matches']} ({r['completed']}) | {r['steps']} | {r['mean_match_steps']} "
                     f"| {r['open_seconds_median']} | {r['step_ms_median']} | {r['step_ms_p95']} | {r['step_ms_max']} |")
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", nargs="+", default=GAMES)
    ap.add_argument("--matches", type=int, default=5)
    ap.add_argument("--max-plies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--referee", choices=("standby", "auto", "prolog"), default="standby")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--report", type=Path, default=REPORT)
    ap.add_argument("--resume", action="store_true", help="skip games already in --out")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    from rich.progress import Progress

    done = {}
    if args.resume or args.report_only:
        done = {(r["game"], r.get("referee", "standby")): r for r in benchrows.read(args.out) if r}
    command = ("python scripts/bench_match.py " + " ".join(sys.argv[1:])).strip()
    if not args.report_only:
        todo = [g for g in args.games if (g, args.referee) not in done]
        with Progress() as progress:
            task = progress.add_task("games", total=len(todo))
            for g in todo:
                progress.update(task, description=g)
                row = asyncio.run(one_game(g, args.matches, args.max_plies, args.seed, args.referee))
                row["command"] = command
                done[(g, args.referee)] = row
                benchrows.write(args.out, list(done.values()))
                progress.advance(task)
    rows = sorted(done.values(), key=lambda r: (r.get("referee", "standby") != "standby",
                                                 GAMES.index(r["game"]) if r["game"] in GAMES else 99))
    commands = sorted({r.get("command", command) for r in rows})
    report(rows, "; ".join(commands), args.report)
    print(args.report.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
