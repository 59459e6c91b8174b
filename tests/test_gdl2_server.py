"""GDL-II matches through the HTTP server, sent as Dresden's GameController sends them
(``tests/dresden.py``): PLAY and STOP carry only our percepts.  Each reply must be legal and
in time, the player must keep a belief that holds the true state, and nothing we were not
shown may come back in a reply.  No timing assertions beyond the protocol's clock."""
from __future__ import annotations

import pytest

from gamemanager import ServerProcess, wait_for_record
from dresden import play_match
from gdl.terms import render_spaced

SHEETS = ["kuhn_poker", "phantom_connect_4x4", "hidden_goofspiel"]
# Phantom connect four's matches ran to their end, 11 steps or more of 5 s searches (28-64 s
# of the suite); the manager stops it after 8 (four searched moves on a belief of tens of
# boards), as a manager may: the same paths (belief, percepts, search, STOP with percepts),
# and the other two sheets play to their end.  Whole phantom matches: scripts/bench_gdl2_dresden.py (the real GameController).
MAX_STEPS = {"phantom_connect_4x4": 8}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("gdl2") / "match_logs", "--seed", "5") as s:
        yield s
        assert s.alive(), s.log_text()


def chooser_seats(sheet_path):
    from gdl.kif import read_rules_file
    roles = read_rules_file(sheet_path).roles
    return [i for i, r in enumerate(roles) if r != "random"]


@pytest.mark.parametrize("game", SHEETS)
def test_gdl2_match_under_a_dresden_manager_is_clean(server, shared_dir, game):
    sheet = shared_dir / "corpus" / "gdl2" / f"{game}.kif"
    seat = chooser_seats(sheet)[0]
    played = play_match(server, sheet, {seat: server}, f"g2.{game}", start=20, play=5, seed=3,
                        max_steps=MAX_STEPS.get(game, 200))
    assert not played.errors, played.errors
    d = wait_for_record(server, f"g2.{game}")
    assert d is not None and d.get("x-gdl2"), d
    # our record keeps exactly what we were shown, step by step
    assert len(d["x-own-percepts"]) == len(played.joint_moves)
    for k, mine in enumerate(d["x-own-percepts"]):
        assert sorted(p.lower() for p in mine) == sorted(render_spaced(p).lower() for p in played.percepts[k][seat])
    decisions = [x for x in d["x-decisions"] if x.get("belief")]
    for x in decisions:
        assert not x["fallback"], x
        assert x["belief"]["sampling"] == "uniform"
        assert not x["belief"]["lenient"], x["belief"]
    assert_nothing_hidden_came_back(played, seat)


def assert_nothing_hidden_came_back(played, seat):
    """No leak, as a property of every reply of the match: each is READY, DONE or a move,
    and none names a fact of the true state that the role had not been shown by then."""
    shown = set()
    step = 0
    for (i, body), (_, reply) in zip(played.sent, played.replies):
        if body.startswith("(PLAY") and " NIL)" not in body:
            shown |= {render_spaced(p).lower() for p in played.percepts[step][seat]}
            step += 1
        text = reply.strip().lower()
        if body.startswith("(START"):
            assert text == "ready"
            continue
        if body.startswith("(STOP"):
            assert text == "done"
            continue
        hidden = {render_spaced(f).lower() for f in played.states[step]} - shown
        assert not any(h in text for h in hidden if len(h) > 2), (text, sorted(hidden)[:5])
        assert "(" not in text or text.count("(") == text.count(")")   # one term, nothing appended


def test_the_later_gdl2_form_with_turn_and_move_is_accepted(server, shared_dir):
    sheet = shared_dir / "corpus" / "gdl2" / "kuhn_poker.kif"
    played = play_match(server, sheet, {1: server}, "g2.turnform", start=20, play=5, seed=8, form="turn")
    assert not played.errors, played.errors
