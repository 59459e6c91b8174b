#!/usr/bin/env python3
"""Engine benchmark: random playouts per second of the compiled engine (gdl-perf method,
agent.bench), this version against an earlier one in the same sitting, with the Prolog
reasoner beside them; build time from rules to a ready compiled engine, cached reload time,
and peak memory; one process per game, version and run.

    python scripts/bench_engines.py --baseline ../previous    # a checkout of the earlier version
    python scripts/bench_engines.py --games ticTacToe --seconds 5 --warmup 1 --out /tmp/e.jsonl --report /tmp/e.md
    python scripts/bench_engines.py --report-only         # rebuild the report from the results

The earlier version is any checkout of this repository (``git worktree add ../previous
30fbddd``): its own ``agent`` package runs in its own process.  The two versions of a game
take turns (this, earlier, earlier, this, ...) for ``--runs`` counted runs each, so a change
in the machine's load hits both alike; the ratio is taken run by run.  Each run is a fresh
process (the first builds the engine, the others reload it from a cache kept for the game and
version): a process's memory layout alone moved the same code's rate by 20-30 %, so runs in
one long-lived process measured its layout, not the code (scripts/ab_playouts.py does the
same).  Rules: ../shared/corpus/games/base/games/<key>/<latest vN>/<key>.kif.
The cached reload is timed in a process whose numba kernels are already loaded, as in the
server's pre-started player processes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)
SHARED = ROOT.parent / "shared"

GAMES = ["ticTacToe", "connectFour", "breakthrough", "checkers", "nineBoardTicTacToe", "skirmish",
         "chess", "reversi", "hex", "pentago"]
# ../shared/docs/peer-figures.md, 2026-11-24, measured side by side on a machine like ours
# (same method): ggplib's playouts/s, 30fbddd's playouts/s, and the ratio of 30fbddd to
# ggplib as published. Where 30fbddd refused a game (skirmish) there is no ratio to carry
# over, so this sitting's host speed is estimated instead as the median over the other games
# of 30fbddd here / 30fbddd there (``host_factor``).
PEER = {
    "ticTacToe": (502_000, 385_000, 0.77), "connectFour": (151_000, 125_000, 0.83),
    "breakthrough": (30_100, 9_870, 0.33), "nineBoardTicTacToe": (31_900, 25_900, 0.81),
    "reversi": (2_050, 990, 0.48), "hex": (2_410, 1_600, 0.66), "pentago": (19_200, 20_600, 1.07),
    "checkers": (8_300, 1_570, 0.19), "skirmish": (1_500, None, None), "chess": (None, None, None),
}
RESULTS = ROOT / "docs" / "benchmarks" / "engine-results.jsonl"
REPORT = ROOT / "docs" / "benchmarks" / "engine.md"


def rules_path(key: str) -> Path:
    d = SHARED / "corpus" / "games" / "base" / "games" / key
    latest = max(d.glob("v*"), key=lambda p: int(p.name[1:]))
    return latest / f"{key}.kif"


def serve_game(key: str, root: Path, seconds: float, warmup: float, budget: float,
               prolog_seconds: float, cache: str | None = None) -> None:
    """Child process: build ``key`` with the ``agent`` package of ``root`` (into ``cache``, a
    temporary folder if None), print one JSON line, then answer ``run`` (one counted run)
    and ``quit`` (Prolog figures, peak memory) lines on stdin, one JSON line each."""
    sys.path.insert(0, str(root))
    import resource

    from agent.bench import bench_engine
    from agent.engine import load_engine
    from agent.engine.ground import GroundingError
    from agent.matchtext import parse_rules_text
    from agent.server.worker import WARM_RULES
    from gdl.kif import read_rules_file

    def say(d):
        print(json.dumps(d), flush=True)

    import agent
    if Path(agent.__file__).resolve().parents[1] != root.resolve():
        raise SystemExit(f"imported {agent.__file__}, not the version in {root}")
    out = {"game": key, "rules": str(rules_path(key).relative_to(SHARED.parent))}
    desc = read_rules_file(rules_path(key))
    eng = None
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = cache or tmp
        load_engine(parse_rules_text(WARM_RULES), cache_dir=cache_dir)  # numba kernels loaded
        t0 = time.perf_counter()
        try:
            eng = load_engine(desc, engine="compiled", budget_seconds=budget, cache_dir=cache_dir)
            out["engine"] = "compiled"
        except GroundingError as e:
            out["compiled_error"] = str(e)
            # a version with the non-ground engine plays the game on it (an older version's
            # load_engine does not know the name: it would ground again, then answer Prolog)
            import importlib.util
            if importlib.util.find_spec("agent.engine.nonground") is not None:
                t0 = time.perf_counter()
                try:
                    eng = load_engine(desc, engine="nonground")
                    out["engine"] = "nonground"
                    out["build_seconds"] = round(time.perf_counter() - t0, 3)
                except GroundingError as e2:
                    out["nonground_error"] = str(e2)
        if eng is not None and out.get("engine") == "compiled":
            out["build_seconds"] = round(time.perf_counter() - t0, 3)
            out.update({k: eng.info[k] for k in ("ground_seconds", "compile_seconds", "atoms", "fluents",
                                                 "ground_rules") if k in eng.info})
            t0 = time.perf_counter()
            again = load_engine(desc, engine="compiled", cache_dir=cache_dir)
            out["cached_load_seconds"] = round(time.perf_counter() - t0, 3)
            assert again.info["source"] == "cache", again.info
        if eng is not None and warmup > 0:
            bench_engine(eng, seconds=warmup, warmup=0)
    say(out)
    for line in sys.stdin:
        if line.strip() == "run" and eng is not None:
            say(bench_engine(eng, seconds=seconds, warmup=0))
        elif line.strip() == "quit":
            break
    end = {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if prolog_seconds > 0:
        from agent.reasoner.prolog import PrologReasoner
        sm = PrologReasoner(desc)
        try:
            end["prolog"] = bench_engine(sm, seconds=prolog_seconds, warmup=min(warmup, prolog_seconds))
        except Exception as e:  # a reasoner error is a finding for the report
            end["prolog_error"] = f"{type(e).__name__}: {e}"
        sm.close()
    say(end)


class _Child:
    """One ``serve_game`` process; ``ask`` sends a line and reads the JSON answer."""

    def __init__(self, key: str, root: Path, args, cache: str, prolog: bool):
        cmd = [sys.executable, __file__, "--serve", key, "--root", str(root), "--seconds",
               str(args.seconds), "--warmup", str(args.warmup), "--budget", str(args.budget),
               "--prolog-seconds", str(args.prolog_seconds if prolog else 0), "--cache", cache]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.deadline = time.time() + args.timeout

    def read(self) -> dict:
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"exit {self.p.wait()}")
        return json.loads(line)

    def ask(self, text: str) -> dict:
        if time.time() > self.deadline:
            raise TimeoutError("per-game time limit")
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        return self.read()

    def close(self) -> None:
        try:
            self.p.kill()
        except OSError:
            pass


def measure_game(key: str, args) -> dict:
    """This version and (with --baseline) the earlier one, runs alternating, each run a
    fresh process; the first run's process of each version gives the build, reload and
    memory figures (and this version's, the Prolog reasoner's)."""
    row: dict = {"game": key, "fresh_processes": True}
    sides = [("new", ROOT)] + ([("old", Path(args.baseline))] if args.baseline else [])
    caches = {name: tempfile.TemporaryDirectory() for name, _ in sides}
    try:
        for i in range(args.runs):
            for name, root in (sides if i % 2 == 0 else sides[::-1]):
                if i and "engine" not in row[name]:
                    continue
                c = _Child(key, root, args, caches[name].name, prolog=(i == 0 and root == ROOT))
                try:
                    first = c.read()
                    if i == 0:
                        row[name] = first
                    if "engine" in first:
                        row[name].setdefault("runs", []).append(c.ask("run"))
                    end = c.ask("quit")
                    if i == 0:
                        row[name].update(end)
                finally:
                    c.close()
    except (RuntimeError, TimeoutError, ValueError) as e:
        row["error"] = f"{type(e).__name__}: {e}"
    finally:
        for d in caches.values():
            d.cleanup()
    return row


def rate(side: dict):
    runs = side.get("runs") or []
    return statistics.median(r["playouts_per_sec"] for r in runs) if runs else None


def paired_ratio(row: dict):
    """Median over runs of new/old, run by run (each pair measured back to back)."""
    a, b = (row.get("new") or {}).get("runs") or [], (row.get("old") or {}).get("runs") or []
    pairs = [x["playouts_per_sec"] / y["playouts_per_sec"] for x, y in zip(a, b) if y["playouts_per_sec"]]
    return statistics.median(pairs) if pairs else None


def cell(text: str, n: int = 80) -> str:
    """Text fit for one table cell."""
    return " ".join(str(text).split())[:n].replace("|", "/")


def fmt(x, digits=0):
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{max(digits, 1)}f}" if isinstance(x, float) else str(x)


def report(rows: list, args_text: str, baseline: str) -> str:
    lines = [
        "# Engine benchmark: the compiled engine, this version and the previous one",
        "",
        f"Command: `{args_text}`" + (f" (previous version: commit {baseline})" if baseline else ""),
        "",
        "Random playouts per second from the initial state, one core, gdl-perf method: a uniformly",
        "random legal move for every role until terminal, then the goals (`agent/bench.py`; the",
        *(["same counting as `ggp-persona bench`). This version and the previous one took turns",
           "run by run, each run a fresh process (the first of each pair alternating); figures are",
           "medians of the runs, and"]
          if rows and all(r.get("fresh_processes") for r in rows) else
          ["same counting as `ggp-persona bench`). Each game ran in two processes, this version and",
           "the previous one, taking turns run by run; figures are medians of the runs, and"]),
        "*this / previous* is the median of the run-by-run ratios. The machine (2 cores) was",
        "shared with other work, so absolute figures are low by an unknown margin and move with",
        "the load; the ratios were measured side by side. *vs ggplib*: the ratio of the previous",
        "version to ggplib measured side by side (`../shared/docs/peer-figures.md`) times",
        "*this / previous*.",
        *(["A game that does not ground within the budget is measured on the non-ground engine",
           "(`agent/engine/nonground.py`), as `load_engine` would play it; its build column says so."]
          if any((r.get("new") or {}).get("engine") == "nonground" for r in rows) else []),
        "",
        "| game | this version playouts/s (runs) | previous | this / previous | vs ggplib: previous, this | "
        "avg depth | build s (ground + compile) | cached reload s | peak RSS MB | Prolog playouts/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    factor = host_factor(rows)
    estimated = []
    for r in rows:
        new, old = r.get("new") or {}, r.get("old") or {}
        g_rate, _, g_ratio = PEER.get(r["game"], (None, None, None))
        ab = paired_ratio(r)
        runs = ", ".join(fmt(x["playouts_per_sec"]) for x in new.get("runs", []))
        if new.get("engine") == "nonground":
            build = (f"non-ground engine: {new['build_seconds']:.2f} (not compiled: "
                     f"{cell(new.get('compiled_error', ''), 60)})")
        elif "build_seconds" in new:
            build = f"{new['build_seconds']:.2f} ({new.get('ground_seconds', 0):.2f} + {new.get('compile_seconds', 0):.2f})"
        else:
            build = f"failed: {cell(new.get('compiled_error') or r.get('error', '?'))}"
        p = new.get("prolog") or {}
        prolog = fmt(p.get("playouts_per_sec"), 2) if p else cell(new.get("prolog_error", "-"), 60)
        depth = (new.get("runs") or [{}])[0].get("avg_depth") or p.get("avg_depth")
        vs = "-" if g_ratio is None else (f"{g_ratio:.2f}, " + (f"**{g_ratio * ab:.2f}**" if ab else "-"))
        if g_ratio is None and g_rate and factor and rate(new) and new.get("engine") != "nonground":
            vs = f"-, {rate(new) / factor / g_rate:.2f} (estimated)"
            estimated.append(r["game"])
        lines.append(
            f"| {r['game']} | {fmt(rate(new))}" + (f" ({runs})" if runs else "") +
            f" | {fmt(rate(old))} | {fmt(ab, 2) if ab else '-'} | {vs} | {fmt(depth, 1)} | {build} | "
            f"{fmt(new.get('cached_load_seconds'), 3)} | {new.get('peak_rss_mb', '-')} | {prolog} |")
    if estimated:
        lines += ["", f"*(estimated)*: {', '.join(estimated)} has no ratio to carry over (the previous "
                  "version refused it), so its rate here is scaled by this sitting's host speed, "
                  f"{factor:.2f}x the peer host's (the median over the other games of the previous "
                  "version's rate here against its rate there), and set beside ggplib's rate there: "
                  "an estimate, not a side-by-side measurement."]
    lines += ["", f"Machine: {platform.machine()}, Python {platform.python_version()}, "
                  f"{os.cpu_count()} cores. Results: `{RESULTS.relative_to(ROOT)}`.", ""]
    return "\n".join(lines)


def host_factor(rows) -> float | None:
    """This sitting's host speed against the peer host's: the median over games of the
    previous version's playouts/s here over its playouts/s there (``PEER``)."""
    there = {game: previous for game, (_, previous, _) in PEER.items() if previous}
    ratios = [rate(r.get("old") or {}) / there[r["game"]] for r in rows
              if r["game"] in there and rate(r.get("old") or {})]
    return statistics.median(ratios) if ratios else None


def atomic_write(path: Path, text: str) -> None:
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(path, text.encode("utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", nargs="+", default=GAMES)
    ap.add_argument("--baseline", help="a checkout of the earlier version to measure alongside")
    ap.add_argument("--seconds", type=float, default=10.0, help="counted seconds per run (default 10)")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3, help="runs per version; medians are reported")
    ap.add_argument("--prolog-seconds", type=float, default=20.0, help="0: no Prolog figures")
    ap.add_argument("--budget", type=float, default=60.0, help="grounding budget (s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per process (a game and version's run) (s)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve_game(args.serve, Path(args.root), args.seconds, args.warmup, args.budget, args.prolog_seconds,
                   args.cache)
        return 0
    from rich.progress import Progress

    out = Path(args.out)
    baseline = ""
    if args.baseline:
        baseline = subprocess.run(["git", "-C", args.baseline, "rev-parse", "--short", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
    cmd_text = "python scripts/bench_engines.py " + " ".join(
        a if not args.baseline or a != args.baseline else "DIR" for a in sys.argv[1:]
        if a != "--report-only")   # the report of a resumed run names the measuring command
    if not args.report_only:
        # resumable: games already in the results file (same baseline) are kept
        rows = {}
        for r in benchrows.read(out):
            if r.get("baseline", "") == baseline:
                rows[r["game"]] = r
        with Progress() as bar:
            task = bar.add_task("games", total=len(args.games))
            for key in args.games:
                bar.update(task, description=key)
                if key not in rows:
                    t0 = time.time()
                    row = measure_game(key, args)
                    row.update(baseline=baseline, wall=round(time.time() - t0, 1))
                    bar.console.print(f"{key}: this {fmt(rate(row.get('new') or {}))}, previous "
                                      f"{fmt(rate(row.get('old') or {}))}, ratio {paired_ratio(row)}")
                    rows[key] = row
                    benchrows.write(out, list(rows.values()))
                bar.advance(task)
    rows = benchrows.read(out)
    baseline = baseline or (rows[0].get("baseline", "") if rows else "")
    atomic_write(Path(args.report), report(rows, cmd_text.strip(), baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
