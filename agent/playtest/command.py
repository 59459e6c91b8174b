"""``ggp-persona playtest RULES [VARIANT...]``: parse the request, validate every variant and
persona before anything is played, run, and write the report."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

# Imports inside functions: `ggp-persona` builds every subcommand's parser when it starts
# (agent/cli.py imports this module for add_arguments), so the search, the runs, the report
# and matplotlib are imported only when `playtest` runs.


HELP = "play a game and its variants with personas; write an HTML report"
GENERIC = "finisher,rusher,survivor,attacker,collector,completionist"
AGREEMENT_SEEDS = 5


class PlaytestError(ValueError):
    """Bad input: one clear message, exit status 2."""


def add_arguments(p) -> None:
    p.add_argument("rules", metavar="RULES", help="the game's .kif rule sheet (the base variant)")
    p.add_argument("variants", metavar="VARIANT", nargs="*",
                   help="another .kif rule file, or a .toml edit file (name, add, remove)")
    p.add_argument("--variant", dest="inline", action="append", default=[], metavar="'NAME: EDITS'",
                   help="an initial-state edit, e.g. 'nopawn: -(cell 1 2 white) +(cell 1 3 white)'")
    p.add_argument("--personas", default=GENERIC,
                   help=f"comma-separated preset names or persona files (default: {GENERIC})")
    p.add_argument("--runs", type=int, default=50, help="seeded runs per persona and variant (default 50)")
    p.add_argument("--limit", default="1000",
                   help="simulations per decision; several (100,1000,10000) sweep skill (default 1000)")
    p.add_argument("--opponent", default="champion",
                   help="champion (default), random, a preset name or a persona file")
    p.add_argument("--opponent-limit", type=int, default=None,
                   help="the opponent's simulations per decision (default: the persona's)")
    p.add_argument("--role", default=None, help="the role the personas play (default: the first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-plies", type=int, default=1000, help="stop a run after this many plies")
    p.add_argument("--agreement-states", type=int, default=40,
                   help="decisions per persona and variant replayed for the agreement matrix (default 40)")
    p.add_argument("--agreement-seeds", type=int, default=AGREEMENT_SEEDS,
                   help="seeded searches per replayed decision; the judge's choice is their most "
                        f"frequent move (default {AGREEMENT_SEEDS}; 1 = persona-model 5.1's single search)")
    p.add_argument("--workers", type=int, default=None, help="local processes (default: cores; 0 = in process)")
    p.add_argument("--scheduler", default=None, help="a Dask scheduler, tcp://HOST:PORT")
    p.add_argument("--title", default=None)
    p.add_argument("--out", required=True, help="output folder: report.html, PNGs, data, run cache")


def _utility_structure(players, engine, role: int) -> dict:
    """Per persona, its utility and the weights that are inert in this game (the report
    explains non-separation from the rules' structure with them)."""
    from agent.search import features as F
    from .metrics import inert_weights
    cal = F.calibrate(engine)
    utilities = {p.label: (p.persona.utility_lambda, dict(p.persona.utility_weights)) for p in players}
    inert = {p.label: inert_weights(p.persona.utility_weights, cal.lo[role], cal.hi[role])
             for p in players if p.persona.utility_weights}
    return {"utilities": utilities, "inert": inert}


def _personas(spec: str, limits: list):
    from agent.persona import PersonaError, load_persona
    from .runner import Player
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise PlaytestError("--personas: no persona given")
    out = []
    for n in names:
        try:
            pe = load_persona(n)
        except PersonaError as e:
            raise PlaytestError(str(e)) from None
        for lim in limits:
            label = pe.name if len(limits) == 1 else f"{pe.name}@{lim}"
            if any(p.label == label for p in out):
                raise PlaytestError(f"persona {label} is listed twice")
            out.append(Player(label, pe, lim))
    return out


def _limits(text: str) -> list:
    try:
        limits = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise PlaytestError(f"--limit {text!r}: write numbers, e.g. 100 or 100,1000") from None
    if not limits or any(x < 1 for x in limits):
        raise PlaytestError("--limit: every limit must be at least 1")
    return limits


def cmd_playtest(args) -> int:
    from agent.persona import PersonaError, load_persona
    from gdl.terms import render

    # Welch on nearly constant samples makes scipy warn about precision; the page says
    # where samples are constant, so the warning is noise on the console
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")
    from . import heatmap, report, runner, variants as V
    from .play import engine_for

    if args.runs < 1 or args.agreement_states < 0 or args.max_plies < 1 or args.agreement_seeds < 1:
        raise PlaytestError("--runs, --max-plies and --agreement-seeds must be at least 1, "
                            "--agreement-states at least 0")
    limits = _limits(args.limit)
    players = _personas(args.personas, limits)
    opponent = "random"
    if args.opponent != "random":
        try:
            opponent = load_persona(args.opponent)
        except PersonaError as e:
            raise PlaytestError(f"--opponent: {e}") from None
    try:
        base = V.base_variant(args.rules)
        vs = [base] + [V.from_argument(base, a) for a in args.variants] + \
             [V.inline_variant(base, s) for s in args.inline]
    except V.VariantError as e:
        raise PlaytestError(str(e)) from None
    names = [v.name for v in vs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PlaytestError(f"two variants are named {dup[0]}: give one a name (TOML name or NAME: prefix)")

    print(f"validating {len(vs)} variant(s) ...", file=sys.stderr)
    cautions, props, boards = {}, {}, {}   # per variant: check_variant's warnings
    base_engine = engine_for(base.rules_text, base.key)
    roles = [render(r) for r in base_engine.roles]
    role = 0
    if args.role is not None:
        if args.role not in roles:
            raise PlaytestError(f"--role {args.role}: the roles are {', '.join(roles)}")
        role = roles.index(args.role)
    for v in vs:
        try:
            engine = engine_for(v.rules_text, v.key)
        except Exception as e:     # grounding or reasoner failure: name the variant
            raise PlaytestError(f"variant {v.name}: cannot build an engine: {e}") from None
        if [render(r) for r in engine.roles] != roles:
            raise PlaytestError(f"variant {v.name} has roles {[render(r) for r in engine.roles]}, "
                                f"the base has {roles}: compare variants of one game")
        try:
            cautions[v.name] = V.check_variant(v, base_engine, engine)
        except V.VariantError as e:
            raise PlaytestError(str(e)) from None
        props[v.name] = runner.variant_properties(v)
        try:
            boards[v.name] = heatmap.boards(V.parse(v.rules_text, v.source), engine)
        except ImportError:
            boards[v.name] = []
        print(f"  {v.name}: ok ({engine.info.get('engine', 'engine')}); "
              f"{len(cautions[v.name])} warning(s)", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for v in vs:      # a designer can take any variant's rules from here
        from agent.matchlog import atomic_write_bytes
        atomic_write_bytes(out / f"variant_{v.name}.kif", v.rules_text.encode())
    setup = runner.Setup(variants=vs, players=players, role=role, opponent=opponent,
                         opponent_limit=args.opponent_limit, runs=args.runs, seed=args.seed,
                         max_plies=args.max_plies, agreement_states=args.agreement_states,
                         agreement_seeds=args.agreement_seeds,
                         workers=args.workers, scheduler=args.scheduler, out=out,
                         role_name=roles[role],
                         opponent_label=("no one (a one-player game)" if len(roles) == 1 else
                                         "uniformly random moves" if opponent == "random" else
                                         f"{opponent.name} (limit {args.opponent_limit or 'as the persona'})"),
                         extra={"boards": boards, **_utility_structure(players, base_engine, role)})
    runs = runner.play_all(setup)
    hits, alike = runner.agreement_all(setup, runs) if args.agreement_states else ({}, {})
    from .metrics import agreement_matrix
    agr = agreement_matrix(hits, [p.label for p in players], alike)
    game = Path(args.rules).stem
    title = args.title or f"Playtest: {game}"
    intro = (f"{len(players)} persona(s) x {len(vs)} variant(s) x {args.runs} seeded runs "
             f"(seed {args.seed}), limit {args.limit} simulations per decision, persona in role "
             f"{roles[role]} against {setup.opponent_label}. Agreement from up to "
             f"{args.agreement_states} decisions per persona and variant, each judged by the "
             f"modal choice of {args.agreement_seeds} seeded search(es).")
    if args.runs < 50 or max(limits) < 1000:
        intro += (" This is smaller than the default size (50 runs, limit 1000), so intervals are "
                  "wider and the search weaker than in a full-size playtest.")
    page = report.build(setup, runs, agr, props, cautions, title, intro)
    print(f"wrote {page}")
    return 0
