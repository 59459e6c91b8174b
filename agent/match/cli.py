"""``ggp-persona match``: N matches between the given players, roles rotated, a progress bar,
a results table at the end.

Rotation: in round r (0-based) role j is played by player (j - r) mod n, so with --rounds a
multiple of the number of roles every player plays every role equally often.  Scoring per
match: a win is a goal strictly above every other role's, a draw a goal tied for the top,
else a loss (one-role games: a win is 100).  Aborted matches count apart and carry no goal.
Ctrl-C aborts the match in progress (ABORT to every player, its record written and marked
aborted) and ends the run with the results so far; the same command with the same ``--run``
resumes it (completed rounds found in the output folder are counted, not played again).

GDL-II sheets (a role ``random``, ``sees`` rules; KIF or Prolog syntax) play the same way.
The ``random`` role has no player: the referee moves it (``agent.match.runner``), so the
players are given for the other roles (the choosers) only, and rotate over them; win, draw
and loss compare the choosers' goals, and the table has a row for random's goal when the
rules give it one.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import signal
import sys
import time
from pathlib import Path

# Imports inside functions: `ggp-persona` builds every subcommand's parser when it starts
# (agent/cli.py imports this module for add_arguments), so the runner, the players and rich
# are imported only when `match` runs.


HELP = ("play matches between personas, GGP players over HTTP and random players, refereed locally "
        "(a person plays through the web page)")


class MatchUsageError(ValueError):
    """Bad input from the command line; the text is shown as is."""


def add_arguments(p) -> None:
    p.add_argument("rules", metavar="RULES",
                   help="the game's rule sheet (.kif, or Prolog syntax; GDL or GDL-II), or a name in games/")
    p.add_argument("players", metavar="PLAYER", nargs="+",
                   help="one per role, in role order for the first round: persona:NAME|FILE (our player), "
                        "http://HOST:PORT (any GGP player) or random; a GDL-II game's role random "
                        "gets none (the referee moves it)")
    p.add_argument("--rounds", type=int, default=1, help="matches to play, roles rotated (default 1)")
    # whole seconds: START carries integers (ggp-base's players read them with Integer.valueOf)
    p.add_argument("--start", type=int, default=30, metavar="S", help="start clock in seconds (default 30)")
    p.add_argument("--play", type=int, default=10, metavar="P", help="play clock in seconds (default 10)")
    p.add_argument("--out", default="match_logs", metavar="DIR",
                   help="folder for the records (default match_logs); our personas' own records, with "
                        "every decision's Q-values and visits, go to DIR/players")
    p.add_argument("--scramble", action="store_true",
                   help="rename the game's symbols for the players, anew each match (records keep the real names)")
    p.add_argument("--seed", type=int, default=0, help="seed of substitute moves, scrambling and personas (default 0)")
    p.add_argument("--run", metavar="NAME", default=None,
                   help="name of this run (default: the time); match ids are match.<game>.<run>.<round>. "
                        "Run the same command with the same --run to resume an interrupted run: rounds "
                        "already completed in DIR are counted, not replayed")
    p.add_argument("--referee", choices=("standby", "auto", "prolog"), default="standby",
                   help="standby (default): Prolog, and the exact compiled engine where Prolog runs out of "
                        "limits; auto: the compiled engine from the start when it is exact (a few seconds "
                        "more per match to open, faster steps on big games); prolog")
    p.add_argument("--no-engine", action="store_true", help="personas play on Prolog only (no compiled engine)")


def rotation(n_players: int, round_index: int) -> list[int]:
    """Player index for each role in a round."""
    return [(j - round_index) % n_players for j in range(n_players)]


def outcome(goals: list, role: int, chance: int | None = None) -> str:
    """win / draw / loss of one role in a finished match, against the other roles but the
    chance role (``chance``: GDL-II's ``random``, whose goal decides nothing)."""
    mine = goals[role]
    others = [g for i, g in enumerate(goals) if i != role and i != chance]
    if not others:
        return "win" if mine == 100 else "loss"
    if mine > max(others):
        return "win"
    return "draw" if mine == max(others) else "loss"


def results_table(names: list[str], matches: list[dict], chance: int | None = None,
                  chance_row: str | None = None) -> dict:
    """Per player: matches, wins, draws, losses, aborted, goals and the mean goal with its
    95 % interval.  ``matches``: dicts with ``order`` (player per role; None in the chance
    role's seat), ``goals`` or None.  ``chance``: the index of GDL-II's ``random`` (not in
    any outcome); ``chance_row``: the name of a last row with random's goals (wins, draws
    and losses None), when its goal means something."""
    from agent.stats import mean_ci
    rows = []

    def row(name, goals, aborted, tally):
        mean, lo, hi = mean_ci(goals) if goals else (math.nan, math.nan, math.nan)
        return {"player": name, "matches": len(goals) + aborted, "wins": tally.get("win"),
                "draws": tally.get("draw"), "losses": tally.get("loss"), "aborted": aborted,
                "mean_goal": mean, "ci_low": lo, "ci_high": hi}
    for k, name in enumerate(names):
        tally = {"win": 0, "draw": 0, "loss": 0}
        goals, aborted = [], 0
        for m in matches:
            for role, player in enumerate(m["order"]):
                if player != k or role == chance:
                    continue
                if m["goals"] is None:
                    aborted += 1
                else:
                    tally[outcome(m["goals"], role, chance)] += 1
                    goals.append(m["goals"][role])
        rows.append(row(name, goals, aborted, tally))
    if chance is not None and chance_row:
        done = [m["goals"][chance] for m in matches if m["goals"] is not None]
        rows.append(row(chance_row, done, sum(m["goals"] is None for m in matches), {}))
    return {"rows": rows}


def _print_table(table: dict, console) -> None:
    from rich.table import Table
    t = Table(title="results")
    for col in ("player", "matches", "wins", "draws", "losses", "aborted", "mean goal", "95% interval"):
        t.add_column(col, justify="left" if col == "player" else "right")
    for r in table["rows"]:
        mean = "-" if math.isnan(r["mean_goal"]) else f"{r['mean_goal']:.1f}"
        ci = "-" if math.isnan(r["ci_low"]) else f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}]"
        t.add_row(r["player"], str(r["matches"]), *("-" if r[k] is None else str(r[k])
                                                    for k in ("wins", "draws", "losses")),
                  str(r["aborted"]), mean, ci)
    console.print(t)


def completed_rounds(out: Path, prefix: str, rules_text: str) -> dict:
    """Match id -> (goals, player names) of the completed records in ``out`` whose id starts
    with ``prefix`` and whose rules are ``rules_text`` (a resumed run)."""
    found = {}
    for f in out.glob(f"{prefix}*.json"):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (isinstance(rec, dict) and rec.get("isCompleted") and rec.get("x-rules") == rules_text
                and isinstance(rec.get("goalValues"), list) and str(rec.get("matchId", "")).startswith(prefix)):
            found[rec["matchId"]] = (rec["goalValues"], rec.get("playerNamesFromHost"))
    return found


def repository_url(path: Path) -> str | None:
    """``http://games.ggp.org/<repo>/games/<key>/v<N>/`` when the rule sheet sits in a copy of
    a game repository (``<repo>/games/<key>/v<N>/`` with a METADATA naming it), so records
    name the game as ggp-base's do; else None."""
    parts = path.resolve().parts
    if len(parts) < 5 or parts[-4] != "games" or not re.fullmatch(r"v\d+", parts[-2]):
        return None
    try:
        meta = json.loads((path.parent / "METADATA").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("rulesheet") != path.name:
        return None
    return f"http://games.ggp.org/{parts[-5]}/games/{parts[-3]}/{parts[-2]}/"


def _rules_path(arg: str) -> Path:
    p = Path(arg)
    if p.is_file():
        return p
    if not p.suffix and (Path("games") / f"{arg}.kif").is_file():
        return Path("games") / f"{arg}.kif"
    if p.is_dir():
        raise MatchUsageError(f"is a directory, not a rule file: {arg}")
    raise MatchUsageError(f"no such file: {arg}")


def _names_per_role(seated: list, chance: int | None) -> list[str]:
    """The record's ``playerNamesFromHost`` of a match with these players (the chooser roles'
    players in order; the runner's name in the chance role's seat)."""
    from .runner import CHANCE_NAME
    names = [p.name for p in seated]
    if chance is not None:
        names.insert(chance, CHANCE_NAME)
    return names


def _goal_of_random(description) -> bool:
    """True when the rules have a goal rule for the role ``random`` by name."""
    from gdl.gdl2 import RANDOM
    return any(isinstance(r.head, tuple) and len(r.head) == 3 and r.head[0] == "goal" and r.head[1] == RANDOM
               for r in description.rules)


def _unique_names(players) -> list[str]:
    names, seen = [], {}
    for p in players:
        seen[p.name] = seen.get(p.name, 0) + 1
        names.append(p.name if seen[p.name] == 1 else f"{p.name}#{seen[p.name]}")
    for p, n in zip(players, names):
        p.name = n
    return names


async def run_rounds(args, console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gdl.gdl2 import RANDOM, chooser_indices, is_gdl2, random_index
    from gdl.kif import GdlError, decode_bytes

    from .players import PlayerError, PlayerSpecError, make_player
    from .rules import RulesError, read_rules
    from .runner import MatchError, run_match

    if args.rounds < 1:
        raise MatchUsageError("--rounds must be at least 1")
    if not (args.start > 0 and args.play > 0):
        raise MatchUsageError("--start and --play must be positive whole numbers of seconds")
    path = _rules_path(args.rules)
    try:  # as gdl.kif.read_rules_file reads a sheet; read_rules tells KIF from Prolog syntax
        text = decode_bytes(path.read_bytes(), str(path))
    except OSError as e:
        raise MatchUsageError(f"cannot read {path}: {e.strerror or e}") from None
    except GdlError as e:
        raise MatchUsageError("; ".join(str(p) for p in e.problems[:1])) from None
    try:
        rules_text, description = read_rules(text, str(path))
    except RulesError as e:
        raise MatchUsageError(f"{path}: invalid rules:\n{e}") from None
    n_roles = len(description.roles)
    chance = random_index(description.roles) if is_gdl2(description) else None
    if chance is None and len(args.players) != n_roles:
        raise MatchUsageError(f"{path.name} has {n_roles} role{'s' * (n_roles != 1)}; "
                              f"give {n_roles} players, not {len(args.players)}")
    if chance is not None:
        choosers = [str(description.roles[i]) for i in chooser_indices(description.roles)]
        if len(args.players) != len(choosers):
            k = len(choosers)
            raise MatchUsageError(f"{path.name} has {k} role{'s' * (k != 1)} with players ({' '.join(choosers)}) "
                                  f"and the role {RANDOM}, which the referee moves: give {k} "
                                  f"player{'s' * (k != 1)}, not {len(args.players)}")
    game = re.sub(r"[^A-Za-z0-9_-]", "_", path.stem)  # part of match ids: one word
    run = args.run or str(int(time.time() * 1000))
    if not re.fullmatch(r"[A-Za-z0-9_-]+", run):
        raise MatchUsageError("--run takes letters, digits, _ and - only")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MatchUsageError(f"cannot create {out}: {e.strerror or e}") from None
    players = []
    try:
        for k, spec in enumerate(args.players):
            if spec.strip() == "human":
                raise MatchUsageError("a person plays through the web page (ggp-persona web); "
                                      "here use persona:NAME|FILE, http://HOST:PORT or random")
            try:
                players.append(make_player(spec, log_dir=out / "players", seed=args.seed * 1000 + k,
                                           use_engine=not args.no_engine))
            except PlayerSpecError as e:
                raise MatchUsageError(str(e)) from None
        # reachability and names, warm processes: all at once, before any clock runs; the
        # first failure (an unreachable player) stops the others
        tasks = [asyncio.ensure_future(p.prepare()) for p in players]
        done_tasks, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = [t.exception() for t in done_tasks if t.exception() is not None]
        if failed:
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            e = failed[0]
            raise MatchUsageError(e.detail or str(e)) if isinstance(e, PlayerError) else e
        names = _unique_names(players)

        cancel = asyncio.Event()
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, cancel.set)
        except (NotImplementedError, RuntimeError):
            pass
        done = completed_rounds(out, f"match.{game}.{run}.", rules_text)
        console.print(f"run {run}: {args.rounds} round{'s' * (args.rounds != 1)} of {game}"
                      + (f", {len(done)} already played" if done else "")
                      + f" (after an interruption, resume with --run {run})")
        matches = []
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as progress:
            task = progress.add_task(f"{game}", total=args.rounds)
            for r in range(args.rounds):
                if cancel.is_set():
                    break
                order = rotation(len(players), r)   # player per chooser role
                seated = [players[k] for k in order]
                if chance is not None:
                    order = order[:chance] + [None] + order[chance:]   # player per role
                match_id = f"match.{game}.{run}.{r + 1}"
                if match_id in done:
                    goals, names_then = done[match_id]
                    if names_then != _names_per_role(seated, chance):
                        raise MatchUsageError(f"{match_id} in {out} was played by {names_then}, not by "
                                              f"{_names_per_role(seated, chance)}: resume with the same "
                                              f"players in the same order, or choose another --run")
                    matches.append({"order": order, "goals": goals, "id": match_id})
                    progress.advance(task)
                    continue

                def on_event(ev, r=r, seated=seated):
                    who = " vs ".join(p.name for p in seated)
                    if ev["type"] == "move":
                        progress.update(task, description=f"{game} {r + 1}/{args.rounds}: {who}, step {ev['ply']}")
                    elif ev["type"] == "start":
                        progress.update(task, description=f"{game} {r + 1}/{args.rounds}: {who}")

                try:
                    record = await run_match(text, seated, start_clock=args.start, play_clock=args.play,
                                             match_id=match_id, scramble=args.scramble, seed=args.seed + r,
                                             out_dir=out, on_event=on_event, cancel=cancel,
                                             game_meta_url=repository_url(path), referee=args.referee)
                except MatchError as e:
                    raise MatchUsageError(str(e)) from None
                goals = record.get("goalValues") if record.get("isCompleted") else None
                matches.append({"order": order, "goals": goals, "id": match_id})
                seat_names = _names_per_role(seated, chance)
                outcome_text = "aborted" if goals is None else " ".join(
                    f"{seat_names[j]}={g}" if j != chance else f"{RANDOM} (referee)={g}" for j, g in enumerate(goals))
                progress.console.print(f"{match_id}: {outcome_text}")
                progress.advance(task)
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass
        chance_row = f"{RANDOM} (referee)" if chance is not None and _goal_of_random(description) else None
        _print_table(results_table(names, matches, chance, chance_row), console)
        console.print(f"records in {out}/ (check them with: ggp-persona replay {out})")
        return 130 if cancel.is_set() else 0
    finally:
        for p in players:
            try:
                await p.close()
            except Exception as e:
                console.print(f"closing {p.name}: {e}")


def cmd_match(args) -> int:
    from rich.console import Console
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # Our personas' own fallbacks and notes are in their records (DIR/players); only the
    # runner's findings and real failures go to the terminal.
    logging.getLogger("ggp.server").setLevel(logging.ERROR)
    console = Console(stderr=False)
    return asyncio.run(run_rounds(args, console))
