#!/usr/bin/env python3
"""The suite's long checks in full (issue 53: the whole test suite within 20 minutes).

A few tests check a property over more inputs or longer runs than the suite needs to show
it (a chess match on long clocks, longer random walks of corpus games on both engines, more
states of a walk on both search drivers).  The suite runs each on a representative part
whose result does not depend on size; this script runs them on everything
(``GGP_FULL_SWEEPS=1``, read by ``tests/conftest.py``'s ``sweep``) through pytest, and writes
what passed, with each test's seconds and printed figures, to ``docs/benchmarks/full-sweeps.md``
(written whole through a temporary file).

    python scripts/full_sweeps.py                     # every sweep, then the report
    python scripts/full_sweeps.py --only same-search  # one sweep (the report keeps the others)
    python scripts/full_sweeps.py --list              # the sweeps and their tests

Run it before a release and after changing what a sweep covers (the search drivers, the
player's memory); needs ``../shared`` beside the checkout, and takes about 4 minutes.  Exit
status 1 when a test failed.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "benchmarks" / "full-sweeps.md"
STATE = ROOT / "docs" / "benchmarks" / "full-sweeps.json"

# name -> (what the suite keeps, the tests run here in full)
SWEEPS = {
    "chess-memory": ("our player on chess through the match machinery: the suite plays 12 s / 5 s "
                     "clocks, here the 20 s / 12 s match (longer searches, a larger peak)",
                     ["tests/test_chess.py::test_chess_match_decisions_are_searched_within_memory"]),
    "corpus-walks": ("the compiled engine against Prolog on seeded random walks of 12 corpus games: the "
                     "suite walks each for 1 s (at least one whole walk), here for 3 s",
                     ["tests/test_engine.py::test_corpus_game_random_walks_agree"]),
    "same-search": ("the same search on both drivers: the suite compares the initial state and "
                    "ply 8 of each walk, here also ply 4",
                    ["tests/test_search_playout_loop.py"]),
}


def run(names: list[str], junit: Path) -> int:
    tests = [t for n in names for t in SWEEPS[n][1]]
    env = dict(os.environ, GGP_FULL_SWEEPS="1")
    env.pop("GGP_TEST_PASS", None)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
           "-o", "junit_logging=system-out", f"--junitxml={junit}", *tests]
    print("+", " ".join(cmd[1:]), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


def rows_from(junit: Path) -> list[dict]:
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}[tag]
        out = case.findtext("system-out") or ""
        figures = "; ".join(line.strip() for line in out.splitlines() if ":" in line)[:200]
        test = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        rows.append({"test": test.removeprefix("tests/"), "outcome": outcome,
                     "seconds": round(float(case.get("time", 0)), 1), "printed": figures})
    return rows


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "agent", "gdl", "tests"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def report(state: dict) -> str:
    lines = ["# The suite's long checks in full (issue 53)", "",
             "Written by `python scripts/full_sweeps.py` (`--only NAME` for one sweep); "
             "the suite runs a representative part of each (tests/conftest.py `sweep`), "
             "this script all of it. See tests.md, \"Cutting to 20 minutes\".", ""]
    for name in SWEEPS:
        if name not in state:
            continue
        s = state[name]
        lines += [f"## {name}", "", SWEEPS[name][0] + ".", "",
                  f"Run at {s['commit']}, {s['when']} (load {s['load']}): "
                  f"**{sum(r['outcome'] == 'passed' for r in s['rows'])} passed**"
                  + "".join(f", {sum(r['outcome'] == o for r in s['rows'])} {o}"
                            for o in ("FAILED", "ERROR", "skipped") if any(r['outcome'] == o for r in s['rows']))
                  + f", {sum(r['seconds'] for r in s['rows']):.0f} s in all.", "",
                  "| test | outcome | seconds | printed |", "|---|---|---|---|"]
        lines += [f"| `{r['test']}` | {r['outcome']} | {r['seconds']} | {r['printed'].replace('|', '/')} |"
                  for r in s["rows"]]
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated sweeps: " + ", ".join(SWEEPS))
    ap.add_argument("--list", action="store_true", help="list the sweeps and their tests")
    args = ap.parse_args(argv)
    if args.list:
        for name, (what, tests) in SWEEPS.items():
            print(f"{name}: {' '.join(tests)}\n    {what}")
        return 0
    names = [n.strip() for n in (args.only or ",".join(SWEEPS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in SWEEPS]
    if unknown:
        print(f"full_sweeps: no sweep {', '.join(unknown)} (known: {', '.join(SWEEPS)})", file=sys.stderr)
        return 2
    try:
        state = json.loads(STATE.read_text()) if STATE.is_file() else {}
    except (OSError, ValueError):
        state = {}      # a damaged state file: the report starts again from this run
    status = 0
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            junit = Path(tmp) / "junit.xml"
            rc = run([name], junit)
            if not junit.is_file():
                print(f"full_sweeps: {name}: pytest wrote no results (exit status {rc})", file=sys.stderr)
                return rc or 1
            rows = rows_from(junit)
        status = status or (1 if rc else 0)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        state[name] = {"commit": commit(), "when": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
                       "load": round(load, 1), "rows": rows}
        write_atomically(STATE, json.dumps(state, indent=1) + "\n")
        write_atomically(REPORT, report(state))
    print(f"full_sweeps: report in {REPORT.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
