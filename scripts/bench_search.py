#!/usr/bin/env python3
"""Strength benchmark of the persona search: ``champion`` against flat Monte Carlo and
against plain UCT, at equal simulations per move and at equal time per move, on the
compiled engine.  One JSON line per game (resumable: finished games are skipped), then a
Markdown report with win rates, 95 % confidence intervals and search speed against the
engine's raw playout rate.

    python scripts/bench_search.py                      # everything (hours), then the report
    python scripts/bench_search.py --games ticTacToe --n 10 --out b.jsonl --report b.md   # a small trial run
    python scripts/bench_search.py --report-only        # rebuild the report from the results
    python scripts/bench_search.py --speed --baseline ../previous   # speed only, against a checkout
    python scripts/bench_search.py --versus ../previous --games breakthrough connectFour --n 200
    python scripts/bench_search.py --root ../previous ...   # the games played by another checkout

Baselines (not personas: out-of-range values, built with check_ranges=False):
  flat    flat Monte Carlo: uniform allocation of uniform random playouts to the root moves
          (tree depth 1, exploration so large that UCB is round-robin), best mean wins
  uct     plain UCT: C = 40 (the champion's), no RAVE/GRAVE, no MAST, no discounts, no
          depth limits, no solver
Both sides search afresh every move (no tree reuse); sides alternate every game.

Head to head (``--versus DIR``): this version's champion against the champion of the
checkout DIR at ``--seconds`` a move, each version in a child process of its own (two
versions of the agent package cannot share one process), sides alternating; results in
search-versus.jsonl; ``--threads N`` and ``--versus-threads N`` give this version and the
other one N search threads each (``--threads 2`` alone: what a second core gives); ``--live``
plays as the server does: each side keeps its tree from move to move and ponders in the other's
turns, each on a core of its own (a game then takes both cores: run no second half beside it).  Scaling: ``--seconds S --out search-scaling-S.jsonl`` runs the timed
games at another clock; the report shows every search-versus*.jsonl and
search-scaling*.jsonl with each side's simulations per move, and the reading in
search-equal-time.md.

Speed (``--speed``): raw playouts/s of the engine's kernel loop from the initial state,
simulations/s of champion, flat MC and plain UCT searches from the initial state, and
decisions/s of ``search_batch`` scoring recorded connectFour decisions
(../shared/corpus/matches, replayed on the corpus rules) at 1000 simulations; this version
and (``--baseline DIR``, a checkout of an earlier version) the earlier one, taking turns,
each run a fresh process, on CPU time (the machine is shared: wall time measures the other
work too).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# --root DIR: run the agent package of another checkout (the speed benchmark's earlier version)
CODE = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else ROOT
sys.path.insert(0, str(CODE))

from agent.engine import kernels as K  # noqa: E402
from agent.engine import load_engine  # noqa: E402
from agent.persona import load_persona, persona_from_dict  # noqa: E402
from agent.search import item_seed, search  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402
from gdl.terms import render  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)

GAMES = ["ticTacToe", "connectFour", "breakthrough", "nineBoardTicTacToe"]
OPPONENTS = ["flat", "uct"]
MODES = ["sims", "time"]
RESULTS = ROOT / "docs" / "benchmarks" / "search-results.jsonl"
SPEED = ROOT / "docs" / "benchmarks" / "search-speed.jsonl"
VERSUS = ROOT / "docs" / "benchmarks" / "search-versus.jsonl"
MATCHES = ROOT.parent / "shared" / "corpus" / "matches" / "ggp-base-local-petewall" / "connectFour"
C4_RULES = ROOT.parent / "shared" / "corpus" / "games" / "base" / "games" / "connectFour" / "v0" / "connectFour.kif"
REPORT = ROOT / "docs" / "benchmarks" / "search.md"
TIMED_NODES = 50_000        # node pool per timed search (enough for the budgets used here)
# simulations per move at equal budgets: the thesis's 1000 where games are cheap; the two
# long games get 300 so that 400 games each fit in one working session on one core
SIMS = {"ticTacToe": 1000, "connectFour": 1000, "breakthrough": 300, "nineBoardTicTacToe": 300}


def game_path(name: str) -> Path:
    """A game of ``--games``: the project's own (games/NAME.kif), else the corpus's base
    repository game of that name, its latest version (checkers, for the evaluation's A/B)."""
    own = ROOT / "games" / f"{name}.kif"
    if own.exists():
        return own
    found = sorted((ROOT.parent / "shared" / "corpus" / "games" / "base" / "games" / name).glob(f"v*/{name}.kif"))
    if not found:
        raise SystemExit(f"no game {name!r}: not in games/ nor in the corpus's base games")
    return found[-1]


def evaluations(engines: dict) -> dict:
    """Each game's search arguments from what a player learns at the start (agent.search.heuristic's
    ``Learner``, learned from its playouts alone, no clock): ``heuristic`` (the evaluation) and
    ``material`` where found and the version has them."""
    try:
        from agent.search import heuristic as H
    except ImportError:
        return {g: {} for g in engines}
    out = {}
    for g, eng in engines.items():
        learner = H.Learner(eng, seconds=None)
        learner.step()
        found = {"heuristic": learner.result, "material": getattr(learner, "material", None)}
        out[g] = {k: v for k, v in found.items() if v is not None}
    return out


def check_code() -> None:
    """The agent package imported is the one of ``--root`` (not an installed copy)."""
    import agent
    if Path(agent.__file__).resolve().parents[1] != CODE.resolve():
        raise SystemExit(f"imported {agent.__file__}, not the version in {CODE}")


def baseline(kind: str):
    c = load_persona("champion")
    d = {k: getattr(c, k) for k in (
        "limit", "tree_discount", "charge_discount", "charge_defaults", "defensiveness",
        "aggressiveness", "random_error", "nice_threshold", "mast_tau", "kappa")}
    d.update(tree_discount=1.0, charge_discount=1.0, rave=0, grave=0, epsilon=0.0,
             charge_depth=1000, name=kind, kind="champion")
    if kind == "flat":
        d.update(horizon=1, exploration_factor=10 ** 9, description="flat Monte Carlo")
    else:
        d.update(horizon=1000, exploration_factor=40, description="plain UCT")
    return persona_from_dict(d, kind, check_ranges=False)


SEARCHED = ("playouts", "proven_descents", "evaluated", "extended")   # what a search's simulations were


def _searched(res) -> dict:
    """Playouts run and proven descents, from a version whose results tell them apart."""
    return {k: int(getattr(res, k)) for k in SEARCHED if hasattr(res, k)}


def local_player(persona, solver: bool):
    """A player searching in this process: (state, role, history, seed, kw) -> decision."""
    def decide(eng, s, r, history, seed, kw):
        res = search(eng, s, r, persona, seed=seed, solver=solver, **kw)
        return {"move": res.move, "simulations": res.simulations, "elapsed": res.elapsed,
                "nodes": res.nodes, "pool_full": res.pool_full, **_searched(res)}
    return decide


def play_game(eng, players, mode: str, budget, seed: int, live: bool = False) -> dict:
    """players[r]: role r's player (``local_player`` or ``ChildPlayer``); returns goals,
    plies and search stats (simulations, search seconds, searches, expansions refused for a
    full node pool, largest tree)."""
    s = eng.initial_state()
    roles = len(eng.roles)
    stats = [{"sims": 0, "seconds": 0.0, "searches": 0, "pool_full": 0, "nodes_max": 0} for _ in range(roles)]
    history = []
    ply = 0
    while not eng.is_terminal(s):
        joint = []
        for r in range(roles):
            moves = eng.legal_moves(s, r)
            if len(moves) == 1:
                joint.append(moves[0])
                continue
            kw = ({"limit": budget} if mode == "sims" else {"seconds": budget} if live
                  else {"seconds": budget, "max_nodes": TIMED_NODES})
            d = players[r](eng, s, r, history, item_seed(seed, ply * roles + r), kw)
            joint.append(d["move"])
            st = stats[r]
            st["sims"] += d["simulations"]
            st["seconds"] += d["elapsed"]
            st["searches"] += 1
            st["pool_full"] += d["pool_full"]
            st["nodes_max"] = max(st["nodes_max"], d["nodes"])
            for k in SEARCHED:   # from versions that tell them apart
                if k in d:
                    st[k] = st.get(k, 0) + d[k]
        history.append([render(m) for m in joint])
        s = eng.next_state(s, joint)
        ply += 1
    goals = [max(v) if v else 0 for v in eng.goal_values(s)]
    return {"goals": goals, "plies": ply, "stats": stats}


def raw_playout_rate(eng, seconds: float = 3.0) -> dict:
    g = eng.game
    vals = K.new_vals(g)
    goals = np.zeros(g.n_roles, np.int32)
    K.random_playout(g, g.init_state, vals, 10_000, goals)
    n, plies, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        d = K.random_playout(g, g.init_state, vals, 10_000, goals)
        n += 1
        plies += max(d, 0)
    dt = time.perf_counter() - t0
    return {"playouts_per_s": n / dt, "plies_per_playout": plies / max(n, 1)}


def records(path) -> list:
    """The records of a results file (one JSON object a line; ``benchrows``: compressed in docs/)."""
    return benchrows.read(path)


def finished(out: Path, key) -> set:
    """The keys of the games already in results file ``out`` (to resume); makes its folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return {key(r) for r in records(out)}


def run(args) -> None:
    check_code()
    # games played by another checkout's agent (--root) name its commit
    other = {"version": subprocess_rev(CODE)} if CODE.resolve() != ROOT.resolve() else {}
    out = Path(args.out)
    done = finished(out, lambda r: (r["kind"], r["game"], r.get("opponent"), r.get("mode"), r.get("index")))
    champion = load_persona("champion")
    with benchrows.append(out) as f:
        for game in args.games:
            budgets = {"sims": args.sims or SIMS[game], "time": args.seconds}
            eng = load_engine(read_rules_file(game_path(game)), engine="compiled")
            if ("rate", game, None, None, None) not in done:
                rate = raw_playout_rate(eng)
                # the search's own speed from the initial state, one long search per persona
                s0 = eng.initial_state()
                for who, p, solver in (("champion", champion, True), ("uct", baseline("uct"), False)):
                    search(eng, s0, 0, p, seed=1, limit=200, solver=solver)
                    r = search(eng, s0, 0, p, seed=1, limit=5000, solver=solver)
                    rate[f"{who}_sims_per_s_initial"] = r.simulations / r.elapsed
                f.write(json.dumps({"kind": "rate", "game": game, **rate}) + "\n")
                f.flush()
            for opponent in args.opponents:
                opp = baseline(opponent)
                for mode in args.modes:
                    for i in range(args.n):
                        if ("game", game, opponent, mode, i) in done:
                            continue
                        champ_role = i % 2
                        players = [None, None]
                        players[champ_role] = local_player(champion, True)
                        players[1 - champ_role] = local_player(opp, False)
                        seed = item_seed(args.seed, f"{game}|{opponent}|{mode}|{i}")
                        t0 = time.perf_counter()
                        res = play_game(eng, players, mode, budgets[mode], seed)
                        rec = {"kind": "game", "game": game, "opponent": opponent, "mode": mode,
                               "index": i, "budget": budgets[mode], "champion_role": champ_role,
                               "wall": round(time.perf_counter() - t0, 2), **other,
                               "load": round(os.getloadavg()[0], 2), **res}
                        f.write(json.dumps(rec) + "\n")
                        f.flush()
                        g = res["goals"]
                        print(f"{game} vs {opponent} ({mode}) #{i}: champion {g[champ_role]} - "
                              f"{g[1 - champ_role]} in {res['plies']} plies, {rec['wall']} s", flush=True)


def recorded_decisions(eng, n: int) -> list:
    """(state, role) of the first ``n`` recorded connectFour decisions (a role with a choice),
    replaying the records' moves on ``eng`` (the corpus rules the records were played on)."""
    from gdl.kif import parse_term
    out = []
    for f in sorted(MATCHES.glob("*/game*.json")):
        data = json.loads(f.read_text())
        s = eng.initial_state()
        for jm in data.get("moves", []):
            if eng.is_terminal(s):
                break
            joint = [parse_term(m) for m in jm]
            for r in range(len(eng.roles)):
                if len(eng.legal_moves(s, r)) > 1:
                    out.append((s, r))
            s = eng.next_state(s, joint)
        if len(out) >= n:
            return out[:n]
    return out


def speed_child(args) -> None:
    """Child process (``--speed-child``): load the engines, then answer ``run`` lines on stdin
    with one JSON line of figures each (CPU time)."""
    check_code()
    from agent.search import search_batch
    champion = load_persona("champion")
    engines = {g: load_engine(read_rules_file(game_path(g)), engine="compiled")
               for g in args.games}
    c4 = load_engine(read_rules_file(C4_RULES), engine="compiled")
    items = recorded_decisions(c4, args.decisions)
    search_batch(c4, items[:5], champion, 1, limit=100)
    players = [("champion", champion, True), ("flat", baseline("flat"), False), ("uct", baseline("uct"), False)]
    for g, eng in engines.items():  # numba compiled and warm
        K.playouts_for(eng.game, eng.game.init_state, 10, 10_000)
        for _, p, solver in players:
            search(eng, eng.initial_state(), 0, p, seed=1, limit=200, solver=solver)
    print(json.dumps({"ready": True, "decisions": len(items)}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        fig = {}
        for g, eng in engines.items():
            k = eng.game
            K.seed(1)
            n = 0
            t0 = time.process_time()
            while time.process_time() - t0 < args.raw_seconds:
                done, depth, _ = K.playouts_for(k, k.init_state, 500, 10_000)
                n += 500
            fig[f"{g}/raw"] = n / (time.process_time() - t0)
            for who, p, solver in players:
                t0 = time.process_time()
                r = search(eng, eng.initial_state(), 0, p, seed=1, limit=args.search_sims, solver=solver)
                fig[f"{g}/{who}"] = r.simulations / (time.process_time() - t0)
        t0 = time.process_time()
        search_batch(c4, items, champion, 1, limit=1000)
        fig["decisions"] = len(items) / (time.process_time() - t0)
        print(json.dumps(fig), flush=True)


def run_speed(args) -> None:
    """This version and the baseline, runs alternating, each run in a fresh child process
    (the first of each pair alternating too): a process's memory layout alone moved the
    same code's rates by 20-30 % (connectFour's champion 89,000 simulations/s in one pair of
    long-lived processes, 62,000 in the next sitting's), so a pair kept for every run
    measured its layout, not the code (as in scripts/ab_playouts.py)."""
    from rich.progress import Progress
    sides = [("new", ROOT)] + ([("old", Path(args.baseline))] if args.baseline else [])
    rows = {name: [] for name, _ in sides}
    base = [sys.executable, __file__, "--speed-child", "--games", *args.games, "--decisions",
            str(args.decisions), "--search-sims", str(args.search_sims), "--raw-seconds", str(args.raw_seconds)]

    def one_run(root: Path) -> dict:
        p = subprocess.Popen(base + ["--root", str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if not p.stdout.readline():
                raise SystemExit(f"the speed child of {root} did not start (see its error above)")
            p.stdin.write("run\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())
        finally:
            p.kill()
            p.wait()

    with Progress() as bar:
        task = bar.add_task("speed runs", total=args.speed_runs * len(sides))
        for i in range(args.speed_runs):
            for name, root in (sides if i % 2 == 0 else sides[::-1]):
                rows[name].append(one_run(root))
                bar.advance(task)
    rev = ""
    if args.baseline:
        rev = subprocess.run(["git", "-C", args.baseline, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    rec = {"baseline": rev, "decisions": args.decisions, "search_sims": args.search_sims, **rows}
    benchrows.write(args.speed_out, [rec])


class ChildPlayer:
    """The champion of one checkout (``root``) searching in a child process of its own:
    two versions of the agent package cannot share one process.  The child replays the
    game's moves (GDL text) on its own engine and answers with its decision; the search's
    own clock (``seconds``, from the call's entry to its deadline) is the one that counts."""

    def __init__(self, root: Path, games: list, threads: int = 1, cpu: int | None = None):
        live = [] if cpu is None else ["--live", "--cpu", str(cpu)]
        self.proc = subprocess.Popen([sys.executable, __file__, "--versus-child", "--root", str(root),
                                      "--threads", str(threads), *live, "--games", *games],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the player of {root} did not start (see its error above)")
        self.ready = json.loads(line)
        self.game = None        # the game being played (a name of --games), set by the caller

    def __call__(self, eng, s, r, history, seed, kw):
        req = {"game": self.game, "moves": history, "role": r, "seed": seed, "kw": kw}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("a player process ended in the middle of a game (see its error above)")
        d = json.loads(line)
        by_text = {render(m): m for m in eng.legal_moves(s, r)}
        if d["move"] not in by_text:
            raise SystemExit(f"a player answered {d['move']!r}, not a legal move of role {r}")
        return {**d, "move": by_text[d["move"]]}

    def close(self):
        self.proc.kill()
        self.proc.wait()


def versus_child(args) -> None:
    """Child process (``--versus-child``): the champion of the checkout ``--root``, answering
    one JSON request line (game, moves so far, role, seed, search budget) with its decision.

    ``--live`` (on core ``--cpu``): as the server's player, it keeps its tree from move to
    move (``advance`` by each joint move) and searches while the other side thinks, in
    slices, from the state its move leads to when the other roles' replies are forced (a
    turn-taking game), until the next request comes."""
    import select
    from gdl.kif import parse_term
    if args.live:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[args.cpu % len(cores)]})
        from agent.search import advance
        from agent.server.worker import BETWEEN_SLICE   # the server's slices of pondering
    check_code()
    champion = load_persona("champion")
    engines = {g: load_engine(read_rules_file(game_path(g)), engine="compiled")
               for g in args.games}
    for eng in engines.values():      # numba compiled and warm before the first timed move
        search(eng, eng.initial_state(), 0, champion, seed=1, limit=200, solver=True)
    learned = evaluations(engines)
    extra = {"heuristic": {}}
    for g, found in learned.items():
        if found:       # numba compiled for them too
            search(engines[g], engines[g].initial_state(), 0, champion, seed=1, limit=200, **found)
        h, m = found.get("heuristic"), found.get("material")
        if h is not None:
            extra["heuristic"][g] = {"r2": [round(float(x), 3) for x in h.r2], "groups": len(h.groups)}
        if m is not None:
            extra.setdefault("material", {})[g] = m.summary()
    rev = subprocess_rev(CODE)
    print(json.dumps({"ready": True, "commit": rev, **extra}), flush=True)
    game, moves, state, tree = None, [], None, None
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        req = json.loads(line)
        eng = engines[req["game"]]
        if req["game"] != game or req["moves"][:len(moves)] != moves:
            game, moves, state, tree = req["game"], [], eng.initial_state(), None
        for joint in req["moves"][len(moves):]:   # only the moves played since the last request
            terms = [parse_term(m) for m in joint]
            state = eng.next_state(state, terms)
            tree = advance(tree, terms) if args.live else None
        moves = req["moves"]
        kw = dict(req["kw"], **learned[req["game"]])
        if args.threads > 1:     # (a version before root parallelism has no such argument)
            kw = dict(kw, threads=args.threads)
        if args.live:            # the server's pool, not the harness's fixed one
            kw = {k: v for k, v in kw.items() if k != "max_nodes"}
            kw["tree"] = tree
        res = search(eng, state, req["role"], champion, seed=req["seed"], solver=True, **kw)
        print(json.dumps({"move": render(res.move), "simulations": int(res.simulations),
                          "elapsed": res.elapsed, "nodes": int(res.nodes),
                          "pool_full": int(res.pool_full), **_searched(res)}), flush=True)
        if not args.live:
            continue
        tree = res.tree
        r = req["role"]
        others = [eng.legal_moves(state, o) for o in range(len(eng.roles))]
        if any(len(m) != 1 for o, m in enumerate(others) if o != r):
            continue            # the replies are not known: nothing to ponder on
        joint = [res.move if o == r else m[0] for o, m in enumerate(others)]
        state = eng.next_state(state, joint)
        moves = moves + [[render(m) for m in joint]]
        tree = advance(tree, joint)
        slices = 0
        # as the server's ponder_while_idle: until a request comes, or a slice runs no
        # simulation (a proven root: nothing left to learn)
        while not eng.is_terminal(state) and not select.select([sys.stdin], [], [], 0)[0]:
            slices += 1
            res = search(eng, state, r, champion, seed=item_seed(req["seed"], f"ponder|{slices}"), solver=True,
                         seconds=BETWEEN_SLICE, tree=tree, **learned[req["game"]])
            tree = res.tree
            if not res.simulations:
                break


def subprocess_rev(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def run_versus(args) -> None:
    """This checkout's champion against the champion of ``--versus DIR`` at ``--seconds`` a
    move, each in its own child process, sides alternating; one JSON line per game
    (resumable).  ``champion_role`` is the role of this version."""
    from rich.progress import Progress
    if not (Path(args.versus) / "agent" / "search").is_dir():
        raise SystemExit(f"--versus {args.versus}: not a checkout of this project (no agent/search in it)")
    out = Path(args.versus_out)
    done = finished(out, lambda r: (r["game"], r["index"]))
    todo = [(g, i) for g in args.games for i in range(args.n) if (g, i) not in done]
    if not todo:
        return      # a finished run resumed: no player process to start (each loads the agent)
    new = ChildPlayer(ROOT, args.games, args.threads, 0 if args.live else None)
    old = ChildPlayer(Path(args.versus), args.games, args.versus_threads, 1 if args.live else None)
    opponent = f"champion {old.ready['commit']}"
    try:
        with benchrows.append(out) as f, Progress() as bar:
            task = bar.add_task(f"champion vs {opponent}", total=len(todo))
            engines = {}
            for game, i in todo:
                if game not in engines:
                    engines[game] = load_engine(read_rules_file(game_path(game)), engine="compiled")
                eng = engines[game]
                new_role = i % 2
                new.game = old.game = game
                players = [old, old]
                players[new_role] = new
                t0 = time.perf_counter()
                res = play_game(eng, players, "time", args.seconds, item_seed(args.seed, f"{game}|versus|{i}"),
                                live=args.live)
                rec = {"kind": "game", "game": game, "opponent": opponent, "version": new.ready["commit"], "heuristic": new.ready.get("heuristic", {}).get(game), "material": new.ready.get("material", {}).get(game),
                       "mode": "time", "index": i, "budget": args.seconds, "seed": args.seed, "champion_role": new_role,
                       **({"threads": args.threads} if args.threads > 1 else {}),
                       **({"versus_threads": args.versus_threads} if args.versus_threads > 1 else {}),
                       **({"live": True} if args.live else {}),
                       "wall": round(time.perf_counter() - t0, 2), "load": round(os.getloadavg()[0], 2), **res}
                f.write(json.dumps(rec) + "\n")
                f.flush()
                bar.advance(task)
    finally:
        new.close()
        old.close()


def speed_report(path: Path) -> list:
    import statistics
    if not benchrows.exists(path):
        return []
    rec = benchrows.read(path)[0]
    new, old = rec["new"], rec.get("old") or []

    def med(rows, key):
        v = [r[key] for r in rows if key in r]
        return statistics.median(v) if v else None

    def paired(key):
        v = [a[key] / b[key] for a, b in zip(new, old) if key in a and key in b and b[key]]
        return statistics.median(v) if v else None

    f = lambda x: "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.2f}")
    games = [k.split("/")[0] for k in new[0] if k.endswith("/raw")]
    prev = f"commit {rec['baseline']}" if rec.get("baseline") else "-"
    lines = ["## Speed", "",
             f"Command: `python scripts/bench_search.py --speed --baseline DIR --games {' '.join(games)} "
             f"--speed-runs {len(new)} --decisions {rec['decisions']} --search-sims {rec['search_sims']}` "
             f"(DIR: a checkout of the previous version, {prev}). "
             f"This version and the previous one took turns for {len(new)} runs, each run in a fresh "
             "process (the first of each pair alternating); "
             "medians of the runs; ratios are medians of run-by-run ratios. CPU time of the process "
             "(on a shared machine wall-clock rates would measure the other work too).", "",
             "Raw: the engine's kernel loop of uniform random playouts from the initial state "
             f"(`kernels.playouts_for`). Search: one search of {rec['search_sims']} simulations from "
             "the initial state (champion with its solver; flat MC and plain UCT as described above).", "",
             "| game | raw playouts/s (this / previous) | champion sims/s (this / previous) | champion / raw: this, previous "
             "| flat MC sims/s (this / previous) | plain UCT sims/s (this / previous) |",
             "|---|---|---|---|---|---|"]
    for g in games:
        r_new, r_old = med(new, f"{g}/raw"), med(old, f"{g}/raw")
        c_new, c_old = med(new, f"{g}/champion"), med(old, f"{g}/champion")
        cells = []
        for who in ("raw", "champion"):
            cells.append(f"{f(med(new, f'{g}/{who}'))} / {f(med(old, f'{g}/{who}'))}")
        ratio = (f"**{c_new / r_new:.2f}**" if c_new and r_new else "-") + ", " + (
            f"{c_old / r_old:.2f}" if c_old and r_old else "-")
        rest = [f"{f(med(new, f'{g}/{who}'))} / {f(med(old, f'{g}/{who}'))}" for who in ("flat", "uct")]
        lines.append(f"| {g} | {cells[0]} | {cells[1]} | {ratio} | {rest[0]} | {rest[1]} |")
    d_new, d_old, d_ab = med(new, "decisions"), med(old, "decisions"), paired("decisions")
    lines += ["", f"Scoring recorded decisions (`search_batch`, champion, 1000 simulations each, "
                  f"{rec['decisions']} connectFour decisions from ../shared/corpus/matches, each version's "
                  "own default mode: thesis search for this one, the solver on for the previous): "
                  f"**{f(d_new)} decisions/s** per core, previous {f(d_old)}"
                  + (f" (this / previous {d_ab:.2f})." if d_ab else ".")]
    return lines


def score_ci(scores: list) -> tuple:
    """Mean score and a 95 % normal-approximation interval (Wilson for all-equal samples)."""
    n = len(scores)
    m = sum(scores) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in scores) / max(n - 1, 1))
    h = 1.96 * sd / math.sqrt(n)
    if h == 0:  # all equal: Wilson interval on the proportion
        z, p = 1.96, m
        c = (p + z * z / (2 * n)) / (1 + z * z / n)
        w = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return m, max(0.0, c - w), min(1.0, c + w)
    return m, max(0.0, m - h), min(1.0, m + h)


def per_move(rs: list, side: int) -> str:
    """Mean simulations and search seconds per decision of one side (0: the champion)."""
    sims = secs = n = 0
    for r in rs:
        st = r["stats"][r["champion_role"] if side == 0 else 1 - r["champion_role"]]
        sims, secs, n = sims + st["sims"], secs + st["seconds"], n + st["searches"]
    return f"{sims / max(n, 1):,.0f} ({secs / max(n, 1):.3f} s)"


def games_of(recs: list) -> list:
    """The games of some records: the project's own in their usual order, then the others."""
    seen = {r["game"] for r in recs}
    return [g for g in GAMES if g in seen] + sorted(seen - set(GAMES))


def win_table(recs: list, speeds: bool = False) -> list:
    """Rows per (game, opponent, budget); ``speeds``: simulations and seconds per decision
    of both sides (the timed games' real budgets)."""
    games = [r for r in recs if r["kind"] == "game"]
    opponents = OPPONENTS + sorted({r["opponent"] for r in games} - set(OPPONENTS))
    extra = " champion sims/move (s) | opponent sims/move (s) |" if speeds else ""
    lines = ["| game | opponent | budget per move | games | W / D / L | champion score | 95 % CI |" + extra,
             "|---|---|---|---|---|---|---|" + ("---|---|" if speeds else "")]
    for game in games_of(games):
        for opponent in opponents:
            for mode, budget in sorted({(r["mode"], r["budget"]) for r in games}):
                rs = [r for r in games if (r["game"], r["opponent"], r["mode"], r["budget"])
                      == (game, opponent, mode, budget)]
                if not rs:
                    continue
                sc, w, d, l = [], 0, 0, 0
                for r in rs:
                    me, other = r["goals"][r["champion_role"]], r["goals"][1 - r["champion_role"]]
                    sc.append(1.0 if me > other else 0.5 if me == other else 0.0)
                    w += me > other
                    d += me == other
                    l += me < other
                m, lo, hi = score_ci(sc)
                budget = f"{rs[0]['budget']} simulations" if mode == "sims" else f"{rs[0]['budget']} s"
                lines.append(f"| {game} | {opponent} | {budget} | {len(rs)} | {w} / {d} / {l} | "
                             f"{m:.3f} | [{lo:.3f}, {hi:.3f}] |"
                             + (f" {per_move(rs, 0)} | {per_move(rs, 1)} |" if speeds else ""))
    return lines


def shown(path) -> str:
    """A results file as the report names it: relative to the repository (a file elsewhere,
    e.g. a test's, by its name only: the report names no machine paths)."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name


def report(args) -> str:
    recs = records(args.out)
    lines = ["# Search strength benchmark", "",
             "`champion` (agent/personas/champion.toml: UCT + MAST + solver) against flat Monte "
             "Carlo and plain UCT (see the script's docstring), on the compiled engine, sides "
             "alternating, fresh tree every move. Score = (wins + draws / 2) / games, with a 95 % "
             "confidence interval (normal approximation over per-game scores).", "",
             "Command:", "", "```", "python scripts/bench_search.py" + (
                 f" --seconds {args.seconds} --n {args.n}" + (f" --sims {args.sims}" if args.sims else "")
                 + (f" --games {' '.join(args.games)}" if args.games != GAMES else "")
                 + (f" --modes {' '.join(args.modes)}" if args.modes != MODES else "")
                 + (f" --out {shown(args.out)}" if Path(args.out).resolve() != RESULTS.resolve() else "")
                 + (f" --compare {shown(args.compare)}" if args.compare else "")), "```", "",
             f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             "one process on a shared 2-core host.", "",
             "## Win rates", ""] + win_table(recs)
    if args.compare:
        lines += ["", f"Earlier version, same benchmark (`{shown(args.compare)}`):", ""]
        lines += win_table(records(args.compare))
    tuning = Path(args.out).with_name("search-tuning.md")
    if tuning.exists():
        lines += ["", tuning.read_text().strip()]
    lines += equal_time_section(args)
    speed = speed_report(Path(args.speed_out))
    if speed:
        lines += [""] + speed
    return "\n".join(lines) + "\n"


def equal_time_section(args) -> list:
    """The head-to-heads of two versions (``--versus``: ``search-versus*.jsonl``) and the
    scaling runs (``search-scaling-*.jsonl``: champion against an opponent at several clocks),
    with the reading in ``search-equal-time.md``."""
    here = Path(args.out).parent
    versus = {p.resolve() for p in benchrows.glob(here, "search-versus*.jsonl")}
    if benchrows.exists(args.versus_out):
        versus.add(Path(args.versus_out).resolve())
    scaling = sorted(benchrows.glob(here, "search-scaling*.jsonl"), key=lambda p: records(p)[-1]["budget"])
    if not versus and not scaling:
        return []
    lines = ["", "## Strength at equal time", "",
             "Head to head: this version's champion against the champion of an earlier checkout "
             "(`champion` is the newer version, `opponent` the earlier one), each in a child process "
             "of its own, sides alternating; every search of both gets the same clock (the search's "
             "own `seconds`, measured from its entry, tree allocation included, to the first deadline "
             "check past it; `s` in the table is the mean of what the searches took). Load: the "
             "one-minute load average of the 2-core machine while the games ran.", ""]
    for path in sorted(versus, key=lambda p: (p != VERSUS.resolve(), p.name)):   # this run first
        recs = records(path)
        n = max(sum(1 for r in recs if r["game"] == g) for g in games_of(recs))
        games = " ".join(games_of(recs))
        loads = [r["load"] for r in recs if "load" in r]
        seed = recs[-1].get("seed", 2024)
        threads, versus_threads = recs[-1].get("threads", 1), recs[-1].get("versus_threads", 1)
        live = recs[-1].get("live", False)
        lines += [f"`{shown(path)}`: champion of commit {recs[-1].get('version', '?')}"
                  + (f" on {threads} threads" if threads > 1 else "") + f" against "
                  f"{recs[-1]['opponent']}" + (f" on {versus_threads}" if versus_threads > 1 else "")
                  + (", live (trees kept from move to move, pondering, a core each)" if live else "")
                  + f", load {min(loads):.1f} to {max(loads):.1f}:", "",
                  "```", f"python scripts/bench_search.py --versus DIR --seconds {recs[0]['budget']} --n {n} "
                  f"--games {games}" + (f" --seed {seed}" if seed != 2024 else "")
                  + (f" --threads {threads}" if threads > 1 else "")
                  + (f" --versus-threads {versus_threads}" if versus_threads > 1 else "")
                  + (" --live" if live else "")
                  + (f" --versus-out {shown(path)}" if path != VERSUS.resolve() else ""),
                  "```", ""] + win_table(recs, speeds=True) + [""]
    for path in scaling:
        recs = [r for r in records(path) if r["kind"] == "game"]
        n = max(r["index"] for r in recs) + 1
        loads = [r["load"] for r in recs if "load" in r]
        games = " ".join(games_of(recs))
        opps = " ".join(sorted({r["opponent"] for r in recs}))
        version = recs[-1].get("version")
        lines += [f"`{shown(path)}`" + (f", played by the agent of commit {version}" if version else "")
                  + (f", load {min(loads):.1f} to {max(loads):.1f}" if loads else "") + ":", "",
                  "```", f"python scripts/bench_search.py --games {games} --opponents {opps} --modes time "
                  f"--seconds {recs[0]['budget']} --n {n} --out {shown(path)}"
                  + (" --root DIR" if version else ""), "```", ""]
        lines += win_table(recs, speeds=True) + [""]
    reading = here / "search-equal-time.md"
    if reading.exists():
        lines += [reading.read_text().strip()]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", nargs="+", default=GAMES, metavar="GAME",
                    help="games/NAME.kif, or a base game of the corpus by name (checkers)")
    ap.add_argument("--opponents", nargs="+", default=OPPONENTS, choices=OPPONENTS)
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    ap.add_argument("--n", type=int, default=100, help="games per (game, opponent, budget)")
    ap.add_argument("--sims", type=int, default=0, help="simulations per move at equal budgets "
                    "(default: per game, see SIMS)")
    ap.add_argument("--seconds", type=float, default=0.05, help="seconds per move (equal time)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--compare", help="report: an earlier results file, shown as a second table")
    ap.add_argument("--speed", action="store_true", help="the speed figures only (then the report)")
    ap.add_argument("--baseline", help="speed: a checkout of an earlier version to measure alongside")
    ap.add_argument("--speed-runs", type=int, default=3)
    ap.add_argument("--decisions", type=int, default=200, help="speed: recorded decisions scored")
    ap.add_argument("--search-sims", type=int, default=5000)
    ap.add_argument("--raw-seconds", type=float, default=3.0)
    ap.add_argument("--speed-out", default=str(SPEED))
    ap.add_argument("--versus", help="this version's champion against the champion of the "
                    "checkout DIR at --seconds a move, in two child processes (then the report)")
    ap.add_argument("--versus-out", default=str(VERSUS))
    ap.add_argument("--threads", type=int, default=1, help="--versus: this version's search threads "
                    "(root parallelism)")
    ap.add_argument("--versus-threads", type=int, default=1, help="--versus: the other version's search threads")
    ap.add_argument("--live", action="store_true", help="--versus: as the server plays, each side "
                    "keeps its tree from move to move and searches while the other thinks, each "
                    "version on a core of its own (cores 0 and 1: the games take both)")
    ap.add_argument("--cpu", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--versus-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--speed-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.speed_child:
        speed_child(args)
        return 0
    if args.versus_child:
        versus_child(args)
        return 0
    if args.versus:
        run_versus(args)
    elif args.speed:
        run_speed(args)
    elif not args.report_only:
        run(args)
    text = report(args)
    Path(args.report).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
