#!/usr/bin/env python3
"""GDL-II matches of our server under Dresden's GameController (issue 52's first target).

For each sheet of ``../shared/corpus/gdl2`` (or ``--games``), ``--matches`` matches at
``--start``/``--play`` seconds under the real GDL-II manager, built by the kit in
``../shared/tools/gamecontroller`` (``build.sh GGPSERVER_GIT OUT``; pass ``--gc OUT``).
Our server (``python -m agent.server``, default persona) takes one chooser role, the colours
alternating over the match index; the other chooser roles get

- the manager's own random player (``random`` in ``match.sh``), or
- for the sheets of ``--server-opponent`` (default: battleship and the phantom boards, where
  the manager's random player tracks every consistent state and cannot move in time, kit
  README "Limits"), a second instance of our server with ``--opponent-persona``.

The chance role ``random`` always goes to the manager's random player.  Each match goes
through the kit's ``match.sh``, which writes ``OUT/results/ID.log`` and ``ID.json``
(goals, moves, percepts, ``errors``: every SEVERE/WARNING line of the manager).

    python scripts/bench_gdl2_dresden.py --gc OUT                       # 8 sheets x 10
    python scripts/bench_gdl2_dresden.py --gc OUT --games nim,kuhn_poker --matches 3
    python scripts/bench_gdl2_dresden.py --table                        # the tables only

The worker processes of a server import the code when they start, so edits made to the
checkout during a run would reach later matches: play from a frozen copy instead,

    mkdir OUT/code && git archive COMMIT | tar -x -C OUT/code && echo COMMIT > OUT/code/COMMIT
    python scripts/bench_gdl2_dresden.py --gc OUT --code OUT/code

(its numba cache is compiled once, in OUT/code/.cache/numba: minutes on a busy machine).

One JSON line per finished match is added to ``--out`` (default
``docs/benchmarks/gdl2-dresden.jsonl``; the file is rewritten whole through a temporary file):
game, seat, goals, the manager's error lines that name our player (illegal move, timed
out), the others, and from our own record the decisions, fallbacks and lenient decisions.
A rerun skips the (game, match index) pairs already there, so an interrupted run (Ctrl-C
stops the match under way, which is then not counted, and the servers this script started)
resumes where it stopped.  Matches go index by index over the games, so a cut run has every
game to the same depth.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "docs" / "benchmarks" / "gdl2-dresden.jsonl"
CORPUS = SHARED / "corpus" / "gdl2"
KIT = SHARED / "tools" / "gamecontroller"
RANDOM = "random"
# The kit's README, "Limits": the manager's random player times out on these sheets.
SERVER_OPPONENT = ("battleship", "phantom_connect_4x4", "phantom_connect_5x5")
# The manager gives a START 1 s and a PLAY 1 s beyond its clocks, plus connection time; a
# match whose manager has not ended after this many clocks has hung.
HANG_FACTOR = 3


# ------------------------------------------------------------------ small helpers
def roles_of(kif_text: str) -> list[str]:
    """The roles in the order of the sheet's ``(role R)`` facts (the manager's seat order)."""
    text = re.sub(r";[^\n]*", "", kif_text)
    found = re.findall(r"\(\s*role\s+([^\s()]+)\s*\)", text, flags=re.IGNORECASE)
    return [r for r in found if not r.startswith("?")]   # (role ?r) in rule bodies: not facts


def goal_max(kif_text: str) -> int:
    """The largest goal value the sheet's goal rules give (100 for most; nim's are 0/1), so a
    score is read as a share of it."""
    text = re.sub(r";[^\n]*", "", kif_text)
    values = [int(v) for v in re.findall(r"\(\s*goal\s+[^\s()]+\s+(\d+)\s*\)", text,
                                         flags=re.IGNORECASE)]
    return max(values, default=100) or 100


def load_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                sys.exit(f"bench_gdl2_dresden: {path}:{n} is not JSON; fix or move the file")
    return rows


def append_row(path: Path, row: dict) -> None:
    """Rewrite the results with one more line, through a temporary file (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(old + json.dumps(row, sort_keys=True) + "\n")
    os.replace(tmp, path)


def info(port: int, timeout: float = 3.0) -> str | None:
    """The status word of a server's INFO reply, or None when nothing answers."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b"( INFO )",
                                 headers={"Content-Type": "text/acl"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read().decode("utf-8", "replace").lower()
    except OSError:
        return None
    m = re.search(r"status\s+(\w+)", body)
    return m.group(1) if m else body.strip()


class Server:
    """One of our servers, started by this script (in a session of its own, so that it and
    its worker processes are stopped together, and by its own id)."""

    def __init__(self, port: int, log_dir: Path, log_file: Path, extra: list[str], code: Path,
                 attach: bool = False):
        self.port = port
        self.log_dir = log_dir
        self.proc = None
        if attach:   # a server already running (started as below), its records in log_dir
            if info(port) is None:
                sys.exit(f"bench_gdl2_dresden: --attach: nothing answers on port {port}")
            return
        if info(port, timeout=1.0) is not None:
            sys.exit(f"bench_gdl2_dresden: something already answers on port {port}; "
                     "choose another with --port / --opponent-port")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(log_file, "a", encoding="utf-8")
        cmd = [sys.executable, "-m", "agent.server", "--host", "127.0.0.1", "--port", str(port),
               "--log-dir", str(log_dir), *extra]
        # ``python -m`` finds the package in its working folder first: the code of ``code``
        # plays, with numba's cache beside it (setup.sh's place for it)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(code / ".cache" / "numba"))
        self.proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def wait_available(self, limit: float = 1800.0) -> None:
        """The first start compiles numba code (minutes); INFO says busy until warm."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if self.proc is not None and self.proc.poll() is not None:
                sys.exit(f"bench_gdl2_dresden: the server on port {self.port} ended "
                         f"(exit {self.proc.returncode}); see {self.log.name}")
            if info(self.port) == "available":
                return
            time.sleep(2.0)
        sys.exit(f"bench_gdl2_dresden: the server on port {self.port} is not available "
                 f"after {limit:.0f} s")

    def stop(self) -> None:
        if self.proc is None:
            return      # attached: not ours to stop
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)   # its own session: it and its workers
                self.proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.log.close()


def our_record(log_dir: Path, match_id: str) -> dict | None:
    from agent.matchlog import safe_name
    base = safe_name(match_id)
    paths = sorted(log_dir.glob(f"{base}*.json"), key=lambda p: p.stat().st_mtime)
    for p in reversed(paths):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if data.get("matchId", match_id) == match_id:
            return data
    return None


def record_summary(rec: dict | None) -> dict:
    """What our own record says about our decisions: fallbacks (the server answered
    something else than the player's finished decision) and lenient beliefs."""
    if rec is None:
        return {"record": False}
    decisions = rec.get("x-decisions") or []
    fallbacks = [d for d in decisions if d.get("fallback")]
    lenient = [d for d in decisions if (d.get("belief") or {}).get("lenient")]
    return {
        "record": True,
        "gdl2": bool(rec.get("x-gdl2")),
        "decisions": len(decisions),
        "searched": sum(1 for d in decisions if d.get("belief") is not None),
        "fallbacks": len(fallbacks),
        "fallback_reasons": sorted({d.get("fallback_reason", "") for d in fallbacks}),
        "lenient": len(lenient),
        # PLAYs the server answered without the player's decision because the player or the
        # referee took the state for terminal (or our role for moveless)
        "no_move": sum(1 for d in decisions if d.get("no_move_because")),
        "max_reply_after": max((d.get("reply_after") or 0.0 for d in decisions), default=0.0),
        "end_reason": rec.get("x-end-reason"),
        "max_belief_states": max(((d.get("belief") or {}).get("states") or 0
                                  for d in decisions), default=0),
    }


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def code_commit(code: Path) -> str:
    """The commit the servers' code is: ``git describe`` in a checkout, else the COMMIT file
    a frozen copy carries (write it when you make the copy)."""
    out = subprocess.run(["git", "-C", str(code), "describe", "--always", "--dirty", "--abbrev=7",
                          "--exclude", "*"], text=True, capture_output=True)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip()
    f = code / "COMMIT"
    return f.read_text(encoding="utf-8").strip() if f.is_file() else "unknown"


# ------------------------------------------------------------------ one match
def play_match(a, game: str, index: int, stamp: str, us: Server, opp: Server | None) -> dict:
    sheet = Path(a.corpus) / f"{game}.kif"
    text = sheet.read_text(encoding="utf-8")
    roles = roles_of(text)
    choosers = [i for i, r in enumerate(roles) if r.lower() != RANDOM]
    seat = choosers[index % len(choosers)]
    players = []
    for i, r in enumerate(roles):
        if i == seat:
            players.append(f"127.0.0.1:{us.port}")
        elif r.lower() == RANDOM or opp is None:
            players.append("random")
        else:
            players.append(f"127.0.0.1:{opp.port}")
    match_id = f"gd2-{game}-{index}-{stamp}"
    cmd = ["bash", str(Path(a.kit) / "match.sh"), str(a.gc), match_id, str(sheet),
           str(a.start), str(a.play), "2", *players]
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=a.match_timeout)
    except BaseException:
        # Ctrl-C or a hung manager: end match.sh and its java (their own session)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
    took = time.time() - t0
    res_path = Path(a.gc) / "results" / f"{match_id}.json"
    res = json.loads(res_path.read_text(encoding="utf-8")) if res_path.is_file() else {}
    ours = f"remote(player{seat + 1},"      # match.sh names seat i's remote player player<i>
    errors = res.get("errors") or []
    goals = res.get("goals")
    rec = our_record(us.log_dir, match_id)
    row = {
        "game": game, "index": index, "match_id": match_id, "roles": roles,
        "seat": seat, "role": roles[seat], "players": players,
        "opponent": ("our server, persona " + a.opponent_persona) if opp is not None else "manager's random",
        "start": a.start, "play": a.play, "goal_max": goal_max(text),
        "finished": bool(res.get("finished")), "goals": goals,
        "our_goal": None if goals is None else goals.get(roles[seat].upper(), goals.get(roles[seat])),
        "steps": len(res.get("moves") or []),
        "errors_ours": [e for e in errors if ours in e],
        "errors_other": [e for e in errors if ours not in e],
        "manager_output": out.strip().splitlines()[-1:] if out else [],
        "seconds": round(took, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": a.commit,
        **record_summary(rec),
    }
    if opp is not None:
        orec = our_record(opp.log_dir, match_id)
        s = record_summary(orec)
        row["opponent_fallbacks"] = s.get("fallbacks")
    return row


# ------------------------------------------------------------------ tables
def score_ci(scores: list[float], top: float) -> tuple[float, float, float]:
    """Mean score (0..top) with Wilson's 95 % interval, a score of s counting s/top of a win
    (as the project's other match reports count a draw as half)."""
    from agent.stats import proportion_ci
    p, lo, hi = proportion_ci(sum(scores) / top, len(scores))
    return top * p, top * lo, top * hi


def tables(rows: list[dict], games: list[str]) -> str:
    head = ("| game | opponent | matches (our seats) | our mean score [95 % Wilson] | "
            "opponent's mean | our manager errors | other manager errors | our fallbacks / PLAY "
            "replies | answered as ended | lenient decisions |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for g in games:
        rs = sorted((r for r in rows if r["game"] == g), key=lambda r: r["index"])
        if not rs:
            continue
        done = [r for r in rs if r.get("our_goal") is not None]
        scores = [float(r["our_goal"]) for r in done]
        seats = {}
        for r in rs:
            seats[r["role"]] = seats.get(r["role"], 0) + 1
        seat_txt = ", ".join(f"{k} {v}" for k, v in sorted(seats.items()))
        top = rs[0].get("goal_max") or 100
        nd = 1 if top >= 10 else 2
        if scores:
            m, lo, hi = score_ci(scores, top)
            score_txt = f"{m:.{nd}f} [{lo:.{nd}f}, {hi:.{nd}f}]" + (f" (of {top})" if top != 100 else "")
        else:
            score_txt = "-"
        opp_scores = []
        for r in done:
            others = [v for k, v in r["goals"].items()
                      if k.lower() not in (r["role"].lower(), RANDOM)]
            if others:
                opp_scores.append(sum(others) / len(others))
        opp_txt = f"{sum(opp_scores) / len(opp_scores):.{nd}f}" if opp_scores else "-"
        # the manager logs each illegal move twice (GameController.gamePlay): count events
        ours = sum(len(set(r["errors_ours"])) for r in rs)
        other = sum(len(set(r["errors_other"])) for r in rs)
        ended = sum(r.get("no_move") or 0 for r in rs)
        fb = sum(r.get("fallbacks") or 0 for r in rs)
        dec = sum(r.get("decisions") or 0 for r in rs)
        len_ = sum(r.get("lenient") or 0 for r in rs)
        unfinished = len(rs) - len(done)
        n_txt = f"{len(rs)} ({seat_txt})" + (f", {unfinished} unfinished" if unfinished else "")
        lines.append(f"| {g} | {rs[0]['opponent']} | {n_txt} | {score_txt} | {opp_txt} | "
                     f"{ours} | {other} | {fb} / {dec} | {ended} | {len_} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gc", type=Path, help="the kit's build folder (build.sh GGPSERVER_GIT OUT)")
    ap.add_argument("--games", default=None, help="comma-separated sheet names (default: every "
                    "sheet of --corpus)")
    ap.add_argument("--matches", type=int, default=10)
    ap.add_argument("--start", type=int, default=30)
    ap.add_argument("--play", type=int, default=10)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--kit", type=Path, default=KIT)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--port", type=int, default=9371, help="our server's port")
    ap.add_argument("--opponent-port", type=int, default=9372)
    ap.add_argument("--opponent-persona", default="sanguine",
                    help="persona of the second server (see the report on why not uniform)")
    ap.add_argument("--server-opponent", default=",".join(SERVER_OPPONENT),
                    help="sheets whose other chooser roles our second server plays")
    ap.add_argument("--logs", type=Path, default=None,
                    help="our servers' records and logs (default GC/us-logs, GC/opp-logs)")
    ap.add_argument("--match-timeout", type=float, default=None,
                    help="seconds before a manager run counts as hung (default: from the clocks)")
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="the checkout our servers run from (default this one); a frozen copy "
                    "(git archive COMMIT | tar -x -C DIR) keeps edits made during the run out "
                    "of the worker processes, which import the code when they start")
    ap.add_argument("--attach", action="store_true",
                    help="use servers already running on --port / --opponent-port (their "
                    "records in LOGS/us-logs, LOGS/opp-logs) instead of starting them")
    ap.add_argument("--table", action="store_true", help="print the tables of --out and stop")
    a = ap.parse_args(argv)

    sheets = sorted(p.stem for p in Path(a.corpus).glob("*.kif")) if Path(a.corpus).is_dir() else []
    games = [g.strip() for g in a.games.split(",") if g.strip()] if a.games else sheets
    unknown = [g for g in games if g not in sheets]
    if unknown:
        print(f"bench_gdl2_dresden: no sheet {', '.join(unknown)} in {a.corpus}", file=sys.stderr)
        return 2
    rows = load_rows(a.out)
    if a.table:
        print(tables(rows, games))
        return 0
    if a.gc is None or not (a.gc / "classes").is_dir():
        print("bench_gdl2_dresden: --gc must be the kit's build folder (build.sh GGPSERVER_GIT OUT)",
              file=sys.stderr)
        return 2
    if a.matches < 1 or a.start < 1 or a.play < 1:
        print("bench_gdl2_dresden: --matches, --start and --play must be positive", file=sys.stderr)
        return 2
    done = {(r["game"], r["index"]) for r in rows}
    todo = [(i, g) for i in range(a.matches) for g in games if (g, i) not in done]
    if not todo:
        print(tables(rows, games))
        return 0
    a.code = a.code.resolve()
    if not (a.code / "agent" / "server").is_dir():
        print(f"bench_gdl2_dresden: --code {a.code} holds no agent/server", file=sys.stderr)
        return 2
    a.commit = code_commit(a.code)
    stamp = time.strftime("%m%d%H%M%S")
    logs = a.logs or a.gc
    server_games = {g.strip() for g in a.server_opponent.split(",") if g.strip()}
    if a.match_timeout is None:
        a.match_timeout = 120 + HANG_FACTOR * (a.start + 400 * (a.play + 1))

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    console = Console()
    # SIGTERM ends the run as Ctrl-C does: the match under way is dropped, the servers stopped
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)     # also where a shell started us ignoring it
    us = Server(a.port, logs / "us-logs", logs / "us-server.log", [], a.code, a.attach)
    opp = None
    if any(g in server_games for _, g in todo):
        opp = Server(a.opponent_port, logs / "opp-logs", logs / "opp-server.log",
                     ["--persona", a.opponent_persona, "--threads", "1", "--no-ponder"], a.code,
                     a.attach)
    try:
        console.print(f"waiting for the server(s) to be warm (INFO available) ...")
        us.wait_available()
        if opp is not None:
            opp.wait_available()
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as prog:
            task = prog.add_task("matches", total=len(todo))
            for i, g in todo:
                prog.update(task, description=f"{g} #{i}")
                row = play_match(a, g, i, stamp, us, opp if g in server_games else None)
                append_row(a.out, row)
                rows.append(row)
                flag = "" if not row["errors_ours"] else f"  [red]{len(row['errors_ours'])} errors of ours[/red]"
                prog.console.print(f"{g} #{i} as {row['role']}: goals {row['goals']} "
                                   f"({row['seconds']:.0f} s, fallbacks {row.get('fallbacks')}, "
                                   f"lenient {row.get('lenient')}){flag}")
                prog.advance(task)
    except KeyboardInterrupt:
        console.print("interrupted: the match under way is not counted; rerun to resume")
        return 130
    finally:
        us.stop()
        if opp is not None:
            opp.stop()
    print(tables(rows, games))
    return 0


if __name__ == "__main__":
    sys.exit(main())
