"""``ggp-persona dataset``, ``fit`` and ``attribute``: arguments and commands.

Bad input (missing files, unknown players, unreadable label or persona files, a split that
leaves nothing to test) is one clear line and exit status 2; never a traceback.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agent.persona import PersonaError, load_persona, persona_files   # plain Python: no stack

# Imports inside functions: each subcommand (dataset, fit, the GA's fit, attribute) loads its
# own stack (numba, SWI-Prolog, matplotlib) when it runs, not when the parser is built.

CACHE_DIR = Path(".cache") / "modelling"


class ModellingUsage(ValueError):
    """Bad arguments or input files: exit status 2 with this message."""


def _records_args(p) -> None:
    p.add_argument("records", nargs="+", metavar="RECORDS",
                   help="match records: .json files, .jsonl archives, or folders of them")
    p.add_argument("--games", action="append", default=[], metavar="DIR",
                   help="a game repository laid out like games.ggp.org (DIR/<repo>/games/<key>/v<N>/); repeatable")
    p.add_argument("--game-dir", action="append", default=[], metavar="DIR",
                   help="a folder of rule sheets, DIR/<key>.kif or DIR/<key>/<key>.kif (default: games/ "
                        "when it exists); repeatable")
    p.add_argument("--game", metavar="NAME|RULES",
                   help="only records of this game (the key of its games.ggp.org URL), or a rule file to play every record on")
    p.add_argument("--player", action="append", metavar="NAME",
                   help="keep this player (as in playerNamesFromHost, after aliases); repeatable; default: all")
    p.add_argument("--alias", action="append", default=[], metavar="ALIAS=NAME",
                   help="another name of a player, e.g. ConfidenceAgent=ConfidencePlayer; repeatable")
    p.add_argument("--role", action="append", metavar="ROLE", help="keep only this role (by name); repeatable")
    p.add_argument("--labels", metavar="FILE",
                   help="CSV/TSV rows 'match id, role, label': keep labelled player-matches, the label is the class")
    p.add_argument("--drop-duplicates", action="store_true",
                   help="keep one record of each group of identical matches (same players, same moves)")
    p.add_argument("--cache", default=str(CACHE_DIR), metavar="DIR",
                   help=f"cache of replayed decisions (default {CACHE_DIR})")


def add_dataset(p) -> None:
    _records_args(p)
    p.add_argument("--json", metavar="FILE", help="also write the summary as JSON")


def add_fit(p) -> None:
    from .experiment import Settings
    d = Settings()
    _records_args(p)
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output folder: personas/*.toml, report.html, data; also the resume state")
    p.add_argument("--ga", action="store_true",
                   help="fit search personas by the genetic algorithm of persona-model 4.5 instead of the "
                        "default fast fit (4.6)")
    p.add_argument("--compare", action="append", default=[], metavar="DIR",
                   help="fast fit: show the fitted personas of this GA fit folder (same records) beside it; repeatable")
    p.add_argument("--prior", metavar="DIR",
                   help="fast fit: an earlier fit of the same game; its pooled model is the prior and baseline "
                        "(not refitted), and each player is ranked against its models")
    p.add_argument("--train-cap", type=int, default=3000, metavar="N",
                   help="fast fit: where the budget cannot give every decision 1000 simulations, model at "
                        "most N training decisions per player, spread over its matches (default 3000; 0: all)")
    p.add_argument("--limit", type=int, default=None,
                   help=f"simulations per decision (GA default {d.limit}; fast fit default: from the rules, "
                        f"at most 1000)")
    p.add_argument("--population", type=int, default=d.population, help=f"GA population (default {d.population})")
    p.add_argument("--generations", type=int, default=d.generations, help=f"at most this many generations (default {d.generations})")
    p.add_argument("--patience", type=int, default=d.patience, help=f"stop after this many generations without gain (default {d.patience})")
    p.add_argument("--subsample", type=int, default=d.subsample,
                   help=f"training decisions per generation (default {d.subsample})")
    p.add_argument("--final-size", type=int, default=d.final_size,
                   help="training decisions to rank the finalists on (default 0: all)")
    p.add_argument("--split", choices=("later", "kfold"), default=d.split,
                   help="later: the last --test-fraction of each player's matches by start time (default); "
                        "kfold: fold --fold of --folds grouped folds")
    p.add_argument("--test-fraction", type=float, default=d.test_fraction)
    p.add_argument("--folds", type=int, default=d.folds)
    p.add_argument("--fold", type=int, default=d.fold)
    p.add_argument("--test-pms", type=int, default=d.test_pms,
                   help="evaluate on at most this many test player-matches per player (default 0: all)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--thesis", action="store_true",
                   help="the GA in thesis mode: roulette, 16 genes, fitness F, kappa 0.1 (implies --ga)")
    p.add_argument("--no-pooled", action="store_true", help="do not fit the pooled persona")
    p.add_argument("--replicates", type=int, default=d.replicates,
                   help="2: re-score some test decisions with a second seed to measure Q noise")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the scoring on this Dask scheduler")
    p.add_argument("--workers", type=int, help="local worker processes (default: cores; 0: this process)")


def add_attribute(p) -> None:
    _records_args(p)
    p.add_argument("--personas", nargs="+", required=True, metavar="TOML|DIR",
                   help="fitted persona files, or folders of them (a fit's personas/ folder)")
    p.add_argument("--seed", type=int, default=0, help="experiment seed of the decision seeds (default 0)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT")
    p.add_argument("--workers", type=int)
    p.add_argument("--json", metavar="FILE", help="also write the ranking as JSON")


def _dataset(args):
    from .dataset import DatasetError, load_dataset, parse_aliases, read_labels
    for p in args.records:
        if not os.path.exists(p):
            raise ModellingUsage(f"no such file or folder: {p}")
    game_dirs = args.game_dir or ([Path("games")] if Path("games").is_dir() else [])
    try:
        aliases = parse_aliases(args.alias)
        labels = read_labels(args.labels) if args.labels else None
        return load_dataset(args.records, repositories=args.games, game_dirs=game_dirs,
                            players=set(args.player) if args.player else None,
                            roles=set(args.role) if args.role else None, labels=labels,
                            aliases=aliases, drop_duplicates=args.drop_duplicates,
                            cache_dir=Path(args.cache) / "decisions", progress=sys.stderr.isatty(),
                            game=args.game)
    except DatasetError as e:
        raise ModellingUsage(str(e)) from None


def _print_summary(ds) -> None:
    s = ds.summary
    for k, v in s["counts"].items():
        print(f"{k}: {v}")
    print("decisions per player: " + ", ".join(f"{k} {v}" for k, v in sorted(s["decisions_per_label"].items())))
    print(f"duplicate records: {s['duplicate_records']} in {len(s['duplicate_groups'])} groups "
          f"(--drop-duplicates keeps one of each)")
    for g in s["duplicate_groups"][:5]:
        print(f"  {len(g)} x {g[0]} ...")
    for p in s["problems"]:
        print(f"problem: {p}")
    for w in s["warnings"]:
        print(f"warning: {w}")


def cmd_dataset(args) -> int:
    ds = _dataset(args)
    _print_summary(ds)
    if args.json:
        from agent.matchlog import atomic_write_bytes
        atomic_write_bytes(Path(args.json), json.dumps(ds.summary, indent=1).encode())
    return 0 if ds.decisions else 1


def cmd_fit(args) -> int:
    if args.limit is not None and args.limit < 1:
        raise ModellingUsage("--limit must be at least 1")
    if not (args.ga or args.thesis):
        return _cmd_fast_fit(args)
    from .experiment import Settings, run
    from .prepare import FitError
    args.limit = Settings().limit if args.limit is None else args.limit
    if args.limit < 1 or args.population < 2 or args.generations < 1 or args.subsample < 1:
        raise ModellingUsage("--limit, --generations and --subsample must be at least 1, --population at least 2")
    if not 0 < args.test_fraction < 1:
        raise ModellingUsage("--test-fraction must lie between 0 and 1")
    if args.scheduler and not args.scheduler.startswith("tcp://"):
        raise ModellingUsage(f"--scheduler {args.scheduler}: expected tcp://HOST:PORT")
    ds = _dataset(args)
    _print_summary(ds)
    s = Settings(limit=args.limit, population=args.population, generations=args.generations,
                 patience=args.patience, subsample=args.subsample, final_size=args.final_size,
                 split=args.split, test_fraction=args.test_fraction, folds=args.folds, fold=args.fold,
                 test_pms=args.test_pms, seed=args.seed, thesis=args.thesis, replicates=args.replicates,
                 pooled=not args.no_pooled)
    try:
        res = run(ds, args.out, s, scheduler=args.scheduler, workers=args.workers,
                  progress=sys.stderr.isatty(), log=lambda m: print(m, flush=True))
    except FitError as e:
        raise ModellingUsage(str(e)) from None
    bar = res["bar"]
    print(f"report: {Path(args.out) / 'report.html'}")
    print(f"bar met for {bar['labels_meeting']} of {len(res['labels'])} players; "
          f"matrix diagonal dominant: {bar['diagonal_all']}")
    return 0


def _cmd_fast_fit(args) -> int:
    from .fast import FastSettings, run
    from .prepare import FitError
    if not 0 < args.test_fraction < 1:
        raise ModellingUsage("--test-fraction must lie between 0 and 1")
    if args.scheduler and not args.scheduler.startswith("tcp://"):
        raise ModellingUsage(f"--scheduler {args.scheduler}: expected tcp://HOST:PORT")
    for c in args.compare + ([args.prior] if args.prior else []):
        if not Path(c).is_dir():
            raise ModellingUsage(f"{c}: no such folder")
    ds = _dataset(args)
    _print_summary(ds)
    s = FastSettings(split=args.split, test_fraction=args.test_fraction, folds=args.folds, fold=args.fold,
                     test_pms=args.test_pms, seed=args.seed, pooled=not args.no_pooled, limit=args.limit or 0,
                     train_cap=max(0, args.train_cap))
    try:
        res = run(ds, args.out, s, cache_root=Path(args.cache) / "evals", scheduler=args.scheduler,
                  workers=args.workers, progress=sys.stderr.isatty(), log=lambda m: print(m, flush=True),
                  compare=args.compare, prior=args.prior)
    except FitError as e:
        raise ModellingUsage(str(e)) from None
    bar = res["bar"]
    total = sum(t["wall"] for t in res["stages"].values())
    print(f"report: {Path(args.out) / 'report.html'} ({total / 60:.1f} min)")
    print(f"bar met for {bar['labels_meeting']} of {len(res['labels'])} players; "
          f"matrix diagonal dominant: {bar['diagonal_all']}; models below random: "
          f"{', '.join(res['floor']['models_below_random']) or 'none'}")
    return 0


def _persona_files(items) -> list:
    out = []
    for it in items:
        p = Path(it)
        if p.is_dir():
            out.extend(persona_files(p))
        elif p.is_file():
            out.append(p)
        else:
            raise ModellingUsage(f"no such persona file or folder: {it}")
    if not out:
        raise ModellingUsage("no persona files (.toml) given")
    return out


def cmd_attribute(args) -> int:
    import numpy as np

    from .attribution import rank
    from .likelihood import log_probs, pad
    from .scoring import Scorer
    try:
        personas = [load_persona(p) for p in _persona_files(args.personas)]
    except PersonaError as e:
        raise ModellingUsage(str(e)) from None
    ds = _dataset(args)
    if not ds.decisions:
        raise ModellingUsage("no decisions selected in these records (check --player, --role, --labels)")
    if len({d.game for d in ds.decisions}) > 1:
        raise ModellingUsage("the records hold several games; choose one with --game")
    scores = {}
    for pe in personas:
        if pe.model is not None:     # a fast fit's model: its shared evaluations, then its formula
            from .fast import persona_log_probs
            lps = persona_log_probs(pe, ds, seed=args.seed, cache_root=Path(args.cache) / "evals",
                                    scheduler=args.scheduler, workers=args.workers, progress=sys.stderr.isatty())
            scores[pe.name] = float(np.sum(lps))
            continue
        scorer = Scorer(ds.games, seed=args.seed, limit=pe.limit, scheduler=args.scheduler,
                        workers=args.workers, progress=sys.stderr.isatty(),
                        cache_file=Path(args.cache) / "attribute-q.pkl")
        (qs,) = scorer.q([pe], ds.decisions, description=f"scoring {pe.name}")
        scorer.save()
        Q, mask = pad(qs)
        lp = log_probs(Q, mask, [d.chosen for d in ds.decisions], pe.random_error, pe.nice_threshold, pe.kappa)
        scores[pe.name] = float(np.sum(lp))
    n = len(ds.decisions)
    order = rank(scores)
    print(f"{n} decisions in {len({d.pm for d in ds.decisions})} player-matches; most likely first:")
    for i, name in enumerate(order, 1):
        print(f"{i:3d}. {name:<28} log-likelihood {scores[name]:.2f} ({scores[name] / n:.4f} per decision)")
    if args.json:
        from agent.matchlog import atomic_write_bytes
        atomic_write_bytes(Path(args.json), json.dumps({"decisions": n, "ranking": [
            {"persona": k, "loglik": scores[k], "per_decision": scores[k] / n} for k in order]}, indent=1).encode())
    return 0
