"""The player of one GDL-II match: it knows what it knows.

Same life as ``agent.player.Player`` (rules, Prolog, the fast engine when the grounder has
built it, the persona), but the state is never given: after each step the manager sends
only our percepts, and our own move is the one we answered (or the one the manager says it
executed).  The belief (``agent.hidden.belief``) keeps complete histories consistent with
both; decisions search its most likely states (``agent.hidden.search``).

``self.state`` is the belief's most likely state: the server's worker reads it for
fallbacks and records, never as the truth.
"""
from __future__ import annotations

import hashlib
import logging
import random
import time

from gdl.kif import GdlError, parse_term
from gdl.terms import render, render_spaced

from agent.player import FlatMonteCarlo, Player
from agent.reasoner.statemachine import CachedStateMachine, goal_vector

from .belief import Belief
from .prior import UniformPrior
from .search import BeliefDecider, goal_range

log = logging.getLogger("ggp.player")

BELIEF_SHARE = 0.4      # of the time to a PLAY's deadline, at most, for the belief's update
REBUILD_SHARE = 0.7     # ... and for rebuilding a belief that ran empty
TOP_STATES = 16         # states of the belief written in each decision's record


def state_digest(state) -> str:
    """A short key of a state, to find the true state in a belief after the match."""
    text = "\n".join(sorted(render(f) for f in state))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def symbols_of(description) -> dict:
    """The rules' symbols by lower-case spelling, where that spelling is unambiguous."""
    seen: dict = {}

    def walk(t):
        if isinstance(t, tuple):
            for a in t:
                walk(a)
        elif not t.startswith("?"):
            seen.setdefault(t.lower(), set()).add(t)
    for r in description.rules:
        walk(r.head)
        for lit in r.body:
            walk(lit)
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def respell(t, symbols: dict | None):
    """A term as the rules spell it: managers print percepts in their own case."""
    if symbols is None:
        return t
    if isinstance(t, tuple):
        return tuple(respell(a, symbols) for a in t)
    return symbols.get(t.lower(), t)


def parse_percepts(texts, symbols: dict | None = None) -> tuple[frozenset, list]:
    """Percept texts as terms in the rules' spelling; the ones that do not parse are
    dropped, with a note."""
    out, notes = set(), []
    for t in texts or []:
        try:
            out.add(respell(parse_term(t), symbols))
        except GdlError:
            notes.append(f"percept {t[:80]!r} does not parse; ignored")
    return frozenset(out), notes


class HiddenPlayer(Player):
    """One role of one GDL-II match (see the module docstring)."""

    def __init__(self, *args, prior=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.prior = prior or UniformPrior()
        self.belief: Belief | None = None
        self.symbols: dict | None = None
        self.timing: dict = {}     # what the ensemble learned of its searches' lateness
        self.method: str | None = None   # how the last decision searched (search.on_belief)

    def prepare(self) -> list:
        legal = super().prepare()
        self.symbols = symbols_of(self.description)
        self.goal_span = goal_range(self.description)
        self.belief = Belief(self.sm, self.role_index, self.prior, rng=random.Random(self.seed))
        return legal

    def upgrade(self, budget_seconds: float = 30.0, engine: str = "auto") -> list:
        notes = super().upgrade(budget_seconds, engine)
        if not callable(getattr(self.engine, "sees", None)):   # an engine without percepts
            if self.engine is not self.prolog:
                self.engine.close()
            self.engine, self.sm, self.engine_kind = self.prolog, CachedStateMachine(self.prolog), "prolog"
            notes.append("the fast engine has no sees query; Prolog plays")
        if self.belief is not None:
            self.belief.sm = self.sm   # states are frozensets: the particles carry over
        self.timing = {}               # the searches' lateness is learned again on this engine
        return notes

    def ponders_between_moves(self) -> bool:
        return False  # the belief changes only with percepts; nothing to ponder on

    def _start_learning(self) -> None:
        self.learner = None  # the evaluation is learned from states a player never sees

    # -------------------------------------------------------------- play
    def observe(self, view, deadline: float | None = None) -> list:
        """One step as the manager reports it: ``{"own": our move's text or None,
        "percepts": [percept texts]}``; ``deadline``: the PLAY's (default: a play clock
        from now)."""
        own_text = (view or {}).get("own")
        percepts, notes = parse_percepts((view or {}).get("percepts"), self.symbols)
        own = None
        if own_text:
            try:
                own = respell(parse_term(own_text), self.symbols)
            except GdlError:
                notes.append(f"our move {own_text[:80]!r} does not parse; any of ours is assumed")
        now = time.monotonic()
        play_by = deadline if deadline is not None else now + self.play_clock
        # the particles get a share of the time; a bag that ran empty may take more to be
        # rebuilt (a search on a wrong belief is worth less than a short one on a right one)
        # a PLAY came, so the match goes on: histories that ended here are wrong
        notes += self.belief.observe(own, percepts, now + BELIEF_SHARE * max(0.0, play_by - now),
                                     rebuild_by=now + REBUILD_SHARE * max(0.0, play_by - now),
                                     goes_on=True)
        self.ply += 1
        self.state = self.belief.most_likely()
        self.tree = None
        return notes

    def legal(self) -> list:
        return self.belief.legal()

    def is_terminal(self) -> bool:
        # asked when a PLAY came: the manager says the match goes on, whatever histories the
        # belief keeps (a lenient one's closest histories had ended: battleship was then
        # answered without search for 44 steps)
        return False

    def decide(self, deadline: float, ponder: bool = False, on_best=None) -> dict:
        decision = super().decide(deadline, ponder=ponder, on_best=on_best)
        dist = self.belief.distribution()
        decision["belief"] = {
            **self.prior.describe(),
            "particles": len(self.belief.particles),
            "states": len(dist),
            "lenient": self.belief.lenient,
            "rebuilt": self.belief.rebuilt,
            "method": self.method,
            "top": [[state_digest(s), round(p, 5)] for s, p in dist[:TOP_STATES]],
        }
        return decision

    def decider(self):
        """The persona's search on the belief (``search.BeliefDecider``); a persona with a
        fitted model, or no search, plays flat Monte Carlo from the belief's most likely state
        (a model's features read one true state, which a GDL-II player never has)."""
        if self.search_kind == "agent.search" and self.persona.model is None:
            engine = self.sm if self.engine is self.prolog else self.engine
            return BeliefDecider(engine, self.belief, self.persona, self.prior, self._search,
                                 timing=self.timing, goal_span=self.goal_span)
        return FlatMonteCarlo(self.sm)

    def _run_search(self, legal, deadline, seed, on_best=None):
        self.method = None
        d = super()._run_search(legal, deadline, seed, on_best)
        self.method = d.extra.get("method")
        return d

    def goals(self) -> list:
        return goal_vector(self.sm.goal_values(self.belief.most_likely()))
