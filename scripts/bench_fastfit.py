"""Cost of the fast fit (persona-model 4.6): shared evaluations per 1,000 decisions per game,
time per player model, scaling with decisions (1k, 10k, 40k) and with Dask workers on a
real local cluster, and how often a fitted model's live moves match the recorded ones.

    python scripts/bench_fastfit.py records --out .cache/bench-records      # synthetic checkers records
    python scripts/bench_fastfit.py scale --records .cache/bench-records --json docs/benchmarks/fastfit-scale.json
    python scripts/bench_fastfit.py dask --records .cache/bench-records --json docs/benchmarks/fastfit-dask.json
    python scripts/bench_fastfit.py live --fit docs/reports/fit-connectFour-fast --game connectFour \\
        --json docs/benchmarks/fastfit-live-connectFour.json
    python scripts/bench_fastfit.py report           # docs/benchmarks/fastfit.md from the JSON files
    python scripts/bench_fastfit.py newplayer --game connectFour --player LearningPlayer \\
        --prior docs/reports/fit-connectFour-fast --json docs/benchmarks/fastfit-newplayer-connectFour.json

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
    from agent.engine.loader import load_engine
    from agent.modelling.prepare import prepare
    from agent.modelling.fast import FastSettings, make_plan, run
    cache = Path(tempfile.mkdtemp(prefix="bench-decisions-"))
    sizes = sorted(a.sizes)
    # one plan for every size: the one a user's first fit of the largest would choose
    big = _dataset(a.records, sizes[-1], cache)
    _, _, train, test = prepare(big.decisions, FastSettings())
    plan, modelled = make_plan(load_engine(big.games[big.decisions[0].game]), train, test, 0,
                               cap=FastSettings().train_cap, workers=a.workers)
    print(f"plan for {len(modelled) + len(test)} evaluated decisions: {plan}", flush=True)
    old = json.loads(Path(a.json).read_text()) if a.append and Path(a.json).is_file() else []
    rows = [r for r in old if r["decisions"] > sizes[-1] or r["decisions"] < sizes[0] * 0.9]
    for n in sizes:
        ds = _dataset(a.records, n, cache)
        root = Path(tempfile.mkdtemp(prefix="bench-evals-"))
        out = Path(tempfile.mkdtemp(prefix="bench-fit-"))
        t0 = time.monotonic()
        res = run(ds, out, FastSettings(limit=plan["limit"], n_boot=200), cache_root=root, workers=a.workers,
                  progress=sys.stderr.isatty(), log=lambda m: print(m, flush=True))
        wall = time.monotonic() - t0
        ev = res["stages"]["shared evaluations"]
        evaluated = res["searched_decisions"]
        rows.append({"decisions": len(ds.decisions), "evaluated": evaluated, "plan_limit": res["plan"]["limit"],
                     "modelled_training": res["data"]["train_decisions"],
                     "plan_measured": plan["measured"], "workers": a.workers, "total_wall_s": round(wall, 1),
                     "stages": res["stages"],
                     "eval_wall_per_1000": round(1000 * ev["wall"] / max(1, evaluated), 2),
                     "eval_cpu_per_1000": round(1000 * ev["cpu"] / max(1, evaluated), 2),
                     "player_fit_seconds": res["fit_seconds"], "bar": res["bar"],
                     "estimate_seconds": res["estimate_seconds"], "machine": machine()})
        print(json.dumps(rows[-1]), flush=True)
        Path(a.json).write_text(json.dumps(rows, indent=1))      # each size kept as it finishes
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def cmd_dask(a) -> None:
    from agent.engine.loader import load_engine
    from agent.modelling import shared_evaluations as E
    from agent.modelling.fast import _items, make_plan
    ds = _dataset(a.records, a.decisions, Path(tempfile.mkdtemp(prefix="bench-decisions-")))
    game = ds.decisions[0].game
    plan, _ = make_plan(load_engine(ds.games[game]), ds.decisions, [], 0, cap=0, workers=2, limit=a.limit)
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
    from agent.compute import local_dask_cluster
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    for n in (1, 2):
        with local_dask_cluster(n, cwd=ROOT, env=env) as address:
            got = timed(f"Dask, {n} worker process(es)", scheduler=address)
        same = all((got.data[k] == local.data[k]).all() for k, _ in keyed)
        rows[-1]["equals_local"] = bool(same)
    Path(a.json).write_text(json.dumps(rows, indent=1))


# ---------------------------------------------------------------------------- live

def cmd_live(a) -> None:
    import numpy as np

    from agent.engine.loader import load_engine
    from agent.modelling.dataset import load_dataset
    from agent.modelling.fast import FastSettings
    from agent.modelling.prepare import split
    from agent.modelplay import decide
    from agent.persona import load_persona, persona_files, persona_stem
    import csv
    res = json.loads((Path(a.fit) / "results.json").read_text())
    from agent.report import open_table
    with open_table(a.fit, "decisions.csv") as f:          # decisions.csv.gz in a committed fit
        fitted_argmax = {(r["label"], r["match_id"], r["role"], r["ply"]): float(r["fitted_argmax"])
                         for r in csv.DictReader(f)}
    ds = load_dataset([SHARED / "corpus" / "matches" / "ggp-base-local-petewall"],
                      repositories=[SHARED / "corpus" / "games"], game=a.game, drop_duplicates=True,
                      aliases={"ConfidenceAgent": "ConfidencePlayer"},
                      cache_dir=ROOT / ".cache" / "modelling" / "decisions", progress=False)
    _, test = split(ds.decisions, FastSettings())
    eng = load_engine(ds.games[test[0].game])
    rng = random.Random(0)
    rows = []
    files = {persona_stem(f): f for f in persona_files(Path(a.fit) / "personas")}
    for lab in res["labels"]:
        persona = load_persona(files.get(lab, Path(a.fit) / "personas" / f"{lab}.toml"))
        ds_l = [d for d in test if d.label == lab]
        sample = rng.sample(ds_l, min(a.decisions, len(ds_l)))
        agree, elapsed, same_sample = [], [], []
        for i, d in enumerate(sample):
            same_sample.append(fitted_argmax[(lab, d.match_id, str(d.role), str(d.ply))])
            t0 = time.monotonic()
            f = decide(eng, d.state, d.role, list(d.moves), d.prev, persona, 10_000 + i, a.clock)
            elapsed.append(time.monotonic() - t0)
            agree.append(f.move == d.moves[d.chosen])
        report = next(r for r in res["metrics"] if r["label"] == lab and r["model"] == "fitted")
        rows.append({"label": lab, "decisions": len(sample), "clock_s": a.clock,
                     "live_aar": round(float(np.mean(agree)), 3),
                     "report_argmax_same_decisions": round(float(np.mean(same_sample)), 3),
                     "report_argmax_aar": round(report["argmax"], 3),
                     "report_argmax_lo": round(report["argmax_lo"], 3), "report_argmax_hi": round(report["argmax_hi"], 3),
                     "median_decide_s": round(float(np.median(elapsed)), 3), "max_decide_s": round(max(elapsed), 3),
                     "machine": machine()})
        print(json.dumps(rows[-1]), flush=True)
    Path(a.json).write_text(json.dumps(rows, indent=1))


# ---------------------------------------------------------------------------- one new player

def cmd_newplayer(a) -> None:
    """A new player's matches fitted against an earlier fit (``--prior``), with another
    experiment seed so that every decision is searched, as a person's new matches are.
    The matches are the bot's latest, which the earlier fit held out."""
    src = SHARED / "corpus" / "matches" / "ggp-base-local-petewall" / a.game
    recs = [(json.loads(f.read_text()), f) for f in src.rglob("*.json")]
    # its latest matches: the later-matches test set of the fit it is ranked against
    files = [f for r, f in sorted(recs, key=lambda rf: (rf[0]["startTime"], str(rf[1])))
             if a.player in r["playerNamesFromHost"]]
    tmp = Path(tempfile.mkdtemp(prefix="bench-newplayer-"))
    for f in files[-a.matches:]:
        shutil.copy(f, tmp / f"{f.parent.name}.{f.name}")
    out = Path(tempfile.mkdtemp(prefix="bench-newplayer-fit-"))
    cmd = [str(ROOT / ".venv" / "bin" / "ggp-persona"), "fit", str(tmp), "--games", str(SHARED / "corpus" / "games"),
           "--game", a.game, "--player", a.player, "--prior", a.prior, "--out", str(out), "--seed", str(a.seed),
           "--workers", "2"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    res = json.loads((out / "results.json").read_text())
    row = {"game": a.game, "player": a.player, "matches": a.matches, "decisions": res["data"]["counts"]["decisions"],
           "searched": res["searched_decisions"], "command_wall_s": round(wall, 1), "stages": res["stages"],
           "most_like": res["most_like"], "machine": machine()}
    print(json.dumps(row), flush=True)
    Path(a.json).write_text(json.dumps(row, indent=1))


# ---------------------------------------------------------------------------- report

def _load(path):
    p = Path(path)
    return json.loads(p.read_text()) if p.is_file() else None


def cmd_report(a) -> None:
    """docs/benchmarks/fastfit.md from the JSON files of the other commands and the fit
    reports' results.json: no figure typed by hand."""
    b = ROOT / "docs" / "benchmarks"
    out = ["# Fast fit: cost, scaling, Dask, one new player, live play", "",
           "Made by `python scripts/bench_fastfit.py report` from the JSON beside it "
           "(`docs/benchmarks/fastfit-*.json`); each JSON's command is in the script's docstring. "
           "The machine: 2 cores, shared with other work during these runs: every row carries the "
           "1-minute load average when it was written, and CPU seconds (this process and its "
           "workers) beside wall seconds, so a row measured under load can be read for an idle machine "
           "(CPU / cores).", ""]
    out += ["## Shared evaluations per 1,000 decisions, per game", "",
            "From each game's first fast fit with a fresh cache (`fastfit-cold-<game>.json`: its stages, "
            "copied from its results.json, with the command).", "",
            "| game | decisions searched | plan (simulations per search) | wall s / 1,000 | CPU s / 1,000 | "
            "player models wall s | all stages wall s | load |", "|---|---|---|---|---|---|---|---|"]
    for game in ("connectFour", "nineBoardTicTacToe"):
        res = _load(b / f"fastfit-cold-{game}.json")
        if not res:
            continue
        ev, n = res["stages"]["shared evaluations"], max(1, res["searched_decisions"])
        total = sum(t["wall"] for t in res["stages"].values())
        out.append(f"| {game} | {res['searched_decisions']} | {res['plan']['limit']} | {1000 * ev['wall'] / n:.1f} | "
                   f"{1000 * ev['cpu'] / n:.1f} | {res['stages']['player models']['wall']:.0f} | {total:.0f} | "
                   f"{res.get('machine', {}).get('load_1min', '—')} |")
    scale = _load(b / "fastfit-scale.json")
    if scale:
        out += ["", "## Scaling with decisions (synthetic checkers, ~100 plies)", "",
                "`scale`: the whole default fit on the first 1k, 10k and 40k decisions of the synthetic "
                "checkers records (`records`), 2 local workers, a fresh cache each, with one plan for every "
                "size (the one the largest would get). 'simulations' is each row's plan: the 1k and 10k rows "
                "(450) were measured with the plan's first probe of 9 recorded states, which underestimated "
                "a checkers decision's cost; the 40k row (300) is the default fit as it stands, with a probe "
                "of 30. 'idle projection': the whole run's CPU seconds over the machine's 2 cores, what the "
                "run would take with nothing else running.", "",
                "| decisions | evaluated | simulations | shared eval wall s / 1,000 | CPU s / 1,000 | "
                "shared eval wall s | player models wall s | whole run wall s | whole run CPU s | "
                "idle projection min | load |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(scale, key=lambda r: r["decisions"]):
            st = r["stages"]
            cpu = sum(t["cpu"] for t in st.values())
            out.append(f"| {r['decisions']} | {r['evaluated']} | {r['plan_limit']} | {r['eval_wall_per_1000']} | "
                       f"{r['eval_cpu_per_1000']} | {st['shared evaluations']['wall']:.0f} | "
                       f"{st['player models']['wall']:.0f} | {r['total_wall_s']:.0f} | {cpu:.0f} | "
                       f"{cpu / 2 / 60:.1f} | {r['machine']['load_1min']} |")
        out += ["", "Per player model (seconds, wall): " + "; ".join(
            f"{r['decisions']} decisions: " + ", ".join(f"{k} {v:.1f}" for k, v in r["player_fit_seconds"].items())
            for r in sorted(scale, key=lambda r: r["decisions"]))]
    dask = _load(b / "fastfit-dask.json")
    if dask:
        out += ["", "## Dask workers on a real local cluster", "",
                "`dask`: a scheduler and N workers started as separate processes (`dask scheduler`, "
                "`dask worker --nthreads 1`), the shared evaluations of the same synthetic checkers "
                "decisions on each, after one warm-up round; the local pool for reference. "
                "'equals local': every feature matrix identical to the local pool's.", "",
                "| backend | decisions | simulations | wall s | wall s / 1,000 | equals local | load |",
                "|---|---|---|---|---|---|---|"]
        for r in dask:
            out.append(f"| {r['backend']} | {r['decisions']} | {r['plan_limit']} | {r['wall_s']} | {r['per_1000_s']} | "
                       f"{r.get('equals_local', '—')} | {r['machine']['load_1min']} |")
    for game in ("connectFour", "nineBoardTicTacToe"):
        new = _load(b / f"fastfit-newplayer-{game}.json")
        if new:
            out += ["", f"## One new player ({game})", "",
                    f"`newplayer`: the last {new['matches']} matches of {new['player']} fitted with `--prior` "
                    f"against the committed fit and another experiment seed, so that each of its "
                    f"{new['decisions']} decisions is searched, as a person's new matches are: "
                    f"{new['searched']} searched, **{new['command_wall_s']} s** for the whole command "
                    f"(load {new['machine']['load_1min']}). Stages: " + ", ".join(
                        f"{k} {v['wall']:.1f} s" for k, v in new["stages"].items()) +
                    ". Most like: " + ", ".join(f"{k} {v:.3f}" for k, v in
                                               new["most_like"].get(new["player"], {}).items()) + "."]
    live_rows = []
    for game in ("connectFour", "nineBoardTicTacToe"):
        for r in _load(b / f"fastfit-live-{game}.json") or []:
            live_rows.append(f"| {game} | {r['label']} | {r['decisions']} | {r['clock_s']} | {r['live_aar']} | "
                             f"{r.get('report_argmax_same_decisions', '—')} | "
                             f"{r['report_argmax_aar']} [{r['report_argmax_lo']}, {r['report_argmax_hi']}] | "
                             f"{r['median_decide_s']} / {r['max_decide_s']} | {r['machine']['load_1min']} |")
    if live_rows:
        out += ["", "## The fitted models play: live moves against the recorded ones", "",
                "`live`: each bot's fitted persona decides a seeded sample of its test positions through "
                "`agent.modelplay.decide` (what the server's player runs) at the given clock, with other "
                "seeds than the fit's; 'live AAR' is how often its move is the recorded one, beside the "
                "report's argmax AAR on the same decisions (the fitted columns, CRN seeds) and on all of the "
                "bot's test decisions (95 % interval).", "",
                "| game | bot | decisions | clock s | live AAR | report argmax AAR, same decisions | "
                "report argmax AAR, all test decisions | decide s median / max | load |",
                "|---|---|---|---|---|---|---|---|---|"] + live_rows
    Path(a.out).write_text("\n".join(out) + "\n")


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
    s.add_argument("--append", action="store_true", help="keep the rows of other sizes already in --json")
    d = sub.add_parser("dask")
    d.add_argument("--records", required=True)
    d.add_argument("--decisions", type=int, default=1000)
    d.add_argument("--limit", type=int, default=0)
    d.add_argument("--json", required=True)
    lv = sub.add_parser("live")
    lv.add_argument("--fit", required=True)
    lv.add_argument("--game", required=True)
    lv.add_argument("--decisions", type=int, default=250)
    lv.add_argument("--clock", type=float, default=2.0)
    lv.add_argument("--json", required=True)
    n = sub.add_parser("newplayer")
    n.add_argument("--game", required=True)
    n.add_argument("--player", required=True)
    n.add_argument("--prior", required=True)
    n.add_argument("--matches", type=int, default=10)
    n.add_argument("--seed", type=int, default=1)
    n.add_argument("--json", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "fastfit.md"))
    a = ap.parse_args()
    {"report": cmd_report, "records": cmd_records, "scale": cmd_scale, "dask": cmd_dask, "live": cmd_live,
     "newplayer": cmd_newplayer}[a.cmd](a)


if __name__ == "__main__":
    main()
