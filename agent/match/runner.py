"""One match between any players, refereed by our reasoner, with ggp-base's semantics.

As ggp-base's GameServer does (ggp-facts sections 1-3): START goes to every player at once
with the start clock as its time limit; then, until the state is terminal, PLAY goes to every
player at once (``NIL`` first, then the last joint move in role order) with the play clock
plus one second; a late reply is ``TO``, a failed connection ``CE``, an unparsable reply
``IL null`` and an illegal one ``IL <move>``, and each is replaced by a uniformly random legal
move drawn before the request; STOP carries the last joint move.  Cancelling (``cancel`` set,
Ctrl-C) sends ABORT to every player and records the match as aborted, with the reason
(``x-end-reason``; a ``Stop`` says which).  A ``Stop`` may also end the match by agreement (a
person resigned, a draw agreed): aborted as well, with ``x-result`` giving the agreed goals.

Departures from GameServer, on purpose: a role with no legal move in a non-terminal state,
a referee failure or more than ``max_plies`` steps abort the match with the reason recorded
(GameServer stops silently and never finishes the record); a person's forced move (one
legal move) is made for them without asking.

The record is ggp-base Match JSON (``agent.matchlog``), replaced atomically after every step,
in the game's real vocabulary even when the players saw it scrambled (``"scrambled": true``,
as ggp-base records), with ``playerNamesFromHost``, ``isPlayerHuman``, ``errors``, and ``x-``
fields: the rules (``x-rules``), the players (``x-players``) and what each error was
(``x-error-details``).

The referee is ``agent.referee``'s: the Prolog reasoner, or the compiled engine where it is
exact (``referee=``); ``x-referee`` says which answered last and why.

GDL-II games (``gdl.gdl2.is_gdl2``: a role ``random`` or ``sees`` rules) are refereed as
Dresden's GameController does.  The ``random`` role has no player: the runner moves it,
uniformly at random among its legal moves, from an RNG seeded by ``seed`` and the match id
(a match replays the same with the same seed), and sends it nothing.  After each joint move
the referee computes every role's percepts (``sees`` of the state before the move and the
move); a player's PLAY and STOP carry only its own, sorted, in place of the joint move:
``( PLAY id (P1 P2 ) )``, each percept followed by a space, ``()`` when it sees nothing,
``NIL`` for the first PLAY (``players.play_message``).  No player learns another role's move.
The record still holds the whole match (every role's moves, random's too, and the states)
with ``x-gdl2: true`` and ``x-percepts`` (per role, its sorted percept texts per step).

Events (``on_event``, called synchronously, in the vocabulary the players see); every event
has ``type`` and ``gdl2``.  In a GDL-I game (``gdl2`` false) everyone sees everything:
  start  match_id, roles, players, is_human, rules (as sent), start_clock, play_clock,
         state (fact texts), legal (per role), to_move (roles with a choice), errors (START)
  move   ply, moves (the joint move applied), errors (per role), state, legal, to_move,
         terminal
  end    goals (per role), record (path); ended by agreement (``Stop``) also by
         ("resignation", "draw", ...) and reason
  abort  reason, record (path)
In a GDL-II game (``gdl2`` true) the fields any role may see stay at the top; what some role
may not see is in ``hidden``, which a display shows only once the match has ended (``end`` or
``abort``); ``views[i]`` is what role ``i`` may see, and ``role_view(event, i)`` the event as
role ``i``'s display may show it during the match:
  start  match_id, roles, players (``referee`` for random), is_human, rules (as sent),
         start_clock, play_clock, chance (random's role index, or None), views, hidden:
         {state, legal, to_move, errors}
  move   ply, terminal, views, hidden: {moves, errors, percepts (per role), state, legal,
         to_move}
  end    goals (per role), record (path)
  abort  reason, record (path)
  views[i] = {percepts: role i's percepts of the last step (None at start: nothing sent
             yet), move: its own move applied (None at start, and when its reply failed and
             the referee substituted one it was never told of), error: its own error code
             ("" when none), legal: its legal moves now ([] when terminal), to_move: whether
             it has a choice now}
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import random
import re
from pathlib import Path

from agent.matchlog import MatchRecord, atomic_write_json, create_record_file, now_ms
from gdl.gdl2 import RANDOM, is_gdl2, random_index

from .players import PlayerError, canonical_move
from .referee import Referee, RefereeError
from .rules import Identity, RulesError, Scrambler, read_rules

log = logging.getLogger("ggp.match")

PLAY_GRACE = 1.0        # ggp-base GameServer: PLAY may take the play clock + 1 s
ABORT_TIMEOUT = 1.0     # ggp-base GameServer: ABORT 1 s
REFEREE_TIMEOUT = 240.0  # per referee request: a Prolog query (its own limit), then maybe building the compiled engine
CHANCE_NAME = "referee"  # the name of the random role's seat in records and events: the runner moves it


class MatchError(ValueError):
    """A match that cannot be set up (invalid rules, wrong number of players, ...)."""


class _Cancelled(Exception):
    pass


class Stop(asyncio.Event):
    """A ``cancel`` event for ``run_match`` that says why the match ends before its terminal
    state.  ``end(reason)``: the match is aborted with that reason (``x-end-reason``).
    ``end(reason, goals=[...], by=...)``: it ends by agreement (a person resigned, a draw
    was agreed): the record is aborted as well (its last state is not terminal, and a
    completed record's goals are the rules' own), with ``x-end-reason`` and ``x-result``
    ``{"by": by, "goals": goals}`` saying who won; the event is an ``end`` with those goals.
    A plain ``asyncio.Event`` set aborts with the reason "cancelled"."""

    def __init__(self):
        super().__init__()
        self.reason: str | None = None
        self.goals: list | None = None
        self.by: str | None = None

    def end(self, reason: str, goals: list | None = None, by: str | None = None) -> bool:
        """Ask the match to end; False when an end was asked for already (the first wins)."""
        if self.is_set():
            return False
        self.reason, self.goals, self.by = reason, (None if goals is None else list(goals)), by
        self.set()
        return True


def seat_players(roles: list, players, chance: int | None) -> list:
    """``players`` in role order, one per role; in a game with the chance role (``chance``,
    its index), ``None`` in its seat.  The caller gives one player per role, or, with a
    chance role, one per other role (or ``None`` in random's seat).  Raises ``MatchError``."""
    players = list(players)
    n = len(roles)
    if chance is None:
        if len(players) != n:
            raise MatchError(f"the game has {n} roles but {len(players)} players were given")
        missing = [str(roles[i]) for i, p in enumerate(players) if p is None]
        if missing:
            raise MatchError(f"no player for {', '.join(missing)}")
        return players
    others = [str(r) for i, r in enumerate(roles) if i != chance]
    if len(players) == n:
        if players[chance] is not None:
            raise MatchError(f"the role {RANDOM} is played by the referee (uniformly at random): "
                             f"give players for the other roles only ({' '.join(others)})")
    elif len(players) == n - 1:
        players.insert(chance, None)
    else:
        raise MatchError(f"the game has {n} roles, {RANDOM} played by the referee: give {n - 1} "
                         f"player{'s' * (n - 1 != 1)} (for {' '.join(others)}), not {len(players)}")
    missing = [str(roles[i]) for i, p in enumerate(players) if p is None and i != chance]
    if missing:
        raise MatchError(f"no player for {', '.join(missing)}")
    return players


def role_view(event: dict, role_index: int) -> dict:
    """The event as role ``role_index``'s display may show it before the match ends: a GDL-I
    event whole (everyone sees everything), a GDL-II event without ``hidden`` and with only
    that role's ``view`` (see the module's notes)."""
    if not event.get("gdl2"):
        return dict(event)
    out = {k: v for k, v in event.items() if k not in ("hidden", "views")}
    if "views" in event:
        out["view"] = dict(event["views"][role_index])
    return out


def to_move(legal: list) -> list[int]:
    """The roles with a choice to make (more than one legal move); when none has, the roles
    with a move at all (a pass-everything step still shows whose turn it is)."""
    choosing = [i for i, ms in enumerate(legal) if len(ms) > 1]
    return choosing or [i for i, ms in enumerate(legal) if ms]


async def _race(aw, cancel: asyncio.Event | None):
    """Await ``aw`` unless ``cancel`` is set first (then ``_Cancelled``)."""
    if cancel is None:
        return await aw
    if cancel.is_set():
        if asyncio.iscoroutine(aw):
            aw.close()
        raise _Cancelled()
    task = asyncio.ensure_future(aw)
    stopper = asyncio.ensure_future(cancel.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        stopper.cancel()
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)  # let it wind down, its outcome read
    raise _Cancelled()


class _Match:
    def __init__(self, rules_text, description, players, start_clock, play_clock, match_id, scramble,
                 seed, out_dir, on_event, cancel, human_clock, max_plies, referee_mode):
        self.real_rules = rules_text
        self.vocab = Scrambler(rules_text, seed) if scramble else Identity()
        self.rules = self.vocab.text(rules_text)
        self.players = list(players)   # None in the seat of GDL-II's random role: the runner moves it
        self.n = len(self.players)
        self.gdl2 = is_gdl2(description)
        self.chance = random_index(description.roles) if self.gdl2 else None
        self.seated = [i for i, p in enumerate(self.players) if p is not None]
        self.start_clock, self.play_clock = start_clock, play_clock
        self.id = match_id
        self.scramble = scramble
        self.rng = random.Random(f"{seed}:{match_id}")
        # random's moves have an RNG of their own: the same seed deals the same cards whatever
        # the players do (the substitutes of failed replies draw from ``rng``)
        self.chance_rng = random.Random(f"{seed}:{match_id}:{RANDOM}")
        self.out_dir = Path(out_dir)
        self.on_event, self.cancel = on_event, cancel
        self.human_clock = human_clock
        self.max_plies = max_plies
        self.referee_mode = referee_mode
        self.record = MatchRecord(match_id, "", rules_text, start_clock, play_clock, start_time=now_ms())
        self.errors: list[list[str]] = []
        self.details: list[dict] = []
        self.path: Path | None = None
        self.referee: Referee | None = None
        self.roles: list[str] = []
        self.info: dict = {}
        self.last: list[str] | None = None
        self.seen: list | None = None       # GDL-II: per role, its percepts of the last step
        self.mine: list = [None] * self.n   # GDL-II: per role, its own move of the last step, if it made it
        self.ply = 0

    # -------------------------------------------------------------- record and events
    def to_json(self) -> dict:
        d = self.record.to_json()
        for k in ("x-role", "x-player", "x-persona", "x-decisions"):
            d.pop(k, None)  # a player's view; the host's record has every player instead
        d["errors"] = [list(row) for row in self.errors[:len(d["states"])]]
        d["playerNamesFromHost"] = self.names()
        d["isPlayerHuman"] = [bool(p is not None and p.is_human) for p in self.players]
        d["scrambled"] = bool(self.scramble)
        d["x-players"] = [{"name": CHANCE_NAME, "kind": "chance"} if p is None else
                          {"name": p.name, "kind": type(p).__name__,
                           **({"persona": p.persona} if getattr(p, "persona", None) else {}),
                           **({"url": p.url} if getattr(p, "url", None) else {})} for p in self.players]
        if self.details:
            d["x-error-details"] = list(self.details)
        if self.info.get("referee"):
            d["x-referee"] = dict(self.info["referee"])
        return d

    def names(self) -> list[str]:
        return [CHANCE_NAME if p is None else p.name for p in self.players]

    async def save(self) -> None:
        data = self.to_json()
        try:
            if self.path is None:
                self.path = await asyncio.to_thread(create_record_file, self.out_dir, self.id, data)
            else:
                await asyncio.to_thread(atomic_write_json, self.path, data)
        except OSError as e:
            log.error("%s: cannot write the record in %s: %s", self.id, self.out_dir, e)

    def emit(self, event: dict) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as e:  # a broken display must not break the match
            log.error("%s: on_event failed on %s: %s", self.id, event.get("type"), e)

    def _state_event(self) -> dict:
        legal = self.info["legal"]
        return {"state": list(self.info["state"]), "legal": [list(ms) for ms in legal],
                "to_move": to_move(legal)}

    def _event(self, kind: str, public: dict, full: dict, row: list) -> dict:
        """An event: in a GDL-I game ``public`` and ``full`` together; in a GDL-II game
        ``full`` (and every role's error) under ``hidden``, and each role's own part in
        ``views`` (see the module's notes)."""
        if not self.gdl2:
            return {"type": kind, "gdl2": False, **public, **full, "errors": list(row)}
        legal = self.info["legal"]
        choosing = to_move(legal)
        views = [{"percepts": None if self.seen is None else list(self.seen[i]), "move": self.mine[i],
                  "error": row[i], "legal": list(legal[i]), "to_move": i in choosing}
                 for i in range(self.n)]
        return {"type": kind, "gdl2": True, **public, "views": views,
                "hidden": {**full, "errors": list(row)}}

    def error(self, row: list, i: int, code: str, detail: str, step: int = 0) -> None:
        """Player ``i``'s error at ``step`` (0: START) into ``row`` (the players' vocabulary)
        and the details (the record's)."""
        row[i] = code
        self.details.append({"ply": step, "role": self.vocab.unscramble(self.roles[i]),
                             "player": self.players[i].name, "error": self.vocab.unscramble(code),
                             "detail": self.vocab.unscramble(detail)[:500]})
        log.info("%s: step %d, %s: %s %s", self.id, step, self.players[i].name, code, detail[:200])

    # -------------------------------------------------------------- phases
    async def open(self) -> None:
        try:
            self.referee, self.info = await Referee.open(self.rules, REFEREE_TIMEOUT, self.referee_mode)
        except RefereeError as e:
            raise MatchError(str(e)) from None
        self.roles = self.info["roles"]
        if len(self.roles) != self.n:
            self.referee.close()
            raise MatchError(f"the game has {len(self.roles)} roles ({' '.join(self.roles)}) "
                             f"but {self.n} players were given")
        if bool(self.info.get("gdl2")) != self.gdl2:  # the rules as sent read as another game
            self.referee.close()
            raise MatchError("the referee and the runner disagree on whether the game is GDL-II")
        self.record.set_roles([self.vocab.unscramble(r) for r in self.roles], None)
        self.record.set_state(0, self.vocab.unscramble(self.info["state_text"]))
        if self.gdl2:
            self.record.percepts = []

    async def _timed(self, i: int, coro, timeout: float | None):
        """(value, None) or (None, (code, detail)) for one request to player ``i``."""
        try:
            if timeout is None or math.isinf(timeout):
                return await coro, None
            return await asyncio.wait_for(coro, timeout), None
        except asyncio.TimeoutError:
            return None, ("TO", f"no reply within {timeout:g}s")
        except PlayerError as e:
            return None, (e.code, e.detail)
        except _Cancelled:
            raise
        except Exception as e:  # a broken player is a failed connection, not a broken match
            return None, ("CE", f"{type(e).__name__}: {e}")

    async def start(self) -> None:
        row = [""] * self.n
        if not self.gdl2:
            # GDL-I: the initial state and its legal moves are every player's from the rules,
            # so a person may choose a first move while the other players load (a persona's
            # processes, its compiled engine): the page shows the board at once.
            for i in self.seated:
                legal = self.info["legal"][i]
                if self.players[i].is_human and len(legal) > 1 and hasattr(self.players[i], "offer_first"):
                    self.players[i].offer_first(list(legal))
            self.emit({"type": "opened", "gdl2": False, "roles": list(self.roles), **self._state_event()})

        async def prepare(p):
            if hasattr(p, "prepare"):
                await p.prepare()
        # untimed, all at once: processes, connections, warm-up, before any clock runs
        seated = self.seated  # GDL-II's random role has no player: nothing is sent to it
        prepared = await _race(asyncio.gather(*(self._timed(i, prepare(self.players[i]), None)
                                                for i in seated)), self.cancel)
        for i, (_, err) in zip(seated, prepared):
            if err:
                self.error(row, i, "CE", f"preparing: {err[1]}")
        replies = await _race(asyncio.gather(*(
            self._timed(i, self.players[i].start(self.id, self.roles[i], self.rules, self.start_clock,
                                                 self.play_clock), self.start_clock)
            for i in seated)), self.cancel)
        for i, (reply, err) in zip(seated, replies):
            if err and not row[i]:
                self.error(row, i, *err)
            elif isinstance(reply, str) and reply.strip().lower() != "ready":
                self.record.note(f"{self.players[i].name} answered START with {reply.strip()[:100]!r}")
        self.errors.append([self.vocab.unscramble(e) for e in row])
        await self.save()
        public = {"match_id": self.id, "roles": list(self.roles), "players": self.names(),
                  "is_human": [bool(p is not None and p.is_human) for p in self.players], "rules": self.rules,
                  "start_clock": self.start_clock, "play_clock": self.play_clock}
        if self.gdl2:
            public["chance"] = self.chance
        self.emit(self._event("start", public, self._state_event(), row))

    async def _ask(self, i: int, legal: list[str]):
        p = self.players[i]
        timeout = self.play_clock + PLAY_GRACE
        if p.is_human:
            if len(legal) == 1:
                return legal[0], None
            if self.human_clock is not None:
                timeout = self.human_clock
        if getattr(p, "wants_legal", False):  # a person's page, the random player
            p.legal = list(legal)
        last = self.last if not self.gdl2 else (None if self.seen is None else self.seen[i])
        reply, err = await self._timed(i, p.play(self.id, last, timeout), timeout)
        if err:
            return None, err
        move = canonical_move(reply) if isinstance(reply, str) else None
        if move is None:
            return None, ("IL null", f"unparsable reply {str(reply)[:200]!r}")
        if move not in legal:
            return None, (f"IL {move}", "not a legal move")
        return move, None

    async def step(self) -> None:
        legal = self.info["legal"]
        stuck = [self.roles[i] for i in range(self.n) if not legal[i]]
        if stuck:
            raise RefereeError(f"{', '.join(stuck)} has no legal move in a non-terminal state")
        seated = self.seated
        # drawn before asking, as GameServer (a GDL-I game: every role, as always)
        substitutes = {i: self.rng.choice(legal[i]) for i in (seated if self.gdl2 else range(self.n))}
        answers = await _race(asyncio.gather(*(self._ask(i, legal[i]) for i in seated)), self.cancel)
        row = [""] * self.n
        joint = [None] * self.n
        mine = [None] * self.n
        for i, (move, err) in zip(seated, answers):
            if err:
                self.error(row, i, *err, step=self.ply + 1)
                move = substitutes[i]
            else:
                mine[i] = move
            joint[i] = move
        if self.chance is not None:
            joint[self.chance] = mine[self.chance] = self.chance_rng.choice(legal[self.chance])
        self.info = await _race(self.referee.step(joint, REFEREE_TIMEOUT), self.cancel)
        self.ply += 1
        self.last = joint
        self.record.add_moves([self.vocab.unscramble(m) for m in joint])
        if self.gdl2:
            self.seen = [list(ps) for ps in self.info["percepts"]]
            self.mine = mine
            self.record.add_percepts([sorted(self.vocab.unscramble(p) for p in ps) for ps in self.seen])
        self.record.set_state(self.ply, self.vocab.unscramble(self.info["state_text"]))
        self.errors.append([self.vocab.unscramble(e) for e in row])
        await self.save()
        if not self.gdl2:
            self.emit(self._event("move", {"ply": self.ply, "moves": list(joint)},
                                  {"terminal": self.info["terminal"], **self._state_event()}, row))
        else:
            self.emit(self._event("move", {"ply": self.ply, "terminal": self.info["terminal"]},
                                  {"moves": list(joint), "percepts": [list(ps) for ps in self.seen],
                                   **self._state_event()}, row))

    async def finish(self) -> None:
        goals = self.info["goals"]
        if self.info.get("goal_note"):
            self.record.note(self.info["goal_note"])
        self.record.complete(goals)
        await self.save()
        seated = self.seated

        def last(i):  # GDL-II: STOP carries the player's own percepts of the last step
            return self.last if not self.gdl2 else (None if self.seen is None else self.seen[i])
        results = await asyncio.gather(*(self._timed(i, self.players[i].stop(self.id, last(i)), self.play_clock)
                                         for i in seated))
        for i, (_, err) in zip(seated, results):
            if err:
                self.record.note(f"{self.players[i].name}: STOP failed ({err[0]} {err[1]})")
        await self.save()
        self.emit({"type": "end", "gdl2": self.gdl2, "goals": list(goals), "record": str(self.path)})

    async def abort(self, reason: str) -> None:
        self.record.abort()
        self.record.note(f"aborted: {reason}")
        self.record.extra["x-end-reason"] = reason
        await self.save()
        await asyncio.gather(*(self._timed(i, self.players[i].abort(self.id), ABORT_TIMEOUT)
                               for i in self.seated))
        log.warning("%s: aborted after %d steps: %s", self.id, self.ply, reason)
        self.emit({"type": "abort", "gdl2": self.gdl2, "reason": reason, "record": str(self.path)})

    async def agreed(self, reason: str, goals: list, by: str) -> None:
        """The match ended by agreement before a terminal state (``Stop.end`` with goals):
        recorded as aborted with the result (``x-result``) and the reason; the players get
        ABORT (a GGP player's STOP is for a terminal state)."""
        goals = [int(g) for g in goals]
        self.record.abort()
        self.record.note(f"ended by agreement: {reason}")
        self.record.extra["x-end-reason"] = reason
        self.record.extra["x-result"] = {"by": by, "goals": goals}
        await self.save()
        await asyncio.gather(*(self._timed(i, self.players[i].abort(self.id), ABORT_TIMEOUT)
                               for i in self.seated))
        log.info("%s: ended after %d steps by %s: %s", self.id, self.ply, by, reason)
        self.emit({"type": "end", "gdl2": self.gdl2, "goals": goals, "by": by, "reason": reason,
                   "record": str(self.path)})

    async def run(self) -> None:
        try:
            await self.start()
            while not self.info["terminal"]:
                if self.ply >= self.max_plies:
                    raise RefereeError(f"no terminal state after {self.max_plies} steps")
                await self.step()
            await self.finish()
        except _Cancelled:
            goals = getattr(self.cancel, "goals", None)
            if goals is not None and len(goals) == self.n:
                await self.agreed(self.cancel.reason or "ended by agreement", goals,
                                  getattr(self.cancel, "by", None) or "agreement")
            else:
                await self.abort(getattr(self.cancel, "reason", None) or "cancelled")
        except RefereeError as e:
            await self.abort(str(e))
        except asyncio.CancelledError:
            await asyncio.shield(self.abort("interrupted"))
            raise


async def run_match(rules_text: str, players, *, start_clock, play_clock, match_id: str | None = None,
                    scramble: bool = False, seed: int = 0, out_dir="match_logs", on_event=None,
                    cancel: asyncio.Event | None = None, human_clock: float | None = None,
                    max_plies: int = 10_000, game_meta_url: str | None = None,
                    referee: str = "standby") -> dict:
    """Play one match; returns its record (ggp-base Match JSON, also written to
    ``out_dir/<match id>.json``).  ``players`` in role order; in a GDL-II game with the role
    ``random``, without one for it (or ``None`` in its seat): the runner moves it, from an RNG
    seeded by ``seed`` and the match id.  ``rules_text``: a rule sheet (KIF) or a rules list.
    ``human_clock``: seconds a person has per move (default the play clock + 1 s, like
    everyone; ``math.inf``: unlimited, as ggp-base's Kiosk).
    ``game_meta_url``: the game's repository URL for the record (default: a URN naming the
    exact rules, ``agent.matchlog.rules_urn``).  ``referee``: ``standby`` (Prolog, and the
    exact compiled engine where Prolog runs out of limits), ``auto`` (the compiled engine
    from the start when exact) or ``prolog`` (see ``agent.match.referee``).  Raises
    ``MatchError`` when the match cannot be set up (invalid rules, wrong number of players, a
    player for GDL-II's ``random``)."""
    try:
        rules, description = read_rules(rules_text)
    except RulesError as e:
        raise MatchError(f"invalid rules:\n{e}") from None
    if not (start_clock > 0 and play_clock > 0):
        raise MatchError("the start and play clocks must be positive")
    players = seat_players(description.roles, players, random_index(description.roles)
                           if is_gdl2(description) else None)
    if match_id is None:
        match_id = f"match.{hashlib.sha1(rules.encode()).hexdigest()[:8]}.{now_ms()}"
    if not re.fullmatch(r"[^\s()]+", match_id):
        raise MatchError(f"a match id is one word without parentheses, not {match_id!r}")
    m = _Match(rules, description, players, start_clock, play_clock, match_id, scramble, seed,
               out_dir, on_event, cancel, human_clock, max_plies, referee)
    if game_meta_url:
        m.record.game_meta_url = game_meta_url
    await m.open()
    try:
        await m.run()
    finally:
        m.referee.close()
    return m.to_json()
