"""Search on a belief: the ensemble searches the belief's live states, pools their values,
and does not make a fixed pick among moves of equal value (a habit an opponent can read)."""
from __future__ import annotations

import time

import pytest

from agent.hidden.search import ensemble
from agent.persona import load_persona
from agent.reasoner.prolog import PrologReasoner
from agent.reasoner.statemachine import CachedStateMachine
from agent.search import search
from gdl.kif import read_rules_file


@pytest.fixture(scope="module")
def rps(shared_dir):
    sm = CachedStateMachine(PrologReasoner(read_rules_file(shared_dir / "corpus" / "gdl2" / "rock_paper_scissors.kif")))
    yield sm
    sm.close()


def test_equal_moves_are_not_always_the_same_pick(rps):
    s0 = rps.initial_state()
    legal = rps.legal_moves(s0, 0)
    persona = load_persona("tournament")
    picks = set()
    for seed in range(12):
        r = ensemble(rps, [(s0, 1.0)], 0, legal, persona, seed=seed,
                     deadline=time.monotonic() + 0.05, search_fn=search, limit=200)
        assert r["move"] in legal and r["samples"] == 1
        picks.add(r["move"])
    assert len(picks) >= 2, picks


def test_a_belief_whose_states_all_ended_still_gives_a_legal_move(rps):
    s0 = rps.initial_state()
    legal = rps.legal_moves(s0, 0)
    end = rps.next_state(s0, (legal[0], legal[1]))
    assert rps.is_terminal(end)
    r = ensemble(rps, [(end, 1.0)], 0, legal, load_persona("tournament"), seed=1,
                 deadline=time.monotonic() + 0.05, search_fn=search)
    assert r["move"] in legal and r["samples"] == 0
