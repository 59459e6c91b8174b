"""Conformance: our engines agree with ggp-base's reference traces across the traced corpus.

The backbone of the fast tier (``-m "not slow"``), through ``agent.tracecheck.check_trace``
(what ``ggp-persona trace`` runs: initial and next states, terminal, legal moves, goals):

* the Prolog reasoner and the non-ground engine replay the first ``PREFIX`` steps of the
  reference trace of every game of ``../shared/reference/prover/INDEX.tsv`` (building the
  engine costs more than the steps: about 40 s of CPU each for the corpus);
* the compiled engine replays whole traces (its steps are cheap, its grounding is not) of
  every traced game it builds within ``QUICK_BUILD`` seconds of CPU, as measured in
  ``tests/data/compiled-builds.tsv`` (about 200 games).

The slow tier replays the non-ground engine's whole traces of every game; a run with it
leaves out the first steps that a whole trace replays again (``COVERED_BY`` in conftest.py:
the non-ground engine's here, Prolog's of ``test_traces.py``'s games).  Elsewhere:
``test_traces.py`` replays whole traces on the Prolog reasoner (the required, scrambled and
unstratified games; the whole corpus takes about 20 minutes: ``scripts/trace_all.py``) and
on its samples of the compiled and non-ground engines, which are left out here.  Games
whose compiled engine takes longer to build (up to the 30 s grounding budget, or never
within it: 15 minutes of CPU for the corpus) are ``scripts/engine_corpus_report.py``'s.

Games the validator refuses are left out (``test_traces.REFUSED``, tested there); games the
non-ground engine does not build are skipped with the reason.  Everything is skipped, with
the reason, in a clone without ``../shared``.

``python tests/test_conformance.py --measure-builds`` measures the compiled engine's build
times again and rewrites ``tests/data/compiled-builds.tsv`` (about 15 minutes of CPU).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import SHARED_MISSING, needs_shared

pytest.importorskip("pyswip")

from agent.tracecheck import check_trace, load_trace, rules_path_for  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402
from test_traces import COMPILED_SAMPLE, NONGROUND_SAMPLE, PROVER, REFUSED, _index  # noqa: E402

pytestmark = needs_shared

# Steps replayed per trace in the fast tier: the initial state and two next states, each with
# its legal moves, terminal and goals (every kind of query; most traces have 20-120 steps).
PREFIX = 3

# The compiled engine is replayed in the fast tier where it builds within this many seconds
# of CPU (grounding and compiling; 206 games, 39 s together, as measured).
QUICK_BUILD = 0.5
BUILDS = Path(__file__).resolve().parent / "data" / "compiled-builds.tsv"

# Games the non-ground engine refuses to build, with its reason (docs/reports/nonground-corpus.md);
# the Prolog reasoner plays them.
NONGROUND_NOT_BUILT = {
    "base/games/laikLee_hex/v0": "terms of isList nest deeper than 12 (a recursion builds them "
                                 "without bound)",
    "base/games/mummymaze1p/v0": "its static relation direction-from needs more than 4,194,304 answers",
    "base/games/sudoku/v0": "its static relation exactlyFirst needs more than 4,194,304 answers",
}


def _build(engine: str, desc, cache_dir=None):
    if engine == "prolog":
        from agent.reasoner.prolog import PrologReasoner
        return PrologReasoner(desc)
    if engine == "nonground":
        from agent.engine.nonground import NonGroundEngine
        return NonGroundEngine(desc)
    from agent.engine import load_engine
    return load_engine(desc, engine="compiled", budget_seconds=300, use_cache=False, cache_dir=cache_dir)


def _builds() -> dict[str, float]:
    """Traced game -> CPU seconds its compiled engine took to build (games that ground)."""
    out = {}
    for line in BUILDS.read_text().splitlines():
        if line and not line.startswith("#"):
            game, seconds = line.split("\t")
            out[game] = float(seconds)
    return out


def _params(engines, leave_out=()) -> list:
    """One param per (engine, traced game), the validator's refusals and ``leave_out`` left out."""
    if not PROVER.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=SHARED_MISSING), id="no-shared")]
    quick = {g for g, s in _builds().items() if s <= QUICK_BUILD}
    out = []
    for engine in engines:
        for row in _index():
            game = row["game"]
            if game in REFUSED or game in leave_out or (engine == "compiled" and game not in quick):
                continue
            why = NONGROUND_NOT_BUILT.get(game) if engine == "nonground" else None
            marks = [pytest.mark.skip(reason=f"no non-ground engine: {why}")] if why else []
            out.append(pytest.param(engine, row, marks=marks, id=f"{engine}-{game}"))
    return out


def _replay(engine: str, row: dict, max_steps: int | None):
    path = PROVER / row["file"]
    trace = load_trace(path)
    sm = _build(engine, read_rules_file(rules_path_for(trace, path)))
    try:
        return check_trace(sm, trace, max_steps=max_steps)
    finally:
        if hasattr(sm, "close"):
            sm.close()


def test_every_traced_game_is_covered(shared_dir):
    rows = {r["game"] for r in _index()}
    assert len(rows) == 388
    assert len(rows & set(REFUSED)) == 2
    assert set(NONGROUND_NOT_BUILT) <= rows
    builds = _builds()
    assert set(builds) <= rows and len(builds) >= 350, len(builds)
    assert sum(s <= QUICK_BUILD for s in builds.values()) >= 200


@pytest.mark.parametrize("engine,row", _params(("prolog", "nonground")))
def test_first_steps_agree_with_the_reference_trace(engine, row):
    report = _replay(engine, row, PREFIX)
    assert report.exact, report.summary()
    assert report.steps == min(PREFIX, int(row["steps"]))


# The compiled engine's params (fast tier) are those games of tests/data/compiled-builds.tsv
# that build quickly, but COMPILED_SAMPLE; the non-ground engine's (slow tier) every game but
# NONGROUND_SAMPLE: test_traces.py replays those samples already.
@pytest.mark.parametrize("engine,row", _params(("compiled",), COMPILED_SAMPLE)
                         + _params(("nonground",), NONGROUND_SAMPLE))
def test_whole_trace_agrees_with_the_reference_trace(engine, row):
    report = _replay(engine, row, None)
    assert report.exact, report.summary()
    assert report.steps == int(row["steps"])


def test_a_divergence_is_caught(shared_dir):
    """The replay is not vacuous: a trace whose recorded legal moves were tampered with fails."""
    row = next(r for r in _index() if r["game"] == "base/games/ticTacToe/v0")
    path = PROVER / row["file"]
    trace = load_trace(path)
    trace["walks"][0]["steps"][1]["legal"][0].pop()
    sm = _build("nonground", read_rules_file(rules_path_for(trace, path)))
    try:
        report = check_trace(sm, trace, max_steps=PREFIX)
    finally:
        sm.close()
    assert not report.exact
    assert report.first_divergence["field"] == "legal" and report.first_divergence["step"] == 1


def measure_builds() -> None:
    """Rewrite BUILDS: each traced game's compiled build in this process, one after another
    (as the test runs them), CPU seconds; games that do not ground within 30 s are left out.
    The first build also loads the numba kernels, so it is built twice."""
    import os
    import tempfile
    import time

    from agent.reasoner.statemachine import GroundingError

    lines = []
    with tempfile.TemporaryDirectory() as cache:
        for i, row in enumerate(r for r in _index() if r["game"] not in REFUSED):
            desc = read_rules_file(rules_path_for(load_trace(PROVER / row["file"]), PROVER / row["file"]))
            for _ in range(2 if i == 0 else 1):
                t0 = time.process_time()
                try:
                    from agent.engine import load_engine
                    load_engine(desc, engine="compiled", budget_seconds=30, use_cache=False, cache_dir=cache)
                except GroundingError as e:
                    print(f"{row['game']}: not built: {e}", file=sys.stderr)
                    break
            else:
                lines.append(f"{row['game']}\t{time.process_time() - t0:.3f}")
                print(lines[-1], file=sys.stderr)
    head = ["# CPU seconds to build each traced game's compiled engine (ground and compile), one",
            "# process, one game after another; games that do not ground within 30 s are absent.",
            "# Written by: python tests/test_conformance.py --measure-builds"]
    tmp = BUILDS.with_suffix(".tmp")
    tmp.write_text("\n".join(head + lines) + "\n")
    os.replace(tmp, BUILDS)


if __name__ == "__main__":
    if sys.argv[1:] != ["--measure-builds"]:
        sys.exit("usage: python tests/test_conformance.py --measure-builds")
    measure_builds()
