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
  README "Limits"), our own uniform sampler (``--opponent uniform``, the default): this
  script run as ``--serve-uniform PORT``, a GGP server that keeps a small belief of the
  project's GDL-II player (``agent.hidden``: its own moves and percepts, histories consistent
  with them) only to know its legal moves, and answers one of them uniformly at random; or
  (``--opponent persona``) a second instance of our server with ``--opponent-persona``.

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
``docs/benchmarks/gdl2-dresden.jsonl``, kept compressed by scripts/benchrows.py; the file is rewritten whole through a temporary file):
game, seat, goals, the manager's error lines that name our player (illegal move, timed
out), the others, and from our own record the decisions, fallbacks and lenient decisions.
A rerun skips the (game, match index) pairs already there for the same commit, clocks and
opponent, so an interrupted run (Ctrl-C stops the match under way, which is then not
counted, and the servers this script started) resumes where it stopped.  Matches go index by
index over the games, so a cut run has every game to the same depth.

Several series may run at once, each with its own ``--port``/``--opponent-port`` and
``--logs``: a series claims each match before it plays it (a file in ``OUT/claims``), so
series given the same games share their matches out, each played once; rows are added under
a lock on the results' folder.  An interrupted match's claim is freed; a series killed
outright leaves its claim (delete the file to play that match again).

    B="python scripts/bench_gdl2_dresden.py --gc OUT --code OUT/code"
    $B --games battleship --port 9381 --opponent-port 9382 --logs OUT/b1 &
    $B --games battleship --port 9383 --opponent-port 9384 --logs OUT/b2 &
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import benchrows  # noqa: E402  (rows under docs/ are kept compressed)

RESULTS = ROOT / "docs" / "benchmarks" / "gdl2-dresden.jsonl"
CORPUS = SHARED / "corpus" / "gdl2"
KIT = SHARED / "tools" / "gamecontroller"
RANDOM = "random"
# The kit's README, "Limits": the manager's random player times out on these sheets.
SERVER_OPPONENT = ("battleship", "phantom_connect_4x4", "phantom_connect_5x5")
# The manager gives a START 1 s and a PLAY 1 s beyond its clocks, plus connection time; a
# match whose manager has not ended after this many clocks has hung.
HANG_FACTOR = 3
# Seconds a server we started may take to warm up before its matches start anyway
WARM_LIMIT = 900.0


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


def append_row(path: Path, row: dict) -> None:
    """The results with one more row (``benchrows``: compressed under docs/, rewritten whole
    through a temporary file, never half a file), under an exclusive lock on the folder:
    series run at once each add to the file as it is then, never to a copy read before
    another series' row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(dfd, fcntl.LOCK_EX)
        benchrows.write(path, benchrows.read(path) + [row])
    finally:
        os.close(dfd)     # releases the lock


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
                 attach: bool = False, cmd: list[str] | None = None):
        self.port = port
        self.log_dir = log_dir
        self.proc = None
        self.uniform = cmd is not None     # our uniform sampler (``--serve-uniform``)
        self.warm_limit = WARM_LIMIT
        if attach:   # a server already running (started as below), its records in log_dir
            if info(port) is None:
                sys.exit(f"bench_gdl2_dresden: --attach: nothing answers on port {port}")
            return
        if info(port, timeout=1.0) is not None:
            sys.exit(f"bench_gdl2_dresden: something already answers on port {port}; "
                     "choose another with --port / --opponent-port")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(log_file, "a", encoding="utf-8")
        if cmd is None:
            cmd = [sys.executable, "-m", "agent.server", "--host", "127.0.0.1", "--port", str(port),
                   "--log-dir", str(log_dir), *extra]
        # ``python -m`` finds the package in its working folder first: the code of ``code``
        # plays, with numba's cache beside it (setup.sh's place for it)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(code / ".cache" / "numba"))
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def wait_available(self, limit: float = 1800.0) -> None:
        """The first start compiles numba code (minutes).  INFO says available as soon as a
        START would be taken, warm-up or not (37efacb), and a match started meanwhile
        gets a player still loading (fallbacks): a server we started is waited for until
        its log says the warm-up is over ("... ready on http://")."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if self.proc is not None and self.proc.poll() is not None:
                sys.exit(f"bench_gdl2_dresden: the server on port {self.port} ended "
                         f"(exit {self.proc.returncode}); see {self.log.name}")
            if info(self.port) == "available" and self.warm():
                return
            time.sleep(2.0)
        sys.exit(f"bench_gdl2_dresden: the server on port {self.port} is not available "
                 f"after {limit:.0f} s")

    def warm(self) -> bool:
        if self.proc is None or self.uniform:   # attached, or no warm-up to wait for
            return True
        try:
            text = Path(self.log.name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        # "ready on ... (player process warm after ...)"; "still warming" comes after the
        # server's own 300 s: its spare is still compiling, a START would get a cold player
        if re.search(r"ready on http://\S+ \(player process warm", text):
            return True
        # past the server's 300 s its log says "still warming", and later that the warm-up
        # compiled its functions: numba's cache has them, so a START's player loads them
        if "ready on http://" in text and re.search(r"compiled \d+ functions in its warm-up", text):
            return True
        return "ready on http://" in text and time.monotonic() - self.started > self.warm_limit

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


def _counts(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


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
        # which fallback each was ("best so far", "random", "guess", "none") and, in GDL-II,
        # whose legal moves a random one drew from (the player's belief, the referee's
        # consistent or closest history)
        "fallback_kinds": _counts(d.get("fallback_move", "?") for d in fallbacks),
        "fallback_legal_from": _counts(d["legal_from"].split(" (")[0] for d in fallbacks
                                       if d.get("legal_from")),
        "lenient": len(lenient),
        # PLAYs the server answered without the player's decision because the player or the
        # referee took the state for terminal (or our role for moveless)
        "no_move": sum(1 for d in decisions if d.get("no_move_because")),
        "max_reply_after": max((d.get("reply_after") or 0.0 for d in decisions), default=0.0),
        "end_reason": rec.get("x-end-reason"),
        "max_belief_states": max(((d.get("belief") or {}).get("states") or 0
                                  for d in decisions), default=0),
    }


def claim_match(a, game: str, index: int) -> Path | None:
    """Take (game, index) of this run for this series: series run at once with the same
    games and indices share them out, each match played once.  A file per match under
    ``GC/claims`` made with O_EXCL; None when another series made it first (or played it)."""
    d = Path(a.gc) / "claims"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{a.commit}-{a.start}-{a.play}-{a.opponent}-{game}-{index}"
    try:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return None
    return p


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


# ------------------------------------------------------------------ our uniform sampler
UNIFORM_PARTICLES = 16    # histories the sampler keeps: enough to know its legal moves
# A PLAY's deadline for the sampler's belief, by default (HiddenPlayer.observe gives the
# update 0.4 of it, a rebuild that ran empty up to 0.7): a belief that runs empty and finds
# no history again is lenient, and its legal moves may be wrong (a phantom board's 8
# histories found none in 1.2 s and the sampler answered NOOP while it held control); its CPU
# is shared with the players measured
UNIFORM_DEADLINE = 6.0


def serve_uniform(port: int, code: Path, log_dir: Path, seed: int,
                  belief_seconds: float = UNIFORM_DEADLINE) -> int:
    """A GGP server for Dresden's GDL-II messages that plays uniformly at random among its
    legal moves.  It knows only what a player may know: its own moves and its percepts; a
    small belief of the project's GDL-II player (``agent.hidden``, histories consistent with
    both, on the compiled engine when it builds) tells it which moves are legal (those legal
    in every kept history, a well-formed GDL-II game lets a role know them).  No search.
    After each match (STOP or ABORT) it writes ``LOG_DIR/<id>.uniform.json``: per step the
    number of legal moves, whether the belief was lenient, the seconds taken, and errors."""
    sys.path.insert(0, str(code))        # the frozen copy's agent, not this checkout's
    import random as _random
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from agent.hidden.belief import Belief
    from agent.hidden.player import HiddenPlayer
    from agent.hidden.prior import UniformPrior
    from agent.server.matches import gdl2_view
    from agent.server.protocol import ProtocolError, decode_body, parse_message
    from gdl.terms import render_spaced

    log_dir.mkdir(parents=True, exist_ok=True)
    matches: dict = {}
    lock = threading.Lock()              # one message at a time: the belief is not shared

    def save(match_id: str, m: dict) -> None:
        from agent.matchlog import safe_name
        out = log_dir / f"{safe_name(match_id)}.uniform.json"
        fd, tmp = tempfile.mkstemp(dir=log_dir, prefix=".uniform.", suffix=".new")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"matchId": match_id, "role": m["role"], "engine": m["engine"],
                       "notes": m["notes"], "steps": m["steps"], "errors": m["errors"]}, f)
        os.replace(tmp, out)

    def handle(text: str) -> str:
        try:
            msg = parse_message(text)
        except ProtocolError as e:
            print(f"uniform: bad message ({e})", flush=True)
            return "ERROR"
        if msg.kind == "info":
            return "( ( name uniform-sampler ) ( status available ) )"
        if msg.kind == "start":
            t0 = time.monotonic()
            # a generator of the match's own: samplers of series run at once, or two of them
            # in one match, must not draw the same moves
            rng = _random.Random(f"{seed}|{msg.match_id}|{msg.role}")
            h = HiddenPlayer(msg.rules_text, msg.role, msg.play_clock, None,
                             seed=rng.randrange(2 ** 31), use_engine=True, use_search=False)
            notes = []
            try:
                h.prepare()
                h.belief = Belief(h.sm, h.role_index, UniformPrior(),
                                  rng=_random.Random(h.seed), size=UNIFORM_PARTICLES)
                notes += h.upgrade(max(1.0, 0.6 * msg.start_clock - (time.monotonic() - t0)))
            except Exception as e:   # a sheet the player refuses: answer NOOP, say why
                notes.append(f"{type(e).__name__}: {e}")
                h = None
            matches[msg.match_id] = {"player": h, "rng": rng, "role": msg.role, "last": None,
                                     "notes": notes,
                                     "engine": getattr(h, "engine_kind", None), "steps": [],
                                     "errors": [], "clock": msg.play_clock}
            return "READY"
        m = matches.get(msg.match_id)
        if msg.kind in ("stop", "abort"):
            if m is not None:
                save(msg.match_id, m)
                if m["player"] is not None:
                    m["player"].close()
                del matches[msg.match_id]
            return "DONE"
        if msg.kind != "play" or m is None or m["player"] is None:
            return "NOOP"
        t0 = time.monotonic()
        h = m["player"]
        step = {"ply": len(m["steps"]) + 1}
        try:
            view = gdl2_view(msg, m["last"])
            if view is not None:
                h.observe(view, deadline=t0 + min(belief_seconds, 0.8 * m["clock"]))
            legal = h.legal()
            step.update(legal=len(legal), lenient=bool(h.belief.lenient))
            move = render_spaced(m["rng"].choice(legal)) if legal else "NOOP"
        except Exception as e:   # never a crash: the manager replaces what it must
            m["errors"].append(f"ply {step['ply']}: {type(e).__name__}: {e}")
            move = m["last"] or "NOOP"
        m["last"] = move
        step["seconds"] = round(time.monotonic() - t0, 3)
        m["steps"].append(step)
        return move

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"    # the manager reads the body until the connection closes

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            text = decode_body(self.rfile.read(n))
            with lock:
                try:
                    reply = handle(text).encode()
                except Exception as e:   # a bug of ours must not cost the manager a reply
                    print(f"uniform: {type(e).__name__}: {e}", flush=True)
                    reply = b"NOOP"
            self.send_response(200)
            self.send_header("Content-Type", "text/acl")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, fmt, *args):   # one line per message is noise
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"uniform sampler on port {port}, code {code}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def uniform_summary(log_dir: Path, match_id: str) -> dict:
    from agent.matchlog import safe_name
    p = log_dir / f"{safe_name(match_id)}.uniform.json"
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {"opponent_record": False}
    steps = d.get("steps") or []
    return {"opponent_record": True, "opponent_engine": d.get("engine"),
            "opponent_lenient": sum(1 for s in steps if s.get("lenient")),
            "opponent_no_legal": sum(1 for s in steps if s.get("legal") == 0),
            "opponent_errors": d.get("errors") or [],
            "opponent_max_seconds": max((s.get("seconds") or 0.0 for s in steps), default=0.0)}


REPLY = re.compile(r"reply from (player\d+): .* after (\d+)ms")


def reply_times(log_path: Path, player: str) -> list[float]:
    """Seconds each reply of ``player`` (``player<seat+1>``) took, from the manager's log
    (START's READY included)."""
    out = []
    try:
        with open(log_path, encoding="latin-1") as f:
            for line in f:
                m = REPLY.search(line)
                if m and m.group(1) == player:
                    out.append(int(m.group(2)) / 1000.0)
    except OSError:
        pass
    return out


def classify(errors: list[str]) -> dict:
    """The manager's error lines about one player, as events (it logs an illegal move twice):
    late (``timed out``, then its missing move as ``Illegal move "null"``), illegal (a reply
    it refused), failed (anything else: connection, parse errors)."""
    events = sorted(set(errors))
    late = [e for e in events if "timed out" in e]
    illegal = [e for e in events if "Illegal move" in e and 'Illegal move "null"' not in e]
    nulls = [e for e in events if 'Illegal move "null"' in e]
    failed = [e for e in events if e not in late and e not in illegal and e not in nulls]
    if nulls and not late:          # no reply at all without a timeout line: a failure
        failed += nulls
    return {"late": len(late), "illegal": len(illegal), "failed": len(failed)}


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while a match runs."""

    def __init__(self, every: float = 15.0):
        self.every, self.samples = every, []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while True:
            self.samples.append(round(os.getloadavg()[0], 2))
            if self._stop.wait(self.every):
                return

    def stop(self) -> list[float]:
        self._stop.set()
        self._t.join()
        return self.samples


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
    sampler = LoadSampler()
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
    finally:
        loads = sampler.stop()
    took = time.time() - t0
    res_path = Path(a.gc) / "results" / f"{match_id}.json"
    res = json.loads(res_path.read_text(encoding="utf-8")) if res_path.is_file() else {}
    ours = f"remote(player{seat + 1},"      # match.sh names seat i's remote player player<i>
    errors = res.get("errors") or []
    goals = res.get("goals")
    rec = our_record(us.log_dir, match_id)
    ours_errors = [e for e in errors if ours in e]
    replies = reply_times(Path(a.gc) / "results" / f"{match_id}.log", f"player{seat + 1}")
    row = {
        "game": game, "index": index, "match_id": match_id, "roles": roles,
        "seat": seat, "role": roles[seat], "players": players,
        "opponent": ("manager's random" if opp is None else "our uniform sampler" if opp.uniform
                     else "our server, persona " + a.opponent_persona),
        "opponent_kind": a.opponent,
        "start": a.start, "play": a.play, "goal_max": goal_max(text),
        "finished": bool(res.get("finished")), "goals": goals,
        "our_goal": None if goals is None else goals.get(roles[seat].upper(), goals.get(roles[seat])),
        "steps": len(res.get("moves") or []),
        "errors_ours": ours_errors,
        "errors_other": [e for e in errors if ours not in e],
        **{f"{k}_ours": v for k, v in classify(ours_errors).items()},
        # the manager's own timing of our replies: the first is START's READY
        "max_play_reply": max(replies[1:], default=None),
        # past the clock itself, inside the manager's extra second (not late to it)
        "over_clock": sum(1 for t in replies[1:] if t > a.play),
        "replies": len(replies),
        "manager_output": out.strip().splitlines()[-1:] if out else [],
        "seconds": round(took, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
        "load_samples": loads,            # the 1-minute load every 15 s during the match
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": a.commit,
        **record_summary(rec),
    }
    if opp is not None and opp.uniform:
        row.update(uniform_summary(opp.log_dir, match_id))
    elif opp is not None:
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
            "opponent's mean | our late / illegal / failed replies | opponent's manager errors | "
            "our fallbacks / PLAY replies | answered as ended | lenient decisions | "
            "longest reply (s) | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
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
        kinds = [classify(r["errors_ours"]) for r in rs]
        ours = " / ".join(str(sum(k[x] for k in kinds)) for x in ("late", "illegal", "failed"))
        other = sum(len(set(r["errors_other"])) for r in rs)
        ended = sum(r.get("no_move") or 0 for r in rs)
        fb = sum(r.get("fallbacks") or 0 for r in rs)
        dec = sum(r.get("decisions") or 0 for r in rs)
        len_ = sum(r.get("lenient") or 0 for r in rs)
        longest = max((r.get("max_play_reply") or r.get("max_reply_after") or 0.0 for r in rs),
                      default=0.0)
        loads = sorted(x for r in rs for x in (r.get("load_samples") or [r["load"][0]]))
        load_txt = (f"{loads[0]:.1f}-{loads[-1]:.1f} (median {loads[len(loads) // 2]:.1f})"
                    if loads else "-")
        unfinished = len(rs) - len(done)
        n_txt = f"{len(rs)} ({seat_txt})" + (f", {unfinished} unfinished" if unfinished else "")
        lines.append(f"| {g} | {rs[0]['opponent']} | {n_txt} | {score_txt} | {opp_txt} | "
                     f"{ours} | {other} | {fb} / {dec} | {ended} | {len_} | {longest:.2f} | {load_txt} |")
    return "\n".join(lines)


def same_run(r: dict, commit: str, start: int, play: int, opponent: str) -> bool:
    """Rows of one run: the same code, clocks and kind of opponent on the board sheets."""
    return (r.get("commit") == commit and r.get("start") == start and r.get("play") == play
            and r.get("opponent_kind", "persona") == opponent and not r.get("cold_server"))


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
    ap.add_argument("--opponent", choices=("uniform", "persona"), default="uniform",
                    help="on the sheets of --server-opponent: our uniform sampler (default), or "
                    "a second instance of our server with --opponent-persona")
    ap.add_argument("--opponent-persona", default="sanguine",
                    help="persona of the second server with --opponent persona")
    ap.add_argument("--indices", default=None,
                    help="comma-separated match indices to play (default 0..MATCHES-1): one "
                    "sheet's matches split over series run at once")
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
    ap.add_argument("--warm-limit", type=float, default=WARM_LIMIT, metavar="SECONDS",
                    help="seconds a server we start may take to warm up (numba compiling) "
                    f"before its matches start anyway (default {WARM_LIMIT:.0f})")
    ap.add_argument("--attach", action="store_true",
                    help="use servers already running on --port / --opponent-port (their "
                    "records in LOGS/us-logs, LOGS/opp-logs) instead of starting them")
    ap.add_argument("--table", action="store_true", help="print the tables of --out and stop "
                    "(the rows of --commit, default the newest row's, at --start/--play "
                    "against --opponent)")
    ap.add_argument("--commit", default=None, help="with --table: the commit whose rows to show")
    ap.add_argument("--serve-uniform", type=int, metavar="PORT", default=None,
                    help="serve our uniform sampler on PORT (what the script starts as the "
                    "opponent; records in --logs)")
    ap.add_argument("--seed", type=int, default=52, help="the uniform sampler's seed")
    ap.add_argument("--uniform-belief", type=float, default=UNIFORM_DEADLINE, metavar="SECONDS",
                    help="the uniform sampler's time to a PLAY's deadline for its belief "
                    f"(at most 0.8 of the play clock; default {UNIFORM_DEADLINE})")
    a = ap.parse_args(argv)
    if a.serve_uniform is not None:
        if a.logs is None:
            print("bench_gdl2_dresden: --serve-uniform needs --logs", file=sys.stderr)
            return 2
        return serve_uniform(a.serve_uniform, a.code.resolve(), a.logs, a.seed, a.uniform_belief)

    sheets = sorted(p.stem for p in Path(a.corpus).glob("*.kif")) if Path(a.corpus).is_dir() else []
    games = [g.strip() for g in a.games.split(",") if g.strip()] if a.games else sheets
    unknown = [g for g in games if g not in sheets]
    if unknown:
        print(f"bench_gdl2_dresden: no sheet {', '.join(unknown)} in {a.corpus}", file=sys.stderr)
        return 2
    rows = benchrows.read(a.out)
    if a.table:
        commit = a.commit or (rows[-1].get("commit") if rows else None)
        print(tables([r for r in rows if same_run(r, commit, a.start, a.play, a.opponent)], games))
        return 0
    if a.gc is None or not (a.gc / "classes").is_dir():
        print("bench_gdl2_dresden: --gc must be the kit's build folder (build.sh GGPSERVER_GIT OUT)",
              file=sys.stderr)
        return 2
    if a.matches < 1 or a.start < 1 or a.play < 1:
        print("bench_gdl2_dresden: --matches, --start and --play must be positive", file=sys.stderr)
        return 2
    try:
        indices = ([int(x) for x in a.indices.split(",") if x.strip()] if a.indices
                   else list(range(a.matches)))
    except ValueError:
        print(f"bench_gdl2_dresden: --indices {a.indices!r} is not a list of numbers", file=sys.stderr)
        return 2
    a.code = a.code.resolve()
    if not (a.code / "agent" / "server").is_dir():
        print(f"bench_gdl2_dresden: --code {a.code} holds no agent/server", file=sys.stderr)
        return 2
    a.commit = code_commit(a.code)
    rows = [r for r in rows if same_run(r, a.commit, a.start, a.play, a.opponent)]
    done = {(r["game"], r["index"]) for r in rows}
    todo = [(i, g) for i in indices for g in games if (g, i) not in done]
    if not todo:
        print(tables(rows, games))
        return 0
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
        cmd = None
        if a.opponent == "uniform":
            cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-uniform",
                   str(a.opponent_port), "--code", str(a.code), "--logs", str(logs / "opp-logs"),
                   "--seed", str(a.seed), "--uniform-belief", str(a.uniform_belief)]
        opp = Server(a.opponent_port, logs / "opp-logs", logs / "opp-server.log",
                     ["--persona", a.opponent_persona, "--threads", "1", "--no-ponder"], a.code,
                     a.attach, cmd=cmd)
    us.warm_limit = a.warm_limit
    try:
        console.print("waiting for the server(s) to be warm (INFO available, warm-up logged) ...")
        us.wait_available()
        if opp is not None:
            opp.wait_available()
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as prog:
            task = prog.add_task("matches", total=len(todo))
            for i, g in todo:
                claim = claim_match(a, g, i)
                if claim is None:     # another series has it
                    prog.advance(task)
                    continue
                prog.update(task, description=f"{g} #{i}")
                try:
                    row = play_match(a, g, i, stamp, us, opp if g in server_games else None)
                except BaseException:
                    claim.unlink(missing_ok=True)    # not played: free for a rerun
                    raise
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
    # every series' rows of this run, not only this one's
    print(tables([r for r in benchrows.read(a.out) if same_run(r, a.commit, a.start, a.play, a.opponent)],
                 games))
    return 0


if __name__ == "__main__":
    sys.exit(main())
