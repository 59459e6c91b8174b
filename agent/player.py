"""The player of one match: rules in, moves out.

Runs inside a match worker process (``agent.server.worker``), which owns its reasoner:
Prolog is not thread-safe, and a process can be killed to free everything on ABORT.

Order of work, so that a legal answer always exists before anything slow starts:
  1. parse the rules, build the Prolog reasoner, compute our legal moves (the fallback);
  2. build the fast engine (``agent.engine.load_engine``; the Prolog reasoner when the
     rules cannot be compiled within budget);
  3. search (``agent.search.search``): the persona's ``limit`` simulations or the time left,
     whichever ends first; the best move so far is reported while it runs (``on_best``).

Each decision is asked of a decider (``agent.decision``): ``SearchDecider`` (the persona
search), ``agent.modelplay.ModelDecider`` (a persona with a fitted model) or
``FlatMonteCarlo`` (no search, or the search failed); ``Player.decide`` turns its
``Decision`` into the match record's entry.

Moves from the manager arrive as text in its spelling (possibly scrambled, possibly upper
case); we parse them, apply them, and answer with a term of our legal move list, rendered
ggp-base style, so the reply is spelled exactly like the rules we received.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time

from gdl.terms import render_spaced

# RulesRefused: rules we cannot play (unreadable, our role missing, invalid, refused by
# Prolog): the START gets ``busy``.  One class with the reasoners' own refusals.
from agent import code_version
from agent.decision import Decision, Situation
from agent.matchtext import parse_rules_text, resolve_joint, role_index_of
from agent.persona import load_persona
from agent.reasoner.prolog import PrologReasoner   # pyswip itself loads with the first reasoner made
from agent.reasoner.statemachine import CachedStateMachine, ReasonerError, RulesRefused, goal_vector

# Imports inside functions: the GGP server's own process imports this module (its match
# manager, the workers' entry points) and stays light; the engines and the searches (numba,
# 0.5-0.9 s to import) and a fitted model's modules (numpy, scipy) load in the worker
# process that plays, when it needs them.

log = logging.getLogger("ggp.player")
MODEL_HISTORY = 8    # steps kept for a fitted model's move features (agent.modelling.movefeatures.HISTORY)


# ------------------------------------------------------------------ personas

DEFAULT_PERSONA = "tournament"  # the champion searching until the clock, when the server names none
PONDER_MIN_LIMIT = 1_000_000    # a persona's limit from which its searches end by the clock (tournament: 10 M)


def load_persona_spec(spec):
    """The persona object for a name or file (the default preset for None)."""
    return load_persona(spec if spec is not None else DEFAULT_PERSONA)


def persona_dict(persona) -> dict:
    """Name and every parameter, JSON-ready, for the match log."""
    if persona is None:
        return {}
    if hasattr(persona, "to_dict"):
        data = persona.to_dict()
    elif dataclasses.is_dataclass(persona):
        data = dataclasses.asdict(persona)
    elif hasattr(persona, "_asdict"):
        data = persona._asdict()
    else:
        data = dict(vars(persona))
    return _jsonable(data)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "tolist"):  # numpy
        return x.tolist()
    return str(x)


# ------------------------------------------------------------------ search

def flat_monte_carlo(sm, state, role_index: int, deadline: float, rng: random.Random,
                     max_depth: int = 500):
    """A baseline (``use_search=False``) and the stand-in when the search itself fails:
    random playouts after each of our moves (others random), best mean goal wins.  Checks
    the clock every ply."""
    legal = sm.legal_moves(state, role_index)
    stats = {m: [0, 0.0] for m in legal}
    n = len(sm.roles)
    sims = 0
    while len(legal) > 1 and time.monotonic() < deadline:
        for m in legal:
            joint = [m if i == role_index else rng.choice(sm.legal_moves(state, i)) for i in range(n)]
            s = sm.next_state(state, joint)
            for _ in range(max_depth):
                if sm.is_terminal(s) or time.monotonic() >= deadline:
                    break
                s = sm.next_state(s, [rng.choice(sm.legal_moves(s, i)) for i in range(n)])
            else:
                continue
            if not sm.is_terminal(s):
                break  # out of time mid-playout: no evidence
            stats[m][0] += 1
            stats[m][1] += goal_vector(sm.goal_values(s))[role_index]
            sims += 1
    best = max(legal, key=lambda m: (stats[m][1] / stats[m][0]) if stats[m][0] else -1.0)
    return Decision(move=best, moves=legal, q=[stats[m][1] / stats[m][0] if stats[m][0] else None for m in legal],
                    visits=[stats[m][0] for m in legal], simulations=sims, playouts=sims, proven_descents=0)


def result_fields(result) -> dict:
    """Move, per-move Q-values and visits, and simulations from a search result of any shape,
    as a dict (``Decision.of(result).fields()``; agent/hidden's ensemble speaks this shape)."""
    return Decision.of(result).fields()


class FlatMonteCarlo:
    """``flat_monte_carlo`` as a decider (``agent.decision``)."""

    def __init__(self, sm):
        self.sm = sm

    def decide(self, situation: Situation, on_best=None) -> Decision:
        # (no best-so-far reports: its playouts go round every move, so no move leads early)
        return flat_monte_carlo(self.sm, situation.state, situation.role, situation.deadline,
                                random.Random(situation.seed))


class SearchDecider:
    """The persona search (``agent.search``) as a decider: the fewer of the persona's
    simulations and the time left ("skill = limit", persona-model 6.6), on ``tree`` (moved
    on from the last decision; the one this search grew is ``self.tree`` afterwards).
    ``search_fn`` is ``agent.search.search`` (tests put a spy there)."""

    def __init__(self, engine, persona, search_fn, *, tree=None, heuristic=None, material=None,
                 threads: int = 1):
        self.engine, self.persona, self.search_fn = engine, persona, search_fn
        self.tree, self.heuristic, self.material, self.threads = tree, heuristic, material, threads

    def decide(self, situation: Situation, on_best=None) -> Decision:
        # (agent.search loads the numba search: not at this module's import; Player.load
        # imported it already, so this costs nothing)
        from agent.search import SearchSettings
        settings = SearchSettings(seed=situation.seed, limit=self.persona.limit,
                                  seconds=max(0.0, situation.deadline - time.monotonic()),
                                  heuristic=self.heuristic, material=self.material, threads=self.threads)
        result = self.search_fn(self.engine, situation.state, situation.role, self.persona, settings,
                                tree=self.tree, on_progress=on_best)
        self.tree = result.tree
        return Decision.of(result)


class Player:
    """One role of one match; every method runs in the process that owns the reasoner."""

    def __init__(self, rules_text: str, role_text: str, play_clock: float, persona_spec=None,
                 seed: int | None = None, use_engine: bool = True, use_search: bool = True,
                 threads: int = 1):
        self.rules_text = rules_text
        self.role_text = role_text
        self.play_clock = play_clock
        self.persona_spec = persona_spec
        self.rng = random.Random(seed)
        self.seed = seed if seed is not None else random.randrange(2 ** 31)
        self.use_engine = use_engine
        self.use_search = use_search
        # search threads (root parallelism on the compiled engine), for a persona that searches
        # until the clock: for the others ``limit`` is their skill (spec 6.6), one tree's worth
        self.threads = threads
        self.slices = 0     # pondering's searches so far: each gets random streams of its own
        self.description = None
        self.role_index = None
        self.prolog = None
        self.engine = None          # what the search runs on
        self.sm = None              # the state machine we track the match with
        self.engine_kind = "prolog"
        self.search_kind = None
        self.persona = None
        self.state = None
        self.ply = 0
        self.tree = None            # search tree kept between decisions (agent.search)
        self.prev = None            # the last joint move (a fitted model's move counts read it)
        self.history = []           # the last steps, (state, joint move) each (a fitted model's move features)
        self.learner = None         # the game's evaluation being learned (agent.search.heuristic)

    # -------------------------------------------------------------- set-up
    def prepare(self) -> list:
        """Rules, role, Prolog reasoner, initial state: our legal moves there (the fallback)."""
        self.description = parse_rules_text(self.rules_text)
        self.role_index = role_index_of(self.description, self.role_text)
        try:
            self.prolog = PrologReasoner(self.description)
        except ReasonerError as e:
            raise RulesRefused(f"the Prolog reasoner cannot load the rules: {e}") from None
        self.sm = CachedStateMachine(self.prolog)
        self.state = self.sm.initial_state()
        return self.sm.legal_moves(self.state, self.role_index)

    def load(self, budget_seconds: float = 30.0) -> dict:
        """The fast engine (if ``use_engine``), the search and the persona; falls back piece by
        piece.  ``budget_seconds`` bounds grounding and compiling (then Prolog plays).  The
        server builds the engine in another process instead and calls ``upgrade`` later."""
        notes = []
        if self.use_engine:
            notes += self.upgrade(budget_seconds)
        if self.engine is None:
            self.engine = self.prolog
        try:
            self.persona = load_persona_spec(self.persona_spec)
        except Exception as e:
            notes.append(f"persona {self.persona_spec!r} failed to load ({e}); searching without it")
            self.persona = None
        # no ImportError guard: a broken numba install must fail loudly, not play flat MC
        from agent.search import search as search_fn
        self._search = search_fn if self.use_search else None
        if self._search is None or self.persona is None:
            self.search_kind = "flat-mc"
        else:
            self.search_kind = "agent.search"
            self._warm_model()
        self._start_learning()
        return {"engine": self.engine_kind, "search": self.search_kind, "code": code_version(),
                "persona": persona_dict(self.persona), "notes": notes}

    def upgrade(self, budget_seconds: float = 30.0, engine: str = "auto") -> list:
        """Switch to the compiled engine (a cache hit when another process just built it),
        or with ``engine="nonground"`` to the non-ground engine (the game did not ground:
        grounding it again would only spend the budget); returns notes when it is
        unavailable.  The state tracked so far carries over."""
        from agent.engine import load_engine
        try:
            engine = load_engine(self.description, budget_seconds=budget_seconds, engine=engine)
        except Exception as e:  # a grounding failure is not fatal: Prolog still plays
            return [f"engine unavailable ({type(e).__name__}: {e}); using Prolog"]
        if type(engine).__name__ == "PrologReasoner":  # the loader's own fallback: keep ours
            info = getattr(engine, "info", {}) or {}
            engine.close()
            return [f"no compiled engine ({info.get('reason', 'unknown reason')}); using Prolog"]
        try:
            if engine.initial_state() != self.prolog.initial_state():
                return ["the compiled engine's initial state differs from Prolog's; using Prolog"]
            sm = CachedStateMachine(engine)
            sm.legal_moves(self.state, self.role_index)
        except Exception as e:
            return [f"compiled engine failed ({type(e).__name__}: {e}); using Prolog"]
        self.engine, self.sm, self.engine_kind = engine, sm, type(engine).__name__
        self.tree = None  # a tree belongs to the engine kind that grew it
        self._warm_model()
        self._start_learning()
        return []

    def _start_learning(self) -> None:
        """A new learner of the game's evaluation for the engine the search runs on, for a
        player that ponders (it learns in pondering's slices, never on a move's clock); not
        on Prolog (too slow to sample from), and not for a persona with a utility (it values
        its own features: params.build)."""
        self.learner = None
        if (self.engine is None or self.engine is self.prolog or not self.ponders_between_moves()
                or self.persona.utility_lambda != 0):
            return
        from agent.search.heuristic import Learner
        self.learner = Learner(self.engine)    # the engine itself: no query cache to fill

    def learning(self) -> bool:
        """Whether the game's evaluation is still being learned (``learn``)."""
        return self.learner is not None and not self.learner.done

    def learn(self, deadline: float) -> None:
        """Learn the game's evaluation until ``deadline`` (monotonic) or it is done; a
        failure leaves the search without one."""
        try:
            self.learner.step(max(0.0, deadline - time.monotonic()))
        except Exception as e:
            log.warning("learning the game's evaluation failed: %s", e)
            self.learner = None

    def learning_summary(self) -> str | None:
        """What learning the evaluation found, once it is done (for the match record)."""
        return self.learner.summary() if self.learner is not None and self.learner.done else None

    def evaluation(self):
        """The game's evaluation once learned (None: not yet, or none found)."""
        return self.learner.result if self.learner is not None and self.learner.done else None

    def material(self):
        """Each role's pieces once learned with the evaluation (None: not yet, or none)."""
        return self.learner.material if self.learner is not None and self.learner.done else None

    # -------------------------------------------------------------- play
    def observe(self, move_texts) -> list:
        """Apply the joint move the manager reports; returns notes about anything odd."""
        joint, notes = resolve_joint(self.sm, self.state, move_texts, len(self.description.roles))
        self.history = (self.history + [(self.state, tuple(joint))])[-MODEL_HISTORY:]
        self.state = self.sm.next_state(self.state, joint)
        self.prev = tuple(joint)
        self.ply += 1
        if self.tree is not None:
            try:
                from agent.search import advance
                self.tree = advance(self.tree, joint)
            except Exception:
                self.tree = None
        return notes

    def legal(self) -> list:
        return self.sm.legal_moves(self.state, self.role_index)

    def is_terminal(self) -> bool:
        return self.sm.is_terminal(self.state)

    def ponders_between_moves(self) -> bool:
        """Whether searching during the opponents' turns (and on more than one thread) is this
        player's to do: only for a persona that searches until the clock (``PONDER_MIN_LIMIT``),
        whose skill it does not change; a persona's ``limit`` is its skill (spec 6.6), and a
        fitted model does not search."""
        return (self.search_kind == "agent.search" and self.persona is not None and self.persona.model is None
                and self.persona.limit >= PONDER_MIN_LIMIT)

    def decide(self, deadline: float, ponder: bool = False, on_best=None) -> dict:
        """Search the current state until ``deadline`` (monotonic) or the persona's ``limit``
        simulations, whichever comes first; a decision record.

        ``on_best(move_text, simulations)``, if given, is called from this thread while the
        search runs with the best move so far, spelled as the reply would be
        (``render_spaced``), whenever it changes and at most every 0.1 s, and once more when
        the search ends if the last call named another move; the first call comes as soon
        as the root's moves are known (before any simulation on a slow engine).  A forced
        move is reported once."""
        t0 = time.monotonic()
        legal = self.legal()
        seed = (self.seed * 1_000_003 + self.ply) % (2 ** 63)
        if ponder:
            # the slices of one state go on with one tree: with the ply's seed each slice
            # drew the same random numbers again (the same playout draws, the same ties)
            from agent.search import item_seed
            self.slices += 1
            seed = item_seed(seed, f"ponder|{self.slices}")
        if len(legal) == 1 and not ponder:
            d = Decision(move=legal[0], moves=legal, simulations=0, playouts=0, proven_descents=0)
            kind = "forced"
            if on_best is not None:
                on_best(render_spaced(legal[0]), 0)
        else:
            kind = self.search_kind
            try:
                d = Decision.of(self._run_search(legal, deadline, seed, on_best))
            except Exception as e:  # search bugs must not cost the move
                error = f"{type(e).__name__}: {e}"
                log.warning("search failed at ply %d: %s", self.ply, error)
                kind = "flat-mc"
                try:
                    d = flat_monte_carlo(self.sm, self.state, self.role_index, deadline, random.Random(seed))
                except Exception as e2:
                    error += f"; flat-mc: {type(e2).__name__}: {e2}"
                    d = Decision(move=self.rng.choice(legal), moves=legal)
                    kind = "random"
                d.fallback = error
        return self._record(d, legal, kind, t0)

    def _record(self, d: Decision, legal: list, kind: str, t0: float) -> dict:
        """The match record's entry of a decision (texts as the reply spells them)."""
        error = d.fallback
        move = d.move
        if move not in legal:  # never reply with something our own rules call illegal
            error = (error + "; " if error else "") + f"search chose a non-legal move {move!r}"
            move = self.rng.choice(legal)
        decision = {
            "ply": self.ply,
            "legal": [render_spaced(m) for m in legal],
            "move": render_spaced(move),
            "search": kind,
            "simulations": d.simulations,
            "playouts": d.playouts,
            "proven_descents": d.proven_descents,
            "transpositions": d.transpositions,
            "evaluated": d.evaluated,
            "extended": d.extended,     # of them, run on to a quiet state
            **({"threads": d.threads} if d.threads > 1 else {}),
            "elapsed": round(time.monotonic() - t0, 4),
            "fallback": False,
        }
        for key in ("q", "visits", "p"):
            values = getattr(d, key)
            if d.moves is not None and values is not None:
                decision[key] = {render_spaced(m): v for m, v in zip(d.moves, values)}
        if error:
            decision["error"] = error
        return decision

    def decider(self):
        """The decider of this player's persona (``agent.decision``): its fitted model, the
        persona search, or flat Monte Carlo (no search).  On Prolog a decider shares our
        query cache (the compiled engine must be passed itself: its driver runs on its
        arrays)."""
        engine = self.sm if self.engine is self.prolog else self.engine
        if self.search_kind == "agent.search" and self.persona.model is not None:
            # (the fitting modules and numpy: loaded only for a persona with a model)
            from agent.modelplay import ModelDecider
            return ModelDecider(engine, self.persona)
        if self.search_kind == "agent.search":
            return SearchDecider(engine, self.persona, self._search, tree=self.tree, heuristic=self.evaluation(),
                                 material=self.material(),
                                 threads=self.threads if self.ponders_between_moves() else 1)
        return FlatMonteCarlo(self.sm)

    def _run_search(self, legal, deadline, seed, on_best=None) -> Decision:
        situation = Situation(state=self.state, role=self.role_index, legal=legal, seed=seed, deadline=deadline,
                              prev=self.prev, history=tuple(self.history))
        progress = None
        if on_best is not None:
            def progress(move, sims):
                on_best(render_spaced(move), sims)
        decider = self.decider()
        d = decider.decide(situation, progress)
        if isinstance(decider, SearchDecider):
            self.tree = decider.tree
        return d

    def _warm_model(self) -> None:
        """A fitted model's one-off costs (its calibration on this engine, its compiled
        searches) paid while loading, not in the first move's clock."""
        if self.persona is None or self.persona.model is None or self.search_kind != "agent.search":
            return
        from agent.modelplay import model_of, warm
        try:
            if self.engine is self.prolog:
                # the fast engine usually takes over (upgrade warms on it): calibrating on
                # Prolog would spend the start clock on random playouts through Prolog
                model_of(self.persona)
                return
            warm(self.engine, self.state, self.role_index, self.persona)
        except Exception as e:  # the first decision pays it then
            log.warning("warming the fitted model failed: %s", e)

    def goals(self) -> list:
        return goal_vector(self.sm.goal_values(self.state))

    def close(self) -> None:
        for thing in (self.engine, self.prolog):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing is best effort: the process may be ending
                    pass
