#!/usr/bin/env python3
"""GDL-II matches of our server against pyggp's MO-ISMCTS agent (issue 52: beside a peer).

pyggp (github.com/Entze/pyggp, MIT; not on PyPI) is installed in a virtual environment of its
own, never the project's (``--pyggp-venv``; its dependencies, clingo among them, come from
PyPI), and its source tree gives pyggp's original sheets (``--pyggp-src``, ``src/games``):

    git clone https://github.com/Entze/pyggp PYGGP_SRC       # or any copy of its tree
    python3 -m venv PYGGP_VENV && PYGGP_VENV/bin/pip install PYGGP_SRC

For each sheet of ``../shared/corpus/gdl2`` named in ``--games`` (KIF converted from pyggp's
own games, SOURCES.md there), ``scripts/pyggp_player.py`` runs in pyggp's environment with
pyggp's original sheet of that game and serves pyggp's ``MOISMCTSAgent`` over the GGP
protocol in Dresden's GDL-II form; our server (``python -m agent.server``, default persona,
``--no-ponder`` so that neither player computes on the other's time: both run on the same
machine) is started here unless ``--server`` names a running one.  Our match runner
(``ggp-persona match``: the referee moves ``random``, sends each player only its percepts)
plays ``--matches`` matches per sheet at ``--start``/``--play``, roles rotated.  Before the
matches, the adapter's translation is checked on ``--walks`` random walks of each sheet
(our Prolog referee's percepts on the KIF against pyggp's views on its own sheet).

One JSON line per finished match goes to ``--out`` (default
``docs/benchmarks/gdl2-pyggp.jsonl`` (kept compressed: scripts/benchrows.py), rewritten whole through a temporary file; rows of other
sheets, clocks or book modes are kept; an interrupted run writes nothing): goals, each side's role and errors, pyggp's decisions (search
iterations and seconds per decision, counted by the adapter), ours (simulations and seconds
per decision, from our server's record), the load average.

    python scripts/bench_gdl2_pyggp.py --pyggp-venv PYGGP_VENV --pyggp-src PYGGP_SRC
    python scripts/bench_gdl2_pyggp.py ... --games nim,minipoker --matches 4 --play 3 --pyggp-skip-book
    python scripts/bench_gdl2_pyggp.py ... --check-only      # the translation check alone
    python scripts/bench_gdl2_pyggp.py --table            # the table from --out only
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "gdl2"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import benchrows  # noqa: E402  (rows under docs/ are kept compressed)

ADAPTER = ROOT / "scripts" / "pyggp_player.py"
RESULTS = ROOT / "docs" / "benchmarks" / "gdl2-pyggp.jsonl"
CHANCE = "random"

# Corpus sheet -> pyggp's original (SOURCES.md of the corpus: which file each was converted from).
PYGGP_SHEETS = {
    "minipoker": "minipoker.gdl",
    "rock_paper_scissors": "rock_paper_scissors.gdl",
    "nim": "nim.gdl",
    "phantom_connect_4x4": "phantom_connect(4,4,4).gdl",
    "phantom_connect_5x5": "phantom_connect(5,5,5).gdl",
    "battleship": "battleship.gdl",
}
DEFAULT_GAMES = "minipoker,rock_paper_scissors,nim,phantom_connect_4x4"


class BenchError(Exception):
    """A one-line reason the benchmark cannot run."""


# ---------------------------------------------------------------- processes

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def info(url: str, timeout: float = 5.0) -> str | None:
    """The reply to (INFO), or None when nobody answers."""
    req = urllib.request.Request(url, data=b"(INFO)", headers={"Content-Type": "text/acl"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read().decode("utf-8", "replace")
    except OSError:
        return None


def wait_available(url: str, proc: subprocess.Popen | None, limit: float, what: str, log: Path | None,
                   ready_line: str | None = None) -> None:
    """Until INFO answers without ``busy`` and, given ``ready_line``, the log has that line (our
    server answers INFO at once but compiles its code in a warm-up for minutes, and logs
    "... ready on http://" at its end; a match before it would play on a loading player)."""
    t0 = time.monotonic()
    said = False
    while True:
        reply = info(url)
        warm = ready_line is None or (log is not None and log.exists()
                                      and ready_line in log.read_text(errors="replace"))
        if reply is not None and "busy" not in reply.lower() and warm:
            return
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log and log.exists() else []
            raise BenchError(f"{what} exited (code {proc.returncode}) before it was ready"
                             + (f": {tail[0]}" if tail else ""))
        if time.monotonic() - t0 > limit:
            raise BenchError(f"{what} at {url} not available after {limit:.0f} s (INFO: {reply!r})")
        if reply is not None and not said:
            print(f"  {what} warming up (the first start compiles its code); waiting", flush=True)
            said = True
        time.sleep(3)


def start(cmd: list[str], log: Path) -> subprocess.Popen:
    f = open(log, "ab")
    return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)


def stop(proc: subprocess.Popen | None) -> None:
    """End a process this script started, and its children (its own process group)."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def check_pyggp(venv: Path, src: Path, games: list[str]) -> Path:
    """pyggp's python, after checking that it imports pyggp and that its sheets are there."""
    py = venv / "bin" / "python"
    if not py.is_file():
        raise BenchError(f"no python in {venv} (--pyggp-venv): create it with python3 -m venv and "
                         f"pip install a copy of github.com/Entze/pyggp into it")
    r = subprocess.run([str(py), "-c", "import pyggp, clingo; print(pyggp.__version__, clingo.__version__)"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise BenchError(f"pyggp does not import in {venv}: {last}")
    print(f"pyggp {r.stdout.split()[0]} (clingo {r.stdout.split()[1]}) in {venv}")
    for g in games:
        if not (src / "src" / "games" / PYGGP_SHEETS[g]).is_file():
            raise BenchError(f"no {PYGGP_SHEETS[g]} under {src}/src/games (--pyggp-src: pyggp's source tree)")
    return py


# ---------------------------------------------------------------- results

def error_counts(record: dict, seat: int) -> dict:
    counts: dict = {}
    for step in record.get("errors") or []:
        code = (step[seat] if seat < len(step) else "") or ""
        if code:
            key = code.split()[0]
            counts[key] = counts.get(key, 0) + 1
    return counts


def our_decisions(log_dir: Path, match_id: str) -> list[dict]:
    """Our server's decisions with a choice (more than one legal move) in that match."""
    f = log_dir / f"{match_id}.json"
    try:
        rec = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for d in rec.get("x-decisions") or []:
        legal = d.get("legal") or d.get("legal_moves") or []
        if isinstance(legal, list) and len(legal) <= 1:
            continue
        out.append({"simulations": d.get("simulations"), "seconds": d.get("elapsed"),
                    "fallback": bool(d.get("fallback"))})
    return out


def match_row(record: dict, game: str, pyggp_url: str, stats: list[dict], log_dir: Path,
              start_clock: int, play_clock: int, book: str) -> dict:
    roles = record["x-roles"]
    urls = [p.get("url") for p in record.get("x-players") or []]
    p_seat = urls.index(pyggp_url)
    o_seat = next(i for i, r in enumerate(roles) if i != p_seat and r != CHANCE)
    goals = record["goalValues"]
    mid = record["matchId"]
    mine = [s for s in stats if s.get("match") == mid]
    return {
        "game": game, "match": mid, "start": start_clock, "play": play_clock, "pyggp_book": book,
        "pyggp_role": roles[p_seat], "ours_role": roles[o_seat],
        "goals": dict(zip(roles, goals)), "pyggp_goal": goals[p_seat], "ours_goal": goals[o_seat],
        "pyggp_errors": error_counts(record, p_seat), "ours_errors": error_counts(record, o_seat),
        "pyggp_decisions": [{"ply": s["ply"], "iterations": s["iterations"], "seconds": s["seconds"],
                             "book_entries": s.get("book_entries"),
                             **({"error": s["error"]} if s.get("error") else {})} for s in mine],
        "ours_decisions": our_decisions(log_dir, mid),
        "plies": len(record.get("moves") or []),
        "load": round(os.getloadavg()[0], 1),
    }


def key(r: dict) -> tuple:
    """The rows that belong together: one sheet, clocks and pyggp book mode."""
    return r["game"], r["start"], r["play"], r.get("pyggp_book", "built")


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else math.nan


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return math.nan
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _ci(xs):
    """Mean and the half-width of its normal 95 % interval."""
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    m = sum(xs) / n
    if n == 1:
        return m, math.nan
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, 1.96 * sd / math.sqrt(n)


def table(rows: list[dict]) -> str:
    """Markdown: per sheet and clock, our results against pyggp and each side's search."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    out = ["| sheet | clocks (s) | pyggp's book | matches | ours W-D-L | ours mean goal | pyggp mean goal | "
           "errors ours / pyggp | pyggp decisions: n: median iterations, s | ours decisions: n: median simulations, s | load |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (game, s, p, book), rs in sorted(groups.items()):
        w = sum(r["ours_goal"] > r["pyggp_goal"] for r in rs)
        d = sum(r["ours_goal"] == r["pyggp_goal"] for r in rs)
        l_ = len(rs) - w - d
        om, oh = _ci([r["ours_goal"] for r in rs])
        pm, ph = _ci([r["pyggp_goal"] for r in rs])

        def errs(key):
            tot: dict = {}
            for r in rs:
                for k, v in r[key].items():
                    tot[k] = tot.get(k, 0) + v
            return " ".join(f"{k} {v}" for k, v in sorted(tot.items())) or "0"
        pd = [x for r in rs for x in r["pyggp_decisions"] if not x.get("error")]
        failed = sum(bool(x.get("error")) for r in rs for x in r["pyggp_decisions"])
        od = [x for r in rs for x in r["ours_decisions"]]
        pyggp_s = (f"{len(pd) + failed}: {_median([x['iterations'] for x in pd]):.0f}, "
                   f"{_median([x['seconds'] for x in pd]):.2f}"
                   if pd else "0") + (f" ({failed} failed)" if failed else "")
        fell = sum(x["fallback"] for x in od)
        searched = [x for x in od if not x["fallback"]]
        ours_s = (f"{len(od)}: {_median([x['simulations'] for x in searched]):.0f}, "
                  f"{_median([x['seconds'] for x in searched]):.2f}" if searched else f"{len(od)}: -") \
            + (f" ({fell} fallback{'s' if fell > 1 else ''})" if fell else "")
        loads = [r["load"] for r in rs]
        out.append(f"| {game} | {s}/{p} | {book} | {len(rs)} | {w}-{d}-{l_} | {om:.1f} ± {oh:.1f} | {pm:.1f} ± {ph:.1f} | "
                   f"{errs('ours_errors')} / {errs('pyggp_errors')} | {pyggp_s} | {ours_s} | "
                   f"{min(loads):.0f}-{max(loads):.0f} |")
    return "\n".join(out)


def role_table(rows: list[dict]) -> str:
    """Markdown: our mean goal per sheet and our role (asymmetric games)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((*key(r), r["ours_role"]), []).append(r)
    out = ["| sheet | clocks (s) | pyggp's book | our role | matches | ours mean goal | pyggp mean goal |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for (game, s, p, book, role), rs in sorted(groups.items()):
        out.append(f"| {game} | {s}/{p} | {book} | {role} | {len(rs)} | {_mean([r['ours_goal'] for r in rs]):.1f} | "
                   f"{_mean([r['pyggp_goal'] for r in rs]):.1f} |")
    return "\n".join(out)


# ---------------------------------------------------------------- the translation

def referee_walks(sheet: Path, walks: int, seed: int) -> dict:
    """Random walks on the KIF sheet by our Prolog reasoner (the referee's): per step every
    role's move and its percepts, as a GDL-II referee sends them."""
    import random
    from agent.match.rules import read_rules
    from agent.reasoner.prolog import PrologReasoner
    from gdl.terms import render_spaced
    _, desc = read_rules(sheet.read_text(encoding="utf-8"), str(sheet))
    sm = PrologReasoner(desc)
    try:
        out = []
        for w in range(walks):
            rng = random.Random(f"{seed}:{w}")
            state, steps = sm.initial_state(), []
            while not sm.is_terminal(state):
                joint = tuple(rng.choice(sm.legal_moves(state, r)) for r in range(len(sm.roles)))
                steps.append({"moves": [render_spaced(m) for m in joint],
                              "sees": [sorted(render_spaced(p) for p in sm.sees(state, joint, r))
                                       for r in range(len(sm.roles))]})
                state = sm.next_state(state, joint)
            out.append(steps)
        return {"roles": [render_spaced(r) for r in sm.roles], "walks": out}
    finally:
        sm.close()


def check_translation(game: str, py: Path, src: Path, work: Path, walks: int, seed: int) -> dict:
    """The adapter's translation checked on ``walks`` random walks of the sheet: the percepts
    our referee sends must be pyggp's views of the next state, moves must read back."""
    path = work / f"walks-{game}.json"
    path.write_text(json.dumps(referee_walks(CORPUS / f"{game}.kif", walks, seed)))
    r = subprocess.run([str(py), str(ADAPTER), "--rules", str(src / "src" / "games" / PYGGP_SHEETS[game]),
                        "--check-walks", str(path)], capture_output=True, text=True, cwd=ROOT)
    try:
        result = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"{game}: the translation check failed to run: {last}") from None
    print(f"{game}: translation checked on {walks} walks: {result['views']} views, {result['moves']} moves, "
          f"{result['differences']} differences", flush=True)
    if result["differences"]:
        raise BenchError(f"{game}: the KIF sheet's percepts or moves do not match pyggp's sheet")
    return result


# ---------------------------------------------------------------- the run

def run_game(game: str, args, py: Path, server_url: str, server_logs: Path, work: Path) -> list[dict]:
    sheet = CORPUS / f"{game}.kif"
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    stats_path = work / f"pyggp-stats-{game}.jsonl"
    stats_path.unlink(missing_ok=True)
    log = work / f"pyggp-{game}.log"
    book = "skipped" if args.pyggp_skip_book else "built"
    adapter = start([str(py), str(ADAPTER), "--rules", str(args.pyggp_src / "src" / "games" / PYGGP_SHEETS[game]),
                     "--port", str(port), "--stats", str(stats_path), "--log-level", "info",
                     *(["--skip-book"] if args.pyggp_skip_book else [])], log)
    try:
        wait_available(url, adapter, 120, "pyggp's adapter", log)
        run = f"pyggp-s{args.start}-p{args.play}-{int(time.time())}"
        out_dir = work / "records"
        cmd = [sys.executable, "-m", "agent.cli", "match", str(sheet), url, server_url,
               "--rounds", str(args.matches), "--start", str(args.start), "--play", str(args.play),
               "--out", str(out_dir), "--run", run, "--seed", str(args.seed)]
        print(f"{game}: {args.matches} matches at {args.start}/{args.play} s, pyggp on {url} (load "
              f"{os.getloadavg()[0]:.1f})", flush=True)
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["?"])[-1]
            print(f"  the match runner failed (code {r.returncode}): {last}", flush=True)
    finally:
        stop(adapter)
    stats = benchrows.read(stats_path)
    rows = []
    for f in sorted(out_dir.glob(f"match.*.{run}.*.json"), key=lambda p: int(p.stem.rsplit(".", 1)[1])):
        rec = json.loads(f.read_text(encoding="utf-8"))
        if not rec.get("isCompleted") or not isinstance(rec.get("goalValues"), list):
            print(f"  {rec.get('matchId')}: not completed, not counted", flush=True)
            continue
        row = match_row(rec, game, url, stats, server_logs, args.start, args.play, book)
        print(f"  {row['match']}: pyggp {row['pyggp_role']}={row['pyggp_goal']}, ours {row['ours_role']}="
              f"{row['ours_goal']}, errors ours {row['ours_errors'] or 0} pyggp {row['pyggp_errors'] or 0}",
              flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyggp-venv", type=Path, help="virtual environment with pyggp installed (required)")
    ap.add_argument("--pyggp-src", type=Path, help="pyggp's source tree, for its src/games (required)")
    ap.add_argument("--games", default=DEFAULT_GAMES, help=f"corpus sheets (default {DEFAULT_GAMES})")
    ap.add_argument("--matches", type=int, default=10, help="matches per sheet, roles rotated (default 10)")
    ap.add_argument("--start", type=int, default=20, help="start clock, s (default 20)")
    ap.add_argument("--play", type=int, default=5, help="play clock, s (default 5)")
    ap.add_argument("--pyggp-skip-book", action="store_true",
                    help="pyggp's skip_book: no book from the start clock (pyggp builds one when the start "
                         "clock leaves it more than 10 s, and then answers small games from it without search)")
    ap.add_argument("--seed", type=int, default=0, help="the runner's seed (random's deals, substitutes)")
    ap.add_argument("--server", help="URL of a running server of ours (default: start one here)")
    ap.add_argument("--server-log-dir", type=Path, help="its --log-dir (needed with --server for our figures)")
    ap.add_argument("--work", type=Path, help="folder for records and logs (default: a new temporary one)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSONL of results (default %(default)s)")
    ap.add_argument("--table", action="store_true", help="print the tables of --out and stop")
    ap.add_argument("--walks", type=int, default=4,
                    help="random walks per sheet on which the adapter's translation is checked first (default 4)")
    ap.add_argument("--check-only", action="store_true", help="check the translation and stop (no matches)")
    args = ap.parse_args(argv)

    if args.table:
        rows = benchrows.read(args.out)
        if not rows:
            print(f"no results in {args.out}", file=sys.stderr)
            return 1
        print(table(rows) + "\n\n" + role_table(rows))
        return 0
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    server = None
    try:
        unknown = [g for g in games if g not in PYGGP_SHEETS]
        if unknown:
            raise BenchError(f"no pyggp original known for {', '.join(unknown)} (known: {', '.join(PYGGP_SHEETS)})")
        if not CORPUS.is_dir():
            raise BenchError(f"no GDL-II corpus at {CORPUS} (the shared material is missing)")
        if args.pyggp_venv is None or args.pyggp_src is None:
            raise BenchError("--pyggp-venv and --pyggp-src are required (pyggp lives outside the project)")
        py = check_pyggp(args.pyggp_venv, args.pyggp_src, games)
        work = args.work or Path(tempfile.mkdtemp(prefix="bench-gdl2-pyggp-"))
        work.mkdir(parents=True, exist_ok=True)
        for game in games:
            check_translation(game, py, args.pyggp_src, work, args.walks, args.seed)
        if args.check_only:
            return 0
        if args.server:
            server_url = args.server.rstrip("/") + "/"
            server_logs = args.server_log_dir or work / "no-server-logs"
        else:
            port = free_port()
            server_url = f"http://127.0.0.1:{port}/"
            server_logs = work / "server-logs"
            slog = work / "server.log"
            server = start([sys.executable, "-m", "agent.server", "--host", "127.0.0.1", "--port", str(port),
                            "--no-ponder", "--log-dir", str(server_logs)], slog)
        wait_available(server_url, server, 1800, "our server", work / "server.log" if server else None,
                       ready_line="ready on http://" if server else None)
        print(f"work folder {work}", flush=True)
        rows = []
        for game in games:
            rows += run_game(game, args, py, server_url, server_logs, work)
    except BenchError as e:
        print(f"bench_gdl2_pyggp: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; nothing written", file=sys.stderr)
        return 130
    finally:
        stop(server)
    done = {key(r) for r in rows}
    kept = [r for r in benchrows.read(args.out) if key(r) not in done]
    benchrows.write(args.out, kept + rows)
    print(f"{len(rows)} matches written to {args.out}\n")
    print(table(kept + rows) + "\n\n" + role_table(kept + rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
