"""One decision interface (agent/decision.py): every decider answers a Situation with a
Decision whose move is legal; a search result becomes a Decision without losing what the
match record reads; the runner's random player draws as it did before the interface."""
from __future__ import annotations

import random
import time

from agent.decision import Decision, RandomChoice, Situation
from agent.player import FlatMonteCarlo, SearchDecider, result_fields
from agent.search import SearchSettings, search
from test_search_support import T, menu_game, persona, reasoner

MENU = menu_game({"a": 86, "b": 70, "c": 30, "d": 100, "e": 0})


def _situation(sm, seed=1, seconds=5.0):
    s0 = sm.initial_state()
    return Situation(state=s0, role=0, legal=sm.legal_moves(s0, 0), seed=seed,
                     deadline=time.monotonic() + seconds)


def test_every_decider_answers_with_a_legal_move():
    sm = reasoner(MENU)
    p = persona(limit=40)
    for decider in (SearchDecider(sm, p, search), FlatMonteCarlo(sm), RandomChoice(seed=3)):
        sit = _situation(sm, seconds=0.3)       # (flat Monte Carlo plays until the deadline)
        d = decider.decide(sit)
        assert isinstance(d, Decision) and d.move in sit.legal, type(decider).__name__
    sit = _situation(sm)
    # the search (on a clock: its one-ply look-ahead proves the 100) takes the best item,
    # with a value and a visit count for every legal move
    fresh = SearchDecider(sm, p, search)
    d = fresh.decide(sit)
    assert d.move == T("(pick d)") and d.moves == sit.legal and len(d.q) == len(d.visits) == 5
    assert d.value == d.q[d.moves.index(d.move)]
    assert fresh.tree is not None, "the search decider keeps the tree it grew"


def test_a_search_result_becomes_a_decision_as_the_player_read_it():
    sm = reasoner(MENU)
    s0 = sm.initial_state()
    r = search(sm, s0, 0, persona(), SearchSettings(seed=2, limit=30, solver=False))
    d = Decision.of(r)
    assert d.move == r.move and d.moves == list(r.moves)
    assert d.q == [float(v) for v in r.q] and d.visits == [int(v) for v in r.visits]
    assert d.simulations == r.simulations and d.playouts == r.playouts and d.threads == 1
    fields = result_fields(r)
    assert fields["move"] == r.move and fields["simulations"] == 30 and "threads" not in fields
    # a dict of the same fields (agent/hidden's ensemble) gives the same record, extras kept aside
    again = Decision.of({**fields, "samples": 3})
    assert again.fields() == {**fields, "samples": 3} and again.extra == {"samples": 3}
    assert Decision.of(again) is again


def test_the_random_choice_draws_what_the_runners_random_player_drew():
    legal = [f"(m {i})" for i in range(7)]
    chooser, old = RandomChoice(seed=11), random.Random(11)
    sit = Situation(state=None, role="red", legal=legal, seed=0)
    assert [chooser.decide(sit).move for _ in range(20)] == [old.choice(legal) for _ in range(20)]
