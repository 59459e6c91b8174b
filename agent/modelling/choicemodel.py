"""The per-player model of spec 4.6: a conditional logit over the legal moves on the shared
evaluations, mixed with the uniform choice.

    P(a|s) = eps/|A| + (1 - eps) * exp(w . x(s,a)) / sum_b exp(w . x(s,b))

``x(s,a)`` joins four kinds of columns:
- the shared evaluations of the move (``shared_evaluations.py``: searches, look-ahead, fact
  changes), the same for every player;
- move features that mean the same in every position (``movefeatures.py``: where the move
  lands on the board, its rank among the legal moves along each coordinate, its relation to
  the last moves, captures), so that a habit carries to positions never seen;
- move tokens: the move's functor and each argument in its position (``drop/1=4``), so
  a player's liking for some moves or cells is learnt (game symbols are keys only);
- the player's own move frequencies (``baselines.MoveCounts``: the move alone, after the
  previous joint move, in this state); while fitting, from the player's earlier matches
  only, as a later match is predicted from all of them, so repeating players are learnt
  without a match predicting itself.

Fitting is convex for a given eps: L2-penalised maximum likelihood (L-BFGS), the penalty
pulling ``w`` towards a prior (the pooled model's weights for a player, zero for the pooled
model itself), so a player with little data gets the pooled model, not noise.  The penalty
and eps are chosen by grouped cross-validation over the training player-matches; eps is
at least ``EPS_MIN`` (spec 4.6 item 3), so one surprising move costs at most
log(EPS_MIN/|A|).

A fitted model is data (``to_dict``/``from_dict``): it goes into a persona file, and live
play computes the same columns for the current state (``agent.modelplay``).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from gdl.terms import render

# the table's words and its check are the persona file's (``agent.modeltable``)
from agent.modeltable import EPS_MIN, FREQ_COLUMNS, MODEL_VERSION, check_table

from . import movefeatures as MF
from .baselines import MoveCounts

EPS_GRID = (EPS_MIN, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2, 0.3, 0.5, 0.75, 1.0)   # 1: no signal, uniform
L2_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
CV_FOLDS = 3
MAX_TOKENS = 400
MIN_TOKEN_COUNT = 3


# ------------------------------------------------------------------------------ columns

def move_tokens(move) -> list:
    """``(drop 4)`` -> ["drop/1", "drop/1:1=4"]; an atom move is its own token."""
    if isinstance(move, tuple):
        head = f"{render(move[0])}/{len(move) - 1}"
        return [head] + [f"{head}:{i}={render(a)}" for i, a in enumerate(move[1:], 1)]
    try:
        return [render(move)]
    except TypeError:       # synthetic decisions in tests
        return [repr(move)]


def token_vocabulary(decisions) -> list:
    """The tokens of the legal moves seen at least ``MIN_TOKEN_COUNT`` times, the most
    frequent first, at most ``MAX_TOKENS`` (the order is stable: count, then text)."""
    count: dict = {}
    for d in decisions:
        for m in d.moves:
            for t in move_tokens(m):
                count[t] = count.get(t, 0) + 1
    good = sorted((t for t, c in count.items() if c >= MIN_TOKEN_COUNT), key=lambda t: (-count[t], t))
    return good[:MAX_TOKENS]


def freq_columns(freq: np.ndarray) -> np.ndarray:
    return np.concatenate([freq, np.log(0.01 + freq)], axis=1)


def columns(shared: np.ndarray, moves, freq: np.ndarray, vocab_index: dict, movex=None) -> np.ndarray:
    """The model's columns for one decision: shared | move features | tokens | frequencies
    (``movex``: the move features' columns already selected, None: none)."""
    tok = np.zeros((len(moves), len(vocab_index)))
    for j, m in enumerate(moves):
        for t in move_tokens(m):
            k = vocab_index.get(t)
            if k is not None:
                tok[j, k] = 1.0
    parts = [np.asarray(shared, float)]
    if movex is not None:
        parts.append(np.asarray(movex, float))
    return np.concatenate(parts + [tok, freq_columns(freq)], axis=1)


def select_move_columns(movex, move_names) -> np.ndarray | None:
    """The columns ``move_names`` of a full ``movefeatures.NAMES`` matrix (None: no names)."""
    if not move_names:
        return None
    if movex is None:
        raise ValueError("this model reads move features: pass the decision's movefeatures.compute matrix")
    return np.asarray(movex, float)[:, [MF.INDEX[n] for n in move_names]]


# ------------------------------------------------------------------------------ ragged data

class Rows:
    """Decisions stacked as rows (one per legal move): ``X`` (rows x columns), ``start``
    (first row of each decision), ``chosen`` (row of the recorded move)."""

    def __init__(self, mats, chosen):
        sizes = np.array([len(m) for m in mats], int)
        self.start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
        self.size = sizes
        self.X = np.concatenate(mats, axis=0) if mats else np.zeros((0, 0))
        self.chosen = self.start + np.asarray(chosen, int)
        self.seg = np.repeat(np.arange(len(mats)), sizes)

    def subset(self, idx) -> "Rows":
        idx = np.asarray(idx, int)
        mats = [self.X[self.start[i]:self.start[i] + self.size[i]] for i in idx]
        return Rows(mats, self.chosen[idx] - self.start[idx])

    def __len__(self):
        return len(self.start)


def _log_softmax(rows: Rows, w: np.ndarray) -> np.ndarray:
    z = rows.X @ w
    top = np.maximum.reduceat(z, rows.start)
    e = np.exp(z - top[rows.seg])
    lse = np.log(np.add.reduceat(e, rows.start)) + top
    return z - lse[rows.seg]


def mix(log_softmax, log_n, eps: float):
    """log(eps/n + (1 - eps) * softmax), elementwise (eps = 1: uniform)."""
    if eps >= 1.0:
        return -log_n + 0.0 * log_softmax
    return np.logaddexp(math.log(eps) - log_n, math.log1p(-eps) + log_softmax)


def log_probs(rows: Rows, w: np.ndarray, eps: float) -> np.ndarray:
    """log P of every row (move) under the mixture."""
    return mix(_log_softmax(rows, w), np.log(rows.size[rows.seg]), eps)


def fit_logit(rows: Rows, l2: float, prior: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """argmin of -sum log softmax(chosen) + l2/2 |w - prior|^2 (convex; L-BFGS from
    ``start``, default the prior)."""
    chosen_x = rows.X[rows.chosen].sum(axis=0)

    def f(w):
        ls = _log_softmax(rows, w)
        d = w - prior
        return -ls[rows.chosen].sum() + 0.5 * l2 * d @ d, np.exp(ls) @ rows.X - chosen_x + l2 * d
    res = minimize(f, (prior if start is None else start).copy(), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500})
    return res.x


def _folds(pms, starts, k: int) -> list:
    """Player-matches cut into k contiguous blocks in time order (start, then id): each
    fold is held out whole, as a later test set is, so the penalty is chosen for players
    whose habits drift from one stretch of matches to the next."""
    first: dict = {}
    for pm, t in zip(pms, starts):
        first[pm] = min(t, first.get(pm, t))
    ids = sorted(first, key=lambda pm: (first[pm], pm))
    fold_of = {pm: i * k // len(ids) for i, pm in enumerate(ids)}
    return [fold_of[pm] for pm in pms]


def choose_penalty(rows: Rows, pms, fold, prior: np.ndarray) -> dict:
    """L2 weight and eps by grouped cross-validation over player-matches (blocks in time
    order): the out-of-fold log-likelihood of the mixture, best pair of the grids (ties:
    the stronger penalty)."""
    k = min(CV_FOLDS, len(set(pms)))
    if k < 2:
        return {"l2": max(L2_GRID), "eps": 0.1, "cv_logp": math.nan, "folds": 0}
    fold = np.asarray(fold)
    oof = {l2: np.zeros(len(rows)) for l2 in L2_GRID}
    for f in range(k):
        tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        rtr, rte = rows.subset(tr), rows.subset(te)
        w = prior
        for l2 in sorted(L2_GRID, reverse=True):      # a path: each fit starts from the last
            w = fit_logit(rtr, l2, prior, start=w)
            oof[l2][te] = _log_softmax(rte, w)[rte.chosen]
    logn = np.log(rows.size)
    best = None
    for l2 in sorted(L2_GRID, reverse=True):
        for eps in EPS_GRID:
            ll = float(np.mean(mix(oof[l2], logn, eps)))
            if best is None or ll > best["cv_logp"] + 1e-12:
                best = {"l2": l2, "eps": eps, "cv_logp": ll, "folds": k}
    best["cv_random_logp"] = float(np.mean(-logn))
    return best


# ------------------------------------------------------------------------------ the model

class ChoiceModel:
    """A fitted model: feature names, scaling, weights, eps, token vocabulary, counts."""

    def __init__(self, shared_names, vocab, counts: MoveCounts, mean, scale, w, eps, info=None,
                 move_names=(), view: "MF.MoveView | None" = None):
        self.shared_names = list(shared_names)
        self.move_names = list(move_names)
        self.view = view if view is not None else MF.MoveView(None)
        self.vocab = list(vocab)
        self.vocab_index = {t: i for i, t in enumerate(self.vocab)}
        self.counts = counts
        self.mean, self.scale = np.asarray(mean, float), np.asarray(scale, float)
        self.w = np.asarray(w, float)
        self.eps = float(eps)
        self.info = dict(info or {})

    @property
    def names(self) -> list:
        return (self.shared_names + [f"move:{n}" for n in self.move_names] + [f"token:{t}" for t in self.vocab]
                + list(FREQ_COLUMNS))

    def move_features(self, engine, state, role: int, moves, history=()) -> np.ndarray | None:
        """The move features of a decision on this model's board (None: the model reads
        none): what ``matrix`` and ``log_probs`` take as ``movex``."""
        if not self.move_names:
            return None
        return MF.compute(self.view, engine, state, role, moves, history)

    def matrix(self, shared, state, prev, moves, pm=None, movex=None) -> np.ndarray:
        """Scaled columns of one decision (``pm``: leave that player-match's counts out;
        ``movex``: the decision's ``movefeatures.compute`` matrix, for a model that reads it)."""
        x = columns(shared, moves, self.counts.frequencies(state, prev, moves, pm), self.vocab_index,
                    select_move_columns(movex, self.move_names))
        return (x - self.mean) / self.scale

    def log_probs(self, shared, state, prev, moves, movex=None) -> np.ndarray:
        """log P over ``moves`` (live play and evaluation use the same formula)."""
        rows = Rows([self.matrix(shared, state, prev, moves, movex=movex)], [0])
        return log_probs(rows, self.w, self.eps)

    def weights_by_name(self) -> dict:
        return dict(zip(self.names, (float(v) for v in self.w / self.scale)))

    def to_dict(self) -> dict:
        return {"version": MODEL_VERSION, "shared": self.shared_names, "move": self.move_names,
                "board": self.view.to_dict(), "tokens": self.vocab,
                "mean": self.mean.tolist(), "scale": self.scale.tolist(), "weights": self.w.tolist(),
                "epsilon": self.eps, "counts": self.counts.to_dict(), "info": self.info}

    @classmethod
    def from_dict(cls, d: dict, source: str = "<model>") -> "ChoiceModel":
        """A model from its persona file's table, checked whole (``check_table``): a
        broken table is refused here with one line naming the field, never at a move."""
        check_table(d, source)
        return cls(d["shared"], d["tokens"], MoveCounts.from_dict(d["counts"]), d["mean"], d["scale"],
                   d["weights"], d["epsilon"], d.get("info"), d.get("move", []),
                   MF.MoveView.from_dict(d.get("board", {}), source))


def _training_matrices(decisions, shared, vocab_index, fold, movex=None):
    """Training columns with the move counts of the player's matches in *earlier* time
    blocks only (``fold``: the block of each decision).  A held-out later match is
    predicted from the whole past, which it shares little with when the opponents or the
    player changed; counts from the same block (or every other match) had taught the model
    to trust repeats that did not carry over to later matches."""
    out = [None] * len(decisions)
    past = MoveCounts()
    for b in sorted(set(fold)):
        idx = [i for i, f in enumerate(fold) if f == b]
        for i in idx:
            d = decisions[i]
            out[i] = columns(shared[i], d.moves, past.frequencies(d.state, d.prev, d.moves), vocab_index,
                             None if movex is None else movex[i])
        past.add([decisions[i] for i in idx])
    return out


def _design(decisions, shared, shared_names, vocab, vi, counts, fold, move_names, sel_x, prior) -> tuple:
    """(mean, scale, prior weights, scaled rows) of the training decisions with these move
    columns: the data's scaling, the prior's scaling and weights wherever it has the column."""
    mats = _training_matrices(decisions, shared, vi, fold, sel_x)
    names = ChoiceModel(shared_names, vocab, counts, [], [], [], 1.0, move_names=move_names).names
    allx = np.concatenate(mats, axis=0)
    mean = allx.mean(axis=0)
    scale = allx.std(axis=0)
    scale[scale < 1e-9] = 1.0
    w0 = np.zeros(allx.shape[1])
    if prior is not None:
        where = {n: i for i, n in enumerate(prior.names)}
        for j, n in enumerate(names):
            i = where.get(n)
            if i is not None:
                mean[j], scale[j], w0[j] = prior.mean[i], prior.scale[i], prior.w[i]
    rows = Rows([(m - mean) / scale for m in mats], [d.chosen for d in decisions])
    return mean, scale, w0, rows


def fit(decisions, shared, shared_names, *, prior: "ChoiceModel | None" = None, vocab=None,
        movex=None, view: "MF.MoveView | None" = None) -> ChoiceModel:
    """Fit one model on ``decisions`` with their shared matrices (aligned lists).
    ``prior``: the pooled model (same game): its vocabulary, scaling and weights are kept,
    and this fit is pulled towards its weights.  ``movex``: each decision's move features
    (``movefeatures.compute`` on ``view``'s board; None: the model reads none), kept when
    the cross-validation prefers them (``info["move_features"]``); with a prior, read when
    the prior reads them."""
    if not decisions:
        raise ValueError("no decisions to fit")
    counts = MoveCounts(decisions)
    move_names = list(MF.NAMES) if movex is not None else []
    if prior is not None:
        # A fit with a prior reads what the prior reads: the pooled fit had the game's data to
        # judge the move features by (a bot's own 34 decisions chose them by chance and lost
        # 0.16 nats).
        vocab, move_names = prior.vocab, prior.move_names
        if move_names:
            view = prior.view
    else:
        vocab = token_vocabulary(decisions) if vocab is None else vocab
    if move_names and movex is None:
        raise ValueError("the prior reads move features: pass movex")
    vi = {t: i for i, t in enumerate(vocab)}
    pms, starts = [d.pm for d in decisions], [d.start for d in decisions]
    k = min(CV_FOLDS, len(set(pms)))
    fold = _folds(pms, starts, max(1, k))
    # A fit from scratch keeps the move features only where the cross-validation says they
    # predict the player's later matches better than the model without them: on the
    # recorded connectFour bots they cost one bot 0.14 nats and 0.09 AAR on its test matches
    # while they carried the scripted people's habits to new positions (docs/benchmarks/web.md).
    tried = [move_names] + ([[]] if move_names and prior is None else [])
    best = None
    for names_m in tried:
        mean, scale, w0, rows = _design(decisions, shared, shared_names, vocab, vi, counts, fold, names_m,
                                        [select_move_columns(x, names_m) for x in movex] if names_m else None,
                                        prior)
        sel = choose_penalty(rows, pms, fold, w0)
        if best is None or sel["cv_logp"] > best[1]["cv_logp"] + 1e-12:
            best = (names_m, sel, (mean, scale, w0, rows))
    move_names, sel, (mean, scale, w0, rows) = best
    w = fit_logit(rows, sel["l2"], w0)
    train_lp = float(np.mean(log_probs(rows, w, sel["eps"])[rows.chosen]))
    n_pm = len(set(pms))
    warnings = []
    if len(decisions) < 200:
        warnings.append(f"only {len(decisions)} training decisions (fewer than 200): the model stays close to "
                        + ("the pooled model" if prior is not None else "uniform"))
    if sel["folds"] and sel["cv_logp"] <= sel["cv_random_logp"]:
        warnings.append("cross-validated likelihood is not above uniform random: the data are too thin "
                        "or the player too erratic to predict")
    info = {"decisions": len(decisions), "player_matches": n_pm, "l2": sel["l2"], "cv_logp": sel["cv_logp"],
            "move_features": ("kept" if move_names else "left out by cross-validation") if len(tried) > 1
            else ("read" if move_names else "none"),
            "cv_random_logp": sel.get("cv_random_logp"), "cv_folds": sel["folds"], "train_logp": train_lp,
            "prior": "pooled" if prior is not None else "none", "warnings": warnings}
    return ChoiceModel(shared_names, vocab, counts, mean, scale, w, sel["eps"], info, move_names,
                       view if move_names else None)


def held_out_log_probs(model: ChoiceModel, decisions, shared, movex=None) -> list:
    """log P over each decision's moves (held-out decisions: the model's counts whole;
    ``movex``: their move features, aligned, for a model that reads them)."""
    out = []
    for i, (d, x) in enumerate(zip(decisions, shared)):
        out.append(model.log_probs(x, d.state, d.prev, d.moves, None if movex is None else movex[i]))
    return out
