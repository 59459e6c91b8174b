"""The default fit (spec 4.6): shared evaluations once per decision, then a cheap model per
player, evaluated against the baselines on the held-out player-matches.

Stages, each timed (wall and CPU, this process and its workers):
1. plan: the searches' simulations, from their CPU cost measured on a few recorded states
   and kept with the game's cache (``make_plan``, ``shared_evaluations.plan_for``); the run says
   what it will cost and, above ``BUDGET_SECONDS``, how ``--scheduler`` sends it to Dask;
2. shared evaluations of every selected decision (``EvalCache``: on disk, shared by every
   fit of the same game; resumable, a second fit searches nothing);
3. the move features of every decision (``movefeatures``: the game's board from the rules
   and the recorded states, then each move's place, rank and relations; cheap: one
   successor per move), the pooled model on all training decisions, then each player's,
   pulled towards the pooled model (``choicemodel.fit``);
4. evaluation on the test decisions: the player's model, the pooled model, the champion
   (the deep search's Q with its choice parameters fitted on the player's training
   decisions: spec 4.5's behaviour likelihood), the move-frequency model and random.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import psutil

from agent.compute import default_workers
from agent.engine.loader import load_engine
from agent.persona import PersonaError, load_persona, persona_files, persona_stem, write_persona_file
from agent.search.features import calibrate

from . import attribution as A
from . import choicemodel as CM
from . import heldout as EV
from . import movefeatures as MF
from . import shared_evaluations as E
from .baselines import MoveFrequency
from .likelihood import fit_choice, log_probs_all, pad
from .metrics import decision_metrics, random_metrics
from .modelfile import align, model_of, model_persona_toml
from .prepare import FitError, decision_seed, prepare, slug, stratified_subsample

BUDGET_SECONDS = 30 * 60          # the whole default fit of a game (spec 4.6 item 4)
EVAL_BUDGET_SECONDS = 20 * 60     # of which the shared evaluations, when a game's plan is chosen
PROBE_DECISIONS = 30              # recorded states the plan's cost is measured on (9 underestimated it by 20 %)


@dataclass
class FastSettings:
    split: str = "later"
    test_fraction: float = 0.3
    folds: int = 5
    fold: int = 0
    test_pms: int = 0
    seed: int = 0
    n_boot: int = 1000
    pooled: bool = True
    limit: int = 0               # simulations of the searches (0: the game's plan)
    train_cap: int = 3000        # training decisions per player modelled (0: all)
    move_features: bool = True   # the models read movefeatures' columns (False: as before they existed)


@dataclass
class HeldOutResults:
    """What the evaluation stage finds on the test decisions (``heldout.py``'s pieces, the
    champion's and move-frequency's fitted parameters, and which prior model each player
    is most like); ``run`` writes them into results.json under the keys named beside."""
    metrics: list               # "metrics": one row per (player, model)
    paired: list                # "paired": the paired differences against the baselines
    per_decision: list          # decisions.csv of the report
    matrix_logp: list           # "matrix": model x player
    matrix_argmax: list
    diagonal_max: list          # per player: its own model is the best of its row
    attribution: list           # "attribution"
    champion_choice: dict       # "champion_choice": player -> fitted choice parameters
    move_frequency: dict        # "move_frequency": player -> the n-gram model's parameters
    most_like: dict             # "most_like": player -> {prior model: mean log-likelihood}


class Clock:
    """Wall and CPU seconds of stages; CPU includes this process's live worker processes."""

    def __init__(self):
        self.stages: dict = {}

    @staticmethod
    def _cpu() -> float:
        me = psutil.Process()
        total = sum(me.cpu_times()[:2])
        for c in me.children(recursive=True):
            try:
                total += sum(c.cpu_times()[:2])
            except psutil.Error:
                continue
        return total

    def run(self, name: str, fn, *args, **kw):
        w0, c0 = time.monotonic(), self._cpu()
        try:
            return fn(*args, **kw)
        finally:
            self.stages[name] = {"wall": round(time.monotonic() - w0, 2), "cpu": round(self._cpu() - c0, 2)}


def _items(decisions, seed: int) -> list:
    """[(cache key, (state, role, CRN seed, moves))] of decisions (spec 4.5 item 1 seeds)."""
    out = []
    for d in decisions:
        s = decision_seed(seed, d.match_id, d.role, d.ply, 0)
        out.append(((d.match_id, d.role, d.ply, s), (d.state, d.role, s, d.moves)))
    return out


def make_plan(engine, train, test, seed: int, *, cap: int, workers: int, limit: int = 0,
              cache_root=None, game: str = "") -> tuple:
    """(plan, modelled training decisions).  The game's plan is the one kept with its cache,
    else measured here and kept.  Training decisions are capped at ``cap`` per player only
    where the budget binds: when the plan cannot give every decision the thesis's 1000
    simulations (a long game, many decisions), the cap keeps the searches deeper; where it
    can, no decision is thrown away.  ``limit`` overrides the plan's simulations."""
    plan = E.EvalCache.stored_plan(cache_root, game)
    capped = cap_training(train, cap, seed)
    if plan is None:
        everything = train + test
        sample = stratified_subsample(sorted(everything, key=lambda d: d.key), PROBE_DECISIONS + 1, (seed, "plan"))
        plan = E.plan_for(engine, [it for _, it in _items(sample, seed)], decisions=len(everything), workers=workers,
                          budget_seconds=EVAL_BUDGET_SECONDS)
        if plan["limit"] < E.DEFAULT_LIMIT and len(capped) < len(train):
            n = len(capped) + len(test)
            plan = {**plan, "limit": E.affordable_limit(plan["measured"], n),
                    "measured": {**plan["measured"], "decisions": n}}
        E.EvalCache.store_plan(cache_root, game, plan)
    if limit:
        plan = {**plan, "limit": int(limit)}
    return plan, (train if plan["limit"] >= E.DEFAULT_LIMIT else capped)


def cap_training(train, cap: int, seed: int) -> list:
    """At most ``cap`` training decisions per player, spread over its player-matches."""
    if cap <= 0:
        return train
    out = []
    for lab in sorted({d.label for d in train}):
        out += stratified_subsample([d for d in train if d.label == lab], cap, (seed, "train", lab))
    return out


def _champion_metrics(qdeep_train, train, qdeep_test, test) -> tuple:
    Q, mask = pad(qdeep_train)
    choice = fit_choice(Q, mask, [d.chosen for d in train])
    choice.pop("ll")
    Qt, maskt = pad(qdeep_test)
    lp = log_probs_all(Qt, maskt, choice["random_error"], choice["nice_threshold"], choice["kappa"])
    lps = [lp[i, :len(d.moves)] for i, d in enumerate(test)]
    return decision_metrics(qdeep_test, lps, [d.chosen for d in test], choice=choice, is_q=True), choice


def _model_metrics(model, ds, xs, movex=None) -> dict:
    lps = CM.held_out_log_probs(model, ds, xs, movex)
    return decision_metrics(lps, lps, [d.chosen for d in ds], is_q=False)


def run(dataset, out_dir, s: FastSettings, *, cache_root=None, scheduler=None, workers=None,
        progress=True, log=print, compare=(), prior=None) -> dict:
    """The whole fit (module docstring).  ``prior``: the folder of an earlier fit of the same
    game: its pooled model is the prior and baseline (none is fitted here), and each player
    is ranked against its models ("most like"): one more player costs its own decisions'
    evaluations and one model."""
    out = Path(out_dir)
    decisions = dataset.decisions
    game, labels, train, test = prepare(decisions, s)
    train_all = train
    clock = Clock()
    n_workers = 0 if workers == 0 else (workers or default_workers())
    engine = load_engine(dataset.games[game])
    plan, modelled = clock.run("plan", make_plan, engine, train, test, s.seed, cap=s.train_cap,
                               workers=max(1, n_workers), limit=s.limit, cache_root=cache_root, game=game)
    evaluated = modelled + test
    cache = E.EvalCache(cache_root, game, plan)
    keyed = _items(evaluated, s.seed)
    needed = sum(k not in cache.data for k, _ in keyed)
    estimate = E.estimate_seconds(plan, needed, max(1, n_workers)) if needed and not scheduler else None
    if len(modelled) < len(train):
        log(f"modelling {len(modelled)} of {len(train)} training decisions (at most {s.train_cap} per player, "
            f"spread over its matches, since the plan cannot give them all {E.DEFAULT_LIMIT} simulations; "
            f"--train-cap 0 takes all)")
    log(f"shared evaluations: {needed} decisions to search ({len(keyed) - needed} cached); plan: "
        f"{plan['limit']} simulations per search"
        + (f", about {estimate / 60:.1f} min with {max(1, n_workers)} worker(s)" if estimate is not None else ""))
    if estimate is not None and estimate > BUDGET_SECONDS:
        log(f"note: that is above the {BUDGET_SECONDS // 60}-minute budget of a fit on this machine; "
            f"--scheduler tcp://HOST:8786 sends the searches to a Dask cluster (the cache keeps what "
            f"finishes: Ctrl-C and the same command resume)")
    calibration = calibrate(engine)
    names = E.feature_names(calibration)
    clock.run("shared evaluations", cache.fill, game, dataset.games[game], keyed,
              scheduler=scheduler, workers=workers, progress=progress)
    train = modelled
    shared = {d.key: cache.data[k] for d, (k, _) in zip(evaluated, keyed)}
    x_train = {d.key: shared[d.key] for d in train}
    x_test = [shared[d.key] for d in test]

    prior, prior_models = _choose_prior(prior, game, names, decisions, log)
    view, movex = clock.run("move features", _move_features, s, dataset.games[game], engine, evaluated,
                            prior_models.get("pooled"))
    mx_test = [movex[d.key] for d in test] if movex is not None else None

    def mx(ds):
        return [movex[d.key] for d in ds] if movex is not None else None

    def fit_all():
        pooled = prior_models.get("pooled")
        if pooled is None and s.pooled and len(labels) > 1:
            log(f"fitting the pooled model on {len(train)} training decisions")
            pooled = CM.fit(train, [x_train[d.key] for d in train], names, movex=mx(train), view=view)
        models, seconds = {}, {}
        for lab in labels:
            tr = [d for d in train if d.label == lab]
            t0 = time.monotonic()
            models[lab] = CM.fit(tr, [x_train[d.key] for d in tr], names, prior=pooled, movex=mx(tr), view=view)
            seconds[lab] = round(time.monotonic() - t0, 2)
            for w in models[lab].info["warnings"]:
                log(f"warning: {lab}: {w}")
        return pooled, models, seconds

    pooled, models, fit_seconds = clock.run("player models", fit_all)

    def evaluate():
        idx = EV.label_index(test, labels)
        # each player's model on every test decision, once: its own metrics, the matrix and
        # attribution all read these
        logp_all = {lab: CM.held_out_log_probs(models[lab], test, x_test, mx_test) for lab in labels}

        def metrics_of(col, rows_idx):
            lps = [logp_all[col][i] for i in rows_idx]
            return decision_metrics(lps, lps, [test[i].chosen for i in rows_idx], is_q=False)

        per_label, champ_choice, freq = {}, {}, {}
        for lab in labels:
            ds = [test[i] for i in idx[lab]]
            xs = [x_test[i] for i in idx[lab]]
            tr = [d for d in train if d.label == lab]
            m = {"fitted": metrics_of(lab, idx[lab]), "random": random_metrics([len(d.moves) for d in ds])}
            if pooled is not None:
                m["pooled"] = _model_metrics(pooled, ds, xs, mx(ds))
            m["champion"], champ_choice[lab] = _champion_metrics(
                [100.0 * x_train[d.key][:, 0] for d in tr], tr, [100.0 * x[:, 0] for x in xs], ds)
            mf = MoveFrequency(tr)
            freq[lab] = mf.params()
            lps = [mf.logp(d) for d in ds]
            m["move-frequency"] = decision_metrics(lps, lps, [d.chosen for d in ds], is_q=False)
            per_label[lab] = m
        rows, diffs, per_decision = EV.compare(test, labels, per_label, n_boot=s.n_boot, seed=s.seed)
        ml, ma, diagonal = EV.matrix(test, labels, metrics_of)
        most_like, sure = {}, {}
        for lab in labels:
            ds = [test[i] for i in idx[lab]]
            xs = [x_test[i] for i in idx[lab]]
            lps = {name: [lp[d.chosen] for lp, d in zip(CM.held_out_log_probs(m, ds, xs, _prior_movex(m, engine, ds)), ds)]
                   for name, m in prior_models.items() if name != "pooled"}
            if lps and ds:
                scores = {name: float(np.mean(v)) for name, v in lps.items()}
                most_like[lab] = dict(sorted(scores.items(), key=lambda kv: -kv[1]))
                sure[lab] = A.stays_first(lps, s.n_boot, s.seed)
        most_like_confidence.update(sure)
        chosen_lp = {lab: [lp[d.chosen] for lp, d in zip(logp_all[lab], test)] for lab in labels}
        attribution = EV.attribution(test, labels, chosen_lp)
        return HeldOutResults(metrics=rows, paired=diffs, per_decision=per_decision, matrix_logp=ml,
                              matrix_argmax=ma, diagonal_max=diagonal, attribution=attribution,
                              champion_choice=champ_choice, move_frequency=freq, most_like=most_like)

    most_like_confidence: dict = {}
    ev = clock.run("evaluation", evaluate)
    pdir = out / "personas"
    pdir.mkdir(parents=True, exist_ok=True)
    for lab in labels:
        write_persona_file(pdir, slug(lab), model_persona_toml(lab, models[lab], plan))
    if pooled is not None and "pooled" not in prior_models:
        write_persona_file(pdir, "pooled", model_persona_toml("pooled", pooled, plan))
    result = {
        "mode": "fast", "settings": asdict(s), "labels": labels, "game": game, "plan": plan,
        "features": names,
        "compute": {"workers": workers, "scheduler": scheduler},
        "machine": {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2)},
        "data": {**dataset.summary, "train_decisions": len(train), "test_decisions": len(test),
                 "train_decisions_all": len(train_all),
                 "train_player_matches": len({d.pm for d in train}),
                 "test_player_matches": len({d.pm for d in test})},
        "models": {lab: _model_json(models[lab]) for lab in labels},
        "pooled": _model_json(pooled) if pooled is not None else None,
        "champion_choice": ev.champion_choice, "move_frequency": ev.move_frequency,
        "metrics": ev.metrics, "paired": ev.paired,
        "matrix": {"rows": labels, "columns": labels, "logp": ev.matrix_logp, "argmax": ev.matrix_argmax,
                   "diagonal_max": ev.diagonal_max},
        "attribution": ev.attribution, "most_like": ev.most_like,
        "most_like_confidence": most_like_confidence, "prior": str(prior) if prior else None,
        "searched_decisions": cache.computed, "cached_decisions": len(keyed) - cache.computed,
        "estimate_seconds": estimate, "stages": clock.stages, "fit_seconds": fit_seconds,
        "bar": EV.bar(labels, ev.paired, ev.diagonal_max, pooled is not None),
        "floor": _floor(ev.metrics),
    }
    from .fastreport import write   # matplotlib (about 0.5 s to import): only when the report is written
    write(out, result, ev.per_decision, compare)     # results.json among the report's data
    return result


def _move_features(s: FastSettings, description, engine, decisions, pooled) -> tuple:
    """(view, {decision key: movefeatures matrix}) of the decisions to model, or (None,
    None) with ``move_features`` off.  The board is the prior pooled model's where it reads
    one (its players' models then read the same columns), else found here."""
    if not s.move_features:
        return None, None
    if pooled is not None and pooled.move_names:
        view = pooled.view
    else:
        view = MF.MoveView.detect(description, engine, [d.state for d in decisions])
    return view, {d.key: MF.compute(view, engine, d.state, d.role, d.moves, d.history) for d in decisions}


def _prior_movex(model, engine, decisions):
    """An earlier fit's model's move features of ``decisions`` (on its own board), or None."""
    if not model.move_names:
        return None
    return [model.move_features(engine, d.state, d.role, d.moves, d.history) for d in decisions]


def _choose_prior(prior, game: str, names: list, decisions, log) -> tuple:
    """(folder, {name: ChoiceModel}) of the earlier fit to use.  ``prior``: one folder (it
    must apply: the ``--prior`` option), or a list of candidates (the web page's ``--fits``):
    the first that applies, else none."""
    if not prior:
        return None, {}
    if isinstance(prior, (str, Path)):
        return prior, _prior_models(prior, game, names, decisions)
    for folder in prior:
        try:
            models = _prior_models(folder, game, names, decisions)
        except FitError:
            continue
        log(f"comparing with the models of an earlier fit ({Path(folder).name})")
        return folder, models
    return None, {}


def _prior_models(folder, game: str, names: list | None = None, decisions=()) -> dict:
    """{name: ChoiceModel} of an earlier fast fit's personas (its ``personas/`` folder).  The
    fit applies to the same rules (same game key), or to rules with the same structure as far
    as the models see it: the same feature names (the same relations) and every move
    functor of these decisions among the models' move tokens (the same moves).  Records of
    one game reach the fitter with different keys (a games.ggp.org URL, or the rules text a
    web match carries), so the key alone would refuse the same game."""
    folder = Path(folder)
    try:
        res = json.loads((folder / "results.json").read_text())
        res_game, res_features = res.get("game"), res.get("features")
    except (OSError, ValueError, AttributeError):
        raise FitError(f"--prior {folder}: not the folder of a fit (no results.json)") from None
    same_structure = names is not None and res_features == list(names)
    if res_game != game and not same_structure:
        raise FitError(f"--prior {folder}: that fit is of another game (or other rules)")
    out = {}
    for f in persona_files(folder / "personas"):
        try:
            p = load_persona(f)
        except PersonaError as e:
            raise FitError(f"--prior: {e}") from None
        if p.model is not None:
            out[persona_stem(f)] = model_of(p)[0]
    if "pooled" not in out:
        raise FitError(f"--prior {folder}: no pooled model in its personas/ (fit several players first)")
    if res_game != game:
        heads = {CM.move_tokens(m)[0] for d in decisions for m in d.moves}
        if not heads <= set(out["pooled"].vocab):
            raise FitError(f"--prior {folder}: that fit is of another game (other moves)")
    return out


def persona_log_probs(persona, dataset, *, seed: int = 0, cache_root=None, scheduler=None, workers=None,
                      progress=True) -> list:
    """log P of each decision's recorded move under a fitted model persona (the shared
    evaluations of its plan, from the cache or computed): attribution of new records."""
    model, plan = model_of(persona)
    out = [None] * len(dataset.decisions)
    by_game: dict = {}
    for i, d in enumerate(dataset.decisions):
        by_game.setdefault(d.game, []).append(i)
    for game, idx in by_game.items():
        ds = [dataset.decisions[i] for i in idx]
        cache = E.EvalCache(cache_root, game, plan)
        keyed = _items(ds, seed)
        cache.fill(game, dataset.games[game], keyed, scheduler=scheduler, workers=workers, progress=progress)
        engine = load_engine(dataset.games[game])
        names = E.feature_names(calibrate(engine))
        for i, d, (k, _) in zip(idx, ds, keyed):
            x = align(cache.data[k], names, model.shared_names)
            mx = model.move_features(engine, d.state, d.role, d.moves, d.history)
            out[i] = float(model.log_probs(x, d.state, d.prev, d.moves, mx)[d.chosen])
    return out


def _model_json(m) -> dict:
    w = m.weights_by_name()
    top = sorted(w.items(), key=lambda kv: -abs(kv[1]))[:12]
    return {"epsilon": m.eps, **m.info, "top_weights": dict(top)}


def _floor(rows) -> dict:
    """Every model's test log-likelihood against uniform random, per player (spec 4.6 item 3)."""
    rnd = {r["label"]: r["logp"] for r in rows if r["model"] == "random"}
    below = [f"{r['label']}/{r['model']}" for r in rows
             if r["model"] != "random" and r["logp"] < rnd.get(r["label"], -math.inf)]
    return {"models_below_random": below}
