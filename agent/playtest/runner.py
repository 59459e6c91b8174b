"""The playtest run: variants x players x seeded runs on the compute backend, cached per run
in the output folder so an interrupted playtest resumes where it stopped.

A *player* is a persona at one ``limit`` (skill); its label is the persona's name, with
``@limit`` when several limits are swept.  Run seeds come from (seed, variant, player, run
index) only, so adding a variant or a persona never changes the runs already made.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.compute import run_tasks
from agent.matchlog import atomic_write_bytes

from .play import agreement_task, engine_for, play_run, sub_seed
from .variants import Variant

RUN_FORMAT = 1          # bump when a run record changes meaning (old cache files are ignored)
# the same for an agreement result; 2: the judge searches as the persona played (live search)
# and takes the mode of several seeded searches; 3: the result is the judge's move per state
AGREEMENT_FORMAT = 3


@dataclass
class Player:
    label: str
    persona: object        # agent.persona.Persona
    limit: int


@dataclass
class Setup:
    variants: list                      # [Variant]
    players: list                       # [Player]
    role: int = 0
    opponent: object = "champion"       # Persona or "random"
    opponent_limit: int | None = None   # default: the player's limit
    runs: int = 50
    seed: int = 0
    max_plies: int = 1000
    agreement_states: int = 40          # decisions sampled per (player, variant) for 5.1
    agreement_seeds: int = 1            # judge searches per state; its choice is their mode
    workers: int | None = None
    scheduler: str | None = None
    out: Path = Path("playtest")
    role_name: str = ""
    opponent_label: str = "champion"
    extra: dict = field(default_factory=dict)       # e.g. boards per variant for the page


def _persona_data(p) -> dict | str:
    if p == "random":
        return "random"
    d = asdict(p)
    u = {"lambda": d.pop("utility_lambda"), "weights": d.pop("utility_weights")}
    if u["lambda"] or u["weights"]:
        d["utility"] = u
    return d


def run_tasks_for(setup: Setup) -> list:
    tasks = []
    for v in setup.variants:
        for pl in setup.players:
            for i in range(setup.runs):
                tasks.append({
                    "rules_text": v.rules_text, "rules_key": v.key, "variant": v.name,
                    "player": pl.label, "persona": _persona_data(pl.persona), "role": setup.role,
                    "opponent": _persona_data(setup.opponent), "limit": pl.limit,
                    "opponent_limit": setup.opponent_limit or pl.limit,
                    "seed": sub_seed(setup.seed, v.key, pl.label, i), "run": i,
                    "max_plies": setup.max_plies})
    return tasks


def task_key(task: dict) -> str:
    blob = json.dumps({k: v for k, v in task.items() if k != "rules_text"}, sort_keys=True)
    return hashlib.sha256(f"{RUN_FORMAT}|{blob}".encode()).hexdigest()[:24]


def _cached(folder: Path, tasks: list, fn, description: str, setup: Setup) -> list:
    """Run ``fn`` on the tasks not yet in ``folder`` (one JSON file per task), then return
    every result in task order."""
    folder.mkdir(parents=True, exist_ok=True)
    results: list = [None] * len(tasks)
    todo = []
    for i, t in enumerate(tasks):
        f = folder / f"{task_key(t)}.json"
        if f.is_file():
            try:
                results[i] = json.loads(f.read_text())["result"]
                continue
            except (ValueError, KeyError, OSError):
                pass            # a damaged file is redone, never trusted
        todo.append(i)

    def save(j: int, value) -> None:
        i = todo[j]
        results[i] = value
        atomic_write_bytes(folder / f"{task_key(tasks[i])}.json",
                           json.dumps({"result": value}).encode())

    if todo:
        run_tasks(fn, [tasks[i] for i in todo], scheduler=setup.scheduler,
                  workers=setup.workers, description=description, on_result=save)
    return results


def play_all(setup: Setup) -> list:
    """Every run (cached); each record carries variant, player and run index."""
    tasks = run_tasks_for(setup)
    results = _cached(setup.out / "cache" / "runs", tasks, play_run,
                      f"playtest runs ({len(tasks)})", setup)
    for t, r in zip(tasks, results):
        r.update(variant=t["variant"], player=t["player"], run=t["run"])
    return results


def agreement_all(setup: Setup, runs: list) -> tuple:
    """Spec 5.1: for each variant, each owner A and judge B, B's choices on a seeded sample
    of A's decision states (at most ``agreement_states`` per A and variant, drawn across its
    runs).  Within-persona agreement uses fresh seeds, as a fresh instance would.  B's choice
    is its modal choice over ``agreement_seeds`` seeded searches (``play.agreement_task``).
    Returns (hits, alike): hits[(A, B)] = list (per A-run) of lists of 1/0 (B's choice is
    A's recorded move), pooled over variants; alike[(A, B)] = list of 1/0 per A-state (B's
    choice is A's own modal choice there: the two personas would play alike); alike[(A, A)]
    compares A's choices with A's again under other seeds (a retest: how reproducible A's
    choice is, which two personas that play alike also reach)."""
    tasks = []
    by_label = {pl.label: pl for pl in setup.players}
    for v in setup.variants:
        for a in setup.players:
            decisions = [(r["run"], d) for r in runs if r["variant"] == v.name
                         and r["player"] == a.label for d in r["decisions"] if d["n_moves"] >= 2]
            rnd = random.Random(sub_seed(setup.seed, "agreement", v.key, a.label))
            sample = rnd.sample(decisions, min(setup.agreement_states, len(decisions)))
            sample.sort(key=lambda x: (x[0], x[1]["ply"]))
            for b in setup.players:
                tasks.append({"rules_text": v.rules_text, "rules_key": v.key, "variant": v.name,
                              "owner": a.label, "judge": b.label,
                              "persona": _persona_data(by_label[b.label].persona),
                              "role": setup.role, "limit": b.limit,
                              "seed": sub_seed(setup.seed, "judge", v.key, a.label, b.label),
                              "items": [(d["state"], d["move"]) for _, d in sample],
                              "runs": [run for run, _ in sample],
                              "seeds": setup.agreement_seeds, "format": AGREEMENT_FORMAT})
            # A again with other seeds: how often A's own choice is reproduced, the yardstick
            # for how alike two personas are
            mine = next(t for t in tasks[-len(setup.players):] if t["judge"] == a.label)
            tasks.append(dict(mine, retest=True, seed=sub_seed(setup.seed, "retest", v.key, a.label)))
    results = _cached(setup.out / "cache" / "agreement", tasks, agreement_task,
                      f"agreement ({len(tasks)} owner x judge x variant)", setup)
    own = {(t["variant"], t["owner"]): res for t, res in zip(tasks, results)
           if t["owner"] == t["judge"] and not t.get("retest")}
    hits: dict = {}
    alike: dict = {}
    for t, res in zip(tasks, results):
        mine = own[(t["variant"], t["owner"])]
        if t.get("retest"):
            alike.setdefault((t["owner"], t["owner"]), []).extend(
                int(x == y) for x, y in zip(res, mine))
            continue
        per_run: dict = {}
        for run, (_, move), choice in zip(t["runs"], t["items"], res):
            per_run.setdefault((t["variant"], run), []).append(int(choice == move))
        hits.setdefault((t["owner"], t["judge"]), []).extend(per_run.values())
        if t["owner"] != t["judge"]:
            alike.setdefault((t["owner"], t["judge"]), []).extend(
                int(x == y) for x, y in zip(res, mine))
    return hits, alike


def variant_properties(v: Variant, playouts: int = 30, cap: int = 500) -> dict:
    """Structure of a variant from seeded uniform random playouts: mean branching factor
    (legal moves of the roles that have a choice), mean playout length, initial facts and
    ground fluents."""
    engine = engine_for(v.rules_text, v.key)
    rnd = random.Random(sub_seed("properties", v.key))
    n = len(engine.roles)
    s0 = engine.initial_state()
    branching, lengths = [], []
    for _ in range(playouts):
        s, ply = s0, 0
        while not engine.is_terminal(s) and ply < cap:
            legal = [engine.legal_moves(s, r) for r in range(n)]
            branching += [len(m) for m in legal if len(m) >= 2]
            s = engine.next_state(s, [rnd.choice(m) for m in legal])
            ply += 1
        lengths.append(ply)
    return {"branching": sum(branching) / max(1, len(branching)),
            "random length": sum(lengths) / len(lengths),
            "initial facts": float(len(s0)),
            "fluents": float(len(getattr(engine, "base", ()) or ()))}
