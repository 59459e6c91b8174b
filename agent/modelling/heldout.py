"""Held-out evaluation shared by both fitters (the GA of spec 4.5 and the fast fit of 4.6):
per-player metrics of every model on the same test decisions, paired differences against
the baselines, the model x player matrix, attribution, and the issue's bar.

A model is given per player as its per-decision metrics (``metrics.decision_metrics``):
``per_label[label][model] = metrics dict`` aligned with that label's test decisions.
"""
from __future__ import annotations

import math

import numpy as np

from . import attribution as A
from .metrics import interval, paired_interval

MODELS = ("fitted", "pooled", "champion", "move-frequency", "random")
SHOWN = (("logp", "log-likelihood / decision"), ("argmax", "AAR of argmax"), ("choose", "AAR of CHOOSE"),
         ("expected", "expected AAR"), ("top2", "top-2"), ("top5", "top-5"), ("regret", "Q-regret"),
         ("cset", "moves CHOOSE picks among"))
PAIRED = ("logp", "argmax", "choose", "expected")


def label_index(test, labels) -> dict:
    return {lab: [i for i, d in enumerate(test) if d.label == lab] for lab in labels}


def compare(test, labels, per_label: dict, *, n_boot: int, seed: int, models=MODELS):
    """(metric rows, paired differences, per-decision rows) of the models on each label's
    test decisions; the first of ``models`` is the one compared with the others."""
    idx = label_index(test, labels)
    rows, diffs, per_decision = [], [], []
    for lab in labels:
        ds = [test[i] for i in idx[lab]]
        if not ds:
            continue
        m = per_label[lab]
        pms = [d.pm for d in ds]
        for model in models:
            if model not in m:
                continue
            r = {"label": lab, "model": model, "decisions": len(ds), "player_matches": len(set(pms))}
            for key, _ in SHOWN:
                v, lo, hi = interval(pms, m[model][key], n_boot=n_boot, seed=seed)
                r.update({key: v, f"{key}_lo": lo, f"{key}_hi": hi})
            r["geo_mean_p"] = math.exp(r["logp"])
            rows.append(r)
        first = models[0]
        for model in models[1:]:
            if model not in m:
                continue
            for key in PAIRED:
                d_, lo, hi = paired_interval(pms, m[first][key], m[model][key], n_boot=n_boot, seed=seed)
                diffs.append({"label": lab, "baseline": model, "metric": key, "diff": d_, "lo": lo, "hi": hi,
                              "beats": bool(lo > 0)})
        for j, d in enumerate(ds):
            per_decision.append({"label": lab, "match_id": d.match_id, "role": d.role, "ply": d.ply,
                                 "moves": len(d.moves), **{f"{mo}_logp": float(m[mo]["logp"][j]) for mo in m},
                                 **{f"{mo}_argmax": float(m[mo]["argmax"][j]) for mo in m}})
    return rows, diffs, per_decision


def matrix(test, labels, metrics_of) -> tuple:
    """(log-likelihood matrix, argmax matrix, diagonal largest per row): row = the player
    whose test decisions, column = the model fitted to a player; ``metrics_of(col, idx)``
    gives the column model's metrics on the test decisions at ``idx``."""
    idx = label_index(test, labels)
    ml_all, ma_all = [], []
    for row in labels:
        ml, ma = [], []
        for col in labels:
            if not idx[row]:
                ml.append(math.nan)
                ma.append(math.nan)
                continue
            mm = metrics_of(col, idx[row])
            ml.append(float(np.mean(mm["logp"])))
            ma.append(float(np.mean(mm["argmax"])))
        ml_all.append(ml)
        ma_all.append(ma)
    diagonal = [bool(np.nanargmax(r) == i) if not all(map(math.isnan, r)) else False
                for i, r in enumerate(ml_all)]
    return ml_all, ma_all, diagonal


def attribution(test, labels, logp_by_model: dict) -> list:
    """Attribution accuracy among the labels' models (``logp_by_model[label]``: log P of
    each test decision's recorded move under that label's model)."""
    return A.accuracy(test, logp_by_model, {lab: lab for lab in labels}) if len(labels) > 1 else []


def bar(labels, diffs, diagonal, has_pooled, baselines=("champion", "pooled"),
        logp_only=("move-frequency",)) -> dict:
    """The issue's bar, per label: the paired differences of log-likelihood and argmax AAR
    against ``baselines``, and of log-likelihood against ``logp_only``, all above 0; and
    the matrix diagonal dominant."""
    per = {}
    for lab in labels:
        need = [d for d in diffs if d["label"] == lab and
                ((d["metric"] in ("logp", "argmax") and d["baseline"] in baselines) or
                 (d["metric"] == "logp" and d["baseline"] in logp_only))]
        expected = 2 * len([b for b in baselines if b != "pooled" or has_pooled]) + len(logp_only)
        per[lab] = len(need) == expected and all(d["beats"] for d in need)
    return {"per_label": per, "labels_meeting": sum(per.values()), "diagonal_all": all(diagonal)}
