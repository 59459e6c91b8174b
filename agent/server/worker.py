"""Code that runs inside a match's worker processes (started with multiprocessing spawn).

A process starts idle (imports done, Prolog engine created, so a START costs no start-up),
then becomes one of:

* **referee**: Prolog only.  Validates the rules, tracks the state from the joint moves
  received, answers our legal moves for each new state at once, and gives the states and
  goals for the match record.  Cheap and quick, so a legal move is known even while the
  player is still grounding or compiling a huge game.
* **player**: ``agent.player.Player``: legal moves first (Prolog), then the fast engine and
  the search; answers each PLAY with a decision before the deadline it is given.

Messages are tuples over a ``multiprocessing`` pipe.  Times are ``time.monotonic()``, which
is one clock for every process of the machine (CLOCK_MONOTONIC).
"""
from __future__ import annotations

import logging
import os
import random
import sys
import threading
import time

from agent.matchtext import parse_rules_text, resolve_joint, role_index_of, state_text, validate_rules
from agent.player import MODEL_HISTORY, Player
from agent.reasoner.statemachine import CachedStateMachine, ReasonerError, RulesRefused, goal_vector
from gdl.kif import GdlError, parse_term, read_first
from gdl.terms import render_spaced

# Imports inside functions: SWI-Prolog, the engines and the search (numba) and the GDL-II
# player load in the player and referee processes that run these functions, not in the
# server's own process, which imports this module for their entry points.

# A tiny two-role game that still takes every code path of a match: Prolog, the engine, a
# search, a second search on the same tree, a move, a search on the advanced tree.
WARM_RULES = """( (role a) (role b) (init (s 0)) (succ 0 1) (succ 1 2) (succ 2 3)
 (<= (legal a (go ?x)) (true (s ?x)) (not (jammed ?x))) (legal a stay) (legal b wait)
 (<= (jammed ?x) (true (s ?x)) (true (s 9)))
 (<= (next (s ?y)) (does a (go ?x)) (succ ?x ?y)) (<= (next (s ?x)) (does a stay) (true (s ?x)))
 (<= terminal (true (s 3))) (<= (goal a 100) (true (s 3))) (<= (goal a 0) (not (true (s 3))))
 (goal b 0) )"""

# GDL-II for the warm-up: chance deals a card face down, ``a`` guesses it (a belief of two
# states; the search on a role whose goal never changes, ``random``, without the solver).
WARM_GDL2 = """( (role a) (role random) (init (phase 0)) (card 0) (card 1)
 (<= (legal random (deal ?c)) (true (phase 0)) (card ?c)) (<= (legal random noop) (not (true (phase 0))))
 (<= (legal a noop) (true (phase 0))) (<= (legal a (guess ?c)) (true (phase 1)) (card ?c))
 (<= (next (held ?c)) (does random (deal ?c))) (<= (next (held ?c)) (true (held ?c)))
 (<= (next (guessed ?c)) (does a (guess ?c))) (<= (next (phase 1)) (true (phase 0)))
 (<= (next (phase 2)) (true (phase 1))) (<= (sees a dealt) (true (phase 0)))
 (<= terminal (true (phase 2))) (<= (goal a 100) (true (held ?c)) (true (guessed ?c)))
 (<= (goal a 0) (not right)) (<= right (true (held ?c)) (true (guessed ?c))) )"""


def exit_when_orphaned(parent: int, poll: float = 1.0, getppid=os.getppid, exit=os._exit) -> None:
    """Run on a daemon thread: end this process when the server that started it is gone
    (killed with -9, it cannot kill us).  A grounder deep in one Prolog call never reads its
    pipe and kept a core busy for most of the start clock; Prolog's calls release the
    interpreter, so this thread runs meanwhile."""
    while True:
        time.sleep(poll)
        if getppid() != parent:
            exit(3)
            return


def proc_main(conn, nice: int = 0, log_level: int = logging.INFO, full_warm: bool = True,
              limits: dict | None = None) -> None:
    """Entry point of every worker process."""
    threading.Thread(target=exit_when_orphaned, args=(os.getppid(),), daemon=True,
                     name="orphan-watch").start()
    logging.basicConfig(level=log_level, stream=sys.stderr,
                        format="%(asctime)s %(name)s[%(process)d] %(levelname)s %(message)s")
    from .logsafe import install
    install()
    if nice:
        try:
            os.nice(nice)  # the HTTP process must win the CPU when a deadline is near
        except OSError:
            pass
    try:
        compiled = warm(full_warm)
        apply_limits(limits)
        conn.send(("warm", os.getpid(), compiled))
        cmd = conn.recv()
    except (EOFError, OSError, KeyboardInterrupt):
        return
    try:
        if cmd[0] == "referee":
            run_referee(conn, *cmd[1:])
        elif cmd[0] == "player":
            run_player(conn, cmd[1])
        elif cmd[0] == "grounder":
            run_grounder(conn, *cmd[1:])
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass  # the server went away or killed the match
    except Exception as e:
        logging.getLogger("ggp.worker").error("worker crashed: %s", e, exc_info=True)
        try:
            conn.send(("crashed", f"{type(e).__name__}: {e}"))
        except Exception:
            pass


def apply_limits(limits: dict | None) -> None:
    """SWI-Prolog's own memory limits for this process (after the warm-up created the engine),
    so a runaway query fails inside Prolog with a resource error before the server's memory
    watchdog has to kill the process."""
    prolog = (limits or {}).get("prolog")
    if prolog:
        from agent.reasoner.prolog import set_memory_limits
        set_memory_limits(**prolog)


WARM_PARTS = ("compiled", "others")   # what ``warm`` runs: the two halves, or both (None)


def warm(full: bool = True, part: str | None = None) -> int:
    """Import and run everything a match needs while no clock is running: numba loads (or,
    the first time ever, compiles) the engine and search code here, not during a PLAY.
    ``part``: only the compiled engine's search and evaluation (``compiled``), or only the
    non-ground engine and the GDL-II player (``others``), so that two processes can compile
    the two halves at once (``ggp-persona warm``).  Returns how many functions numba
    compiled (none when its cache had them all)."""
    from numba.core import event
    with event.install_recorder("numba:compile") as compiles:
        _warm_run(full, part)
    return sum(1 for _, e in compiles.buffer if e.is_start)


def _warm_run(full: bool, part: str | None = None) -> None:
    p = Player(WARM_RULES, "a", 1.0, None, seed=1, use_engine=False, use_search=full)
    try:
        p.prepare()
        if not full:
            return
        if part in (None, "compiled"):
            p.load()                                   # searching on Prolog, as a match begins
            p.decide(time.monotonic() + 0.05, ponder=True)
            p.decide(time.monotonic() + 0.05)
            p.upgrade(30.0)                            # then on the compiled engine
            p.decide(time.monotonic() + 0.05)
            p.observe(["( go 0 )", "wait"])
            p.decide(time.monotonic() + 0.05)
            # the game's evaluation: its numba sampler compiles here, not in a start clock's
            # learning budget (where a first compile once took all of it)
            from agent.search.heuristic import Learner
            Learner(p.engine, playouts=16, seconds=None).step()
        if part in (None, "others"):
            from agent.engine.nonground import NonGroundEngine   # for games that do not ground
            ng = NonGroundEngine(p.description)
            s = ng.initial_state()
            ng.next_state(s, [ng.legal_moves(s, 0)[0], ng.legal_moves(s, 1)[0]])
            ng.random_playout(s, seed=1)
            # the search's own playouts on it (the rules' guarded move gives it a sampler)
            from agent.persona import load_persona
            from agent.search import SearchSettings, driver_sm
            driver_sm.search(ng, s, 0, load_persona("tournament"), SearchSettings(seed=1, limit=8))
            _warm_gdl2()
    except Exception as e:  # a broken engine or search shows up again in the match, with fallbacks
        logging.getLogger("ggp.worker").warning("warm-up incomplete: %s: %s", type(e).__name__, e)
    finally:
        p.close()


def _warm_gdl2() -> None:
    """A GDL-II decision on Prolog and on the compiled engine (its search has no solver)."""
    from agent.hidden.player import HiddenPlayer
    h = HiddenPlayer(WARM_GDL2, "a", 1.0, None, seed=1, use_engine=False)
    try:
        h.prepare()
        h.load()
        h.observe({"own": "noop", "percepts": ["dealt"]})
        h.decide(time.monotonic() + 0.05)
        h.upgrade(30.0)
        h.decide(time.monotonic() + 0.05)
        h.observe({"own": "(guess 0)", "percepts": []})   # percepts on the compiled engine
    finally:
        h.close()


# ------------------------------------------------------------------------- referee

BIG_RULES = 1 << 20      # characters of rules beyond which a referee yields the CPU to others
BIG_RULES_NICE = 5

def run_referee(conn, rules_text: str, role_text: str, gdl2: bool = False) -> None:
    from agent.referee import STANDBY_BUDGET, open_referee

    log = logging.getLogger("ggp.referee")
    t0 = time.monotonic()
    if len(rules_text) > BIG_RULES:
        # Reading and validating megabytes of rules takes long: the matches already playing
        # (their referees and the server) come first.
        try:
            os.nice(BIG_RULES_NICE)
        except OSError:
            pass
    try:
        desc = parse_rules_text(rules_text)
        try:
            problems = validate_rules(desc)
        except RecursionError:
            raise RulesRefused("the rules are nested too deeply to validate") from None
        errors = [p for p in problems if p.level == "error"]
        if errors:
            raise RulesRefused(f"the rules fail validation ({len(errors)} error"
                               f"{'s' * (len(errors) != 1)}): " + "; ".join(p.message for p in errors[:3]))
        role_index = role_index_of(desc, role_text)
        send_initial_legal(conn, desc, role_index)
        try:
            # Prolog at once; the exact compiled engine where Prolog runs out of its limits, as
            # the match's grounder left it in the cache (or the non-ground engine): grounding
            # here too, after Prolog ran out of stack on an exploding game, doubled the
            # referee's memory and ended the match only at the watchdog's cap, 15-25 s later
            referee = open_referee(desc, STANDBY_BUDGET, engine="standby", build=False)
            log.info("referee on the %s engine: %s", referee.engine, referee.reason)
            sm = CachedStateMachine(referee.sm)
            state = sm.initial_state()
            terminal = sm.is_terminal(state)
            legal = [] if terminal else sm.legal_moves(state, role_index)
        except ReasonerError as e:
            raise RulesRefused(f"the Prolog reasoner cannot play the rules: {e}") from None
    except RulesRefused as e:
        conn.send(("ref_failed", str(e)))
        return
    roles = [render_spaced(r) for r in desc.roles]
    n = len(roles)
    conn.send(("ref_ready", {
        "roles": roles, "role_index": role_index, "state": state_text(state),
        "terminal": terminal, "legal": [render_spaced(m) for m in legal],
        "warnings": [str(p) for p in problems], "seconds": round(time.monotonic() - t0, 3)}))
    if gdl2:
        return referee_gdl2(conn, sm, role_index, desc)
    ply = 0
    while True:
        msg = conn.recv()
        if msg[0] != "step":
            continue
        _, move_texts = msg[1], msg[2]
        try:
            joint, notes = resolve_joint(sm, state, move_texts, n)
            state = sm.next_state(state, joint)
            ply += 1
            terminal = sm.is_terminal(state)
            info = {"ply": ply, "joint": [render_spaced(m) for m in joint], "state": state_text(state),
                    "terminal": terminal, "notes": notes}
            if terminal:
                values = sm.goal_values(state)
                info["goals"] = goal_vector(values)
                if any(len(v) != 1 for v in values):
                    info["notes"].append(f"goal values in the terminal state are not one per role: {values}")
            else:
                info["legal"] = [render_spaced(m) for m in sm.legal_moves(state, role_index)]
            conn.send(("ref_state", info))
        except ReasonerError as e:
            # The true state is unknown from here on: going on from the old one would referee
            # a different game. The server ends the match with this reason.
            log.warning("referee: %s", e)
            conn.send(("ref_error", ply + 1, str(e)))
            return


REFEREE_SHARE = 0.3   # of the play clock, per GDL-II step, for finding a consistent history


def referee_gdl2(conn, sm, role_index: int, description) -> None:
    """The referee of a GDL-II match knows only what we see: it follows one history
    consistent with our moves and percepts where one is found in time, else the closest one
    (``agent.hidden.tracker``), so that our legal moves for the current step are known
    whatever the player does.  Each step gets ``until`` (monotonic, from the server: a share
    of the play clock after the PLAY came) or ``REFEREE_SHARE`` of the clock; a step that
    waited behind another gets one candidate only, so the referee catches up with the match.
    It never claims to know the joint move or the state: ``joint`` is None in its reports,
    and ``how`` says where the legal moves come from."""
    from agent.hidden.player import parse_percepts, respell, symbols_of
    from agent.hidden.tracker import OneHistory, fluent_shapes

    history = OneHistory(sm, role_index, random.Random(0), shapes=fluent_shapes(description))
    symbols = symbols_of(description)
    ply = 0
    lost = None    # why the history cannot go on, once it cannot
    while True:
        msg = conn.recv()
        if msg[0] != "step":
            continue
        view = msg[2] or {}
        percepts, notes = parse_percepts(view.get("percepts"), symbols)
        try:
            own = respell(parse_term(view["own"]), symbols) if view.get("own") else None
        except GdlError:
            own = None
        goes_on = view.get("goes_on", True)
        until = view.get("until")
        if until is None:
            until = time.monotonic() + REFEREE_SHARE * float(view.get("seconds") or 5.0)
        if conn.poll():   # the next step is already waiting: catch up
            until = time.monotonic()
        if lost is not None:
            ply += 1
            conn.send(("ref_state", {"ply": ply, "joint": None, "state": state_text(history.state),
                                     "terminal": False, "notes": [], "how": lost}))
            continue
        ply += 1
        try:
            notes += history.observe(own, percepts, until, goes_on=goes_on)
            state = history.state
            terminal = sm.is_terminal(state)
            info = {"ply": ply, "joint": None, "state": state_text(state), "terminal": terminal,
                    "notes": notes, "how": history.how(), "tried": history.tried}
            if terminal:
                info["goals"] = goal_vector(sm.goal_values(state))
                info["notes"].append("goal values from a history consistent with our percepts"
                                     if not history.missed else "goal values from the closest history found")
            if not terminal or goes_on:
                # a PLAY came: the match goes on, whatever our one history says
                try:
                    info["legal"] = [render_spaced(m) for m in history.legal()]
                except ReasonerError:
                    if not terminal:
                        raise
            conn.send(("ref_state", info))
        except ReasonerError as e:
            # One history is only a guess of the state: when it cannot go on (a query beyond
            # Prolog's limits, a closest history where a role has no move), the match does not
            # end for it (a GDL-I referee's failure does: it knew the true state); the
            # player's belief gives our legal moves from here, and the record says so.
            lost = f"referee: lost at step {ply} ({str(e)[:200]})"
            conn.send(("ref_state", {"ply": ply, "joint": None, "state": state_text(history.state),
                                     "terminal": False, "how": lost,
                                     "notes": [f"the referee's history cannot go on at step {ply} "
                                               f"({str(e)[:200]}); our legal moves come from the "
                                               f"player only from here"]}))


QUICK_INFERENCES = 50_000_000


def send_initial_legal(conn, desc, role_index: int) -> None:
    """Our legal moves in the initial state, before any other query.  The referee's full
    reasoner probes the rules first (its table choice computes a next state), and with
    exploding rules that took longer than the start clock, so the first PLAY had no legal
    move.  A reasoner with only the recursive relations tabled and no probe asks just the two
    queries needed.  Its failures are left for the full reasoner to report."""
    from agent.reasoner.prolog import PrologReasoner
    try:
        quick = PrologReasoner(desc, inference_limit=QUICK_INFERENCES, table="recursive")
    except ReasonerError:
        return
    try:
        legal = quick.legal_moves(quick.initial_state(), role_index)
        if legal:
            conn.send(("ref_legal", 0, [render_spaced(m) for m in legal]))
    except ReasonerError:
        pass
    finally:
        quick.close()


# ------------------------------------------------------------------------- grounder

GROUNDING_SHARE = 0.85
INTERIM_SHARE, INTERIM_MIN = 0.25, 5.0   # seconds of grounding before the interim engine
CAP_SHARE = 0.9          # of the server's build cap: grounding's own limit on the clock
CPU_POLL = 0.25          # seconds between two looks at the grounder's CPU time
# Tests only: the grounder waits this many seconds before it reports its engine, as a build
# on a busy host does (the tests of a slow build need no loaded machine).
DELAY_ENV = "GGP_PERSONA_TEST_BUILD_DELAY"


def run_grounder(conn, rules_text: str, budget: float, nice: int = 0, cap: float | None = None) -> None:
    """Build the compiled engine (it lands in the engine cache, where the player picks it
    up); say whether it worked.

    A game still grounding after ``INTERIM_SHARE`` of the budget (and ``INTERIM_MIN``
    seconds: a short start clock is spent on grounding alone) may not ground at all
    (chess): the non-ground engine is built meanwhile on a thread (grounding runs in Prolog,
    which releases the interpreter) and announced with ``engine_interim``, so the player
    leaves Prolog long before grounding gives up.  On a loaded machine grounding's budget and
    the non-ground build after it ended past the start clock, and chess's first moves were
    searched on Prolog, where one query overran the play clock.

    ``cap`` (the server's grounder: seconds until the server stops this process): grounding
    and compiling get the budget in CPU seconds of this process instead of seconds on the
    clock, so a busy host (load 14-29 on 2 cores: a tenth of a core each) grounds as far as
    an idle one; a game not compiled by then gets the non-ground engine (``cpu_watch``), and
    the clock only bounds the whole by ``cap``.  Without ``cap`` (tests, tools) grounding
    has ``GROUNDING_SHARE`` of the budget in seconds on the clock, as it had."""
    if nice:
        try:
            os.nice(nice)  # no more urgent than the search it is building for
        except OSError:
            pass
    t0 = time.monotonic()
    lock, done, answered = threading.Lock(), threading.Event(), threading.Event()
    nonground_built = threading.Event()
    delay = _test_delay()

    def answer(msg) -> None:
        """The one final answer (the CPU watch and the build may both have one)."""
        if delay:
            time.sleep(max(0.0, t0 + delay - time.monotonic()))
        with lock:
            if not answered.is_set():
                answered.set()
                conn.send(msg)

    def build_nonground(desc) -> bool:
        if nonground_built.is_set():
            return True
        try:
            from agent.engine.nonground import NonGroundEngine
            NonGroundEngine(desc).close()    # the player's own build of the same rules will work
        except Exception:  # the final answer says what works
            return False
        nonground_built.set()
        return True

    def interim(desc) -> None:
        if done.wait(max(budget * INTERIM_SHARE, INTERIM_MIN)):
            return
        if not build_nonground(desc):
            return
        with lock:
            if not done.is_set() and not answered.is_set():
                conn.send(("engine_interim", {"kind": "NonGroundEngine",
                                              "seconds": round(time.monotonic() - t0, 2)}))

    def cpu_watch(desc, seconds: float) -> None:
        """The build's budget in CPU seconds: when it is spent the non-ground engine is the
        answer (the server stops this process on it, grounding included)."""
        if not cpu_spent(seconds, done):
            return
        wall = time.monotonic() - t0
        if build_nonground(desc):
            answer(("engine", {"ok": True, "kind": "NonGroundEngine",
                               "reason": f"not compiled within {seconds:.0f} s of CPU time "
                                         f"({wall:.0f} s on the clock)",
                               "seconds": round(time.monotonic() - t0, 2)}))
    try:
        desc = parse_rules_text(rules_text)
        from agent.engine import load_engine
        threading.Thread(target=interim, args=(desc,), daemon=True, name="interim").start()
        # grounding gets most of the start clock; the rest is for the non-ground engine, which
        # a game that does not ground needs (chess: about a second to build)
        ground_budget = budget * GROUNDING_SHARE
        if cap is not None:
            threading.Thread(target=cpu_watch, args=(desc, budget), daemon=True, name="cpu").start()
            ground_budget = max(ground_budget, cap * CAP_SHARE)
        engine = load_engine(desc, budget_seconds=ground_budget)
    except (RulesRefused, ImportError) as e:
        done.set()
        answer(("engine", {"ok": False, "reason": str(e)}))
        return
    except Exception as e:
        done.set()
        answer(("engine", {"ok": False, "reason": f"{type(e).__name__}: {e}"}))
        return
    done.set()
    info = dict(getattr(engine, "info", {}) or {})
    ok = type(engine).__name__ != "PrologReasoner"
    answer(("engine", {"ok": ok, "kind": type(engine).__name__, "reason": info.get("reason"),
                       "seconds": round(time.monotonic() - t0, 2)}))


def cpu_spent(seconds: float, done, clock=time.process_time, poll: float = CPU_POLL) -> bool:
    """Wait until ``done`` (an Event) is set, False, or this process has used ``seconds`` of
    CPU time (every thread's) from the call, True."""
    c0 = clock()
    while not done.wait(poll):
        if clock() - c0 >= seconds:
            return True
    return False


def _test_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(DELAY_ENV) or 0))
    except ValueError:
        return 0.0


# ------------------------------------------------------------------------- player

PONDER_SLICE = 0.5
# Between PLAYs a search runs in slices this long: a PLAY that comes meanwhile waits at most
# this (plus one chunk of simulations) before the player reads it.
BETWEEN_SLICE = 0.1


def learn_slice(player, conn, deadline: float) -> None:
    """One slice of learning the game's evaluation; when it ends, what it found goes into
    the match record (a note)."""
    player.learn(deadline)
    summary = player.learning_summary()
    if summary is not None:
        conn.send(("note", None, [summary]))


def ponder_while_idle(player, conn, log) -> None:
    """Search the player's state until a message comes: the opponents are thinking (after a
    forced reply in a turn-taking game, the state they move from), and the tree this builds
    is the one the next decision reuses.  Stops early, until the next message, when a slice
    runs no simulation (a proven root: nothing left to learn) or fails."""
    while not conn.poll() and not player.is_terminal():
        if player.learning():     # the game's evaluation first (agent.search.heuristic)
            learn_slice(player, conn, time.monotonic() + BETWEEN_SLICE)
            continue
        try:
            d = player.decide(time.monotonic() + BETWEEN_SLICE, ponder=True)
        except Exception as e:   # pondering is a bonus: never the match's problem
            log.warning("pondering between moves failed: %s", e)
            return
        if not d.get("simulations"):
            return


def decide_reporting(player, deadline: float, report) -> dict:
    """``player.decide(deadline)``, calling ``report({"move": text, "simulations": n})`` with
    the search's best move so far while it runs: the server sends that one if the final
    answer comes too late (a search on a slow reasoner)."""
    return player.decide(deadline, on_best=lambda move, sims: report({"move": move, "simulations": sims}))


def observe_joint(player, move_texts) -> tuple[list, bool]:
    """``player.observe(move_texts)``; when the player's fast engine cannot apply the joint
    move (a move our rules call illegal is not in a compiled game's move table), the next
    state comes from the player's own Prolog reasoner instead: the referee's state (same
    rules, same moves, applied as received).  When that state holds fluents the compiled
    engine cannot represent, the player stays on Prolog for the rest of the match.  Returns
    the notes and whether the player switched to Prolog; raises ``ReasonerError`` when Prolog
    cannot compute the state either (the caller then waits for the referee's)."""
    try:
        return player.observe(move_texts), False
    except ReasonerError as e:
        if player.prolog is None or player.engine is player.prolog:
            raise
        why = f"{type(e).__name__}: {e}"
    prolog = CachedStateMachine(player.prolog)
    joint, notes = resolve_joint(prolog, player.state, move_texts, len(player.description.roles))
    state = prolog.next_state(player.state, joint)
    notes.append(f"the {player.engine_kind} engine cannot apply this joint move ({why[:200]}); "
                 f"the next state is Prolog's, as the referee's")
    base = getattr(player.engine, "base", None)
    fits = base is None or set(state) <= set(base)
    if fits:
        try:  # an engine without a fluent table must still take the state
            player.sm.is_terminal(state)
            player.sm.legal_moves(state, player.role_index)
        except Exception:
            fits = False
    if not fits:
        notes.append(f"the state now holds fluents the {player.engine_kind} engine cannot represent: "
                     f"Prolog plays the rest of the match")
        player.engine, player.sm, player.engine_kind = player.prolog, prolog, "prolog"
    player.history = (list(getattr(player, "history", [])) + [(player.state, tuple(joint))])[-MODEL_HISTORY:]
    player.state = state
    player.prev = tuple(joint)
    player.ply += 1
    player.tree = None
    return notes, not fits


def legal_or_none(player) -> list:
    """Our legal moves where the rules may not define them (a terminal state)."""
    try:
        return player.legal()
    except Exception:
        return []


def parse_state_text(text: str) -> frozenset:
    """A state as the referee renders it (``( ( cell 1 1 b ) ( control x ) )``)."""
    node = read_first(text)
    if node is None or node.is_atom:
        raise ValueError(f"a state must be a list: {text[:80]!r}")
    return frozenset(parse_term(repr(n)) for n in node.items)


def records_prior(folder: str, rules_text: str, log):
    """The predictive prior of a GDL-II match from the server's folder of recorded matches
    (``--gdl2-records``), or ``None`` (uniform) where none shares its rules or they cannot be
    read: a database never stops a match."""
    from agent.hidden.prior import from_folder   # the GDL-II package and numpy: only for a GDL-II match
    try:
        description = parse_rules_text(rules_text)
        prior, notes = from_folder(folder, description, description.roles)
    except Exception as e:   # hostile rules were checked by the referee; this is a bonus
        log.warning("GDL-II records not read: %s", e)
        return None
    for note in notes:
        log.info("%s", note)
    return prior


def run_player(conn, cfg: dict) -> None:

    log = logging.getLogger("ggp.player")
    kind, extra = Player, {}
    if cfg.get("gdl2"):
        from agent.hidden.player import HiddenPlayer as kind   # the GDL-II player
        if cfg.get("gdl2_records"):
            extra["prior"] = records_prior(cfg["gdl2_records"], cfg["rules_text"], log)
    player = kind(cfg["rules_text"], cfg["role"], cfg["play_clock"], cfg.get("persona"),
                    seed=cfg.get("seed"), use_engine=False,
                    use_search=cfg.get("use_search", True), threads=cfg.get("threads", 1), **extra)
    try:
        legal = player.prepare()
    except RulesRefused as e:
        conn.send(("failed", str(e)))
        return
    conn.send(("legal", 0, [render_spaced(m) for m in legal]))
    ready_by = cfg.get("ready_by")
    # The compiled engine is built by a grounder process (it can take minutes in one
    # uninterruptible Prolog call); we search on Prolog until we are told it is ready.
    info = player.load()
    conn.send(("loaded", info))
    if ready_by is not None and cfg.get("ponder", True):
        # Ponder in slices: the compiled engine (or an early PLAY) ends it.
        until = min(ready_by, time.monotonic() + player.play_clock)
        while until - time.monotonic() > 0.2 and not conn.poll() and not player.is_terminal():
            if player.learning():
                learn_slice(player, conn, min(until, time.monotonic() + PONDER_SLICE))
                continue
            try:
                player.decide(min(until, time.monotonic() + PONDER_SLICE), ponder=True)
            except Exception as e:
                log.warning("pondering failed: %s", e)
                break
    conn.send(("ready",))
    lost = False      # our state is not the match's (a joint move we could not apply)
    on_prolog = False  # pinned to Prolog: the state left the compiled engine's fluents
    ponder_between = cfg.get("ponder_between", False) and player.ponders_between_moves()
    while True:
        if ponder_between and not lost:
            ponder_while_idle(player, conn, log)
        batch = [conn.recv()]
        while conn.poll():  # catch up: only the newest PLAY deserves a search
            batch.append(conn.recv())
        states = [m for m in batch if m[0] == "state"]
        if states and lost:
            # The referee's state, sent while we are lost: take it and go on from there.
            _, ply, text = states[-1]
            try:
                player.state, player.ply, player.tree = parse_state_text(text), ply, None
                lost = False
                conn.send(("synced", ply))
                log.info("player: back on the referee's state at ply %d", ply)
            except Exception as e:
                log.warning("player: cannot take the referee's state: %s", e)
        engines = [m for m in batch if m[0] == "engine"]
        if engines and not on_prolog:
            kind, interim = engines[-1][1], len(engines[-1]) > 2 and engines[-1][2] == "interim"
            if kind == "nonground" and player.engine_kind == "NonGroundEngine":
                notes = []  # already on it (the grounder's interim engine): keep engine and tree
            else:
                notes = player.upgrade(5.0, engine=kind)
            if ponder_between and not interim and ready_by is not None and player.ply == 0:
                # the start clock is there to prepare: the game's evaluation is learned before
                # the server answers READY (it waits for this message), until the start
                # deadline or a message
                while player.learning() and not conn.poll() and time.monotonic() < ready_by - 0.2:
                    learn_slice(player, conn, min(ready_by - 0.2, time.monotonic() + BETWEEN_SLICE))
            conn.send(("upgraded", {"engine": player.engine_kind, "notes": notes, "interim": interim}))
        plays = [m for m in batch if m[0] == "play"]
        for i, play in enumerate(plays):
            _, req, move_texts, deadline = play[:4]
            target = play[4] if len(play) > 4 else None  # the match's ply after this joint move
            try:
                if target is not None and not lost and move_texts is not None and player.ply >= target:
                    move_texts = None  # already there: the referee's state included this move
                if target is not None and not lost and player.ply + (move_texts is not None) != target:
                    lost = True
                    conn.send(("lost", req, f"the player is at ply {player.ply}, the match at {target}"))
                if lost:
                    conn.send(("error", req, "the player lost track of the state; waiting for the referee's"))
                    continue
                if isinstance(move_texts, dict):   # GDL-II: our move and our percepts
                    notes = player.observe(move_texts, deadline=deadline)
                    if notes:
                        conn.send(("note", req, notes))
                elif move_texts is not None:
                    try:
                        notes, switched = observe_joint(player, move_texts)
                    except ReasonerError as e:
                        lost = True
                        conn.send(("lost", req, f"cannot apply the joint move: {e}"))
                        conn.send(("error", req, f"cannot apply the joint move: {e}"))
                        continue
                    if notes:
                        conn.send(("note", req, notes))
                    if switched:
                        on_prolog = True
                        conn.send(("upgraded", {"engine": player.engine_kind, "notes": notes[-1:]}))
                terminal = player.is_terminal()
                legal = player.legal() if not terminal else legal_or_none(player)
                conn.send(("legal", player.ply, [render_spaced(m) for m in legal]))
                if terminal or not legal:
                    # The game is over (a careless manager plays on) or our role has no move:
                    # nothing to search for; the server answers from what it knows.
                    conn.send(("over", req, player.ply, "terminal" if terminal else "no legal move"))
                    continue
                if i < len(plays) - 1 or time.monotonic() >= deadline:
                    conn.send(("skipped", req))
                    continue
                decision = decide_reporting(
                    player, deadline, lambda d, req=req: conn.send(("interim", req, dict(d, req=req))))
                decision["req"] = req
                decision.setdefault("engine", player.engine_kind)   # what it searched on (x-unsearched)
                conn.send(("move", req, decision))
            except ReasonerError as e:
                log.warning("player: %s", e)
                conn.send(("error", req, str(e)))
            except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
                raise
            except Exception as e:  # one PLAY's failure must not cost the match its player
                log.error("player failed on request %s: %s", req, e, exc_info=True)
                conn.send(("error", req, f"{type(e).__name__}: {e}"))
