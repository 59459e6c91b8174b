"""The ``ggp-persona`` command line.

Each subcommand is two small functions in this file: ``add_<name>(subparsers)`` declares its
arguments and sets ``func``, and ``cmd_<name>(args) -> int`` does the work and returns the exit
status.  To add one, write both and list ``add_<name>`` in ``SUBCOMMANDS``.

Exit statuses: 0 success, 1 the command ran and found a failure (e.g. invalid rules),
2 usage errors (bad arguments, a missing or unreadable file).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

# Imports inside functions: each subcommand imports its own stack when it runs (numba
# kernels, SWI-Prolog, FastAPI and uvicorn, matplotlib, Dask), so that `--help`, `persona
# list` or `check` start in a fraction of a second instead of loading all of them.

PROG = "ggp-persona"


class UsageError(Exception):
    """A problem with what the user asked for: printed as one line, exit status 2."""


def _readable_file(path: str) -> str:
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    if os.path.isdir(path):
        raise UsageError(f"is a directory, not a rule file: {path}")
    if not os.access(path, os.R_OK):
        raise UsageError(f"cannot read: {path}")
    return path


# ------------------------------------------------------------------------------- check
def add_check(sub) -> None:
    p = sub.add_parser("check", help="validate a GDL or GDL-II rule sheet (KIF or Prolog syntax)",
                       description="Read and validate a GDL rule sheet, in KIF or in Prolog syntax "
                                   "(role(a). h :- b.; told apart by its content); print every "
                                   "problem as file:line:col: level: message and a one-line verdict. "
                                   "Exit status 0 when valid or only warnings, 1 when invalid.")
    p.add_argument("rules", metavar="RULES", help="path to a rule file (.kif, or .gdl/.pl in Prolog syntax)")
    p.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    path = _readable_file(args.rules)
    from gdl.validate import check_file, verdict

    try:
        _description, problems = check_file(path)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    for problem in problems:
        print(problem)
    result = verdict(problems)
    errors = sum(1 for p in problems if getattr(p, "level", "") == "error")
    warnings = sum(1 for p in problems if getattr(p, "level", "") == "warning")
    print(f"{path}: {result} ({errors} error{'s' * (errors != 1)}, "
          f"{warnings} warning{'s' * (warnings != 1)})")
    return 1 if result == "invalid" else 0


# ------------------------------------------------------------------------------- engines
ENGINES = ("prolog", "compiled", "nonground")


def _read_description(path: str):
    """The rules of ``path``, parsed and validated: rules the validator refuses are never
    played (a player that runs them anyway reads a different game, or crashes on them)."""
    from gdl.kif import GdlError, read_rules_file
    from gdl.validate import validate
    try:
        desc = read_rules_file(_readable_file(path))
    except GdlError as e:
        raise UsageError(f"{path} does not parse:\n" + "\n".join(str(p) for p in e.problems)) from None
    except RecursionError:
        raise UsageError(f"{path} does not parse: nested too deeply") from None
    except (OSError, UnicodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    try:
        errors = [p for p in validate(desc) if p.level == "error"]
    except RecursionError:
        raise CommandFailed(f"{path}: the rules are nested too deeply to check") from None
    if errors:
        more = f" (and {len(errors) - 1} more: ggp-persona check {path})" if len(errors) > 1 else ""
        raise CommandFailed(f"invalid rules, not played: {errors[0]}{more}")
    return desc


def _engine(desc, name: str, budget: float, use_cache: bool = True):
    """The named engine for ``desc``; a compiled engine that cannot be built is a failure
    of the command (exit 1) with the reason, never a silent fallback."""
    from agent.engine import load_engine
    from agent.engine.ground import GroundingError
    try:
        return load_engine(desc, engine=name, budget_seconds=budget, use_cache=use_cache)
    except GroundingError as e:
        raise CommandFailed(f"no compiled engine: {e}") from None


class CommandFailed(Exception):
    """The command ran and could not do its job: printed as one line, exit status 1."""


# ------------------------------------------------------------------------------- trace
def add_trace(sub) -> None:
    p = sub.add_parser("trace", help="replay a reference trace against one of our engines",
                       description="Re-derive every step of a ggp-trace/1 file (states, terminal, "
                                   "legal moves, goals) with our engine; print agreement per field "
                                   "and the first divergence. Exit 0 only on exact agreement.")
    p.add_argument("rules", metavar="RULES", help="the game's .kif rule sheet")
    p.add_argument("trace", metavar="TRACE", help="a ggp-trace/1 JSON file")
    p.add_argument("--engine", choices=ENGINES, default="prolog", help="default: prolog")
    p.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                   help="grounding budget of the compiled engine (default 60)")
    p.add_argument("--max-steps", type=int, default=None, help="check at most this many steps")
    p.set_defaults(func=cmd_trace)


def cmd_trace(args) -> int:
    from agent.tracecheck import check_trace, load_trace

    desc = _read_description(args.rules)
    try:
        trace = load_trace(_readable_file(args.trace))
    except (ValueError, KeyError) as e:
        raise UsageError(f"{args.trace}: {e}") from None
    want = trace.get("rules_sha256")
    with open(args.rules, "rb") as f:
        if want and hashlib.sha256(f.read()).hexdigest() != want:
            print(f"warning: {args.rules} is not the rule file the trace was made from "
                  f"(sha256 differs)", file=sys.stderr)
    sm = _engine(desc, args.engine, args.budget)
    try:
        report = check_trace(sm, trace, max_steps=args.max_steps)
    finally:
        sm.close()
    print(f"[{args.engine}] " + report.summary())
    return 0 if report.exact else 1


# ------------------------------------------------------------------------------- bench
def add_bench(sub) -> None:
    p = sub.add_parser("bench", help="random playouts per second (gdl-perf method)",
                       description="Random playouts from the initial state, uniformly random joint "
                                   "moves until terminal, then goals; a warm-up, then counted for "
                                   "--seconds. One JSON line per engine; with --engine both, a last "
                                   "line with the compiled/prolog ratio.")
    p.add_argument("rules", metavar="RULES", help="the game's .kif rule sheet")
    p.add_argument("--engine", choices=ENGINES + ("both",), default="compiled", help="default: compiled")
    p.add_argument("--seconds", type=float, default=20.0, help="counted time per engine (default 20)")
    p.add_argument("--warmup", type=float, default=5.0, help="warm-up time per engine (default 5)")
    p.add_argument("--runs", type=int, default=1, help="repeat and report the median run (default 1)")
    p.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                   help="grounding budget of the compiled engine (default 60)")
    p.add_argument("--no-cache", action="store_true", help="build the compiled engine afresh")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    from agent.bench import median_runs

    if args.seconds <= 0 or args.warmup < 0 or args.runs < 1:
        raise UsageError("--seconds must be > 0, --warmup >= 0 and --runs >= 1")
    desc = _read_description(args.rules)
    names = ("prolog", "compiled") if args.engine == "both" else (args.engine,)
    rates = {}
    for name in names:
        t0 = time.perf_counter()
        sm = _engine(desc, name, args.budget, use_cache=not args.no_cache)
        load = time.perf_counter() - t0
        try:
            fig = median_runs(sm, args.runs, seconds=args.seconds, warmup=args.warmup, seed=args.seed)
        finally:
            sm.close()
        info = getattr(sm, "info", {}) or {}
        line = {"rules": args.rules, "engine": name, **fig, "load_seconds": round(load, 3)}
        line.update({k: info[k] for k in ("source", "ground_seconds", "compile_seconds") if k in info})
        print(json.dumps(line), flush=True)
        rates[name] = fig["playouts_per_sec"]
    if len(rates) == 2:
        ratio = rates["compiled"] / rates["prolog"] if rates["prolog"] else None
        print(json.dumps({"rules": args.rules, "compiled_over_prolog": round(ratio, 1) if ratio else None}))
    return 0


# ------------------------------------------------------------------------------- warm
WARM_HELP = ("compile the engine and search code now (numba keeps it in its cache), so that the "
             "first match, web page or test after an install or upgrade does not wait for it")


def add_warm(sub) -> None:
    p = sub.add_parser("warm", help=WARM_HELP, description=WARM_HELP + ". The server does the same "
                       "in its first player process; run this where several processes would otherwise "
                       "compile the same code at once (a test run, a fleet of servers).")
    p.set_defaults(func=cmd_warm)


def cmd_warm(args) -> int:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from agent.server.worker import WARM_PARTS, warm
    t0 = time.perf_counter()
    compiled = 0
    if (os.cpu_count() or 1) > 1:
        # the two halves at once, one process each (a fresh cache: 182 s instead of 336 s on
        # 2 cores), then the whole warm-up here, which finds them in the cache
        with ProcessPoolExecutor(len(WARM_PARTS), mp_context=multiprocessing.get_context("spawn")) as pool:
            compiled = sum(pool.map(warm, [True] * len(WARM_PARTS), WARM_PARTS))
    compiled += warm()
    where = os.environ.get("NUMBA_CACHE_DIR") or "beside the code (__pycache__)"
    print(f"warm: {compiled} numba compilations in {time.perf_counter() - t0:.1f} s (a function the two "
          f"halves share counts twice); numba's cache: {where}")
    return 0


# ------------------------------------------------------------------------------- serve, replay
def add_serve(sub) -> None:
    from agent.server import cli as server_cli
    p = sub.add_parser("serve", help=server_cli.HELP, description=server_cli.HELP)
    server_cli.add_arguments(p)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from agent.server.cli import cmd_serve as serve
    from agent.server.config import ConfigError
    try:
        return serve(args)
    except ConfigError as e:
        raise UsageError(str(e)) from None


REPLAY_RULES = (
    "Rules come from the record's x-rules, else from its gameMetaURL: a games.ggp.org URL "
    "(http://games.ggp.org/<repo>/games/<key>/v<N>/) is looked up in the --games repositories; a "
    "local repository's URL (ggp-base's GameServer or Kiosk, http://127.0.0.1:9140/games/<key>/v<N>/, "
    "or any http://HOST:PORT/games/<key>/...) by its key in every --games repository (base first); "
    "either, then, in the --game-dir folders (DIR/<key>.kif or DIR/<key>/<key>.kif).")


def add_replay(sub) -> None:
    from agent import archive
    p = sub.add_parser("replay", help=archive.REPLAY_HELP,
                       description=archive.REPLAY_HELP + ". " + REPLAY_RULES)
    archive.add_arguments(p)
    p.set_defaults(func=archive.cmd_replay)


# ------------------------------------------------------------------------------- match
def add_match(sub) -> None:
    from agent.match import cli as match_cli
    p = sub.add_parser("match", help=match_cli.HELP, description=match_cli.HELP)
    match_cli.add_arguments(p)
    p.set_defaults(func=cmd_match)


def cmd_match(args) -> int:
    from agent.match.cli import MatchUsageError, cmd_match as match
    try:
        return match(args)
    except MatchUsageError as e:
        raise UsageError(str(e)) from None


# ------------------------------------------------------------------------------- persona
def add_persona(sub) -> None:
    p = sub.add_parser("persona", help="list or show personas",
                       description="Personas are TOML files of search and character parameters; "
                                   "the presets live in agent/personas/.")
    actions = p.add_subparsers(dest="persona_action", metavar="ACTION")
    ls = actions.add_parser("list", help="one line per preset persona")
    ls.add_argument("--dir", help="list the persona files of this directory instead")
    ls.set_defaults(func=cmd_persona_list)
    show = actions.add_parser("show", help="a persona, validated, as TOML")
    show.add_argument("persona", metavar="NAME|FILE", help="a preset name or a .toml file")
    show.set_defaults(func=cmd_persona_show)


def cmd_persona_list(args) -> int:
    from agent.persona import persona_list
    return persona_list(args)


def cmd_persona_show(args) -> int:
    from agent.persona import persona_show
    return persona_show(args)


# ------------------------------------------------------------------------------- web
WEB_HELP = "the web page: play any GDL game against a persona, replay recorded matches"


def add_web(sub) -> None:
    p = sub.add_parser("web", help=WEB_HELP, description=WEB_HELP + " (open http://HOST:PORT/).")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--games", action="append", default=[], metavar="DIR",
                   help="a folder of .kif rule sheets or a game repository (<repo>/games/<key>/); "
                        "repeatable; the project's games/ are always listed")
    p.add_argument("--personas", action="append", default=[], metavar="DIR",
                   help="a folder of persona TOML files (e.g. fitted ones) besides the presets; repeatable")
    p.add_argument("--log-dir", default="match_logs", help="where match records go (default match_logs)")
    p.add_argument("--fits", action="append", default=[], metavar="DIR",
                   help="an earlier fast fit (the fit command's --out folder) or a folder of them; "
                        "Learn my style tells which of its fitted bots a person plays most like; repeatable")
    p.add_argument("--start-clock", type=int, default=10, help="default start clock, whole seconds")
    p.add_argument("--play-clock", type=int, default=5, help="default play clock of the persona, whole seconds")
    p.set_defaults(func=cmd_web)


def cmd_web(args) -> int:
    for d in args.games + args.personas + args.fits:
        if not os.path.isdir(d):
            raise UsageError(f"not a folder: {d}")
    for d in args.fits:
        if not (Path(d, "results.json").is_file() or any(Path(d).glob("*/results.json"))):
            raise UsageError(f"--fits {d}: neither a fit's folder (results.json) nor a folder of fits")
    if not (0 < args.port < 65536):
        raise UsageError(f"bad port {args.port}")
    import uvicorn

    from agent.web.app import create_app
    app = create_app(args.games, args.personas, args.log_dir,
                     start_clock=args.start_clock, play_clock=args.play_clock, fits=args.fits)
    print(f"ggp-persona web: open http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


# ------------------------------------------------------------------------------- modelling
DATASET_HELP = "decisions of selected players from match records (replayed; forced and substituted moves left out)"
FIT_HELP = ("fit player models to recorded players and report against baselines: by default the fast "
            "fit of persona-model 4.6 (a choice model on shared search evaluations, written as persona "
            "files that play); --ga: the genetic algorithm of 4.5")
ATTRIBUTE_HELP = "rank fitted personas by the likelihood of a player's recorded decisions"


def add_dataset(sub) -> None:
    from agent.modelling import commands
    p = sub.add_parser("dataset", help=DATASET_HELP, description=DATASET_HELP)
    commands.add_dataset(p)
    p.set_defaults(func=cmd_modelling("cmd_dataset"))


def add_fit(sub) -> None:
    from agent.modelling import commands
    p = sub.add_parser("fit", help=FIT_HELP, description=FIT_HELP)
    commands.add_fit(p)
    p.set_defaults(func=cmd_modelling("cmd_fit"))


def add_attribute(sub) -> None:
    from agent.modelling import commands
    p = sub.add_parser("attribute", help=ATTRIBUTE_HELP, description=ATTRIBUTE_HELP)
    commands.add_attribute(p)
    p.set_defaults(func=cmd_modelling("cmd_attribute"))


def cmd_modelling(name: str):
    """The modelling command ``name``, with its input errors turned into usage errors."""
    def run(args) -> int:
        from agent.modelling import commands
        try:
            return getattr(commands, name)(args)
        except commands.ModellingUsage as e:
            raise UsageError(str(e)) from None
    return run


# ------------------------------------------------------------------------------- playtest
def add_playtest(sub) -> None:
    from agent.playtest import command
    p = sub.add_parser("playtest", help=command.HELP, description=command.HELP)
    command.add_arguments(p)
    p.set_defaults(func=cmd_playtest)


def cmd_playtest(args) -> int:
    from agent.compute import TaskError
    from agent.playtest.command import PlaytestError, cmd_playtest as run
    try:
        return run(args)
    except PlaytestError as e:
        raise UsageError(str(e)) from None
    except TaskError as e:       # a run failed: finished runs are cached, the rerun resumes
        raise CommandFailed(f"playtest stopped: {e} (finished runs are kept in "
                            f"{args.out}/cache; run the command again to resume)") from None


# ------------------------------------------------------------------------------- main
SUBCOMMANDS = [add_check, add_trace, add_bench, add_serve, add_replay, add_match,
               add_persona, add_web, add_dataset, add_fit, add_attribute, add_playtest, add_warm]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="General Game Playing agent: a GGP player server with personas.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def main(argv: list[str] | None = None) -> int:
    from agent.reasoner.statemachine import ReasonerError

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except CommandFailed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except ReasonerError as e:  # rules refused, a limit, rules that broke, no compiled engine
        print(f"{PROG}: {_one_line(e)}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{PROG}: the rules are nested too deeply", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{PROG}: out of memory", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head & co.: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
