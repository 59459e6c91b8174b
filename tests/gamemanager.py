"""A small GGP game manager for tests, speaking like ggp-base's GameServer.

Messages are built byte for byte as ggp-base's RequestBuilder writes them (upper-case
keywords, spaced terms, ``(( role x ) ...) 60 15)``), and sent either

  * ``raw``: over a plain socket, exactly ggp-base's HttpWriter request (HTTP/1.0, CRLF,
    ``Content-Type: text/acl``), reading the reply to end of stream like Dresden; or
  * ``httpx``: with httpx (HTTP/1.1), with ggp-base's headers.

The manager is also the referee: it runs the game on its own Prolog reasoner, plays every
other role with uniformly random legal moves, checks each reply (parses, legal, in time)
and substitutes a random legal move for a bad one, as ggp-base does.  Games can be sent
scrambled: every symbol except GDL keywords and integers renamed consistently, as Tiltyard
does; the manager then plays the scrambled game, so a reply must use the scrambled names.
"""
from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass, field

import httpx

from gdl.kif import GdlError, parse_rules, parse_term, read_nodes
from gdl.terms import render_spaced

# ggp-base's GameServer waits for a PLAY reply until the play clock + 1 s (ggp-facts 3.1);
# later is a timeout (TO).  Our server aims at the clock minus its margin; this is the limit.
PLAY_GRACE = 1.0

NEVER_SCRAMBLED = {"init", "true", "next", "role", "does", "goal", "legal", "terminal", "base",
                   "input", "random", "_", "<=", "not", "distinct", "or"}


# ------------------------------------------------------------------------- GDL text

def render_literal(lit) -> str:
    if isinstance(lit, tuple) and lit[0] in ("not", "or"):
        return "( " + " ".join([lit[0]] + [render_literal(x) for x in lit[1:]]) + " )"
    return render_spaced(lit)  # sentences, and distinct (its arguments are plain terms)


def render_rule(rule) -> str:
    """ggp-base's rendering: ``( <= ( legal ?w ( mark ?x ?y ) ) ( true ( cell ?x ?y b ) ) )``."""
    if rule.is_fact:
        return render_spaced(rule.head)
    return "( <= " + render_spaced(rule.head) + " " + " ".join(render_literal(b) for b in rule.body) + " )"


def rules_list(kif_text: str) -> list[str]:
    """The rules of a rule sheet as ggp-base sends them (comments gone, terms spaced)."""
    return [render_rule(r) for r in parse_rules(kif_text).rules]


def _is_int(tok: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", tok) is not None and abs(int(tok)) < 2 ** 31


def make_words(rng: random.Random):
    """An endless supply of distinct pronounceable words (our own generator, not a list)."""
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    seen = set(NEVER_SCRAMBLED)
    while True:
        n = rng.randint(2, 4)
        w = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n))
        if w not in seen:
            seen.add(w)
            yield w


class Scrambler:
    """Consistent renaming of every symbol but keywords and integers (case-insensitive for
    keywords, like ggp-base; other names keep their identity exactly)."""

    def __init__(self, seed: int = 0):
        self.words = make_words(random.Random(seed))
        self.mapping: dict[str, str] = {}

    def token(self, tok: str) -> str:
        if tok in "()" or tok.lower() in NEVER_SCRAMBLED or _is_int(tok):
            return tok
        var = tok.startswith("?")
        key = tok
        if key not in self.mapping:
            self.mapping[key] = ("?" if var else "") + next(self.words)
        return self.mapping[key]

    def text(self, text: str) -> str:
        return re.sub(r"[^\s()]+", lambda m: self.token(m.group(0)), text)


# ------------------------------------------------------------------------- messages

def start_message(match_id: str, role: str, rules: list[str], start_clock: int, play_clock: int) -> str:
    return f"( START {match_id} {role} ({' '.join(rules)} ) {start_clock} {play_clock})"


def play_message(match_id: str, joint: list[str] | None, kind: str = "PLAY") -> str:
    if joint is None:
        return f"( {kind} {match_id} NIL )"
    return f"( {kind} {match_id} (" + "".join(m + " " for m in joint) + ") )"


def raw_request(body: str, receiver: str = "ggp-persona", host: str = "127.0.0.1") -> bytes:
    """ggp-base's HttpWriter.writeAsClient, byte for byte."""
    return (f"POST / HTTP/1.0\r\nAccept: text/delim\r\nHost: {host}\r\nSender: GAMESERVER\r\n"
            f"Receiver: {receiver}\r\nContent-Type: text/acl\r\nContent-Length: {len(body)}\r\n\r\n"
            f"{body}").encode("utf-8")


def split_response(data: bytes) -> tuple[str, dict, str]:
    """(status line, headers with lower-case names, body)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body.decode("utf-8", "replace")


async def send_raw(host: str, port: int, data: bytes, timeout: float = 30.0) -> bytes:
    """Write the bytes, read until the server closes (as Dresden does)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except Exception:
            pass


class Transport:
    def __init__(self, host: str, port: int, kind: str = "raw", receiver: str = "ggp-persona"):
        self.host, self.port, self.kind, self.receiver = host, port, kind, receiver

    async def send(self, body: str, timeout: float = 30.0) -> tuple[str, float]:
        """The reply body (trimmed, as ggp-base reads it) and the seconds it took."""
        t0 = time.monotonic()
        if self.kind == "raw":
            data = await send_raw(self.host, self.port, raw_request(body, self.receiver), timeout)
            status, headers, text = split_response(data)
            if not status.startswith("HTTP/"):
                raise AssertionError(f"no status line in {data[:100]!r}")
            n = int(headers["content-length"])
            if len(text.encode("utf-8")) != n:
                raise AssertionError(f"Content-Length {n} but body {text!r}")
        else:
            async with httpx.AsyncClient(timeout=timeout) as client:
                r = await client.post(f"http://{self.host}:{self.port}/", content=body.encode("utf-8"),
                                      headers={"Accept": "text/delim", "Sender": "GAMESERVER",
                                               "Receiver": self.receiver, "Content-Type": "text/acl"})
                if r.status_code >= 500:
                    raise AssertionError(f"HTTP {r.status_code}")
                text = r.text
        return text.strip(), time.monotonic() - t0


# ------------------------------------------------------------------------- matches

@dataclass
class MatchResult:
    match_id: str
    roles: list
    our_role: int
    start_reply: str = ""
    start_seconds: float = 0.0
    moves: list = field(default_factory=list)          # joint moves as sent (texts)
    replies: list = field(default_factory=list)        # our raw replies
    latencies: list = field(default_factory=list)      # seconds per PLAY
    errors: list = field(default_factory=list)         # (ply, kind, detail)
    goals: list | None = None
    stop_reply: str = ""
    states: list = field(default_factory=list)


class GameManager:
    def __init__(self, host: str, port: int, transport: str = "raw", seed: int = 0):
        self.transport = Transport(host, port, transport)
        self.rng = random.Random(seed)

    async def info(self) -> str:
        return (await self.transport.send("( INFO )", timeout=5))[0]

    async def play_match(self, match_id: str, kif_text: str, our_role: int = 0, start_clock: int = 10,
                         play_clock: int = 2, scramble: int | None = None, max_plies: int = 400,
                         abort_after: int | None = None, on_ply=None) -> MatchResult:
        """One full match: START, PLAY until terminal (or ``abort_after`` plies: ABORT), STOP."""
        from agent.reasoner.prolog import PrologReasoner
        rules = rules_list(kif_text)
        if scramble is not None:
            sc = Scrambler(scramble)
            rules = [sc.text(r) for r in rules]
        desc = parse_rules(" ".join(rules))
        sm = PrologReasoner(desc)
        try:
            roles = [render_spaced(r) for r in sm.roles]
            res = MatchResult(match_id, roles, our_role)
            res.start_reply, res.start_seconds = await self.transport.send(
                start_message(match_id, roles[our_role], rules, start_clock, play_clock),
                timeout=start_clock + 5)
            state = sm.initial_state()
            res.states.append(state)
            joint_sent = None
            ply = 0
            while not sm.is_terminal(state) and ply < max_plies:
                if abort_after is not None and ply >= abort_after:
                    reply, _ = await self.transport.send(f"( ABORT {match_id} )", timeout=5)
                    res.stop_reply = reply
                    return res
                reply, secs = await self.transport.send(play_message(match_id, joint_sent),
                                                        timeout=play_clock + 5)
                res.replies.append(reply)
                res.latencies.append(secs)
                legal = [sm.legal_moves(state, i) for i in range(len(roles))]
                joint = [self.rng.choice(ms) for ms in legal]
                try:
                    ours = parse_term(reply)
                except GdlError:
                    ours = None
                if ours is None or ours not in legal[our_role]:
                    res.errors.append((ply, "IL", reply))
                elif secs > play_clock + PLAY_GRACE:
                    res.errors.append((ply, "TO", f"{secs:.3f}s"))
                else:
                    joint[our_role] = ours
                joint_sent = [render_spaced(m) for m in joint]
                res.moves.append(joint_sent)
                state = sm.next_state(state, joint)
                res.states.append(state)
                ply += 1
                if on_ply is not None:
                    await on_ply(ply)
            res.goals = [max(v) if v else 0 for v in sm.goal_values(state)]
            res.stop_reply, _ = await self.transport.send(play_message(match_id, joint_sent, "STOP"),
                                                          timeout=play_clock + 5)
            return res
        finally:
            sm.close()


# ------------------------------------------------------------------------- the server under test

def finished(record: dict) -> bool:
    return record["isCompleted"] or record["isAborted"]


def wait_for_record(server, match_id, until=finished, wait=30.0):
    """The server's record of a match once ``until(record)`` holds (by default: completed
    or aborted), read again every 0.2 s for at most ``wait`` seconds; then the last one read
    (None when there was none)."""
    import json
    path = server.log_dir / f"{match_id}.json"
    deadline = time.monotonic() + wait
    d = None
    while time.monotonic() < deadline:
        if path.exists():
            d = json.loads(path.read_text())
            if until(d):
                return d
        time.sleep(0.2)
    return d


class ServerProcess:
    """``python -m agent.server`` on a free port, as a context manager; stderr goes to
    ``log_path`` so a failing test can show what the server said."""

    def __init__(self, log_dir, *args: str, root=None, env=None):
        import os
        import socket
        import sys
        from pathlib import Path

        self.root = Path(root or Path(__file__).resolve().parents[1])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.host = "127.0.0.1"
        self.log_dir = Path(log_dir)
        self.log_path = self.log_dir.parent / f"server-{self.port}.log"
        self.cmd = [sys.executable, "-m", "agent.server", "--host", self.host, "--port", str(self.port),
                    "--log-dir", str(self.log_dir), *args]
        self.env = dict(os.environ)
        self.env.setdefault("NUMBA_CACHE_DIR", str(self.root / ".cache" / "numba"))
        self.env.update(env or {})
        self.proc = None

    def __enter__(self):
        import socket
        import subprocess

        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, cwd=self.root, env=self.env, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 400  # a cold numba cache compiles for a while first
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}):\n{self.log_text()}")
            try:
                # INFO says available as soon as STARTs are taken; tests wait for the warm-up's
                # end too (the log's "ready on"), so their first match gets a warm player
                with socket.create_connection((self.host, self.port), timeout=1) as s:
                    s.sendall(raw_request("( INFO )"))
                    if b"available" in s.recv(4096) and self.warmed():
                        return self
                time.sleep(0.2)
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"server did not come up:\n{self.log_text()}")

    def __exit__(self, *exc):
        import subprocess

        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()

    def warmed(self) -> bool:
        """Whether the server has logged the end of its warm-up ("... ready on http://")."""
        try:
            return b" ready on http://" in self.log_path.read_bytes()
        except OSError:
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def manager(self, transport: str = "raw", seed: int = 0) -> GameManager:
        return GameManager(self.host, self.port, transport, seed)

    def raw(self, data: bytes, timeout: float = 30.0) -> bytes:
        return asyncio.run(send_raw(self.host, self.port, data, timeout))

    def send(self, body: str, timeout: float = 30.0) -> str:
        """One message as ggp-base sends it; the reply body."""
        return split_response(self.raw(raw_request(body), timeout))[2]
