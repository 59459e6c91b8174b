"""The genetic algorithm of spec 4.5 (default) and of the thesis (spec 4.2, ``thesis`` mode).

Genes are reals inside the GA intervals of spec 2.2 (integer genes rounded when decoded).
Default mode evolves the 14 search genes; the choice parameters (RE, NT, kappa) are fitted
by the likelihood grid on each individual's cached Q-values.  Thesis mode evolves 16 genes
(RE and NT stay inert genes), fitness F, roulette selection.

The GA is a plain function of an ``evaluate(genomes, generation) -> fitnesses`` callable,
so it is tested on cheap objectives; all its randomness comes from one seeded generator,
and after every generation its whole state (population, history, generator state) is
written to ``checkpoint`` atomically: a run interrupted by Ctrl-C or a crash resumes from
its last finished generation and ends exactly as an uninterrupted run would.
"""
from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agent.matchlog import atomic_write_bytes
from agent.persona import RANGES, load_persona

# (gene name, persona field, index in a [self, others] pair or None)
SEARCH_GENES = [
    ("rave", "rave", None), ("grave", "grave", None), ("charge_depth", "charge_depth", None),
    ("horizon", "horizon", None), ("exploration_factor", "exploration_factor", None),
    ("tree_discount", "tree_discount", None), ("charge_discount", "charge_discount", None),
    ("epsilon", "epsilon", None),
    ("charge_defaults_self", "charge_defaults", 0), ("charge_defaults_others", "charge_defaults", 1),
    ("defensiveness_self", "defensiveness", 0), ("defensiveness_others", "defensiveness", 1),
    ("aggressiveness_self", "aggressiveness", 0), ("aggressiveness_others", "aggressiveness", 1),
]
CHOICE_GENES = [("random_error", "random_error", None), ("nice_threshold", "nice_threshold", None)]


def genes(thesis: bool = False) -> list:
    return SEARCH_GENES + (CHOICE_GENES if thesis else [])


def bounds(gene_list) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([RANGES[f][1] for _, f, _ in gene_list], float)
    hi = np.array([RANGES[f][2] for _, f, _ in gene_list], float)
    return lo, hi


def decode(genome, gene_list, *, name="fitted", description="", limit=1000, choice=None):
    """A Persona from a genome (integer genes rounded); ``choice``: fitted RE, NT, kappa."""
    base = load_persona("champion")
    vals: dict = {}
    for g, (_, f, k) in zip(genome, gene_list):
        kind = RANGES[f][0]
        v = int(round(g)) if kind is int else float(g)
        if k is None:
            vals[f] = v
        else:
            pair = list(vals.get(f, getattr(base, f)))
            pair[k] = v
            vals[f] = tuple(pair)
    vals.update(choice or {})
    return base.replace(name=name, kind="fitted", description=description, limit=limit, **vals)


GAIN_RULE = "beats the elite on the same decisions"   # in checkpoints: older ones compared across subsamples


@dataclass
class GAConfig:
    population: int = 100
    generations: int = 50
    patience: int = 10            # generations without gain
    sigma_stop: float = 0.005     # stagnation: max normalised gene std
    tournament: int = 3
    p_crossover: float = 0.05
    p_mutation: float = 0.1
    creep: float = 0.4
    thesis: bool = False
    seed: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class GAState:
    generation: int
    population: list
    rng: dict
    history: list = field(default_factory=list)   # per generation: best, mean, best genome
    since_gain: int = 0
    stopped: str | None = None
    # wall seconds the generations took, summed over every process that resumed the run
    # (apart from history: a resumed run's history equals an uninterrupted one's)
    seconds: float = 0.0
    timed: int = 0          # how many generations ``seconds`` covers (older checkpoints: fewer)

    @property
    def best(self) -> list | None:
        """The best genome of the last generation scored (on its own decisions)."""
        return self.history[-1]["best_genome"] if self.history else None


def _select(rng, fit: np.ndarray, cfg: GAConfig) -> int:
    if cfg.thesis:  # roulette on F = exp(log F) (spec 4.2)
        w = np.exp(fit - fit.max())
        return int(np.searchsorted(np.cumsum(w / w.sum()), rng.random(), side="right").clip(0, len(fit) - 1))
    idx = rng.integers(0, len(fit), size=cfg.tournament)
    return int(idx[np.argmax(fit[idx])])


def _next_generation(rng, pop: np.ndarray, fit: np.ndarray, cfg: GAConfig, lo, hi) -> np.ndarray:
    out = [pop[int(np.argmax(fit))].copy()]     # elitism 1: fitness is deterministic (CRN)
    while len(out) < len(pop):
        a, b = pop[_select(rng, fit, cfg)].copy(), pop[_select(rng, fit, cfg)].copy()
        if rng.random() < cfg.p_crossover:       # averaging crossover, one alpha per pair
            al = rng.random()
            a, b = al * a + (1 - al) * b, (1 - al) * a + al * b
        for child in (a, b):
            m = rng.random(len(child)) < cfg.p_mutation
            step = cfg.creep * (rng.random(len(child)) - 0.5) * (hi - lo)   # normalised creep
            child[m] = np.clip(child[m] + step[m], lo[m], hi[m])
            if len(out) < len(pop):
                out.append(child)
    return np.array(out)


def diversity(pop: np.ndarray, lo, hi) -> float:
    """max over genes of the normalised standard deviation (spec 4.2 stagnation test)."""
    if len(pop) < 2:
        return 0.0
    z = (pop - pop.mean(axis=0)) / (hi - lo)
    return float(np.sqrt((z ** 2).sum(axis=0) / (len(pop) - 1)).max())


def run_ga(evaluate, cfg: GAConfig, *, checkpoint=None, initial=None, on_generation=None) -> GAState:
    """Evolve until a stop rule fires; returns the final state (``history``, ``best``,
    ``population`` of the last generation with ``last_fitness`` in history).
    ``evaluate(genomes: np.ndarray, generation: int) -> np.ndarray`` of fitnesses (higher is
    better).  ``initial``: optional genomes placed first in generation 0 (e.g. champion)."""
    gl = genes(cfg.thesis)
    lo, hi = bounds(gl)
    ck = Path(checkpoint) if checkpoint else None
    initial = [list(map(float, g)) for g in (initial or [])]
    state = _load(ck, cfg, initial)
    if state is None:
        rng = np.random.default_rng(cfg.seed)
        pop = lo + rng.random((cfg.population, len(gl))) * (hi - lo)
        for i, g in enumerate(initial):
            pop[i] = np.clip(np.asarray(g, float), lo, hi)
        state = GAState(0, pop.tolist(), rng.bit_generator.state)
    while state.stopped is None:
        rng = np.random.default_rng()
        rng.bit_generator.state = state.rng
        pop = np.array(state.population)
        t0 = time.monotonic()
        fit = np.asarray(evaluate(pop, state.generation), float)
        state.seconds += time.monotonic() - t0
        state.timed += 1
        b = int(np.argmax(fit))
        # A gain is a new individual beating the elite on this generation's decisions.  Each
        # generation scores another subsample (spec 4.5: "elite re-scored"), so a best
        # fitness compared across generations measures how easy the subsample was: one easy
        # one stopped a full-size fit after 15 generations (its best came in generation 5).
        # The elite is individual 0 of every generation after the first (_next_generation);
        # on the same decisions every generation (training sets of up to ``subsample``) this
        # is the old rule, since the elite's fitness is then its last one (CRN).
        gained = state.generation == 0 or fit[b] > fit[0] + 1e-12
        state.history.append({"generation": state.generation, "best": float(fit[b]),
                              "mean": float(np.mean(fit)), "diversity": diversity(pop, lo, hi),
                              "best_genome": pop[b].tolist(), "fitness": fit.tolist()})
        state.since_gain = 0 if gained else state.since_gain + 1
        if state.generation + 1 >= cfg.generations:
            state.stopped = f"{cfg.generations} generations"
        elif state.since_gain >= cfg.patience:
            state.stopped = f"{cfg.patience} generations without gain"
        elif diversity(pop, lo, hi) <= cfg.sigma_stop:
            state.stopped = f"stagnation (gene spread <= {cfg.sigma_stop})"
        if state.stopped is None:
            state.population = _next_generation(rng, pop, fit, cfg, lo, hi).tolist()
            state.generation += 1
        state.rng = rng.bit_generator.state
        _save(ck, cfg, initial, state)
        if on_generation:
            on_generation(state)
    return state


def _save(ck, cfg, initial, state: GAState) -> None:
    if ck is None:
        return
    ck.parent.mkdir(parents=True, exist_ok=True)
    doc = {"config": cfg.to_dict(), "initial": initial, "gain": GAIN_RULE, "state": state.__dict__}
    data = json.dumps(doc, default=int).encode()
    # ``.gz``: compressed (a committed report's checkpoints are a fifth of their JSON), with
    # no timestamp inside, so the same state gives the same bytes
    atomic_write_bytes(ck, gzip.compress(data, mtime=0) if ck.suffix == ".gz" else data)


def _load(ck, cfg, initial) -> GAState | None:
    if ck is None:
        return None
    if not ck.is_file() and ck.suffix == ".gz" and ck.with_suffix("").is_file():
        ck = ck.with_suffix("")      # a checkpoint written before they were compressed
    if not ck.is_file():
        return None
    try:
        raw = ck.read_bytes()
        doc = json.loads(gzip.decompress(raw) if ck.suffix == ".gz" else raw)
    except (OSError, ValueError, EOFError):    # unreadable, truncated or not JSON: start afresh
        return None
    # another configuration, other seed genomes or the old gain rule: another run, start
    # afresh (the Q cache makes replaying the generations it saw cheap)
    if doc.get("config") != cfg.to_dict() or doc.get("initial") != initial or doc.get("gain") != GAIN_RULE:
        return None
    # (checkpoints written before ``best`` was read from the history also stored it)
    return GAState(**{k: v for k, v in doc["state"].items() if k in GAState.__dataclass_fields__})
