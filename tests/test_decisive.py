"""Decisive and anti-decisive moves in playouts (issue #34): the moves that may end the game,
and for each the moves that may stop it, are found from the rules' structure (the same on a
scrambled sheet); a live-play playout takes a winning move when its mover has one, and
replaces a move that lets the next mover win by one that stops it; where any move may end the
game, the moves tried are narrowed in each state by terminal's conditions (its lines).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from agent.engine import load_engine
from agent.match.rules import Scrambler
from agent.persona import load_persona
from agent.search import decisive as D
from agent.search import SearchSettings, driver_compiled, driver_sm
from agent.search.decisive import analyse, candidates
from gdl.kif import parse_rules, parse_term, read_rules_file
from gdl.terms import render

pytest.importorskip("pyswip")

GAMES = Path(__file__).resolve().parents[1] / "games"


@pytest.fixture(scope="module")
def breakthrough_text():
    # without its comments, as a START carries it (the scrambler renames every token)
    return re.sub(r";[^\n]*", "", (GAMES / "breakthrough.kif").read_text())


@pytest.fixture(scope="module")
def breakthrough(breakthrough_text):
    return load_engine(parse_rules(breakthrough_text), engine="compiled")


def _candidate_moves(engine):
    c = candidates(engine.game)
    return [{engine.move_terms[r][k] for k in np.nonzero(c[r])[0]} for r in range(len(engine.roles))]


def test_the_moves_onto_the_last_row_are_the_candidates(breakthrough):
    """Breakthrough ends when a piece reaches the far row: white's moves onto row 8 and
    black's onto row 1, 22 each, and no other (the frame axiom reads every move, but it
    only keeps a piece where it is)."""
    white, black = _candidate_moves(breakthrough)
    assert len(white) == 22 and len(black) == 22
    assert all(len(m) == 5 and m[4] == "8" for m in white)
    assert all(len(m) == 5 and m[4] == "1" for m in black)


def test_a_scrambled_sheet_has_the_same_candidates(breakthrough, breakthrough_text):
    scr = Scrambler(breakthrough_text, seed=11)
    scrambled = load_engine(parse_rules(scr.text(breakthrough_text)), engine="compiled")
    fwd = scr.forward

    def rename(t):
        if isinstance(t, tuple):
            return tuple(rename(x) for x in t)
        return fwd.get(t, t)

    want = [{rename(m) for m in ms} for ms in _candidate_moves(breakthrough)]
    got = _candidate_moves(scrambled)
    by_role = dict(zip(scrambled.roles, got))
    assert [by_role[rename(r)] for r in breakthrough.roles] == want

    # and the moves that may stop each of them
    index = {rename(r): i for i, r in enumerate(breakthrough.roles)}
    to_original = [index[r] for r in scrambled.roles]
    _, stoppers, _, narrowing = D.analyse_terms(breakthrough)
    _, scrambled_stoppers, _, _ = D.analyse_terms(scrambled)
    assert narrowing is None        # few moves may end it: no narrowing in each state
    assert len(stoppers) == 44 and all(stoppers.values())
    assert {(to_original[d], w): {(to_original[c], m) for c, m in ms}
            for (d, w), ms in scrambled_stoppers.items()} == \
        {(d, rename(w)): {(c, rename(m)) for c, m in ms} for (d, w), ms in stoppers.items()}


@pytest.mark.parametrize("game,line", [("connectFour", 4), ("ticTacToe", 3), ("nineBoardTicTacToe", 3)])
def test_where_any_move_may_end_the_game_the_candidates_are_narrowed(game, line):
    """Any mark or disc may complete a line, so every one is a candidate, narrowed in each
    state by terminal's conditions over the fluents: here the lines, each of ``line``
    fluents of one role's marks."""
    e = load_engine(read_rules_file(GAMES / f"{game}.kif"), engine="compiled")
    c = candidates(e.game)
    for r in range(len(e.roles)):
        assert c[r].sum() > D.MAX_SHARE * e.game.role_nmoves[r]
    conds, turn_on = D.analyse_terms(e)[3]
    assert conds and all(len(p) == line and not q for p, q in conds)
    assert all(len({f[-1] for f in p}) == 1 for p, _ in conds)      # one role's marks


@pytest.fixture(scope="module")
def connect_four():
    return load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled")


def _state(facts):
    return frozenset(parse_term(f) for f in facts)


# Red three in a row on the bottom row, yellow's two discs on top of red's first two; red to
# move: (drop 4) completes the row, and no other move can end the game.
RED_THREE = ["(control red)", "(disc 1 1 red)", "(disc 2 1 red)", "(disc 3 1 red)",
             "(disc 1 2 yellow)", "(disc 2 2 yellow)"]


def test_the_narrowing_keeps_the_move_that_completes_a_line(connect_four):
    narrowing = D.analyse_terms(connect_four)[3]
    red = _state(RED_THREE)
    assert D.near_moves(narrowing, red, 0) == {parse_term("(drop 4)")}
    assert D.near_moves(narrowing, red, 1) == set()
    assert D.near_moves(narrowing, connect_four.initial_state(), 0) == set()


def _marked(engine, vals):
    """Driver B's narrowing in the state ``vals`` holds: per role, the moves it marks."""
    near = driver_compiled.engine_data(engine).decisive()[3]
    driver_compiled._near(vals, near)
    return [{engine.move_terms[r][m] for m in np.nonzero(near[6][r, :len(engine.move_terms[r])] == near[7][0])[0]}
            for r in range(2)]


@pytest.mark.parametrize("game", ["connectFour", "nineBoardTicTacToe"])
def test_both_drivers_narrow_alike_along_random_games(game):
    """Driver B counts the conditions' fluents only where they changed since its last call,
    and keeps a move only where its rule for the missing fluent holds in the state (the
    disc lands on the missing cell).  Along random games (and jumps between them, as a
    search's playouts make) it marks a subset of the moves driver A's set arithmetic finds,
    and every move that wins at once is marked, in every state."""
    from agent.engine import kernels as K
    e = load_engine(read_rules_file(GAMES / f"{game}.kif"), engine="compiled")
    narrowing = D.analyse_terms(e)[3]
    g = e.game
    vals = K.new_vals(g)
    rng = np.random.default_rng(3)
    wins_seen = fewer = 0
    for _ in range(12):
        s = e.initial_state()
        while not e.is_terminal(s):
            K.load_state(g, e.pack(s), vals)
            wide = [D.near_moves(narrowing, s, r) for r in range(2)]
            marked = _marked(e, vals)
            legal = [e.legal_moves(s, r) for r in range(2)]
            for r in range(2):
                assert marked[r] <= wide[r]
                fewer += len(wide[r] - marked[r])
                for m in legal[r]:
                    joint = [m if i == r else legal[i][0] for i in range(2)]
                    after = e.next_state(s, joint)
                    if e.is_terminal(after) and 100 in e.goal_values(after)[r]:
                        assert m in marked[r], (s, m)
                        wins_seen += 1
            joint = [ms[rng.integers(len(ms))] for ms in legal]
            s = e.next_state(s, joint)
    assert wins_seen > 5
    if game == "connectFour":
        assert fewer > 0       # drops that land below or above the missing cell


def test_a_scrambled_connect_four_has_the_same_conditions(connect_four):
    text = re.sub(r";[^\n]*", "", (GAMES / "connectFour.kif").read_text())
    scr = Scrambler(text, seed=5)
    scrambled = load_engine(parse_rules(scr.text(text)), engine="compiled")
    fwd = scr.forward

    def rename(t):
        return tuple(rename(x) for x in t) if isinstance(t, tuple) else fwd.get(t, t)

    conds, turn_on = D.analyse_terms(connect_four)[3]
    s_conds, s_turn_on = D.analyse_terms(scrambled)[3]
    assert {(frozenset(map(rename, p)), frozenset(map(rename, q))) for p, q in conds} == set(s_conds)
    red = scrambled.roles.index(rename("red"))
    assert D.near_moves((s_conds, s_turn_on), _state([]) | {rename(f) for f in _state(RED_THREE)}, red) == \
        {rename(parse_term("(drop 4)"))}


def test_the_mark_that_sends_the_opponent_elsewhere_stops_a_win():
    """nineBoard's board to play on is a fluent no frame axiom keeps: the last mark sets it.
    So any mark of the other player may stop a win, not only one on the winning cell."""
    e = load_engine(read_rules_file(GAMES / "nineBoardTicTacToe.kif"), engine="compiled")
    _, stoppers, _, _ = D.analyse_terms(e)
    for (d, w), ms in stoppers.items():
        assert len({m for c, m in ms if c != d}) > 9, (w, len(ms))


# Yellow to move; red threatens (drop 4), which completes its bottom row.
RED_THREAT = ["(control yellow)", "(disc 1 1 red)", "(disc 2 1 red)", "(disc 3 1 red)",
              "(disc 1 2 yellow)", "(disc 2 2 yellow)", "(disc 5 1 red)"]


@pytest.mark.parametrize("driver", [driver_compiled, driver_sm])
def test_a_connect_four_playout_takes_the_win(connect_four, driver, monkeypatch):
    """Each of yellow's seven moves searched once (one playout each, from red to move): after
    any move but the block, red's playout takes its win, so each is worth 0 to yellow, on
    every seed; without decisive moves red's random first move misses the win most times."""
    state = _state(RED_THREAT)

    def others_q():
        qs = []
        for seed in range(6):
            r = driver.search(connect_four, state, 1, load_persona("tournament"),
                              SearchSettings(seed=seed, limit=7, solver=False))
            qs += [q for m, q in zip(r.moves, r.q) if render(m) != "(drop 4)"]
        return qs

    assert all(q == 0 for q in others_q())
    monkeypatch.setattr(D, "candidates", lambda g: np.zeros((int(g.n_roles), 1), np.uint8))
    driver_compiled.engine_data(connect_four)._decisive = None      # (cached per engine)
    q_off = others_q()
    driver_compiled.engine_data(connect_four)._decisive = None
    assert np.mean(q_off) > 10, q_off


# White to move, no white piece near row 8 or near black's runner on (5, 2), which wins from
# there whatever white does: each of its three moves onto row 1 ends the game.
RUNNER = ["(control white)", "(pawn 1 3 white)", "(pawn 8 3 white)",
          "(pawn 5 2 black)", "(pawn 1 8 black)"]


def _root_q(driver, engine, seed):
    state = frozenset(parse_term(f) for f in RUNNER)
    r = driver.search(engine, state, 0, load_persona("tournament"),
                      SearchSettings(seed=seed, limit=400, solver=False))
    return dict(zip((render(m) for m in r.moves), r.q))


@pytest.mark.parametrize("driver", [driver_compiled, driver_sm])
def test_a_playout_takes_the_win_its_mover_has(breakthrough, driver, monkeypatch):
    """With decisive moves every playout after white's move ends in black's win, so white's
    every move is worth 0; with them off (no candidates) random playouts miss the win
    often enough that some white move is worth more.  Both drivers alike."""
    q = _root_q(driver, breakthrough, 1)
    assert q and all(v == 0 for v in q.values()), q

    monkeypatch.setattr(D, "candidates", lambda g: np.zeros((int(g.n_roles), 1), np.uint8))
    driver_compiled.engine_data(breakthrough)._decisive = None      # (cached per engine)
    q_off = _root_q(driver, breakthrough, 1)
    assert max(q_off.values()) > 0, q_off
    driver_compiled.engine_data(breakthrough)._decisive = None


def test_thesis_search_takes_no_shortcut(breakthrough):
    """Thesis mode (fitting, spec 2.8) plays uniform or MAST playouts only."""
    from agent.search.params import P_DECISIVE, build
    p, _ = build(load_persona("tournament"), 2, 0, thesis=True)
    assert p[P_DECISIVE] == 0
    p, _ = build(load_persona("tournament"), 2, 0)
    assert p[P_DECISIVE] == 1



# White to move: its runner on (5, 7) wins at once (three moves the tree finds); its two quiet
# moves, (1, 1) forward, leave black one reply that stops the runner, the capture
# (4, 8) -> (5, 7), after which black's runner on (8, 3) is two moves from home and white's
# last piece six.
THREAT = ["(control white)", "(pawn 5 7 white)", "(pawn 1 1 white)", "(pawn 4 8 black)", "(pawn 8 3 black)"]


def _quiet_q(driver, engine, seeds=range(8)):
    """White's mean Q of its quiet moves, each searched once (one playout: five simulations
    for five root moves), over a few seeds."""
    state = frozenset(parse_term(f) for f in THREAT)
    qs = []
    for seed in seeds:
        r = driver.search(engine, state, 0, load_persona("tournament"),
                          SearchSettings(seed=seed, limit=5, solver=False))
        qs += [q for m, q in zip(r.moves, r.q) if m[2] == "1"]
    return float(np.mean(qs))


@pytest.mark.parametrize("driver", [driver_compiled, driver_sm])
def test_a_playout_stops_the_win_it_lets_through(breakthrough, driver):
    """Anti-decisive moves: black's playout move that lets white's runner win is replaced by
    the capture (a move the rules say may stop it), and black's own runner then wins most
    races (24.75 on these seeds, against 92.8 without the rescue)."""
    assert _quiet_q(driver, breakthrough) < 40


def test_without_the_rescue_the_runner_gets_through(breakthrough, monkeypatch):
    """The same searches with the rescue off (a win is only taken): black's random reply
    lets white's runner through five times in six.  (Driver B's rescue is compiled in; both
    drivers search alike, test_search_playout_loop.py.)"""
    monkeypatch.setattr(driver_sm._Ctx, "rescue", lambda self, before, d, win: None)
    assert _quiet_q(driver_sm, breakthrough) > 60


def test_the_stoppers_of_a_win_come_from_the_rules(breakthrough):
    """The moves that may stop white's (5, 7) -> (5, 8): black's captures onto (5, 7) among
    them, and few of black's 155 moves in all."""
    rows, stops, _ = analyse(breakthrough.game)
    w = breakthrough.move_terms[0].index(parse_term("(step 5 7 5 8)"))
    mine = {render(breakthrough.move_terms[1][k]) for k in np.nonzero(stops[rows[0, w], 1])[0]}
    assert {"(step 4 8 5 7)", "(step 6 8 5 7)"} <= mine and len(mine) <= 10, mine


def test_a_game_with_too_many_completing_moves_is_not_narrowed(monkeypatch):
    """The narrowing's analysis runs in the start clock: past ``MAX_NARROWED`` moves that may
    complete a condition (a chess endgame has 1,724) the game gets no candidates at all."""
    monkeypatch.setattr(D, "MAX_NARROWED", 10)
    e = load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled")   # 14 such moves
    assert D.conditions(e.game) is None and not candidates(e.game).any()


# Yellow to move; red's three on row 2 (columns 1-3) wait for (4, 2), which a drop in column
# 4 reaches only once (4, 1) is filled: a yellow disc there gives red the win.
UNDER_THREAT = ["(control yellow)", "(disc 1 1 yellow)", "(disc 2 1 red)", "(disc 3 1 yellow)",
                "(disc 1 2 red)", "(disc 2 2 red)", "(disc 3 2 red)", "(disc 1 3 yellow)",
                "(disc 2 3 yellow)", "(disc 7 1 red)"]


def test_a_disc_dropped_under_a_threat_is_taken_back(connect_four):
    """Where the candidates are narrowed a move can give a win without any stopper: yellow's
    (drop 4) makes red's (4, 2) reachable, and the only move that may stop red's (drop 4) is
    yellow's own (drop 4).  The rescue then tries yellow's other moves: the first after which
    red has no win replaces it (driver A's; driver B's ``_rescue`` searches alike,
    test_search_playout_loop.py)."""
    e = connect_four
    ctx = driver_sm._Ctx.__new__(driver_sm._Ctx)
    ctx.sm, ctx.R = e, 2
    ctx.win_moves, ctx.stoppers, ctx.best, ctx.narrowing = D.analyse_terms(e)
    s = _state(UNDER_THREAT)
    noop, drop4 = parse_term("noop"), parse_term("(drop 4)")
    after = e.next_state(s, [noop, drop4])
    assert ctx.first_win(after, [drop4, noop], 0) is not None         # red wins at once
    assert {m for c, m in ctx.stoppers[(0, drop4)] if c == 1} == {drop4}
    saved = ctx.rescue((s, [noop, drop4], 1), 0, drop4)
    assert saved is not None and saved[0] != drop4
    red = [e.legal_moves(saved[1], 0), e.legal_moves(saved[1], 1)]
    assert ctx.first_win(saved[1], [red[0][0], red[1][0]], 0) is None

    ctx.narrowing = None        # a game that is not narrowed: the stoppers alone, none left
    assert ctx.rescue((s, [noop, drop4], 1), 0, drop4) is None
