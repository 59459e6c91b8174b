"""Search against the predicted opponent (agent.hidden.predicted): with a prior learned from
an opponent's matches, the player best-replies to the predicted moves where the tree is
small, and searches as before where it is not or the prior is uniform."""
from __future__ import annotations

import argparse
import json
import time

import pytest
from dresden import play_match
from gamemanager import ServerProcess, wait_for_record
from test_gdl2_server import assert_nothing_hidden_came_back, chooser_seats

from agent.hidden import predicted
from agent.hidden.belief import Belief
from agent.hidden.prior import MoveFrequencyPrior, UniformPrior, from_folder, view_key
from agent.hidden.search import SAFE, on_belief
from agent.persona import load_persona
from agent.reasoner.prolog import PrologReasoner
from agent.reasoner.statemachine import CachedStateMachine
from agent.search import search
from agent.server.cli import add_arguments, config_from_args
from agent.server.config import ConfigError
from gdl.kif import parse_rules
from gdl.terms import render_spaced

# A bluff: `random` deals the bettor a high or a low card, which only the bettor sees; the
# bettor bets or checks; after a bet the caller (who saw only the bet) calls or folds.
# Checking shows the cards for a small pot (60 with the high card, 40 with the low); a fold
# gives the bettor 75; a call 100 with the high card and 0 with the low.
BLUFF = """
(role random) (role bettor) (role caller)
(init (phase deal))
(card hi) (card lo)
(<= (legal random (deal ?c)) (true (phase deal)) (card ?c))
(<= (legal random noop) (not (true (phase deal))))
(<= (legal bettor noop) (not (true (phase bet))))
(<= (legal bettor bet) (true (phase bet)))
(<= (legal bettor check) (true (phase bet)))
(<= (legal caller noop) (not (true (phase respond))))
(<= (legal caller call) (true (phase respond)))
(<= (legal caller fold) (true (phase respond)))
(<= (next (holds ?c)) (does random (deal ?c)))
(<= (next (holds ?c)) (true (holds ?c)))
(<= (next (phase bet)) (true (phase deal)))
(<= (next (phase respond)) (true (phase bet)) (does bettor bet))
(<= (next (phase done)) (true (phase bet)) (does bettor check))
(<= (next (phase done)) (true (phase respond)))
(<= (next checked) (does bettor check))
(<= (next called) (does caller call))
(<= (next folded) (does caller fold))
(<= (sees bettor (yours ?c)) (does random (deal ?c)))
(<= (sees caller betmade) (does bettor bet))
(<= terminal (true (phase done)))
(<= (goal bettor 75) (true folded))
(<= (goal bettor 100) (true called) (true (holds hi)))
(<= (goal bettor 0) (true called) (true (holds lo)))
(<= (goal bettor 60) (true checked) (true (holds hi)))
(<= (goal bettor 40) (true checked) (true (holds lo)))
(<= (goal caller 25) (true folded))
(<= (goal caller 0) (true called) (true (holds hi)))
(<= (goal caller 100) (true called) (true (holds lo)))
(<= (goal caller 40) (true checked) (true (holds hi)))
(<= (goal caller 60) (true checked) (true (holds lo)))
"""
BETTOR = 1


@pytest.fixture(scope="module")
def bluff():
    sm = CachedStateMachine(PrologReasoner(parse_rules(BLUFF)))
    yield sm
    sm.close()


def recorded(sm, prior, card: str, joints_after_deal: list) -> None:
    """One whole record into ``prior``, as a host keeps it: moves, states, every role's
    percepts (what the prior's levels read)."""
    state = sm.initial_state()
    deal = next(m for m in sm.legal_moves(state, 0) if card in str(m))
    joints = [(deal, "noop", "noop")] + list(joints_after_deal)
    states, percepts = [], [[] for _ in sm.roles]
    for joint in joints:
        states.append(state)
        for i in range(len(sm.roles)):
            percepts[i].append(sorted(render_spaced(p) for p in sm.sees(state, joint, i)))
        state = sm.next_state(state, joint)
    prior.add_match([[render_spaced(m) for m in j] for j in joints], states, percepts)


def folding_caller(sm, n: int) -> MoveFrequencyPrior:
    """A database of ``n`` matches in which the caller folded to every bet."""
    prior = MoveFrequencyPrior(sm.roles, source=f"{n} matches of a caller who folds")
    for k in range(n):
        recorded(sm, prior, "hi" if k % 2 else "lo", [("noop", "bet", "noop"), ("noop", "noop", "fold")])
    return prior


def dealt_low(sm, prior):
    """The bettor's belief after the deal of the low card (which it sees)."""
    belief = Belief(sm, BETTOR, prior)
    s0 = sm.initial_state()
    deal = next(m for m in sm.legal_moves(s0, 0) if "lo" in str(m))
    joint = (deal, "noop", "noop")
    belief.observe("noop", sm.sees(s0, joint, BETTOR))
    return belief


def test_a_caller_predicted_to_fold_is_bluffed_where_the_bluff_is_safe(bluff):
    """With the low card, a caller who sees everything calls a bet (0 for us), so the
    determinised ensemble checks (40); the records say this caller folds to every bet
    (75 for us).  Against the prediction alone the player would bet; as a safe exploit it
    does so only where the ensemble values the bluff within ``SAFE`` of its best: not at
    40 points of risk, yes where checking the low card is worth only 5."""
    persona = load_persona("tournament")
    prior = folding_caller(bluff, 20)
    belief = dealt_low(bluff, prior)
    legal = belief.legal()
    assert sorted(map(str, legal)) == ["bet", "check"]
    r = on_belief(bluff, belief.distribution(), BETTOR, legal, persona, prior, 1, seed=0,
                  deadline=time.monotonic() + 30, search_fn=search, limit=400, histories=belief.histories())
    assert r["method"] == "predicted"
    predicted_q = dict(zip(r["moves"], r["predicted_q"]))
    # the floor keeps a call possible: 0.1 of the mass spread over both answers, so a call is 5 %
    assert predicted_q["check"] == pytest.approx(40.0)
    assert 60.0 < predicted_q["bet"] < 75.0
    ensemble_q = dict(zip(r["moves"], r["q"]))
    assert ensemble_q["bet"] < ensemble_q["check"] - SAFE * 100
    assert r["move"] == "check"

    # checking the low card is worth 5: the bluff risks 5 by the ensemble's count, and is made
    tight = CachedStateMachine(PrologReasoner(parse_rules(
        BLUFF.replace("(goal bettor 40)", "(goal bettor 5)").replace("(goal caller 60)", "(goal caller 95)"))))
    try:
        prior = folding_caller(tight, 20)
        belief = dealt_low(tight, prior)
        reported = []
        r = on_belief(tight, belief.distribution(), BETTOR, legal, persona, prior, 1, seed=0,
                      deadline=time.monotonic() + 30, search_fn=search, limit=400, histories=belief.histories(),
                      on_best=lambda move, sims: reported.append((move, sims)))
        assert r["method"] == "predicted" and r["move"] == "bet"
        # the best so far (what a server sends when the decision comes late) is the exploit's
        # pick after each searched state, not the ensemble's own best
        assert reported and all(move == "bet" and sims > 0 for move, sims in reported), reported
        assert reported[-1][1] == r["simulations"]
    finally:
        tight.close()

    # the same position with no database: the ensemble alone
    uniform = dealt_low(bluff, UniformPrior())
    r = on_belief(bluff, uniform.distribution(), BETTOR, legal, persona, UniformPrior(), 1, seed=0,
                  deadline=time.monotonic() + 30, search_fn=search, limit=400)
    assert r["method"] == "ensemble"
    assert r["move"] == "check"


def test_a_tree_too_large_for_the_budget_is_searched_as_before(bluff):
    prior = folding_caller(bluff, 5)
    belief = dealt_low(bluff, prior)
    legal = belief.legal()
    assert predicted.values(bluff, belief.distribution(), BETTOR, legal, prior, 1,
                            deadline=time.monotonic() + 30, seed=0, nodes=1) is None
    # the persona's simulations bound the exact search too: one state's worth is not enough
    r = on_belief(bluff, belief.distribution(), BETTOR, legal, load_persona("tournament"), prior, 1,
                  seed=0, deadline=time.monotonic() + 30, search_fn=search, limit=1)
    assert r["method"] == "ensemble" and r["move"] in legal


def test_random_stays_uniform_whatever_the_records_say(bluff):
    """The deal is chance: a database in which every deal was low must not make the
    bettor's (unseen, for the caller) card low in the search."""
    prior = MoveFrequencyPrior(bluff.roles)
    for _ in range(30):
        prior.add_match([("(deal lo)", "noop", "noop"), ("noop", "bet", "noop"), ("noop", "noop", "call")])
    s0 = bluff.initial_state()
    legal = bluff.legal_moves(s0, 0)
    assert prior.probabilities(bluff, s0, 0, legal, 0) == [0.5, 0.5]


# ------------------------------------------------------------------ a database on disk
def write_records(folder, rules_text: str, matches: list) -> None:
    """Host records (every role's moves) as `ggp-persona match` writes them: the rules as sent."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, moves in enumerate(matches):
        record = {"matchId": f"db.{k}", "x-rules": rules_text, "moves": [list(jm) for jm in moves],
                  "x-gdl2": True, "x-players": [{"name": "chance"}, {"name": "b"}, {"name": "c"}]}
        (folder / f"db.{k}.json").write_text(json.dumps(record))


FOLDS = [("(deal lo)", "noop", "noop"), ("noop", "bet", "noop"), ("noop", "noop", "fold")]


def test_a_folder_of_records_is_a_database_of_the_same_rules_only(tmp_path, bluff):
    desc = parse_rules(BLUFF)
    # the rules as a manager sends them: one list, upper case, other spacing
    write_records(tmp_path / "db", "(" + " ".join(BLUFF.split()).upper() + ")", [FOLDS] * 4)
    write_records(tmp_path / "db" / "other", "((role a) (init p) (<= terminal (true p)))", [[("x",)]])
    (tmp_path / "db" / "view.json").write_text(json.dumps(
        {"x-role": "caller", "x-rules": "(" + BLUFF + ")", "moves": [list(jm) for jm in FOLDS]}))
    (tmp_path / "db" / "broken.json").write_text("{ not json")
    prior, notes = from_folder(tmp_path / "db", desc, desc.roles)
    assert prior is not None and prior.matches == 4, notes
    assert "4 whole records" in notes[0] and "1 unreadable or partial skipped" in notes[0], notes
    s = bluff.initial_state()
    belief = dealt_low(bluff, prior)
    respond = bluff.next_state(belief.most_likely(), ("noop", "bet", "noop"))
    fold = prior.probabilities(bluff, respond, 2, bluff.legal_moves(respond, 2), 2)
    assert max(fold) > 0.8
    assert prior.probabilities(bluff, s, 0, bluff.legal_moves(s, 0), 0) == [0.5, 0.5]
    # no record of these rules: uniform, said
    none, notes = from_folder(tmp_path / "db" / "other", desc, desc.roles)
    assert none is None and "0 whole records" in notes[0]
    none, notes = from_folder(tmp_path / "missing", desc, desc.roles)
    assert none is None


def test_the_server_option_names_a_folder(tmp_path):
    ap = argparse.ArgumentParser()
    add_arguments(ap)
    with pytest.raises(ConfigError, match="not a folder"):
        config_from_args(ap.parse_args(["--gdl2-records", str(tmp_path / "nowhere")]))
    assert config_from_args(ap.parse_args(["--gdl2-records", str(tmp_path)])).gdl2_records == tmp_path


def test_a_server_given_records_predicts_in_a_gdl2_match(tmp_path, shared_dir):
    """Through HTTP as Dresden's manager plays: the server's player reads the matches of the
    same rules from --gdl2-records, samples and searches with them, says so in each
    decision's record, and its replies still name nothing it was not shown."""
    sheet = shared_dir / "corpus" / "gdl2" / "kuhn_poker.kif"
    # the rules as a runner's record keeps them (as sent: no comments), in lower case where
    # this manager sends upper case
    text = " ".join(line.split(";")[0] for line in sheet.read_text(encoding="utf-8").splitlines())
    (tmp_path / "db").mkdir()
    for k in range(40):   # as the runner records them: every role's moves and percepts
        played = play_match(None, sheet, {}, f"db.{k}", seed=100 + k)
        record = {"x-rules": "(" + text + ")", "x-gdl2": True,
                  "moves": [[render_spaced(m) for m in jm] for jm in played.joint_moves],
                  "x-percepts": [[sorted(render_spaced(p) for p in step[i]) for step in played.percepts]
                                 for i in range(len(played.percepts[0]))]}
        (tmp_path / "db" / f"db.{k}.json").write_text(json.dumps(record))
    seat = chooser_seats(sheet)[1]
    # a persona with a simulation limit decides long before the clock: the one searched
    # decision of this seat is then never a late reply's best-so-far on a loaded CI host
    with ServerProcess(tmp_path / "logs", "--seed", "5", "--persona", "champion",
                       "--gdl2-records", str(tmp_path / "db")) as server:
        played = play_match(server, sheet, {seat: server}, "g2.db", start=20, play=5, seed=3)
        assert not played.errors, played.errors
        d = wait_for_record(server, "g2.db")
        assert server.alive(), server.log_text()
    beliefs = [x["belief"] for x in d["x-decisions"] if x.get("belief")]
    assert beliefs, d["x-decisions"]
    for b in beliefs:
        assert b["sampling"] == "predictive" and b["matches"] == 40, b
    assert {b["method"] for b in beliefs if b.get("method")} <= {"predicted", "ensemble"}
    assert any(b.get("method") == "predicted" for b in beliefs), beliefs
    assert_nothing_hidden_came_back(played, seat)


# A guess in the dark: `random` deals a card no one sees; we take 60 at once, or play on and
# name the card (100 if right, 0 if not) without ever seeing it.
GUESS = """
(role random) (role me)
(init (phase deal))
(card hi) (card lo)
(<= (legal random (deal ?c)) (true (phase deal)) (card ?c))
(<= (legal random noop) (not (true (phase deal))))
(<= (legal me noop) (true (phase deal)))
(<= (legal me play) (true (phase first)))
(<= (legal me safe) (true (phase first)))
(<= (legal me (guess ?c)) (true (phase second)) (card ?c))
(<= (next (holds ?c)) (does random (deal ?c)))
(<= (next (holds ?c)) (true (holds ?c)))
(<= (next (phase first)) (true (phase deal)))
(<= (next (phase second)) (does me play))
(<= (next (phase done)) (does me safe))
(<= (next (phase done)) (true (phase second)))
(<= (next right) (does me (guess ?c)) (true (holds ?c)))
(<= (next safe) (does me safe))
(<= terminal (true (phase done)))
(<= (goal me 100) (true right))
(<= (goal me 60) (true safe))
(<= (goal me 0) (not (true right)) (not (true safe)))
"""


def test_our_later_moves_are_chosen_without_the_hidden_card():
    """Valued state by state, playing on is worth 100 (in each dealt state we would name
    the card); we will not see it, so it is worth 50, less than 60 at once.  The search
    chooses our later moves once for the states we cannot tell apart."""
    sm = CachedStateMachine(PrologReasoner(parse_rules(GUESS)))
    try:
        prior = MoveFrequencyPrior(sm.roles)
        s0 = sm.initial_state()
        dealt = [(sm.next_state(s0, (deal, "noop")), 0.5) for deal in sm.legal_moves(s0, 0)]
        assert len(dealt) == 2 and all(sm.sees(s0, (deal, "noop"), 1) == frozenset()
                                       for deal in sm.legal_moves(s0, 0))
        legal = sm.legal_moves(dealt[0][0], 1)
        r = predicted.values(sm, dealt, 1, legal, prior, 1, deadline=time.monotonic() + 30, seed=0)
        q = {str(m): v for m, v in zip(r["moves"], r["q"])}
        assert q == pytest.approx({"play": 50.0, "safe": 60.0})
        assert r["move"] == "safe"
    finally:
        sm.close()


def test_a_player_is_predicted_on_what_it_saw_not_on_the_hidden_state(bluff):
    """Records where the caller folded to the high card's bets and called the low card's:
    it never saw the card, so on its view (a bet was made) the prediction is even, while in
    exactly the high card's state it is a fold."""
    prior = MoveFrequencyPrior(bluff.roles)
    s0 = bluff.initial_state()
    for card, answer in [("hi", "fold")] * 6 + [("lo", "call")] * 6:
        deal = next(m for m in bluff.legal_moves(s0, 0) if card in str(m))
        s1 = bluff.next_state(s0, (deal, "noop", "noop"))
        s2 = bluff.next_state(s1, ("noop", "bet", "noop"))
        joints = [(deal, "noop", "noop"), ("noop", "bet", "noop"), ("noop", "noop", answer)]
        states = [s0, s1, s2]
        percepts = [[sorted(render_spaced(p) for p in bluff.sees(s, j, i)) for s, j in zip(states, joints)]
                    for i in range(3)]
        prior.add_match([[render_spaced(m) for m in j] for j in joints], states, percepts)
    hi = bluff.next_state(s0, (next(m for m in bluff.legal_moves(s0, 0) if "hi" in str(m)), "noop", "noop"))
    facing = bluff.next_state(hi, ("noop", "bet", "noop"))
    legal = bluff.legal_moves(facing, 2)
    fold = [str(m) for m in legal].index("fold")
    by_state = prior.probabilities(bluff, facing, 2, legal, 2)
    view = view_key(view_key("", "noop", []), "noop", ["betmade"])
    by_view = prior.probabilities(bluff, facing, 2, legal, 2, view=view)
    assert by_state[fold] > 0.8
    assert by_view[fold] == pytest.approx(0.5, abs=0.05)


def test_no_best_reply_to_a_situation_the_database_never_saw(bluff):
    """A database where the bettor always checked: the caller was never seen facing a bet,
    so what it would do there is only the step's average; the search against the
    prediction declines and the ensemble decides."""
    prior = MoveFrequencyPrior(bluff.roles)
    for k in range(10):
        recorded(bluff, prior, "hi" if k % 2 else "lo", [("noop", "check", "noop")])
    belief = dealt_low(bluff, prior)
    r = on_belief(bluff, belief.distribution(), BETTOR, belief.legal(), load_persona("tournament"), prior, 1,
                  seed=0, deadline=time.monotonic() + 30, search_fn=search, limit=400,
                  histories=belief.histories())
    assert r["method"] == "ensemble"
