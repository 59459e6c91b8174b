"""The move-frequency baseline (spec 7: "what players usually play").

Counts from a label's training decisions at three n-gram levels: the move alone (unigram),
the move after the previous joint move (bigram), and the move in exactly this state
(state-move).  The probability of a legal move is

    P(a) ∝ eps + c_uni(a)/N_uni + w_bi * c_bi(prev, a)/N_bi(prev) + w_st * c_st(s, a)/N_st(s)

over the legal moves only.  The weights w_bi, w_st and eps are chosen on the training
decisions themselves with each decision's own player-match left out of the counts (so a
match never predicts itself, and the state level is not rewarded for memorising).
Moves and states are keys, nothing else: no game knowledge.
"""
from __future__ import annotations

import functools
import hashlib
from collections import Counter, defaultdict

import numpy as np

from gdl.terms import render

W_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
EPS_GRID = (0.001, 0.01, 0.1)


def _text(t) -> str:
    try:
        return render(t)
    except TypeError:      # not a GDL term (synthetic decisions in tests): its repr
        return repr(t)


@functools.lru_cache(maxsize=1 << 16)
def state_key(state) -> str:
    """A state as a short, stable key (the counts are kept in persona files).  Memoised:
    every model scored on a decision asks for the same state's key."""
    text = "\n".join(sorted(_text(f) for f in state))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def prev_key(prev) -> str:
    return "" if prev is None else " ".join(_text(m) for m in prev)


def contexts(state, prev) -> tuple:
    """The three levels' contexts of a decision: none, the previous joint move, the state."""
    return ("", prev_key(prev), state_key(state))


class MoveCounts:
    """How often each move was chosen at each level (move alone, after the previous joint
    move, in this state), with each player-match's own share kept apart so that a
    decision's features can leave its own match out.  Keys are strings: the counts of a
    fitted model go into its persona file."""

    def __init__(self, decisions=()):
        self.c = [Counter(), Counter(), Counter()]        # "context|move" counts per level
        self.n = [Counter(), Counter(), Counter()]        # context totals per level
        self.by_pm = defaultdict(lambda: ([Counter(), Counter(), Counter()], [Counter(), Counter(), Counter()]))
        self.add(decisions)

    def add(self, decisions) -> None:
        for d in decisions:
            ctx = contexts(d.state, d.prev)
            m = _text(d.moves[d.chosen])
            own = self.by_pm[d.pm]
            for lvl in range(3):
                key = f"{ctx[lvl]}|{m}"
                self.c[lvl][key] += 1
                self.n[lvl][ctx[lvl]] += 1
                own[0][lvl][key] += 1
                own[1][lvl][ctx[lvl]] += 1

    def frequencies(self, state, prev, moves, pm=None) -> np.ndarray:
        """(moves x 3) relative frequencies of each move at the three levels, without the
        counts of player-match ``pm`` (a match never predicts itself)."""
        own = self.by_pm.get(pm) if pm is not None else None
        ctx = contexts(state, prev)
        f = np.zeros((len(moves), 3))
        for lvl in range(3):
            tot = self.n[lvl][ctx[lvl]] - (own[1][lvl][ctx[lvl]] if own else 0)
            if tot <= 0:
                continue
            for j, m in enumerate(moves):
                key = f"{ctx[lvl]}|{_text(m)}"
                f[j, lvl] = (self.c[lvl][key] - (own[0][lvl][key] if own else 0)) / tot
        return f

    def features(self, d, exclude_own: bool) -> np.ndarray:
        return self.frequencies(d.state, d.prev, d.moves, d.pm if exclude_own else None)

    def to_dict(self) -> dict:
        """The counts; the totals too only where summing the counts would not give them back
        (a previous move's text holding ``|``): they are that sum, and leaving them out keeps a
        fitted persona file a third smaller (issue 53: report folders under 1 MB)."""
        counts = [dict(c) for c in self.c]
        totals = [dict(n) for n in self.n]
        if all(summed_totals(c) == t for c, t in zip(counts, totals)):
            return {"counts": counts}
        return {"counts": counts, "totals": totals}

    @classmethod
    def from_dict(cls, data: dict) -> "MoveCounts":
        out = cls()
        out.c = [Counter(c) for c in data["counts"]]
        totals = data.get("totals")
        out.n = [Counter(n) for n in totals] if totals is not None else \
            [Counter(summed_totals(c)) for c in out.c]
        return out


def summed_totals(counts: dict) -> dict:
    """A level's context totals from its ``"context|move"`` counts."""
    out: dict = {}
    for key, n in counts.items():
        ctx = key.partition("|")[0]
        out[ctx] = out.get(ctx, 0) + n
    return out


class MoveFrequency:
    """Fitted on training decisions; ``logp(d)`` gives log P over d.moves."""

    def __init__(self, train):
        self.counts = MoveCounts(train)
        feats = [self.counts.features(d, exclude_own=True) for d in train]
        m = max((len(f) for f in feats), default=1)
        F = np.zeros((len(train), m, 3))
        mask = np.zeros((len(train), m))
        for i, f in enumerate(feats):
            F[i, :len(f)] = f
            mask[i, :len(f)] = 1.0
        rows, chosen = np.arange(len(train)), np.array([d.chosen for d in train], int)
        best = (-np.inf, (1.0, 0.0, 0.0, 0.01))
        for eps in EPS_GRID:
            for wb in W_GRID:
                for ws in W_GRID:
                    p = (eps + F @ np.array([1.0, wb, ws])) * mask
                    ll = float(np.mean(np.log(p[rows, chosen] / p.sum(axis=1)))) if len(train) else -np.inf
                    if ll > best[0]:
                        best = (ll, (1.0, wb, ws, eps))
        self.train_ll = float(best[0])
        *w, self.eps = best[1]
        self.weights = np.array(w)

    def params(self) -> dict:
        return {"w_unigram": 1.0, "w_bigram": float(self.weights[1]), "w_state": float(self.weights[2]),
                "eps": self.eps, "train_logp": self.train_ll}

    def logp(self, d) -> np.ndarray:
        p = self.eps + self.counts.features(d, exclude_own=False) @ self.weights
        return np.log(p / p.sum())
