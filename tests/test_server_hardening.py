"""The server against what a public port meets: rules that exhaust memory, slow clients,
absurd clocks, ABORT/STOP during START, a bind on a port in use, a fresh start that is still
warming up.  Timing is only checked against the protocol's real limits (the clocks a
manager gives, the 1 s it waits for INFO and ABORT), never against how fast this machine is.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from exploding_game import exploding_rules
from gamemanager import (ServerProcess, parse_term, play_message, raw_request, rules_list,
                         split_response, start_message, wait_for_record)

from conftest import ROOT

TTT = (ROOT / "games" / "ticTacToe.kif").read_text()
READ_TIMEOUT = 2
MAX_CONNECTIONS = 16
WORKER_MB = 700


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("hardening")
    # Prolog's own stack limit above the cap, so that the exploding rules reach the server's
    # watchdog (by default Prolog's limit sits below the cap and usually fails first).
    with ServerProcess(base / "match_logs", "--seed", "5", "--read-timeout", str(READ_TIMEOUT),
                       "--max-connections", str(MAX_CONNECTIONS), "--worker-memory-mb", str(WORKER_MB),
                       "--prolog-stack-mb", "4096") as s:
        yield s
        assert s.alive(), s.log_text()


record = wait_for_record


def timed_send(server, body, timeout=60.0):
    t0 = time.monotonic()
    reply = server.send(body, timeout=timeout)
    return reply, time.monotonic() - t0


# --------------------------------------------------------------------------- memory, legal first

def test_exploding_rules_end_the_match_cleanly(server):
    """A valid game whose next state has 60^5 facts: the first PLAY still gets a legal move
    (the initial state's legal moves are known before anything expensive), the workers hit
    the memory cap and the match ends with the reason in its record; every later message
    is answered and the server plays on."""
    mid = "explode.1"
    rules = exploding_rules()
    reply, secs = timed_send(server, start_message(mid, "red", rules, 3, 2))
    assert reply == "ready" and secs < 3, (reply, secs, server.log_text())
    reply, secs = timed_send(server, play_message(mid, None))
    assert reply != "nil" and parse_term(reply)[0] == "mark", (reply, server.log_text())
    assert secs < 2 + 1, secs  # ggp-base's PLAY limit: play clock + 1 s
    # The next state explodes in every worker that computes it.
    reply, secs = timed_send(server, play_message(mid, [reply, "noop"]))
    assert reply and secs < 3, (reply, secs)
    d = record(server, mid, until=lambda d: "x-end-reason" in d, wait=90)
    # Whichever limit comes first ends the match with its reason: the worker's memory cap,
    # or Prolog's own stack or table space in the referee (whose true state is then unknown,
    # so the match cannot be refereed on).
    why = (d or {}).get("x-end-reason", "")
    assert f"{WORKER_MB} MB cap" in why or "the referee failed" in why, (d and d.get("x-notes"), server.log_text())
    assert d["isAborted"]
    # The record keeps the largest memory the watchdog saw per worker process.
    peak = d.get("x-peak-rss-mb", {})
    assert set(peak) <= {"referee", "player", "grounder"} and peak.get("referee", 0) > 0, peak
    if f"{WORKER_MB} MB cap" in why:
        assert max(peak.values()) > WORKER_MB, peak
    # Later messages for the ended match get proper answers; the server is fine.
    reply = server.send(play_message(mid, ["noop", "( mark v1 )"]))
    assert reply and reply not in ("busy", ""), reply
    assert "status available" in server.send("( INFO )")
    assert server.send(play_message(mid, ["( mark v2 )", "noop"], "STOP")) == "done"
    assert server.send(play_message(mid, None)) == "busy"  # forgotten after STOP
    # ... and still plays a normal match.
    assert server.send(start_message("after.explode", "cross", rules_list(TTT), 3, 1)) == "ready"
    assert parse_term(server.send(play_message("after.explode", None)))[0] == "place"
    assert server.send("( ABORT after.explode )") == "aborted"
    assert server.alive()


def test_server_memory_budget_ends_the_largest_match(tmp_path):
    """Workers under their own cap, but all matches together over the server's budget: the
    match using most is ended, with the reason recorded."""
    with ServerProcess(tmp_path / "match_logs", "--worker-memory-mb", "8000", "--prolog-stack-mb", "8000",
                       "--memory-budget-mb", "1500") as s:
        mid = "explode.budget"
        # On a fast host the referee's memory passes the budget inside the start clock: the
        # match is then ended during START, which answers busy (the reason is recorded alike).
        reply = s.send(start_message(mid, "red", exploding_rules(), 3, 2))
        assert reply in ("ready", "busy"), s.log_text()
        if reply == "ready":
            first = s.send(play_message(mid, None))
            assert parse_term(first)[0] == "mark"
            s.send(play_message(mid, [first, "noop"]))
        d = record(s, mid, until=lambda d: "x-end-reason" in d, wait=90)
        assert d is not None and "1500 MB budget" in d.get("x-end-reason", ""), s.log_text()
        assert "status available" in s.send("( INFO )") and s.alive()


def test_exploding_match_ends_when_prolog_runs_out_and_replies_before_the_clock(tmp_path):
    """Default limits (Prolog's stack half the worker's cap): the referee's next state runs out
    of Prolog stack, and that ends the match at once, with the reason (the referee used to
    ground the game next, doubling its memory until the watchdog's cap ended the match 15-25 s
    later).  Every PLAY meanwhile, with no legal move known for its state, is answered before
    the play clock (it was answered at the clock itself, 1-16 ms after it)."""
    play_clock = 2
    with ServerProcess(tmp_path / "match_logs", "--seed", "5") as s:
        mid = "explode.prolog"
        assert s.send(start_message(mid, "red", exploding_rules(), 3, play_clock)) == "ready"
        joint, d = None, None
        for i in range(120):  # PLAYs back to back until the match is ended (minutes at most)
            reply = s.send(play_message(mid, joint))
            assert reply and reply not in ("busy", "nil"), reply
            joint = [reply, "noop"] if i % 2 == 0 else ["noop", "( mark v2 )"]
            d = record(s, mid, wait=0.1)
            if d and "x-end-reason" in d:
                break
        assert d and "x-end-reason" in d, s.log_text()
        why = d["x-end-reason"]
        assert why.startswith("the referee failed at ply 1") and "Prolog stack" in why, (why, d.get("x-notes"))
        assert d["isAborted"]
        for e in d["x-decisions"]:  # the server's own reading of when it replied
            assert e["reply_after"] < play_clock, e
        reply = s.send(play_message(mid, joint))  # an ended match still answers, at once
        assert reply and reply not in ("busy", "nil"), reply
        assert "status available" in s.send("( INFO )") and s.alive()


# --------------------------------------------------------------------------- slow clients

def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_incomplete_body_times_out(server):
    """A POST that declares 1000 bytes and sends 10 is closed after the read timeout."""
    with socket.create_connection((server.host, server.port), timeout=5) as s:
        s.sendall(b"POST / HTTP/1.0\r\nContent-Type: text/acl\r\nContent-Length: 1000\r\n\r\n( INFO )  ")
        assert _closed_within(s, READ_TIMEOUT + 10)
    with socket.create_connection((server.host, server.port), timeout=5) as s:
        s.sendall(b"POST / HTTP/1.0\r\nContent-")  # headers never finished
        assert _closed_within(s, READ_TIMEOUT + 10)
    assert "status available" in server.send("( INFO )")


def test_half_open_connections_capped_and_matches_still_served(server):
    """100 half-open connections (bounded, to 127.0.0.1): the server keeps at most its cap
    open, and a real match is played meanwhile, with INFO answered."""
    socks = []
    try:
        for _ in range(100):
            s = socket.create_connection((server.host, server.port), timeout=5)
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n(")
            socks.append(s)
        mid = "slowloris.1"
        reply, secs = timed_send(server, start_message(mid, "cross", rules_list(TTT), 3, 1))
        assert reply == "ready" and secs < 3
        info, secs = timed_send(server, "( INFO )")
        assert "status available" in info and secs < 1.0  # ggp-base's INFO timeout
        reply, secs = timed_send(server, play_message(mid, None))
        assert parse_term(reply)[0] == "place" and secs < 1 + 1
        assert server.send(f"( ABORT {mid} )") == "aborted"
        time.sleep(0.5)
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                closed += s.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        assert closed >= len(socks) - MAX_CONNECTIONS, closed
    finally:
        for s in socks:
            s.close()
    assert "status available" in server.send("( INFO )")


# --------------------------------------------------------------------------- clocks, ABORT/STOP in START

@pytest.mark.parametrize("clocks", ["-5 10", "10 -1", "0 10", "10 0", "10 1e12"])
def test_negative_and_absurd_clocks_refused(server, clocks):
    text = start_message("clock.bad", "cross", rules_list(TTT), 1, 1).replace(" 1 1)", f" {clocks})")
    assert server.send(text) == "busy"
    assert not (server.log_dir / "clock.bad.json").exists()
    assert "clock must be a number of seconds in" in server.log_text()


@pytest.mark.parametrize("how", ["ABORT", "STOP"])
def test_abort_or_stop_during_start_ends_it_at_once(server, how):
    """START with a 30 s clock; ABORT/STOP one second in: START answers at once (not ready),
    the record says why, and replay skips it with that reason."""
    from agent.archive import replay_paths

    mid = f"startabort.{how.lower()}"
    result = {}
    # A cold engine build keeps START waiting for the engine: make the rules unique.
    rules = rules_list(TTT) + [f"( unused{how.lower()} {time.time_ns()} )"]
    t = threading.Thread(target=lambda: result.update(zip(
        ("reply", "secs"), timed_send(server, start_message(mid, "cross", rules, 30, 5)))))
    t.start()
    time.sleep(1.0)
    stop = f"( ABORT {mid} )" if how == "ABORT" else play_message(mid, None, "STOP")
    assert server.send(stop) in ("aborted", "done")
    t.join(10)
    assert not t.is_alive(), "START still waiting after the match was ended"
    assert result["reply"] == "busy" and result["secs"] < 30, result  # within its start clock
    d = record(server, mid)
    assert d["isAborted"] and "during START" in d["x-end-reason"], d.get("x-end-reason")
    res = [r for r in replay_paths([server.log_dir / f"{mid}.json"])]
    assert len(res) == 1 and (res[0].ok or res[0].skipped), res[0].line()
    if not res[0].ok:
        assert "nothing to replay" in res[0].problem and "during START" in res[0].problem


# --------------------------------------------------------------------------- clocks used

def test_start_clock_builds_the_engine_and_reply_uses_the_play_clock(server):
    """A game not in the engine cache, with a start clock long enough to build it: START is
    answered once the compiled engine plays (not on Prolog)."""
    mid = "useclock.1"
    rules = rules_list(TTT) + [f"( unusedfact {time.time_ns()} )"]  # a new structure: no cache hit
    reply, secs = timed_send(server, start_message(mid, "cross", rules, 90, 5))
    assert reply == "ready" and secs < 90, (reply, secs)
    d = record(server, mid, until=lambda d: "x-engine" in d, wait=10)
    assert d.get("x-engine") not in (None, "prolog"), (d.get("x-engine"), d.get("x-notes"))
    reply = server.send(play_message(mid, None))
    assert parse_term(reply)[0] == "place"
    d = record(server, mid, until=lambda d: d["x-decisions"])
    dec = d["x-decisions"][0]
    assert dec["move"] in dec["legal"] and dec["reply_after"] < 5, dec
    assert server.send(f"( ABORT {mid} )") == "aborted"


def test_reply_margin_default_leaves_most_of_a_short_clock():
    """The margin comes from measured reply latencies (docs/benchmarks/server.md): half a
    second, or 5 % of a long clock; a fixed 0.75 s used three quarters of a 1 s clock."""
    from agent.server.config import ServerConfig

    cfg = ServerConfig()
    assert cfg.margin(1.0) == 0.5 and cfg.margin(60.0) == 3.0


# --------------------------------------------------------------------------- start-up

def test_port_in_use_is_a_clear_error(server):
    r = subprocess.run([sys.executable, "-m", "agent.server", "--host", server.host, "--port", str(server.port)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=server.env)
    assert r.returncode != 0
    assert f"cannot listen on {server.host}:{server.port}" in r.stderr, r.stderr[-2000:]
    assert "ready on" not in r.stderr and "listening on" not in r.stderr


def test_listens_at_once_and_plays_while_warming_up(tmp_path):
    """A new server answers INFO long before its player process is warm, with ``available``
    since a START sent then is taken (managers that schedule only available players sent
    none for up to 300 s after a start on a busy host), and that START is answered within
    its clock, with a legal first move."""
    s = ServerProcess(tmp_path / "match_logs")
    import subprocess as sp
    log = open(s.log_path, "wb")
    s.proc = sp.Popen(s.cmd, cwd=s.root, env=s.env, stdout=log, stderr=sp.STDOUT)
    s._log = log
    try:
        first = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300 and first is None:
            try:
                with socket.create_connection((s.host, s.port), timeout=1) as c:
                    c.sendall(raw_request("( INFO )"))
                    c.settimeout(5)
                    data = b""
                    while chunk := c.recv(4096):
                        data += chunk
                    first = split_response(data)[2]
                    warm_then = s.warmed()
            except OSError:
                time.sleep(0.05)
        assert first == "( ( name ggp-persona ) ( status available ) )", (first, s.log_text())
        assert not warm_then, s.log_text()     # answered while the player process was warming up
        reply, secs = timed_send(s, start_message("warming.1", "cross", rules_list(TTT), 10, 2))
        assert reply == "ready" and secs < 10, (reply, secs)
        reply, secs = timed_send(s, play_message("warming.1", None))
        assert parse_term(reply)[0] == "place" and secs < 2 + 1, (reply, secs)
        assert s.send("( ABORT warming.1 )") == "aborted"
    finally:
        s.__exit__(None, None, None)


def test_a_spare_that_compiled_in_its_warm_up_is_replaced_once():
    """The first warm-up after an install compiles the numba code and keeps the compiler's
    memory (a chess player at 1,067 MB instead of 251 MB): that spare is replaced by one that
    loads the code from the cache; once per pool, since a cache that cannot be written makes
    every process compile."""
    from agent.server.procs import Pool

    class Spare:
        pid = 0

        def __init__(self):
            self.killed = False

        def kill(self):
            self.killed = True

    pool, refills = Pool(1), []
    pool._fill = lambda: refills.append(1)
    first, second, third = Spare(), Spare(), Spare()
    pool.spares = [first]
    assert pool._keep_warmed(first, 253) is False
    assert first.killed and pool.spares == [] and refills == [1]
    pool.spares = [second]
    assert pool._keep_warmed(second, 253) is True and not second.killed
    pool.spares.append(third)
    assert pool._keep_warmed(third, 0) is True and pool.spares == [second, third]
