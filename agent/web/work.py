"""The web page's reasoner work, run in worker processes (``Workers``).

pyswip binds a process's Prolog to the thread that first used it, so the reasoner work of
the page (board detection, click maps, the persona's advice, replays) runs in processes of
its own.  Every function here is called in a worker process with plain, picklable
arguments (rule texts, fact texts, the ``BoardView`` found once per game) and returns plain
data; each worker keeps its own state machines per game (``_machine``), so the first call
for a game in a worker loads its rules and later calls reuse them.

``Workers`` keeps separate pools so that no person waits on another: positions of the
matches being played (fast, one at a time per match), game pages (loading a game's rules
and finding its boards), replays, their checks on the rules, and advice.  A worker that
dies (out of memory) breaks only its pool, which is started anew.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import random
import re
import time
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from agent.persona import load_persona, persona_files, preset_names   # plain Python, as the web app's own
from agent.reasoner.statemachine import CachedStateMachine
from gdl.board import detect_board
from gdl.gdl2 import is_gdl2
from gdl.kif import parse_rules, parse_term
from gdl.terms import render, render_spaced

from . import boardview as bv
from . import confidence, marks

# Imports inside functions: SWI-Prolog (pyswip binds it to the thread that first uses it), the
# engines and search (numba), the GDL-II belief and the modelling stack are loaded in the
# worker processes that run these functions, never in the web server's own process.

MAX_GAMES = 8           # state machines kept per worker process
ADVICE_MAX_SECONDS = 30.0
ADVICE_GROUND_SECONDS = 10.0


# ------------------------------------------------------------------ worker side
_machines: OrderedDict = OrderedDict()   # rules digest -> (description, state machine)
_engines: OrderedDict = OrderedDict()    # rules digest -> (engine, kind) for the search


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


def _machine(text: str, title: str = "rules"):
    from agent.reasoner.prolog import PrologReasoner
    key = digest(text)
    if key in _machines:
        _machines.move_to_end(key)
        return _machines[key]
    desc = parse_rules(text, title)
    sm = CachedStateMachine(PrologReasoner(desc), maxsize=20_000)
    _machines[key] = (desc, sm)
    while len(_machines) > MAX_GAMES:
        _, (_, old) = _machines.popitem(last=False)
        _close(old)
    return desc, sm


def _close(sm) -> None:
    for obj in (sm, getattr(sm, "base", None), getattr(sm, "sm", None)):
        close = getattr(obj, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                pass


def load_game(text: str, title: str) -> dict:
    """Roles and boards of a game (found from the initial state and a few random walks);
    whether it is a GDL-II game, and its initial state (fact texts: the rules give it to
    every role, so a GDL-II page may draw it)."""
    desc, sm = _machine(text, title)
    return {"roles": [str(r) for r in desc.roles], "view": bv.build_view(desc, sm),
            "gdl2": is_gdl2(desc), "init": sorted(render(f) for f in sm.initial_state())}


def preview(text: str, title: str, view, plies: int) -> dict:
    """The position after ``plies`` random joint moves, drawn."""
    _, sm = _machine(text, title)
    return bv.render_position(view, bv.random_position(sm, plies))


def position(text: str, title: str, view, state_texts, prev_texts, me: int, mine: list,
             last_moves=None) -> dict:
    """Boards, other facts and the click map of the person's legal moves ``mine``."""
    _, sm = _machine(text, title)
    st = bv.parse_state(state_texts)
    prev = bv.parse_state(prev_texts) if prev_texts else None
    # the board turned for a person whose side is at its top; the last move's cells marked,
    # the winning line at the end and a piece in check
    last = bv.changed_cells(view, prev, st)
    found = board_marks(sm, view, st, prev, last)
    pos = bv.render_position(view, st, last, flip=bv.flipped(view, me), marks=found)
    pos["marks"] = found
    pos["clicks"] = bv.click_map(view, sm, st, me, mine) if mine else []
    return pos


def board_marks(sm, view, state, prev, last=()) -> dict:
    """The first board's winning line (a terminal state) and pieces in check
    (``agent.web.marks``), as lists of ``[x, y]``."""
    if not view.specs:
        return {"win": [], "check": []}
    spec = view.specs[0]
    win = marks.winning_cells(sm, spec, state, last, view.owners, view.roles)
    check = marks.check_cells(sm, spec, view.owners, view.roles, state, prev)
    return {"win": [list(c) for c in win], "check": [list(c) for c in check]}


def person_position(view, init_texts, step_texts, own_move, me: int, mine: list) -> dict:
    """A GDL-II page's position: drawn from the initial state and the person's percepts of
    each step (``step_texts``, oldest first) alone (``boardview.person_position``), and the
    click map of the person's legal moves ``mine`` from the cells the moves name (never by
    trying them on a state: the true state is not this page's to read)."""
    steps = [bv.parse_state(ps) for ps in step_texts]
    pos = bv.person_position(view, bv.parse_state(init_texts), steps, own_move, flip=bv.flipped(view, me))
    pos["clicks"] = bv.click_map(view, None, None, me, mine) if mine else []
    return pos


def _engine(text: str, title: str, hint: str | None = None):
    """The fastest engine that plays the game (compiled, else non-ground, else Prolog), as
    the persona plays it; kept per worker.  Grounding gets ``ADVICE_GROUND_SECONDS`` (a game
    that does not ground would otherwise hold the advice for a minute); ``hint``: the kind
    another worker found for this game (``nonground``: do not try grounding again)."""
    key = digest(text)
    if key in _engines:
        _engines.move_to_end(key)
        return _engines[key]
    desc, sm = _machine(text, title)
    engine, kind = sm, "Prolog"
    try:
        from agent.engine import load_engine
        e = load_engine(desc, budget_seconds=ADVICE_GROUND_SECONDS,
                        engine="nonground" if hint == "nonground" else "auto")
        if type(e).__name__ != "PrologReasoner" and e.initial_state() == sm.initial_state():
            engine, kind = e, str((getattr(e, "info", {}) or {}).get("engine", "compiled"))
        elif type(e).__name__ == "PrologReasoner":
            e.close()
    except Exception:
        pass
    _engines[key] = (engine, kind)
    while len(_engines) > 2:    # compiled engines are large
        _engines.popitem(last=False)
    return engine, kind


def advice(text: str, title: str, view, state_texts, role: int, persona_spec: str,
           seconds: float, engine_hint: str | None = None) -> dict:
    """The persona's view of the position for ``role``: its search at its own limit (the
    fewer of its ``limit`` simulations and ``seconds``, as in play, on the engine it plays
    with), the moves sorted by what it would play (the choice is by Q)."""
    import numpy as np

    from agent.search import SearchSettings, search
    desc, sm = _machine(text, title)
    state = bv.parse_state(state_texts)
    if sm.is_terminal(state):
        return {"over": True, "message": "The match is over: there is no move to play in this position."}
    legal = sm.legal_moves(state, role)
    persona = load_persona(persona_spec)
    engine, kind = _engine(text, title, engine_hint)
    # loads the compiled search code, untimed
    search(engine, state, role, persona, SearchSettings(seed=0, limit=2))
    t0 = time.monotonic()
    res = search(engine, state, role, persona,
                 SearchSettings(seed=0, limit=persona.limit, seconds=min(max(seconds, 0.1), ADVICE_MAX_SECONDS)))
    elapsed = time.monotonic() - t0
    q, visits = np.asarray(res.q, dtype=float), np.asarray(res.visits)
    # Its choice rule (spec 2.7, as it plays live): among the moves with enough visits to
    # compete, the best Q, or any move within its nice threshold of it; with probability
    # random_error any legal move instead.
    from agent.search.params import MIN_VISIT_SHARE
    compete = visits >= max(1, MIN_VISIT_SHARE * visits.max()) if visits.max() > 0 else np.zeros(len(q), bool)
    best = int(np.flatnonzero(compete)[np.argmax(q[compete])]) if compete.any() else None
    nice = float(getattr(persona, "nice_threshold", 0.0) or 0.0)
    likely = {i for i in range(len(q)) if best is not None and compete[i] and q[best] - q[i] <= nice}
    order = sorted(range(len(res.moves)), key=lambda i: (i != best, i not in likely, not compete[i],
                                                           visits[i] == 0, -q[i], -visits[i]))
    texts = [render_spaced(m) for m in res.moves]
    # the moves named as the buttons name them (one labelling for both: ``bv.move_names``)
    names = bv.move_names(view, sm, state, role, texts)
    choice = render_spaced(res.moves[best]) if best is not None else render_spaced(res.move)
    drawn = render_spaced(res.move)
    return dict(_advice_rows(desc, view, names, texts, q, visits, best, likely, order, res.proven,
                             int(res.simulations), len(legal)),
                over=False, role=role, role_name=str(desc.roles[role]), simulations=int(res.simulations),
                limit=int(persona.limit), seconds=round(elapsed, 1), engine=kind, legal=len(legal),
                choice=choice, choice_label=names.get(choice) or bv.move_label(view, choice),
                random_error=round(float(getattr(persona, "random_error", 0.0) or 0.0), 3),
                drawn=drawn, drawn_label=names.get(drawn) or bv.move_label(view, drawn))


def _advice_rows(desc, view, names: dict, texts: list, q, visits, best, likely: set, order: list,
                 proven, simulations: int, legal: int) -> dict:
    """The advice's moves with their 95 % intervals (``confidence``): the moves the search
    cannot tell from its choice first, unranked, with a sentence that says so; ``also``:
    the moves as likely for the persona (its own tie rule), when they are told apart."""
    lo, hi = confidence.goal_bounds(desc)
    pm, tied = confidence.judge(q, visits, best, lo, hi, proven)
    rows = [{"move": m, "label": names.get(m) or bv.move_label(view, m), "q": round(float(q[i]), 1),
             "pm": None if pm[i] is None else round(pm[i], 1), "visits": int(visits[i]),
             "choice": i == best, "likely": i in likely, "tied": len(tied) > 1 and i in tied}
            for i, m in enumerate(texts)]
    untried = sum(1 for v in visits if v == 0)
    note = confidence.verdict(sorted(rows[i]["label"] for i in tied), untried, legal,
                              tuple(int(visits[i]) for i in tied))
    ordered = confidence.rows_in_order(rows, tied, order)
    return {"moves": ordered[:max(10, len(tied))], "uncertain": note,
            "also": [r["label"] for r in ordered if r["likely"] and not r["choice"] and not r["tied"]][:6]}


HIDDEN_SEED = 0


def advice_hidden(text: str, title: str, view, steps: list, role: int, legal_texts: list,
                  persona_spec: str, seconds: float, engine_hint: str | None = None) -> dict:
    """The persona's advice in a GDL-II game, from the person's view alone: ``steps`` are
    the person's (own move text or None, percept texts) of each step, and nothing else of
    the match reaches this function.  The belief of the server's GDL-II player
    (``agent.hidden.belief``: complete histories consistent with these moves and percepts,
    the unseen moves uniform) is rebuilt from them, and its most likely states are searched
    by the persona (``agent.hidden.search.ensemble``: the persona's own search on each
    state, the Q-values pooled), as it plays a GDL-II match itself."""

    import numpy as np

    from agent.hidden.belief import Belief
    from agent.hidden.prior import UniformPrior
    from agent.hidden.search import ensemble
    from agent.search import SearchSettings, search
    desc, sm = _machine(text, title)
    persona = load_persona(persona_spec)
    t0 = time.monotonic()
    budget = min(max(seconds, 0.5), ADVICE_MAX_SECONDS)
    belief = Belief(sm, role, UniformPrior(), rng=random.Random(HIDDEN_SEED))
    for own, percepts in steps:
        belief.observe(parse_term(own) if own else None, bv.parse_state(percepts),
                       deadline=time.monotonic() + budget / 2)
    dist = belief.distribution()
    believed = time.monotonic() - t0
    legal = [parse_term(m) for m in legal_texts]
    engine, kind = _engine(text, title, engine_hint)   # the search's engine; the belief reads sees on Prolog
    # loads the search code, untimed
    search(engine, dist[0][0], role, persona, SearchSettings(seed=0, limit=2, solver=False))
    t1 = time.monotonic()
    left = max(0.2, budget - believed)
    res = ensemble(engine, dist, role, legal, persona, seed=HIDDEN_SEED, deadline=time.monotonic() + left,
                   search_fn=search, limit=persona.limit)
    elapsed = believed + time.monotonic() - t1
    q, visits = np.asarray(res["q"], dtype=float), np.asarray(res["visits"])
    best = legal.index(res["move"])
    # as it plays: moves within TIE of the best pooled value are drawn among at random
    from agent.hidden.search import TIE
    likely = {i for i in range(len(legal)) if visits[i] > 0 and q[i] >= q.max() - TIE} | {best}
    order = sorted(range(len(legal)), key=lambda i: (i != best, i not in likely, visits[i] == 0, -q[i], -visits[i]))
    texts = [render_spaced(m) for m in legal]
    names = bv.move_names(view, None, None, role, texts)     # from the cells the moves name
    choice = render_spaced(legal[best])
    label = names.get(choice) or bv.move_label(view, choice)
    return {**_advice_rows(desc, view, names, texts, q, visits, best, likely, order, None,
                           int(res["simulations"]), len(legal)),
            "over": False, "hidden": True, "role": role, "role_name": str(desc.roles[role]),
            "simulations": int(res["simulations"]), "limit": int(persona.limit), "seconds": round(elapsed, 1),
            "engine": kind, "legal": len(legal), "choice": choice, "choice_label": label,
            "random_error": round(float(getattr(persona, "random_error", 0.0) or 0.0), 3),
            "drawn": choice, "drawn_label": label,
            "states": len(dist), "searched": int(res.get("samples", 0)),
            "histories": len(belief.particles), "lenient": bool(belief.lenient)}


_PATH = re.compile(r"(?<![\w:/.])(?:[A-Za-z]:|\.{1,2})?(?:[\\/][^\s'\",\\/:]+)+[\\/]?")


def clean_message(e) -> str:
    """An error as a person reads it: no Python class names or traceback text, no paths on
    this machine (a file is named by its last part)."""
    msg = str(e) if not isinstance(e, str) else e
    # the folders searched are the server's business: say where the rules were looked for
    msg = re.sub(r"\bnot found in .*$", "not found among this server's games (its --games folders)", msg, flags=re.S)
    msg = _PATH.sub(lambda m: re.split(r"[\\/]", m.group(0).rstrip("/\\"))[-1] or "a folder", msg)
    msg = re.sub(r"\[Errno \d+\]\s*", "", msg)
    msg = re.sub(r"\b[A-Z][A-Za-z]*(Error|Exception)\b:?\s*", "", msg).strip()
    msg = " ".join(line.strip() for line in msg.splitlines() if line.strip())
    return (msg[:300] + "…") if len(msg) > 300 else (msg or "the record could not be read")


def _library(folders):

    from agent.archive import GameLibrary
    folders = [Path(p) for p in folders]
    repos = [p for p in folders if not (p / "games").is_dir()] + [p.parent for p in folders if (p / "games").is_dir()]
    return GameLibrary(repositories=repos, game_dirs=folders)


def replay(data: dict, source: str, folders) -> dict:
    """The steps of a recorded match drawn on its board (the record's own states; the check
    on the rules is ``replay_verdict``)."""
    from agent.archive import _Terms
    from agent.reasoner.prolog import PrologReasoner
    desc = _library(folders).description(data)
    terms = _Terms()
    raw_states = data.get("states") or []
    if not isinstance(raw_states, list) or not raw_states:
        raise ValueError("the record has no states")
    states = [terms.state(t) for t in raw_states]
    moves = data.get("moves") or []
    passes = bv.pass_moves(moves)
    # who moved in each step of the record: the roles whose move is not a pass
    trans = [(states[i], tuple(r for r, m in enumerate(moves[i]) if bv._bare(str(m)) not in passes), states[i + 1])
             for i in range(min(len(moves), len(states) - 1)) if isinstance(moves[i], list)]
    sm = CachedStateMachine(PrologReasoner(desc), maxsize=20_000)
    try:
        extra, more = bv.sample_walks(sm, walks=2, steps=60, seconds=1.5) if len(states) < 40 else ([], [])
        view = bv.view_from_specs(detect_board(desc, states + extra), desc.roles, trans + more, sm, desc)
        # the last step's winning line and check (each step's would cost a search each)
        final = board_marks(sm, view, states[-1], states[-2], bv.changed_cells(view, states[-2], states[-1])) \
            if len(states) > 1 else {}
    finally:
        _close(sm)
    roles = [str(r) for r in (data.get("gameRoleNames") or [])] or [str(r) for r in desc.roles]
    percepts = data.get("x-percepts")     # GDL-II: per role, its percepts of each step
    percepts = percepts if isinstance(percepts, list) and all(isinstance(p, list) for p in percepts) else None

    def seen(i):
        if percepts is None or i == 0:
            return None
        return [[bv.words(str(t)) for t in (per[i - 1] if i - 1 < len(per) and isinstance(per[i - 1], list) else [])]
                for per in percepts]
    steps = []
    for i, st in enumerate(states):
        hl = bv.changed_cells(view, states[i - 1], st) if i > 0 else []
        joint = moves[i - 1] if i > 0 and i - 1 < len(moves) else None
        named = None
        if isinstance(joint, list):
            named = [{"role": roles[r] if r < len(roles) else str(r), "move": str(m),
                      "label": bv.move_label(view, str(m)), "noop": bv._bare(str(m)) in passes}
                     for r, m in enumerate(joint)]
        steps.append({"moves": joint, "named": named, "percepts": seen(i),
                      **bv.render_position(view, st, hl, marks=final if i == len(states) - 1 else None)})
    return {"match_id": str(data.get("matchId") or "?"), "roles": roles,
            "players": data.get("playerNamesFromHost"), "goals": data.get("goalValues"),
            "completed": bool(data.get("isCompleted")), "steps": steps, "legend": bv.legend(view)}


def replay_verdict(data: dict, source: str, folders) -> str:
    """Every move legal and every state reproduced on the rules?  (Prolog first, the
    compiled engine where Prolog runs out of its limits, as the match referee does.)"""
    from agent.archive import Record, Replayer
    verdict = Replayer(_library(folders), engine="standby").replay(Record(source, data))
    if verdict.ok:
        return "every move legal and every state reproduced on the rules"
    return clean_message(verdict.problem or "not checked")


def warm() -> bool:
    """Imports the reasoner code in a fresh worker (so the first real call is quick)."""
    from agent.reasoner import prolog  # noqa: F401
    from gdl import board  # noqa: F401
    return True


# ------------------------------------------------------------------ server side
class Workers:
    """Pools of worker processes by kind of work: ``play`` (positions of matches being
    played), ``page`` (game pages: loading rules, previews), ``replay`` (drawing a record's
    steps), ``check`` (checking a record on its rules: long for a long match) and
    ``advice`` (the persona's search) and ``style`` (fitting a person's model: one at a time).  Work of one kind never waits on another kind's.
    Processes start on first use (``warm`` starts one per pool)."""

    SIZES = {"play": 2, "page": 2, "replay": 1, "check": 1, "advice": 2, "style": 1}

    def __init__(self, sizes: dict | None = None):
        self.sizes = dict(self.SIZES, **(sizes or {}))
        self.ctx = multiprocessing.get_context("spawn")   # no fork of a process with threads
        self.pools: dict = {}

    def pool(self, kind: str) -> ProcessPoolExecutor:
        p = self.pools.get(kind)
        if p is None:
            p = self.pools[kind] = ProcessPoolExecutor(self.sizes[kind], mp_context=self.ctx)
        return p

    def warm(self) -> None:
        for kind in self.sizes:
            if kind != "style":      # a fit is rare: its worker starts when one is asked for
                self.pool(kind).submit(warm)

    async def run(self, kind: str, fn, *args):
        loop = asyncio.get_running_loop()
        pool = self.pool(kind)
        try:
            return await loop.run_in_executor(pool, fn, *args)
        except BrokenProcessPool:
            # the worker died (memory, a crash in native code): a new pool for the next call
            if self.pools.get(kind) is pool:
                self.pools.pop(kind, None)
                pool.shutdown(wait=False, cancel_futures=True)
            raise RuntimeError("the worker doing this ran out of memory or crashed; try again") from None

    def shutdown(self) -> None:
        """Stops the workers at once (a replay still running is not waited for)."""
        for p in self.pools.values():
            procs = list((getattr(p, "_processes", None) or {}).values())
            p.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
        self.pools.clear()


# ------------------------------------------------------------------ learn my style
STYLE_PRESET_LIMIT = 200    # simulations per decision when a preset persona is scored


def learn_style(files: list, person: str, out_dir: str, cache_root: str, fits: list,
                settings: dict) -> dict:
    """Fits ``person``'s model from their own records (the fast fitter) and ranks whom they
    play most like: the models of an earlier fit of the game (the first of the ``fits``
    folders that applies to these rules), or else the preset personas scored by the GA scorer.  Progress lines go to ``out_dir/progress.txt``; the
    answer is plain data for the page (also kept as ``out_dir/style.json``)."""

    import numpy as np

    from agent.modelling.dataset import load_dataset
    from agent.modelling.fast import FastSettings, run

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    progress = out / "progress.txt"

    def log(msg) -> None:
        with progress.open("a", encoding="utf-8") as f:
            f.write(str(msg).replace("\n", " ")[:300] + "\n")

    log("reading your matches")
    ds = load_dataset(files, players={person}, progress=False)
    if not ds.decisions:
        problems = (ds.summary or {}).get("problems") or []
        if problems:
            raise ValueError(f"{len(problems)} of your matches could not be replayed on their rules "
                             f"(the first: {problems[0]})")
        raise ValueError("none of your moves in these matches was a choice (every one was forced)")
    if len({d.game for d in ds.decisions}) > 1:
        raise ValueError("these matches were played on different rules")
    log(f"{len(ds.decisions)} of your decisions; fitting your model")
    res = run(ds, out / "fit", FastSettings(**settings), cache_root=cache_root, workers=0,
              progress=False, log=log, prior=list(fits))
    rows = {r["model"]: r for r in res.get("metrics", []) if r.get("label") == person}
    model = (res.get("models") or {}).get(person) or {}
    clones = persona_files(out / "fit" / "personas")
    like, like_kind = [], ""
    ml = (res.get("most_like") or {}).get(person)
    if ml:
        like_kind = f"the fitted bots of an earlier fit of this game ({Path(res['prior']).name})"
        like = [{"name": k, "per_decision": float(v)} for k, v in ml.items()]
        sure = (res.get("most_like_confidence") or {}).get(person)
    else:
        from agent.modelling.likelihood import log_probs, pad
        from agent.modelling.scoring import Scorer
        like_kind = "the preset personas"
        scores, lps = {}, {}
        for name in preset_names():
            log(f"scoring you as {name}")
            pe = load_persona(name)
            limit = min(pe.limit or STYLE_PRESET_LIMIT, STYLE_PRESET_LIMIT)
            scorer = Scorer(ds.games, seed=0, limit=limit, workers=0, progress=False,
                            cache_file=Path(cache_root) / "style-q.pkl")
            (qs,) = scorer.q([pe], ds.decisions, description=f"scoring {name}")
            scorer.save()
            Q, mask = pad(qs)
            lp = log_probs(Q, mask, [d.chosen for d in ds.decisions], pe.random_error, pe.nice_threshold, pe.kappa)
            scores[name], lps[name] = float(np.mean(lp)), lp
        like = [{"name": k, "per_decision": v} for k, v in sorted(scores.items(), key=lambda kv: -kv[1])]
        from agent.modelling.attribution import stays_first
        sure = stays_first(lps, settings.get("n_boot", 300))
    keep = ("logp", "logp_lo", "logp_hi", "argmax", "argmax_lo", "argmax_hi")
    answer = {
        "person": person, "decisions": len(ds.decisions),
        "matches": len({d.match_id for d in ds.decisions}),
        "metrics": {m: {k: r.get(k) for k in keep} for m, r in rows.items()},
        "warnings": [str(x) for x in model.get("warnings") or []],
        "like": like, "like_kind": like_kind, "like_confidence": sure,
        "clone": str(clones[0]) if clones else None,
        "report": str(out / "fit" / "report.html"),
        "stages": res.get("stages", {}),
    }
    (out / "style.json").write_text(json.dumps(answer, indent=1), encoding="utf-8")
    log("done")
    return answer
