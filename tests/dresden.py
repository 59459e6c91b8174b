"""A GDL-II manager for tests, speaking like Dresden's GameController (GDL-II mode).

What it sends is what ``../shared/tools/gamecontroller/README.md`` captured: ``(START id ROLE
(RULES) start play)`` with ROLE and RULES upper-cased, ``(PLAY id NIL)`` first, then
``(PLAY id (P1 P2 ... ))`` with only the percepts of the receiving role (each followed by a
space, ``()`` when none: no turn number, no echo of its own move), and ``(STOP id (...))``.
The later GDL-II form ``(PLAY id TURN MOVE (P1 ...))`` is sent with ``form="turn"``.

It is also the referee: the true state on its own Prolog reasoner, ``random`` and every role
not played by the server moved uniformly at random, each reply checked (parses, legal, in
time) and replaced by the first legal move when bad, as the GameController does.  It keeps
every message it sent, so tests can check that nothing a role has not seen reached it.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from gdl.kif import GdlError, parse_term, read_rules_file
from gdl.terms import render_spaced

from gamemanager import split_response, raw_request, send_raw
import asyncio


def dresden_text(t) -> str:
    return render_spaced(t).upper()


def percepts_text(percepts) -> str:
    return "(" + "".join(f"{dresden_text(p)} " for p in sorted(percepts, key=render_spaced)) + ")"


@dataclass
class Played:
    sent: list = field(default_factory=list)        # (role index, message) in order
    replies: list = field(default_factory=list)     # (role index, reply text)
    joint_moves: list = field(default_factory=list)
    states: list = field(default_factory=list)
    percepts: list = field(default_factory=list)    # per step: per role, frozenset
    errors: list = field(default_factory=list)      # (step, role index, what)
    goals: list | None = None


def play_match(server, sheet, seats: dict, match_id: str, start: float = 10, play: float = 4,
               seed: int = 0, form: str = "dresden", max_steps: int = 200) -> Played:
    """One match: ``seats`` maps role indices to ``server`` (every other role, ``random``
    included, moves at random here)."""
    from agent.reasoner.prolog import PrologReasoner
    from agent.reasoner.statemachine import CachedStateMachine

    desc = read_rules_file(sheet)
    sm = CachedStateMachine(PrologReasoner(desc))
    roles = sm.roles
    rng = random.Random(seed)
    text = open(sheet, encoding="utf-8").read()
    rules = " ".join(line.split(";")[0] for line in text.splitlines()).upper()
    out = Played()

    def send(i, body, timeout):
        out.sent.append((i, body))
        t0 = time.monotonic()
        reply = split_response(asyncio.run(send_raw(server.host, server.port, raw_request(body), timeout)))[2]
        out.replies.append((i, reply))
        return reply, time.monotonic() - t0

    for i in seats:
        reply, _ = send(i, f"(START {match_id} {dresden_text(roles[i])} ({rules}) {start:g} {play:g})", start + 5)
        assert reply.strip().lower() == "ready", reply
    state = sm.initial_state()
    out.states.append(state)
    last = {i: None for i in seats}   # what each seat gets in its next PLAY
    step = 0
    while not sm.is_terminal(state) and step < max_steps:
        legal = [sm.legal_moves(state, i) for i in range(len(roles))]
        joint = [rng.choice(ms) for ms in legal]
        for i in seats:
            if last[i] is None:
                body = f"(PLAY {match_id} NIL)"
            elif form == "turn":
                body = f"(PLAY {match_id} {step} {dresden_text(out.joint_moves[-1][i])} {percepts_text(last[i])})"
            else:
                body = f"(PLAY {match_id} {percepts_text(last[i])})"
            reply, took = send(i, body, play + 5)
            try:
                move = parse_term(reply.strip().lower())
            except GdlError:
                move = None
            if move not in legal[i] or took > play + 1:
                out.errors.append((step, i, f"{'late' if took > play + 1 else 'illegal'}: {reply!r}"))
                move = legal[i][0]
            joint[i] = move
        joint = tuple(joint)
        out.percepts.append([sm.sees(state, joint, i) for i in range(len(roles))])
        out.joint_moves.append(joint)
        state = sm.next_state(state, joint)
        out.states.append(state)
        for i in seats:
            last[i] = out.percepts[-1][i]
        step += 1
    for i in seats:
        send(i, f"(STOP {match_id} {percepts_text(last[i])})" if last[i] is not None
             else f"(STOP {match_id} NIL)", play + 5)
    out.goals = [max(v) if v else 0 for v in sm.goal_values(state)]
    sm.close()
    return out
