"""``agent.referee.open_referee``: the compiled engine when it is exact, else Prolog, with the
reason; rules Prolog refuses are refused."""
from __future__ import annotations

import pytest

pytest.importorskip("pyswip")

from agent import referee as R  # noqa: E402
from agent.engine.compiled import CompiledEngine  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from agent.reasoner.statemachine import RulesRefused  # noqa: E402
from gdl.kif import parse_rules, read_rules_file  # noqa: E402

from conftest import ROOT, SHARED, needs_shared  # noqa: E402

TTT = ROOT / "games" / "ticTacToe.kif"


@pytest.fixture(scope="module")
def engine_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("engine-cache")


def test_an_exact_compiled_engine_referees(engine_cache_dir):
    ref = R.open_referee(read_rules_file(TTT), 120.0, cache_dir=engine_cache_dir)
    try:
        assert ref.engine == "compiled" and isinstance(ref.sm, CompiledEngine)
        assert ref.checked_steps > 0 and "agrees with Prolog" in ref.reason
        s = ref.sm.initial_state()
        assert len(ref.sm.legal_moves(s, 0)) == 9
    finally:
        ref.sm.close()


def test_prolog_when_asked_or_when_there_is_no_time():
    desc = read_rules_file(TTT)
    for ref in (R.open_referee(desc, engine="prolog"), R.open_referee(desc, 0.0)):
        assert ref.engine == "prolog" and isinstance(ref.sm, PrologReasoner)
        assert ref.reason
        ref.sm.close()


class _Lying:
    """A compiled engine that calls every state terminal: not exact."""

    def __init__(self, engine):
        self.engine = engine
        self.roles = engine.roles
        self.closed = False

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def is_terminal(self, state):
        return True

    def close(self):
        self.closed = True
        self.engine.close()


def test_an_engine_that_disagrees_with_prolog_is_not_used(monkeypatch, engine_cache_dir):
    import agent.engine as E
    real = E.load_engine
    made = []

    def lying(*a, **kw):
        made.append(_Lying(real(*a, **kw)))
        return made[-1]
    monkeypatch.setattr(E, "load_engine", lying)
    ref = R.open_referee(read_rules_file(TTT), 120.0, cache_dir=engine_cache_dir)
    assert ref.engine == "prolog" and isinstance(ref.sm, PrologReasoner)
    assert "terminal differs at walk 1 step 0" in ref.reason
    assert made[0].closed
    ref.sm.close()


def test_grounding_failure_falls_back_to_prolog_with_the_reason(monkeypatch):
    import agent.engine as E
    from agent.engine.ground import GroundingError

    def failing(*a, **kw):
        raise GroundingError("more than 2,000,000 ground rule instances")
    monkeypatch.setattr(E, "load_engine", failing)
    ref = R.open_referee(read_rules_file(TTT), 120.0)
    assert ref.engine == "prolog" and "2,000,000 ground rule instances" in ref.reason
    ref.sm.close()


def test_rules_prolog_refuses_are_refused():
    wide = " ".join(f"a{i}" for i in range(1100))  # (wide a0 ... a1099): 1,100 arguments
    text = f"""(role p) (init (s 0)) (legal p go) (legal p stay) (<= (next (s 1)) (does p go))
    (<= terminal (true (s 1))) (goal p 100) (wide {wide}) (<= (legal p stay) (wide {wide}))"""
    with pytest.raises(RulesRefused, match="max_procedure_arity"):
        R.open_referee(parse_rules(text, "<wide>"), 30.0)


MAJORITIES_2015 = ("corpus/games/base/history/majorities/v0/2015-03-02_8320bf7e9706/"
                   "majorities.kif")


@needs_shared
def test_the_majorities_state_beyond_prolog_is_answered_by_the_referee(engine_cache_dir):
    """The final state of a random walk of the 2015 majorities (seed 1, 55 joint moves):
    Prolog's goal query there ran over its 200,000,000 inferences (54 s); the referee, on the
    compiled engine, answers it."""
    from gdl.kif import parse_term, read_first
    from agent.reasoner.statemachine import ResourceLimit

    desc = read_rules_file(SHARED / MAJORITIES_2015)
    text = (ROOT / "tests" / "data" / "majorities-2015-hard-state.txt").read_text()
    state = frozenset(parse_term(repr(n)) for n in read_first("( " + text + " )").items)
    ref = R.open_referee(desc, 60.0, cache_dir=engine_cache_dir, walks=1, steps=4)  # short check
    try:
        assert ref.engine == "compiled", ref.reason
        assert ref.checked_steps == 5 and "agrees with Prolog on 5 states" in ref.reason
        assert ref.sm.is_terminal(state)
        goals = ref.sm.goal_values(state)
        assert goals == [[0], [100]]
    finally:
        ref.sm.close()
    # The state really is beyond Prolog: a tenth of the limit runs out on the same query.
    prolog = PrologReasoner(desc, inference_limit=20_000_000)
    try:
        with pytest.raises(ResourceLimit) as e:
            prolog.goal_values(state)
        assert e.value.resource == "inferences"
    finally:
        prolog.close()


@needs_shared
def test_standby_referee_answers_on_prolog_then_switches_where_prolog_runs_out(engine_cache_dir):
    """The server's referee: ready at once on Prolog; on the majorities state beyond Prolog's
    limits (here a tenth of them, to keep the test short) it builds the compiled engine,
    checks it, and answers from it from then on."""
    from gdl.kif import parse_term, read_first

    desc = read_rules_file(SHARED / MAJORITIES_2015)
    text = (ROOT / "tests" / "data" / "majorities-2015-hard-state.txt").read_text()
    state = frozenset(parse_term(repr(n)) for n in read_first("( " + text + " )").items)
    ref = R.open_referee(desc, 60.0, engine="standby", cache_dir=engine_cache_dir, walks=1, steps=4)
    try:
        sm = ref.sm
        assert ref.engine == "prolog" and sm.engine == "prolog"
        sm.prolog.inference_limit = 20_000_000
        s0 = sm.initial_state()
        assert len(sm.legal_moves(s0, 0)) > 1 and sm.engine == "prolog" and sm.compiled is None
        assert sm.goal_values(state) == [[0], [100]]
        assert sm.engine == "compiled" and sm.prolog.closed
        assert sm.is_terminal(state) and sm.initial_state() == s0
    finally:
        ref.sm.close()


def test_standby_referee_keeps_prolog_errors_when_the_engine_cannot_take_over(monkeypatch):
    import agent.engine as E
    from agent.engine.ground import GroundingError
    from agent.reasoner.statemachine import ResourceLimit

    def failing(*a, **kw):
        raise GroundingError("more than 2,000,000 ground rule instances")
    monkeypatch.setattr(E, "load_engine", failing)
    ref = R.open_referee(read_rules_file(TTT), 30.0, engine="standby")
    sm = ref.sm
    try:
        s0 = sm.initial_state()
        sm.prolog.inference_limit = 10  # nothing can be answered now
        with pytest.raises(ResourceLimit):
            sm.legal_moves(s0, 0)
        assert sm.refused and "2,000,000" in sm.refused and sm.engine == "prolog"
        with pytest.raises(ResourceLimit):  # no second attempt
            sm.is_terminal(s0)
    finally:
        sm.close()


def test_a_server_referee_never_grounds_and_builds_nothing_after_prolog_ran_out_of_memory(tmp_path, monkeypatch):
    """``build=False`` (the server's referee, whose match has a grounder of its own): after a
    Prolog limit it takes the cache's compiled engine, else the non-ground engine, never
    grounding; after Prolog ran out of stack (memory it keeps) only the cache's engine.  It
    used to ground an exploding game there and doubled its memory."""
    import agent.engine.loader as L
    from agent.reasoner.statemachine import ResourceLimit

    def no_grounding(*a, **kw):
        raise AssertionError("grounded in the referee")
    monkeypatch.setattr(L, "ground", no_grounding)
    desc = read_rules_file(TTT)

    def run_out(kind, cache_dir):
        ref = R.open_referee(desc, 30.0, engine="standby", cache_dir=cache_dir, walks=1, steps=2, build=False)
        sm = ref.sm
        s0 = sm.initial_state()
        real = sm.prolog.legal_moves
        calls = []

        def once(*a):  # the first query runs out; Prolog answers the engine's check after it
            calls.append(a)
            if len(calls) == 1:
                raise ResourceLimit("legal moves ran out", kind, "legal moves")
            return real(*a)
        sm.prolog.legal_moves = once
        return sm, s0

    sm, s0 = run_out("stack", tmp_path / "empty")
    with pytest.raises(ResourceLimit):
        sm.legal_moves(s0, 0)
    assert sm.engine == "prolog" and "nothing else is built here" in sm.refused, sm.refused
    sm.close()
    sm, s0 = run_out("inferences", tmp_path / "empty")
    assert len(sm.legal_moves(s0, 0)) == 9 and sm.engine == "nonground"
    sm.close()
    cache = tmp_path / "cache"
    monkeypatch.undo()
    L.load_engine(desc, cache_dir=cache).close()  # as the match's grounder leaves it
    monkeypatch.setattr(L, "ground", no_grounding)
    sm, s0 = run_out("stack", cache)
    assert len(sm.legal_moves(s0, 0)) == 9 and sm.engine == "compiled"
    sm.close()
