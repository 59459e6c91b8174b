"""The whole fit: split, fit a persona per label and a pooled one, evaluate against the
baselines on the same test decisions, the persona x label matrix, attribution, report.

Everything expensive is resumable: GA checkpoints per fit (``checkpoints/``) and the
Q-value cache (``cache/q.pkl``) live in the output folder, so running the same command
again after Ctrl-C or a crash continues where it stopped.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from agent.matchlog import atomic_write_bytes
from agent.persona import write_persona_file

from . import ga as G
from . import heldout as EV
from .baselines import MoveFrequency
from .fitting import fit_champion, fit_persona
from .likelihood import log_probs_all, pad
from .metrics import decision_metrics, random_metrics
from .prepare import FitError, prepare, slug
from .scoring import Scorer


@dataclass
class Settings:
    limit: int = 1000
    population: int = 100
    generations: int = 50
    patience: int = 10
    subsample: int = 300
    final_size: int = 0          # decisions to rank the finalists on (0: all training decisions)
    split: str = "later"         # "later" or "kfold"
    test_fraction: float = 0.3
    folds: int = 5
    fold: int = 0
    test_pms: int = 0            # evaluate on at most this many test player-matches per label (0: all)
    seed: int = 0
    thesis: bool = False
    replicates: int = 2
    noise_decisions: int = 100   # test decisions per label re-scored with replicate 1
    n_boot: int = 1000
    pooled: bool = True


def _persona_logp(qs, decisions, choice) -> list:
    Q, mask = pad(qs)
    lp = log_probs_all(Q, mask, choice.get("random_error", 0.0), choice.get("nice_threshold", 0.0),
                       choice.get("kappa", 0.1))
    return [lp[i, :len(d.moves)] for i, d in enumerate(decisions)]


def _persona_metrics(qs, decisions, choice) -> dict:
    return decision_metrics(qs, _persona_logp(qs, decisions, choice), [d.chosen for d in decisions],
                            choice=choice, is_q=True)


def run(dataset, out_dir, s: Settings, *, scheduler=None, workers=None, progress=True, log=print) -> dict:
    out = Path(out_dir)
    decisions = dataset.decisions
    game, labels, train, test = prepare(decisions, s)
    scorer = Scorer(dataset.games, seed=s.seed, limit=s.limit, cache_file=out / "cache" / "q.pkl",
                    scheduler=scheduler, workers=workers, progress=progress)
    cfg = dict(population=s.population, generations=s.generations, patience=s.patience,
               thesis=s.thesis, seed=s.seed)
    final = s.final_size if s.final_size > 0 else 0
    fits, champs, freqs = {}, {}, {}
    # The pooled persona first: its genes seed every player's GA and compete in its final
    # ranking, so a player's fit starts from what all players share and keeps it unless its
    # own decisions favour other genes (a player's GA alone, on a quarter of the data, had
    # ended below the pooled persona on that player's own test decisions).
    pooled = None
    if s.pooled and len(labels) > 1:
        log(f"fitting the pooled persona on {len(train)} training decisions of {len(labels)} players")
        pooled = fit_persona(train, scorer, G.GAConfig(**cfg), name="pooled", subsample=s.subsample,
                             final_size=final, checkpoint=out / "checkpoints" / "pooled.json.gz",
                             limit=s.limit, log=log)
    seeds = [pooled["genome"]] if pooled else []
    for lab in labels:
        tr = [d for d in train if d.label == lab]
        if not tr:
            raise FitError(f"{lab}: no training decisions")
        log(f"fitting {lab} on {len(tr)} training decisions")
        fits[lab] = fit_persona(tr, scorer, G.GAConfig(**cfg), name=lab, subsample=s.subsample,
                                final_size=final, checkpoint=out / "checkpoints" / f"{slug(lab)}.json.gz",
                                limit=s.limit, seeds=seeds, log=log)
        champs[lab] = fit_champion(tr, scorer, limit=s.limit, final_size=final, seed=s.seed)
        freqs[lab] = MoveFrequency(tr)
    # ---- evaluation: every persona scored once on every test decision
    personas = [fits[lab]["persona"] for lab in labels] + ([pooled["persona"]] if pooled else [])
    champion = next(iter(champs.values()))["persona"]
    qs = scorer.q(personas + [champion], test, description="test decisions")
    scorer.save()
    q_fit = dict(zip(labels, qs[:len(labels)]))
    q_pool = qs[len(labels)] if pooled else None
    q_champ = qs[-1]
    idx = EV.label_index(test, labels)
    per_label = {}
    for lab in labels:
        ds = [test[i] for i in idx[lab]]
        if not ds:
            continue
        m = {"fitted": _persona_metrics([q_fit[lab][i] for i in idx[lab]], ds, fits[lab]["choice"]),
             "champion": _persona_metrics([q_champ[i] for i in idx[lab]], ds, champs[lab]["choice"]),
             "random": random_metrics([len(d.moves) for d in ds])}
        if pooled:
            m["pooled"] = _persona_metrics([q_pool[i] for i in idx[lab]], ds, pooled["choice"])
        lps = [freqs[lab].logp(d) for d in ds]
        m["move-frequency"] = decision_metrics(lps, lps, [d.chosen for d in ds], is_q=False)
        per_label[lab] = m
    rows, diffs, per_decision = EV.compare(test, labels, per_label, n_boot=s.n_boot, seed=s.seed)
    # ---- persona x label matrix (row = trace owner, column = fitted persona)
    logp_by_persona = {col: [lp[d.chosen] for lp, d in zip(_persona_logp(q_fit[col], test, fits[col]["choice"]), test)]
                       for col in labels}
    matrix_logp, matrix_aar, diagonal = EV.matrix(
        test, labels, lambda col, rows_idx: _persona_metrics([q_fit[col][i] for i in rows_idx],
                                                             [test[i] for i in rows_idx], fits[col]["choice"]))
    attribution = EV.attribution(test, labels, logp_by_persona)
    # ---- residual Q noise: replicate 1 of a few test decisions per label (spec 4.5 item 1)
    noise = {}
    if s.replicates > 1:
        for lab in labels:
            sub = [test[i] for i in idx[lab][:s.noise_decisions]]
            if not sub:
                continue
            q0 = [q_fit[lab][i] for i in idx[lab][:s.noise_decisions]]
            (q1,) = scorer.q([fits[lab]["persona"]], sub, replicate=1, description=f"{lab}: replicate 1")
            noise[lab] = {"decisions": len(sub),
                          "mean_abs_q_diff": float(np.mean([np.mean(np.abs(a - b)) for a, b in zip(q0, q1)])),
                          "argmax_agreement": float(np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(q0, q1)]))}
        scorer.save()
    # ---- outputs
    pdir = out / "personas"
    pdir.mkdir(parents=True, exist_ok=True)
    for lab in labels:
        write_persona_file(pdir, slug(lab), fits[lab]["persona"].to_toml())
    if pooled:
        write_persona_file(pdir, "pooled", pooled["persona"].to_toml())
    result = {
        "settings": asdict(s), "labels": labels, "game": game,
        "compute": {"workers": workers, "scheduler": scheduler},
        "data": {**dataset.summary, "train_decisions": len(train), "test_decisions": len(test),
                 "train_player_matches": len({d.pm for d in train}),
                 "test_player_matches": len({d.pm for d in test})},
        "fits": {lab: _fit_json(f) for lab, f in fits.items()},
        "pooled": _fit_json(pooled) if pooled else None,
        "champion_choice": {lab: c["choice"] for lab, c in champs.items()},
        "move_frequency": {lab: f.params() for lab, f in freqs.items()},
        "metrics": rows, "paired": diffs, "matrix": {"rows": labels, "columns": labels,
                                                       "logp": matrix_logp, "argmax": matrix_aar,
                                                       "diagonal_max": diagonal},
        "attribution": attribution, "q_noise": noise, "scored_decisions": scorer.computed,
        "bar": EV.bar(labels, diffs, diagonal, pooled is not None, logp_only=()),
    }
    atomic_write_bytes(out / "results.json", json.dumps(result, indent=1, default=float).encode())
    from .fitreport import write   # matplotlib (about 0.5 s to import): only when the report is written
    write(out, result, per_decision)
    return result


def _fit_json(f) -> dict:
    return {"persona": f["persona"].name, "genome": f["genome"], "choice": f["choice"], "stopped": f["stopped"],
            "train_fitness": f["train_fitness"], "ranking_decisions": f["ranking_decisions"],
            "seconds": f.get("seconds"),
            "history": [{k: v for k, v in h.items() if k != "fitness"} for h in f["history"]]}
