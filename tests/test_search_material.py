"""Material found from the rules and random play, and the prior it puts on new moves
(agent/search/material.py, tree.seed_prior, driver_compiled._material_prior; issue #34)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from agent.engine import load_engine
from agent.match.rules import Scrambler, read_rules
from agent.persona import load_persona
from agent.search import heuristic as H
from agent.search import material as M
from agent.search import SearchSettings, search
from agent.search import tree as T
from agent.search.driver_compiled import _material_prior
from agent.search.params import MATERIAL_WEIGHT, P_MATERIAL, build
from gdl.kif import parse_rules, read_rules_file

GAMES = Path(__file__).parents[1] / "games"


@pytest.fixture(scope="module")
def breakthrough_text():
    return (GAMES / "breakthrough.kif").read_text()


@pytest.fixture(scope="module")
def breakthrough(breakthrough_text):
    return load_engine(parse_rules(breakthrough_text), engine="compiled")


@pytest.fixture(scope="module")
def learned(breakthrough):
    learner = H.Learner(breakthrough, playouts=600, seconds=None)
    learner.step()
    return learner


def test_candidates_are_the_piece_kinds_of_the_board():
    base = [("cell", x, y, c) for x in "123" for y in "123" for c in ("w", "b")] + [("control", "w"), ("step", "1")]
    cands = M.candidates(base, 2)
    # the argument with the fewest values, a multiple of the role count: the piece kind
    assert [k for k, _ in cands] == [("cell", 2, "w"), ("cell", 2, "b")]
    assert [len(f) for _, f in cands] == [9, 9]
    assert all(base[i][3] == "w" for i in cands[0][1])
    # fewer than six facts of a kind: no candidate (not a board)
    assert M.candidates([("cell", x, c) for x in "12" for c in "wb"], 2) == []


def test_breakthrough_material_is_each_colours_pieces(learned, breakthrough):
    m = learned.material
    assert m is not None, learned.summary()
    for r, role in enumerate(breakthrough.roles):
        facts = [breakthrough.base[i] for i in m.sets[r]]
        # each role's material: one colour's pieces, 64 squares; the two roles' differ
        assert len(facts) == 64 and len({f[-1] for f in facts}) == 1
        assert all(c >= M.MIN_CORRELATION for c in m.correlation[r])
    assert set(m.sets[0]).isdisjoint(m.sets[1])
    # the role's own colour: the white player's pieces are on its material in the initial state
    s0 = breakthrough.pack(breakthrough.initial_state())
    masks = m.masks(s0.shape[0])
    counts = [sum(bin(int(a & b)).count("1") for a, b in zip(s0, masks[r])) for r in range(2)]
    assert counts == [16, 16]
    assert "material found" in learned.summary()


def test_discs_added_every_turn_are_not_material():
    """connectFour's disc counts change every other ply whoever wins: no material."""
    eng = load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled")
    learner = H.Learner(eng, playouts=300, seconds=None)
    learner.step()
    assert learner.cands, "the discs are candidates"
    assert learner.material is None
    assert "no material found" in learner.summary()


def test_scrambled_rules_give_the_same_material(breakthrough_text, breakthrough, learned):
    text, _ = read_rules(breakthrough_text)     # as the match runner scrambles it: no comments
    scr = Scrambler(text, seed=5)
    eng = load_engine(read_rules(scr.text(text))[1], engine="compiled")
    other = H.Learner(eng, playouts=600, seconds=None)
    other.step()
    assert other.material is not None
    # the same facts under their new names, per role (the sample is seeded by the rules'
    # structure, so the playouts are the same)
    for r in range(2):
        mine = sorted(breakthrough.base[i][1:3] for i in learned.material.sets[r])
        theirs = sorted(eng.base[i][1:3] for i in other.material.sets[r])
        assert mine == theirs and len(mine) == 64      # (the squares' numbers are kept)
    assert [len(c) for c in other.material.correlation] == [len(c) for c in learned.material.correlation]


def test_a_game_without_a_board_has_no_material_and_keeps_its_evaluation():
    """No candidate set (test_heuristic's claim game: four cells per owner): the learner
    still fits the evaluation, and says there is no material."""
    from tests.test_heuristic import CLAIM
    eng = load_engine(parse_rules(CLAIM), engine="compiled")
    learner = H.Learner(eng, playouts=200, seconds=None)
    learner.step()
    assert learner.cands == [] and learner.done
    assert learner.material is None and learner.result is not None
    assert "no material found" in learner.summary()


def test_select_needs_rare_changes_and_correlation_for_every_role():
    cands = [(("cell", 2, "w"), [0, 1]), (("cell", 2, "b"), [2, 3])]
    rng = np.random.default_rng(1)
    wins = rng.integers(0, 2, 400)
    finals = np.stack([100.0 * wins, 100.0 * (1 - wins)], axis=1)
    ends = np.stack([5 + wins + rng.integers(0, 2, 400), 5 + (1 - wins) + rng.integers(0, 2, 400)], axis=1)
    m = M.select(cands, np.array([10, 10]), 1000, ends, finals)
    assert m is not None and m.sets == [[0, 1], [2, 3]]
    # changing in most plies (pieces added every turn): not material
    assert M.select(cands, np.array([600, 10]), 1000, ends, finals) is None
    # a count that says nothing of the outcome: that role has none, so the game has none
    flat = ends.copy()
    flat[:, 1] = rng.integers(0, 2, 400)
    assert M.select(cands, np.array([10, 10]), 1000, flat, finals) is None
    # one role: nothing to weigh its material against
    assert M.select(cands[:1], np.array([10]), 1000, ends[:, :1], finals[:, :1]) is None


def test_prior_moves_the_root_value_by_the_material_won():
    masks = np.array([[0b0011_1111], [0b1111_1100_0000]], np.uint64)   # six pieces each
    base = np.array([6.0, 6.0])
    root_q = np.array([60.0, 40.0])
    out = np.zeros(2)
    _material_prior(np.array([0b1111_1111_1111], np.uint64), masks, base, root_q, out)
    assert np.allclose(out, root_q)                        # nothing taken: the root's values
    _material_prior(np.array([0b0111_1111_1111], np.uint64), masks, base, root_q, out)   # role 1 lost one
    assert out[0] > 60.0 and out[1] < 40.0
    up, down = out.copy(), np.zeros(2)
    _material_prior(np.array([0b1111_1111_1110], np.uint64), masks, base, root_q, down)   # role 0 lost one
    assert down[0] < 60.0 and down[1] > 40.0
    # the same share moves each value the same fraction of its way to 100 or to 0
    assert np.isclose((up[0] - 60) / 40, (60 - down[0]) / 60)
    assert 0.0 <= min(up.min(), down.min()) and max(up.max(), down.max()) <= 100.0


def test_seed_prior_only_on_a_first_try_of_a_real_choice():
    tree = T.new_tree(2, 4, 8, 16, 1)
    T.reset_root(tree, False, np.zeros(2))
    T.init_slots(tree, 0, np.array([3, 1], np.int32), np.array([0, 1, 2, 0], np.int32))
    off0, off1 = tree.slot_off[0, 0], tree.slot_off[0, 1]
    sl = np.array([off0 + 1, off1], np.int32)
    T.seed_prior(tree, 0, sl, np.array([70.0, 30.0]), 6)
    assert tree.slot_n[off0 + 1] == 6 and tree.slot_q[off0 + 1] == 70.0
    assert tree.slot_n[off1] == 0          # a role with one move has no choice to bias
    tree.slot_q[off0 + 1] = 55.0
    T.seed_prior(tree, 0, sl, np.array([90.0, 10.0]), 6)
    assert tree.slot_n[off0 + 1] == 6 and tree.slot_q[off0 + 1] == 55.0   # tried before: kept


def test_params_material_is_live_play_only():
    champ = load_persona("champion")
    assert build(champ, 2, 0, material=True)[0][P_MATERIAL] == MATERIAL_WEIGHT
    assert build(champ, 2, 0, material=False)[0][P_MATERIAL] == 0.0
    assert build(champ, 2, 0, material=True, thesis=True)[0][P_MATERIAL] == 0.0
    designer = dataclasses.replace(champ, utility_lambda=0.5)
    assert build(designer, 2, 0, material=True)[0][P_MATERIAL] == 0.0


def test_search_with_material_seeds_the_root_moves(breakthrough, learned):
    champ = load_persona("champion")
    s = breakthrough.initial_state()
    res = search(breakthrough, s, 0, champ, SearchSettings(seed=3, limit=600, material=learned.material))
    plain = search(breakthrough, s, 0, champ, SearchSettings(seed=3, limit=600))
    # every root move tried once counts the prior's simulations as well as its own
    assert res.visits.sum() == plain.visits.sum() + MATERIAL_WEIGHT * len(res.visits)
    assert res.move in breakthrough.legal_moves(s, 0)
    # a persona search for fitting (thesis mode) is the spec's: the same with or without it
    a = search(breakthrough, s, 0, champ,
               SearchSettings(seed=3, limit=300, thesis=True, material=learned.material))
    b = search(breakthrough, s, 0, champ, SearchSettings(seed=3, limit=300, thesis=True))
    assert a.move == b.move and list(a.visits) == list(b.visits)
