"""The runner's referee: the rules played in a process of their own.

Rules are hostile input (they may come from anyone): the reasoner runs in a separate
process with a memory limit, and every request has a time limit, so a runaway rule sheet
ends the match with a reason instead of hanging or killing the runner.  The process owns
one state machine, the one ``agent.referee.open_referee`` trusts (the Prolog reasoner, or
the compiled engine where it is exact), and answers, for each state: its facts, whether it
is terminal, every role's legal moves, the goals when terminal, and which engine answered.
In a GDL-II game (``gdl.gdl2.is_gdl2``) each step also answers every role's percepts: the
``sees`` of the state before the joint move and that move (Dresden's GameController), each
role's sorted (the canonical order of a PLAY's percepts).  All texts are ggp-base's rendering
(``( cell 1 1 b )``).
"""
from __future__ import annotations

import asyncio
import multiprocessing
import threading

from gdl.gdl2 import RANDOM, is_gdl2
from gdl.kif import parse_term
from gdl.terms import render_spaced
from agent.matchtext import parse_rules_text
from agent.reasoner.prolog import PrologReasoner
from agent.reasoner.statemachine import CachedStateMachine, goal_vector
from agent.referee import DEFAULT_BUDGET, STANDBY_BUDGET, open_referee

# Imports inside functions: only ``resource``, which exists on POSIX alone (elsewhere the
# memory cap is skipped).  Nothing above loads SWI-Prolog or numba: Prolog starts with the
# first reasoner made and the engines inside ``open_referee``, both in the referee's own
# process (``_main``), never in the runner's, which may be a web server.

_CTX = multiprocessing.get_context("spawn")
MEMORY_LIMIT_BYTES = 4 * 1024 ** 3   # the compiled engine's process peaks near 0.6 GB on breakthrough
MODES = ("standby", "auto", "prolog")

# A spare referee process, started ahead with its code imported, waiting for a match's rules:
# starting a process and importing the reasoner took 3.5-7.6 s at a load of 13, most of the
# time from a person's "Play" to the board.  Kept only where ``keep_spare(True)`` was called
# (the web page); otherwise each match starts its own process, as before.
_spare: tuple | None = None           # (process, connection)
_keep = False
_spare_lock = threading.Lock()


def _spawn(rules_text: str | None, mode: str | None) -> tuple:
    parent, child = _CTX.Pipe(duplex=True)
    process = _CTX.Process(target=_main, args=(child, rules_text, mode), daemon=True,
                           name="ggp-persona-referee")
    process.start()
    child.close()
    return process, parent


def _refill() -> None:
    global _spare
    with _spare_lock:
        if not _keep or _spare is not None:
            return
        _spare = _spawn(None, None)


def keep_spare(on: bool) -> None:
    """Keep one referee process warm for the next match (``on``), or end the spare."""
    global _keep, _spare
    with _spare_lock:
        _keep, old = on, (None if on else _spare)
        if not on:
            _spare = None
    if old is not None:
        _end(*old)
    if on:
        threading.Thread(target=_refill, daemon=True, name="referee-spare").start()


def _take_spare() -> tuple | None:
    global _spare
    with _spare_lock:
        got, _spare = _spare, None
    if got is not None and not got[0].is_alive():
        _end(*got)
        got = None
    if _keep:
        threading.Thread(target=_refill, daemon=True, name="referee-spare").start()
    return got


def _end(process, conn) -> None:
    try:
        conn.close()
    except OSError:
        pass
    if process.is_alive():
        process.kill()
        process.join(2)


class RefereeError(Exception):
    """The referee cannot go on (rules failing at run time, a limit, a dead process)."""


def _describe(sm, state) -> dict:
    n = len(sm.roles)
    facts = sorted(render_spaced(f) for f in state)
    info = {"state": facts, "state_text": "( " + "".join(f + " " for f in facts) + ")",
            "terminal": sm.is_terminal(state)}
    if info["terminal"]:
        values = sm.goal_values(state)
        info["goals"] = goal_vector(values)
        # GDL-II's random with no goal rule scores 0 (Dresden's GameController): nothing to note
        if any(len(v) != 1 for r, v in zip(sm.roles, values) if v or r != RANDOM):
            info["goal_note"] = f"goal values in the terminal state are not one per role: {values}"
        info["legal"] = [[] for _ in range(n)]
    else:
        info["legal"] = [[render_spaced(m) for m in sm.legal_moves(state, i)] for i in range(n)]
    return info


def _percepts(seer, state, joint) -> list[list[str]]:
    """Every role's percepts of ``joint`` made in ``state``, each role's texts sorted."""
    return [sorted(render_spaced(p) for p in seer.sees(state, joint, i)) for i in range(len(joint))]


def _seer(referee, description):
    """The machine that answers ``sees``: the referee's when it has it (engines are getting it),
    else a Prolog reasoner of its own (the reference, which has it)."""
    if callable(getattr(referee.sm, "sees", None)):
        return referee.sm
    return PrologReasoner(description)


def _main(conn, rules_text: str | None, mode: str | None) -> None:
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    try:
        if rules_text is None:      # a spare: the code is loaded; now the match's rules
            msg = conn.recv()
            if msg[0] != "rules":
                return
            rules_text, mode = msg[1], msg[2]
        budget = STANDBY_BUDGET if mode == "standby" else DEFAULT_BUDGET
        description = parse_rules_text(rules_text)
        referee = open_referee(description, budget, engine=mode)
        sm = CachedStateMachine(referee.sm)
        gdl2 = is_gdl2(description)
        seer = _seer(referee, description) if gdl2 else None

        def engine() -> dict:  # standby switches engines mid-match
            return {"engine": getattr(referee.sm, "engine", referee.engine), "reason": referee.reason}
        state = sm.initial_state()
        conn.send(("ok", {"roles": [render_spaced(r) for r in sm.roles], "referee": engine(),
                          "gdl2": gdl2, **_describe(sm, state)}))
        while True:
            msg = conn.recv()
            if msg[0] != "step":
                return
            joint = tuple(parse_term(t) for t in msg[1])
            seen = {"percepts": _percepts(seer, state, joint)} if gdl2 else {}
            state = sm.next_state(state, joint)
            conn.send(("ok", {"referee": engine(), **seen, **_describe(sm, state)}))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    except BaseException as e:  # the reason goes to the runner, which ends the match with it
        try:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        except Exception:
            pass


class Referee:
    """``await Referee.open(rules_text, timeout)`` → roles, ``gdl2`` and the initial state's
    info; ``await step(joint_texts, timeout)`` → the next state's info (in a GDL-II game with
    ``percepts``: per role, the sorted texts of what it sees of that step); ``close()``."""

    def __init__(self):
        self.conn = None
        self.process = None
        self._lock = threading.Lock()

    @classmethod
    async def open(cls, rules_text: str, timeout: float, mode: str = "standby") -> tuple["Referee", dict]:
        """``mode`` as ``agent.referee.open_referee``'s ``engine``: ``standby`` (Prolog at
        once, the exact compiled engine from the first query beyond Prolog's limits), ``auto``
        (the compiled engine from the start when it builds and is exact: a few seconds more
        to open, faster steps on big games) or ``prolog``."""
        if mode not in MODES:
            raise RefereeError(f"unknown referee mode {mode!r} (expected {', '.join(MODES)})")
        ref = cls()
        info = await asyncio.to_thread(ref._start, rules_text, timeout, mode)
        return ref, info

    def _start(self, rules_text: str, timeout: float, mode: str) -> dict:
        spare = _take_spare()
        if spare is not None:
            try:
                spare[1].send(("rules", rules_text, mode))
            except (OSError, ValueError):
                _end(*spare)
                spare = None
        self.process, self.conn = spare if spare is not None else _spawn(rules_text, mode)
        return self._answer(timeout, "loading the rules")

    def _answer(self, timeout: float, what: str) -> dict:
        try:
            if not self.conn.poll(timeout):
                self.close()
                raise RefereeError(f"the referee took longer than {timeout:.0f}s {what}")
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            code = self.process.exitcode if self.process is not None else None
            self.close()
            raise RefereeError(f"the referee process ended {what} (exit code {code})") from None
        if kind != "ok":
            self.close()
            raise RefereeError(f"the referee failed {what}: {value}")
        return value

    async def step(self, joint: list[str], timeout: float) -> dict:
        return await asyncio.to_thread(self._step, list(joint), timeout)

    def _step(self, joint: list[str], timeout: float) -> dict:
        with self._lock:
            if self.conn is None:
                raise RefereeError("the referee is closed")
            try:
                self.conn.send(("step", joint))
            except (OSError, ValueError):
                code = self.process.exitcode if self.process is not None else None
                self.close()
                raise RefereeError(f"the referee process ended (exit code {code})") from None
            return self._answer(timeout, "computing the next state")

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
        if self.process is not None and self.process.is_alive():
            self.process.kill()
            self.process.join(2)
