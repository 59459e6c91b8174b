"""One match between any players, refereed by our reasoner, with ggp-base's semantics.

As ggp-base's GameServer does (ggp-facts sections 1-3): START goes to every player at once
with the start clock as its time limit; then, until the state is terminal, PLAY goes to every
player at once (``NIL`` first, then the last joint move in role order) with the play clock
plus one second; a late reply is ``TO``, a failed connection ``CE``, an unparsable reply
``IL null`` and an illegal one ``IL <move>``, and each is replaced by a uniformly random legal
move drawn before the request; STOP carries the last joint move.  Cancelling (``cancel`` set,
Ctrl-C) sends ABORT to every player and records the match as aborted, with the reason.

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

Events (``on_event``, called synchronously, in the vocabulary the players see):
  start  match_id, roles, players, is_human, rules (as sent), start_clock, play_clock,
         state (fact texts), legal (per role), to_move (roles with a choice), errors (START)
  move   ply, moves (the joint move applied), errors (per role), state, legal, to_move,
         terminal
  end    goals (per role), record (path)
  abort  reason, record (path)
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

from .players import PlayerError, canonical_move
from .referee import Referee, RefereeError
from .rules import Identity, RulesError, Scrambler, read_rules

log = logging.getLogger("ggp.match")

PLAY_GRACE = 1.0        # ggp-base GameServer: PLAY may take the play clock + 1 s
ABORT_TIMEOUT = 1.0     # ggp-base GameServer: ABORT 1 s
REFEREE_TIMEOUT = 240.0  # per referee request: a Prolog query (its own limit), then maybe building the compiled engine


class MatchError(ValueError):
    """A match that cannot be set up (invalid rules, wrong number of players, ...)."""


class _Cancelled(Exception):
    pass


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
        self.players = list(players)
        self.n = len(self.players)
        self.start_clock, self.play_clock = start_clock, play_clock
        self.id = match_id
        self.scramble = scramble
        self.rng = random.Random(f"{seed}:{match_id}")
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
        self.ply = 0

    # -------------------------------------------------------------- record and events
    def to_json(self) -> dict:
        d = self.record.to_json()
        for k in ("x-role", "x-player", "x-persona", "x-decisions"):
            d.pop(k, None)  # a player's view; the host's record has every player instead
        d["errors"] = [list(row) for row in self.errors[:len(d["states"])]]
        d["playerNamesFromHost"] = [p.name for p in self.players]
        d["isPlayerHuman"] = [bool(p.is_human) for p in self.players]
        d["scrambled"] = bool(self.scramble)
        d["x-players"] = [{"name": p.name, "kind": type(p).__name__,
                           **({"persona": p.persona} if getattr(p, "persona", None) else {}),
                           **({"url": p.url} if getattr(p, "url", None) else {})} for p in self.players]
        if self.details:
            d["x-error-details"] = list(self.details)
        if self.info.get("referee"):
            d["x-referee"] = dict(self.info["referee"])
        return d

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
        self.record.set_roles([self.vocab.unscramble(r) for r in self.roles], None)
        self.record.set_state(0, self.vocab.unscramble(self.info["state_text"]))

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

        async def prepare(p):
            if hasattr(p, "prepare"):
                await p.prepare()
        # untimed, all at once: processes, connections, warm-up, before any clock runs
        prepared = await _race(asyncio.gather(*(self._timed(i, prepare(p), None)
                                                for i, p in enumerate(self.players))), self.cancel)
        for i, (_, err) in enumerate(prepared):
            if err:
                self.error(row, i, "CE", f"preparing: {err[1]}")
        replies = await _race(asyncio.gather(*(
            self._timed(i, p.start(self.id, self.roles[i], self.rules, self.start_clock, self.play_clock),
                        self.start_clock)
            for i, p in enumerate(self.players))), self.cancel)
        for i, (reply, err) in enumerate(replies):
            if err and not row[i]:
                self.error(row, i, *err)
            elif isinstance(reply, str) and reply.strip().lower() != "ready":
                self.record.note(f"{self.players[i].name} answered START with {reply.strip()[:100]!r}")
        self.errors.append([self.vocab.unscramble(e) for e in row])
        await self.save()
        self.emit({"type": "start", "match_id": self.id, "roles": list(self.roles),
                   "players": [p.name for p in self.players],
                   "is_human": [bool(p.is_human) for p in self.players], "rules": self.rules,
                   "start_clock": self.start_clock, "play_clock": self.play_clock,
                   "errors": list(row), **self._state_event()})

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
        reply, err = await self._timed(i, p.play(self.id, self.last, timeout), timeout)
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
        substitutes = [self.rng.choice(ms) for ms in legal]  # drawn before asking, as GameServer
        answers = await _race(asyncio.gather(*(self._ask(i, legal[i]) for i in range(self.n))), self.cancel)
        row = [""] * self.n
        joint = []
        for i, (move, err) in enumerate(answers):
            if err:
                self.error(row, i, *err, step=self.ply + 1)
                move = substitutes[i]
            joint.append(move)
        self.info = await _race(self.referee.step(joint, REFEREE_TIMEOUT), self.cancel)
        self.ply += 1
        self.last = joint
        self.record.add_moves([self.vocab.unscramble(m) for m in joint])
        self.record.set_state(self.ply, self.vocab.unscramble(self.info["state_text"]))
        self.errors.append([self.vocab.unscramble(e) for e in row])
        await self.save()
        self.emit({"type": "move", "ply": self.ply, "moves": list(joint), "errors": list(row),
                   "terminal": self.info["terminal"], **self._state_event()})

    async def finish(self) -> None:
        goals = self.info["goals"]
        if self.info.get("goal_note"):
            self.record.note(self.info["goal_note"])
        self.record.complete(goals)
        await self.save()
        results = await asyncio.gather(*(self._timed(i, p.stop(self.id, self.last), self.play_clock)
                                         for i, p in enumerate(self.players)))
        for i, (_, err) in enumerate(results):
            if err:
                self.record.note(f"{self.players[i].name}: STOP failed ({err[0]} {err[1]})")
        await self.save()
        self.emit({"type": "end", "goals": list(goals), "record": str(self.path)})

    async def abort(self, reason: str) -> None:
        self.record.abort()
        self.record.note(f"aborted: {reason}")
        await self.save()
        await asyncio.gather(*(self._timed(i, p.abort(self.id), ABORT_TIMEOUT)
                               for i, p in enumerate(self.players)))
        log.warning("%s: aborted after %d steps: %s", self.id, self.ply, reason)
        self.emit({"type": "abort", "reason": reason, "record": str(self.path)})

    async def run(self) -> None:
        try:
            await self.start()
            while not self.info["terminal"]:
                if self.ply >= self.max_plies:
                    raise RefereeError(f"no terminal state after {self.max_plies} steps")
                await self.step()
            await self.finish()
        except _Cancelled:
            await self.abort("cancelled")
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
    ``out_dir/<match id>.json``).  ``players`` in role order.  ``rules_text``: a rule sheet
    (KIF) or a rules list.  ``human_clock``: seconds a person has per move (default the play
    clock + 1 s, like everyone; ``math.inf``: unlimited, as ggp-base's Kiosk).
    ``game_meta_url``: the game's repository URL for the record (default: a URN naming the
    exact rules, ``agent.matchlog.rules_urn``).  ``referee``: ``standby`` (Prolog, and the
    exact compiled engine where Prolog runs out of limits), ``auto`` (the compiled engine
    from the start when exact) or ``prolog`` (see ``agent.match.referee``).  Raises
    ``MatchError`` when the match cannot be set up (invalid rules, wrong number of players)."""
    try:
        rules, description = read_rules(rules_text)
    except RulesError as e:
        raise MatchError(f"invalid rules:\n{e}") from None
    if not (start_clock > 0 and play_clock > 0):
        raise MatchError("the start and play clocks must be positive")
    if len(players) != len(description.roles):
        raise MatchError(f"the game has {len(description.roles)} roles but {len(players)} players were given")
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
