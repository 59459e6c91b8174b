"""Histories mended where they went wrong: the belief's move step (resample-move).

A particle filter over whole histories loses its variety where a hidden choice is revealed
only much later: battleship's fleets are placed in the first steps and the shots that hit
or miss them come tens of steps after, so the placements drawn at the start die one by one,
resampling copies the few left (one distinct state by the 13th step of a random match), and
when the last one is contradicted a rebuild from the initial state must find five ships
anew in a tree it searches depth first (it found none in 4.5 s from step 16 to step 88 of
that match: the belief was lenient for 73 of 97 steps).

Mending is local instead (the *move* of Gilks and Berzuini's resample-move filter, 2001):
take a history that fits the steps before ``upto``, change the other roles' joint move at
one earlier step ``j`` to another that gives the same percepts there, and replay the steps
after ``j`` keeping each recorded joint move where it is still legal and still gives our
percepts, else choosing another that does.  A result that fits every step before ``upto``
is taken; one that fits more steps than the history it came from is mended again.  The step to change and the move to change it to are drawn at random, except
that moves whose next state holds the arguments of the percepts that went wrong (a hit at
cell 3 4 and a ship placed over 3 4) come first: structure only, no symbol means anything.

The mended histories are taken as the belief's samples with equal weight: a heuristic
draw (not an exact Metropolis step under the prior), which keeps only histories consistent
with everything seen.
"""
from __future__ import annotations

import time

from agent.reasoner.statemachine import ReasonerError

TRIES_PER_STEP = 64    # candidates a replayed step tries when its recorded move no longer fits
TRIES_PER_CHANGE = 6   # other moves replayed per changed step (the best-scored first)


def atoms(t) -> frozenset:
    """The constants in a term and its arguments (a percept's cells, a move's card)."""
    if not isinstance(t, tuple):
        return frozenset((t,))
    out = set()
    for a in t[1:]:
        out |= atoms(a)
    return frozenset(out)


def flat(t) -> tuple:
    """The arguments of a term, flattened in order (a move's cells, a percept's cell)."""
    if not isinstance(t, tuple):
        return ()
    out = []
    for a in t[1:]:
        out.extend(flat(a) if isinstance(a, tuple) else (a,))
    return tuple(out)


def contains_run(seq: tuple, run: tuple) -> bool:
    n = len(run)
    return n > 0 and any(seq[i:i + n] == run for i in range(len(seq) - n + 1))


def named(jm: tuple, seen: list, role_index: int) -> int:
    """How many of the other roles' moves in ``jm`` have all their arguments, in order, in
    one of the percepts ``seen`` (``flat`` of each: a shot at 3 4 and the percept of a shot
    at 3 4): the likeliest explanations of what was just seen."""
    return sum(1 for i, m in enumerate(jm) if i != role_index
               and any(contains_run(a, flat(m)) for a in seen))


def covers(state, nxt, target: frozenset) -> bool:
    """Whether a fact new in ``nxt`` holds every atom of ``target``."""
    return any(target <= atoms(f) for f in nxt - state)


def nearly(state, nxt, target: frozenset) -> bool:
    """Whether a fact new in ``nxt`` holds all but one atom of ``target`` (of three or more):
    the same place with another value, the fact that stands where a percept's must go (a
    ship of the history over the cells where another ship was seen sunk)."""
    return len(target) >= 3 and any(len(target - atoms(f)) == 1 for f in nxt - state)


def score(state, nxt, targets) -> int:
    """How well a step's next state answers ``targets`` (``targets_of``): the percepts it
    should explain that a new fact of it covers, less those it should not, less the places
    it takes from a percept that should be explained."""
    want, avoid = targets or ((), ())
    return (sum(covers(state, nxt, t) for t in want) - sum(covers(state, nxt, t) for t in avoid)
            - sum(nearly(state, nxt, t) and not covers(state, nxt, t) for t in want))


def culprit(state, nxt, targets) -> int:
    """How much a step's next state is to blame for ``targets``: what it wrongly predicted,
    and the places it took from what should be explained."""
    want, avoid = targets or ((), ())
    return (sum(covers(state, nxt, t) for t in avoid)
            + sum(nearly(state, nxt, t) and not covers(state, nxt, t) for t in want))


def targets_of(percepts: frozenset, predicted: frozenset) -> tuple:
    """(want, avoid): the atom sets of the percepts a history failed to predict and of those
    it predicted wrongly, each with at least two atoms (a bare turn marker says nothing about
    where).  A hit at a cell the history had empty wants a ship there; a hit it expected at
    a cell found empty wants its ship elsewhere."""
    def sets(ps):
        return [a for a in (atoms(t) for t in ps) if len(a) >= 2]
    return sets(percepts - predicted), sets(predicted - percepts)


def mend(belief, p, upto: int, rng, deadline: float, targets=None):
    """A history made from particle ``p`` by changing one earlier step where the other roles'
    move was open (``belief.ambiguous``) and replaying the steps after it, as (states, joint
    moves): the first that fits every step before ``upto``, else the one that fits the
    longest run of steps from the start if that is longer than ``p``'s (progress, to mend
    again), else None.  ``p`` fits the steps before its first missed one (all of its own
    when it has none).  ``targets``: ``targets_of`` the step that went wrong, to steer the
    change: the steps whose new facts made a wrong prediction are changed first, to the
    moves ``score`` ranks best."""
    good = p.fits()
    choices = [j for j in range(min(good, upto)) if j in belief.ambiguous]
    rng.shuffle(choices)
    if targets:   # the steps to blame for what went wrong, first
        choices.sort(key=lambda j: -culprit(p.states[j], p.states[j + 1], targets))
    best = None
    for j in choices[:4]:
        if time.monotonic() >= deadline:
            break
        try:
            cands = _alternatives(belief, p.states[j], j, p.joints[j], targets, rng)
        except ReasonerError:
            continue
        for jm, nxt, _ in cands:
            states, joints = _replay(belief, p, j, jm, nxt, upto, rng, deadline, targets)
            if len(joints) == upto:
                return states, joints
            if len(joints) > (len(best[1]) if best else good):
                best = (states, joints)
    return best


def _alternatives(belief, state, j: int, current, targets, rng, at_least: int = 0) -> list:
    """Up to ``TRIES_PER_CHANGE`` other joint moves at step ``j`` giving our percepts there,
    as (joint move, next state, score): with ``targets`` the best ``score`` first (every
    next state is computed to rank them), else in random order.  ``at_least``: only those
    scoring that much."""
    step, sm = belief.steps[j], belief.sm
    cands = [jm for jm, _ in belief._candidates(state, step, j) if jm != current]
    rng.shuffle(cands)
    if targets:
        ranked = sorted(((score(state, n, targets), n, jm) for jm in cands
                         for n in (sm.next_state(state, jm),)),
                        key=lambda c: -c[0])   # stable: ties stay in random order
    else:
        ranked = ((0, None, jm) for jm in cands)
    out = []
    for value, nxt, jm in ranked:
        if value < at_least:
            break
        if sm.sees(state, jm, belief.role_index) != step.percepts:
            continue
        out.append((jm, nxt if nxt is not None else sm.next_state(state, jm), value))
        if len(out) >= TRIES_PER_CHANGE:
            break
    return out


def _replay(belief, p, j: int, jm, nxt, upto: int, rng, deadline: float, targets=None) -> tuple:
    """``p``'s history with ``jm`` at step ``j`` and the later steps replayed towards
    ``upto``, as far as it fits: (states, joint moves).  A later open step whose recorded
    move answers ``targets`` worse than another is steered to that one (a ship moved away
    from where another was seen sunk, and that one placed there)."""
    sm, me = belief.sm, belief.role_index
    states, joints = p.states[:j + 1] + [nxt], p.joints[:j] + [jm]
    try:
        for k in range(j + 1, upto):
            if time.monotonic() >= deadline:
                break
            state, step = states[-1], belief.steps[k]
            if sm.is_terminal(state):
                break
            old = p.joints[k] if k < len(p.joints) else None
            if targets and targets[0] and k in belief.ambiguous:
                better = _alternatives(belief, state, k, None, targets, rng, at_least=1)
                if better and (old is None or better[0][2] > score(state, sm.next_state(state, old), targets)):
                    old = better[0][0]
            chosen = None
            if old is not None and all(m in sm.legal_moves(state, i) for i, m in enumerate(old)) \
                    and sm.sees(state, old, me) == step.percepts:
                chosen = old
            else:
                cands = [c for c, _ in belief._candidates(state, step, k)]
                rng.shuffle(cands)
                for c in cands[:TRIES_PER_STEP]:
                    if sm.sees(state, c, me) == step.percepts:
                        chosen = c
                        break
            if chosen is None:
                break
            after = sm.next_state(state, chosen)
            if step.goes_on and sm.is_terminal(after):
                break
            states.append(after)
            joints.append(chosen)
    except ReasonerError:
        pass
    return states, joints
