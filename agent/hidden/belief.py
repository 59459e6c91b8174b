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
within the time left: candidates whose next state shares the most facts with the percepts
still to come first (percepts name state facts: the stone a phantom board's player later ran
into was placed by the opponent at one of its earlier turns), and a state found to have no
consistent future at a depth is not searched again.  When even that finds nothing the belief
goes *lenient*: first histories that get the fewest steps' percepts wrong (the same search,
allowed to take the closest candidates at a step or two), else the old histories moved on
by their closest candidates (Jaccard); it says so in its notes and in ``lenient``.  Our
legal moves are read from the histories that fit best (a lenient belief's closest histories
can have the turn wrong: under Dresden's manager our second seat answered NOOP where it had
to move).  It never raises for want of a consistent history.
"""
from __future__ import annotations

import itertools
import math
import random
import time
from dataclasses import dataclass, field

from agent.reasoner.statemachine import ReasonerError

from .repair import flat, mend, named, targets_of

ENUMERATE = 256        # joint moves of the other roles tried per particle and step, at most
PARTICLES = 48         # histories kept
RESAMPLE_ESS = 0.5     # resample when the effective sample size falls below this share
UNTIMED = 30.0         # seconds an update without a deadline may take (tests, benchmarks)
MISSES = (1, 3)        # steps a lenient rebuild may get wrong, tried in this order
MEND_SHARE = 0.3       # of a recovery's time for mending the particles (``repair``)
MEND_TRIES = 8         # mends tried per distinct history before the rebuild's turn
REJUVENATE_SHARE = 0.25  # of an update's time left, at most, for mending copies of one history
REJUVENATE_SECONDS = 1.0   # ... and never more than this (an untimed update has 30 s)


@dataclass(frozen=True)
class Step:
    """Our view of one step: our move (None when unknown), our percepts, and whether we know
    the match went on after it (a PLAY came: a history that ended there is wrong)."""
    own: object
    percepts: frozenset
    goes_on: bool = False


@dataclass
class Particle:
    states: list                 # s0 .. sk
    joints: list                 # the joint moves between them
    logw: float = 0.0            # log importance weight
    lenient: bool = False        # made while no consistent history was found
    missed: tuple = ()           # the steps (0-based) whose percepts this history gets wrong

    @property
    def state(self):
        return self.states[-1]

    def copy(self) -> "Particle":
        return Particle(list(self.states), list(self.joints), self.logw, self.lenient, self.missed)

    def fits(self) -> int:
        """The steps this history gets right from the start: up to its first missed one."""
        return min(self.missed) if self.missed else len(self.joints)

    def fit(self, steps: int) -> tuple:
        """How well the history fits what was seen, larger is better: the last step's
        percepts right (what the state is now), then the fewest steps wrong."""
        return (not self.missed or self.missed[-1] != steps - 1, -len(self.missed))


def _shape(t) -> tuple:
    return (t[0], len(t)) if isinstance(t, tuple) else (t, 0)


def patch(state: frozenset, predicted: frozenset, percepts: frozenset, shapes=None) -> frozenset:
    """A lenient history's next state made to agree with the percepts where they name
    state facts: a fact the history predicted we would see and we did not is dropped, a
    percept of a fact's shape (name and arity of a fact of the state) that the history did
    not predict is added.  Percepts very often name facts of the next state (a phantom
    board's "cell c r x", whose turn it is); where they do not, nothing changes.  The state
    is then only a guess, but its turn and what we saw of it are the ones we saw: a closest
    history whose stone of ours had gone where the opponent's was kept our turn and answered
    NOOP.  ``shapes``: the (name, arity) pairs a state fact may have (default: those of
    ``state``'s own facts)."""
    shapes = {_shape(f) for f in state} | set(shapes or ())
    drop = {t for t in predicted - percepts if t in state}
    add = {t for t in percepts - predicted if _shape(t) in shapes}
    return (state - drop) | add if drop or add else state


def _halved(deadline: float) -> float:
    """Half the time left to ``deadline``: once one history is found it is enough to play
    on, and more are looked for only while they come cheap."""
    now = time.monotonic()
    return now + 0.5 * max(0.0, deadline - now)


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
    impossible: bool = False     # a rebuild went through every history: none fits
    ambiguous: set = field(default_factory=set)   # steps where the others' move was not pinned

    def __post_init__(self):
        s0 = self.sm.initial_state()
        self.particles = [Particle([s0], []) for _ in range(self.size)]
        self.n_roles = len(self.sm.roles)

    # ------------------------------------------------------------------ observing
    def observe(self, own, percepts, deadline: float | None = None,
                rebuild_by: float | None = None, goes_on: bool = False) -> list:
        """Take one step's view (our move, our percepts) and move every particle on;
        returns notes on anything odd.  ``deadline`` (monotonic) bounds the extension:
        particles not extended by then are dropped (one is always tried).  When none could
        be extended, the bag is rebuilt from the initial state until ``rebuild_by``
        (default: the deadline, or a second after now if that has passed).  ``goes_on``: the
        match is known to go on after this step (the player's PLAY says so): histories that
        ended are not kept (a blind board's history where the hidden pawn had reached the
        far rank left no state to play in)."""
        step = Step(own, frozenset(percepts), goes_on)
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
            alive = self._recover(step, by, notes)
        self.particles = self._resample(alive)
        # Copies carry a learned prior's weights (a likely card held by many particles): only
        # under a uniform prior, whose posterior spreads evenly over the consistent
        # histories, may copies become other consistent histories.
        if not self.lenient and getattr(self.prior, "kind", "") != "predictive":
            now = time.monotonic()
            self._rejuvenate(now + REJUVENATE_SHARE * max(0.0, deadline - now))
        self.notes += notes
        return notes

    def _rejuvenate(self, by: float) -> None:
        """Copies of one history (resampling's) replaced by histories mended from them
        (``repair.mend``) until ``by``: the belief keeps its variety where a hidden choice
        shows only later."""
        n = len(self.steps)
        seen, dupes = set(), []
        for i, p in enumerate(self.particles):
            if p.state in seen:
                dupes.append(i)
            seen.add(p.state)
        if len(seen) * 2 > self.size:
            return
        by = min(by, time.monotonic() + REJUVENATE_SECONDS)
        stale = 0
        for i in dupes:
            if time.monotonic() >= by or stale >= self.size // 4:
                break      # few states may be all there are (a card game's): no more tries
            q = mend(self, self.particles[i], n, self.rng, by)
            if q is not None and len(q[1]) == n and q[0][-1] not in seen:
                self.particles[i] = Particle(*q)
                seen.add(q[0][-1])
                stale = 0
            else:
                stale += 1

    def _mended(self, by: float) -> list:
        """Histories that fit every step, mended from the particles (which fit fewer: not the
        last step, or a lenient one's missed steps), each change steered to the percepts its
        history got wrong first.  A mend that fits more steps without fitting all is mended
        again (a local search over histories: two ships may have to move)."""
        n = len(self.steps)
        found = []
        pool = []      # [history, what it gets wrong]: found once per history, when first tried
        for p in {p.state: p for p in self.particles}.values():
            m = p.fits()
            pool.append([Particle(p.states[:m + 1], p.joints[:m]), None])
        tries = 0
        while pool and time.monotonic() < by and len(found) < self.size and tries < MEND_TRIES * len(pool):
            entry = pool[tries % len(pool)]
            tries += 1
            if entry[1] is None:
                entry[1] = self._wrong(entry[0])
            q = mend(self, entry[0], n, self.rng, by, entry[1])
            if q is None:
                continue
            if len(q[1]) == n:
                found.append(Particle(*q))
                if len(found) == 1:
                    by = _halved(by)
            else:                  # further than its parent: mended again, in its place
                entry[:] = [Particle(*q), None]
        return found

    def _wrong(self, p: Particle) -> tuple:
        """``repair.targets_of`` the first step ``p`` does not fit (a history fits the
        steps before its first missed one): its closest candidate's percepts against ours."""
        k = p.fits()
        if k >= len(self.steps):
            return (), ()
        step, state = self.steps[k], p.states[k]
        try:
            cands = self._candidates(state, step, k)
            seen = max((self.sm.sees(state, jm, self.role_index) for jm, _ in cands),
                       key=lambda x: _jaccard(x, step.percepts), default=frozenset())
        except ReasonerError:
            return (), ()
        return targets_of(step.percepts, seen)

    def _recover(self, step: Step, by: float, notes: list) -> list:
        """No particle explains the step: histories rebuilt from the initial state, with our
        moves as sent (0.4 of the time), then with our moves free (the manager may have
        replaced one: late, illegal; to 0.6), then histories that get the fewest steps wrong
        (the rest); the old particles moved on by their closest candidates only when all
        of that found nothing.  A search that went through every history and found none is
        not run again on a longer history (none can fit then either)."""
        t0 = time.monotonic()
        span = max(0.0, by - t0)
        found = self._mended(t0 + MEND_SHARE * span)
        if found:
            self.lenient = False
            notes.append(f"no sampled history explained step {len(self.steps)}: "
                         f"{len(found)} mended at an earlier step")
            return found
        if not self.impossible:
            found, done = self._rebuild(t0 + 0.4 * span)
            if not found:
                found, done_free = self._rebuild(t0 + 0.6 * span, free_own=True)
                if found:
                    notes.append("our own move was not always the one we sent (replaced by the "
                                 "manager?): histories with other moves of ours are kept")
                elif done and done_free:
                    self.impossible = True
        if found:
            self.rebuilt += 1
            self.lenient = False
            notes.append(f"no sampled history explained step {len(self.steps)}: "
                         f"rebuilt from the initial state ({len(found)} histories)")
            return found
        self.lenient = True
        for i, misses in enumerate(MISSES):   # the fewest first, each to its share of the rest
            now = time.monotonic()
            found, _ = self._rebuild(now + max(0.0, by - now) / (len(MISSES) - i), misses=misses)
            if found:
                wrong = min(len(p.missed) for p in found)
                notes.append(f"no history consistent with every percept found by step "
                             f"{len(self.steps)}: kept {len(found)} histories that get "
                             f"{wrong} step(s) wrong")
                return found
        notes.append(f"no history consistent with every percept found by step "
                     f"{len(self.steps)}: sampling the closest ones")
        alive = []
        for p in self.particles:
            if alive and time.monotonic() >= max(by, t0 + 0.05):
                break
            q = self._extend(p, step, strict=False)
            if q is not None:
                alive.append(q)
        return alive or [self._step_any(self.particles[0], step)]

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
                if strict and len(kept) > 1:
                    self.ambiguous.add(k)
                if not strict:  # lenient: only the closest ones
                    best = max(weights)
                    pairs = [(j, w) for j, w in zip(kept, weights) if w >= best * 0.999]
                    kept, weights = [j for j, _ in pairs], [w for _, w in pairs]
                while True:   # a draw whose history ends while the match goes on is dropped
                    i = self.rng.choices(range(len(kept)), weights=weights)[0]
                    jm = kept[i]
                    nxt = self.sm.next_state(state, jm)
                    if not (step.goes_on and self.sm.is_terminal(nxt)):
                        break
                    del kept[i], weights[i]
                    if not kept:
                        return None
                exact = strict or self.sm.sees(state, jm, self.role_index) == step.percepts
                gain = sum(weights)
            else:
                exact = True
                self.ambiguous.add(k)      # too many to list: taken as open
                jm, tried, checked = None, 0, {}
                while tried < ENUMERATE:
                    tried += 1
                    combo = tuple(self.rng.choices(r, weights=[w for _, w in r])[0][0] for r in per_role)
                    ok = checked.get(combo)
                    if ok is None:
                        ok = self.sm.sees(state, combo, self.role_index) == step.percepts
                        if ok:
                            nxt = self.sm.next_state(state, combo)
                            ok = not (step.goes_on and self.sm.is_terminal(nxt))
                        checked[combo] = ok
                    if ok:
                        jm = combo
                        nxt = self.sm.next_state(state, jm)
                        break
                if jm is None:
                    return None
                gain = 1.0 / tried
            if not exact:
                patched = patch(nxt, self.sm.sees(state, jm, self.role_index), step.percepts)
                # a patch that ends the history while the match goes on (battleship: a fleet
                # sunk in the history, not in the match) would leave no legal move to search:
                # the unpatched state is then the better guess
                if not (step.goes_on and self.sm.is_terminal(patched)):
                    nxt = patched
        except ReasonerError:
            return None
        q = p.copy()
        q.states.append(nxt)
        q.joints.append(jm)
        q.logw += math.log(max(gain, 1e-300))
        q.lenient = q.lenient or not strict
        if not strict and not exact:
            q.missed = q.missed + (k,)
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
        q.missed = q.missed + (len(q.joints) - 1,)
        return q

    def _rebuild(self, deadline: float, free_own: bool = False, misses: int = 0) -> tuple:
        """Depth-first over whole histories from the initial state, backtracking where no
        candidate explains a step; (histories found, whether every history was searched).
        The first history found is kept, and the search goes on for more (up to ``size``)
        until half the time left at that moment has passed.

        At each step the candidates that explain the percepts are tried first those whose
        next state holds the most facts named by the percepts of later steps (ties in
        random order); a state from which a depth's search found nothing is not searched
        again at that depth (the future of a history depends only on its state).
        ``misses``: steps whose percepts a history may get wrong, by taking at a step
        where none explains them one of the candidates whose percepts are closest
        (Jaccard), after every exact one."""
        n = len(self.steps)
        later = [frozenset()] * (n + 1)       # later[k]: every percept of steps k, k+1, ...
        for k in range(n - 1, -1, -1):
            later[k] = later[k + 1] | self.steps[k].percepts
        dead: dict = {}                       # (depth, state) -> most misses it failed with
        # frames: [particle, candidates left (None: not listed yet), misses left, found at entry]
        stack = [[Particle([self.sm.initial_state()], []), None, misses, 0]]
        found = []
        while stack and time.monotonic() < deadline and len(found) < self.size:
            frame = stack[-1]
            p, cands, left, before = frame
            k = len(p.joints)
            if k == n:
                stack.pop()
                if self.steps[-1].goes_on and self._ended(p.state):
                    continue   # the match went on: not this history
                found.append(p)
                if len(found) == 1:
                    deadline = _halved(deadline)
                continue
            if cands is None:
                if dead.get((k, p.state), -1) >= left:
                    stack.pop()
                    continue
                cands = frame[1] = self._ordered(p.state, self.steps[k], k, free_own, left > 0,
                                                 later[k + 1])
            item = next(cands, None)
            if item is None:
                stack.pop()
                if len(found) == before:   # nothing below this state: a dead end at this depth
                    dead[(k, p.state)] = max(dead.get((k, p.state), -1), left)
                continue
            jm, w, nxt, miss = item
            if nxt is None:
                try:
                    nxt = self.sm.next_state(p.state, jm)
                except ReasonerError:
                    continue
            q = Particle(p.states + [nxt], p.joints + [jm], p.logw + math.log(max(w, 1e-300)),
                         lenient=p.lenient or bool(miss), missed=p.missed + ((k,) if miss else ()))
            stack.append([q, None, left - miss, len(found)])
        return found, not stack

    def _ordered(self, state, step: Step, k: int, free_own: bool, lenient: bool, later: frozenset):
        """The candidates of a rebuild at one state, as (joint move, prior, next state or
        None, missed), best first, lazily: a joint move whose moves' arguments all appear in
        this step's new percepts (a shot seen as a shot at that cell) is checked first and,
        when it explains them, given before the others are looked at (a battleship history
        through 50 shots then costs a few queries a step, not a hundred); then every
        candidate that explains the percepts, those whose next state holds the most facts
        named by later percepts first, then (``lenient``) the closest of the others."""
        try:
            if self.sm.is_terminal(state):   # a history goes through no end
                return
            cands = self._candidates(state, step, k, free_own)
            self.rng.shuffle(cands)
            new = [flat(t) for t in step.percepts - (self.steps[k - 1].percepts if k else frozenset())]
            first = None
            ranked = sorted(((named(jm, new, self.role_index), jm, w) for jm, w in cands), key=lambda c: -c[0])
            for count, jm, w in ranked:
                if not count:
                    break
                if self.sm.sees(state, jm, self.role_index) == step.percepts:
                    first = jm
                    yield jm, w, None, 0
                    break
            exact, close = [], []
            for jm, w in cands:
                seen = self.sm.sees(state, jm, self.role_index)
                if seen == step.percepts:
                    exact.append((jm, w))
                    if len(exact) > 1:
                        self.ambiguous.add(k)
                elif lenient:
                    close.append((_jaccard(seen, step.percepts), jm, w, seen))
            exact = [(jm, w) for jm, w in exact if jm != first]
            if later:
                scored = [(len(nxt & later), jm, w, nxt) for jm, w in exact
                          for nxt in (self.sm.next_state(state, jm),)]
                scored.sort(key=lambda c: -c[0])     # stable: ties stay in random order
                yield from ((jm, w, nxt, 0) for _, jm, w, nxt in scored)
            else:   # nothing left to guide the order: next states when taken
                yield from ((jm, w, None, 0) for jm, w in exact)
            if close:   # only the closest, tried after every exact one
                best = max(c[0] for c in close)
                for j, jm, w, seen in close:
                    if j >= best:
                        yield jm, w, patch(self.sm.next_state(state, jm), seen, step.percepts), 1
        except ReasonerError:
            return

    def _ended(self, state) -> bool:
        try:
            return self.sm.is_terminal(state)
        except ReasonerError:
            return False

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

    def histories(self) -> dict:
        """{state: (states, joint moves)}: for each distinct current state, the history of
        its heaviest particle (the search against the prediction follows the other roles'
        views along it)."""
        best: dict = {}
        for p in self.particles:
            if p.state not in best or p.logw > best[p.state].logw:
                best[p.state] = p
        return {s: (p.states[:-1], p.joints) for s, p in best.items()}

    def most_likely(self):
        return self.distribution()[0][0]

    def probability_of(self, state) -> float:
        """The probability the belief gives to ``state`` (known after the match)."""
        return dict(self.distribution()).get(frozenset(state), 0.0)

    def legal(self) -> list:
        """Our legal moves: those legal in every sampled state that goes on, among the
        histories that fit best (``Particle.fit``: a well-formed GDL-II game lets a role know
        its legal moves, and a lenient belief's other histories may have the turn wrong);
        failing that, the legal moves of the most likely of those states."""
        steps = len(self.steps)
        live = {}                                   # state -> the best fit of its histories
        for p in self.particles:
            try:
                if p.state in live or not self.sm.is_terminal(p.state):
                    live[p.state] = max(live.get(p.state, p.fit(steps)), p.fit(steps))
            except ReasonerError:
                continue
        if not live:
            return []
        best = max(live.values())
        sets = []
        for s, _ in self.distribution():
            if live.get(s) != best:
                continue
            try:
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
