#!/usr/bin/env python3
"""Engine benchmark: random playouts per second of the Prolog reasoner and the compiled
engine side by side (gdl-perf method, agent.bench), build time from rules to a ready
compiled engine, cached reload time, and peak memory; one subprocess per game.

    python scripts/bench_engines.py                   # the ten games, then the report
    python scripts/bench_engines.py --games ticTacToe --seconds 5 --warmup 1 --out /tmp/e.jsonl --report /tmp/e.md
    python scripts/bench_engines.py --report-only     # rebuild the report from the results

Rules: ../shared/corpus/games/base/games/<key>/<latest vN>/<key>.kif.  The cached reload
is timed in a process whose numba kernels are already loaded, as in the server's pre-started
player processes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

GAMES = ["ticTacToe", "connectFour", "breakthrough", "checkers", "nineBoardTicTacToe", "skirmish",
         "chess", "reversi", "hex", "pentago"]
PEERS = {  # ../shared/docs/peer-figures.md: Sancho's propnet, ggplib (playouts/s, same method)
    "ticTacToe": (170_000, 472_000), "connectFour": (95_000, 157_000), "breakthrough": (21_000, 34_000),
    "nineBoardTicTacToe": (36_000, 31_000), "reversi": (1_900, 2_000), "skirmish": (1_400, 2_000),
    "hex": (1_100, 2_000), "pentago": (11_000, 19_000), "checkers": (None, None), "chess": (None, None),
}
RESULTS = ROOT / "docs" / "benchmarks" / "engine-results.jsonl"
REPORT = ROOT / "docs" / "benchmarks" / "engine.md"


def rules_path(key: str) -> Path:
    d = SHARED / "corpus" / "games" / "base" / "games" / key
    latest = max(d.glob("v*"), key=lambda p: int(p.name[1:]))
    return latest / f"{key}.kif"


def one_game(key: str, seconds: float, warmup: float, runs: int, budget: float, prolog_seconds: float) -> dict:
    """Runs in its own process: everything measured for one game."""
    import resource

    from agent.bench import median_runs
    from agent.engine import load_engine
    from agent.engine.ground import GroundingError
    from agent.reasoner.prolog import PrologReasoner
    from agent.server.worker import WARM_RULES
    from agent.player import parse_rules_text
    from gdl.kif import read_rules_file

    out = {"game": key, "rules": str(rules_path(key).relative_to(SHARED.parent))}
    desc = read_rules_file(rules_path(key))
    with tempfile.TemporaryDirectory() as cache_dir:
        load_engine(parse_rules_text(WARM_RULES), cache_dir=cache_dir)  # numba kernels loaded
        t0 = time.perf_counter()
        try:
            eng = load_engine(desc, engine="compiled", budget_seconds=budget, cache_dir=cache_dir)
        except GroundingError as e:
            out["compiled_error"] = str(e)
            eng = None
        if eng is not None:
            out["build_seconds"] = round(time.perf_counter() - t0, 3)
            out.update({k: eng.info[k] for k in ("ground_seconds", "compile_seconds", "atoms", "fluents",
                                                 "ground_rules") if k in eng.info})
            t0 = time.perf_counter()
            again = load_engine(desc, engine="compiled", cache_dir=cache_dir)
            out["cached_load_seconds"] = round(time.perf_counter() - t0, 3)
            assert again.info["source"] == "cache", again.info
            out["compiled"] = median_runs(eng, runs, seconds=seconds, warmup=warmup)
    out["compiled_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    sm = PrologReasoner(desc)
    try:
        out["prolog"] = median_runs(sm, 1, seconds=prolog_seconds, warmup=min(warmup, prolog_seconds))
    except Exception as e:  # a reasoner error is a finding for the report
        out["prolog_error"] = f"{type(e).__name__}: {e}"
    sm.close()
    if "compiled" in out and "prolog" in out and out["prolog"]["playouts_per_sec"]:
        out["ratio"] = round(out["compiled"]["playouts_per_sec"] / out["prolog"]["playouts_per_sec"], 1)
    return out


def cell(text: str, n: int = 80) -> str:
    """Text fit for one table cell."""
    return " ".join(str(text).split())[:n].replace("|", "/")


def fmt(x, digits=0):
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{max(digits, 1)}f}" if isinstance(x, float) else str(x)


def report(rows: list, args_text: str) -> str:
    lines = [
        "# Engine benchmark: Prolog reasoner and compiled engine",
        "",
        f"Command: `{args_text}`",
        "",
        "Random playouts per second from the initial state, one core, gdl-perf method: a uniformly",
        "random legal move for every role until terminal, then the goals (`agent/bench.py`; the",
        "same counting as `ggp-persona bench`). Both engines of a game were measured in the same",
        "process, one after the other; compiled figures are the median of the runs listed. The",
        "machine (2 cores) was shared with other work during the run, so absolute figures are",
        "low by an unknown margin; the ratios were measured side by side.",
        "",
        "| game | compiled playouts/s (runs) | Prolog playouts/s | compiled / Prolog | Sancho / ggplib | avg depth | build s (ground + compile) | cached reload s | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c, p = r.get("compiled") or {}, r.get("prolog") or {}
        sancho, ggplib = PEERS.get(r["game"], (None, None))
        runs = ", ".join(fmt(x) for x in c.get("runs", [])) if c.get("runs") else ""
        build = (f"{r['build_seconds']:.2f} ({r.get('ground_seconds', 0):.2f} + {r.get('compile_seconds', 0):.2f})"
                 if "build_seconds" in r else f"failed: {cell(r.get('compiled_error', '?'))}")
        prolog = fmt(p.get("playouts_per_sec"), 2) if p else f"error: {cell(r.get('prolog_error', '?'), 60)}"
        lines.append(
            f"| {r['game']} | {fmt(c.get('playouts_per_sec'))}" + (f" ({runs})" if runs else "") +
            f" | {prolog} | {fmt(r.get('ratio'))} | {fmt(sancho)} / {fmt(ggplib)} | "
            f"{fmt(c.get('avg_depth') or p.get('avg_depth'), 1)} | {build} | {fmt(r.get('cached_load_seconds'), 3)} | "
            f"{r.get('compiled_peak_rss_mb', '-')} |")
    lines += ["", f"Machine: {platform.machine()}, Python {platform.python_version()}, "
                  f"{os.cpu_count()} cores. Results: `{RESULTS.relative_to(ROOT)}`.", ""]
    return "\n".join(lines)


def atomic_write(path: Path, text: str) -> None:
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(path, text.encode("utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", nargs="+", default=GAMES)
    ap.add_argument("--seconds", type=float, default=20.0, help="counted seconds per compiled run (default 20)")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3, help="compiled runs; the median is reported")
    ap.add_argument("--prolog-seconds", type=float, default=20.0)
    ap.add_argument("--budget", type=float, default=120.0, help="grounding budget (s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per game (s)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_game(args.one, args.seconds, args.warmup, args.runs, args.budget, args.prolog_seconds)))
        return 0
    out = Path(args.out)
    cmd_text = "python scripts/bench_engines.py " + " ".join(sys.argv[1:])
    if not args.report_only:
        rows = []
        for key in args.games:
            cmd = [sys.executable, __file__, "--one", key, "--seconds", str(args.seconds), "--warmup",
                   str(args.warmup), "--runs", str(args.runs), "--budget", str(args.budget),
                   "--prolog-seconds", str(args.prolog_seconds)]
            t0 = time.time()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                row = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
                    {"game": key, "compiled_error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}
            except subprocess.TimeoutExpired:
                row = {"game": key, "compiled_error": f"timeout after {args.timeout:.0f} s"}
            row["wall"] = round(time.time() - t0, 1)
            print(json.dumps(row), flush=True)
            rows.append(row)
        atomic_write(out, "".join(json.dumps(r) + "\n" for r in rows))
    rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    atomic_write(Path(args.report), report(rows, cmd_text.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
