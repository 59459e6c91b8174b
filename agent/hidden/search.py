"""Search on a belief: determinised ensembles of the persona's own search.

The most likely distinct states of the belief (up to ``SAMPLES``) are each searched as a
perfect-information game by ``agent.search.search`` with the persona's parameters, on an
equal share of the time and of the persona's simulations, so a persona's skill (``limit``)
and style mean the same in a GDL-II game.  The choice pools the searches at the root: a
move's value is the mean of its Q over the states, weighted by the states' probabilities
(Q of a move unvisited in one state: that search's default); moves within ``TIE`` of the
game's goal range (``goal_range``) of the best are drawn among at random.  The terminal solver is off:
``random`` is searched as a role whose goal is constant (its moves are then spread by the
exploration term, as chance), and a proof over it would be a proof against an adversary.

In time at any clock: each search is given its share less what searches have been seen to
return after the time they were given (their set-up, their last simulations, their choice;
``timing``, kept by the player across decisions), a state is searched only while that
leaves it ``MIN_SLICE``, and the compiled driver reads the clock after its first
simulation (a first block of 64 slow battleship simulations overran a slice).

Known weakness of determinisation (Frank and Basin's strategy fusion): in each searched
state every role acts as if it knew everything.
"""
from __future__ import annotations

import random
import time

import numpy as np

from agent.decision import Decision, Situation
from agent.search.common import SearchSettings

from . import predicted

SAMPLES = 8          # distinct states searched per decision, at most
MIN_SLICE = 0.02     # seconds: fewer states when the clock cannot give each this much
TIE = 0.01           # of the game's goal range: pooled values this close count as equal
OVER = 0.01          # seconds a search is assumed to return late until one is measured
OVER_DECAY = 0.75    # a measured lateness is forgotten at this rate per search and decision
OVER_SHARE = 0.25    # of the time to the deadline, at most, kept for the searches' lateness
PREDICTED_SHARE = 0.5  # of the time to the deadline, at most, for the search against the prediction
SAFE = 0.1           # of the game's goal range: how much of the ensemble's value an exploit may give up


def goal_range(description) -> float:
    """The spread of the goal values the rules write (their numbers in goal heads); 100 when
    a goal value is computed (a variable) or none is written.  Q is in the rules' own goal
    points: Dresden's nim gives 0 or 1, and one point of 100 would make every move a tie."""
    values = []
    for r in description.rules:
        h = r.head
        if isinstance(h, tuple) and len(h) == 3 and h[0] == "goal":
            v = h[2]
            if isinstance(v, str) and v.isdigit():
                values.append(int(v))
            else:
                return 100.0
    spread = max(values) - min(values) if values else 0
    return float(spread) if spread > 0 else 100.0


def ensemble(engine, distribution: list, role_index: int, legal: list, persona, *, seed: int,
             deadline: float, search_fn, limit: int | None = None, timing: dict | None = None,
             goal_span: float = 100.0, progress=None) -> dict:
    """Search the most likely states of ``distribution`` ([(state, probability)]) for our
    move among ``legal`` until ``deadline`` (monotonic); fields as ``player.result_fields``
    gives them, plus the states searched and their probabilities.  ``timing``: a dict the
    caller keeps between decisions, where the searches' measured lateness (``over``, s) and
    time per simulation (``sim``, s) are learned.  ``progress(q, simulations)``, if given,
    is called after each state's search with the pooled values so far (a server replies
    with the best of them when the whole decision comes too late: on a loaded host the
    last slice can overrun the clock)."""
    timing = timing if timing is not None else {}
    # what was learned, forgotten a little at each decision and never more than a quarter of
    # the time: one stall on a loaded machine (1.3 s at load 30) had later decisions search
    # nothing, and with no search nothing was learned again
    over = min(OVER_DECAY * timing.get("over", OVER / OVER_DECAY), OVER_SHARE * max(0.0, deadline - time.monotonic()))
    left = max(0.0, deadline - time.monotonic() - over)
    # a sampled history that ended already says nothing about our move (the match goes on)
    live = [(st, p) for st, p in distribution[:4 * SAMPLES] if not engine.is_terminal(st)]
    slice_min = max(MIN_SLICE, 2.0 * timing.get("sim", 0.0))   # a slice runs a few simulations
    timing["sim"] = OVER_DECAY * timing.get("sim", 0.0)
    n = max(1, min(SAMPLES, len(live), int(left / slice_min) or 1))
    picked = live[:n]
    if not picked:
        return {"move": legal[0], "moves": legal, "q": [0.0] * len(legal), "visits": [0] * len(legal),
                "simulations": 0, "playouts": 0, "proven_descents": 0, "samples": 0, "sample_mass": 0.0}
    index = {m: i for i, m in enumerate(legal)}
    q_sum = np.zeros(len(legal))
    w_sum = np.zeros(len(legal))
    visits = np.zeros(len(legal), dtype=np.int64)
    sims = playouts = 0
    searched = []
    for k, (state, p) in enumerate(picked):
        t_call = time.monotonic()
        left = deadline - t_call - over
        share = left / (n - k)
        if share <= 0 or (k > 0 and share < MIN_SLICE):
            break   # no time for this state: the states searched so far decide
        per_limit = None if limit is None else max(1, limit // n)
        r = search_fn(engine, state, role_index, persona,
                      SearchSettings(seed=seed + k, limit=per_limit, seconds=share, solver=False))
        # how late this search came back; the next slices leave room for as much
        took = time.monotonic() - t_call
        over = min(max(took - share, OVER_DECAY * over, 0.001), OVER_SHARE * max(0.0, deadline - t_call))
        if int(r.simulations) > 0:
            timing["sim"] = took / int(r.simulations)
        sims += int(r.simulations)
        playouts += int(getattr(r, "playouts", 0))
        searched.append(p)
        for m, q, v in zip(r.moves, r.q, r.visits):
            i = index.get(m)
            if i is None:      # a move legal in this sample only: not ours to play
                continue
            q_sum[i] += p * float(q)
            w_sum[i] += p
            visits[i] += int(v)
        if progress is not None:
            progress([float(x) for x in _pooled(q_sum, w_sum)], sims)
    timing["over"] = over
    q = _pooled(q_sum, w_sum)
    # pooled Q first (a vote ignores by how much a move wins in each state).  Moves within
    # TIE of the best are drawn among at random: where hidden moves are simultaneous
    # (rock-paper-scissors) a fixed pick among equals is a habit an opponent can read.
    top = float(q.max())
    near = [i for i in range(len(legal)) if q[i] >= top - TIE * goal_span]
    best = near[0] if len(near) == 1 else random.Random(seed).choice(near)
    return {"move": legal[best], "moves": legal, "q": [float(x) for x in q],
            "visits": [int(v) for v in visits], "simulations": sims, "playouts": playouts,
            "proven_descents": 0, "samples": len(searched),
            "sample_mass": round(float(sum(searched)), 4)}


def _pooled(q_sum, w_sum):
    """Each move's value pooled over the searched states by probability; -1 for a move no
    searched state had."""
    return np.where(w_sum > 0, q_sum / np.maximum(w_sum, 1e-12), -1.0)


def on_belief(engine, distribution: list, role_index: int, legal: list, persona, prior, step: int, *,
              seed: int, deadline: float, search_fn, limit: int | None = None,
              timing: dict | None = None, goal_span: float = 100.0, histories: dict | None = None,
              on_best=None) -> dict:
    """Our move on the belief, as every GDL-II player of ours decides it: against the
    predicted opponent (``predicted``) where the prior was learned from an opponent's
    matches and the trees from the sampled states fit (as many states as the persona's
    simulations, ``limit``, and half the time), else the determinised ensemble of the
    persona's search.  ``step``: joint moves made so far; ``histories``: ``Belief.histories``
    (the opponents are then predicted on their views).  The fields say which (``method``).

    The reply to the prediction is a safe exploit: the ensemble, whose opponents see
    everything and play their best, searches too, and the prediction chooses only among the
    moves the ensemble values within ``SAFE`` of its best.  A database of another player
    (Dockhorn's caveat) then costs little: in minipoker a scripted caller's records said the
    persona would resign, and the bluffer held red cards into its calls (0.215 on that seat
    against the uniform player, the ensemble alone).  The moves the ensemble rates a clear
    loss are never played on the prediction's word.  ``on_best(move, simulations)``: the best
    move so far, after each of the ensemble's searches."""
    exploit = None
    if getattr(prior, "kind", "") == "predictive":
        now = time.monotonic()
        exploit = predicted.values(engine, distribution, role_index, legal, prior, step,
                                   deadline=now + PREDICTED_SHARE * max(0.0, deadline - now), seed=seed,
                                   goal_span=goal_span, histories=histories,
                                   nodes=predicted.NODES if limit is None else min(predicted.NODES, limit))
    def choice(q: list) -> int:
        """The move the prediction picks among those the ensemble's values ``q`` call safe."""
        safe = [i for i, v in enumerate(q) if v >= max(q) - SAFE * goal_span]
        return max(safe, key=lambda i: (exploit["q"][i], q[i]))

    report = None
    if on_best is not None:
        def report(q, sims):
            on_best(legal[choice(q) if exploit is not None else int(np.argmax(q))], sims)
    fields = ensemble(engine, distribution, role_index, legal, persona, seed=seed, deadline=deadline,
                      search_fn=search_fn, limit=limit, timing=timing, goal_span=goal_span, progress=report)
    fields["method"] = "ensemble"
    if exploit is None:
        return fields
    return {**fields, "move": legal[choice(fields["q"])], "method": "predicted", "predicted_q": exploit["q"],
            "predicted_states": exploit["simulations"]}


class BeliefDecider:
    """The GDL-II player's decider (``agent.decision``): it decides on ``belief``, not on the
    situation's state (the belief's most likely one, which the player keeps for records and
    fallbacks), through ``on_belief``.  ``timing`` is the player's, kept across decisions."""

    def __init__(self, engine, belief, persona, prior, search_fn, *, timing: dict, goal_span: float):
        self.engine, self.belief, self.persona, self.prior = engine, belief, persona, prior
        self.search_fn, self.timing, self.goal_span = search_fn, timing, goal_span

    def decide(self, situation: Situation, on_best=None) -> Decision:
        if on_best is not None:   # a fallback before any search: not always the first move
            on_best(random.Random(situation.seed).choice(situation.legal), 0)
        fields = on_belief(self.engine, self.belief.distribution(), situation.role, situation.legal,
                           self.persona, self.prior, len(self.belief.steps), seed=situation.seed,
                           deadline=situation.deadline, search_fn=self.search_fn, limit=self.persona.limit,
                           timing=self.timing, goal_span=self.goal_span, histories=self.belief.histories(),
                           on_best=on_best)
        if on_best is not None:
            on_best(fields["move"], fields["simulations"])
        return Decision.of(fields)
