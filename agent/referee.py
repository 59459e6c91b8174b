"""The state machine a referee should trust for given rules, within a time budget.

A referee (the server's, or ``ggp-persona replay``) must answer every query of a match.  The
Prolog reasoner is the reference, but it answers each query by backward chaining under
inference and time limits, and some states of some games cost more than that (a 2015
version of majorities: "terminal exceeded 200,000,000 inferences", where ggp-base's prover
answers).  The compiled engine answers such states in milliseconds, and is exact when:

* grounding completed: the grounder never truncates (an exhausted budget is an error, and
  then there is no compiled engine), so an engine that loads is a complete grounding;
* it agrees with Prolog on a few short random walks (initial state, terminal, every role's
  legal moves, next states, goals in terminal states), wherever Prolog answers within its
  limits.  A step where Prolog runs out of limits ends that walk without a verdict; any
  disagreement, or any other failure, makes the referee use Prolog.

``open_referee`` returns the machine, which engine it is and why.  Rules Prolog refuses
(``RulesRefused``) are refused here too: the compiled engine is grounded by the same Prolog.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

from agent.reasoner.statemachine import ReasonerError, ResourceLimit

log = logging.getLogger("ggp_persona.referee")

DEFAULT_BUDGET = 10.0   # seconds to build and check the compiled engine (a cache hit: far less)
CHECK_WALKS = 3         # random walks compared with Prolog ...
CHECK_STEPS = 12        # ... of at most this many joint moves each
CHECK_SHARE = 0.4       # share of the budget the comparison may use at most


@dataclass
class Referee:
    sm: object          # the state machine (statemachine.StateMachine)
    engine: str         # "compiled" or "prolog"
    reason: str         # why this engine, one line
    checked_steps: int = 0  # states compared with Prolog


def open_referee(desc, budget_seconds: float = DEFAULT_BUDGET, *, engine: str = "auto",
                 cache_dir=None, walks: int = CHECK_WALKS, steps: int = CHECK_STEPS,
                 seed: int = 0) -> Referee:
    """The referee's state machine for ``desc``: the compiled engine when it loads within
    ``budget_seconds`` and is exact (see the module's notes), else the Prolog reasoner.
    ``engine``: ``auto``, or ``prolog`` to skip the compiled engine.  Raises
    ``RulesRefused`` for rules Prolog will not load."""
    from agent.reasoner.prolog import PrologReasoner

    t0 = time.monotonic()
    prolog = PrologReasoner(desc)
    if engine == "prolog":
        return Referee(prolog, "prolog", "asked for")
    left = budget_seconds - (time.monotonic() - t0)
    if left <= 0.5:
        return Referee(prolog, "prolog", f"no time left of the {budget_seconds:g} s budget to "
                                         f"build the compiled engine")
    try:
        from agent.engine import load_engine
        from agent.engine.ground import GroundingError
        compiled = load_engine(desc, engine="compiled", budget_seconds=left * (1 - CHECK_SHARE),
                               cache_dir=cache_dir)
    except GroundingError as e:
        return Referee(prolog, "prolog", f"no compiled engine: {e}")
    check_until = t0 + budget_seconds
    try:
        verdict, n = _compare(compiled, prolog, walks, steps, random.Random(seed), check_until)
    except Exception as e:  # the compiled engine failed where Prolog answered: not exact
        verdict, n = f"the compiled engine failed ({type(e).__name__}: {e})", 0
    if verdict is not None:
        compiled.close()
        log.warning("referee on Prolog: %s", verdict)
        return Referee(prolog, "prolog", verdict, n)
    prolog.close()
    if n == 0:
        return Referee(compiled, "compiled", "grounding complete; Prolog answered no state "
                                             "within its limits to compare with", 0)
    return Referee(compiled, "compiled", f"grounding complete; agrees with Prolog on {n} "
                                         f"state{'s' * (n != 1)} of random walks", n)


def _compare(compiled, prolog, walks: int, steps: int, rng: random.Random, until: float):
    """(None, states compared) when the engines agree wherever Prolog answers before
    ``until``; (what differs, states compared) otherwise."""
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
                except ResourceLimit:
                    break  # Prolog cannot answer here: no verdict from this walk
                except ReasonerError as e:  # not a limit: the engines do not behave alike
                    return f"a query failed at {where}: {type(e).__name__}: {e}", n
                n += 1
                state = nxt
        return None, n
    finally:
        prolog.time_limit = saved
