"""GDL-II beliefs measured on the corpus sheets (issue 52's targets): consistency of sampled
states, samples per second, the probability given to the true state under uniform and
predictive priors, and predictive against uniform sampling in play.

    python scripts/bench_gdl2_belief.py consistency [--games G ...] [--states 10000]
    python scripts/bench_gdl2_belief.py truth       [--games G ...] [--matches 30]
    python scripts/bench_gdl2_belief.py play        [--games G ...] [--matches 100] [--seconds 0.1]
    python scripts/bench_gdl2_belief.py health      [--games G ...] [--matches 3] [--play-clock 5]

Every row goes to ``docs/benchmarks/gdl2-belief.jsonl`` as it is made (a rerun skips the rows
already there, so an interrupted run resumes); each command prints its markdown table.

The opponent with a habit: a player that ranks every move by a fixed hash of its text and
its seed, and plays its best-ranked legal move with probability 0.8, else one at random (a
preference that means the same everywhere, like "the leftmost column").  Its database: 50
matches it played against uniformly random moves, recorded by the referee (moves and states).
The other database: 50 matches of a habit with another seed (Dockhorn's caveat: a database
that does not represent the opponent).

consistency: the belief of the role facing the habit player, at every step of matches of the
habit against random moves; every sampled state's whole history replayed on a separate
Prolog reasoner against what the role saw (moves legal, ours ours, our percepts ours).
Histories the belief itself marks lenient (none fitting was found: it keeps the closest)
are counted apart: "inconsistent" counts only those it holds to be consistent.
truth: per step, the probability the belief gives to the true state, uniform and
predictive priors on the same matches (same percepts), means with bootstrap intervals.
play: our player with the predictive prior and with the uniform prior, each against the
habit player on the same seeds (same deals, same habit draws), at equal time per move;
the predictive player's paired score (1 when it scored more on that seed, 0.5 when equal).
health: the belief of the first chooser role through random matches, on the time a server's
player gives it per PLAY (``agent.hidden.player``'s shares of ``--play-clock``): the steps
it was lenient (no history consistent with every percept kept), the steps its legal moves
were not the true ones, how often it was mended or rebuilt, the update's median and longest
time; one row per match, labelled with the code's commit.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchrows  # noqa: E402  (rows kept compressed under docs/)
from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402

from agent.hidden.belief import Belief, inconsistency  # noqa: E402
from agent.hidden.player import BELIEF_SHARE, REBUILD_SHARE  # noqa: E402
from agent.hidden.prior import MoveFrequencyPrior, UniformPrior  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from agent.reasoner.statemachine import CachedStateMachine, goal_vector  # noqa: E402
from agent.stats import mean_ci  # noqa: E402
from gdl.gdl2 import RANDOM  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402
from gdl.terms import render_spaced  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "gdl2-belief.jsonl"
GAMES = ["kuhn_poker", "minipoker", "hidden_goofspiel", "rock_paper_scissors", "nim",
         "phantom_connect_4x4", "phantom_connect_5x5", "battleship"]
HABIT_P = 0.8
DATABASE = 50
console = Console()


def corpus() -> Path:
    d = ROOT.parent / "shared" / "corpus" / "gdl2"
    if not d.is_dir():
        sys.exit("needs ../shared/corpus/gdl2 beside the checkout")
    return d


def machines(game: str):
    """(the fast machine the belief runs on, a Prolog judge, its kind)."""
    desc = read_rules_file(corpus() / f"{game}.kif")
    judge = CachedStateMachine(PrologReasoner(desc))
    try:
        from agent.engine import load_engine
        engine = load_engine(desc, budget_seconds=120)
        if callable(getattr(engine, "sees", None)) and type(engine).__name__ != "PrologReasoner":
            return CachedStateMachine(engine), judge, type(engine).__name__
    except Exception:
        pass
    return CachedStateMachine(PrologReasoner(desc)), judge, "PrologReasoner"


def rank(seed: int, move) -> str:
    return hashlib.sha256(f"{seed}|{render_spaced(move)}".encode()).hexdigest()


def habit_move(seed: int, legal: list, rng: random.Random):
    if rng.random() < HABIT_P:
        return min(legal, key=lambda m: rank(seed, m))
    return rng.choice(legal)


def seats(sm) -> list:
    return [i for i, r in enumerate(sm.roles) if r != RANDOM]


def play_habit(sm, habit_role: int, habit_seed: int, seed: int, chooser=None, after=None, max_steps=300):
    """A match: the habit player on ``habit_role``, ``chooser(state, i, legal, step)`` or
    random on the other seats, ``random`` uniform; ``after(state, joint move)`` is called
    after each step.  Returns (joint moves, states)."""
    rng = random.Random(seed)
    s = sm.initial_state()
    joints, states = [], [s]
    while not sm.is_terminal(s) and len(joints) < max_steps:
        jm = []
        for i in range(len(sm.roles)):
            legal = sm.legal_moves(s, i)
            if i == habit_role:
                jm.append(habit_move(habit_seed, legal, rng))
            elif chooser is not None and sm.roles[i] != RANDOM:
                jm.append(chooser(s, i, legal, len(joints)))
            else:
                jm.append(rng.choice(legal))
        jm = tuple(jm)
        if after is not None:
            after(s, jm)
        joints.append(jm)
        s = sm.next_state(s, jm)
        states.append(s)
    return joints, states


def database(sm, habit_role: int, habit_seed: int, n: int = DATABASE) -> MoveFrequencyPrior:
    prior = MoveFrequencyPrior(sm.roles, source=f"{n} matches of habit {habit_seed}")
    for k in range(n):
        joints, states = play_habit(sm, habit_role, habit_seed, seed=10_000 + k)
        prior.add_match(joints, states)
    return prior


def done_keys() -> set:
    return {r["key"] for r in benchrows.read(OUT)}


def emit(row: dict) -> None:
    with benchrows.append(OUT) as f:   # compressed under docs/ (benchrows), flushed per row
        f.add(row)


def rows(kind: str) -> list:
    return [r for r in benchrows.read(OUT) if r.get("kind") == kind]


def load_info() -> str:
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


# ------------------------------------------------------------------ consistency
def consistency(games, target: int, budget: float) -> None:
    """A row per match (its states checked and how many did not fit), so that a long game
    (battleship: a fifth of a second per Prolog query) resumes at the next match; a game's
    figure is the sum of its rows until ``target`` states were checked."""
    code = benchrows.code_version(ROOT, ("agent",))
    done = rows("consistency")
    with Progress(console=console) as progress:
        for game in games:
            parts = [r for r in done if r["game"] == game and r.get("target") == target]
            checked = sum(r["checked"] for r in parts)
            whole = [r for r in done if r["key"] == f"consistency|{game}|{target}"]
            if checked >= target or any(r["checked"] >= target for r in whole):   # older: a row per game
                continue
            sm, judge, kind = machines(game)
            task = progress.add_task(f"{game} ({kind})", total=target, completed=checked)
            t_end = time.monotonic() + budget
            habit_role, me = seats(sm)[-1], seats(sm)[0]
            seed = max((r["seed"] for r in parts), default=-1) + 1
            while checked < target and time.monotonic() < t_end:
                joints, states = play_habit(sm, habit_role, 1, seed=seed)
                belief = Belief(sm, me, UniformPrior(), rng=random.Random(seed))
                here = bad = produced = lenient = lenient_bad = 0
                update_time = 0.0
                failures = []
                for k, jm in enumerate(joints):
                    t0 = time.perf_counter()
                    belief.observe(jm[me], sm.sees(states[k], jm, me))
                    update_time += time.perf_counter() - t0
                    produced += len(belief.particles)
                    for p in belief.particles:
                        why = inconsistency(judge, me, belief.steps, p.joints)
                        here += 1
                        if p.lenient:      # the belief says it does not fit (its closest known)
                            lenient += 1
                            lenient_bad += why is not None
                        elif why is not None:
                            bad += 1
                            failures.append(why[:300])
                    progress.update(task, completed=min(checked + here, target))
                    if checked + here >= target or time.monotonic() >= t_end:
                        break
                checked += here
                emit({"key": f"consistency|{game}|{target}|{seed}", "kind": "consistency", "game": game,
                      "engine": kind, "target": target, "seed": seed, "checked": here, "inconsistent": bad,
                      "lenient": lenient, "lenient_not_fitting": lenient_bad,
                      "failures": failures[:5], "steps": len(belief.steps), "of_steps": len(joints),
                      "produced": produced, "update_seconds": round(update_time, 3),
                      "code": code, "load": load_info()})
                seed += 1


# ------------------------------------------------------------------ truth
def truth(games, matches: int) -> None:
    """Each chooser role in turn faces the habit player on another chooser seat."""
    done = done_keys()
    with Progress(console=console) as progress:
        for game in games:
            sm, _, kind = machines(game)
            for me in seats(sm):
                habit_role = next(i for i in seats(sm) if i != me)
                priors = {"uniform": UniformPrior(), "predictive": database(sm, habit_role, 1),
                          "other-database": database(sm, habit_role, 2)}
                task = progress.add_task(f"{game} as {sm.roles[me]} ({kind})", total=matches)
                for m in range(matches):
                    key = f"truth|{game}|{me}|{m}"
                    if key in done or (me == seats(sm)[0] and f"truth|{game}|{m}" in done):
                        progress.advance(task)
                        continue
                    joints, states = play_habit(sm, habit_role, 1, seed=m)
                    row = {"key": key, "kind": "truth", "game": game, "role": str(sm.roles[me]),
                           "match": m, "engine": kind}
                    for name, prior in priors.items():
                        belief = Belief(sm, me, prior, rng=random.Random(m))
                        ps = []
                        for k, jm in enumerate(joints):
                            belief.observe(jm[me], sm.sees(states[k], jm, me))
                            ps.append(belief.probability_of(states[k + 1]))
                        row[name] = ps
                    emit(row)
                    progress.advance(task)


# ------------------------------------------------------------------ play
def play(games, matches: int, seconds: float) -> None:
    from agent.hidden.search import ensemble
    from agent.persona import load_persona
    from agent.search import search
    persona = load_persona("tournament")
    done = done_keys()
    with Progress(console=console) as progress:
        for game in games:
            sm, _, kind = machines(game)
            engine = sm if kind == "PrologReasoner" else sm.sm   # the driver's own arrays
            habit_role, me = seats(sm)[-1], seats(sm)[0]
            priors = {"uniform": UniformPrior(), "predictive": database(sm, habit_role, 1),
                      "other-database": database(sm, habit_role, 2)}
            task = progress.add_task(f"{game} ({kind})", total=matches)
            for m in range(matches):
                key = f"play|{game}|{seconds}|{m}"
                if key in done:
                    progress.advance(task)
                    continue
                row = {"key": key, "kind": "play", "game": game, "match": m, "seconds": seconds,
                       "engine": kind}
                for name, prior in priors.items():
                    belief = Belief(sm, me, prior, rng=random.Random(m))

                    def chooser(state, i, legal, k, belief=belief):
                        # ``state`` is the referee's: the decision reads only the belief
                        if len(legal) == 1:
                            return legal[0]
                        dist = belief.distribution()
                        mine = belief.legal() or legal
                        r = ensemble(engine, dist, me, mine, persona, seed=m * 1000 + k,
                                     deadline=time.monotonic() + seconds, search_fn=search)
                        return r["move"] if r["move"] in legal else legal[0]

                    # the only chooser seat but the habit's is ours (the sheets have two)
                    joints, states = play_habit(
                        sm, habit_role, 1, seed=m, chooser=chooser,
                        after=lambda st, jm, b=belief: b.observe(jm[me], sm.sees(st, jm, me)))
                    row[name] = goal_vector(sm.goal_values(states[-1]))[me]
                emit(row)
                progress.advance(task)


# ------------------------------------------------------------------ health
def health(games, matches: int, play_clock: float) -> None:
    code = benchrows.code_version(ROOT, ("agent",))
    done = done_keys()
    for game in games:
        sm, judge, kind = machines(game)
        me = seats(sm)[0]
        for seed in range(matches):
            key = f"health|{game}|{code}|{play_clock}|{seed}"
            if key in done:
                continue
            rng = random.Random(seed)
            b = Belief(sm, me, UniformPrior(), rng=random.Random(seed))
            s = sm.initial_state()
            times, lenient, wrong_legal, steps, first = [], 0, 0, 0, None
            while not sm.is_terminal(s) and steps < 300:
                jm = tuple(rng.choice(sm.legal_moves(s, i)) for i in range(len(sm.roles)))
                nxt = sm.next_state(s, jm)
                t = time.monotonic()
                b.observe(jm[me], sm.sees(s, jm, me), t + BELIEF_SHARE * play_clock,
                          rebuild_by=t + REBUILD_SHARE * play_clock, goes_on=not sm.is_terminal(nxt))
                times.append(time.monotonic() - t)
                steps += 1
                lenient += b.lenient
                first = first or (steps if b.lenient else None)
                if not sm.is_terminal(nxt):
                    wrong_legal += sorted(map(str, b.legal())) != sorted(map(str, sm.legal_moves(nxt, me)))
                s = nxt
            mended = sum("mended at an earlier step" in n for n in b.notes)
            times.sort()
            row = {"kind": "health", "key": key, "game": game, "code": code, "engine": kind,
                   "play_clock": play_clock, "seed": seed, "steps": steps, "lenient_steps": lenient,
                   "first_lenient": first,
                   "wrong_legal_steps": wrong_legal, "mended": mended, "rebuilt": b.rebuilt,
                   "median_update_s": round(times[len(times) // 2], 3), "longest_update_s": round(times[-1], 3),
                   "load": load_info()}
            emit(row)
            console.print(f"{game} seed {seed}: {lenient} of {steps} steps lenient, {wrong_legal} with wrong "
                          f"legal moves, {mended} mended, {b.rebuilt} rebuilt, update median "
                          f"{row['median_update_s']} s ({code}, {load_info()})")


# ------------------------------------------------------------------ tables
def tables() -> None:
    out = []
    cons = rows("consistency")
    if cons:
        out += ["| game | engine | sampled states checked | matches | inconsistent | of them said lenient "
                "(not fitting / all) | samples/s (belief update) | load | code |",
                "|---|---|---|---|---|---|---|---|---|"]
        for game in dict.fromkeys(r["game"] for r in cons):
            rs = [r for r in cons if r["game"] == game]
            if any("seed" in r for r in rs):     # a row per match: their sum (older rows: one per game)
                rs = [r for r in rs if "seed" in r]
                rate = round(sum(r["produced"] for r in rs) / max(1e-9, sum(r["update_seconds"] for r in rs)), 1)
                loads = sorted(float(r["load"].split()[1]) for r in rs)
                cores = rs[0]["load"].split()[-2]
                load = f"load {loads[0]:.1f}-{loads[-1]:.1f} on {cores} cores"
                codes = ", ".join(dict.fromkeys(r["code"] for r in rs))
                out.append(f"| {game} | {rs[0]['engine']} | {sum(r['checked'] for r in rs):,} | {len(rs)} | "
                           f"{sum(r['inconsistent'] for r in rs)} | "
                           f"{sum(r['lenient_not_fitting'] for r in rs):,} / {sum(r['lenient'] for r in rs):,} | "
                           f"{rate} | {load} | {codes} |")
            else:
                for r in rs:
                    out.append(f"| {game} | {r['engine']} | {r['checked']:,} | {r['matches']} | "
                               f"{r['inconsistent']} | not counted | {r['samples_per_s']} | {r['load']} | |")
        out.append("")
    tr = rows("truth")
    if tr:
        out += ["| game | our role | matches | P(true state), uniform | predictive | other database |",
                "|---|---|---|---|---|---|"]
        for game, role in sorted({(r["game"], r.get("role", "first chooser")) for r in tr}):
            rs = [r for r in tr if r["game"] == game and r.get("role", "first chooser") == role]
            cells = []
            for name in ("uniform", "predictive", "other-database"):
                vals = [p for r in rs for p in r[name]]
                m, lo, hi = mean_ci(vals)
                cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
            out.append(f"| {game} | {role} | {len(rs)} | " + " | ".join(cells) + " |")
        out.append("")
    pl = rows("play")
    if pl:
        out += ["| game | s/move | matches | predictive vs uniform (paired score) | other database vs uniform | mean goal: uniform / predictive / other |",
                "|---|---|---|---|---|---|"]
        for game in sorted({r["game"] for r in pl}):
            rs = [r for r in pl if r["game"] == game]

            def paired(a, b):
                vals = [1.0 if r[a] > r[b] else 0.5 if r[a] == r[b] else 0.0 for r in rs]
                m, lo, hi = mean_ci(vals)
                return f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
            means = " / ".join(f"{sum(r[k] for r in rs) / len(rs):.1f}" for k in ("uniform", "predictive", "other-database"))
            out.append(f"| {game} | {rs[0]['seconds']} | {len(rs)} | {paired('predictive', 'uniform')} | "
                       f"{paired('other-database', 'uniform')} | {means} |")
    print("\n".join(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["consistency", "truth", "play", "health", "tables"])
    ap.add_argument("--games", nargs="+", default=GAMES)
    ap.add_argument("--states", type=int, default=10_000)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds per game (consistency)")
    ap.add_argument("--matches", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=0.1)
    ap.add_argument("--play-clock", type=float, default=5.0, help="seconds per PLAY (health)")
    args = ap.parse_args(argv)
    unknown = [g for g in args.games if g not in GAMES]
    if unknown:
        ap.error(f"unknown games {unknown}; known: {' '.join(GAMES)}")
    try:
        if args.what == "consistency":
            consistency(args.games, args.states, args.budget)
        elif args.what == "truth":
            truth(args.games, args.matches)
        elif args.what == "play":
            play(args.games, args.matches, args.seconds)
        elif args.what == "health":
            health(args.games, args.matches, args.play_clock)
    except KeyboardInterrupt:
        console.print("interrupted: rerun the same command to resume")
        return 130
    tables()
    return 0


if __name__ == "__main__":
    sys.exit(main())
