"""A fitted player model that plays (spec 4.6 item 5).

The fast fit's model (``agent.modelling.choicemodel``) scores moves by the shared
evaluations of the state (``agent.modelling.shared_evaluations``: three searches, a look-ahead,
fact changes), the move's tokens and the player's move counts.  A persona file keeps the
model in a ``[model]`` table beside the search parameters of the deep search, so the server,
the match runner and the web page load it like any persona; at each decision the player
computes the same columns for the current state within the clock and plays the model's most
likely move (the argmax, which is what the fit report's "AAR of argmax" measures).

With time short, the searches run until their share of the clock (fewer simulations than
the plan's, so the live columns are noisier than the fitted ones); the move is always one
of the legal moves.
"""
from __future__ import annotations

import time
import weakref

import numpy as np

from agent.decision import Decision, Situation
from agent.modelling import choicemodel as CM
from agent.modelling import shared_evaluations as E
from agent.modelling.modelfile import align, model_of
from agent.modeltable import ModelError
from agent.search.features import FactIndex, calibrate

LOOKAHEAD_SHARE = 0.25        # of the time left, kept for the look-ahead and the model

_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # engine -> FactIndex


def _game_of(engine):
    """(calibration, fact index) of the engine's game, both kept as long as the engine (the
    index memoises which roles each fact mentions, over every decision of the match)."""
    try:
        facts = _FACTS.get(engine)
        if facts is None:
            facts = _FACTS[engine] = FactIndex(engine.roles)
    except TypeError:            # not weak-referenceable: a fresh index
        facts = FactIndex(engine.roles)
    return calibrate(engine), facts


def warm(engine, state, role: int, persona) -> None:
    """Parse the model, calibrate the game on ``engine`` and run each search once briefly,
    so the first decision is not charged for them."""
    _, plan = model_of(persona)
    cal, facts = _game_of(engine)
    legal = engine.legal_moves(state, role)
    if legal and not engine.is_terminal(state):
        E.evaluate_state(engine, state, role, legal, 0, {**plan, "limit": min(plan["limit"], 20)}, cal, facts)


class ModelDecider:
    """A fitted model as a decider (``agent.decision``): the argmax of its probabilities,
    with the shared evaluations run within the clock the situation gives."""

    def __init__(self, engine, persona):
        self.engine = engine
        self.persona = persona

    def decide(self, situation: Situation, on_best=None) -> Decision:
        seconds = None if situation.deadline is None else max(0.0, situation.deadline - time.monotonic())
        d = decide(self.engine, situation.state, situation.role, situation.legal, situation.prev, self.persona,
                   situation.seed, seconds, history=situation.history)
        if on_best is not None:
            on_best(d.move, d.simulations)
        return d


def decide(engine, state, role: int, legal: list, prev, persona, seed: int, seconds: float | None,
           history=()) -> Decision:
    """The model's move for ``role`` in ``state``, with the deep search's Q and visits and
    the model's probability ``p`` of every legal move.  ``history``: the match's last steps,
    oldest first, (state, joint move) each (``movefeatures``: the last moves)."""
    model, plan = model_of(persona)
    cal, facts = _game_of(engine)
    deadline = None if seconds is None else time.monotonic() + seconds * (1 - LOOKAHEAD_SHARE)
    x, runs = E.evaluate_state(engine, state, role, legal, seed, plan, cal, facts, deadline=deadline)
    x = align(x, E.feature_names(cal), model.shared_names)
    movex = model.move_features(engine, state, role, legal, history)
    lp = model.log_probs(x, state, prev, legal, movex)
    if not np.all(np.isfinite(lp)):
        # argmax would take the first NaN: the first legal move every time, silently.  The
        # loader's bounds keep this from happening; should it, the player's search fallback
        # plays and the decision records this error.
        raise ModelError(f"{persona.name}: the model's probabilities are not finite numbers here")
    best = int(np.argmax(lp))
    deep = runs["deep"]
    pos = {m: j for j, m in enumerate(deep.moves)}
    return Decision(move=legal[best], moves=list(legal),
                    q=[float(deep.q[pos[m]]) for m in legal], visits=[int(deep.visits[pos[m]]) for m in legal],
                    p=[float(v) for v in np.exp(lp)],
                    simulations=int(sum(int(r.simulations) for r in runs.values())))
