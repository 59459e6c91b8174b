"""The HTTP server: ggp-base's transport byte for byte, Dresden's dialect, bad input of every
kind (the server answers sensibly and keeps serving), per-match personas, endpoint fuzzing."""
from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamemanager import (ServerProcess, parse_term, play_message, raw_request, rules_list,
                         split_response, start_message, wait_for_record)

from conftest import ROOT

TTT = (ROOT / "games" / "ticTacToe.kif").read_text()
CORS = {"access-control-allow-origin": "*", "access-control-allow-methods": "POST, GET, OPTIONS",
        "access-control-allow-headers": "Content-Type", "access-control-allow-age": "86400"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("server")
    (base / "personas.toml").write_text('[[match]]\nprefix = "rush."\npersona = "rusher"\n'
                                        '[[match]]\nregex = "^att[0-9]"\npersona = "attacker"\n')
    with ServerProcess(base / "match_logs", "--personas-config", str(base / "personas.toml"),
                       "--seed", "3") as s:
        yield s
        assert s.alive(), s.log_text()


def record(server, match_id):
    """The match record once the server has finished writing it."""
    return wait_for_record(server, match_id, wait=10.0)


# --------------------------------------------------------------------------- transport

def test_http10_reply_byte_exact(server):
    data = server.raw(raw_request("( INFO )"))
    body = b"( ( name ggp-persona ) ( status available ) )"
    assert data == (b"HTTP/1.1 200 OK\r\nContent-type: text/acl\r\nContent-length: 45\r\n"
                    b"Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Methods: POST, GET, OPTIONS\r\n"
                    b"Access-Control-Allow-Headers: Content-Type\r\nAccess-Control-Allow-Age: 86400\r\n"
                    b"Connection: close\r\n\r\n" + body)


def test_http11_any_content_type_and_tiltyard_ping(server):
    url = f"http://{server.host}:{server.port}/"
    for headers in ({}, {"Content-Type": "application/x-www-form-urlencoded"}, {"Content-Type": "text/plain"}):
        r = httpx.post(url, content=b"( INFO )", headers=headers)
        assert r.status_code == 200 and r.text == "( ( name ggp-persona ) ( status available ) )"
        assert r.headers["content-type"] == "text/acl" and r.headers["connection"] == "close"
        assert all(r.headers[k] == v for k, v in CORS.items())


def test_get_url_encoded_and_options(server):
    url = f"http://{server.host}:{server.port}"
    assert "status available" in httpx.get(url + "/%28%20INFO%20%29").text
    _, _, body = split_response(server.raw(b"GET /(+info+) HTTP/1.0\r\n\r\n"))
    assert "status available" in body  # '+' is a space, as ggp-base decodes it
    assert "status available" in httpx.get(url + "/").text  # a browser check
    r = httpx.request("OPTIONS", url + "/", headers={"Origin": "http://x", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 200 and r.text == "" and all(r.headers[k] == v for k, v in CORS.items())
    assert httpx.put(url + "/", content=b"x").status_code == 200  # other methods: empty 200


def test_preview_and_unknown_matches(server):
    assert server.send("( PREVIEW (( role a ) ) 10 )") == "ready"
    for msg in ("( PLAY nosuch NIL )", "( STOP nosuch (a ) )", "( ABORT nosuch )"):
        assert server.send(msg) == "busy"


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("body", ["", "(", "( START m", ")))", "( START m r (( role r ) 10 5)", "garbage",
                                  "( PLAY )", "( HELLO m )", "\x00\x01\x02", "(" * 20000])
def test_malformed_messages_get_busy(server, body):
    assert server.send(body) == "busy"


def test_non_utf8_body(server):
    status, _, body = split_response(server.raw(raw_request("x").replace(b"x", b"\xff\xfe")[:-2] + b"\xff"))
    assert status.startswith("HTTP/1.1 200")


def test_oversized_body_refused_and_server_keeps_serving(server):
    head = (b"POST / HTTP/1.0\r\nContent-Type: text/acl\r\nContent-Length: 17000000\r\n\r\n")
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(head + b"( START m r (" + b"( role r ) " * 1000)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    status, _, body = split_response(data)
    assert status.startswith("HTTP/1.1 413") and body == "busy"
    assert "available" in server.send("( INFO )")


def test_invalid_rules_refused_with_busy(server):
    # unsafe variable in a rule head, and no terminal: the validator's errors
    bad = ["( role a )", "( <= ( legal a ( go ?x ) ) ( true ( at 1 ) ) )", "( init ( at 1 ) )",
           "( goal a 100 )"]
    assert server.send(start_message("badrules.1", "a", bad, 5, 2)) == "busy"
    d = record(server, "badrules.1")
    assert d["isAborted"] and "validation" in d["x-refused"]
    assert server.send("( PLAY badrules.1 NIL )") == "busy"
    # our role missing, and rules that do not read
    rules = rules_list(TTT)
    assert server.send(start_message("badrole.1", "nobody", rules, 5, 2)) == "busy"
    assert server.send("( START badparse.1 a (( role a ) ( <= ) ) 5 2)") == "busy"


def test_illegal_and_unparsable_moves_in_play(server):
    """The manager sends moves our rules call illegal or cannot read: we note it, apply what
    we can, and keep answering legal moves."""
    mid = "odd.1"
    rules = rules_list(TTT)
    assert server.send(start_message(mid, "nought", rules, 3, 1)) == "ready"
    assert server.send(play_message(mid, None)) == "noop"
    # cross plays a square twice (illegal the second time), then an unreadable move
    reply = server.send(play_message(mid, ["( place 1 1 )", "noop"]))
    assert parse_term(reply)[0] == "place"
    assert server.send(play_message(mid, [reply, "noop"][::-1])) == "noop"  # wrong order: illegal both
    assert server.send(play_message(mid, ["( ( junk", "noop"])) == "busy"  # not even an s-expression
    reply = server.send(play_message(mid, ["( ( junk ) )", "noop"]))  # not a term
    assert reply
    reply = server.send(f"( PLAY {mid} (( place 3 3 ) ) )")  # too few moves
    assert reply
    assert server.send(play_message(mid, ["( place 2 2 )", "noop"], "STOP")) == "done"
    d = record(server, mid)
    notes = " ".join(n["text"] for n in d["x-notes"])
    assert "not legal" in notes and ("does not parse" in notes or "guessed" in notes)
    assert "moves for 2 roles" in notes
    assert server.alive()


def test_dresden_dialect(server):
    """Upper-case rules and moves, no padding, the 5-element PLAY with DID percepts."""
    rules = " ".join(r.replace("( ", "(").replace(" )", ")") for r in rules_list(TTT)).upper()
    mid = "tictactoe.1300000000000"
    # clocks long enough for a spare process to be warm on a loaded machine: this test is
    # about the dialect, not speed
    assert server.send(f"(START {mid} CROSS ({rules}) 10 3)") == "ready"
    reply = server.send(f"(PLAY {mid} 0 NIL NIL)")
    move = parse_term(reply)
    assert move[0] == "PLACE", reply  # spelled as received
    reply2 = server.send(f"(PLAY {mid} 1 {reply} ((DID CROSS {reply}) (DID NOUGHT NOOP)))")
    assert reply2 == "NOOP"
    reply3 = server.send(f"(PLAY {mid} ({reply2} (PLACE 3 3)))")  # the 3-element form
    assert parse_term(reply3)[0] == "PLACE" and reply3 not in (reply, "( PLACE 3 3 )")
    assert server.send(f"(ABORT {mid})") == "aborted"
    d = record(server, mid)
    assert d["moves"][0] == [reply, "NOOP"] and len(d["states"]) == 3


def test_personas_chosen_by_match_id(server):
    rules = rules_list(TTT)
    for mid, persona in (("rush.7", "rusher"), ("att9.x", "attacker"), ("plain.1", "tournament")):
        assert server.send(start_message(mid, "cross", rules, 2, 1)) == "ready"
        assert server.send(f"( ABORT {mid} )") == "aborted"
        d = record(server, mid)
        assert d["x-persona"]["name"].endswith(persona)
        assert d["x-persona"]["parameters"].get("name") == persona


def test_duplicate_start_is_busy(server):
    rules = rules_list(TTT)
    assert server.send(start_message("dup.1", "cross", rules, 2, 1)) == "ready"
    assert server.send(start_message("dup.1", "nought", rules, 2, 1)) == "busy"
    assert server.send("( ABORT dup.1 )") == "aborted"


# --------------------------------------------------------------------------- fuzz

def _client(server):
    return httpx.Client(base_url=f"http://{server.host}:{server.port}", timeout=30)


sexpr = st.recursive(
    st.sampled_from(["INFO", "START", "PLAY", "STOP", "ABORT", "PREVIEW", "NIL", "fz.1", "r", "0", "-1",
                     "2", "( role r )", "?x", "<=", "%", "+", "\u00e9"]),
    lambda kids: st.lists(kids, max_size=6).map(lambda xs: "( " + " ".join(xs) + " )"), max_leaves=30)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(body=st.one_of(sexpr, st.binary(max_size=400), st.text(max_size=200)),
       method=st.sampled_from(["POST", "POST", "GET"]),
       ctype=st.sampled_from(["text/acl", "application/json", None]))
def test_fuzz_endpoint_no_5xx(server, body, method, ctype):
    """Random bodies and paths: never a 5xx, and the server keeps answering.  START is sent
    with short clocks so that fuzzed matches do not pile up."""
    with _client(server) as c:
        if method == "GET":
            text = body if isinstance(body, str) else body.decode("latin-1")
            from urllib.parse import quote
            r = c.get("/" + quote(text, safe=""))
        else:
            data = body.encode("utf-8") if isinstance(body, str) else body
            r = c.post("/", content=data, headers={"Content-Type": ctype} if ctype else {})
        assert r.status_code < 500, (r.status_code, r.text)
        assert r.headers["content-type"] == "text/acl"


def test_server_alive_after_fuzz(server):
    assert "available" in server.send("( INFO )")
    assert server.send("( ABORT fz.1 )") in ("aborted", "busy")
    assert server.alive()
