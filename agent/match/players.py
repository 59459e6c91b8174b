"""The players a match can have, all behind one small asyncio interface:

    name: str, is_human: bool
    async prepare()                          (optional, untimed: before any clock runs)
    async start(match_id, role, rules_text, start_clock, play_clock) -> None
    async play(match_id, last_moves: list[str] | None, timeout: float) -> str   (a move, GDL text)
    async stop(match_id, last_moves) -> None
    async abort(match_id) -> None
    async close() -> None

``play`` raises ``PlayerError`` with a ggp-base error code (``TO``, ``CE``, ``IL ...``) for
a late, failed or unparsable reply.  A player with ``wants_legal = True`` (a person, the
random player) has its ``legal`` attribute set to its legal moves before each ``play``.
Texts are in the vocabulary the player was given (scrambled or not).  Specs (``make_player``):

  persona:NAME|FILE   our player, in processes of its own: the protocol server's match
                      machinery (``agent.server.matches``: referee, player and grounder
                      processes, deadlines, fallback moves), driven without HTTP
  http://HOST:PORT    any GGP player, sent the messages ggp-base's GameServer sends
  random              a uniformly random legal move (from the legal moves the runner gives)
  human               a person: ``play`` waits for ``submit(move_text)``
"""
from __future__ import annotations

import asyncio
import math
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from agent.decision import RandomChoice, Situation
from agent.server.config import ConfigError, ServerConfig, check_persona
from agent.server.protocol import ProtocolError, parse_message
from gdl.kif import GdlError, parse_term, read_first
from gdl.terms import render_spaced


class PlayerError(Exception):
    """A failed reply; ``code`` is ggp-base's error code for the match record."""

    def __init__(self, code: str, detail: str = ""):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class PlayerSpecError(ValueError):
    """A player spec that names no player we can field (the text says why)."""


def canonical_move(text: str) -> str | None:
    """ggp-base's rendering of a reply, or None when it is not a ground term."""
    try:
        term = parse_term(text)
    except (GdlError, RecursionError):
        return None
    if not _ground(term):
        return None
    return render_spaced(term)


def _ground(t) -> bool:
    return not t.startswith("?") if isinstance(t, str) else all(_ground(a) for a in t[1:])


def _clock_text(c: float) -> str:
    return str(int(c)) if float(c).is_integer() else repr(float(c))


def start_message(match_id: str, role: str, rules_text: str, start_clock, play_clock) -> str:
    """START exactly as ggp-base's RequestBuilder writes it (rules list without its outer
    parentheses' padding: ``(( role x ) ... ) 60 15)``)."""
    inner = rules_text.strip()
    if inner.startswith("("):
        inner = inner[1:].lstrip()
    return f"( START {match_id} {role} ({inner} {_clock_text(start_clock)} {_clock_text(play_clock)})"


def play_message(match_id: str, last_moves, kind: str = "PLAY") -> str:
    if last_moves is None:
        return f"( {kind} {match_id} NIL )"
    return f"( {kind} {match_id} (" + "".join(f"{m} " for m in last_moves) + ") )"  # ggp-base: each move, one space


# ------------------------------------------------------------------------------ HTTP

class HttpPlayer:
    """Any GGP player over HTTP, sent what ggp-base's GameServer sends (POST /, its headers,
    ``text/acl``), with its time limits: START start clock, PLAY play clock + 1 s (given by
    the runner), STOP play clock, ABORT 1 s; connecting may take 5 s."""

    is_human = False
    CONNECT_TIMEOUT = 5.0
    MAX_REPLY = 64 * 1024

    def __init__(self, url: str, name: str | None = None):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise PlayerSpecError(f"bad player URL {url!r}: expected http://HOST:PORT")
        try:
            port = parts.port or 80
        except ValueError:
            raise PlayerSpecError(f"bad port in player URL {url!r}") from None
        self.url = f"http://{parts.hostname}:{port}/"
        self.host = parts.hostname
        self.name = name or f"{parts.hostname}:{port}"
        self.named = name is not None
        self.receiver = ""   # its name as given in INFO (ggp-base's Receiver header)
        self.play_clock = 10.0

    async def _send(self, body: str, timeout: float) -> str:
        import httpx   # 0.1-0.2 s, for players over HTTP only
        limit = httpx.Timeout(timeout, connect=min(self.CONNECT_TIMEOUT, timeout))
        headers = {"Accept": "text/delim", "Sender": "GAMESERVER", "Receiver": self.receiver,
                   "Content-Type": "text/acl"}
        try:
            return await asyncio.wait_for(self._post(httpx, limit, body, headers), timeout + self.CONNECT_TIMEOUT)
        except (httpx.TimeoutException, asyncio.TimeoutError):
            raise PlayerError("TO", f"no reply from {self.url} within {timeout:g}s") from None
        except (httpx.HTTPError, OSError) as e:
            raise PlayerError("CE", f"{type(e).__name__}: {e}") from None

    async def _post(self, httpx, limit, body: str, headers: dict) -> str:
        """The reply body, trimmed; at most MAX_REPLY bytes are read (a reply is one move)."""
        data = b""
        async with httpx.AsyncClient(timeout=limit) as client:
            async with client.stream("POST", self.url, content=body.encode("utf-8"), headers=headers) as r:
                async for chunk in r.aiter_bytes():
                    data += chunk
                    if len(data) > self.MAX_REPLY:
                        raise PlayerError("IL null", f"a reply of more than {self.MAX_REPLY} bytes")
        return data.decode("utf-8", "replace").strip()

    async def prepare(self) -> None:
        """INFO: checks the player is there and learns its name (``( ( name X ) ... )``)."""
        try:
            reply = await self._send("( INFO )", 5.0)
        except PlayerError as e:
            raise PlayerError(e.code, f"no GGP player answers at {self.url} ({e.detail})") from None
        try:
            node = read_first(reply)
        except GdlError:
            return
        if node is not None and not node.is_atom:
            for item in node.items:
                if (not item.is_atom and len(item.items) >= 2 and item.items[0].is_atom
                        and item.items[0].text.lower() == "name" and item.items[1].is_atom):
                    if not self.receiver and not self.named:  # the first INFO names it
                        self.name = item.items[1].text
                    self.receiver = item.items[1].text

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> str:
        """The reply (``ready``), which managers ignore; the runner notes any other."""
        self.play_clock = float(play_clock)
        return await self._send(start_message(match_id, role, rules_text, start_clock, play_clock),
                                float(start_clock))

    async def play(self, match_id, last_moves, timeout) -> str:
        reply = await self._send(play_message(match_id, last_moves), float(timeout))
        if canonical_move(reply) is None:
            raise PlayerError("IL null", f"unparsable reply {reply[:200]!r}")
        return reply

    async def stop(self, match_id, last_moves) -> None:
        await self._send(play_message(match_id, last_moves, "STOP"), self.play_clock)

    async def abort(self, match_id) -> None:
        await self._send(f"( ABORT {match_id} )", 1.0)

    async def close(self) -> None:
        pass


# ------------------------------------------------------------------------------ persona

class PersonaPlayer:
    """Our player with one persona, in processes of its own: the protocol server's match
    manager (``agent.server.matches.MatchManager``) driven by messages parsed from the very
    text a game manager would send, so it plays exactly as ``ggp-persona serve`` does
    (deadline margins, fallback moves, the compiled engine built beside the search) and
    writes its own record with the Q-values and visits of every decision to ``log_dir``."""

    is_human = False
    WARM_TIMEOUT = 300.0  # the first run after an install compiles the numba code

    def __init__(self, spec: str, name: str | None = None, log_dir=None, seed: int | None = None,
                 use_engine: bool = True, spare_players: int = 1, spare_referees: int = 1,
                 ready_when_searching: bool = False, ponder: bool = True, max_idle: float | None = None):
        if not spec:
            raise PlayerSpecError("persona: needs a preset name or a persona file")
        try:
            params = check_persona(spec)
        except ConfigError as e:
            raise PlayerSpecError(str(e)) from None
        self.spec = spec
        self.persona = {"name": spec, "parameters": params}
        self.name = name or Path(spec).stem
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.seed = seed
        self.use_engine = use_engine
        self.ready_when_searching = ready_when_searching
        self.ponder = ponder
        self.spares = (spare_players, spare_referees)
        self.max_idle = max_idle      # the manager's silence limit (None: the server's default)
        self.manager = None
        self._tmp = None

    async def prepare(self) -> None:
        """Start the match manager, and wait until its spare player process is warm (numba
        code loaded), so that no match's start clock pays for it."""
        if self.manager is None:
            await self._start_manager()
        if self.spares[0] > 0:
            await self.manager.players.wait_warm(self.WARM_TIMEOUT)

    async def _start_manager(self) -> None:
        # the server's match manager and its process pools, for persona players only
        from agent.server.matches import MatchManager
        log_dir = self.log_dir
        if log_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="ggp-persona-player-")
            log_dir = Path(self._tmp.name)
        log_dir.mkdir(parents=True, exist_ok=True)
        cfg = ServerConfig(name=self.name, persona=self.spec, log_dir=log_dir, seed=self.seed,
                           spare_players=self.spares[0], spare_referees=self.spares[1],
                           use_engine=self.use_engine, ready_when_searching=self.ready_when_searching,
                           ponder=self.ponder,
                           **({"max_idle": float(self.max_idle)} if self.max_idle else {}),
                           warm_timeout=self.WARM_TIMEOUT if self.spares[0] > 0 else 0.0)
        self.manager = MatchManager(cfg)
        await self.manager.startup()

    async def _call(self, text: str):
        """The manager's reply to a message.  The message is handed over at once and its
        handling runs to the end even when the caller stops waiting (a late reply): over
        HTTP a message that was sent is received, and the player must see every joint move."""
        if self.manager is None:     # not prepared: no waiting for a warm process in a clock
            await self._start_manager()
        try:
            msg = parse_message(text)
        except ProtocolError as e:
            raise PlayerError("CE", f"message not understood: {e}") from None
        received = time.monotonic()
        method = getattr(self.manager, msg.kind)
        call = method(msg) if msg.kind == "abort" else method(msg, received)
        return await asyncio.shield(asyncio.ensure_future(call))

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> str:
        return await self._call(start_message(match_id, role, rules_text, start_clock, play_clock))

    async def play(self, match_id, last_moves, timeout) -> str:
        return await self._call(play_message(match_id, last_moves))

    async def stop(self, match_id, last_moves) -> None:
        await self._call(play_message(match_id, last_moves, "STOP"))

    async def abort(self, match_id) -> None:
        await self._call(f"( ABORT {match_id} )")

    def keepalive(self, match_id: str) -> str | None:
        """A person is still there (the web page calls this while its page lives): the
        match is not silent, whatever the manager's silence limit (``MatchManager.touch``).
        None when the match goes on, else why the manager no longer plays it, in words."""
        if self.manager is None:
            return "its match manager is not running"
        return self.manager.touch(match_id)

    def last_value(self, match_id: str) -> tuple[int, float] | None:
        """``(ply, Q)`` of this player's latest searched decision in the match: the ply it
        decided at and its search's value (0-100) of the move it played, or None (no
        decision searched yet: forced moves, fallbacks)."""
        m = self.manager.matches.get(match_id) if self.manager is not None else None
        if m is None:
            return None
        for d in reversed(m.record.decisions):
            q, visits, move = d.get("q"), d.get("visits") or {}, d.get("move")
            if d.get("fallback") or not isinstance(q, dict) or q.get(move) is None:
                continue
            if visits and not visits.get(move):
                continue
            return int(d.get("ply", -1)), float(q[move])
        return None

    async def close(self) -> None:
        if self.manager is not None:
            finishing = list(getattr(self.manager, "_finishing", ()))  # records after STOP
            if finishing:
                await asyncio.wait(finishing, timeout=15)
            await self.manager.shutdown()
            self.manager = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


# ------------------------------------------------------------------------------ human

class HumanPlayer:
    """A person: ``play`` waits until ``submit(move_text)`` (from the web page's handler,
    on any thread).  Before each ``play`` the runner sets ``legal`` (the person's legal
    moves; ``wants_legal``), so ``submit`` can refuse a move that is not legal at once (``ValueError``)
    and the person tries again; the runner still checks the move like any reply."""

    is_human = True
    wants_legal = True

    def __init__(self, name: str = "human"):
        self.name = name
        self.legal: list[str] | None = None
        self.role = None
        self.rules_text = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Future | None = None
        self.first_legal: list[str] | None = None   # a first move may be chosen early (offer_first)
        self.first_move: str | None = None          # ... and was: played at the first PLAY

    @property
    def waiting(self) -> bool:
        """True while a move is asked for, or a first move may be chosen before it is."""
        return (self._pending is not None and not self._pending.done()) or self.first_legal is not None

    def offer_first(self, legal: list[str]) -> None:
        """The runner's offer, before the match's START: the person may choose their first
        move among ``legal`` (the initial state's) while the other players load; it is
        played at the first PLAY that asks for a move, if still legal then."""
        self.first_legal = [canonical_move(m) or m for m in legal]

    async def prepare(self) -> None:
        pass

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> None:
        self.role, self.rules_text = role, rules_text

    async def play(self, match_id, last_moves, timeout) -> str:
        early, self.first_move, self.first_legal = self.first_move, None, None
        if early is not None and (self.legal is None or early in self.legal):
            self.legal = None
            return early
        self._loop = asyncio.get_running_loop()
        self._pending = self._loop.create_future()
        try:
            if timeout is None or math.isinf(timeout):
                return await self._pending
            return await asyncio.wait_for(asyncio.shield(self._pending), timeout)
        except asyncio.TimeoutError:
            raise PlayerError("TO", f"no move within {timeout:g}s") from None
        finally:
            self._pending = None
            self.legal = None

    def submit(self, move_text: str) -> None:
        """Give the move asked for.  Raises ValueError when no move is asked for, or the
        text is not a move, or (when the legal moves are known) not a legal one."""
        move = canonical_move(move_text)
        if move is None:
            raise ValueError(f"{move_text!r} is not a move (a GDL term)")
        loop, pending = self._loop, self._pending
        if (pending is None or pending.done()) and self.first_legal is not None:
            if move not in self.first_legal:
                raise ValueError(f"{move} is not a legal move here")
            self.first_move, self.first_legal = move, None    # played at the first PLAY
            return
        legal = self.legal
        if legal is not None and move not in legal:
            raise ValueError(f"{move} is not a legal move here")
        if pending is None or pending.done() or loop is None:
            raise ValueError("no move is asked for now")

        def deliver():
            if not pending.done():
                pending.set_result(move)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            deliver()
        else:
            loop.call_soon_threadsafe(deliver)

    def _cancel(self) -> None:
        pending = self._pending
        if pending is not None and not pending.done() and self._loop is not None:
            self._loop.call_soon_threadsafe(
                lambda: pending.done() or pending.set_exception(PlayerError("CE", "match ended")))

    async def stop(self, match_id, last_moves) -> None:
        self._cancel()

    async def abort(self, match_id) -> None:
        self._cancel()

    async def close(self) -> None:
        self._cancel()


# ------------------------------------------------------------------------------ random

class RandomPlayer:
    """A uniformly random legal move, at once (ggp-base's RandomGamer; the baseline of any
    comparison).  It plays from the legal moves the runner gives it (``legal``), which are
    the referee's: no reasoner of its own."""

    is_human = False
    wants_legal = True

    def __init__(self, name: str = "random", seed: int | None = None):
        self.name = name
        self.legal: list[str] | None = None
        self.role = ""
        self.chooser = RandomChoice(seed)

    async def prepare(self) -> None:
        pass

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> None:
        self.role = role

    async def play(self, match_id, last_moves, timeout) -> str:
        if not self.legal:
            raise PlayerError("CE", "no legal moves were given")
        # the moves are the referee's texts and there is no state of its own: the one
        # decision interface (agent.decision) with the texts as moves
        return self.chooser.decide(Situation(state=None, role=self.role, legal=list(self.legal), seed=0)).move

    async def stop(self, match_id, last_moves) -> None:
        pass

    async def abort(self, match_id) -> None:
        pass

    async def close(self) -> None:
        pass


# ------------------------------------------------------------------------------ specs

SPEC_HELP = "persona:NAME|FILE (our player), http://HOST:PORT (any GGP player), random or human"


def make_player(spec: str, **options):
    """A player from its spec.  Options: ``name`` (all kinds); for personas also ``log_dir``,
    ``seed``, ``use_engine``, ``spare_players``, ``spare_referees``."""
    spec = (spec or "").strip()
    name = options.pop("name", None)
    if spec == "human":
        return HumanPlayer(name or "human")
    if spec == "random":
        return RandomPlayer(name or "random", options.get("seed"))
    if spec.startswith("http://") or spec.startswith("https://"):
        if spec.startswith("https://"):
            raise PlayerSpecError(f"{spec}: GGP players speak plain http://")
        return HttpPlayer(spec, name)
    if spec.startswith("persona:"):
        known = {"log_dir", "seed", "use_engine", "spare_players", "spare_referees",
                 "ready_when_searching", "ponder", "max_idle"}
        return PersonaPlayer(spec[len("persona:"):], name,
                             **{k: v for k, v in options.items() if k in known})
    raise PlayerSpecError(f"bad player {spec!r}: expected {SPEC_HELP}")
