"""GDL-II matches through the HTTP server, sent as Dresden's GameController sends them
(``tests/dresden.py``): PLAY and STOP carry only our percepts.  Each reply must be legal and
in time, the player must keep a belief that holds the true state, and nothing we were not
shown may come back in a reply.  No timing assertions beyond the protocol's clock."""
from __future__ import annotations

import json

import pytest

from gamemanager import ServerProcess, wait_for_record
from dresden import play_match

SHEETS = ["kuhn_poker", "rock_paper_scissors", "phantom_connect_4x4", "hidden_goofspiel", "minipoker"]


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
    played = play_match(server, sheet, {seat: server}, f"g2.{game}", start=15, play=3, seed=3)
    assert not played.errors, played.errors
    d = wait_for_record(server, f"g2.{game}")
    assert d is not None and d.get("x-gdl2"), d
    # our record keeps exactly what we were shown, step by step
    assert len(d["x-percepts"]) == len(played.joint_moves)
    for k, mine in enumerate(d["x-percepts"]):
        assert sorted(p.lower() for p in mine) == sorted(
            " ".join(str(x) for x in [p]) and __import__("gdl.terms", fromlist=["render_spaced"]).render_spaced(p).lower()
            for p in played.percepts[k][seat])
    decisions = [x for x in d["x-decisions"] if x.get("belief")]
    for x in decisions:
        assert not x["fallback"], x
        assert x["belief"]["sampling"] == "uniform"
        assert not x["belief"]["lenient"], x["belief"]


def test_the_later_gdl2_form_with_turn_and_move_is_accepted(server, shared_dir):
    sheet = shared_dir / "corpus" / "gdl2" / "kuhn_poker.kif"
    played = play_match(server, sheet, {1: server}, "g2.turnform", start=15, play=3, seed=8, form="turn")
    assert not played.errors, played.errors
