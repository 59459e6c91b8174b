"""Matches in the server process: deadlines, fallbacks, worker processes, records.

Each match has two processes (see ``worker``): a *referee* (Prolog only: validation, state
tracking, our legal moves, states and goals for the record) and a *player* (engine and
search).  This process only waits on them with deadlines, so it answers INFO, STOP and ABORT
at once and always has a legal move to send:

  PLAY received at t, play clock c:  reply by  t + c - margin(c)
    * the player's decision, if it came in time and the referee agrees it is legal;
    * else the player's best move so far (it reports one while it searches);
    * else a uniformly random move from the legal moves already known for that state
      (the referee's, else the player's);
    * if the referee has exactly one legal move, it is sent at once.

In a GDL-II match the referee knows only our view: it follows one history of our moves and
percepts on a bounded budget per step (``agent.hidden.tracker``), so this step's legal moves
are known whatever the player does; the player's belief comes first when it has them, each
decision says which it used (``legal_from``), and an earlier step's legal moves are never
used (a GDL-I match guesses from them as a last resort).

A watchdog looks at the workers' memory: a referee or player over its cap, or all matches
together over the server's budget, ends the match (the reason goes into the record); later
messages for it are still answered.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import time
import zlib
from pathlib import Path

import psutil

from agent.matchtext import parse_rules_text, role_index_of
from agent.player import DEFAULT_PERSONA, RulesRefused, load_persona_spec, persona_dict
from gdl.gdl2 import text_is_gdl2
from agent.matchlog import MatchRecord, atomic_write_json, create_record_file, now_ms

from .config import ServerConfig
from .procs import Pool, Proc
from .worker import REFEREE_SHARE
from .protocol import Message, info_reply

log = logging.getLogger("ggp.server")

ACTIVE = ("starting", "playing")
ENDED = "ended"  # ended by us (memory): later PLAYs get fallback moves, STOP/ABORT forget it


LAST_WAIT_SLACK = 0.1  # seconds before the clock when a PLAY still without a legal move is answered
EVICT_SLACK = 30.0  # seconds a manager may take beyond its clock before its match counts as overdue
INTERRUPTED = "interrupted: "  # x-end-reason of a match the server could not finish
_UNFINISHED = re.compile(r'"isCompleted":\s*false,\s*"isAborted":\s*false')


def idle_limit(start_clock: float, play_clock: float) -> float:
    """Seconds without a message after which a match is abandoned (Tiltyard's wedge rule,
    with room)."""
    return start_clock + 10 * play_clock + 60


def build_cap(start_clock: float, play_clock: float, max_idle: float) -> float:
    """Seconds a match's grounder may build the fast engine before it is stopped.  The
    player moves to the engine whenever it is ready, so the build is not cut at the start
    clock: on a host at load 14-29 on 2 cores chess took 51 s to build, and the old limit
    (start clock + 3 play clocks) left whole matches on Prolog, most moves random.  The cap
    only keeps a game that never builds from using a core for the whole match; it is never
    below the start clock, the time the manager gave for loading (a short ``max_idle``, as
    the web page's tests set, would otherwise leave a match on Prolog)."""
    return min(idle_limit(start_clock, play_clock), max(max_idle, start_clock))


def unsearched_why(entry: dict, building: bool, engine: str | None = None) -> str | None:
    """Why the decision ``entry`` (``Match.choose``) sent a move no real search chose, or
    None when a search chose it or there was nothing to choose (a forced move, no legal
    move).  ``building``: the fast engine was still being built; ``engine``: what the player
    searched on (the entry's own ``engine`` when it has one)."""
    if "no_move_because" in entry or entry.get("search") == "forced":
        return None
    while_building = " while the engine was being built" if building else ""
    if entry.get("fallback"):
        reason = entry.get("fallback_reason", "")
        cause = ("player's move not legal" if reason.startswith("player's move")
                 else reason.split(";")[0] or "fallback")
        kind = entry.get("fallback_move")
        if kind != "best so far":
            return f"{kind} move: {cause}{while_building}"
        if not entry.get("simulations"):
            return f"best so far without a simulation: {cause}{while_building}"
        # else the search ran, it only had not finished: as searched, below
    elif entry.get("search") == "random":
        return "random move: the search failed"
    # a finished decision with no simulation of its own is still a search's: the tree grown
    # while pondering had proven the root
    if building and entry.get("engine", engine) == "prolog":
        return "searched on Prolog while the engine was being built"
    return None


def mark_interrupted(log_dir, live: set, paths=None) -> list:
    """Mark the unfinished records in ``log_dir`` (a server killed during their match left
    them neither completed nor aborted) as aborted with ``x-end-reason`` saying so, once
    they have been left alone for ``idle_limit``; returns ``[(when due, path)]`` for the
    ones not due yet.  Only the first bytes of each record are read, unless it is a
    candidate (our writer puts both flags at the start)."""
    pending = []
    now = time.time()
    files = paths if paths is not None else sorted(Path(log_dir).glob("*.json"))
    for path in files:
        try:
            with open(path, "rb") as f:
                head = f.read(4096).decode("utf-8", "replace")
            if not _UNFINISHED.search(head):
                continue
            d = json.loads(Path(path).read_text(encoding="utf-8"))
            if (not isinstance(d, dict) or d.get("isCompleted") or d.get("isAborted") or d.get("x-refused")
                    or d.get("matchId") in live):
                continue
            try:
                limit = idle_limit(float(d.get("startClock") or 0), float(d.get("playClock") or 0))
            except (TypeError, ValueError):
                limit = idle_limit(0, 0)
            due = path.stat().st_mtime + limit
            if due > now:
                pending.append((due, path))
                continue
            d["isAborted"] = True
            d["x-end-reason"] = INTERRUPTED + "the server stopped during the match (marked at a later start)"
            d.setdefault("x-notes", []).append({"time": now_ms(), "text": d["x-end-reason"]})
            atomic_write_json(path, d)
            log.warning("%s: marked interrupted (%s)", path.name, d["x-end-reason"])
        except (OSError, ValueError) as e:
            log.warning("cannot check the record %s: %s", path, e)
    return pending


def ipc_slack(clock: float) -> float:
    """How much earlier than our own deadline the player must answer: pipe, pickling, and
    this process waking up (a few ms idle; more on a loaded machine)."""
    return min(0.5, 0.05 + 0.03 * max(clock, 0.0))


BIG_RULES = 256 * 1024  # characters: rules this long are only read in the worker processes


def check_readable(rules_text: str, role: str) -> None:
    """Raise ``RulesRefused`` when the rules do not read or lack the role (cheap checks; the
    referee validates the rules in full).  Rules over ``BIG_RULES`` are not parsed here: a
    tree of a million facts held this process (and every match's replies) for seconds; the
    role is looked for in the text, and the referee, in its own process, does the rest."""
    if len(rules_text) > BIG_RULES:
        if not re.search(r"\(\s*role\s+" + re.escape(role) + r"\s*\)", rules_text, re.IGNORECASE):
            raise RulesRefused(f"role {role} is not among the roles (no (role {role}) in the rules)")
        return
    role_index_of(parse_rules_text(rules_text), role)


def gdl2_view(msg: Message, last_reply: str | None) -> dict | None:
    """GDL-II: our view of a step from a PLAY/STOP, ``{"own": our move's text, "percepts":
    [texts]}``, or None for the first PLAY.  Dresden's GameController sends ``(PLAY id (P1
    P2 ...))`` with our percepts only, no turn and no echo of our move: ours is the one we
    answered (``last_reply``).  Later managers send ``(PLAY id turn move percepts)``, whose
    move is the one executed (the manager's replacement when ours was late or illegal)."""
    if msg.percepts is not None or msg.last_move is not None or msg.turn is not None:
        own = msg.last_move.text if msg.last_move is not None else last_reply
        return {"own": own, "percepts": list(msg.percepts or [])}
    if msg.moves is None:
        return None
    return {"own": last_reply, "percepts": [mv.text for mv in msg.moves]}


class Match:
    def __init__(self, manager: "MatchManager", msg: Message, received: float, persona_spec):
        cfg = manager.config
        self.manager = manager
        self.id = msg.match_id
        self.role = msg.role
        self.start_clock = msg.start_clock
        self.play_clock = msg.play_clock
        self.received = received
        self.persona_spec = persona_spec
        # GDL-II: PLAY and STOP carry our percepts, not the joint move (agent.hidden)
        self.gdl2 = text_is_gdl2(msg.rules_text or "")
        self.last_reply = None        # the move we answered last (our own move, in GDL-II)
        self.status = "starting"
        self.referee: Proc | None = None
        self.player: Proc | None = None
        self.grounder: Proc | None = None
        self.ref_status = None        # ready | failed | dead
        self.ref_reason = None
        self.player_status = None     # legal | loaded | ready | failed | dead
        self.player_reason = None
        self.roles: list | None = None
        self.role_index = None
        self.ref_legal: dict = {}     # ply -> legal move texts (our role), from the referee
        self.ref_how: dict = {}       # ply -> where the GDL-II referee's legal moves come from
        self.ref_terminal: dict = {}  # ply -> goals when the referee found the state terminal
        self.player_legal: dict = {}  # ply -> legal move texts, from the player
        self.over: dict = {}          # ply -> why nothing can be played there (terminal, no legal move)
        self.player_lost = False      # the player could not follow a joint move: it gets the referee's states
        self.ref_last = None          # (ply, state text): the referee's latest state
        self.decisions: dict = {}     # req -> decision dict, or None when the player gave up on it
        self.interim: dict = {}       # req -> the player's best decision so far, while it searches
        self.on_interim_engine = False  # the player searches on the grounder's interim engine
        self.engine_status = None     # None (being built) | switching | upgraded | none
        self.player_engine = None     # the engine the player searches on ("prolog", "CompiledEngine", ...)
        self.unsearched: dict = {}    # why -> decisions no search chose (x-unsearched)
        self.req = 0                  # PLAY messages so far
        self.ply = 0                  # joint moves received so far
        self.ref_ply = 0              # states the referee has computed
        self.last_activity = time.monotonic()
        self.thinking = 0             # PLAYs being answered (a match thinking is never idle)
        self.rng = random.Random(zlib.crc32(self.id.encode("utf-8", "replace")) ^ (cfg.seed or 0))
        self.seed = self.rng.randrange(2 ** 31)
        name = persona_spec if persona_spec is not None else DEFAULT_PERSONA
        self.record = MatchRecord(self.id, self.role, msg.rules_text or "", self.start_clock,
                                  self.play_clock, {"name": name, "parameters": manager.persona_params(persona_spec)},
                                  player_name=cfg.name, start_time=now_ms())
        self.record.extra["x-unsearched"] = {"count": 0, "decisions": 0, "why": {}}
        self.path = None
        self._changed: asyncio.Future | None = None
        self._writing = False
        self._dirty = False

    # ---------------------------------------------------------------- waiting
    def _notify(self) -> None:
        f = self._changed
        if f is not None and not f.done():
            f.set_result(None)
        self._changed = None

    async def wait_until(self, predicate, deadline: float) -> bool:
        """Wait until ``predicate()`` holds or ``deadline`` (monotonic) passes."""
        loop = asyncio.get_running_loop()
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._changed is None or self._changed.done():
                self._changed = loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._changed), remaining)
            except asyncio.TimeoutError:
                return predicate()
        return True

    # ---------------------------------------------------------------- worker messages
    def on_referee(self, msg) -> None:
        kind = msg[0]
        rec = self.record
        if kind == "ref_legal":  # the initial state's legal moves, before anything expensive
            self.ref_legal.setdefault(msg[1], msg[2])
        elif kind == "ref_ready":
            info = msg[1]
            self.ref_status = "ready"
            self.roles = info["roles"]
            self.role_index = info["role_index"]
            rec.set_roles(self.roles, self.role_index)
            rec.set_state(0, info["state"])
            self.ref_last = (0, info["state"])
            if info["terminal"]:
                self.ref_terminal[0] = None
                self.over[0] = "terminal"
            else:
                self.ref_legal[0] = info["legal"]
            for w in info.get("warnings", [])[:20]:
                rec.note("validator: " + w)
            log.info("%s: referee ready in %.2fs (%d roles, we are %s)", self.id, info["seconds"],
                     len(self.roles), self.roles[self.role_index])
        elif kind == "ref_failed":
            self.ref_status = "failed"
            self.ref_reason = msg[1]
        elif kind == "ref_state":
            info = msg[1]
            ply = info["ply"]
            self.ref_ply = ply
            if info.get("joint") is not None:   # GDL-II: the referee knows only our view
                rec.set_moves(ply, info["joint"])
                rec.set_state(ply, info["state"])
                self.ref_last = (ply, info["state"])
            if self.gdl2:
                # One history consistent with our view (or the closest found): a guess of the
                # state, never the truth.  Its terminal state does not end our answers (the
                # manager's PLAY says the match goes on; answering at once sent NIL under
                # Dresden's GameController: docs/benchmarks/gdl2.md), its legal moves are
                # this step's fallback, and an empty list is no verdict either.
                if info["terminal"]:
                    self.ref_terminal[ply] = info.get("goals")
                if info.get("legal"):
                    self.ref_legal[ply] = info["legal"]
                    self.ref_how[ply] = info.get("how") or "referee"
            elif info["terminal"]:
                self.ref_terminal[ply] = info.get("goals")
                self.over[ply] = "terminal"
            else:
                self.ref_legal[ply] = info["legal"]
                if not info["legal"]:
                    self.over[ply] = "no legal move"
            for n in info.get("notes", []):
                rec.note(f"ply {ply}: {n}")
                log.warning("%s: ply %d: %s", self.id, ply, n)
            if self.player_lost and self.player is not None:
                self.player.send(("state", ply, info["state"]))  # the player resyncs on it
            self.save()
        elif kind == "ref_error":
            # Without the true state every later move would be a guess on a game we no longer
            # follow: end the match (later PLAYs get fallback moves), with the reason.
            self.ref_status = "failed"
            self.ref_reason = f"the referee failed at ply {msg[1]}: {msg[2]}"
            self.manager._end(self, self.ref_reason)
        elif kind in ("exit", "crashed"):
            if self.status in ACTIVE and self.ref_status != "failed":
                self.ref_status = "dead"
                rec.note(f"referee process ended ({msg[1]})")
                log.error("%s: referee process ended (%s)", self.id, msg[1])
        self._notify()

    def on_player(self, msg) -> None:
        kind = msg[0]
        rec = self.record
        if kind == "legal":
            self.player_legal[msg[1]] = msg[2]
            if self.player_status is None:
                self.player_status = "legal"
        elif kind == "failed":
            self.player_status = "failed"
            self.player_reason = msg[1]
        elif kind == "loaded":
            info = msg[1]
            self.player_status = "loaded"
            if info.get("persona"):
                rec.persona = {"name": rec.persona.get("name"), "parameters": info["persona"]}
            rec.extra["x-engine"] = info.get("engine")
            self.player_engine = info.get("engine")
            rec.extra["x-search"] = info.get("search")
            rec.extra["x-code"] = info.get("code")      # which code played (agent.code_version)
            for n in info.get("notes", []):
                rec.note("player: " + n)
                log.warning("%s: %s", self.id, n)
            log.info("%s: player loaded (engine %s, search %s)", self.id, info.get("engine"), info.get("search"))
        elif kind == "ready":
            self.player_status = "ready"
        elif kind == "upgraded":
            info = msg[1]
            if not info.get("interim"):
                self.engine_status = "upgraded" if info.get("engine") != "prolog" else "none"
            else:
                self.on_interim_engine = True
            rec.extra["x-engine"] = info.get("engine")
            self.player_engine = info.get("engine")
            rec.note(f"player switched to {info.get('engine')} at ply {self.ply}")
            for n in info.get("notes", []):
                rec.note("player: " + n)
            log.info("%s: player now on %s at ply %d %s", self.id, info.get("engine"), self.ply,
                     "; ".join(info.get("notes", [])))
            self.save()     # the record says which engine plays as soon as it changes
        elif kind == "move":
            self.decisions[msg[1]] = msg[2]
        elif kind == "interim":
            self.interim[msg[1]] = msg[2]
        elif kind == "skipped":
            self.decisions.setdefault(msg[1], None)
        elif kind == "over":  # nothing to search: the state is terminal, or we have no legal move
            self.decisions.setdefault(msg[1], None)
            if not self.gdl2:
                self.over.setdefault(msg[2], msg[3])
            # GDL-II: the belief's verdict is a guess (a lenient belief whose closest histories
            # all ended knows no legal move), and the manager's PLAY says the match goes on:
            # the referee's legal moves answer (answering nil at once sent illegal NILs in
            # battleship under Dresden's GameController: docs/benchmarks/gdl2.md)
        elif kind == "lost":
            # The player could not follow the match (a joint move it cannot apply): it waits
            # for the referee's states, and meanwhile the referee's legal moves are played.
            self.player_lost = True
            rec.note(f"player lost track of the state on request {msg[1]} ({msg[2]}); "
                     f"resyncing on the referee's state")
            log.warning("%s: player lost track of the state: %s; resyncing on the referee's", self.id, msg[2])
            if self.ref_last is not None and self.player is not None and not self.gdl2:
                self.player.send(("state",) + self.ref_last)
        elif kind == "synced":
            self.player_lost = False
            rec.note(f"player back on the referee's state at ply {msg[1]}")
        elif kind == "error":
            self.decisions.setdefault(msg[1], None)
            rec.note(f"player failed on request {msg[1]}: {msg[2]}")
            log.error("%s: player failed: %s", self.id, msg[2])
        elif kind == "note":
            for n in msg[2]:
                rec.note(f"player: {n}")
        elif kind in ("exit", "crashed"):
            if self.status in ACTIVE and self.player_status != "failed":
                self.player_status = "dead"
                rec.note(f"player process ended ({msg[1]}); playing fallback moves")
                log.error("%s: player process ended (%s); playing fallback moves", self.id, msg[1])
        self._notify()

    def on_grounder(self, msg) -> None:
        if msg[0] == "engine_interim":
            # still grounding: the player leaves Prolog for the non-ground engine meanwhile
            # (the start is still answered when grounding ends or at the start deadline)
            if self.player is not None and self.engine_status is None:
                log.info("%s: interim %s built in %ss", self.id, msg[1].get("kind"), msg[1].get("seconds"))
                self.player.send(("engine", "nonground", "interim"))
        elif msg[0] == "engine":
            info = msg[1]
            if info.get("ok"):
                log.info("%s: %s built in %ss%s", self.id, info.get("kind"), info.get("seconds"),
                         f" ({info['reason']})" if info.get("reason") else "")
                if info.get("reason"):
                    self.record.note(f"{info.get('kind')} built in {info.get('seconds')}s: {info['reason']}")
                if self.player is not None:
                    self.engine_status = "switching"  # until the player says it switched
                    # which kind: a game that does not ground must not be grounded again
                    self.player.send(("engine", "nonground" if info.get("kind") == "NonGroundEngine"
                                      else "auto"))
            else:
                self.engine_status = "none"
                self.record.note(f"no compiled engine: {info.get('reason')}")
                log.warning("%s: no compiled engine: %s", self.id, info.get("reason"))
            self.stop_grounder()
        elif msg[0] in ("exit", "crashed") and self.grounder is not None and self.status in ACTIVE:
            self.record.note(f"grounder process ended ({msg[1]})")
            self.grounder = None
            self.engine_status = self.engine_status or "none"
        self._notify()

    def building(self) -> bool:
        """Whether the fast engine is still being built (or the player is moving to it)."""
        return (self.manager.config.use_engine and self.engine_status in (None, "switching")
                and self.status in ACTIVE and self.player is not None)

    def playing_on(self) -> str:
        """What plays meanwhile, in words, for a note about the engine."""
        return "the non-ground engine plays" if self.on_interim_engine else "Prolog plays"

    def stop_grounder(self, why: str | None = None) -> None:
        if self.grounder is not None:
            if why:
                self.record.note(why)
                log.warning("%s: %s", self.id, why)
            g, self.grounder = self.grounder, None
            g.kill()
            if self.engine_status is None:
                self.engine_status = "none"
                self._notify()

    def stop_player(self, why: str) -> None:
        """Kill the player (over its memory cap): later PLAYs get the referee's legal moves."""
        if self.player is None:
            return
        p, self.player = self.player, None
        p.kill()
        self.player_status = "dead"
        self.record.note(why)
        self.record.extra["x-player-ended"] = why
        log.error("%s: player stopped at ply %d: %s", self.id, self.ply, why)
        self._notify()

    # ---------------------------------------------------------------- moves
    def joint_texts(self, msg: Message):
        """The joint move of a PLAY/STOP as texts in role order (None entries: unknown, or
        not a ground term we read: too deeply nested, unparsable, with variables; the referee
        then stands in the role's only or first legal move, and says so).  In a GDL-II match
        our view of the step instead (``view``)."""
        if self.gdl2:
            return self.view(msg)
        def text(mv):
            if mv.term is None:
                self.record.note(f"ply {self.ply + 1}: the move {mv.text[:80]} is not a ground term we can "
                                 f"read; the role's first legal move stands in for it")
                return None
            return mv.text
        if msg.moves is not None:
            return [text(m) for m in msg.moves]
        if msg.did is not None and self.roles:
            by_role = {r.lower(): text(mv) for r, mv in msg.did}
            return [by_role.get(r.lower()) for r in self.roles]
        if msg.last_move is not None and self.roles:
            joint = [None] * len(self.roles)
            joint[self.role_index] = text(msg.last_move)
            return joint
        return None

    def view(self, msg: Message) -> dict | None:
        return gdl2_view(msg, self.last_reply)

    def record_step(self, texts) -> None:
        """The record of one step: the joint move, or in GDL-II our move and our percepts
        (``x-own-moves``, ``x-own-percepts``: step by step; the joint move stays unknown to
        us, so the record is one role's view: ``replay`` skips it, the referee's replays)."""
        if not self.gdl2:
            self.record.add_moves([t if t is not None else "" for t in texts])
            return
        self.record.extra["x-gdl2"] = True
        self.record.extra.setdefault("x-own-percepts", []).append(texts["percepts"])
        self.record.extra.setdefault("x-own-moves", []).append(texts["own"])

    def known_legal(self, ply: int):
        legal = self.ref_legal.get(ply)
        return legal if legal is not None else self.player_legal.get(ply)

    def gdl2_legal(self, ply: int) -> tuple[list | None, str | None]:
        """GDL-II: our legal moves at ``ply`` and where they come from.  The player's belief
        (every history it keeps) first; else the referee's one history (``ref_how``: one
        consistent with every percept, or the closest found).  Never an earlier step's."""
        if self.player_legal.get(ply):      # an empty list is no verdict (see on_player "over")
            return self.player_legal[ply], "player: belief"
        if self.ref_legal.get(ply) is not None:
            return self.ref_legal[ply], self.ref_how.get(ply, "referee: initial state" if ply == 0 else "referee")
        return None, None

    def forced_gdl2(self, ply: int) -> bool:
        """GDL-II: whether our one legal move at ``ply`` is known well enough to answer at
        once: from the player's belief, or from a referee history that explains every
        percept (the closest history's turn may be wrong: then the player is waited for)."""
        legal, source = self.gdl2_legal(ply)
        return (legal is not None and len(legal) == 1
                and (source == "player: belief" or not source.startswith("referee: closest")))

    def choose(self, req: int, ply: int, received: float) -> tuple[str, dict]:
        source = None
        if self.gdl2:
            ref, source = self.gdl2_legal(ply)
            legal = ref
        else:
            ref = self.ref_legal.get(ply)
            legal = self.known_legal(ply)
        d = self.decisions.get(req)
        best = self.interim.get(req) if d is None else None
        entry = {"ply": ply, "req": req}
        if d is not None:
            entry.update(d)
        over = self.over.get(ply) if d is None else None
        if over is not None:
            # A PLAY in a terminal state (a manager that plays on after the end) or where our
            # role has no legal move: nothing to choose.  A move the rules still call legal
            # there, else ``nil`` (what ggp-base's players answer when they have no move).
            here = ref or self.player_legal.get(ply) or []
            move, reason = (here[0] if here else "nil"), None
            entry["search"] = "none"
            entry["no_move_because"] = over
        elif ref is not None and len(ref) == 1 and (d is None or d.get("move") != ref[0]):
            move, entry["search"], reason = ref[0], "forced", None
        elif d is not None and (ref is None or d["move"] in ref):
            move, reason = d["move"], None
        else:
            if d is None:
                reason = "player late" if self.player_status not in ("failed", "dead") else "player unavailable"
                if self.gdl2 and self.player_legal.get(ply) == []:
                    reason = "the player's belief knows no legal move here"
            else:
                reason = f"player's move {d['move']} is not legal by the referee"
                entry["player_move"] = d["move"]
            if best is not None and (ref is None or best["move"] in ref):
                # The search had not finished: its best move so far beats a random one.
                entry.update(best)
                move = best["move"]
                entry["fallback_move"] = "best so far"
                reason += "; sent the player's best move so far"
            elif legal:
                move = self.rng.choice(legal)
                entry["fallback_move"] = "random"
                if source is not None:
                    reason += f"; a random legal move of this step, by {source}"
            elif self.gdl2:
                # In a GDL-II game an earlier step's moves are likely illegal now (battleship:
                # PLACE moves sent through the shooting phase), and the referee's history is
                # bounded to answer every step in time: when even it is missing, say so.
                move = "nil"
                entry["fallback_move"] = "none"
                reason += "; no legal moves known for this step (GDL-II: an earlier step's are not reused)"
            else:
                older = [self.known_legal(p) for p in range(ply - 1, -1, -1) if self.known_legal(p)]
                # A state where we had a single move (a noop while another role moves) says
                # little about this one: guess from the latest state with a real choice.
                older = [o for o in older if len(o) > 1] or older
                if older:
                    move = self.rng.choice(older[0])
                    entry["fallback_move"] = "guess"
                    reason += "; no legal moves known for this state, guessed from an earlier one"
                else:
                    move = "nil"
                    entry["fallback_move"] = "none"
                    reason += "; no legal moves known at all"
        if legal is not None:
            entry["legal"] = legal
        if source is not None:
            entry["legal_from"] = source
        entry["move"] = move
        entry["fallback"] = reason is not None
        if reason:
            entry["fallback_reason"] = reason
        entry["reply_after"] = round(time.monotonic() - received, 4)
        self.count_unsearched(entry)
        return move, entry

    def count_unsearched(self, entry: dict) -> None:
        """Count the decision in ``x-unsearched`` ({"count", "decisions", "why": {reason:
        n}}), and mark the entry with its reason: a busy host's record says how many moves
        no search chose, and why (random fallbacks, late players, Prolog while the engine
        was being built)."""
        why = unsearched_why(entry, self.building(), self.player_engine)
        if why is not None:
            entry["unsearched"] = why
            self.unsearched[why] = self.unsearched.get(why, 0) + 1
        summary = self.record.extra["x-unsearched"]
        summary["decisions"] += 1
        summary["count"] = sum(self.unsearched.values())
        summary["why"] = dict(self.unsearched)

    def unsearched_text(self) -> str:
        """For the log at the match's end: "3 of 40 decisions not searched (why: n, ...)"."""
        s = self.record.extra["x-unsearched"]
        if not s["count"]:
            return f"every one of {s['decisions']} decisions searched (or forced)"
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.unsearched.items(), key=lambda kv: -kv[1]))
        return f"{s['count']} of {s['decisions']} decisions not searched ({why})"

    # ---------------------------------------------------------------- record
    def save(self) -> None:
        """Write the record in a thread; coalesce writes that pile up."""
        if self.path is None:
            return
        if self._writing:
            self._dirty = True
            return
        self._writing = True
        asyncio.get_running_loop().create_task(self._save_loop())

    async def _save_loop(self) -> None:
        try:
            while True:
                self._dirty = False
                data = self.record.to_json()
                try:
                    await asyncio.to_thread(atomic_write_json, self.path, data)
                except Exception as e:
                    log.error("%s: cannot write %s: %s", self.id, self.path, e)
                if not self._dirty:
                    break
        finally:
            self._writing = False

    def kill(self) -> None:
        self.stop_grounder()
        for p in (self.referee, self.player):
            if p is not None:
                p.kill()


class MatchManager:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.matches: dict[str, Match] = {}
        level = logging.getLogger().level or logging.INFO
        limits = {"prolog": config.prolog_limits()}
        self.players = Pool(config.spare_players, config.worker_nice, level, full_warm=True, limits=limits)
        # Referees are light and their answers are the fallback: more spares, normal priority.
        self.referees = Pool(config.spare_referees, config.referee_nice, level, full_warm=False, limits=limits)
        self._reaper = None
        self._lag = None
        self._memory = None
        self._warming = None
        self._interrupted = None
        self.warm = False                 # a warmed player process exists (the web page says so)
        self._finishing: set = set()
        self._personas: dict = {}

    def persona_params(self, spec) -> dict:
        """The persona's full parameters for the record, known before any worker runs."""
        if spec not in self._personas:
            try:
                self._personas[spec] = persona_dict(load_persona_spec(spec))
            except Exception as e:
                log.error("persona %r cannot be loaded: %s", spec, e)
                self._personas[spec] = {}
        return self._personas[spec]

    async def startup(self) -> None:
        """Start the pools and return at once: the server listens while a player process
        warms up behind it (a START meanwhile is played on a fresh process, and INFO says
        ``available``: it says whether a START would be accepted)."""
        loop = asyncio.get_running_loop()
        self.referees.start(loop)
        self.players.start(loop)
        self._reaper = loop.create_task(self._reap())
        self._lag = loop.create_task(self._watch_lag())
        self._memory = loop.create_task(self._watch_memory())
        self._warming = loop.create_task(self._warm_up())
        self._interrupted = loop.create_task(self._mark_interrupted())

    async def _warm_up(self) -> None:
        t0 = time.monotonic()
        log.info("warming up a player process (the first run after an install or upgrade "
                 "compiles the engine and search code; that can take minutes); a START meanwhile "
                 "gets a fresh process, which loads the code during its start clock")
        ok = await self.players.wait_warm(self.config.warm_timeout)
        self.warm = True  # after the timeout too: matches are played anyway, on fresh processes
        log.info("%s ready on http://%s:%s/ (player process %s after %.1fs)", self.config.name,
                 self.config.host, self.config.port, "warm" if ok else "still warming", time.monotonic() - t0)

    async def shutdown(self) -> None:
        for task in (self._reaper, self._lag, self._memory, self._warming, self._interrupted):
            if task is not None:
                task.cancel()
        for m in list(self.matches.values()):
            m.record.note("server shut down during the match")
            if m.status in ACTIVE:
                m.record.abort()
                m.record.extra["x-end-reason"] = INTERRUPTED + "the server shut down during the match"
            m.status = "shutdown"
            m.kill()
            m._notify()
            if m.path is not None:
                try:
                    atomic_write_json(m.path, m.record.to_json())
                except Exception as e:
                    log.error("%s: cannot write record: %s", m.id, e)
        self.matches.clear()
        self.players.close()
        self.referees.close()

    def active(self) -> list:
        return [m for m in self.matches.values() if m.status in ACTIVE]

    # ---------------------------------------------------------------- messages
    def info(self) -> str:
        """``available`` exactly when a START would be accepted (ggp-base and Tiltyard
        schedule a player only while it says so): busy only when every slot is taken and no
        match would make room.  Not while the first player process warms up: STARTs are
        played then (on fresh processes), and managers that schedule only available players
        sent none for up to ``warm_timeout`` (300 s) after a start on a busy host."""
        return info_reply(self.config.name, "available" if self.accepts_start() else "busy")

    def accepts_start(self) -> bool:
        """Whether a START for a new match id would be taken (``make_room`` without ending
        anything)."""
        return len(self.active()) < self.config.max_matches or self.evictable(time.monotonic()) is not None

    def idle_for(self, m: Match, now: float) -> float | None:
        """Seconds since the manager's last message, or None while the match is not idle (a
        START or PLAY being answered)."""
        if m.status != "playing" or m.thinking:
            return None
        return now - m.last_activity

    def evictable(self, now: float) -> Match | None:
        """The match a new START may end when every slot is taken: the one silent longest,
        if it is silent for ``evict_idle`` seconds or overdue (a manager sends the next
        message within the clock it gave, plus its own slack: ``EVICT_SLACK``)."""
        best, best_idle = None, 0.0
        for m in self.active():
            idle = self.idle_for(m, now)
            if idle is None:
                continue
            clock = m.start_clock if m.req == 0 else m.play_clock
            if idle > min(self.config.evict_idle, clock + EVICT_SLACK) and idle > best_idle:
                best, best_idle = m, idle
        return best

    def make_room(self, match_id: str) -> bool:
        """Whether a new match fits, ending the evictable match if that is what it takes."""
        if len(self.active()) < self.config.max_matches:
            return True
        now = time.monotonic()
        victim = self.evictable(now)
        if victim is None:
            return False
        self._end(victim, f"evicted: no message for {now - victim.last_activity:.0f}s while every slot was "
                          f"taken and a START came for {match_id}")
        return True

    async def start(self, msg: Message, received: float) -> str:
        cfg = self.config
        if msg.match_id in self.matches:
            log.warning("START for match %s, which is already running: busy", msg.match_id)
            return "busy"
        if not self.make_room(msg.match_id):
            log.warning("START for match %s refused: already %d matches, none idle", msg.match_id,
                        len(self.active()))
            return "busy"
        persona_spec = cfg.persona_for(msg.match_id)
        if persona_spec not in self._personas:
            # a fitted persona's file takes seconds to read: not on the event loop
            await asyncio.to_thread(self.persona_params, persona_spec)
        m = Match(self, msg, received, persona_spec)
        self.matches[m.id] = m
        try:
            m.path = await asyncio.to_thread(create_record_file, cfg.log_dir, m.id, m.record.to_json())
        except OSError as e:
            log.error("%s: cannot create a match record in %s: %s", m.id, cfg.log_dir, e)
        # Rules that do not read, or lack our role, are refused here at once: on a loaded
        # machine a freshly started referee can take longer than the start clock to say so.
        try:
            await asyncio.to_thread(check_readable, msg.rules_text or "", msg.role)
        except RulesRefused as e:
            return self._refuse(m, str(e))
        ready_at = received + msg.start_clock - cfg.margin(msg.start_clock)
        m.referee = await self.referees.take()
        m.referee.attach(m.on_referee)
        m.referee.send(("referee", msg.rules_text, msg.role, m.gdl2))
        m.player = await self.players.take()
        m.player.attach(m.on_player)
        m.player.send(("player", {
            "rules_text": msg.rules_text, "role": msg.role, "play_clock": msg.play_clock,
            "persona": persona_spec, "seed": m.seed,
            "ready_by": ready_at - ipc_slack(msg.play_clock),
            "use_search": cfg.use_search, "ponder_between": cfg.ponder, "threads": cfg.threads,
            "gdl2": m.gdl2,
            "gdl2_records": str(cfg.gdl2_records) if m.gdl2 and cfg.gdl2_records else None}))
        # The compiled engine is built beside the player: grounding can take long in one
        # uninterruptible call, and the player must stay responsive meanwhile.  The build
        # goes on after the start clock (the player moves to the engine when it is ready);
        # grounding has the start clock's worth of CPU time, whatever the host's load, and
        # the whole build at most ``build_cap`` seconds.
        if cfg.use_engine:
            cap = build_cap(msg.start_clock, msg.play_clock, cfg.max_idle)
            m.grounder = await self.referees.fresh()
            m.grounder.attach(m.on_grounder)
            m.grounder.send(("grounder", msg.rules_text, max(5.0, msg.start_clock), cfg.worker_nice, cap))
            asyncio.get_running_loop().call_later(cap, lambda: m.stop_grounder(
                f"no fast engine: still being built after {cap:.0f}s (the match's build cap); "
                + m.playing_on()))
        log.info("START %s as %s (clocks %s/%s, persona %s); referee %s, player %s", m.id, m.role,
                 msg.start_clock, msg.play_clock, persona_spec or "default", m.referee.pid, m.player.pid)

        # Answer ready when everything is in place, the compiled engine included (the start
        # clock is there to build it), or at the start deadline, whichever comes first.
        def settled():
            if m.status not in ACTIVE:  # ABORT or STOP meanwhile
                return True
            if m.ref_status in ("failed", "dead") or m.player_status == "failed":
                return True
            engine_done = (not cfg.use_engine or m.engine_status in ("upgraded", "none")
                           or m.player_status == "dead"
                           or (cfg.ready_when_searching and m.on_interim_engine))
            return m.ref_status == "ready" and m.player_status in ("ready", "dead") and engine_done

        await m.wait_until(settled, ready_at)
        if m.status not in ACTIVE:
            log.info("START %s answered busy: the match was %s during START", m.id, m.status)
            return "busy"
        if m.ref_status == "failed" or m.player_status == "failed":
            return self._refuse(m, m.ref_reason or m.player_reason)
        if m.ref_status != "ready":
            m.record.note("the referee was not ready at the start deadline")
            log.warning("%s: referee not ready at the start deadline; replying ready anyway", m.id)
        if m.player_status != "ready":
            log.warning("%s: player not ready at the start deadline (%s); it keeps loading", m.id, m.player_status)
        elif cfg.use_engine and m.engine_status not in ("upgraded", "none"):
            meanwhile = "the non-ground engine" if m.on_interim_engine else "Prolog"
            m.record.note(f"the compiled engine was not built by the start deadline; {meanwhile} plays meanwhile")
        m.status = "playing"
        m.save()
        return "ready"

    def _refuse(self, m: Match, reason: str) -> str:
        log.error("START %s refused (busy): %s", m.id, reason)
        m.record.refused = reason
        m.record.abort()
        m.status = "refused"
        m.kill()
        m.save()
        self.matches.pop(m.id, None)
        return "busy"

    async def play(self, msg: Message, received: float) -> str:
        m = self.matches.get(msg.match_id)
        if m is not None and m.status == ENDED:
            return self._play_ended(m, msg, received)
        if m is None or m.status not in ACTIVE:
            log.warning("PLAY for unknown match %s: busy", msg.match_id)
            return "busy"
        m.last_activity = time.monotonic()
        m.thinking += 1
        try:
            return await self._play(m, msg, received)
        finally:
            m.thinking -= 1
            m.last_activity = time.monotonic()

    async def _play(self, m: Match, msg: Message, received: float) -> str:
        cfg = self.config
        deadline = received + m.play_clock - cfg.margin(m.play_clock)
        texts = m.joint_texts(msg)
        if texts is not None:
            self._apply(m, texts, received)
        m.req += 1
        req, ply = m.req, m.ply
        if m.player is not None:
            m.player.send(("play", req, texts, deadline - ipc_slack(m.play_clock), ply))

        def answerable():
            if m.status not in ACTIVE:  # aborted meanwhile: answer now with what we know
                return True
            if m.decisions.get(req) is not None or ply in m.over:
                return True
            ref = m.ref_legal.get(ply)
            if ref is not None and len(ref) == 1 and not m.gdl2:
                return True
            if m.gdl2 and m.forced_gdl2(ply):
                return True
            if req in m.decisions or m.player_status in ("failed", "dead"):
                # The player has no move for this state (lost, failed): the referee's legal
                # moves, as soon as it has them; a guess from an earlier state may be illegal.
                return m.known_legal(ply) is not None or m.ref_status in ("failed", "dead")
            return False

        await m.wait_until(answerable, deadline)
        if (m.decisions.get(req) is None and m.known_legal(ply) is None and ply not in m.over
                and m.status in ACTIVE and m.ref_status not in ("failed", "dead")):
            # No legal move known yet (a slow referee on a loaded machine): wait for it up to
            # just before the clock (a late legal move beats a guess that may be illegal).  Up
            # to the clock itself, the guesses of an exploding game reached the manager 1-16 ms
            # after it: within ggp-base's grace, but late by the clock it gave.
            await m.wait_until(lambda: m.known_legal(ply) is not None or m.status not in ACTIVE
                               or m.ref_status in ("failed", "dead"),
                               received + m.play_clock - LAST_WAIT_SLACK)
        move, entry = m.choose(req, ply, received)
        m.last_reply = move
        m.record.add_decision(entry)
        if entry["fallback"]:
            log.warning("%s: PLAY %d: fallback %s (%s)", m.id, req, move, entry["fallback_reason"])
        elif "no_move_because" in entry:
            log.warning("%s: PLAY %d at ply %d: no move to play (%s); answered %s", m.id, req, ply,
                        entry["no_move_because"], move)
        m.save()
        return move

    def _play_ended(self, m: Match, msg: Message, received: float) -> str:
        """A PLAY for a match we ended: no workers any more, answer from what is known."""
        texts = m.joint_texts(msg)
        if texts is not None:
            m.ply += 1
            m.record_step(texts)
        m.req += 1
        m.last_activity = time.monotonic()
        move, entry = m.choose(m.req, m.ply, received)
        m.last_reply = move
        m.record.add_decision(entry)
        m.save()
        return move

    def _apply(self, m: Match, texts, received: float | None = None, goes_on: bool = True) -> None:
        m.ply += 1
        m.record_step(texts)
        if m.referee is not None:
            if m.gdl2:
                # the referee's budget for this step's history, from the PLAY's arrival: our
                # legal moves must be known well before the reply is due
                until = (received if received is not None else time.monotonic()) + REFEREE_SHARE * m.play_clock
                texts = dict(texts, seconds=m.play_clock, goes_on=goes_on, until=until)
            m.referee.send(("step", m.ply, texts))

    async def stop(self, msg: Message, received: float) -> str:
        m = self.matches.get(msg.match_id)
        if m is None:
            log.warning("STOP for unknown match %s: busy", msg.match_id)
            return "busy"
        if m.status == "starting":
            self._drop(m, "stopped by the game manager during START")
        elif m.status == ENDED:
            self.matches.pop(m.id, None)
        elif m.status in ACTIVE:
            m.status = "stopping"
            texts = m.joint_texts(msg)
            if texts is not None:
                self._apply(m, texts, received, goes_on=False)
            task = asyncio.get_running_loop().create_task(self._finish(m))
            self._finishing.add(task)
            task.add_done_callback(self._finishing.discard)
        return "done"

    async def _finish(self, m: Match) -> None:
        ply = m.ply
        await m.wait_until(lambda: m.ref_ply >= ply or m.ref_status in ("failed", "dead"),
                           time.monotonic() + max(10.0, m.play_clock))
        m.kill()
        if ply in m.ref_terminal:
            m.record.complete(m.ref_terminal[ply])
        else:
            m.record.complete(None)
            m.record.note(f"STOP received, but the state after ply {ply} is not terminal by our rules "
                          f"(or unknown); no goal values recorded")
        m.status = "stopped"
        log.info("STOP %s after %d plies; goals %s; %s", m.id, ply, m.record.goal_values, m.unsearched_text())
        m.save()
        if self.matches.get(m.id) is m:
            del self.matches[m.id]

    async def abort(self, msg: Message) -> str:
        m = self.matches.get(msg.match_id)
        if m is None:
            log.warning("ABORT for unknown match %s: busy", msg.match_id)
            return "busy"
        if m.status == ENDED:
            self.matches.pop(m.id, None)
            return "aborted"
        self._drop(m, "aborted by the game manager" + (" during START" if m.status == "starting" else ""))
        return "aborted"

    def _drop(self, m: Match, why: str) -> None:
        m.status = "aborted"
        m.kill()
        m.record.abort()
        m.record.note(why)
        m.record.extra["x-end-reason"] = why
        log.info("%s: %s after %d plies; %s", m.id, why, m.ply, m.unsearched_text())
        m._notify()  # a PLAY still waiting on this match answers now
        m.save()
        if self.matches.get(m.id) is m:
            del self.matches[m.id]

    def _end(self, m: Match, why: str) -> None:
        """End a match ourselves (memory): workers killed, reason recorded; the match stays
        known so that later PLAY, STOP and ABORT messages get proper answers."""
        if m.status not in ACTIVE:
            return
        m.status = ENDED
        m.kill()
        m.record.abort()
        m.record.note(why)
        m.record.extra["x-end-reason"] = why
        log.error("%s: match ended after %d plies: %s; %s", m.id, m.ply, why, m.unsearched_text())
        m._notify()
        m.save()

    async def _watch_memory(self) -> None:
        """Resident memory of every worker, every ``memory_poll`` seconds: a worker over its cap
        is killed (a referee or player ends its match, a grounder only its engine build), and
        when all workers together pass the budget the match using most is ended."""
        cfg = self.config
        cap = cfg.worker_memory_mb * 1024 * 1024
        budget = cfg.memory_budget_mb * 1024 * 1024

        def rss(proc) -> int:
            if proc is None:
                return 0
            try:
                return psutil.Process(proc.pid).memory_info().rss
            except (psutil.Error, ValueError, TypeError):
                return 0

        while True:
            await asyncio.sleep(cfg.memory_poll)
            try:
                total = sum(rss(p) for p in self.players.spares + self.referees.spares)
                usage = []
                for m in self.active():
                    used = 0
                    for kind in ("referee", "player", "grounder"):
                        proc = getattr(m, kind)
                        r = rss(proc)
                        used += r
                        peak = m.record.extra.setdefault("x-peak-rss-mb", {})
                        if r and r / 2 ** 20 > peak.get(kind, 0):   # as sampled, for the record
                            peak[kind] = round(r / 2 ** 20)
                        if r <= cap:
                            continue
                        what = (f"the {kind} process used {r / 2 ** 20:.0f} MB, over the "
                                f"{cfg.worker_memory_mb} MB cap per worker")
                        if kind == "grounder":
                            m.stop_grounder(f"no compiled engine: {what}; {m.playing_on()}")
                        elif kind == "player":
                            # The referee still follows the game: random legal moves from
                            # it beat ending the match (and guessing moves that are illegal).
                            m.stop_player(f"memory: {what}; playing fallback moves")
                        else:
                            self._end(m, f"memory: {what}")
                            break
                    total += used
                    if m.status in ACTIVE:
                        usage.append((used, m))
                if total > budget and usage:
                    used, m = max(usage, key=lambda u: u[0])
                    self._end(m, f"memory: the matches used {total / 2 ** 20:.0f} MB together, over the "
                                 f"server's {cfg.memory_budget_mb} MB budget; this one used most "
                                 f"({used / 2 ** 20:.0f} MB)")
            except Exception as e:  # the watchdog must outlive anything odd it meets
                log.error("memory watchdog: %s: %s", type(e).__name__, e)

    async def _watch_lag(self) -> None:
        """Deadlines are only as good as the event loop's promptness: report when it lags
        (an overloaded machine, or something blocking the loop)."""
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(0.25)
            lag = time.monotonic() - t0 - 0.25
            if lag > 0.2:
                log.warning("event loop lagged %.0f ms (machine overloaded?)", lag * 1000)

    async def _mark_interrupted(self) -> None:
        """Records left unfinished by an earlier run of the server (killed: nothing could be
        written) are marked aborted, with the reason, once they are older than the reaper's
        limit (another server sharing the folder would have given up on them by then)."""
        try:
            pending = await asyncio.to_thread(mark_interrupted, self.config.log_dir, set(self.matches))
            while pending:
                wait = max(1.0, min(p[0] for p in pending) - time.time())
                await asyncio.sleep(wait)
                due = [p[1] for p in pending if p[0] <= time.time()]
                pending = [p for p in pending if p[0] > time.time()]
                pending += await asyncio.to_thread(mark_interrupted, self.config.log_dir, set(self.matches), due)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # best effort: never in the way of serving
            log.error("marking interrupted records: %s: %s", type(e).__name__, e)

    async def _reap(self) -> None:
        """Managers can die without STOP or ABORT (ggp-base GameServer does on rule errors):
        free matches silent for longer than Tiltyard's own wedge rule, or ``max_idle``
        (looked at every 30 s, or a third of a shorter ``max_idle``)."""
        while True:
            await asyncio.sleep(max(1.0, min(30.0, self.config.max_idle / 3)))
            self.reap(time.monotonic())

    def touch(self, match_id: str) -> str | None:
        """Someone is still there: a match whose manager waits on a person (the web page,
        where a person may think for an hour between two PLAYs) is not silent while they
        are.  The record's time is touched too, so that another manager sharing the log
        folder does not take it for the record of a killed server (``mark_interrupted``).
        None when the match goes on here, else why not, in words."""
        m = self.matches.get(match_id)
        if m is None:
            return "it no longer has this match"
        if m.status == "stopping":       # STOP came: being finished, nothing is lost
            return None
        if m.status not in ACTIVE:
            return str(m.record.extra.get("x-end-reason") or f"its match is {m.status}")
        m.last_activity = time.monotonic()
        if m.path is not None:
            try:
                os.utime(m.path)
            except OSError:
                pass
        return None

    def reap(self, now: float) -> None:
        for m in list(self.matches.values()):
            if m.thinking or m.status == "starting":  # a START or PLAY is being answered
                continue
            idle = now - m.last_activity
            if idle > min(idle_limit(m.start_clock, m.play_clock), self.config.max_idle):
                if m.status in ACTIVE:
                    self._drop(m, f"abandoned: no message for {idle:.0f}s")
                elif m.status == ENDED:
                    self.matches.pop(m.id, None)
