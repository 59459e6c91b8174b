"""What a careless or hand-made manager sends, end to end through the HTTP server:
PLAYs after the terminal state, joint moves our rules call illegal.  (ggp-base's GameServer
sends neither; other managers do.)  No timing assertions: each reply only has to come, be
sensible, and leave the player alive and in step with the match."""
from __future__ import annotations


import pytest

from gamemanager import ServerProcess, play_message, start_message, wait_for_record

# A counter to 4: role a has two moves while the game runs and none once it is over (the
# state after a step past the end has no legal move at all); b always waits.
COUNTER = ["( role a )", "( role b )", "( init ( step 0 ) )",
           "( succ 0 1 )", "( succ 1 2 )", "( succ 2 3 )", "( succ 3 4 )",
           "( <= ( legal a hit ) ( true ( step ?x ) ) ( succ ?x ?y ) )",
           "( <= ( legal a wait ) ( true ( step ?x ) ) ( succ ?x ?y ) )",
           "( <= ( legal b noop ) ( true ( step ?x ) ) ( succ ?x ?y ) )",
           "( <= ( next ( step ?y ) ) ( true ( step ?x ) ) ( succ ?x ?y ) )",
           "( <= ( next ( hits ?x ) ) ( does a hit ) ( true ( step ?x ) ) )",
           "( <= ( next ( hits ?x ) ) ( true ( hits ?x ) ) )",
           "( <= terminal ( true ( step 4 ) ) )",
           "( <= ( goal a 100 ) ( true ( hits 2 ) ) )",
           "( <= ( goal a 0 ) ( not ( true ( hits 2 ) ) ) )",
           "( goal b 0 )"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("odd") / "match_logs", "--seed", "11") as s:
        yield s
        assert s.alive(), s.log_text()


record = wait_for_record


def start_on_engine(server, mid):
    """START with a start clock long enough for the compiled engine (which a move outside its
    move table used to break)."""
    assert server.send(start_message(mid, "a", COUNTER, 30, 2)) == "ready"


def test_plays_after_the_terminal_state_are_answered_and_the_player_survives(server):
    """Played to its end with PLAYs, then two more PLAYs of moves nobody may make: each is
    answered (``nil`` where our role has no move), the player process lives on (it crashed:
    "Cannot choose from an empty sequence"), and STOP completes the match."""
    mid = "odd.terminal"
    start_on_engine(server, mid)
    replies = [server.send(play_message(mid, None))]
    for _ in range(4):
        replies.append(server.send(play_message(mid, [replies[-1], "noop"])))
    replies.append(server.send(play_message(mid, ["hit", "noop"])))
    assert all(r in ("hit", "wait") for r in replies[:4]), replies
    assert replies[4:] == ["nil", "nil"], replies
    assert server.send(play_message(mid, ["hit", "noop"], "STOP")) == "done"
    d = record(server, mid)
    log = server.log_text()
    assert "worker crashed" not in log and "player process ended" not in log, log[-3000:]
    assert d["isCompleted"], d.get("x-notes")
    late = [x for x in d["x-decisions"] if x["ply"] >= 4]
    assert [x.get("no_move_because") for x in late] == ["terminal", "no legal move"], late
    # after the end nothing is guessed (before it, a loaded machine may make the player late
    # on a 2 s clock, and a fallback move is then the server working as meant)
    assert not any(x["fallback"] for x in late), late


def test_an_illegal_joint_move_is_followed_and_the_player_keeps_searching(server):
    """The manager says we played a move our rules do not have (a compiled engine has no
    index for it): we apply it as received, as the referee does, and the next decisions are
    the search's own, on the referee's state (the player stayed a move behind and every
    later move was a fallback)."""
    mid = "odd.illegal"
    start_on_engine(server, mid)
    first = server.send(play_message(mid, None))
    assert first in ("hit", "wait")
    replies = [server.send(play_message(mid, ["( jump 9 9 )", "noop"]))]
    replies.append(server.send(play_message(mid, [replies[-1], "bogus"])))
    replies.append(server.send(play_message(mid, [replies[-1], "noop"])))
    assert all(r in ("hit", "wait") for r in replies), replies
    assert server.send(play_message(mid, [replies[-1], "noop"], "STOP")) == "done"
    d = record(server, mid)
    assert d.get("x-engine") == "CompiledEngine", d.get("x-notes")
    notes = " ".join(n["text"] for n in d["x-notes"])
    assert "( jump 9 9 ) is not legal here" in notes and "the next state is Prolog's" in notes, notes
    later = [x for x in d["x-decisions"] if x["ply"] in (1, 2, 3)]
    assert len(later) == 3, later
    for x in later:  # at the match's state: the player's legal moves are the referee's
        assert sorted(x["legal"]) == ["hit", "wait"], x
    # the search's own moves again (a loaded machine may make one late on a 2 s clock: its
    # best-so-far move is then sent, which is the server working as meant; the defect was
    # every later move a fallback)
    assert any(not x["fallback"] and x["search"] == "agent.search" for x in later), later
    assert d["isCompleted"] and d["moves"][0][0] == "( jump 9 9 )"


def test_connect_is_refused_without_a_traceback(server):
    """CONNECT got an empty 200, which opens a tunnel: h11 then refused the body and a
    50-line traceback was logged for each 31-byte request."""
    import socket
    before = len(server.log_text())
    for _ in range(2):
        with socket.create_connection((server.host, server.port), timeout=10) as c:
            c.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            reply = c.recv(4096)
        assert reply.startswith(b"HTTP/1.1 405"), reply
    assert server.send("( INFO )").startswith("( ( name")
    assert "Traceback" not in server.log_text()[before:], server.log_text()[before:]


def test_hostile_match_ids_are_escaped_and_shortened_in_the_log(server):
    """Control characters in a match id reached the log raw (forged lines, terminal escape
    sequences); a 2 MiB id wrote megabytes per log line."""
    before = len(server.log_text())
    server.send(play_message("evil\x1b[31mFORGED\x07", None))
    server.send(play_message("x" * 200_000, None))
    text = server.log_text()[before:]
    assert "\x1b" not in text and "\x07" not in text and "evil\\x1b[31mFORGED\\x07" in text, text[:2000]
    assert len(text) < 20_000 and "(200000 characters)" in text
