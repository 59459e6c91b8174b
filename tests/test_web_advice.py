"""Advice that says when it does not know (agent/web/confidence.py, work.advice): moves the
search cannot tell apart are said to be so and not ranked, and every move is named as the
page's buttons name it."""
from pathlib import Path

from agent.persona import PERSONA_DIR
from agent.reasoner.prolog import PrologReasoner
from agent.web import boardview as bv
from agent.web import confidence, work
from gdl.kif import parse_rules
from gdl.terms import render, render_spaced

GAMES = Path(__file__).resolve().parent.parent / "games"


def test_intervals_narrow_with_simulations_and_never_vanish():
    few, many = confidence.half_width(50, 10, 0, 100), confidence.half_width(50, 1000, 0, 100)
    assert few > 25 > many > 2
    assert confidence.half_width(100, 10, 0, 100) > 5        # 10 wins of 10 is not certainty
    assert confidence.half_width(1, 10, 0, 1) == confidence.half_width(100, 10, 0, 100) / 100
    assert confidence.half_width(40, 0, 0, 100) is None       # never tried


def test_moves_within_noise_are_one_group_and_a_clear_best_stands_alone():
    # 9-20 simulations each and values 10 apart: nothing told apart
    pm, tied = confidence.judge([55, 50, 45, 30], [20, 12, 9, 0], 0, 0, 100)
    assert tied == {0, 1, 2} and pm[3] is None
    text = confidence.verdict(["a", "b", "c"], 1, 4, (20, 12, 9))
    assert "too few simulations to tell these moves apart" in text.lower() and "not ranked" in text
    assert "from 9 to 20 simulations each" in text and "1 move was not tried" in text
    # thousands of simulations and a gap of 30: the best stands alone, nothing to say
    pm, tied = confidence.judge([80, 50, 45], [3000, 2000, 1500], 0, 0, 100)
    assert tied == {0} and confidence.verdict(["a"], 0, 3, (3000,)) is None
    # one simulation at 89 is not better than 963 at 29: it is unknown, in the choice's group
    pm, tied = confidence.judge([28.7, 89.2, 0.0, 31.3], [963, 1, 1, 32], 0, 0, 100)
    assert tied == {0, 1, 2, 3}
    # a proven value has no error
    pm, tied = confidence.judge([100, 60], [30, 30], 0, 0, 100, proven=[100.0, float("nan")])
    assert pm[0] == 0.0 and pm[1] > 0


def test_the_tied_group_is_listed_first_in_label_order():
    rows = [{"label": x} for x in ("c3", "a1", "b2", "d4")]
    got = confidence.rows_in_order(rows, {0, 1, 2}, [0, 1, 2, 3])
    assert [r["label"] for r in got] == ["a1", "b2", "c3", "d4"]


def test_goal_bounds_from_the_rules():
    assert confidence.goal_bounds(parse_rules("(role a) (goal a 0) (<= (goal a 1) (true x))")) == (0.0, 1.0)
    assert confidence.goal_bounds(parse_rules("(role a) (<= (goal a ?v) (true (score ?v)))")) == (0.0, 100.0)


def test_connectfour_advice_with_few_simulations_says_so_and_names_moves_as_the_buttons(tmp_path, monkeypatch):
    # a persona of 12 simulations: the advice of issue 54 (9-20 simulations, equal values)
    champion = (PERSONA_DIR / "champion.toml").read_text()
    few = tmp_path / "few.toml"
    few.write_text(champion.replace("limit = 1000", "limit = 12"))
    text = (GAMES / "connectFour.kif").read_text()
    desc = parse_rules(text, "connectFour")
    sm = PrologReasoner(desc)
    view = bv.build_view(desc, sm, seconds=1)
    st = sm.initial_state()
    # searched on the Prolog reasoner: compiling an engine would take most of the test's time
    monkeypatch.setattr(work, "_engine", lambda text, title, hint=None: (work._machine(text, title)[1], "Prolog"))
    a = work.advice(text, "connectFour", view, [render(f) for f in st], 0, str(few), 30.0)
    assert a["simulations"] <= 12
    tied = [m for m in a["moves"] if m["tied"]]
    assert len(tied) >= 2 and a["uncertain"] and "too few simulations" in a["uncertain"].lower()
    assert [m["label"] for m in tied] == sorted(m["label"] for m in tied)      # not ranked
    assert all(m["pm"] is None or m["pm"] > 10 for m in a["moves"])
    # one labelling: the advice says what the buttons say ("column 5", never "drop 5")
    legal = [render_spaced(m) for m in sm.legal_moves(st, 0)]
    buttons = {c["move"]: bv.click_label(view, c) for c in bv.click_map(view, sm, st, 0, legal)}
    assert all(buttons[m["move"]] == m["label"] for m in a["moves"])
    assert all(m["label"].startswith("column ") for m in a["moves"]) and a["choice_label"].startswith("column ")
