"""The state machine a referee should trust for given rules, within a time budget.

A referee (the server's, or ``ggp-persona replay``) must answer every query of a match.  The
Prolog reasoner is the reference, but it answers each query by backward chaining under
inference and time limits, and some states of some games cost more than that (a 2015
version of majorities: its goal query on a final state ran over 200,000,000 inferences,
where ggp-base's prover answers).  The compiled engine answers such states in milliseconds, and is exact when:

* grounding completed: the grounder never truncates (an exhausted budget is an error, and
  then there is no compiled engine), so an engine that loads is a complete grounding;
* it agrees with Prolog on a few short random walks (initial state, terminal, every role's
  legal moves, next states, every role's percepts in a GDL-II game, goals in terminal
  states), wherever Prolog answers within its
  limits.  A step where Prolog runs out of limits ends that walk without a verdict; any
  disagreement, or any other failure, makes the referee use Prolog.

``open_referee`` returns the machine, which engine it is and why.  A server's referee uses
``engine="standby"``: Prolog from the start (it is ready at once, where loading numba and
building the engine in the referee took 6-15 s of a few seconds' start clock on the busy
test machine), and the exact compiled engine from the first query beyond Prolog's limits.
Rules Prolog refuses (``RulesRefused``) are refused here too: the compiled engine is
grounded by the same Prolog.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

from agent.reasoner.prolog import PrologReasoner   # pyswip itself loads with the first reasoner made
from agent.reasoner.statemachine import GroundingError, PlayoutCap, ReasonerError, ResourceLimit
from gdl.gdl2 import is_gdl2

log = logging.getLogger("ggp_persona.referee")

DEFAULT_BUDGET = 10.0   # seconds to build and check the compiled engine (a cache hit: far less)
STANDBY_BUDGET = 60.0   # the same when Prolog has just failed in a match: the state waits anyway
CHECK_WALKS = 3         # random walks compared with Prolog ...
CHECK_STEPS = 12        # ... of at most this many joint moves each
CHECK_SHARE = 0.4       # share of the budget kept for the comparison (the build gets the rest)


@dataclass
class Referee:
    sm: object          # the state machine (statemachine.StateMachine)
    engine: str         # "compiled", "nonground" or "prolog"
    reason: str         # why this engine, one line
    checked_steps: int = 0  # states compared with Prolog


def open_referee(desc, budget_seconds: float = DEFAULT_BUDGET, *, engine: str = "auto",
                 cache_dir=None, walks: int = CHECK_WALKS, steps: int = CHECK_STEPS,
                 seed: int = 0, build: bool = True) -> Referee:
    """The referee's state machine for ``desc``.  Raises ``RulesRefused`` for rules Prolog
    will not load.  ``engine``:

    * ``auto``: the compiled engine when it loads within ``budget_seconds`` and is exact (see
      the module's notes), else the Prolog reasoner;
    * ``standby``: the Prolog reasoner at once (a server's referee must know the first legal
      moves within the start clock), with the compiled engine standing by: the first query
      Prolog cannot answer within its limits builds it (within ``budget_seconds``), checks it
      the same way, and from then on it answers everything;
    * ``prolog``: the Prolog reasoner only.

    ``build=False``: the compiled engine only from the engine cache, never grounded here (a
    server's match has a grounder process of its own; a standby referee grounding an
    exploding game after Prolog ran out of stack doubled its memory and held the match for
    15 s more), else the non-ground engine."""
    if engine not in ("auto", "standby", "prolog"):
        raise ValueError(f"engine must be auto, standby or prolog, not {engine!r}")
    t0 = time.monotonic()
    prolog = PrologReasoner(desc)
    if engine == "prolog":
        return Referee(prolog, "prolog", "asked for")
    if engine == "standby":
        return Referee(_Standby(desc, prolog, budget_seconds, cache_dir, walks, steps, seed, build), "prolog",
                       "Prolog first; the compiled engine takes over where Prolog runs out of limits")
    compiled, why, n = exact_compiled(desc, prolog, t0 + budget_seconds, cache_dir, walks, steps, seed, build)
    if compiled is None:
        log.warning("referee on Prolog: %s", why)
        return Referee(prolog, "prolog", why, n)
    prolog.close()
    return Referee(compiled, compiled.info.get("engine", "compiled"), why, n)


def exact_compiled(desc, prolog, until: float, cache_dir=None, walks: int = CHECK_WALKS,
                   steps: int = CHECK_STEPS, seed: int = 0, build: bool | None = True):
    """(compiled engine, why, states compared) when it builds before ``until`` (monotonic)
    and agrees with ``prolog``; (None, why not, states compared) otherwise.  ``build``:
    True grounds when the cache has no engine, False takes the cache's or the non-ground
    engine, None only the cache's."""
    left = until - time.monotonic()
    if left <= 0.5:
        return None, "no time left to build the compiled engine", 0
    from agent.engine import load_engine   # the compiled engine (numba), only when it is tried
    try:
        compiled = load_engine(desc, engine="compiled", budget_seconds=left * (1 - CHECK_SHARE),
                               cache_dir=cache_dir, build=build)
    except GroundingError as e:
        if build is None:
            return None, f"no compiled engine: {e}; nothing else is built here", 0
        try:   # a game that does not ground: the non-ground engine, checked the same way
            compiled = load_engine(desc, engine="nonground")
        except Exception as e2:  # noqa: BLE001 - any failure of it leaves the referee on Prolog
            return None, f"no compiled engine: {e}; no non-ground engine: {e2}", 0
    try:
        verdict, n = _compare(compiled, prolog, walks, steps, random.Random(seed), until, is_gdl2(desc))
    except Exception as e:  # the compiled engine failed where Prolog answered: not exact
        verdict, n = f"the compiled engine failed ({type(e).__name__}: {e})", 0
    if verdict is not None:
        compiled.close()
        return None, verdict, n
    built = "grounding complete" if compiled.info.get("engine") != "nonground" else \
        "the non-ground engine (the game does not ground)"
    if n == 0:
        return compiled, f"{built}; Prolog answered no state within its limits to compare with", 0
    return compiled, (f"{built}; agrees with Prolog on {n} state{'s' * (n != 1)} of "
                      f"random walks"), n


class _Standby:
    """Prolog answers until a query runs out of its limits; then the compiled engine, when it
    is exact, answers that query and every later one (see ``open_referee``)."""

    def __init__(self, desc, prolog, budget: float, cache_dir, walks: int, steps: int, seed: int,
                 build: bool = True):
        self.desc, self.prolog, self.budget = desc, prolog, budget
        self.options = (cache_dir, walks, steps, seed)
        self.build = build
        self.roles = prolog.roles
        self.compiled = None
        self.refused: str | None = None   # why the compiled engine cannot take over
        self.engine = "prolog"

    def _ask(self, name: str, *args):
        if self.compiled is not None:
            return getattr(self.compiled, name)(*args)
        try:
            return getattr(self.prolog, name)(*args)
        except ResourceLimit as e:
            if self.refused is not None or isinstance(e, PlayoutCap):  # a cap is no limit of Prolog's
                raise
            build = self.build
            if not build and e.resource == "stack":
                # Out of memory: Prolog keeps what it took (1 GB after an exploding next state:
                # the non-ground engine's refusal took 6 s more), so only the cache's engine
                build = None
            compiled, why, _ = exact_compiled(self.desc, self.prolog, time.monotonic() + self.budget,
                                              *self.options, build=build)
            if compiled is None:
                self.refused = why
                log.warning("referee stays on Prolog (%s): %s", e, why)
                raise
            log.warning("referee switches to the %s engine (%s): %s",
                        compiled.info.get("engine", "compiled"), e, why)
            self.compiled, self.engine = compiled, compiled.info.get("engine", "compiled")
            self.prolog.close()
            return getattr(compiled, name)(*args)

    def initial_state(self):
        return self._ask("initial_state")

    def legal_moves(self, state, role_index: int):
        return self._ask("legal_moves", state, role_index)

    def next_state(self, state, joint_move):
        return self._ask("next_state", state, joint_move)

    def sees(self, state, joint_move, role_index: int):
        return self._ask("sees", state, joint_move, role_index)

    def is_terminal(self, state):
        return self._ask("is_terminal", state)

    def sees(self, state, joint_move, role_index: int):
        return self._ask("sees", state, joint_move, role_index)

    def goal_values(self, state):
        return self._ask("goal_values", state)

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        return self._ask("random_playout", state, cap, seed)

    def close(self) -> None:
        for sm in (self.compiled, self.prolog):
            if sm is not None:
                sm.close()


def _compare(compiled, prolog, walks: int, steps: int, rng: random.Random, until: float,
             percepts: bool = False):
    """(None, states compared) when the engines agree wherever Prolog answers before
    ``until``; (what differs, states compared) otherwise.  ``percepts``: every role's percepts
    of each step are compared too (a GDL-II game)."""
    saved = prolog.time_limit
    n = 0
    try:
        for w in range(walks):
            state = compiled.initial_state()
            for k in range(steps + 1):
                left = until - time.monotonic()
                if left <= 0.05:
                    return None, n
                prolog.time_limit = left
                where = f"walk {w + 1} step {k}"
                try:
                    if k == 0 and prolog.initial_state() != state:
                        return "the initial states differ", n
                    terminal = compiled.is_terminal(state)
                    if prolog.is_terminal(state) != terminal:
                        return f"terminal differs at {where}", n
                    legal = [compiled.legal_moves(state, r) for r in range(len(compiled.roles))]
                    if [prolog.legal_moves(state, r) for r in range(len(legal))] != legal:
                        return f"legal moves differ at {where}", n
                    if terminal:
                        if prolog.goal_values(state) != compiled.goal_values(state):
                            return f"goal values differ at {where}", n
                        n += 1
                        break
                    if not all(legal):
                        n += 1
                        break
                    joint = tuple(rng.choice(ms) for ms in legal)
                    nxt = compiled.next_state(state, joint)
                    if prolog.next_state(state, joint) != nxt:
                        return f"next states differ at {where}", n
                    if percepts and any(compiled.sees(state, joint, r) != prolog.sees(state, joint, r)
                                        for r in range(len(legal))):
                        return f"percepts differ at {where}", n
                except ResourceLimit:
                    break  # Prolog cannot answer here: no verdict from this walk
                except ReasonerError as e:  # not a limit: the engines do not behave alike
                    return f"a query failed at {where}: {type(e).__name__}: {e}", n
                n += 1
                state = nxt
        return None, n
    finally:
        prolog.time_limit = saved
