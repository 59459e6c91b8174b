"""In GDL-II the server's referee keeps one history consistent with our view: a guess.  When
that guess ends the game, the manager's PLAY still says the match goes on, so the PLAY waits
for the player instead of being answered at once (under Dresden's GameController that
answer was NIL, an illegal move: docs/benchmarks/gdl2.md, "Under Dresden's GameController")."""
from __future__ import annotations

import asyncio
import time

from agent.server.config import ServerConfig
from agent.server.matches import Match, MatchManager
from agent.server.protocol import parse_message

GDL2_START = "( START m1 a (( role a ) ( role b ) ( <= ( sees a ( seen ?x ) ) ( true ( p ?x ) ) ) ) 10 5 )"
GDL1_START = "( START m1 a (( role a ) ( role b ) ) 10 5 )"


class _Pipe:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)

    def kill(self):
        pass


def _playing(manager, start):
    m = Match(manager, parse_message(start), time.monotonic(), None)
    m.status, m.roles, m.role_index = "playing", ["a", "b"], 0
    m.ref_status, m.player_status = "ready", "ready"
    m.ref_legal[0] = ["( go 1 )", "stay"]
    m.referee, m.player = _Pipe(), _Pipe()
    manager.matches[m.id] = m
    return m


def _terminal_guess(ply):
    return ("ref_state", {"ply": ply, "joint": None, "state": "( ( s 1 ) )", "terminal": True,
                          "goals": [100, 0], "notes": []})


def test_a_gdl2_referees_terminal_guess_does_not_end_the_match():
    m = _playing(MatchManager(ServerConfig(seed=1)), GDL2_START)
    assert m.gdl2
    m.on_referee(_terminal_guess(1))
    assert 1 not in m.over              # a PLAY for ply 1 waits for the player
    assert m.ref_terminal[1] == [100, 0]  # kept for the goals, should STOP come now


def test_a_gdl1_referees_terminal_state_still_ends_the_match():
    m = _playing(MatchManager(ServerConfig(seed=1)), GDL1_START)
    assert not m.gdl2
    m.on_referee(_terminal_guess(1))
    assert m.over[1] == "terminal"


def test_the_play_is_answered_with_the_players_move():
    """The referee guessed 'terminal' first; the player's decision comes after it and is the
    reply (it used to be NIL, sent before the player could answer)."""
    async def run():
        manager = MatchManager(ServerConfig(seed=1))
        m = _playing(manager, GDL2_START)
        m.player_legal[1] = ["( go 3 )", "stay"]
        loop = asyncio.get_running_loop()
        loop.call_soon(m.on_referee, _terminal_guess(1))
        loop.call_later(0.2, m.on_player, ("move", 1, {"move": "stay", "search": "agent.search"}))
        reply = await manager.play(parse_message("( PLAY m1 ( ( seen 1 ) ) )"), time.monotonic())
        return reply, m

    reply, m = asyncio.run(run())
    assert reply == "stay"            # not the first legal move the at-once answer took
    assert not m.record.to_json()["x-decisions"][0]["fallback"]
