"""Does a fitted clone carry a habit to positions it never saw? (issue 54)

Scripted "people" (``agent.modelling.scripted``: leftmost, centre, capture, copy the
opponent, next to my last move, next to the opponent's last move; rightmost and edge on
request) each play 10 matches on three games, recorded through the match runner
(``agent.match.runner.run_match``, the person's role alternating), against the persona's
search (``--opponent persona``: ``champion`` at 200 simulations, in this process) or uniformly
random moves (``--opponent random``).  Each person's clone is the model the fast fit fits for
one player (``choicemodel.fit`` on the person's decisions and their shared evaluations,
``EvalCache`` as ``fast.run`` fills it), once with the move features (``movefeatures``) and
once without (the model before them).  Agreement is the clone's most likely move against the
person's, on the held-out positions of a grouped k-fold over the matches whose state never
occurs in that fold's training matches, pooled, with Wilson 95 % intervals.

``bots``: the persona-model 5 metrics of the recorded bots (the corpus's matches, fitted and
held out as ``scripts/fit_bots.sh`` does with ``fast.run``, on the committed fit's plan) with
and without the move features (``--every N``: every N-th player-match of each bot only),
beside the committed ``docs/reports/fit-<game>-fast/results.json``.

    .venv/bin/python scripts/bench_clone.py matches --opponent random   # the people's matches (resumes)
    .venv/bin/python scripts/bench_clone.py fit          # clones before/after, agreement (resumes)
    .venv/bin/python scripts/bench_clone.py bots --game connectFour --every 3
    .venv/bin/python scripts/bench_clone.py report       # the section of docs/benchmarks/web.md

Everything goes under ``--out`` (default ``.cache/bench-clone``); every finished match, clone
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


class PersonaOpponent:
    """The persona's own search (``agent.search.search``, ``champion`` at ``OPPONENT_LIMIT``
    simulations, seeded per match and ply) as a match-runner player in this process: the
    server's player processes would cost each match their start-up, which on a shared 2-core
    machine was most of a match."""

    is_human = False
    wants_legal = True

    def __init__(self, seed: int):
        from agent.persona import load_persona
        self.name = "opponent"
        self._persona = load_persona("champion").replace(name="opponent", limit=OPPONENT_LIMIT)
        self.persona = {"name": "champion", "limit": OPPONENT_LIMIT, "search": "in the benchmark's process"}
        self.seed = seed
        self.legal = None
        self._games: dict = {}

    async def prepare(self) -> None:
        pass

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> None:
        import zlib

        from agent.engine.loader import load_engine
        from agent.matchtext import parse_rules_text, role_index_of
        description = parse_rules_text(rules_text)
        if rules_text not in self._games:
            self._games[rules_text] = load_engine(description)
        self.engine = self._games[rules_text]
        self.role = role_index_of(description, role)
        self.state = self.engine.initial_state()
        self.match_seed = zlib.crc32(match_id.encode()) ^ self.seed
        self.ply = 0

    async def play(self, match_id, last_moves, timeout) -> str:
        from agent.matchtext import resolve_joint
        from agent.search import SearchSettings, search
        from gdl.terms import render_spaced
        if last_moves is not None:
            joint, _ = resolve_joint(self.engine, self.state, last_moves, len(self.engine.roles))
            self.state = self.engine.next_state(self.state, tuple(joint))
            self.ply += 1
        moves = list(self.engine.legal_moves(self.state, self.role))
        if len(moves) == 1:
            return render_spaced(moves[0])
        res = search(self.engine, self.state, self.role, self._persona,
                     SearchSettings(seed=self.match_seed * 1000 + self.ply, limit=OPPONENT_LIMIT))
        return render_spaced(res.move)

    async def stop(self, match_id, last_moves) -> None:
        pass

    async def abort(self, match_id) -> None:
        pass

    async def close(self) -> None:
        self._games.clear()


async def _play_all(a, todo) -> None:
    """The matches, ``--concurrency`` at a time (each waits mostly for its referee process),
    each with players of its own."""
    from rich.progress import Progress

    from agent.match.players import RandomPlayer
    from agent.match.runner import run_match
    from agent.modelling.scripted import ScriptedPlayer
    out = Path(a.out)
    gate = asyncio.Semaphore(a.concurrency)
    with Progress() as bar:
        task = bar.add_task("scripted people's matches", total=len(todo))

        async def one(game, habit, i):
            async with gate:
                person = ScriptedPlayer(habit)
                opponent = PersonaOpponent(a.seed) if a.opponent == "persona" else RandomPlayer("random", seed=a.seed + i)
                rules = (ROOT / "games" / f"{game}.kif").read_text()
                players = [person, opponent] if i % 2 == 0 else [opponent, person]
                try:
                    await run_match(rules, players, start_clock=a.start_clock, play_clock=a.play_clock,
                                    match_id=f"clone.{game}.{habit}.{i}", seed=a.seed + i,
                                    out_dir=out / "records" / game / habit, referee="auto")
                finally:
                    await person.close()
                    await opponent.close()
                bar.advance(task)

        await asyncio.gather(*(one(*t) for t in todo))


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


_GAME: dict = {}      # game key -> (engine, shared feature names): loaded and calibrated once


def cmd_fit(a) -> None:
    """Per (game, person): the shared evaluations of every decision (``EvalCache``, as the
    fast fit computes them), then per fold of a grouped k-fold over the matches the clone as
    ``fast.run`` fits one player (``choicemodel.fit``, no prior), with and without the move
    features, and its most likely move on the held-out decisions."""
    import numpy as np
    from rich.progress import Progress

    from agent.engine.loader import load_engine
    from agent.modelling import choicemodel as CM
    from agent.modelling import shared_evaluations as E
    from agent.modelling import movefeatures as MF
    from agent.modelling.baselines import state_key
    from agent.modelling.dataset import load_dataset
    from agent.modelling.fast import _items
    from agent.modelling.splits import group_kfold
    from agent.search.features import calibrate
    out = Path(a.out)
    cache_root = out / "evals"
    pairs = [(g, h) for g in a.games for h in a.habits]
    with Progress() as bar:
        task = bar.add_task("clones", total=len(pairs))
        for game, habit in pairs:
            bar.update(task, description=f"{game} {habit}")
            dest = {v: out / "agreement" / game / habit / f"{v}.json" for v in ("before", "after")}
            files = sorted(str(f) for f in (out / "records" / game / habit).glob("*.json") if _finished(f))
            if all(p.exists() for p in dest.values()) or len(files) < a.matches:
                if len(files) < a.matches:
                    bar.console.print(f"{game} {habit}: {len(files)} of {a.matches} matches finished, skipped")
                bar.advance(task)
                continue
            t0 = time.monotonic()
            ds = load_dataset(files, players={habit}, progress=False, cache_dir=out / "decisions")
            decisions = ds.decisions
            key = decisions[0].game
            if key not in _GAME:
                eng = load_engine(ds.games[key])
                _GAME[key] = (eng, E.feature_names(calibrate(eng)))
            engine, names = _GAME[key]
            plan = {"version": E.EVAL_VERSION, "limit": a.limit, "shallow_horizon": E.SHALLOW_HORIZON,
                    "replies": E.REPLIES, "measured": {}}
            cache = E.EvalCache(cache_root, key, plan)
            keyed = _items(decisions, 0)
            cache.fill(key, ds.games[key], keyed, workers=a.workers, progress=False)
            shared = {d.key: cache.data[k] for d, (k, _) in zip(decisions, keyed)}
            view = MF.MoveView.detect(ds.games[key], engine, [d.state for d in decisions])
            movex = {d.key: MF.compute(view, engine, d.state, d.role, d.moves, d.history) for d in decisions}
            folds = group_kfold(decisions, a.folds, seed=0)
            for variant in ("before", "after"):
                hits = {"unseen": [0, 0], "all": [0, 0]}
                for train, test in folds:
                    mx = [movex[d.key] for d in train] if variant == "after" else None
                    model = CM.fit(train, [shared[d.key] for d in train], names, movex=mx, view=view)
                    seen = {state_key(d.state) for d in train}
                    for d in test:
                        lp = model.log_probs(shared[d.key], d.state, d.prev, d.moves,
                                             movex[d.key] if variant == "after" else None)
                        ok = int(np.argmax(lp) == d.chosen)
                        for part in ("all", "unseen") if state_key(d.state) not in seen else ("all",):
                            hits[part][0] += ok
                            hits[part][1] += 1
                row = {"game": game, "habit": habit, "variant": variant, "folds": len(folds),
                       "matches": len(files), "decisions": len(decisions), "limit": a.limit,
                       "board": view.to_dict().get("relation"), "seconds": round(time.monotonic() - t0, 1),
                       "machine": _machine()}
                for part, (k, n) in hits.items():
                    p, lo, hi = wilson(k, n)
                    row[part] = {"agree": k, "n": n, "p": p, "lo": lo, "hi": hi}
                _write_json(dest[variant], row)
                u = row["unseen"]
                bar.console.print(f"{game:20s} {habit:9s} {variant:6s} unseen {u['agree']}/{u['n']} = {u['p']:.3f} "
                                  f"[{u['lo']:.2f}, {u['hi']:.2f}]")
            bar.advance(task)


# ---------------------------------------------------------------------------- bots

def cmd_bots(a) -> None:
    from agent.modelling.dataset import load_dataset
    from agent.modelling.shared_evaluations import EvalCache
    from agent.modelling.fast import FastSettings, run
    out = Path(a.out)
    committed = json.loads((ROOT / "docs" / "reports" / f"fit-{a.game}-fast" / "results.json").read_text())
    ds = load_dataset([SHARED / "corpus" / "matches" / "ggp-base-local-petewall"],
                      repositories=[SHARED / "corpus" / "games"], game_dirs=[ROOT / "games"],
                      aliases={"ConfidenceAgent": "ConfidencePlayer"}, drop_duplicates=True,
                      cache_dir=out / "decisions", game=a.game, progress=True)
    if a.every > 1:
        # every a.every-th player-match of each bot (by start time): the same held-out rule on
        # a share of the records, where a shared machine cannot search them all in the session
        keep = set()
        for lab in {d.label for d in ds.decisions}:
            pms = sorted({(d.start, d.pm) for d in ds.decisions if d.label == lab})
            keep.update(pm for _, pm in pms[::a.every])
        ds.decisions = [d for d in ds.decisions if d.pm in keep]
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
        _write_json(dest, {"game": a.game, "variant": variant, "every": a.every, "data": res["data"],
                           "metrics": res["metrics"], "paired": res["paired"],
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
    any_row = next(iter(rows.values()), {})
    bot_runs = [json.loads(f.read_text()) for f in sorted((out / "bots").glob("*/after.json"))]
    bots_every = max((i.get("every", 1) for i in bot_runs), default=10)
    opp = json.loads(next((out / "records").glob("*/*/*.json")).read_text()).get("x-players", [{}]) if rows else []
    opp_kind = "uniformly random moves" if any(p.get("kind") == "RandomPlayer" for p in opp) else \
        f"the persona `champion` at {OPPONENT_LIMIT} simulations a move"
    lines = [BEGIN, "## A clone where you have never been (issue 54)", "",
             f"Scripted people (`agent/modelling/scripted.py`), each with one habit, played {a.matches} matches "
             f"each against {opp_kind} (the person's role alternating) through the match runner "
             "(`run_match`, records as the web page keeps them). Each person's clone is the model the fast fit "
             "fits for one player (`choicemodel.fit` on the person's decisions and their shared evaluations, "
             f"here at {any_row.get('limit', '?')} simulations per search), with the move features "
             "(`agent/modelling/movefeatures.py`, \"after\") and without them (\"before\": the model as it "
             "was, move tokens and counts). Agreement: the clone's most likely move equals the person's, "
             "on held-out positions whose state never occurs in the clone's training matches "
             f"({a.folds} fits per person, each holding out 1/{a.folds} of the matches, grouped k-fold, the held-out "
             "positions of all pooled; Wilson 95 % intervals; n = those positions). Reproduce:", "",
             "    .venv/bin/python scripts/bench_clone.py matches --opponent random && "
             ".venv/bin/python scripts/bench_clone.py fit",
             f"    .venv/bin/python scripts/bench_clone.py bots --game connectFour --every {bots_every} && "
             ".venv/bin/python scripts/bench_clone.py report", "",
             f"Load (1 min) while fitting: {min(loads, default=0):.1f} to {max(loads, default=0):.1f} on 2 cores; "
             "raw rows in `docs/benchmarks/clone.json`.", "",
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
        every = ", ".join(f"{i['game']}: every {i.get('every', 1)}. player-match of each bot, "
                          f"{i['data'].get('train_decisions')} training and {i['data'].get('test_decisions')} test "
                          f"decisions" for i in bot_runs if "data" in i)
        lines += ["", "The recorded bots (persona-model 5 metrics: test log-likelihood per decision / "
                  "AAR of argmax; the corpus's records held out as `fit_bots.sh` does, later 30 % of each bot's "
                  f"matches; the committed fit's plan, 1000 simulations; {every}; the committed report is on all "
                  "the records) — committed report, rerun without the move features, rerun with them as the fit "
                  "takes them (where the cross-validation prefers them; a bot fitted towards the pooled model "
                  "reads them where the pooled model does):", "",
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
        q.add_argument("--concurrency", type=int, default=8, help="matches played at once")
        q.add_argument("--workers", type=int, default=0, help="processes for the searches (0: this one)")
        q.add_argument("--start-clock", type=float, default=60.0)
        q.add_argument("--play-clock", type=float, default=10.0)
        q.add_argument("--game", default="connectFour", choices=GAMES)
        q.add_argument("--every", type=int, default=1, help="bots: every N-th player-match of each bot only")
        q.add_argument("--opponent", choices=("persona", "random"), default="persona",
                       help="the people's opponent: the persona's search, or uniformly random moves")
        q.add_argument("--limit", type=int, default=100,
                       help="simulations per search of the clones' shared evaluations")
    a = p.parse_args(argv)
    {"matches": cmd_matches, "fit": cmd_fit, "bots": cmd_bots, "report": cmd_report}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
