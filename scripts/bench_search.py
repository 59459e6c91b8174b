#!/usr/bin/env python3
"""Strength benchmark of the persona search: ``champion`` against flat Monte Carlo and
against plain UCT, at equal simulations per move and at equal time per move, on the
compiled engine.  One JSON line per game (resumable: finished games are skipped), then a
Markdown report with win rates, 95 % confidence intervals and search speed against the
engine's raw playout rate.

    python scripts/bench_search.py                      # everything (hours), then the report
    python scripts/bench_search.py --games ticTacToe --n 10 --out /tmp/b.jsonl --report /tmp/b.md
    python scripts/bench_search.py --report-only        # rebuild the report from the results

Baselines (not personas: out-of-range values, built with check_ranges=False):
  flat    flat Monte Carlo: uniform allocation of uniform random playouts to the root moves
          (tree depth 1, exploration so large that UCB is round-robin), best mean wins
  uct     plain UCT: C = 40 (the champion's), no RAVE/GRAVE, no MAST, no discounts, no
          depth limits, no solver
Both sides search afresh every move (no tree reuse); sides alternate every game.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.engine import kernels as K  # noqa: E402
from agent.engine import load_engine  # noqa: E402
from agent.persona import load_persona, persona_from_dict  # noqa: E402
from agent.search import item_seed, search  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

GAMES = ["ticTacToe", "connectFour", "breakthrough", "nineBoardTicTacToe"]
OPPONENTS = ["flat", "uct"]
MODES = ["sims", "time"]
RESULTS = ROOT / "docs" / "benchmarks" / "search-results.jsonl"
REPORT = ROOT / "docs" / "benchmarks" / "search.md"
TIMED_NODES = 50_000        # node pool per timed search (enough for the budgets used here)
# simulations per move at equal budgets: the thesis's 1000 where games are cheap; the two
# long games get 300 so that 400 games each fit in one working session on one core
SIMS = {"ticTacToe": 1000, "connectFour": 1000, "breakthrough": 300, "nineBoardTicTacToe": 300}


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


def play_game(eng, players, mode: str, budget, seed: int) -> dict:
    """players[r] = (persona, solver) for role r; returns goals, plies and search stats."""
    s = eng.initial_state()
    roles = len(eng.roles)
    stats = [{"sims": 0, "seconds": 0.0, "searches": 0} for _ in range(roles)]
    ply = 0
    while not eng.is_terminal(s):
        joint = []
        for r in range(roles):
            moves = eng.legal_moves(s, r)
            if len(moves) == 1:
                joint.append(moves[0])
                continue
            persona, solver = players[r]
            kw = {"limit": budget} if mode == "sims" else {"seconds": budget, "max_nodes": TIMED_NODES}
            res = search(eng, s, r, persona, seed=item_seed(seed, ply * roles + r), solver=solver, **kw)
            joint.append(res.move)
            stats[r]["sims"] += res.simulations
            stats[r]["seconds"] += res.elapsed
            stats[r]["searches"] += 1
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


def run(args) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            done.add((rec["kind"], rec["game"], rec.get("opponent"), rec.get("mode"), rec.get("index")))
    champion = load_persona("champion")
    with out.open("a") as f:
        for game in args.games:
            budgets = {"sims": args.sims or SIMS[game], "time": args.seconds}
            eng = load_engine(read_rules_file(ROOT / "games" / f"{game}.kif"), engine="compiled")
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
                        players[champ_role] = (champion, True)
                        players[1 - champ_role] = (opp, False)
                        seed = item_seed(args.seed, f"{game}|{opponent}|{mode}|{i}")
                        t0 = time.perf_counter()
                        res = play_game(eng, players, mode, budgets[mode], seed)
                        rec = {"kind": "game", "game": game, "opponent": opponent, "mode": mode,
                               "index": i, "budget": budgets[mode], "champion_role": champ_role,
                               "wall": round(time.perf_counter() - t0, 2), **res}
                        f.write(json.dumps(rec) + "\n")
                        f.flush()
                        g = res["goals"]
                        print(f"{game} vs {opponent} ({mode}) #{i}: champion {g[champ_role]} - "
                              f"{g[1 - champ_role]} in {res['plies']} plies, {rec['wall']} s", flush=True)


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


def report(args) -> str:
    recs = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    rates = {r["game"]: r for r in recs if r["kind"] == "rate"}
    games = [r for r in recs if r["kind"] == "game"]
    lines = ["# Search strength benchmark", "",
             "`champion` (agent/personas/champion.toml: UCT + MAST + solver) against flat Monte "
             "Carlo and plain UCT (see the script's docstring), on the compiled engine, sides "
             "alternating, fresh tree every move. Score = (wins + draws / 2) / games, with a 95 % "
             "confidence interval (normal approximation over per-game scores).", "",
             "Command:", "", "```", "python scripts/bench_search.py" + (
                 f" --seconds {args.seconds} --n {args.n}" + (f" --sims {args.sims}" if args.sims else "")), "```", "",
             f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             "one process on a shared 2-core host.", "",
             "## Win rates", "",
             "| game | opponent | budget per move | games | W / D / L | champion score | 95 % CI |",
             "|---|---|---|---|---|---|---|"]
    for game in GAMES:
        for opponent in OPPONENTS:
            for mode in MODES:
                rs = [r for r in games if (r["game"], r["opponent"], r["mode"]) == (game, opponent, mode)]
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
                             f"{m:.3f} | [{lo:.3f}, {hi:.3f}] |")
    tuning = Path(args.out).with_name("search-tuning.md")
    if tuning.exists():
        lines += ["", tuning.read_text().strip()]
    lines += ["", "## Speed", "",
              "Raw: the engine's uniform random playouts from the initial state "
              "(`kernels.random_playout`, called once per playout from Python, so below the "
              "kernel-loop figures of engine.md). Search, initial state: one search of "
              "5000 simulations from the initial state; raw and initial figures are measured "
              "together, when every game has been played, so they compare. In games: all "
              "searches of the benchmark games at equal simulations (simulations / search "
              "seconds), per side, as recorded while the games were played: on a loaded machine, "
              "and partly before the engine speed-up of the same day, so only their ratios "
              "within a row mean something.", "",
              "| game | raw playouts/s (plies) | champion sims/s, initial | plain UCT sims/s, initial "
              "| champion sims/s, in games | flat MC sims/s, in games | plain UCT sims/s, in games |",
              "|---|---|---|---|---|---|---|"]
    for game in GAMES:
        if game not in rates:
            continue
        rt = rates[game]
        speed = {}
        for who in ("champion", "flat", "uct"):
            sims = secs = 0.0
            for r in games:
                if r["game"] != game or r["mode"] != "sims":
                    continue
                if who == "champion":
                    st = r["stats"][r["champion_role"]]
                elif r["opponent"] == who:
                    st = r["stats"][1 - r["champion_role"]]
                else:
                    continue
                sims += st["sims"]
                secs += st["seconds"]
            speed[who] = f"{sims / secs:,.0f}" if secs else "-"
        lines.append(f"| {game} | {rt['playouts_per_s']:,.0f} ({rt['plies_per_playout']:.1f}) | "
                     f"{rt['champion_sims_per_s_initial']:,.0f} | {rt['uct_sims_per_s_initial']:,.0f} | "
                     f"{speed['champion']} | {speed['flat']} | {speed['uct']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
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
    args = ap.parse_args(argv)
    if not args.report_only:
        run(args)
    text = report(args)
    Path(args.report).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
