"""Fit one persona to a set of training decisions (spec 4.5), and the champion baseline.

The GA (ga.py) evolves search genes; an individual's fitness is computed from its Q-values
on a seeded, stratified subsample of the training decisions (one per generation, the same
for every individual: CRN), via the behaviour likelihood with its choice parameters fitted
by grid (default) or the thesis fitness F (thesis mode).  The five best of the last
generation and the best ever are then ranked on the final ranking set, and the winner's
choice parameters fitted there.
"""
from __future__ import annotations

import time

import numpy as np

from agent.persona import load_persona

from . import ga as G
from .likelihood import THESIS_KAPPA, fit_choice, pad, thesis_log_fitness
from .prepare import stratified_subsample


def objective(qs, decisions, thesis: bool) -> tuple[float, dict]:
    """(fitness, choice parameters): the best grid likelihood per decision, or thesis log F."""
    Q, mask = pad(qs)
    chosen = [d.chosen for d in decisions]
    if thesis:
        return thesis_log_fitness(Q, mask, chosen, [d.pm for d in decisions]), {"kappa": THESIS_KAPPA}
    c = fit_choice(Q, mask, chosen)
    return c.pop("ll"), c


def fit_persona(train, scorer, cfg: G.GAConfig, *, name: str, subsample: int = 300,
                final_size: int = 0, checkpoint=None, limit: int = 1000, seeds=(), log=print) -> dict:
    """GA fit on ``train``; returns {persona, history, stopped, train_fitness, choice}.
    ``seeds``: genomes placed in generation 0 after the champion's (e.g. the pooled
    persona's); they are finalists as well, so the fit never ranks below them on its own
    ranking decisions."""
    gl = G.genes(cfg.thesis)

    def personas(pop):
        return [G.decode(g, gl, name=name, limit=limit) for g in pop]

    def evaluate(pop, gen):
        sub = stratified_subsample(train, subsample, (cfg.seed, gen, 1))
        qs = scorer.q(personas(pop), sub, description=f"{name}: generation {gen + 1}")
        scorer.save()
        return np.array([objective(q, sub, cfg.thesis)[0] for q in qs])

    def report(st):
        h = st.history[-1]
        log(f"{name}: generation {h['generation'] + 1}: best {h['best']:.4f}, mean {h['mean']:.4f}, "
            f"spread {h['diversity']:.3f}" + (f"; stop: {st.stopped}" if st.stopped else ""))

    champion = load_persona("champion")
    seed_genome = [getattr(champion, f)[k] if k is not None else getattr(champion, f) for _, f, k in gl]
    initial = [seed_genome] + [list(map(float, g)) for g in seeds]
    state = G.run_ga(evaluate, cfg, checkpoint=checkpoint, initial=initial, on_generation=report)
    last = np.array(state.population)
    fit = np.array(state.history[-1]["fitness"])
    finalists = [last[i] for i in np.argsort(-fit)[:5]]   # the elite among them
    finalists += [np.array(g) for g in initial[1:]]
    uniq = {tuple(np.round(f, 9)): f for f in finalists}
    finalists = list(uniq.values())
    ranking = stratified_subsample(train, final_size, (cfg.seed, "final"))
    t0 = time.monotonic()
    qs = scorer.q(personas(finalists), ranking, description=f"{name}: ranking {len(finalists)} finalists")
    scorer.save()
    scored = [objective(q, ranking, cfg.thesis) for q in qs]
    b = int(np.argmax([s[0] for s in scored]))
    choice = dict(scored[b][1])
    if cfg.thesis:  # RE and NT are genes there; the likelihood still uses only kappa
        genome = dict(zip([g for g, _, _ in gl], finalists[b]))
        choice.update(random_error=float(genome["random_error"]), nice_threshold=float(genome["nice_threshold"]))
    persona = G.decode(finalists[b], gl, name=name, limit=limit, choice=choice,
                       description=f"fitted to {name} ({len(train)} training decisions, "
                                   f"{'thesis' if cfg.thesis else 'behaviour-likelihood'} GA)")
    # wall time: the GA's generations over every session that resumed it, and this
    # ranking (with the Q cache, a resumed ranking costs what was not cached)
    seconds = {"ga": round(state.seconds, 1), "ga_generations_timed": state.timed,
               "ranking": round(time.monotonic() - t0, 1)}
    return {"persona": persona, "genome": list(map(float, finalists[b])), "history": state.history,
            "stopped": state.stopped, "train_fitness": float(scored[b][0]), "choice": choice,
            "ranking_decisions": len(ranking), "seconds": seconds}


def fit_champion(train, scorer, *, limit: int, final_size: int = 0, seed=0) -> dict:
    """The champion preset with its choice parameters (RE, NT, kappa) fitted on ``train``."""
    ranking = stratified_subsample(train, final_size, (seed, "final"))
    champ = load_persona("champion").replace(limit=limit)
    (qs,) = scorer.q([champ], ranking, description="champion: training decisions")
    scorer.save()
    ll, choice = objective(qs, ranking, False)
    return {"persona": champ.replace(**choice), "train_fitness": ll, "choice": choice}
