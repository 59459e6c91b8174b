"""Robustness checks of the player server that take minutes (not for CI): what a careless
manager or an attacker sends, measured from the manager's side.  Each check starts its own
server (``python -m agent.server``) on a free port and prints one markdown section.

  huge-start   a START of many MiB (ticTacToe plus padding facts) sent while a breakthrough
               match runs on a 3 s clock: the match's reply times, when START is answered,
               INFO right after, and the server's event-loop lag warnings
  idle-starts  --max-matches 2: two STARTs with one-day clocks and then silence; INFO, and a
               third START, after --evict-idle
  kill-restart kill -9 during a match, a restart on the same folder (the record aged past
               the reaper's limit first): the record is marked interrupted
  exploding    a match of tests/exploding_game.py's game (3 s / 2 s clocks), PLAYs back to
               back: when and why it ends, the workers' peak memory, the latest reply
  orphans      kill -9 of the server while the exploding game's workers are busy: how long
               until every worker process is gone

Usage: python scripts/robustness.py [--checks huge-start,idle-starts,kill-restart,exploding,orphans]
           [--pad 700000] [--out docs/benchmarks/robustness.md]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from gamemanager import GameManager, ServerProcess, play_message, rules_list, start_message  # noqa: E402

TTT = rules_list((ROOT / "games" / "ticTacToe.kif").read_text())
BREAKTHROUGH = (ROOT / "games" / "breakthrough.kif").read_text()


def lag_lines(log: str) -> list[str]:
    return [line.split(" WARNING ")[-1] for line in log.splitlines() if "event loop lagged" in line]


def huge_start(base: Path, pad: int) -> str:
    big = start_message("huge.1", "cross", TTT + [f"( p{i} a{i} )" for i in range(pad)], 30, 3)
    out = {}
    (base / "huge").mkdir()
    with ServerProcess(base / "huge" / "match_logs", "--seed", "1") as s:
        def send_big():
            time.sleep(8)  # the match is under way
            t = time.monotonic()
            out["start"] = (s.send(big, timeout=120), time.monotonic() - t)
            t = time.monotonic()
            s.send("( INFO )")
            out["info"] = time.monotonic() - t
        th = threading.Thread(target=send_big)
        th.start()
        r = asyncio.run(GameManager(s.host, s.port, seed=3).play_match(
            "bt.1", BREAKTHROUGH, our_role=0, start_clock=10, play_clock=3, max_plies=40))
        th.join()
        lags = lag_lines(s.log_text())
    thinking = [x for x in r.latencies if x > 0.5] or r.latencies
    reply, secs = out.get("start", ("-", float("nan")))
    return "\n".join([
        f"## A {len(big) / 2 ** 20:.1f} MiB START during a match on a 3 s clock",
        "",
        f"- the match: {len(r.latencies)} PLAYs, the slowest reply {max(r.latencies):.2f} s "
        f"(median of the searched ones {sorted(thinking)[len(thinking) // 2]:.2f} s), manager errors "
        f"{len(r.errors)}",
        f"- the huge START: `{reply}` after {secs:.1f} s (start clock 30 s)",
        f"- INFO right after it: {out.get('info', float('nan')):.3f} s",
        f"- event-loop lag warnings (over 200 ms): {len(lags)}" + (f" ({'; '.join(lags)})" if lags else ""),
        ""])


def idle_starts(base: Path) -> str:
    lines = ["## Idle STARTs (--max-matches 2 --evict-idle 5)", ""]
    (base / "idle").mkdir()
    with ServerProcess(base / "idle" / "match_logs", "--seed", "1", "--max-matches", "2",
                       "--evict-idle", "5") as s:
        for i in (1, 2):
            lines.append(f"- START idle.{i} (clocks 86400/86400): `{s.send(start_message(f'idle.{i}', 'cross', TTT, 86400, 86400))}`")
        lines.append(f"- INFO at once: `{s.send('( INFO )')}`")
        time.sleep(7)
        lines.append(f"- INFO after 7 s of silence: `{s.send('( INFO )')}`")
        lines.append(f"- START fresh.1: `{s.send(start_message('fresh.1', 'cross', TTT, 10, 2))}`")
        lines.append(f"- PLAY for the evicted match: `{s.send(play_message('idle.1', None))}`")
        time.sleep(1)
        for i in (1, 2):
            d = json.loads((s.log_dir / f"idle.{i}.json").read_text())
            lines.append(f"- idle.{i}: isAborted {d['isAborted']}, x-end-reason: {d.get('x-end-reason', '-')}")
        s.send("( ABORT fresh.1 )")
    return "\n".join(lines + [""])


def kill_restart(base: Path) -> str:
    logs = base / "kill" / "match_logs"
    (base / "kill").mkdir()
    lines = ["## kill -9 during a match, then a restart", ""]
    s = ServerProcess(logs, "--seed", "1")
    s.__enter__()
    try:
        lines.append(f"- START k.1 (clocks 10/2): `{s.send(start_message('k.1', 'cross', TTT, 10, 2))}`")
        lines.append(f"- PLAY: `{s.send(play_message('k.1', None))}`")
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait(10)
    finally:
        s.__exit__(None, None, None)
    path = logs / "k.1.json"
    d = json.loads(path.read_text())
    lines.append(f"- after kill -9: valid JSON, isCompleted {d['isCompleted']}, isAborted {d['isAborted']}")
    old = time.time() - 3600  # as if the server stayed down for an hour
    os.utime(path, (old, old))
    with ServerProcess(logs, "--seed", "1") as s2:
        time.sleep(3)
        d = json.loads(path.read_text())
        lines.append(f"- after the restart: isAborted {d['isAborted']}, x-end-reason: {d.get('x-end-reason', '-')}")
        del s2
    return "\n".join(lines + [""])


def exploding(base: Path) -> str:
    from exploding_game import exploding_rules
    lines = ["## An exploding game (60^5 next-state facts), clocks 3/2, default limits", ""]
    (base / "explode").mkdir()
    with ServerProcess(base / "explode" / "match_logs", "--seed", "5") as s:
        t0 = time.monotonic()
        lines.append(f"- START: `{s.send(start_message('ex.1', 'red', exploding_rules(), 3, 2))}` "
                     f"after {time.monotonic() - t0:.1f} s")
        joint, d, replies = None, {}, []
        path = s.log_dir / "ex.1.json"
        for i in range(200):
            t = time.monotonic()
            reply = s.send(play_message("ex.1", joint))
            replies.append(time.monotonic() - t)
            joint = [reply, "noop"] if i % 2 == 0 else ["noop", "( mark v2 )"]
            d = json.loads(path.read_text())
            if "x-end-reason" in d:
                break
        ended = time.monotonic() - t0
        kinds = {}
        for e in d.get("x-decisions", []):
            k = e.get("fallback_move", "search")
            kinds[k] = kinds.get(k, 0) + 1
        lines += [f"- ended {ended:.1f} s after START, after {len(replies)} PLAYs: {d.get('x-end-reason', '-')}",
                  f"- peak resident memory per worker (MB, from the record): {d.get('x-peak-rss-mb')}",
                  f"- the slowest reply seen by the manager: {max(replies):.3f} s (play clock 2 s); "
                  f"the server's latest `reply_after`: {max(e['reply_after'] for e in d['x-decisions']):.3f} s",
                  f"- how the moves were chosen: {kinds}"]
        s.send("( ABORT ex.1 )")
    return "\n".join(lines + [""])


def orphans(base: Path) -> str:
    import psutil
    from exploding_game import exploding_rules
    (base / "orphans").mkdir()
    lines = ["## kill -9 of the server while its workers are busy", ""]
    s = ServerProcess(base / "orphans" / "match_logs", "--seed", "5")
    s.__enter__()
    try:
        srv = psutil.Process(s.proc.pid)
        # START answers at the start clock: kill -9 while it is still being built
        threading.Thread(target=lambda: s.send(start_message('o.1', 'red', exploding_rules(), 30, 5), timeout=60),
                         daemon=True).start()
        lines.append("- START of the exploding game (clocks 30/5), kill -9 of the server 6 s later")
        time.sleep(5)  # referee, player and grounder deep in Prolog
        kids = srv.children(recursive=True)
        for k in kids:
            k.cpu_percent(None)
        time.sleep(1)
        busy = sorted((round(k.cpu_percent(None)) for k in kids), reverse=True)
        os.kill(srv.pid, signal.SIGKILL)
        t0 = time.monotonic()
        s.proc.wait(10)
        alive = kids
        while alive and time.monotonic() - t0 < 60:
            alive = [k for k in alive if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]
            time.sleep(0.1)
        lines.append(f"- worker processes: {len(kids)} (CPU % of each in the second before: {busy}); after kill -9 of the server "
                     f"{len(alive)} left after {time.monotonic() - t0:.1f} s")
        for k in alive:
            k.kill()
    finally:
        s.__exit__(None, None, None)
    return "\n".join(lines + [""])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checks", default="huge-start,idle-starts,kill-restart")
    p.add_argument("--pad", type=int, default=700_000, help="padding facts of the huge START (700000: 13 MiB)")
    p.add_argument("--out", default=None, help="write the report here as well")
    args = p.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="robustness-"))
    sections = []
    for check in args.checks.split(","):
        if check == "huge-start":
            sections.append(huge_start(base, args.pad))
        elif check == "idle-starts":
            sections.append(idle_starts(base))
        elif check == "kill-restart":
            sections.append(kill_restart(base))
        elif check == "exploding":
            sections.append(exploding(base))
        elif check == "orphans":
            sections.append(orphans(base))
        else:
            print(f"unknown check {check}", file=sys.stderr)
            return 2
        print(sections[-1], flush=True)
    if args.out:
        head = ("# Server robustness\n\nChecks that take minutes, run by "
                f"`python scripts/robustness.py --checks {args.checks} --pad {args.pad}` on a 2-core "
                "machine shared with other work.\n\n")
        Path(args.out).write_text(head + "\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
