"""Move features that generalise (agent.modelling.movefeatures): what each column says on
small games, the same on scrambled rules, the model table's new columns checked on load, and
a clone of a scripted habit that carries it to positions it never saw."""
from __future__ import annotations

import random

import numpy as np
import pytest

from agent.engine.loader import load_engine
from agent.match.rules import Scrambler
from agent.modelling import choicemodel as CM
from agent.modelling import movefeatures as MF
from agent.modelling.dataset import Decision
from agent.modelling.scripted import choose
from agent.modeltable import ModelError, check_table
from conftest import ROOT
from gdl.kif import parse_rules, read_rules_file, parse_term
from gdl.terms import render_spaced

CONNECT_FOUR = ROOT / "games" / "connectFour.kif"
BREAKTHROUGH = ROOT / "games" / "breakthrough.kif"

# A 3 x 3 placement game whose coordinates are ordered only by a chain: c, then a, then b
# (text order would say a, b, c).
CHAIN_GAME = """
(role xp) (role op)
(init (control xp))
(succ c a) (succ a b)
(coord a) (coord b) (coord c)
(<= (legal ?r (mark ?x ?y)) (true (control ?r)) (coord ?x) (coord ?y) (not (filled ?x ?y)))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (filled ?x ?y) (true (cell ?x ?y ?p)))
(<= (next (cell ?x ?y ?r)) (does ?r (mark ?x ?y)))
(<= (next (cell ?x ?y ?p)) (true (cell ?x ?y ?p)))
(<= (next (control op)) (true (control xp)))
(<= (next (control xp)) (true (control op)))
(<= open (coord ?x) (coord ?y) (not (filled ?x ?y)))
(<= terminal (not open))
(<= (goal ?r 50) (role ?r))
"""


def _game(path):
    d = read_rules_file(path)
    e = load_engine(d)
    return d, e, MF.MoveView.detect(d, e)


def _play(engine, state, history, moves_by_role):
    joint = tuple(moves_by_role)
    history = (list(history) + [(state, joint)])[-MF.HISTORY:]
    return engine.next_state(state, joint), history


def _col(X, name):
    return X[:, MF.INDEX[name]]


def test_connect_four_leftmost_open_column_and_last_moves():
    d, e, view = _game(CONNECT_FOUR)
    assert view.board is not None
    s, hist = e.initial_state(), []
    # fill column 1 (red and yellow alternate), then red drops 4 and yellow 5
    for k in range(6):
        mover = k % 2
        joint = [("drop", "1") if r == mover else e.legal_moves(s, r)[0] for r in range(2)]
        s, hist = _play(e, s, hist, joint)
    for mover, col in ((0, "4"), (1, "5")):
        joint = [("drop", col) if r == mover else e.legal_moves(s, r)[0] for r in range(2)]
        s, hist = _play(e, s, hist, joint)
    moves = list(e.legal_moves(s, 0))
    assert ("drop", "1") not in moves
    X = MF.compute(view, e, s, 0, moves, hist)
    by = {m[1]: j for j, m in enumerate(moves)}
    # the leftmost open column is 2: the lowest first coordinate among the legal moves
    assert _col(X, "x_min")[by["2"]] == 1 and _col(X, "x_min").sum() == 1
    assert _col(X, "x_max")[by["7"]] == 1
    assert _col(X, "arg1_min")[by["2"]] == 1
    # my last move was column 4, the opponent's column 5
    assert _col(X, "own_same_x")[by["4"]] == 1 and _col(X, "own_same_x").sum() == 1
    assert _col(X, "opp_same_x")[by["5"]] == 1 and _col(X, "same_as_opp")[by["5"]] == 1
    assert _col(X, "same_as_opp").sum() == 1 and _col(X, "same_as_own")[by["4"]] == 1
    # a disc dropped on my own lands right above it: the same column, adjacent
    assert _col(X, "own_adjacent")[by["4"]] == 1 and _col(X, "own_dist")[by["4"]] == min(_col(X, "own_dist"))
    # the centre column is 4 of 7
    assert _col(X, "centre_dx")[by["4"]] == 0
    assert not _col(X, "captures").any()
    # the scripted habits read the same columns
    assert moves[choose("leftmost", view, e, s, 0, moves, hist)] == ("drop", "2")
    assert moves[choose("copy", view, e, s, 0, moves, hist)] == ("drop", "5")
    assert moves[choose("rightmost", view, e, s, 0, moves, hist)] == ("drop", "7")


def _walk(engine, steps, seed, role_moves=None):
    rng = random.Random(seed)
    s, hist = engine.initial_state(), []
    for _ in range(steps):
        if engine.is_terminal(s):
            break
        joint = [rng.choice(sorted(engine.legal_moves(s, r), key=str)) for r in range(len(engine.roles))]
        s, hist = _play(engine, s, hist, joint)
    return s, hist


def test_chain_coordinates_ordered_by_the_rules_and_scrambled_the_same():
    d = parse_rules(CHAIN_GAME)
    e = load_engine(d)
    view = MF.MoveView.detect(d, e)
    assert view.board is not None and view.board.coord_values[0] == ("c", "a", "b")
    s = e.initial_state()
    moves = list(e.legal_moves(s, 0))
    X = MF.compute(view, e, s, 0, moves, ())
    lows = {moves[j] for j in np.flatnonzero(_col(X, "x_min"))}
    assert lows == {("mark", "c", y) for y in "abc"}
    assert moves[choose("leftmost", view, e, s, 0, moves, ())] == ("mark", "c", "c")
    assert moves[choose("centre", view, e, s, 0, moves, ())] == ("mark", "a", "a")
    # the same game scrambled: every symbol renamed, the same columns move for move
    sc = Scrambler(CHAIN_GAME, seed=7)
    d2 = parse_rules(sc.text(CHAIN_GAME))
    e2 = load_engine(d2)
    view2 = MF.MoveView.detect(d2, e2)
    s2 = e2.initial_state()
    moves2 = [parse_term(sc.text(render_spaced(m))) for m in moves]
    assert set(moves2) == set(e2.legal_moves(s2, 0))
    assert np.array_equal(MF.compute(view2, e2, s2, 0, moves2, ()), X)


def test_breakthrough_captures_are_the_moves_onto_an_opponent_piece():
    d, e, view = _game(BREAKTHROUGH)
    b = view.board
    seen = 0
    for seed in range(40):
        s, hist = _walk(e, 14, seed)
        if e.is_terminal(s):
            continue
        for role in range(2):
            moves = list(e.legal_moves(s, role))
            if len(moves) < 2:
                continue
            X = MF.compute(view, e, s, role, moves, hist)
            grid = {(f[1], f[2]): f[3] for f in s if isinstance(f, tuple) and f[0] == b.relation}
            mine = e.roles[role]
            for j, m in enumerate(moves):
                onto = grid.get((m[3], m[4]))
                assert _col(X, "captures")[j] == float(onto is not None and onto != mine), (m, onto)
            seen += int(_col(X, "captures").any())
    assert seen >= 3


def _model(movex=True, n=40, seed=0):
    """A small model fitted on synthetic decisions (one shared column) with move features."""
    rng = np.random.default_rng(seed)
    ds, shared, mx = [], [], []
    for i in range(n):
        k = 4
        moves = tuple(f"m{j}" for j in range(k))
        X = rng.random((k, len(MF.NAMES)))
        chosen = int(np.argmin(X[:, MF.INDEX["x"]]))
        ds.append(Decision("g", f"match{i // 10}", 0, i, "P", "P", float(i // 10), frozenset({("s", i)}),
                           moves, chosen, None))
        shared.append(rng.random((k, 1)))
        mx.append(X)
    m = CM.fit(ds, shared, ["q"], movex=mx if movex else None, view=MF.MoveView(None))
    return m, ds, shared, mx


def test_model_table_has_the_move_columns_and_is_checked():
    m, ds, shared, mx = _model()
    assert m.move_names == list(MF.NAMES)
    assert [n for n in m.names if n.startswith("move:")] == [f"move:{n}" for n in MF.NAMES]
    table = m.to_dict()
    check_table(table)
    again = CM.ChoiceModel.from_dict(table)
    assert np.allclose(again.log_probs(shared[0], ds[0].state, None, ds[0].moves, mx[0]),
                       m.log_probs(shared[0], ds[0].state, None, ds[0].moves, mx[0]))
    # the model learned the habit (the lowest "x") from the move columns
    assert np.argmax(m.log_probs(shared[0], ds[0].state, None, ds[0].moves, mx[0])) == ds[0].chosen
    with pytest.raises(ValueError, match="move features"):
        m.log_probs(shared[0], ds[0].state, None, ds[0].moves)

    def refused(change, field):
        t = {**table, **change}
        with pytest.raises(ModelError, match=field):
            check_table(t)

    refused({"move": table["move"][:-1] + ["leftmost_by_name"]}, "move feature")
    refused({"move": table["move"][:1] + table["move"][:-1]}, "repeat")
    refused({"move": table["move"][:-1]}, "mean must be a list")
    refused({"move": "x"}, "move must be a list of strings")
    board = {"relation": "cell", "arity": 3, "coord_args": [0, 1], "coord_values": [["1", "2"], ["1", "2"]],
             "content_args": [2], "background": ""}
    check_table({**table, "board": board})
    refused({"board": {**board, "coord_args": [0, 3]}}, "board.coord_args")
    refused({"board": {**board, "coord_values": [["1", "1"], ["1", "2"]]}}, "board.coord_values")
    refused({"board": {**board, "extra": 1}}, "board must have")
    refused({"board": []}, "board must be a table")
    t2 = {k: v for k, v in table.items() if k != "board"}
    with pytest.raises(ModelError, match="no board"):
        check_table(t2)
    # a model fitted before the move features (version 1) still loads and plays
    old, ds1, sh1, _ = _model(movex=False)
    t1 = {k: v for k, v in old.to_dict().items() if k not in ("move", "board")}
    t1["version"] = 1
    m1 = CM.ChoiceModel.from_dict(t1)
    assert m1.move_names == [] and np.isfinite(m1.log_probs(sh1[0], ds1[0].state, None, ds1[0].moves)).all()
    with pytest.raises(ModelError, match="version 1"):
        check_table({**t1, "move": []})


def test_move_features_are_kept_only_where_cross_validation_prefers_them():
    """A player whose choices follow the shared column, with move features that are noise:
    the fit leaves them out (they cost a recorded bot its test likelihood); a player whose
    habit only the move features express keeps them (``_model``); a player fitted with a
    prior reads them where the prior does."""
    rng = np.random.default_rng(3)
    ds, shared, mx = [], [], []
    for i in range(120):
        moves = tuple(f"m{j}" for j in range(5))
        q = rng.random((5, 1))
        ds.append(Decision("g", f"match{i // 10}", 0, i, "P", "P", float(i // 10), frozenset({("s", i)}),
                           moves, int(np.argmax(q[:, 0])), None))
        shared.append(q)
        mx.append(rng.random((5, len(MF.NAMES))))
    noise = CM.fit(ds, shared, ["q"], movex=mx, view=MF.MoveView(None))
    assert noise.move_names == [] and noise.info["move_features"] == "left out by cross-validation"
    assert np.argmax(noise.log_probs(shared[0], ds[0].state, None, ds[0].moves)) == ds[0].chosen
    habit, hds, hshared, hmx = _model(n=60)
    assert habit.move_names == list(MF.NAMES) and habit.info["move_features"] == "kept"
    player = CM.fit(ds[:40], shared[:40], ["q"], prior=habit, movex=mx[:40], view=MF.MoveView(None))
    assert player.move_names == list(MF.NAMES) and player.info["move_features"] == "read"
    # ... and one whose prior left them out reads none (its own few decisions do not decide)
    player = CM.fit(hds[:30], hshared[:30], ["q"], prior=noise, movex=hmx[:30], view=MF.MoveView(None))
    assert player.move_names == [] and player.info["move_features"] == "none"


def test_player_keeps_as_much_history_as_the_features_read():
    from agent.player import MODEL_HISTORY
    assert MODEL_HISTORY == MF.HISTORY


def _scripted_decisions(habit, engine, view, matches, seed):
    """Decisions of a scripted person (role 0) against a random opponent, with history."""
    rng = random.Random(seed)
    out = []
    for g in range(matches):
        s, hist = engine.initial_state(), []
        ply = 0
        while not engine.is_terminal(s):
            joint = []
            for r in range(2):
                moves = list(engine.legal_moves(s, r))
                if r == 0 and len(moves) >= 2:
                    j = choose(habit, view, engine, s, 0, moves, hist)
                    out.append(Decision("g", f"m{g}", 0, ply, "P", "P", float(g), s, tuple(moves), j,
                                        hist[-1][1] if hist else None, tuple(hist)))
                    joint.append(moves[j])
                else:
                    joint.append(rng.choice(moves))
            s, hist = _play(engine, s, hist, joint)
            ply += 1
    return out


@pytest.mark.parametrize("habit,tokens_miss_it", [("leftmost", True), ("copy", False)])
def test_clone_carries_a_habit_to_unseen_positions(habit, tokens_miss_it):
    """Leftmost open column: the move tokens and counts alone miss it in new positions;
    copying the opponent's column they learn too (the count of a move after the previous
    joint move), and the move features must not lose it."""
    from agent.modelling.baselines import state_key
    d, e, view = _game(CONNECT_FOUR)
    data = _scripted_decisions(habit, e, view, 40, seed=3)
    train = [x for x in data if int(x.match_id[1:]) < 30]
    test = [x for x in data if int(x.match_id[1:]) >= 30]
    seen = {state_key(x.state) for x in train}
    unseen = [x for x in test if state_key(x.state) not in seen]
    assert len(unseen) >= 20

    def agreement(movex: bool) -> float:
        shared = [np.zeros((len(x.moves), 1)) for x in train]
        mx = [MF.compute(view, e, x.state, 0, x.moves, x.history) for x in train] if movex else None
        m = CM.fit(train, shared, ["zero"], movex=mx, view=view)
        hits = 0
        for x in unseen:
            lp = m.log_probs(np.zeros((len(x.moves), 1)), x.state, x.prev, x.moves,
                             m.move_features(e, x.state, 0, x.moves, x.history))
            hits += int(np.argmax(lp) == x.chosen)
        return hits / len(unseen)

    after, before = agreement(True), agreement(False)
    assert after >= 0.9
    assert after > before if tokens_miss_it else after >= before
