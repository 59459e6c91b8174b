"""Cost of the fast fit (persona-model 4.6): shared evaluations per 1,000 decisions per game,
time per player model, scaling with decisions (1k, 10k, 40k) and with Dask workers on a
real local cluster, and how often a fitted model's live moves match the recorded ones.

    python scripts/bench_fastfit.py records --out /tmp/bench-records      # synthetic checkers records
    python scripts/bench_fastfit.py scale --records /tmp/bench-records --json docs/benchmarks/fastfit-scale.json
    python scripts/bench_fastfit.py dask --records /tmp/bench-records --json docs/benchmarks/fastfit-dask.json
    python scripts/bench_fastfit.py live --fit docs/reports/fit-connectFour-fast --game connectFour \\
        --json docs/benchmarks/fastfit-live-connectFour.json

``records``: the bots' corpus has no ~100-ply game, so a long game's cost is measured on
matches made here: checkers (base repository, about 100 plies) between four simple players
(uniformly random; the first legal move; the last legal move; the move that most increases
its own facts), six pairings, roles alternating.  They measure cost and scaling, not how
well real players are modelled.  ``scale`` runs the whole default fit (``fast.run``) on the
first 1k, 10k and 40k decisions, each with a fresh evaluation cache; the 40k run chooses the
game's plan (as a user's first fit does) and the smaller ones reuse its simulations, so the
three measure the same work per decision.  ``dask`` starts a scheduler and N workers as
separate processes on 127.0.0.1 and times the shared evaluations of the same decisions on
1 and 2 workers (and on the local pool).  ``live``: a fitted persona plays the recorded
positions of the test decisions at a play clock, through ``agent.modelplay.decide`` (what
the server's player runs), and its move is compared with the recorded one.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CHECKERS = SHARED / "corpus" / "games" / "base" / "games" / "checkers" / "v1" / "checkers.kif"
PLAYERS = ("Random", "First", "Last", "Gainer")


def machine() -> dict:
    return {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2), "python": platform.python_version(),
            "when": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


# ---------------------------------------------------------------------------- records

def _choose(who, eng, s, r, legal, rng, facts):
    if who == "Random" or len(legal) == 1:
        return rng.choice(legal)
    if who == "First":
        return legal[0]
    if who == "Last":
        return legal[-1]
    from agent.search.features import fact_counts
    best, top = [], None
    others = [eng.legal_moves(s, q) for q in range(len(eng.roles))]
    for m in legal:
        joint = [m if q == r else rng.choice(others[q]) for q in range(len(eng.roles))]
        own, _ = fact_counts(eng.next_state(s, joint), facts, [])
        v = own[r] - (own.sum() - own[r])
        if top is None or v > top:
            best, top = [m], v
        elif v == top:
            best.append(m)
    return rng.choice(best)


def cmd_records(a) -> None:
    from agent.engine.loader import load_engine
    from agent.search.features import FactIndex
    from gdl.kif import read_rules_file
    from gdl.terms import render
    from rich.progress import track
    eng = load_engine(read_rules_file(CHECKERS))
    facts = FactIndex(eng.roles)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = [(p, q) for i, p in enumerate(PLAYERS) for q in PLAYERS[i + 1:]]
    rng = random.Random(a.seed)
    for i in track(range(a.matches), description="playing"):
        p, q = pairs[i % len(pairs)]
        names = [p, q] if (i // len(pairs)) % 2 == 0 else [q, p]
        s, moves = eng.initial_state(), []
        while not eng.is_terminal(s) and len(moves) < a.max_plies:
            joint = [_choose(names[r], eng, s, r, eng.legal_moves(s, r), rng, facts) for r in range(len(names))]
            moves.append([render(m) for m in joint])
            s = eng.next_state(s, joint)
        if not eng.is_terminal(s):
            continue      # a record must end: matches past the cap are not kept
        rec = {"matchId": f"bench.checkers.{i}", "playerNamesFromHost": names, "startTime": 1000 * i,
               "moves": moves, "startClock": 30, "playClock": 10}
        (out / f"m{i:05d}.json").write_text(json.dumps(rec))


# ---------------------------------------------------------------------------- scale

def _dataset(records, n_decisions, cache):
    from agent.modelling.dataset import Dataset, load_dataset
    ds = load_dataset([records], game=str(CHECKERS), cache_dir=cache, progress=False)
    keep, total = set(), 0
    for mid in sorted({d.match_id for d in ds.decisions}, key=lambda m: int(m.rsplit(".", 1)[1])):
        if total >= n_decisions:
            break
        keep.add(mid)
        total += sum(1 for d in ds.decisions if d.match_id == mid)
    return Dataset([d for d in ds.decisions if d.match_id in keep], ds.games, ds.summary)


def cmd_scale(a) -> None:
    from agent.modelling.fast import FastSettings, run
    rows, limit = [], 0
    cache = Path(tempfile.mkdtemp(prefix="bench-decisions-"))
    for n in sorted(a.sizes, reverse=True):
        ds = _dataset(a.records, n, cache)
        root = Path(tempfile.mkdtemp(prefix="bench-evals-"))
        out = Path(tempfile.mkdtemp(prefix="bench-fit-"))
        t0 = time.monotonic()
        res = run(ds, out, FastSettings(limit=limit, n_boot=200), cache_root=root, workers=a.workers,
                  progress=sys.stderr.isatty(), log=lambda m: print(m, flush=True))
        wall = time.monotonic() - t0
        limit = limit or res["plan"]["limit"]
        ev = res["stages"]["shared evaluations"]
        evaluated = res["searched_decisions"]
        rows.append({"decisions": len(ds.decisions), "evaluated": evaluated, "plan_limit": res["plan"]["limit"],
                     "workers": a.workers, "total_wall_s": round(wall, 1), "stages": res["stages"],
                     "eval_wall_per_1000": round(1000 * ev["wall"] / max(1, evaluated), 2),
                     "eval_cpu_per_1000": round(1000 * ev["cpu"] / max(1, evaluated), 2),
                     "player_fit_seconds": res["fit_seconds"], "bar": res["bar"],
                     "estimate_seconds": res["estimate_seconds"], "machine": machine()})
        print(json.dumps(rows[-1]), flush=True)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    Path(a.json).write_text(json.dumps(rows, indent=1))


# ---------------------------------------------------------------------------- dask

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster(n_workers):
    dask = Path(sys.executable).with_name("dask")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for _ in range(n_workers):
        procs.append(subprocess.Popen([str(dask), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard"], cwd=ROOT, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from distributed import Client
    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(address, timeout="5s") as c:
                c.wait_for_workers(n_workers, timeout=120)
            return address, procs
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _stop(procs):
    for p in reversed(procs):
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def cmd_dask(a) -> None:
    from agent.engine.loader import load_engine
    from agent.modelling import evaluations as E
    from agent.modelling.fast import _items, make_plan
    ds = _dataset(a.records, a.decisions, Path(tempfile.mkdtemp(prefix="bench-decisions-")))
    game = ds.decisions[0].game
    plan = make_plan(load_engine(ds.games[game]), ds.decisions, 0, n_eval=len(ds.decisions), workers=2,
                     limit=a.limit)
    keyed = _items(ds.decisions, 0)
    rows = []

    def timed(label, **kw):
        root = Path(tempfile.mkdtemp(prefix="bench-evals-"))
        # warm: each worker loads the engine and the compiled code once, as in a long fit
        E.EvalCache(None, game, plan).fill(game, ds.games[game], keyed[:4 * E.CHUNK], progress=False, **kw)
        cache = E.EvalCache(root, game, plan)
        t0 = time.monotonic()
        cache.fill(game, ds.games[game], keyed, progress=False, **kw)
        wall = time.monotonic() - t0
        rows.append({"backend": label, "decisions": len(keyed), "plan_limit": plan["limit"], "wall_s": round(wall, 1),
                     "per_1000_s": round(1000 * wall / len(keyed), 2), "machine": machine()})
        print(json.dumps(rows[-1]), flush=True)
        shutil.rmtree(root, ignore_errors=True)
        return cache

    local = timed("local pool, 2 processes", workers=2)
    for n in (1, 2):
        address, procs = _cluster(n)
        try:
            got = timed(f"Dask, {n} worker process(es)", scheduler=address)
        finally:
            _stop(procs)
        same = all((got.data[k] == local.data[k]).all() for k, _ in keyed)
        rows[-1]["equals_local"] = bool(same)
    Path(a.json).write_text(json.dumps(rows, indent=1))


# ---------------------------------------------------------------------------- live

def cmd_live(a) -> None:
    import numpy as np

    from agent.engine.loader import load_engine
    from agent.modelling.dataset import load_dataset
    from agent.modelling.experiment import split
    from agent.modelling.fast import FastSettings
    from agent.modelplay import decide
    from agent.persona import load_persona
    res = json.loads((Path(a.fit) / "results.json").read_text())
    ds = load_dataset([SHARED / "corpus" / "matches" / "ggp-base-local-petewall"],
                      repositories=[SHARED / "corpus" / "games"], game=a.game, drop_duplicates=True,
                      aliases={"ConfidenceAgent": "ConfidencePlayer"},
                      cache_dir=ROOT / ".cache" / "modelling" / "decisions", progress=False)
    _, test = split(ds.decisions, FastSettings())
    eng = load_engine(ds.games[test[0].game])
    rng = random.Random(0)
    rows = []
    for lab in res["labels"]:
        persona = load_persona(Path(a.fit) / "personas" / f"{lab}.toml")
        ds_l = [d for d in test if d.label == lab]
        sample = rng.sample(ds_l, min(a.decisions, len(ds_l)))
        agree, elapsed = [], []
        for i, d in enumerate(sample):
            t0 = time.monotonic()
            f = decide(eng, d.state, d.role, list(d.moves), d.prev, persona, 10_000 + i, a.clock)
            elapsed.append(time.monotonic() - t0)
            agree.append(f["move"] == d.moves[d.chosen])
        report = next(r for r in res["metrics"] if r["label"] == lab and r["model"] == "fitted")
        rows.append({"label": lab, "decisions": len(sample), "clock_s": a.clock,
                     "live_aar": round(float(np.mean(agree)), 3), "report_argmax_aar": round(report["argmax"], 3),
                     "report_argmax_lo": round(report["argmax_lo"], 3), "report_argmax_hi": round(report["argmax_hi"], 3),
                     "median_decide_s": round(float(np.median(elapsed)), 3), "max_decide_s": round(max(elapsed), 3),
                     "machine": machine()})
        print(json.dumps(rows[-1]), flush=True)
    Path(a.json).write_text(json.dumps(rows, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("records")
    r.add_argument("--out", required=True)
    r.add_argument("--matches", type=int, default=480)
    r.add_argument("--max-plies", type=int, default=300)
    r.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("scale")
    s.add_argument("--records", required=True)
    s.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 40000])
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--json", required=True)
    d = sub.add_parser("dask")
    d.add_argument("--records", required=True)
    d.add_argument("--decisions", type=int, default=1000)
    d.add_argument("--limit", type=int, default=0)
    d.add_argument("--json", required=True)
    lv = sub.add_parser("live")
    lv.add_argument("--fit", required=True)
    lv.add_argument("--game", required=True)
    lv.add_argument("--decisions", type=int, default=150)
    lv.add_argument("--clock", type=float, default=2.0)
    lv.add_argument("--json", required=True)
    a = ap.parse_args()
    {"records": cmd_records, "scale": cmd_scale, "dask": cmd_dask, "live": cmd_live}[a.cmd](a)


if __name__ == "__main__":
    main()
