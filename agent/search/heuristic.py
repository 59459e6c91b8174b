"""A game's evaluation function, found from its rules and random play (issue #34).

Strong GGP players evaluate states they cannot play out to the end with features found
from the rules during the start clock (piece counts, where pieces stand).  Here the
features are counts of true facts in groups found from the facts' structure alone:

  ``(p,)``            facts of relation p
  ``(p, i, c)``       facts of p with the constant c at argument i (pieces of one kind, a
                      column's discs, whose turn it is)
  ``(p, i, c, j, d)`` facts of p with c at i and d at j (one kind of piece on one row)

No symbol's name is read: a scrambled sheet gives the same groups under its new names.
Uniform random playouts from the initial state give states and how each ended (about
``PER_PLAYOUT`` states of each: one playout's states share its outcome and say nearly the
same, so many playouts with a few states each fit better for the same memory); a ridge
regression per role of the final goal on the group counts, checked on the playouts it was
not fitted on (two folds by playout), is the evaluation when it explains enough of the
outcome (``R2_MIN``), else the game has none (connectFour's counts say little: every
column fills the same way whoever wins).

Being linear in the counts, the evaluation is a value per fact: a role's value of a state
is its intercept plus the values of the facts that hold, clipped to 0..100 (the goal
scale).  ``fact_values`` gives them per fact for a state machine's states; ``bit_values``
per bit of a compiled engine's packed state.
"""
from __future__ import annotations

import random
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..engine import kernels as K
from . import material as M
from .common import is_compiled
from .features import rules_seed
from .packed import sample_playouts
from .rng import make_rng

PLAYOUTS = 2000             # random playouts sampled (fewer when ``seconds`` or the sample runs out)
PER_PLAYOUT = 10            # states kept of each: one in (mean playout length / PER_PLAYOUT)
SECONDS = 5.0               # their time budget in live play (pondering, from the start clock)
MIN_PLAYOUTS = 40           # fewer than this: no evaluation (too little to check it on)
PLY_CAP = 400               # a playout longer than this is dropped (a game without end)
MAX_GROUPS = 1000           # candidate groups kept (the most varying), bounding the fit
MAX_SAMPLES = 20_000        # states sampled at most (compiled engines)
MAX_CELLS = 16_000_000      # and states x candidate groups at most (the count matrix: 64 MB)
MAX_SAMPLES_TERMS = 10_000  # states sampled at most through the state-machine interface
PACKED_CHUNK = 16           # playouts per numba call (a slice's clock is read between calls)
RIDGE = 0.1                 # ridge penalty per sample on standardised counts
EVAL_DEPTH = 8              # plies a playout runs before the evaluation scores it
QUIET_PLIES = 4             # and at most this many more, to a quiet state (a game with material:
                            # driver_compiled's playouts)
R2_MIN = 0.15               # out-of-fold R^2 an evaluation needs, per role (mean over roles)


@dataclass
class Heuristic:
    """A fitted evaluation: ``intercept[r] + sum(weights[r, g] * count_g(state))``."""
    groups: list                 # group keys, as in the module docstring
    weights: np.ndarray          # float64[n_roles, n_groups], on raw counts
    intercept: np.ndarray        # float64[n_roles]
    r2: np.ndarray               # float64[n_roles]: out-of-fold R^2 of each role's fit
    playouts: int                # random playouts it was fitted on
    samples: int                 # states it was fitted on
    _index: dict = field(init=False, repr=False)    # group key -> column
    _memo: dict = field(init=False, repr=False)     # fact -> its values

    def __post_init__(self):
        self._index = {k: i for i, k in enumerate(self.groups)}
        self._memo = {}

    def fact_values(self, fact) -> np.ndarray:
        """Each role's value of one fact holding (the weights of the groups it is in)."""
        v = self._memo.get(fact)
        if v is None:
            v = np.zeros(len(self.intercept))
            for key in fact_groups(fact):
                g = self._index.get(key)
                if g is not None:
                    v += self.weights[:, g]
            self._memo[fact] = v
        return v

    def value(self, state) -> np.ndarray:
        """Each role's evaluation of ``state`` (facts as terms), 0..100."""
        v = self.intercept.copy()
        for f in state:
            v += self.fact_values(f)
        return np.clip(v, 0.0, 100.0)

    def bit_values(self, base) -> np.ndarray:
        """float64[n_roles, len(base)]: the value of each fact of a compiled engine's ``base``
        (the facts in packed-bit order)."""
        out = np.zeros((len(self.intercept), len(base)))
        for i, f in enumerate(base):
            out[:, i] = self.fact_values(f)
        return out


def fact_groups(fact) -> list:
    """The group keys a fact counts in (module docstring)."""
    if not isinstance(fact, tuple):
        return [(fact,)]
    rel, args = fact[0], fact[1:]
    keys = [(rel,)]
    consts = [(i, a) for i, a in enumerate(args) if not isinstance(a, tuple)]
    for i, c in consts:
        keys.append((rel, i, c))
    for x in range(len(consts)):
        for y in range(x + 1, len(consts)):
            (i, c), (j, d) = consts[x], consts[y]
            keys.append((rel, i, c, j, d))
    return keys


def playout(sm, s0, rnd: random.Random):
    """One uniform random playout from ``s0``: (its non-terminal states, each role's final
    goal), or None past ``PLY_CAP`` plies (a game without end)."""
    n = len(sm.roles)
    s, traj = s0, []
    while not sm.is_terminal(s):
        if len(traj) >= PLY_CAP:
            return None
        traj.append(s)
        s = sm.next_state(s, [rnd.choice(sm.legal_moves(s, q)) for q in range(n)])
    return traj, [max(v) if v else 0.0 for v in sm.goal_values(s)]


class Learner:
    """The evaluation learned in slices of time (a player learns while it ponders, never
    on a move's clock): ``step`` samples playouts until its slice ends, and fits once
    ``playouts`` were sampled, ``seconds`` of sampling spent or the sample is full; ``done``
    then, and ``result`` the evaluation or None.  The sample is bounded (``MAX_CELLS``: its
    count matrix), so the memory is, whatever the game."""

    def __init__(self, sm, playouts: int | None = None, seconds: float | None = SECONDS):
        self.sm, self.seconds = sm, seconds
        self.playouts = PLAYOUTS if playouts is None else playouts
        self.n_roles = len(sm.roles)
        seed = rules_seed(sm)
        self.s0 = sm.initial_state()
        self.finals: list = []
        self.plies = 0              # the kept playouts' plies: their mean length sets the stride
        self.spent = 0.0
        self.full = False
        self.done = False
        self.fitted: Heuristic | None = None    # the fit, used or not
        self.result: Heuristic | None = None    # the evaluation: the fit if ``useful``
        self.material: M.Material | None = None  # each role's pieces (compiled engines only)
        # a compiled engine is sampled in numba on packed states (a hundred times faster than
        # through the state-machine interface: 200 checkers playouts in 0.1 s)
        self.packed_states = is_compiled(sm)
        if self.packed_states:
            self.memberships, n_groups = _memberships(sm.base)
            rows = max(1, min(MAX_SAMPLES, MAX_CELLS // max(1, n_groups)))
            self.packed = np.zeros((rows, int(sm.game.n_words)), np.uint64)
            self.owner = np.zeros(rows, np.int64)
            self.n = 0
            self.tried = 0
            self.rng = make_rng(seed)
            self.vals = K.new_vals(sm.game)     # the sampler's own work space
            self.s0 = sm.pack(self.s0)
            # the same playouts measure the candidate piece sets (material.py)
            self.cands = M.candidates(sm.base, self.n_roles)
            self.cand_masks = M.fact_masks([facts for _, facts in self.cands], int(sm.game.n_words))
            self.changes = np.zeros(len(self.cands), np.int64)
            self.ends: list = []
        else:
            self.states: list = []
            self.owner_list: list = []
            self.facts_seen: set = set()
            self.groups_seen: set = set()
            self.rnd = random.Random(seed)

    def step(self, seconds: float | None = None) -> bool:
        t0 = time.perf_counter()
        while not self.done:
            if (len(self.finals) >= self.playouts or self.full
                    or (self.seconds is not None and self.spent >= self.seconds)):
                self._fit()
                break
            if seconds is not None and time.perf_counter() - t0 >= seconds:
                break
            t1 = time.perf_counter()
            if self.packed_states:
                self._sample_packed()
            else:
                self._sample_terms()
            self.spent += time.perf_counter() - t1      # (a first call's numba compile too:
            # the server's workers compile the sampler while they warm up)
        return self.done

    def _sample_packed(self) -> None:
        todo = min(PACKED_CHUNK, self.playouts - len(self.finals))
        finals = np.zeros((todo, self.n_roles))
        ends = np.zeros((todo, len(self.cands)), np.int64)
        k, p, tried, plies = sample_playouts(self.sm.game, self.s0, self.vals, self.rng, todo, PLY_CAP,
                                             self.stride(), self.packed[self.n:], self.owner[self.n:],
                                             finals, len(self.finals), self.cand_masks, self.changes, ends)
        if k < 0:
            raise ValueError("a role has no legal move in a non-terminal state")
        self.n += k
        self.plies += plies
        self.finals.extend(finals[:p].tolist())
        self.ends.extend(ends[:p])
        self.tried += tried
        # the sample is full, or playouts keep running past PLY_CAP (a game without end)
        self.full = tried < todo or self.tried >= 4 * self.playouts

    def _sample_terms(self) -> None:
        one = playout(self.sm, self.s0, self.rnd)
        if one is not None:
            traj, goals = one
            stride = self.stride()
            self.plies += len(traj)
            traj = traj[self.rnd.randrange(stride)::stride]
            self.owner_list.extend([len(self.finals)] * len(traj))
            self.finals.append(goals)
            self.states.extend(traj)
            for st in traj:             # the groups seen so far bound the count matrix
                for f in st:
                    if f not in self.facts_seen:
                        self.facts_seen.add(f)
                        self.groups_seen.update(fact_groups(f))
            self.full = (len(self.states) >= MAX_SAMPLES_TERMS
                         or len(self.states) * len(self.groups_seen) >= MAX_CELLS)

    def stride(self) -> int:
        """Keep one state in this many: ``PER_PLAYOUT`` a playout of the mean length so far
        (every state until a playout has ended)."""
        if not self.finals:
            return 1
        return max(1, round(self.plies / len(self.finals) / PER_PLAYOUT))

    def _fit(self) -> None:
        finals = np.array(self.finals, np.float64).reshape(-1, self.n_roles)
        if self.packed_states:
            if len(self.finals) >= MIN_PLAYOUTS and self.cands:
                ends = np.array(self.ends, np.int64).reshape(len(self.ends), len(self.cands))
                self.material = M.select(self.cands, self.changes, self.plies, ends, finals)
            keys, X = design_packed(self.packed[:self.n], self.memberships, len(self.sm.base))
            owner = self.owner[:self.n]
            self.packed = self.owner = None      # the samples are not needed any more
        else:
            keys, X = design(self.states)
            owner = np.array(self.owner_list, np.int64)
            self.states, self.owner_list = [], []
        self.fitted = fit(keys, X, owner, finals)
        self.result = self.fitted if useful(self.fitted) else None
        self.done = True

    def summary(self) -> str:
        """What was learned, in one line for a match record."""
        h = self.fitted
        if h is None:
            return f"no evaluation: {len(self.finals)} random playouts, too few to fit"
        verdict = "the search uses it" if self.result is not None else f"below {R2_MIN}: not used"
        material = (self.material.summary() if self.material is not None else
                    "no material found" if self.packed_states else "material not measured (no compiled engine)")
        return (f"evaluation from {h.playouts} random playouts ({h.samples} states, {len(h.groups)} "
                f"groups of facts): out-of-fold R^2 {', '.join(f'{x:.2f}' for x in h.r2)}; {verdict}; "
                f"{material}")


def _memberships(base) -> tuple:
    """(group keys, per fact of ``base`` the columns of its groups), and the group count."""
    index: dict = {}
    cols = [[index.setdefault(k, len(index)) for k in fact_groups(f)] for f in base]
    return (list(index), cols), len(index)


def design_packed(packed, memberships, n_base: int) -> tuple:
    """``design`` for packed states of a compiled engine (bit i: fact i of its ``base``)."""
    keys, cols = memberships
    bits = np.unpackbits(packed.view(np.uint8), axis=1, bitorder="little")[:, :n_base]
    X = np.zeros((packed.shape[0], len(keys)), np.float32)
    for i, gs in enumerate(cols):
        col = bits[:, i]
        if col.any():
            X[:, gs] += col[:, None]
    return _varying(keys, X)


def design(states) -> tuple:
    """(group keys, counts[n_states, n_groups]) over the groups that vary, for states as
    sets of facts."""
    index: dict = {}
    memo: dict = {}
    rows, cols = [], []
    for i, s in enumerate(states):
        for f in s:
            gs = memo.get(f)
            if gs is None:
                gs = memo[f] = [index.setdefault(k, len(index)) for k in fact_groups(f)]
            cols.extend(gs)
            rows.extend([i] * len(gs))
    X = np.zeros((len(states), len(index)), np.float32)
    np.add.at(X, (np.array(rows, np.int64), np.array(cols, np.int64)), 1.0)
    return _varying(list(index), X)


def _varying(keys: list, X) -> tuple:
    """The columns that vary (at most ``MAX_GROUPS``, the most varying), as float64."""
    sd = X.std(axis=0)
    keep = np.flatnonzero(sd > 0)
    if len(keep) > MAX_GROUPS:
        keep = np.sort(keep[np.argsort(-sd[keep], kind="stable")[:MAX_GROUPS]])
    return [keys[g] for g in keep], X[:, keep].astype(np.float64)


def ridge(X, Y, lam: float):
    """(weights on raw columns [n_roles, n_groups], intercepts [n_roles]) of a ridge fit of
    each column of ``Y`` (one per role) on the standardised columns of ``X``: one solve for
    every role (they share X)."""
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    A = Z.T @ Z + lam * len(Y) * np.eye(Z.shape[1])
    beta = np.linalg.solve(A, Z.T @ (Y - Y.mean(axis=0)))
    W = (beta / sd[:, None]).T
    return W, Y.mean(axis=0) - W @ mu


def _r2(y, pred) -> float:
    ss = float(((y - y.mean()) ** 2).sum())
    return 0.0 if ss == 0 else 1.0 - float(((y - pred) ** 2).sum()) / ss


def fit(groups: list, X, owner, finals) -> Heuristic | None:
    """The fit of sampled states (``X``: their counts in ``groups``, ``owner``: the playout
    of each, ``finals``: each playout's goals) with its out-of-fold R^2, or None for too
    small a sample.  Whether it is good enough to use is ``useful``'s to say."""
    n_roles = finals.shape[1]
    if finals.shape[0] < MIN_PLAYOUTS or not groups or X.shape[0] == 0:
        return None
    Y = finals[owner]                   # each state's playout outcome, per role
    fold = owner % 2
    pred = np.zeros_like(Y)
    for k in (0, 1):
        tr, te = fold != k, fold == k
        if not tr.any() or not te.any():
            return None
        w, c = ridge(X[tr], Y[tr], RIDGE)
        pred[te] = X[te] @ w.T + c
    r2 = np.array([_r2(Y[:, r], pred[:, r]) for r in range(n_roles)])   # 0 for a constant outcome
    W, b = ridge(X, Y, RIDGE)
    return Heuristic(groups, W, b, r2, int(finals.shape[0]), int(X.shape[0]))


def useful(h: Heuristic | None) -> bool:
    """Whether a fit explains enough of random play's outcomes to be the evaluation."""
    return h is not None and float(h.r2.mean()) >= R2_MIN


def learn(sm, playouts: int = PLAYOUTS, seconds: float | None = None) -> Heuristic | None:
    """The game's evaluation (None: none found) in one call: ``Learner`` without slices;
    cached per engine and request."""
    owner = getattr(sm, "sm", sm)
    key = (playouts, seconds)
    try:
        entry = _CACHE.get(owner, {})
    except TypeError:
        owner, entry = None, {}
    if key in entry:
        return entry[key]
    learner = Learner(sm, playouts, seconds)
    learner.step()
    if owner is not None:
        _CACHE.setdefault(owner, {})[key] = learner.result
    return learner.result


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
