"""A game's evaluation function, found from its rules and random play (issue #34).

Strong GGP players evaluate states they cannot play out to the end with features found
from the rules during the start clock (piece counts, where pieces stand).  Here the
features are counts of true facts in groups found from the facts' structure alone:

  ``(p,)``            facts of relation p
  ``(p, i, c)``       facts of p with the constant c at argument i (pieces of one kind, a
                      column's discs, whose turn it is)
  ``(p, i, c, j, d)`` facts of p with c at i and d at j (one kind of piece on one row)

No symbol's name is read: a scrambled sheet gives the same groups under its new names.
Uniform random playouts from the initial state give states and how each ended; a ridge
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

from .features import rules_seed

PLAYOUTS = 400              # random playouts sampled (fewer when ``seconds`` runs out)
SECONDS = 5.0               # their time budget in live play (pondering, from the start clock)
MIN_PLAYOUTS = 40           # fewer than this: no evaluation (too little to check it on)
PLY_CAP = 400               # a playout longer than this is dropped (a game without end)
MAX_GROUPS = 2000           # candidate groups kept (the most varying), bounding the fit
RIDGE = 0.1                 # ridge penalty per sample on standardised counts
EVAL_DEPTH = 8              # plies a playout runs before the evaluation scores it
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
    _memo: dict = field(default_factory=dict, repr=False)

    def fact_values(self, fact) -> np.ndarray:
        """Each role's value of one fact holding (the weights of the groups it is in)."""
        v = self._memo.get(fact)
        if v is None:
            pos = self._pos()
            v = np.zeros(len(self.intercept))
            for key in fact_groups(fact):
                g = pos.get(key)
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

    def _pos(self) -> dict:
        p = self._memo.get(_POS)
        if p is None:
            p = self._memo[_POS] = {k: i for i, k in enumerate(self.groups)}
        return p


_POS = object()     # the memo's key of the group index


def _constant(term) -> bool:
    return not isinstance(term, tuple) and not (isinstance(term, str) and term.startswith("?"))


def fact_groups(fact) -> list:
    """The group keys a fact counts in (module docstring)."""
    if not isinstance(fact, tuple):
        return [(fact,)]
    rel, args = fact[0], fact[1:]
    keys = [(rel,)]
    consts = [(i, a) for i, a in enumerate(args) if _constant(a)]
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
    ``playouts`` were sampled or ``seconds`` of sampling spent; ``done`` then, and
    ``result`` the evaluation or None."""

    def __init__(self, sm, playouts: int | None = None, seconds: float | None = SECONDS):
        self.sm, self.seconds = sm, seconds
        self.playouts = PLAYOUTS if playouts is None else playouts
        self.rnd = random.Random(rules_seed(sm))
        self.s0 = sm.initial_state()
        self.states: list = []
        self.owner: list = []
        self.finals: list = []
        self.spent = 0.0
        self.done = False
        self.result: Heuristic | None = None

    def step(self, seconds: float | None = None) -> bool:
        t0 = time.perf_counter()
        while not self.done:
            if len(self.finals) >= self.playouts or (self.seconds is not None and self.spent >= self.seconds):
                self.result = fit(self.states, np.array(self.owner, np.int64),
                                  np.array(self.finals, np.float64).reshape(-1, len(self.sm.roles)))
                self.done = True
                self.states = self.owner = []     # the samples are not needed any more
                break
            if seconds is not None and time.perf_counter() - t0 >= seconds:
                break
            t1 = time.perf_counter()
            one = playout(self.sm, self.s0, self.rnd)
            self.spent += time.perf_counter() - t1
            if one is not None:
                traj, goals = one
                self.owner.extend([len(self.finals)] * len(traj))
                self.finals.append(goals)
                self.states.extend(traj)
        return self.done


def design(states) -> tuple:
    """(group keys, counts float64[n_states, n_groups]) over the groups that vary."""
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
    X = np.zeros((len(states), len(index)))
    np.add.at(X, (np.array(rows, np.int64), np.array(cols, np.int64)), 1.0)
    keys = list(index)
    sd = X.std(axis=0)
    keep = np.flatnonzero(sd > 0)
    if len(keep) > MAX_GROUPS:
        keep = np.sort(keep[np.argsort(-sd[keep], kind="stable")[:MAX_GROUPS]])
    return [keys[g] for g in keep], X[:, keep]


def ridge(X, y, lam: float):
    """(weights on raw columns, intercept) of a ridge fit on standardised columns."""
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    A = Z.T @ Z + lam * len(y) * np.eye(Z.shape[1])
    beta = np.linalg.solve(A, Z.T @ (y - y.mean()))
    w = beta / sd
    return w, float(y.mean() - mu @ w)


def _r2(y, pred) -> float:
    ss = float(((y - y.mean()) ** 2).sum())
    return 0.0 if ss == 0 else 1.0 - float(((y - pred) ** 2).sum()) / ss


def fit(states, owner, finals) -> Heuristic | None:
    """The evaluation of these samples, or None when it explains too little (``R2_MIN``)."""
    n_roles = finals.shape[1]
    if finals.shape[0] < MIN_PLAYOUTS or not states:
        return None
    groups, X = design(states)
    if not groups:
        return None
    W = np.zeros((n_roles, len(groups)))
    b = np.zeros(n_roles)
    r2 = np.zeros(n_roles)
    fold = owner % 2
    for r in range(n_roles):
        y = finals[owner, r]
        if y.std() == 0:
            continue        # the same outcome in every playout: nothing to learn for r
        pred = np.zeros(len(y))
        for k in (0, 1):
            tr, te = fold != k, fold == k
            w, c = ridge(X[tr], y[tr], RIDGE)
            pred[te] = X[te] @ w + c
        r2[r] = _r2(y, pred)
        W[r], b[r] = ridge(X, y, RIDGE)
    if r2.mean() < R2_MIN:
        return None
    return Heuristic(groups, W, b, r2, int(finals.shape[0]), len(states))


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
