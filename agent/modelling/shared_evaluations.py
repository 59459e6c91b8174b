"""Shared evaluations (spec 4.6 item 1): what does not depend on the player, computed once
per (game, decision) and reused by every player and every later fit.

For one decision (state, role, legal moves, CRN seed) ``evaluate_items`` gives a matrix
with one row per legal move and one column per feature:

- ``q_deep``, ``visits_deep``, ``best_deep``: the champion's thesis search (spec 2.8, full
  playouts) at the plan's simulations: Q on the 0..100 scale (/100), the move's share of
  the root visits, and whether it has the best Q.  The champion baseline is this search
  with its choice parameters fitted, so it costs nothing more.
- ``q_broad``, ``visits_broad``, ``best_broad``: the same of a broad search (``broad_persona``).
- ``q_shallow``: a playout-free search (charge depth 0, horizon ``SHALLOW_HORIZON``): the
  leaf is the goal when terminal, else the charge default, so it is a minimax-like look at
  the next few plies (what the full-size GA settled on for every bot).
- one-ply look-ahead, exact: over the other roles' replies (all, or a seeded sample of
  ``REPLIES``): whether the move ends the game, with a win or a loss; after it, the share
  of next joint moves that end the game with a loss (a threat left open) or a win; the
  goal value of the successor (games with intermediate goals); own and others' mobility.
- changes of fact counts from the state to the successor (spec 6.4's fact features):
  facts mentioning the role, facts mentioning the others, and the count of each relation,
  scaled by the game's calibration range.

Everything is found from the rules' structure and seeded by the decision's CRN seed, so
an evaluation depends only on (rules, state, role, seed, plan): scrambled repeats agree.
``EvalCache`` keeps the matrices on disk, one atomic file per finished task, so an
interrupted run loses nothing and a second fit (or one more player) searches nothing again.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import random
import time
from pathlib import Path

import numpy as np

from agent.compute import run_tasks
from agent.engine.loader import load_engine
from agent.matchlog import atomic_write_bytes
from agent.persona import load_persona
from agent.search import SearchSettings, search, search_batch
from agent.search.features import FactIndex, calibrate, fact_counts
from agent.search.leaf import N_FIXED

EVAL_VERSION = "shared-3"     # change when what a feature means changes: old caches no longer apply
SHALLOW_HORIZON = 4
REPLIES = 8                   # other roles' joint replies looked at per move, at most
DEFAULT_LIMIT = 1000          # the thesis's simulations per decision (spec 2.2)
MIN_LIMIT = 50
CHUNK = 40

SEARCHES = ("deep", "broad", "shallow")
FIXED = ("q_deep", "visits_deep", "best_deep", "q_broad", "visits_broad", "best_broad", "q_shallow",
         "ends", "ends_win", "ends_loss", "goal", "threat", "chance", "mobility", "opp_mobility",
         "d_own_facts", "d_opp_facts")

LOOK = FIXED.index("ends")   # the look-ahead's columns start here
_C = {name: i - LOOK for i, name in enumerate(FIXED) if i >= LOOK}   # their places in its rows

_ENGINES: dict = {}   # per worker process: game key -> (engine, calibration, fact index)


# ---------------------------------------------------------------------------- the plan

def deep_persona(limit: int):
    return load_persona("champion").replace(limit=int(limit))


def broad_persona(limit: int):
    """A wide, impatient search: the most exploring UCT constant of spec 2.2, MAST half the
    time and the strongest tree discount, so its Q is nearer a move's mean outcome under
    varied play and quick wins count more (where the GA of spec 4.5 put every bot's fit)."""
    return deep_persona(limit).replace(exploration_factor=140, tree_discount=0.9, epsilon=0.5)


def shallow_persona(limit: int):
    return deep_persona(limit).replace(charge_depth=0, horizon=SHALLOW_HORIZON)


PERSONAS = {"deep": deep_persona, "broad": broad_persona, "shallow": shallow_persona}


def plan_for(engine, sample_items, *, decisions: int, workers: int, budget_seconds: float) -> dict:
    """The evaluation plan of a game: the searches' simulations, chosen so that evaluating
    ``decisions`` decisions on ``workers`` processes takes about ``budget_seconds``,
    between ``MIN_LIMIT`` and ``DEFAULT_LIMIT`` (the thesis's 1000).  The cost is measured
    here on a few recorded states (``sample_items`` = [(state, role, seed, moves)]): what
    does not depend on the simulations (look-ahead, playout-free search), and the time per
    simulation of the two searches with playouts, in CPU time (a loaded machine does not
    shrink the plan; the wall time is then longer).  A plan is chosen once per game and kept
    with the game's cache (``EvalCache.stored_plan``), so later fits, and their results,
    are the same whatever the machine's speed."""
    cal, facts = calibrate(engine), FactIndex(engine.roles)
    probe = MIN_LIMIT
    items = list(sample_items)
    evaluate_items(engine, items[:1], {"limit": probe}, cal, facts)          # compiled code warm
    # CPU time of this process: the cost of the work itself, whatever else the machine runs
    t0 = time.process_time()
    for s, r, seed, moves in items:
        lookahead(engine, s, r, moves, cal, facts, seed)
    triples = [(s, r, seed) for s, r, seed, _ in items]
    search_batch(engine, triples, shallow_persona(probe), 0, thesis=True)
    fixed = (time.process_time() - t0) / max(1, len(items))
    t0 = time.process_time()
    for name in ("deep", "broad"):
        search_batch(engine, triples, PERSONAS[name](probe), 0, thesis=True)
    per_sim = (time.process_time() - t0) / max(1, len(items)) / probe
    measured = {"fixed_ms": round(1000 * fixed, 2), "per_simulation_ms": round(1000 * per_sim, 4),
                "decisions": decisions, "workers": workers, "budget_seconds": budget_seconds}
    return {"version": EVAL_VERSION, "limit": affordable_limit(measured, decisions), "shallow_horizon": SHALLOW_HORIZON,
            "replies": REPLIES, "measured": measured}


def affordable_limit(measured: dict, decisions: int) -> int:
    """The simulations per search (a multiple of 50 in [MIN_LIMIT, DEFAULT_LIMIT]) that
    evaluate ``decisions`` within the measured budget."""
    per_decision = measured["budget_seconds"] * max(1, measured["workers"]) / max(1, decisions)
    room = (per_decision - measured["fixed_ms"] / 1000) / max(measured["per_simulation_ms"] / 1000, 1e-9)
    return int(np.clip(room // 50 * 50, MIN_LIMIT, DEFAULT_LIMIT))


def estimate_seconds(plan: dict, decisions: int, workers: int) -> float:
    """Wall seconds of evaluating ``decisions`` with ``plan`` on ``workers`` processes,
    from the costs the plan measured (a stored plan's: the machine may differ)."""
    m = plan.get("measured") or {}
    per = m.get("fixed_ms", 0.0) / 1000 + plan["limit"] * m.get("per_simulation_ms", 0.0) / 1000
    return per * decisions / max(1, workers)


def plan_key(plan: dict) -> str:
    core = {k: plan[k] for k in ("version", "limit", "shallow_horizon", "replies")}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- features

def feature_names(calibration) -> list:
    return list(FIXED) + [f"d_rel:{r}" for r in calibration.relations]


def _winner_share(goals, r: int):
    """(my goal is the highest alone, my goal is below another's) for terminal goals."""
    mine = goals[r]
    others = [g for i, g in enumerate(goals) if i != r]
    if not others:
        return float(mine >= 50), float(mine < 50)
    top = max(others)
    return float(mine > top), float(mine < top)


def _goals(engine, s) -> list:
    return [max(v) if v else 0 for v in engine.goal_values(s)]


def _joint_sample(legal_by_role, fixed: dict, rng: random.Random, cap: int) -> list:
    """Joint moves with ``fixed`` roles' moves set, the others' combined: all of them, or
    a seeded sample of ``cap`` when there are more."""
    opts = [[fixed[i]] if i in fixed else legal_by_role[i] for i in range(len(legal_by_role))]
    total = 1
    for o in opts:
        total *= len(o)
    if total <= cap:
        return list(itertools.product(*opts))
    return [tuple(rng.choice(o) for o in opts) for _ in range(cap)]


def lookahead(engine, state, role: int, moves, calibration, facts, seed: int) -> np.ndarray:
    """The look-ahead and fact-change columns (``FIXED[LOOK:]`` and ``d_rel:*``) per move."""
    n_roles = len(engine.roles)
    rng = random.Random(seed)
    rels = calibration.relations
    # the calibration's columns: spec 6.4's fixed features, then one per relation
    span_rel = np.maximum(calibration.hi[role, N_FIXED:] - calibration.lo[role, N_FIXED:], 1.0)
    own0, rel0 = fact_counts(state, facts, rels)
    legal = [engine.legal_moves(state, i) for i in range(n_roles)]
    out = np.zeros((len(moves), len(FIXED) - LOOK + len(rels)))
    for j, a in enumerate(moves):
        acc = np.zeros(out.shape[1])
        joints = _joint_sample(legal, {role: a}, rng, REPLIES)
        for jm in joints:
            s1 = engine.next_state(state, jm)
            row = np.zeros(out.shape[1])
            own1, rel1 = fact_counts(s1, facts, rels)
            d_own = own1[role] - own0[role]
            d_opp = (own1.sum() - own1[role]) - (own0.sum() - own0[role])
            row[_C["d_own_facts"]] = np.tanh(d_own / 4.0)
            row[_C["d_opp_facts"]] = np.tanh(d_opp / 4.0)
            if len(rels):
                row[len(FIXED) - LOOK:] = np.clip((rel1 - rel0) / span_rel, -1.0, 1.0)
            g = _goals(engine, s1)
            row[_C["goal"]] = g[role] / 100.0
            if engine.is_terminal(s1):
                win, loss = _winner_share(g, role)
                row[_C["ends"]], row[_C["ends_win"]], row[_C["ends_loss"]] = 1.0, win, loss
            else:
                legal1 = [engine.legal_moves(s1, i) for i in range(n_roles)]
                row[_C["mobility"]] = np.log1p(len(legal1[role])) / 5.0
                row[_C["opp_mobility"]] = np.log1p(sum(len(m) for i, m in enumerate(legal1) if i != role)) / 5.0
                nxt = _joint_sample(legal1, {}, rng, REPLIES)
                threat = chance = 0.0
                for jm2 in nxt:
                    s2 = engine.next_state(s1, jm2)
                    if engine.is_terminal(s2):
                        win2, loss2 = _winner_share(_goals(engine, s2), role)
                        threat += loss2
                        chance += win2
                row[_C["threat"]], row[_C["chance"]] = threat / len(nxt), chance / len(nxt)
            acc += row
        out[j] = acc / len(joints)
    return out


def _engine(task):
    got = _ENGINES.get(task["game"])
    if got is None:
        eng = load_engine(task["rules"])
        got = _ENGINES[task["game"]] = (eng, calibrate(eng), FactIndex(eng.roles))
    return got


def _matrix(engine, state, role, seed, moves, runs: dict, calibration, facts) -> np.ndarray:
    """One decision's matrix from its search results (``runs[name]``) and the look-ahead."""
    x = np.zeros((len(moves), len(FIXED) + len(calibration.relations)), np.float32)
    for name in SEARCHES:
        res = runs[name]
        pos = {m: j for j, m in enumerate(res.moves)}
        q = np.array([float(res.q[pos[m]]) for m in moves])
        x[:, FIXED.index(f"q_{name}")] = q / 100.0
        if name == "shallow":          # playout-free: visits and ties say little
            continue
        n = np.array([float(res.visits[pos[m]]) for m in moves])
        x[:, FIXED.index(f"visits_{name}")] = n / max(1.0, n.sum())
        x[:, FIXED.index(f"best_{name}")] = q == q.max()
    x[:, LOOK:] = lookahead(engine, state, role, moves, calibration, facts, seed)
    return x


def evaluate_items(engine, items, plan: dict, calibration, facts) -> list:
    """Feature matrices (moves x features, float32) of ``items`` = [(state, role, seed,
    moves)] in each item's move order; one numba batch per search."""
    triples = [(s, r, seed) for s, r, seed, _ in items]
    runs = {k: search_batch(engine, triples, PERSONAS[k](plan["limit"]), 0, thesis=True) for k in SEARCHES}
    return [_matrix(engine, s, r, seed, moves, {k: runs[k][i] for k in SEARCHES}, calibration, facts)
            for i, (s, r, seed, moves) in enumerate(items)]


def evaluate_state(engine, state, role: int, moves, seed: int, plan: dict, calibration, facts,
                   deadline: float | None = None):
    """One decision in live play: (matrix, search results by name).  With a ``deadline``
    (monotonic), each search stops at its share of the time left (the plan's simulations
    at most), so a short clock costs precision, never the move."""
    runs = {}
    for k, name in enumerate(SEARCHES):
        seconds = None
        if deadline is not None:
            seconds = max(0.0, (deadline - time.monotonic()) / (len(SEARCHES) - k))
        runs[name] = search(engine, state, role, PERSONAS[name](plan["limit"]),
                            SearchSettings(seed=seed, limit=plan["limit"], seconds=seconds, thesis=True))
    return _matrix(engine, state, role, seed, moves, runs, calibration, facts), runs


def eval_task(task: dict) -> list:
    """Worker: the feature matrices of ``task['items']`` of game ``task['game']``."""
    eng, cal, facts = _engine(task)
    return evaluate_items(eng, task["items"], task["plan"], cal, facts)


# ---------------------------------------------------------------------------- the cache

class EvalCache:
    """Feature matrices per (decision key, seed) for one game and plan, on disk as one
    pickle per finished task (``<dir>/<game>/<plan key>/``): written atomically, read
    back whole, so any prefix of a run is kept."""

    @staticmethod
    def stored_plan(root, game: str) -> dict | None:
        """The plan kept for this game by an earlier fit (None: none, or an old version)."""
        if not root:
            return None
        try:
            plan = json.loads((Path(root) / game / "plan.json").read_text())
        except (OSError, ValueError):
            return None
        return plan if isinstance(plan, dict) and plan.get("version") == EVAL_VERSION else None

    @staticmethod
    def store_plan(root, game: str, plan: dict) -> None:
        if root:
            (Path(root) / game).mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(Path(root) / game / "plan.json", json.dumps(plan, indent=1).encode())

    def __init__(self, root, game: str, plan: dict):
        self.dir = Path(root) / game / plan_key(plan) if root else None
        self.plan = plan
        self.data: dict = {}
        self.computed = 0
        if self.dir and self.dir.is_dir():
            for f in sorted(self.dir.glob("*.pkl")):
                try:
                    self.data.update(pickle.loads(f.read_bytes()))
                except Exception:   # a damaged file costs its searches again, never results
                    continue

    def _save(self, part: dict) -> None:
        if not self.dir:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(repr(sorted(part)).encode()).hexdigest()[:24]
        atomic_write_bytes(self.dir / f"{name}.pkl", pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))

    def missing(self, keyed) -> list:
        return [(k, it) for k, it in keyed if k not in self.data]

    def fill(self, game: str, rules, keyed, *, scheduler=None, workers=None, progress=True,
             description="shared evaluations") -> int:
        """Compute what the cache lacks of ``keyed`` = [(key, (state, role, seed, moves))]."""
        todo = self.missing(keyed)
        tasks, where = [], []
        for i in range(0, len(todo), CHUNK):
            part = todo[i:i + CHUNK]
            tasks.append({"game": game, "rules": rules, "plan": self.plan, "items": [it for _, it in part]})
            where.append([k for k, _ in part])

        def keep(i, result):
            part = dict(zip(where[i], result))
            self.data.update(part)
            self._save(part)
            self.computed += len(result)

        if tasks:
            run_tasks(eval_task, tasks, scheduler=scheduler, workers=workers, on_result=keep,
                      description=f"{description} ({len(todo)} decisions)", progress=progress)
        return len(todo)
