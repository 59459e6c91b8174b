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

from collections import Counter, defaultdict

import numpy as np

W_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
EPS_GRID = (0.001, 0.01, 0.1)


def _contexts(d):
    m = d.moves[d.chosen]
    return (m,), (d.prev, m), (d.state, m)


class _Counts:
    def __init__(self, decisions):
        self.c = [Counter(), Counter(), Counter()]        # (context..., move) counts per level
        self.n = [Counter(), Counter(), Counter()]        # context totals per level
        self.by_pm = defaultdict(lambda: ([Counter(), Counter(), Counter()], [Counter(), Counter(), Counter()]))
        for d in decisions:
            keys = _contexts(d)
            ctx = ((), (d.prev,), (d.state,))
            own = self.by_pm[d.pm]
            for lvl in range(3):
                self.c[lvl][keys[lvl]] += 1
                self.n[lvl][ctx[lvl]] += 1
                own[0][lvl][keys[lvl]] += 1
                own[1][lvl][ctx[lvl]] += 1

    def features(self, d, exclude_own: bool) -> np.ndarray:
        """(moves x 3) relative frequencies of each legal move at the three levels."""
        own = self.by_pm.get(d.pm) if exclude_own else None
        ctx = ((), (d.prev,), (d.state,))
        f = np.zeros((len(d.moves), 3))
        for lvl in range(3):
            tot = self.n[lvl][ctx[lvl]] - (own[1][lvl][ctx[lvl]] if own else 0)
            if tot <= 0:
                continue
            for j, m in enumerate(d.moves):
                key = (m,) if lvl == 0 else (ctx[lvl][0], m)
                f[j, lvl] = (self.c[lvl][key] - (own[0][lvl][key] if own else 0)) / tot
        return f


class MoveFrequency:
    """Fitted on training decisions; ``logp(d)`` gives log P over d.moves."""

    def __init__(self, train):
        self.counts = _Counts(train)
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
