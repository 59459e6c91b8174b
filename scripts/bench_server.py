"""Latency of the protocol server, idle and under CPU load, and where chess moves come from.

Measures what the reply margin and the tests' timing limits are set from:

* INFO latency (a manager's presence check, sent every 0.2 s while matches run);
* PLAY reply time against the play clock (1 s and 2 s clocks): how much of the clock we use
  and how much is left when the reply reaches the manager;
* ``--chess``: a chess match on the Prolog reasoner (chess does not ground within budget),
  counting how each move was chosen: searched, the player's best so far, random, forced.

Load: ``--load N`` runs N ``yes > /dev/null`` processes beside the server (killed at the end).
Results are kept per phase in ``--out`` (JSON): an interrupted run resumes where it stopped.

    python scripts/bench_server.py --phases idle,load --out docs/benchmarks/server.json \
        --report docs/benchmarks/server.md
    python scripts/bench_server.py --phases chess --out chess.json   # chess moves only
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from gamemanager import ServerProcess  # noqa: E402  (the tests' manager speaks ggp-base's bytes)

SHARED = ROOT.parent / "shared"
GAMES = [("ticTacToe", ROOT / "games" / "ticTacToe.kif"), ("connectFour", ROOT / "games" / "connectFour.kif")]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def summary(xs) -> dict:
    return {"n": len(xs), "median": round(statistics.median(xs), 4), "p90": round(pct(xs, 0.9), 4),
            "p99": round(pct(xs, 0.99), 4), "max": round(max(xs), 4)} if xs else {"n": 0}


async def latency_phase(server, matches: int, play_clocks, progress, task) -> dict:
    info: list = []
    plays: dict = {c: [] for c in play_clocks}
    errors: list = []

    async def pinger(stop):
        gm = server.manager("raw")
        while not stop.is_set():
            t0 = time.monotonic()
            await gm.info()
            info.append(time.monotonic() - t0)
            await asyncio.sleep(0.2)

    async def one(i, clock):
        name, path = GAMES[i % len(GAMES)]
        gm = server.manager("raw", seed=100 + i)
        res = await gm.play_match(f"bench.{name}.{clock}.{i}.{time.time_ns()}", path.read_text(),
                                  our_role=i % 2, start_clock=4, play_clock=clock, abort_after=12)
        plays[clock].extend(res.latencies)
        errors.extend(res.errors)
        progress.advance(task)

    stop = asyncio.Event()
    ping = asyncio.ensure_future(pinger(stop))
    for clock in play_clocks:
        for batch in range(0, matches, 2):  # two matches at a time, as a manager would run them
            await asyncio.gather(*(one(i, clock) for i in range(batch, min(matches, batch + 2))))
    stop.set()
    await ping
    return {"info": summary(info),
            "play": {str(c): {**summary(v), "clock": c, "min_left": round(c - max(v), 4) if v else None}
                     for c, v in plays.items()},
            "errors": [list(e) for e in errors]}


async def chess_phase(server, play_clock: float, plies: int) -> dict:
    path = SHARED / "corpus" / "games" / "base" / "games" / "chess" / "v0" / "chess.kif"
    if not path.exists():
        return {"skipped": "../shared (the corpus) is not beside this clone"}
    mid = f"bench.chess.{time.time_ns()}"
    gm = server.manager("raw", seed=5)
    res = await gm.play_match(mid, path.read_text(), our_role=0, start_clock=10, play_clock=play_clock,
                              abort_after=plies)
    record = json.loads((server.log_dir / f"{mid}.json").read_text())
    kinds: dict = {}
    for d in record.get("x-decisions", []):
        if not d.get("fallback"):
            kind = "forced" if d.get("search") == "forced" else "searched"
        else:
            kind = {"best so far": "best so far"}.get(d.get("fallback_move"), "random")
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"play_clock": play_clock, "moves": kinds, "errors": [list(e) for e in res.errors],
            "engine": record.get("x-engine")}


def start_load(n: int) -> list:
    return [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]


def stop_load(procs) -> None:
    for p in procs:
        p.kill()
        p.wait()


def write_report(results: dict, path: Path, command: str) -> None:
    lines = ["# Protocol server latency", "",
             "What the reply margin (`serve --margin`, default 0.5 s) and the server tests' timing",
             "limits are set from. 2-core machine shared with other work; \"load\" adds two",
             "`yes > /dev/null` processes. Matches are played by the tests' ggp-base-like manager",
             "over raw HTTP/1.0 on 127.0.0.1, two at a time, 12 plies each, an INFO ping every 0.2 s.", "",
             f"Command: `{command}`", "",
             "| phase (load average, start-end) | INFO median s | INFO p99 s | INFO max s | play clock s | replies | reply median s | reply p99 s | reply max s | least left of the clock s | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    # Earlier runs with other settings are kept under a key of their own (e.g. "margin-0.3").
    runs = [("", results)] + [(f"{k}: ", v) for k, v in results.items() if isinstance(v, dict) and "idle" in v]
    for prefix, run in runs:
        for phase in ("idle", "load"):
            r = run.get(phase)
            if not r:
                continue
            label = prefix + {"idle": "no added load", "load": "+ yes processes"}[phase]
            for clock, p in r["play"].items():
                la = r.get("loadavg", ["?", "?"])
                lines.append(f"| {label} ({la[0]}-{la[1]}) | {r['info'].get('median')} | {r['info'].get('p99')} | {r['info'].get('max')} "
                             f"| {clock} | {p['n']} | {p.get('median')} | {p.get('p99')} | {p.get('max')} "
                             f"| {p.get('min_left')} | {len(r['errors'])} |")
    chess = [(k, v) for k, v in results.items() if k.startswith("chess")]
    chess += [(f"{k}: chess", v.get("chess")) for k, v in results.items() if isinstance(v, dict) and "idle" in v]
    for key, c in chess:
        if c and "moves" in c:
            la = c.get("loadavg", ["?", "?"])
            lines += ["", f"Chess ({key}), Prolog reasoner, play clock {c['play_clock']} s, load average "
                      f"{la[0]}-{la[1]}: moves by origin {json.dumps(c['moves'])}; manager errors {len(c['errors'])}."]
    lines += ["", "Chess keys: `chess-before` is the server before the best-so-far fallback (every late move",
              "random); `chess` and `chess-final` are this server with the search cut into slices (the",
              "second with the final code, at lower load); `chess-with-anytime-search`",
              "adds a player whose search reports its best move through `on_best` (an anytime search). Chess runs on",
              "Prolog, and on this machine at load average 10-30 the player's own next state and legal",
              "moves took much of a 5 s clock, and a sliced search on Prolog overran its slices: it rarely",
              "reported anything before the deadline;",
              "the one manager error (`IL noop`) is most likely a move guessed from the previous state's",
              "legal moves when neither the referee nor the player had computed the new state in time",
              "(that run's record was not kept). `chess-with-anytime-search-2` is the same at load",
              "average 9: 7 of our 10 moves searched, 2 the search's best so far, 1 random, no error."]
    lines += ["", "Replies include forced moves (our noop turns), sent at once: the medians mix both kinds;",
              "the p99 and max are the replies that waited for the deadline."]
    lines += ["", "Reading: the reply leaves at the play clock minus the margin (0.5 s, or 5 % of long",
              "clocks), minus what the loop needs to wake up and write; \"least left\" is what remained",
              "of the clock when the slowest reply reached the manager. ggp-base and Dresden accept a",
              "PLAY reply until the play clock + 1 s, Tiltyard + 5 s (`../shared/docs/ggp-facts.md` 3.1),",
              "so the margin only has to cover the network beyond what is measured here.", ""]
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(path, "\n".join(lines).encode())


def main(argv=None) -> int:
    from rich.progress import Progress

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phases", default="idle,load", help="comma-separated: idle, load, chess")
    ap.add_argument("--matches", type=int, default=6, help="matches per play clock per phase")
    ap.add_argument("--load", type=int, default=2, help="yes processes in the load phase")
    ap.add_argument("--chess-clock", type=float, default=5.0)
    ap.add_argument("--chess-plies", type=int, default=20)
    ap.add_argument("--chess-key", default="chess", help="result key for the chess phase (e.g. chess-before)")
    ap.add_argument("--out", type=Path, required=True, help="JSON results, kept between runs (resume)")
    ap.add_argument("--report", type=Path, default=None, help="write the Markdown report here")
    args = ap.parse_args(argv)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    command = "python " + " ".join([f"scripts/{Path(__file__).name}"] + (argv or sys.argv[1:]))
    from agent.matchlog import atomic_write_bytes
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp) / "match_logs", "--seed", "1") as server, \
            Progress() as progress:
        for phase in [p for p in args.phases.split(",") if p]:
            key = args.chess_key if phase == "chess" else phase
            if key in results:
                progress.console.print(f"{key}: done before, kept")
                continue
            load = start_load(args.load) if phase == "load" else []
            load_before = os.getloadavg()[0]
            try:
                if phase == "chess":
                    task = progress.add_task("chess", total=None)
                    results[key] = asyncio.run(chess_phase(server, args.chess_clock, args.chess_plies))
                else:
                    clocks = (1, 2)
                    task = progress.add_task(phase, total=args.matches * len(clocks))
                    results[key] = asyncio.run(latency_phase(server, args.matches, clocks, progress, task))
                progress.update(task, completed=progress.tasks[task].total or 1, total=progress.tasks[task].total or 1)
                results[key]["loadavg"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
            finally:
                stop_load(load)
            atomic_write_bytes(args.out, json.dumps(results, indent=1).encode())
    if args.report:
        write_report(results, args.report, command)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
