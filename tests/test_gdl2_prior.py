"""The predictive prior (agent.hidden.prior): recorded habits back off from the most specific
context that has data, and a database never makes a move impossible."""
from agent.hidden.prior import FLOOR, MoveFrequencyPrior, UniformPrior

ROLES = ["first", "second", "random"]
HIGH = frozenset({("hand", "first", "high"), ("control", "first")})
LOW = frozenset({("hand", "first", "low"), ("control", "first")})
OTHER = frozenset({("hand", "first", "middle"), ("control", "first")})
LEGAL = ["bet", "check"]


def habit_prior(n: int = 10) -> MoveFrequencyPrior:
    """``first`` bets with the high card and checks with the low one, every time."""
    prior = MoveFrequencyPrior(ROLES)
    for _ in range(n):
        prior.add_match([["bet", "noop", "noop"]], [HIGH])
        prior.add_match([["check", "noop", "noop"]], [LOW])
    return prior


def test_a_habit_that_never_varies_gets_most_of_the_mass_in_its_state():
    prior = habit_prior()
    bet_high = prior.probabilities(None, HIGH, 0, LEGAL, 0)[0]
    bet_low = prior.probabilities(None, LOW, 0, LEGAL, 0)[0]
    # ten observations against ALPHA pseudo-counts: the habit is near certain, yet the
    # other move keeps at least the floor's share
    assert bet_high > 0.85 and bet_low < 0.15
    assert bet_low >= FLOOR / len(LEGAL)
    # the two states' evidence is what tells them apart, not the levels around them
    assert abs(bet_high + bet_low - 1.0) < 1e-9


def test_an_unseen_state_falls_back_to_the_step_and_the_move_counts():
    prior = habit_prior()
    p = prior.probabilities(None, OTHER, 0, LEGAL, 0)
    assert abs(sum(p) - 1.0) < 1e-9
    assert abs(p[0] - 0.5) < 1e-9        # half bets, half checks at this step


def test_a_move_never_recorded_keeps_the_floor_and_random_stays_uniform():
    prior = habit_prior()
    legal = ["bet", "check", "fold"]
    p = prior.probabilities(None, HIGH, 0, legal, 0)
    assert p[2] >= FLOOR / 3 and abs(sum(p) - 1.0) < 1e-9
    assert prior.probabilities(None, HIGH, 2, ["a", "b"], 0) == [0.5, 0.5]
    assert UniformPrior().probabilities(None, HIGH, 0, legal, 0) == [1 / 3] * 3
