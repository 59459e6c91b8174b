"""Does a fitted clone carry a habit to positions it never saw? (issue 54)

Scripted "people" (``agent.modelling.scripted``: leftmost, rightmost, centre, edge,
capture, copy the opponent, next to my last move, next to the opponent's last move) each
play 10 matches against a persona on three games, recorded through the match runner
(``agent.match.runner.run_match``, the person's role alternating).  Each person's clone is
then fitted by the fast fit exactly as "learn my style" runs it (``agent.modelling.fast.run``:
later matches held out; here grouped k-fold over the matches, so that every match is
held out once), once with the move features (``movefeatures``) and once without
(``move_features=False``: the model before them), both on the same cached shared
evaluations.  Agreement is the clone's most likely move against the person's, on the held-out
matches' positions whose state never occurs in the person's training matches, with Wilson
95 % intervals.

``bots``: the persona-model 5 metrics of the recorded bots (the corpus's connectFour matches,
fitted and held out as ``scripts/fit_bots.sh`` does, on the committed fit's plan) with and
without the move features, beside the committed ``docs/reports/fit-<game>-fast/results.json``.

    .venv/bin/python scripts/bench_clone.py matches      # the scripted people's matches (resumes)
    .venv/bin/python scripts/bench_clone.py fit          # clones before/after, agreement (resumes)
    .venv/bin/python scripts/bench_clone.py bots --game connectFour
    .venv/bin/python scripts/bench_clone.py report       # the section of docs/benchmarks/web.md

Everything goes under ``--out`` (default ``.cache/bench-clone``); every finished match, fit
and bot run is kept there, so the same command resumes after Ctrl-C.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

GAMES = ("connectFour", "breakthrough", "nineBoardTicTacToe")
HABITS = ("leftmost", "centre", "capture", "copy", "near-own", "near-opp")   # scripted.HABITS has two more
OPPONENT_LIMIT = 200          # the persona's simulations per move: a varied, quick opponent
BEGIN, END = "<!-- clone-generalisation:begin -->", "<!-- clone-generalisation:end -->"
DOC = ROOT / "docs" / "benchmarks" / "web.md"
RESULTS = ROOT / "docs" / "benchmarks" / "clone.json"


def _write_json(path: Path, data) -> None:
    from agent.matchlog import atomic_write_bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(data, indent=1).encode())


def _machine() -> dict:
    return {"cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2),
            "when": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


# ---------------------------------------------------------------------------- matches

def _finished(path: Path) -> bool:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return bool(d.get("isCompleted")) and "goalValues" in d


def _opponent_file(out: Path) -> Path:
    from agent.persona import load_persona
    p = out / "opponent.toml"
    if not p.exists():
        text = load_persona("champion").replace(name="opponent", limit=OPPONENT_LIMIT).to_toml()
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return p


async def _play_all(a, todo) -> None:
    from rich.progress import Progress

    from agent.match.players import PersonaPlayer
    from agent.match.runner import run_match
    from agent.modelling.scripted import ScriptedPlayer
    out = Path(a.out)
    opponent = PersonaPlayer(str(_opponent_file(out)), name="opponent", log_dir=out / "opponent-logs",
                             seed=a.seed, ponder=False)
    people = {h: ScriptedPlayer(h) for h in HABITS}
    try:
        await opponent.prepare()
        with Progress() as bar:
            task = bar.add_task("scripted people's matches", total=len(todo))
            for game, habit, i in todo:
                rules = (ROOT / "games" / f"{game}.kif").read_text()
                folder = out / "records" / game / habit
                players = [people[habit], opponent] if i % 2 == 0 else [opponent, people[habit]]
                bar.update(task, description=f"{game} {habit} {i + 1}/{a.matches}")
                await run_match(rules, players, start_clock=a.start_clock, play_clock=a.play_clock,
                                match_id=f"clone.{game}.{habit}.{i}", seed=a.seed + i, out_dir=folder,
                                referee="auto")
                bar.advance(task)
    finally:
        await opponent.close()
        for p in people.values():
            await p.close()


def cmd_matches(a) -> None:
    out = Path(a.out)
    todo = [(g, h, i) for g in a.games for h in a.habits for i in range(a.matches)
            if not _finished(out / "records" / g / h / f"clone.{g}.{h}.{i}.json")]
    print(f"{len(todo)} matches to play")
    if todo:
        asyncio.run(_play_all(a, todo))


# ---------------------------------------------------------------------------- clones

def wilson(k: int, n: int) -> tuple:
    from agent.stats import proportion_ci
    return proportion_ci(k, n) if n else (float("nan"), float("nan"), float("nan"))


def agreement(fit_dir: Path, ds, settings, cache_root: Path) -> dict:
    """The clone's argmax against the person's moves on held-out positions never seen in
    training (and on all held-out positions)."""
    import numpy as np

    from agent.engine.loader import load_engine
    from agent.modelling import evaluations as E
    from agent.modelling.baselines import state_key
    from agent.modelling.experiment import prepare, slug
    from agent.modelling.fast import _items
    from agent.modelling.modelfile import align, model_of
    from agent.persona import load_persona
    from agent.search.features import calibrate
    res = json.loads((fit_dir / "results.json").read_text())
    game, labels, train, test = prepare(ds.decisions, settings)
    (label,) = labels
    model, plan = model_of(load_persona(fit_dir / "personas" / f"{slug(label)}.toml"))
    cache = E.EvalCache(cache_root, game, plan)
    engine = load_engine(ds.games[game])
    names = E.feature_names(calibrate(engine))
    seen = {state_key(d.state) for d in train}
    hits = {"unseen": [0, 0], "all": [0, 0]}
    for d, (k, _) in zip(test, _items(test, settings.seed)):
        x = align(cache.data[k], names, model.shared_names)
        lp = model.log_probs(x, d.state, d.prev, d.moves, model.move_features(engine, d.state, d.role, d.moves,
                                                                               d.history))
        ok = int(np.argmax(lp) == d.chosen)
        for part in (["all", "unseen"] if state_key(d.state) not in seen else ["all"]):
            hits[part][0] += ok
            hits[part][1] += 1
    row = {"train_decisions": len(train), "test_decisions": len(test),
           "train_matches": len({d.match_id for d in train}), "test_matches": len({d.match_id for d in test}),
           "fit_seconds": res.get("stages", {})}
    for part, (k, n) in hits.items():
        p, lo, hi = wilson(k, n)
        row[part] = {"agree": k, "n": n, "p": p, "lo": lo, "hi": hi}
    fitted = [r for r in res.get("metrics", []) if r.get("model") == "fitted"]
    if fitted:
        row["report_logp"], row["report_argmax"] = fitted[0].get("logp"), fitted[0].get("argmax")
    return row


def cmd_fit(a) -> None:
    """Per (game, person, before/after): ``--folds`` fits, each holding out its share of the
    person's matches (grouped k-fold), the held-out positions pooled over the folds."""
    from rich.progress import Progress

    from agent.modelling.dataset import load_dataset
    from agent.modelling.fast import FastSettings, run
    out = Path(a.out)
    cache_root = out / "evals"
    jobs = [(g, h, v, f) for g in a.games for h in a.habits for v in ("before", "after") for f in range(a.folds)]
    datasets: dict = {}
    with Progress() as bar:
        task = bar.add_task("clones", total=len(jobs))
        for game, habit, variant, fold in jobs:
            dest = out / "agreement" / game / habit / variant / f"fold{fold}.json"
            bar.update(task, description=f"{game} {habit} {variant} fold {fold + 1}/{a.folds}")
            if dest.exists():
                bar.advance(task)
                continue
            records = out / "records" / game / habit
            files = sorted(str(f) for f in records.glob("*.json") if _finished(f))
            if len(files) < a.folds:
                bar.console.print(f"{game} {habit}: {len(files)} finished matches, skipped")
                bar.advance(task)
                continue
            if (game, habit) not in datasets:
                datasets[(game, habit)] = load_dataset(files, players={habit}, progress=False,
                                                       cache_dir=out / "decisions")
            ds = datasets[(game, habit)]
            settings = FastSettings(n_boot=300, move_features=variant == "after", split="kfold",
                                    folds=a.folds, fold=fold)
            fit_dir = out / "fits" / game / habit / variant / f"fold{fold}"
            t0 = time.monotonic()
            run(ds, fit_dir, settings, cache_root=cache_root, workers=a.workers, progress=False,
                log=lambda m: None)
            row = agreement(fit_dir, ds, settings, cache_root)
            row.update(game=game, habit=habit, variant=variant, fold=fold, matches=len(files),
                       seconds=round(time.monotonic() - t0, 1), machine=_machine())
            _write_json(dest, row)
            bar.advance(task)
    for game in a.games:
        for habit in a.habits:
            for variant in ("before", "after"):
                folds = sorted((out / "agreement" / game / habit / variant).glob("fold*.json"))
                if len(folds) != a.folds:
                    continue
                rows = [json.loads(f.read_text()) for f in folds]
                agg = {"game": game, "habit": habit, "variant": variant, "folds": a.folds,
                       "matches": rows[0]["matches"], "machine": rows[-1]["machine"],
                       "train_decisions": sum(r["train_decisions"] for r in rows) / len(rows),
                       "seconds": round(sum(r["seconds"] for r in rows), 1)}
                for part in ("unseen", "all"):
                    k, n = sum(r[part]["agree"] for r in rows), sum(r[part]["n"] for r in rows)
                    p, lo, hi = wilson(k, n)
                    agg[part] = {"agree": k, "n": n, "p": p, "lo": lo, "hi": hi}
                _write_json(out / "agreement" / game / habit / f"{variant}.json", agg)
                u = agg["unseen"]
                print(f"{game:20s} {habit:9s} {variant:6s} unseen {u['agree']}/{u['n']} = {u['p']:.3f} "
                      f"[{u['lo']:.2f}, {u['hi']:.2f}]")


# ---------------------------------------------------------------------------- bots

def cmd_bots(a) -> None:
    from agent.modelling.dataset import load_dataset
    from agent.modelling.evaluations import EvalCache
    from agent.modelling.fast import FastSettings, run
    out = Path(a.out)
    committed = json.loads((ROOT / "docs" / "reports" / f"fit-{a.game}-fast" / "results.json").read_text())
    ds = load_dataset([SHARED / "corpus" / "matches" / "ggp-base-local-petewall"],
                      repositories=[SHARED / "corpus" / "games"], game_dirs=[ROOT / "games"],
                      aliases={"ConfidenceAgent": "ConfidencePlayer"}, drop_duplicates=True,
                      cache_dir=out / "decisions", game=a.game, progress=True)
    cache_root = out / "bot-evals"
    game = ds.decisions[0].game
    if EvalCache.stored_plan(cache_root, game) is None:
        # the committed fit's plan: the same simulations, so the figures compare
        EvalCache.store_plan(cache_root, game, committed["plan"])
    for variant in ("before", "after"):
        dest = out / "bots" / a.game / f"{variant}.json"
        if dest.exists():
            continue
        t0 = time.monotonic()
        res = run(ds, out / "bot-fits" / a.game / variant, FastSettings(move_features=variant == "after"),
                  cache_root=cache_root, workers=a.workers, progress=True)
        _write_json(dest, {"game": a.game, "variant": variant, "metrics": res["metrics"], "paired": res["paired"],
                           "stages": res["stages"], "seconds": round(time.monotonic() - t0, 1),
                           "plan": res["plan"], "bar": res["bar"], "machine": _machine(),
                           "committed_metrics": committed["metrics"]})
        print(f"{a.game} {variant}: {round(time.monotonic() - t0)} s")


# ---------------------------------------------------------------------------- report

def _cell(r: dict | None) -> str:
    if not r or not r["n"]:
        return "—"
    return f"{r['p']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]"


def _bot_rows(out: Path) -> list:
    lines = []
    for game in GAMES:
        files = {v: out / "bots" / game / f"{v}.json" for v in ("before", "after")}
        if not all(f.exists() for f in files.values()):
            continue
        got = {v: json.loads(f.read_text()) for v, f in files.items()}
        committed = {(r["label"], r["model"]): r for r in got["after"]["committed_metrics"]}
        rows = {v: {(r["label"], r["model"]): r for r in got[v]["metrics"]} for v in got}
        for (label, model), r in sorted(rows["after"].items()):
            if model != "fitted":
                continue
            c, b = committed.get((label, model)), rows["before"].get((label, model))

            def fmt(x):
                return "—" if x is None else f"{x['logp']:.3f} / {x['argmax']:.3f}"
            lines.append(f"| {game} | {label} | {fmt(c)} | {fmt(b)} | {fmt(r)} | "
                         f"{r['logp'] - b['logp']:+.3f} / {r['argmax'] - b['argmax']:+.3f} |")
    return lines


def cmd_report(a) -> None:
    from agent.matchlog import atomic_write_bytes
    from agent.modelling.scripted import HABITS as DESCR
    out = Path(a.out)
    rows = {}
    for f in sorted((out / "agreement").glob("*/*/*.json")):
        r = json.loads(f.read_text())
        rows[(r["game"], r["habit"], r["variant"])] = r
    _write_json(RESULTS, {"rows": list(rows.values())})
    loads = [r["machine"]["load_1min"] for r in rows.values()]
    lines = [BEGIN, "## A clone where you have never been (issue 54)", "",
             "Scripted people, each with one habit, played 10 matches against a persona (`champion` "
             f"at {OPPONENT_LIMIT} simulations a move, the person's role alternating) through the match "
             "runner; each person's clone was fitted by the fast fit as \"learn my style\" runs it, with the move features (`agent/modelling/movefeatures.py`) and "
             "without them (the model before). Agreement: the clone's most likely move equals the "
             "person's, on held-out positions whose state never occurs in the person's training "
             "matches (5 fits per person, each holding out 2 of the 10 matches, grouped k-fold; the "
             "held-out positions of the 5 pooled; Wilson 95 % intervals; n = those positions). Reproduce:", "",
             "    .venv/bin/python scripts/bench_clone.py matches && .venv/bin/python scripts/bench_clone.py fit",
             "    .venv/bin/python scripts/bench_clone.py bots --game connectFour && "
             ".venv/bin/python scripts/bench_clone.py report", "",
             f"Load (1 min) while fitting: {min(loads, default=0):.1f} to {max(loads, default=0):.1f}; raw rows in "
             "`docs/benchmarks/clone.json`.", "",
             "| person (habit) | game | n unseen | before | after | after, all held-out positions |",
             "|---|---|---|---|---|---|"]
    for habit in HABITS:
        for game in GAMES:
            b, f = rows.get((game, habit, "before")), rows.get((game, habit, "after"))
            if not f:
                continue
            lines.append(f"| {habit}: {DESCR[habit][0]} | {game} | {f['unseen']['n']} | "
                         f"{_cell(b and b['unseen'])} | **{_cell(f['unseen'])}** | {_cell(f['all'])} |")
    bots = _bot_rows(out)
    if bots:
        lines += ["", "The recorded bots (persona-model 5 metrics: test log-likelihood per decision / "
                  "AAR of argmax, the corpus's later-matches test set, the committed fit's plan) — committed "
                  "report, rerun without the move features, rerun with them:", "",
                  "| game | bot | committed | before | after | after − before |", "|---|---|---|---|---|---|"]
        lines += bots
    lines.append(END)
    text = DOC.read_text(encoding="utf-8")
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    atomic_write_bytes(DOC, text.encode("utf-8"))
    print(f"wrote {DOC.relative_to(ROOT)}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("matches", "fit", "bots", "report"):
        q = sub.add_parser(name)
        q.add_argument("--out", default=str(ROOT / ".cache" / "bench-clone"))
        q.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
        q.add_argument("--habits", nargs="+", default=list(HABITS), choices=HABITS)
        q.add_argument("--matches", type=int, default=10)
        q.add_argument("--folds", type=int, default=5, help="fits per person, each holding out 1/FOLDS of the matches")
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("--workers", type=int, default=2)
        q.add_argument("--start-clock", type=float, default=60.0)
        q.add_argument("--play-clock", type=float, default=10.0)
        q.add_argument("--game", default="connectFour", choices=GAMES)
    a = p.parse_args(argv)
    {"matches": cmd_matches, "fit": cmd_fit, "bots": cmd_bots, "report": cmd_report}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
