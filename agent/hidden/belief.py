"""What one role knows in a GDL-II match, and the complete histories consistent with it.

A role learns, after each joint move, only its percepts (``sees``) and its own move.  The
belief is a bag of *particles*: complete histories from the initial state (every role's
moves, ``random``'s included) whose percepts for our role are exactly the ones received at
every step and whose moves of ours are the ones we made (HyperPlay, Schofield et al. 2012,
written as a sequential importance sampler).

Extending a particle by one step: every joint move the other roles could have made (all of
them when there are at most ``ENUMERATE`` combinations, else a sample of that many drawn
from the prior) is kept when it gives our percepts; one of the kept ones is drawn with
probability proportional to its prior, and the particle's weight is multiplied by the
prior mass of the kept ones (the probability of the observation under the prior, given the
particle's past).  The prior of a move is the ``Prior``'s (``agent.hidden.prior``): uniform
among the legal moves (``random`` always, by GDL-II's semantics), or learned from recorded
matches (predictive determinisation, Dockhorn 2020, chapter 5).

A belief that runs empty (a wrong prior, a manager that replaced our move, rules we read
differently) is rebuilt from the initial state by depth-first search with backtracking
within the time left; when even that finds nothing the belief goes on *lenient*: histories
whose percepts are closest to the received ones (Jaccard), and says so in its notes.  It
never raises for want of a consistent history.
"""
from __future__ import annotations

import itertools
import math
import random
import time
from dataclasses import dataclass, field

from agent.reasoner.statemachine import ReasonerError

ENUMERATE = 256        # joint moves of the other roles tried per particle and step, at most
PARTICLES = 48         # histories kept
RESAMPLE_ESS = 0.5     # resample when the effective sample size falls below this share
UNTIMED = 30.0         # seconds an update without a deadline may take (tests, benchmarks)


@dataclass(frozen=True)
class Step:
    """Our view of one step: our move (None when unknown) and our percepts."""
    own: object
    percepts: frozenset


@dataclass
class Particle:
    states: list                 # s0 .. sk
    joints: list                 # the joint moves between them
    logw: float = 0.0            # log importance weight
    lenient: bool = False        # made while no consistent history was found

    @property
    def state(self):
        return self.states[-1]

    def copy(self) -> "Particle":
        return Particle(list(self.states), list(self.joints), self.logw, self.lenient)


def _jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class Belief:
    sm: object                   # a state machine with ``sees``
    role_index: int
    prior: object                # agent.hidden.prior.Prior
    rng: random.Random = field(default_factory=random.Random)
    size: int = PARTICLES
    steps: list = field(default_factory=list)
    particles: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    lenient: bool = False        # no consistent history is known
    rebuilt: int = 0             # times the bag ran empty and was rebuilt

    def __post_init__(self):
        s0 = self.sm.initial_state()
        self.particles = [Particle([s0], []) for _ in range(self.size)]
        self.n_roles = len(self.sm.roles)

    # ------------------------------------------------------------------ observing
    def observe(self, own, percepts, deadline: float | None = None,
                rebuild_by: float | None = None) -> list:
        """Take one step's view (our move, our percepts) and move every particle on;
        returns notes on anything odd.  ``deadline`` (monotonic) bounds the extension:
        particles not extended by then are dropped (one is always tried).  When none could
        be extended, the bag is rebuilt from the initial state until ``rebuild_by``
        (default: the deadline, or a second after now if that has passed)."""
        step = Step(own, frozenset(percepts))
        self.steps.append(step)
        notes = []
        deadline = deadline if deadline is not None else time.monotonic() + UNTIMED
        alive = []
        for p in self.particles:
            if alive and time.monotonic() >= deadline:
                break
            q = self._extend(p, step, strict=True)
            if q is not None:
                alive.append(q)
        if not alive:
            by = rebuild_by if rebuild_by is not None else max(deadline, time.monotonic() + 1.0)
            found = self._rebuild(time.monotonic() + 0.5 * max(0.0, by - time.monotonic()))
            if not found:   # the manager may have played another move of ours (late, illegal)
                found = self._rebuild(by, free_own=True)
                if found:
                    notes.append("our own move was not always the one we sent (replaced by the "
                                 "manager?): histories with other moves of ours are kept")
            if found:
                self.rebuilt += 1
                self.lenient = False
                notes.append(f"no sampled history explained step {len(self.steps)}: "
                             f"rebuilt from the initial state ({len(found)} histories)")
                alive = found
            else:
                self.lenient = True
                notes.append(f"no history consistent with every percept found by step "
                             f"{len(self.steps)}: sampling the closest ones")
                alive = [q for q in (self._extend(p, step, strict=False) for p in self.particles[:8])
                         if q is not None] or [self._step_any(self.particles[0], step)]
        self.particles = self._resample(alive)
        self.notes += notes
        return notes

    def _per_role(self, state, step: Step, k: int, free_own: bool = False) -> list | None:
        """Per role, (move, prior probability) pairs: ours fixed to our move when it is
        legal there (unknown, or replaced by the manager: any of ours)."""
        per_role = []
        for i in range(self.n_roles):
            legal = self.sm.legal_moves(state, i)
            if not legal:
                return None
            if i == self.role_index:
                mine = [step.own] if step.own in legal and not free_own else legal
                per_role.append([(m, 1.0) for m in mine])
            else:
                probs = self.prior.probabilities(self.sm, state, i, legal, k)
                per_role.append([(m, p) for m, p in zip(legal, probs) if p > 0])
        return per_role

    def _candidates(self, state, step: Step, k: int, free_own: bool = False) -> list:
        """Every (joint move, prior) of the others with ours fixed, when there are at most
        ``ENUMERATE``; else ``ENUMERATE`` distinct draws from the prior."""
        per_role = self._per_role(state, step, k, free_own)
        if not per_role:
            return []
        if math.prod(len(r) for r in per_role) <= ENUMERATE:
            return [(tuple(m for m, _ in combo), math.prod(p for _, p in combo))
                    for combo in itertools.product(*per_role)]
        seen = {}
        for _ in range(ENUMERATE):
            combo = [self.rng.choices(r, weights=[p for _, p in r])[0] for r in per_role]
            seen[tuple(m for m, _ in combo)] = math.prod(p for _, p in combo)
        return list(seen.items())

    def _extend(self, p: Particle, step: Step, strict: bool) -> Particle | None:
        """One step of a particle.  Few joint moves: all are checked, one of those that
        explain the percepts is drawn by prior, and the weight grows by their prior mass
        (exact).  Many: joint moves are drawn from the prior until one explains the
        percepts (a draw from the posterior: rejection sampling), at most ``ENUMERATE``
        draws, and the weight grows by the share of draws accepted (an estimate)."""
        state = p.state
        k = len(p.joints)
        try:
            if self.sm.is_terminal(state):
                return None
            per_role = self._per_role(state, step, k)
            if not per_role:
                return None
            total = math.prod(len(r) for r in per_role)
            if total <= ENUMERATE or not strict:
                cands = self._candidates(state, step, k)
                kept, weights = [], []
                for jm, w in cands:
                    seen = self.sm.sees(state, jm, self.role_index)
                    score = 1.0 if seen == step.percepts else (0.0 if strict else _jaccard(seen, step.percepts))
                    if score > 0:
                        kept.append(jm)
                        weights.append(w * score)
                if not kept:
                    return None
                if not strict:  # lenient: only the closest ones
                    best = max(weights)
                    pairs = [(j, w) for j, w in zip(kept, weights) if w >= best * 0.999]
                    kept, weights = [j for j, _ in pairs], [w for _, w in pairs]
                jm = self.rng.choices(kept, weights=weights)[0]
                gain = sum(weights)
            else:
                jm, tried, checked = None, 0, {}
                while tried < ENUMERATE:
                    tried += 1
                    combo = tuple(self.rng.choices(r, weights=[w for _, w in r])[0][0] for r in per_role)
                    ok = checked.get(combo)
                    if ok is None:
                        ok = checked[combo] = self.sm.sees(state, combo, self.role_index) == step.percepts
                    if ok:
                        jm = combo
                        break
                if jm is None:
                    return None
                gain = 1.0 / tried
            nxt = self.sm.next_state(state, jm)
        except ReasonerError:
            return None
        q = p.copy()
        q.states.append(nxt)
        q.joints.append(jm)
        q.logw += math.log(max(gain, 1e-300))
        q.lenient = q.lenient or not strict
        return q

    def _step_any(self, p: Particle, step: Step) -> Particle:
        """The last resort: any legal joint move with our move in it, so that a state exists."""
        q = p.copy()
        state = p.state
        jm = []
        for i in range(self.n_roles):
            legal = self.sm.legal_moves(state, i) or [None]
            jm.append(step.own if i == self.role_index and step.own in legal else self.rng.choice(legal))
        try:
            q.states.append(self.sm.next_state(state, tuple(jm)))
            q.joints.append(tuple(jm))
        except ReasonerError:
            q.states.append(state)
            q.joints.append(tuple(jm))
        q.lenient = True
        return q

    def _rebuild(self, deadline: float, free_own: bool = False) -> list:
        """Depth-first over whole histories from the initial state, candidates in random
        order, backtracking where no candidate explains a step.  The first history found
        is kept, and the search goes on for more (up to ``size``) until half the time
        left at that moment has passed; [] when none is found by the deadline."""
        s0 = self.sm.initial_state()
        stack = [(Particle([s0], []), None)]   # (particle, remaining candidates at its depth)
        found = []
        while stack and time.monotonic() < deadline and len(found) < self.size:
            p, cands = stack[-1]
            k = len(p.joints)
            if k == len(self.steps):
                found.append(p)
                stack.pop()
                if len(found) == 1:   # enough to play on; more only while they come cheap
                    now = time.monotonic()
                    deadline = now + 0.5 * max(0.0, deadline - now)
                continue
            step = self.steps[k]
            if cands is None:
                try:
                    cands = [(jm, w) for jm, w in self._candidates(p.state, step, k, free_own)
                             if self.sm.sees(p.state, jm, self.role_index) == step.percepts]
                except ReasonerError:
                    cands = []
                self.rng.shuffle(cands)
                stack[-1] = (p, cands)
            if not cands:
                stack.pop()
                continue
            jm, w = cands.pop()
            try:
                nxt = self.sm.next_state(p.state, jm)
            except ReasonerError:
                continue
            q = Particle(p.states + [nxt], p.joints + [jm], p.logw + math.log(max(w, 1e-300)))
            stack.append((q, None))
        return found

    def _resample(self, alive: list) -> list:
        """Back to ``size`` particles: systematic resampling by weight when the weights are
        uneven (or particles were lost), else as they are."""
        m = max(p.logw for p in alive)
        w = [math.exp(p.logw - m) for p in alive]
        total = sum(w)
        ess = total * total / sum(x * x for x in w)
        if len(alive) == self.size and ess >= RESAMPLE_ESS * self.size:
            return alive
        out = []
        step = total / self.size
        u = self.rng.random() * step
        acc, j = w[0], 0
        for _ in range(self.size):
            while u > acc and j < len(alive) - 1:
                j += 1
                acc += w[j]
            q = alive[j].copy()
            q.logw = 0.0
            out.append(q)
            u += step
        return out

    # ------------------------------------------------------------------ reading
    def distribution(self) -> list:
        """[(state, probability)] over the distinct current states, most likely first."""
        m = max(p.logw for p in self.particles)
        acc: dict = {}
        for p in self.particles:
            acc[p.state] = acc.get(p.state, 0.0) + math.exp(p.logw - m)
        total = sum(acc.values())
        return sorted(((s, w / total) for s, w in acc.items()), key=lambda sw: -sw[1])

    def most_likely(self):
        return self.distribution()[0][0]

    def probability_of(self, state) -> float:
        """The probability the belief gives to ``state`` (known after the match)."""
        return dict(self.distribution()).get(frozenset(state), 0.0)

    def legal(self) -> list:
        """Our legal moves: those legal in every sampled state that goes on (a well-formed
        GDL-II game lets a role know its legal moves); failing that, the most likely
        one's."""
        sets = []
        for s, _ in self.distribution():
            try:
                if not self.sm.is_terminal(s):
                    sets.append(self.sm.legal_moves(s, self.role_index))
            except ReasonerError:
                continue
        if not sets:
            return []
        common = [m for m in sets[0] if all(m in other for other in sets[1:])]
        return common or sets[0]

    def is_terminal(self) -> bool:
        """Terminal in every sampled state: while the manager sends PLAY, one history that
        ended is only a history that was wrong."""
        try:
            return all(self.sm.is_terminal(s) for s, _ in self.distribution())
        except ReasonerError:
            return False


def inconsistency(sm, role_index: int, steps: list, joints: list) -> str | None:
    """Why the history ``joints`` (from the initial state) does not fit what a role saw
    (``steps``), replayed on ``sm``; None when it fits: every move legal, our moves ours,
    our percepts ours at every step."""
    if len(joints) != len(steps):
        return f"{len(joints)} joint moves for {len(steps)} steps"
    state = sm.initial_state()
    for k, (jm, step) in enumerate(zip(joints, steps)):
        for i, m in enumerate(jm):
            if m not in sm.legal_moves(state, i):
                return f"step {k + 1}: move {m!r} of role {i} is not legal"
        if step.own is not None and step.own in sm.legal_moves(state, role_index) and jm[role_index] != step.own:
            return f"step {k + 1}: our move was {step.own!r}, the history has {jm[role_index]!r}"
        seen = sm.sees(state, jm, role_index)
        if seen != step.percepts:
            return f"step {k + 1}: the history gives percepts {sorted(map(str, seen))}"
        state = sm.next_state(state, jm)
    return None
