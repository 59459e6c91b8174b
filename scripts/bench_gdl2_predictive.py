"""Predictive against uniform sampling in play (issue 52): our GDL-II player with each prior
against an opponent whose habit is on record, at an equal simulation budget.

    python scripts/bench_gdl2_predictive.py database --games G ... [--opponent persona]
    python scripts/bench_gdl2_predictive.py play     --games G ... [--matches 200] [--sims 2000]
    python scripts/bench_gdl2_predictive.py tables

The opponent (``--opponent``):
  persona   our own GDL-II player (the tournament persona's determinised ensembles, uniform
            prior, ``--sims`` simulations a decision): its habits are whatever its search
            does the same way every time (which card it never bets, its opening cells);
  habit     a scripted player: it ranks its legal moves by a hash of its seed, of everything
            it has seen so far (its percepts, as a set) and of the move, and plays its
            best-ranked one with probability 0.8, else one at random.
The database: 50 of the opponent's matches, played through our match runner
(``agent.match.runner.run_match``: the referee's full records, every role's moves and the
states) against our uniform player, the seats alternating.  The other database (Dockhorn's
caveat): 50 matches of another player (the scripted habit when the opponent is the persona,
the habit with another seed when it is the habit) recorded the same way.

play: for each seed, the same match three times: our player with the uniform prior, with the
predictive prior (the opponent's database) and with the other database, against the
opponent, on the same seat (alternating with the seed: even seeds the first chooser role,
odd seeds the second); the same deals (``random`` draws from an RNG of its own) and the same
seeds for every search, so the matches differ only where a prior changed a decision.  Each
side of every match searches ``--sims`` simulations per decision (split over the belief's
most likely states; the clock is left generous so that the budget binds: equal work on a
loaded machine).  The paired score of predictive against uniform is 1 on a seed where
predictive scored more, 0.5 where equal, 0 where less; its interval is Wilson's on that
share.  The belief's probability of the true state after every step is kept per ply.

``--search predicted``: each prior's player decides as the server's does with a database
(``agent.hidden.search.on_belief``): a learned prior (predictive, other database) is also the
opponent's predicted moves in an exact search where the tree fits the simulations' budget
(``agent.hidden.predicted``); the uniform player keeps the determinised ensemble.  Without it
(``ensemble``, the first runs) every prior's player searches the ensemble, so only the
sampling differs.

Rows go to ``docs/benchmarks/gdl2-belief.jsonl`` (kind ``duel``) as they are made; a rerun
skips the seeds already there, so an interrupted run resumes.
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchrows  # noqa: E402  (rows kept compressed under docs/)
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn  # noqa: E402

from agent.hidden.belief import Belief  # noqa: E402
from agent.hidden.player import parse_percepts  # noqa: E402
from agent.hidden.prior import UniformPrior, from_records  # noqa: E402
from agent.hidden.search import ensemble, on_belief  # noqa: E402
from agent.search import search  # noqa: E402
from agent.reasoner.statemachine import CachedStateMachine, goal_vector  # noqa: E402
from agent.stats import mean_ci, proportion_ci  # noqa: E402
from gdl.gdl2 import RANDOM  # noqa: E402
from gdl.kif import parse_term, read_rules_file  # noqa: E402
from gdl.terms import render_spaced  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "gdl2-belief.jsonl"
RECORDS = ROOT / ".cache" / "gdl2-predictive"
RUNNER = True          # databases through the match runner (else --in-process)
GAMES = ["minipoker", "kuhn_poker", "hidden_goofspiel", "rock_paper_scissors",
         "phantom_connect_4x4", "phantom_connect_5x5", "battleship",
         "deck_duel", "dark_breakthrough"]     # the last two: games/gdl2, our own sheets
HABIT_P = 0.8
DATABASE = 50
PRIORS = ("uniform", "predictive", "other")
console = Console()


def corpus() -> Path:
    d = ROOT.parent / "shared" / "corpus" / "gdl2"
    if not d.is_dir():
        sys.exit("needs ../shared/corpus/gdl2 beside the checkout")
    return d


_MACHINES: dict = {}


def machine(game: str):
    """(state machine, engine the search runs on, rules text, engine kind), built once."""
    if game not in _MACHINES:
        path = corpus() / f"{game}.kif"
        if not path.exists():
            path = ROOT / "games" / "gdl2" / f"{game}.kif"
        desc = read_rules_file(path)
        from agent.engine import load_engine
        engine = load_engine(desc, budget_seconds=120)
        if not callable(getattr(engine, "sees", None)) or type(engine).__name__ == "PrologReasoner":
            from agent.reasoner.prolog import PrologReasoner
            engine = PrologReasoner(desc)
            sm = CachedStateMachine(engine)
            _MACHINES[game] = (sm, sm, path.read_text(), "PrologReasoner")
        else:
            _MACHINES[game] = (CachedStateMachine(engine), engine, path.read_text(), type(engine).__name__)
    return _MACHINES[game]


def choosers(sm) -> list:
    return [i for i, r in enumerate(sm.roles) if r != RANDOM]


def _text(t) -> str:
    return " ".join((t if isinstance(t, str) else render_spaced(t)).lower().split())


# ------------------------------------------------------------------ the players
class HabitSeat:
    """The scripted habit: its best-ranked legal move by a hash of (seed, everything it has
    seen so far, move) with probability ``HABIT_P``, else a random one.  What it has seen is
    the set of its percept texts: a card it holds, the cells it ran into."""
    name = "habit"

    def __init__(self, seed: int):
        self.seed = seed
        self.name = f"habit{seed}"

    def reset(self, sm, role_index: int, match_seed: int) -> None:
        self.seen: set = set()
        self.rng = random.Random(f"{self.seed}:{match_seed}:{role_index}")

    def choose(self, legal: list, step: int):
        key = "|".join(sorted(self.seen))
        if self.rng.random() < HABIT_P:
            return min(legal, key=lambda m: hashlib.sha256(f"{self.seed}|{key}|{_text(m)}".encode()).hexdigest())
        return self.rng.choice(legal)

    def observe(self, own, percepts, true_state=None) -> None:
        self.seen |= {_text(p) for p in percepts}


class SearchSeat:
    """Our GDL-II player in the bench: a belief with ``prior`` and the determinised ensemble
    of ``persona``'s search, ``sims`` simulations a decision.  ``ptrue`` collects the
    probability the belief gave the true state after each step (when the loop knows it)."""

    def __init__(self, engine, prior, persona, sims: int, name: str, fixed_seed: int | None = None,
                 method: str = "ensemble"):
        self.engine, self.prior, self.persona, self.sims, self.name = engine, prior, persona, sims, name
        self.fixed_seed = fixed_seed
        self.method = method     # "predicted": as the server's player decides (on_belief)

    def reset(self, sm, role_index: int, match_seed: int) -> None:
        self.sm, self.role = sm, role_index
        # a fixed seed: the same move whenever it has seen the same things (a habit)
        self.seed = match_seed if self.fixed_seed is None else self.fixed_seed
        self.belief = Belief(sm, role_index, self.prior, rng=random.Random(self.seed))
        self.ptrue: list = []
        self.illegal = 0
        self.decisions = 0
        self.predicted = 0

    def choose(self, legal: list, step: int):
        mine = self.belief.legal() or legal
        if self.method == "predicted":
            r = on_belief(self.engine, self.belief.distribution(), self.role, mine, self.persona, self.prior,
                          step, seed=self.seed * 1000 + step, deadline=time.monotonic() + 120.0,
                          search_fn=search, limit=self.sims, histories=self.belief.histories())
        else:
            r = ensemble(self.engine, self.belief.distribution(), self.role, mine, self.persona,
                         seed=self.seed * 1000 + step, deadline=time.monotonic() + 120.0,
                         search_fn=search, limit=self.sims)
        self.decisions += 1
        self.predicted += r.get("method") == "predicted"
        if r["move"] in legal:
            return r["move"]
        self.illegal += 1
        return legal[0]

    def observe(self, own, percepts, true_state=None) -> None:
        self.belief.observe(own, percepts)
        if true_state is not None:
            self.ptrue.append(round(self.belief.probability_of(true_state), 5))


def play_match(sm, seats: dict, seed: int, max_steps: int = 400, record: dict | None = None):
    """One match in process: ``seats`` maps role index to a player; ``random`` draws from an
    RNG of its own (the same deals whatever the players do), a forced move is made without
    asking.  Returns the goal vector and the number of steps.  ``record``, when given, is
    filled with the match record's fields the predictive prior reads, as the runner writes
    them (moves, states, every role's percepts, goals)."""
    chance = random.Random(f"{seed}:{RANDOM}")
    for i, p in seats.items():
        p.reset(sm, i, seed)
    s = sm.initial_state()
    k = 0
    while not sm.is_terminal(s) and k < max_steps:
        jm = []
        for i in range(len(sm.roles)):
            legal = sm.legal_moves(s, i)
            if sm.roles[i] == RANDOM:
                jm.append(chance.choice(legal))
            elif len(legal) == 1:
                jm.append(legal[0])
            else:
                jm.append(seats[i].choose(legal, k))
        jm = tuple(jm)
        nxt = sm.next_state(s, jm)
        for i, p in seats.items():
            p.observe(jm[i], sm.sees(s, jm, i), nxt)
        if record is not None:
            record.setdefault("states", [_state_text(s)])
            record.setdefault("moves", []).append([render_spaced(m) for m in jm])
            record.setdefault("x-percepts", [[] for _ in sm.roles])
            for i in range(len(sm.roles)):
                record["x-percepts"][i].append(sorted(render_spaced(p) for p in sm.sees(s, jm, i)))
            record["states"].append(_state_text(nxt))
        s = nxt
        k += 1
    goals = goal_vector(sm.goal_values(s))
    if record is not None:
        record.update({"isCompleted": True, "goalValues": list(goals), "x-gdl2": True,
                       "x-referee": {"engine": "bench (in process)", "reason": "--in-process"}})
    return goals, k


def _state_text(state) -> str:
    """A state as ggp-base's records write it."""
    return "( " + " ".join(sorted(render_spaced(f) for f in state)) + " )"


# ------------------------------------------------------------------ databases (our runner)
class RunnerSeat:
    """A bench player behind the match runner's player interface: it learns only what the
    runner sends (its percepts) and answers from its own state machine."""
    is_human = False
    wants_legal = True

    def __init__(self, seat, sm, match_seed: int):
        self.seat, self.sm, self.match_seed = seat, sm, match_seed
        self.name = seat.name
        self.legal = None

    async def prepare(self):
        pass

    async def start(self, match_id, role, rules_text, start_clock, play_clock):
        self.role = [str(r) for r in self.sm.roles].index(role)
        self.seat.reset(self.sm, self.role, self.match_seed)
        self.own, self.step = None, 0
        return "ready"

    async def play(self, match_id, last_moves, timeout):
        if last_moves is not None:   # GDL-II: our percepts of the last step
            percepts, _ = parse_percepts(last_moves)
            self.seat.observe(self.own, percepts)
            self.step += 1
        legal = [parse_term(t) for t in self.legal]
        move = legal[0] if len(legal) == 1 else self.seat.choose(legal, self.step)
        self.own = move
        return render_spaced(move)

    async def stop(self, match_id, last_moves):
        pass

    async def abort(self, match_id):
        pass

    async def close(self):
        pass


def database_dir(game: str, who: str) -> Path:
    return RECORDS / game / who


def record_database(game: str, who: str, make_seat, n: int, progress, persona, sims: int,
                    together: int = 10) -> list:
    """``n`` matches of ``make_seat()`` against our uniform player through the match runner,
    seats alternating; returns the record paths (matches already recorded are kept).  Up to
    ``together`` matches run at once: each has a referee process of its own, whose start
    (seconds on a loaded machine) is most of a card game's match."""
    from agent.match.runner import run_match
    sm, engine, rules, _ = machine(game)
    d = database_dir(game, who)
    d.mkdir(parents=True, exist_ok=True)
    task = progress.add_task(f"{game}: database of {who}", total=n, info="runner records")

    def path_of(k: int) -> Path:
        return d / f"{game}.{who}.{k}.json"

    def complete(path: Path) -> bool:
        try:
            return bool(json.loads(path.read_text()).get("isCompleted"))
        except (OSError, ValueError):
            return False

    async def one(k: int) -> None:
        mid = f"{game}.{who}.{k}"
        seats = choosers(sm)
        theirs = seats[k % len(seats)]
        players = []
        for i in range(len(sm.roles)):
            if sm.roles[i] == RANDOM:
                players.append(None)
            elif i == theirs:
                players.append(RunnerSeat(make_seat(), sm, 50_000 + k))
            else:
                players.append(RunnerSeat(SearchSeat(engine, UniformPrior(), persona, sims, "uniform"), sm, 50_000 + k))
        record = await run_match(rules, players, start_clock=600, play_clock=600, match_id=mid,
                                 seed=50_000 + k, out_dir=d, referee="prolog")
        if not record.get("isCompleted"):
            raise SystemExit(f"{mid}: the runner did not complete the match: {record.get('x-notes')}")
        found = sorted(p for p in d.glob(f"{mid}*.json") if p != path_of(k))
        if found:
            found[0].replace(path_of(k))
        progress.advance(task)

    todo = []
    for k in range(n):
        if complete(path_of(k)):
            progress.advance(task)
        else:
            todo.append(k)
    if not RUNNER:   # the same record's fields, refereed in this process (see --in-process)
        for k in todo:
            seats = choosers(sm)
            theirs = seats[k % len(seats)]
            ours = next(i for i in seats if i != theirs)
            rec: dict = {}
            play_match(sm, {theirs: make_seat(), ours: SearchSeat(engine, UniformPrior(), persona, sims, "uniform")},
                       seed=50_000 + k, record=rec)
            tmp = path_of(k).with_suffix(".tmp")
            tmp.write_text(json.dumps(rec))
            tmp.replace(path_of(k))
            progress.advance(task)
        return [path_of(k) for k in range(n)]

    async def batches():
        for b in range(0, len(todo), together):
            await asyncio.gather(*(one(k) for k in todo[b:b + together]))
    asyncio.run(batches())
    return [path_of(k) for k in range(n)]


def opponent_factory(kind: str, persona, sims: int, engine):
    if kind == "persona":
        return lambda: SearchSeat(engine, UniformPrior(), persona, sims, "persona", fixed_seed=0)
    return lambda: HabitSeat(1)


def other_factory(kind: str):
    return (lambda: HabitSeat(1)) if kind == "persona" else (lambda: HabitSeat(2))


def databases(game: str, kind: str, persona, sims: int, progress):
    sm, engine, _, _ = machine(game)
    who = f"{kind}-{sims}-fixed" if kind == "persona" else "habit1"
    other = "habit1" if kind == "persona" else "habit2"
    if not RUNNER:
        who, other = who + "-inprocess", other + "-inprocess"
    mine = record_database(game, who, opponent_factory(kind, persona, sims, engine), DATABASE, progress, persona, sims)
    theirs = record_database(game, other, other_factory(kind), DATABASE, progress, persona, sims)
    pred = from_records(mine, sm.roles)
    pred.source = f"{DATABASE} runner records of {who}"
    oth = from_records(theirs, sm.roles)
    oth.source = f"{DATABASE} runner records of {other}"
    return pred, oth


# ------------------------------------------------------------------ play
def done_keys() -> set:
    return {r["key"] for r in benchrows.read(OUT)}


def emit(row: dict) -> None:
    with benchrows.append(OUT) as f:   # compressed under docs/ (benchrows), flushed per row
        f.add(row)


def rows(kind: str = "duel") -> list:
    return [r for r in benchrows.read(OUT) if r.get("kind") == kind]


def progress_columns() -> tuple:
    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TimeRemainingColumn(), TextColumn("{task.fields[info]}"))


@functools.cache
def code_version() -> str:
    """The commit that played (``benchrows.code_version``), as it was when this process first
    asked (``play`` asks at its start: the code it imported then; a commit made meanwhile
    is not it)."""
    return benchrows.code_version(ROOT)


def play(games, kind: str, matches: int, sims: int, persona_name: str, start: int = 0,
         method: str = "ensemble") -> None:
    from agent.persona import load_persona
    code_version()   # the commit of the code this process imported
    persona = load_persona(persona_name)
    done = done_keys()
    with Progress(*progress_columns(), console=console) as progress:
        for game in games:
            sm, engine, _, ekind = machine(game)
            pred, oth = databases(game, kind, persona, sims, progress)
            priors = {"uniform": UniformPrior(), "predictive": pred, "other": oth}
            opp = opponent_factory(kind, persona, sims, engine)()
            task = progress.add_task(f"{game} vs {kind}", total=matches - start, info="")
            score = []
            for m in range(start, matches):
                key = f"duel|{game}|{kind}|{sims}|{m}" if method == "ensemble" else f"duel-{method}|{game}|{kind}|{sims}|{m}"
                if key in done:
                    progress.advance(task)
                    continue
                seats = choosers(sm)
                me = seats[m % len(seats)]
                theirs = next(i for i in seats if i != me)
                row = {"key": key, "kind": "duel", "game": game, "opponent": kind, "sims": sims,
                       "persona": persona_name, "match": m, "role": str(sm.roles[me]), "engine": ekind,
                       "database": pred.source, "other_database": oth.source, "code": code_version(),
                       "search": method}
                t0 = time.perf_counter()
                for name, prior in priors.items():
                    ours = SearchSeat(engine, prior, persona, sims, name, method=method)
                    goals, steps = play_match(sm, {me: ours, theirs: opp}, seed=m)
                    row[name] = goals[me]
                    row[f"{name}_opp"] = goals[theirs]
                    row[f"{name}_ptrue"] = ours.ptrue
                    row[f"{name}_decisions"] = ours.decisions
                    if ours.predicted:
                        row[f"{name}_predicted"] = ours.predicted
                    if ours.illegal:
                        row[f"{name}_illegal"] = ours.illegal
                row["seconds"] = round(time.perf_counter() - t0, 2)
                emit(row)
                score.append(1.0 if row["predictive"] > row["uniform"] else 0.5 if row["predictive"] == row["uniform"] else 0.0)
                progress.update(task, advance=1, info=f"pred vs unif {sum(score) / len(score):.3f} over {len(score)} new")


# ------------------------------------------------------------------ tables
def paired(rs, a: str, b: str) -> tuple:
    pts = sum(1.0 if r[a] > r[b] else 0.5 if r[a] == r[b] else 0.0 for r in rs)
    return proportion_ci(pts, len(rs))


def fmt(ci) -> str:
    return f"{ci[0]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}]"


def tables() -> None:
    rs_all = rows()
    if not rs_all:
        print("no rows yet")
        return
    def group(r) -> tuple:
        return (r["game"], r["opponent"], r["sims"], r.get("search", "ensemble"))
    groups = sorted({group(r) for r in rs_all})
    out = ["| game | opponent | search | sims/decision | matches | predictive vs uniform | other database vs uniform | "
           "W-D-L (predictive vs uniform) | mean goal: uniform / predictive / other |",
           "|---|---|---|---|---|---|---|---|---|"]
    for g, opp, sims, how in groups:
        rs = [r for r in rs_all if group(r) == (g, opp, sims, how)]
        w = sum(r["predictive"] > r["uniform"] for r in rs)
        l_ = sum(r["predictive"] < r["uniform"] for r in rs)
        means = " / ".join(f"{sum(r[k] for r in rs) / len(rs):.1f}" for k in PRIORS)
        out.append(f"| {g} | {opp} | {how} | {sims} | {len(rs)} | {fmt(paired(rs, 'predictive', 'uniform'))} | "
                   f"{fmt(paired(rs, 'other', 'uniform'))} | {w}-{len(rs) - w - l_}-{l_} | {means} |")
    out += ["", "By seat:", "",
            "| game | opponent | search | our role | matches | predictive vs uniform | other database vs uniform |",
            "|---|---|---|---|---|---|---|"]
    for g, opp, sims, how in groups:
        rs = [r for r in rs_all if group(r) == (g, opp, sims, how)]
        for role in sorted({r["role"] for r in rs}):
            rr = [r for r in rs if r["role"] == role]
            out.append(f"| {g} | {opp} | {how} | {role} | {len(rr)} | {fmt(paired(rr, 'predictive', 'uniform'))} | "
                       f"{fmt(paired(rr, 'other', 'uniform'))} |")
    out += ["", "Probability the belief gives the true state after each step (mean over matches, "
            "95 % t interval; each prior in its own matches):", "",
            "| game | opponent | search | ply | n | uniform | predictive | other database |", "|---|---|---|---|---|---|---|---|"]
    for g, opp, sims, how in groups:
        rs = [r for r in rs_all if group(r) == (g, opp, sims, how)]
        plies = max(len(r[f"{k}_ptrue"]) for r in rs for k in PRIORS)
        for ply in range(plies):
            cells, ns = [], []
            for k in PRIORS:
                vals = [r[f"{k}_ptrue"][ply] for r in rs if len(r[f"{k}_ptrue"]) > ply]
                ns.append(len(vals))
                cells.append(fmt(mean_ci(vals)) if vals else "")
            if min(ns) < 10:
                continue
            out.append(f"| {g} | {opp} | {how} | {ply + 1} | {min(ns)} | " + " | ".join(cells) + " |")
        allv = {k: [p for r in rs for p in r[f"{k}_ptrue"]] for k in PRIORS}
        out.append(f"| {g} | {opp} | {how} | all | {len(allv['uniform'])} | " + " | ".join(fmt(mean_ci(allv[k])) for k in PRIORS) + " |")
    print("\n".join(out))


def main(argv=None) -> int:
    global DATABASE, RECORDS, OUT, RUNNER
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["database", "play", "tables"])
    ap.add_argument("--games", nargs="+", default=["minipoker", "kuhn_poker", "hidden_goofspiel", "phantom_connect_4x4"])
    ap.add_argument("--opponent", choices=["persona", "habit"], default="persona")
    ap.add_argument("--persona", default="tournament")
    ap.add_argument("--matches", type=int, default=200)
    ap.add_argument("--start", type=int, default=0, help="first seed (to split a run over processes)")
    ap.add_argument("--sims", type=int, default=2000, help="simulations per decision, each side")
    ap.add_argument("--database", type=int, default=DATABASE, help="matches in each database")
    ap.add_argument("--records", type=Path, default=RECORDS, help="where the databases' records go")
    ap.add_argument("--out", type=Path, default=OUT, help="the rows' file")
    ap.add_argument("--search", choices=["ensemble", "predicted"], default="ensemble",
                    help="predicted: a learned prior also predicts the opponent in the search, as the "
                         "server's player does with a database (agent.hidden.search.on_belief)")
    ap.add_argument("--in-process", action="store_true",
                    help="record the databases in this process (the runner's record fields, the compiled "
                         "engine as referee) instead of through the match runner, whose referee process a "
                         "match takes seconds to start on a loaded machine")
    args = ap.parse_args(argv)
    DATABASE, RECORDS, OUT = args.database, args.records, args.out
    RUNNER = not args.in_process
    unknown = [g for g in args.games if g not in GAMES]
    if unknown:
        ap.error(f"unknown games {unknown}; known: {' '.join(GAMES)}")
    try:
        if args.what == "database":
            from agent.persona import load_persona
            persona = load_persona(args.persona)
            with Progress(*progress_columns(), console=console) as progress:
                for g in args.games:
                    databases(g, args.opponent, persona, args.sims, progress)
        elif args.what == "play":
            play(args.games, args.opponent, args.matches, args.sims, args.persona, args.start, args.search)
    except KeyboardInterrupt:
        console.print("interrupted: rerun the same command to resume")
        return 130
    tables()
    return 0


if __name__ == "__main__":
    sys.exit(main())
