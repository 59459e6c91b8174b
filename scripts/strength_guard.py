#!/usr/bin/env python3
"""Strength guard (issue 55): this checkout's champion against a pinned earlier version at
equal time a move, on four games, with 95 % intervals, so that a change which costs strength
is seen before it lands.

    python scripts/strength_guard.py                    # 40 games a game at 0.1 s a move (~1 h on one core)
    python scripts/strength_guard.py --n 100 --games breakthrough connectFour
    python scripts/strength_guard.py --against 7f688de --report-only

Run it before a change to the shared search, the playouts, the engines or the evaluation
lands (the README says so), on a quiet machine (both versions get the same clock, but a
loaded machine gives each fewer simulations and makes the games noisier).  It checks the
pinned commit out into .cache/guard/COMMIT (a git worktree), plays the games with
``bench_search.py --versus`` (each version in a child process of its own, sides
alternating; resumable: rows in docs/benchmarks/guard/), prints one line per game and
appends the run's line to docs/benchmarks/strength.md (section "Guard runs").  Exit status 1
when some game's interval lies wholly below 0.5 (this version loses to the pinned one),
2 on usage errors.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import benchrows  # noqa: E402
from bench_search import score_ci  # noqa: E402

PINNED = "7f688de"      # the version of strength.md's run 18 (breakthrough level with Sancho)
GAMES = ["breakthrough", "connectFour", "checkers", "nineBoardTicTacToe"]
ROWS = ROOT / "docs" / "benchmarks" / "guard"
STRENGTH = ROOT / "docs" / "benchmarks" / "strength.md"
SECTION = "## Guard runs"


def git(*args, cwd=ROOT) -> str:
    out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"git {' '.join(args)}: {out.stderr.strip() or 'failed'}")
    return out.stdout.strip()


def checkout(commit: str) -> Path:
    """The pinned version as a worktree of this repository (made once, kept for later runs)."""
    full = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    where = ROOT / ".cache" / "guard" / full[:12]
    if not (where / "agent" / "search").is_dir():
        where.parent.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", "--force", str(where), full)
    return where


def scores(rows: list, game: str) -> tuple:
    """(games, wins, draws, losses, mean, lo, hi) of this version in ``game``."""
    sc, w, d, l = [], 0, 0, 0
    for r in rows:
        if r.get("kind") != "game" or r["game"] != game:
            continue
        me, other = r["goals"][r["champion_role"]], r["goals"][1 - r["champion_role"]]
        sc.append(1.0 if me > other else 0.5 if me == other else 0.0)
        w, d, l = w + (me > other), d + (me == other), l + (me < other)
    if not sc:
        return 0, 0, 0, 0, None, None, None
    return (len(sc), w, d, l, *score_ci(sc))


def line(head: str, against: str, rows: list, games: list, seconds: float) -> tuple[str, bool]:
    """The run's table row for strength.md, and whether some game is clearly lost."""
    cells, lost = [], False
    for g in games:
        n, w, d, l, m, lo, hi = scores(rows, g)
        if not n:
            cells.append("-")
            continue
        cells.append(f"{m:.2f} [{lo:.2f}, {hi:.2f}] ({w}-{d}-{l})")
        lost |= hi < 0.5
    loads = [r["load"] for r in rows if "load" in r]
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"
    day = datetime.date.today().isoformat()
    return f"| {day} | {head} | {against} | {seconds} s | " + " | ".join(cells) + f" | {load} |", lost


def record(row: str, games: list) -> None:
    """Append the run's row under "Guard runs" in strength.md (the section made if missing)."""
    text = STRENGTH.read_text(encoding="utf-8")
    head = ("| date | this version | against | a move | " + " | ".join(games) + " | load (1 min) |\n"
            + "|---|---|---|---|" + "---|" * len(games) + "---|\n")
    if SECTION not in text:
        text = text.rstrip("\n") + (f"\n\n{SECTION}\n\n`python scripts/strength_guard.py` (this version's "
                                    "champion against a pinned earlier one at equal time; score of this "
                                    "version, 95 % interval, W-D-L):\n\n")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    end = len(text) if end < 0 else end + 1
    part = text[start:end].rstrip("\n") + "\n"
    if head.splitlines()[0] not in part:
        part += "\n" + head
    part += row + "\n"
    tmp = STRENGTH.with_suffix(".md.tmp")
    tmp.write_text(text[:start] + part + ("\n" + text[end:] if end < len(text) else ""), encoding="utf-8")
    os.replace(tmp, STRENGTH)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", default=PINNED, help=f"the earlier commit (default {PINNED})")
    ap.add_argument("--games", nargs="+", default=GAMES, metavar="GAME")
    ap.add_argument("--n", type=int, default=40, help="games a game, sides alternating (default 40)")
    ap.add_argument("--seconds", type=float, default=0.1, help="seconds a move for both (default 0.1)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--report-only", action="store_true", help="print and record the rows already played")
    ap.add_argument("--no-record", action="store_true", help="do not append the line to strength.md")
    args = ap.parse_args(argv)
    if args.n < 1 or args.seconds <= 0:
        ap.error("--n must be at least 1 and --seconds above 0")
    head = git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    against = git("rev-parse", "--short", f"{args.against}^{{commit}}")
    out = ROWS / f"{head}-vs-{against}-{args.seconds}-s{args.seed}.jsonl"
    if not args.report_only:
        other = checkout(against)
        ROWS.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, str(ROOT / "scripts" / "bench_search.py"), "--versus", str(other),
               "--games", *args.games, "--n", str(args.n), "--seconds", str(args.seconds),
               "--seed", str(args.seed), "--versus-out", str(out), "--report", os.devnull]
        rc = subprocess.run(cmd).returncode
        if rc:
            print(f"strength guard: the games stopped (exit status {rc}); run it again to resume", file=sys.stderr)
            return rc
    rows = benchrows.read(out) if benchrows.exists(out) else []
    if not rows:
        print(f"strength guard: no games of {head} against {against} yet", file=sys.stderr)
        return 1
    for g in args.games:
        n, w, d, l, m, lo, hi = scores(rows, g)
        print(f"{g:20s} " + (f"{m:.3f} [{lo:.3f}, {hi:.3f}]  {w}-{d}-{l} of {n}" if n else "no games"))
    row, lost = line(head, against, rows, args.games, args.seconds)
    if not args.no_record:
        record(row, args.games)
    if lost:
        print(f"strength guard: this version loses to {against} in some game (interval below 0.5)")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
