#!/usr/bin/env python3
"""Compile the numba code the tests call beyond the server's warm-up (issue 53).

``ggp-persona warm`` compiles what a server's match runs.  The tests also call the engine's
kernels directly (random playouts, the legal lists, the build's probes, ``advance``), run the
fitting's batch search and the benchmark's playouts: about 40 more compilations, 2-3 minutes
of CPU, which a fresh clone's suite paid inside its tests, often twice at once on both
workers (the legal lists' test of breakthrough and of smallest_4player took 45 s each, the
random playouts' of ticTacToe and breakthrough 25 s each, all of it compiling).

This runs a few of those tests, cheap once compiled, so that numba writes their code to its
cache (``NUMBA_CACHE_DIR``) before the suite starts; ``scripts/setup.sh test`` runs it beside
``ggp-persona warm``, whose second process is idle for its last minute.  The tests' results
here do not matter (the suite runs them again): only a test that is no longer there is
reported, since it would compile nothing (``tests/test_tiers.py`` checks the list too).

    python scripts/warm_tests.py          # quiet; one line at the end
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Test ids (relative to tests/) -> what numba compiles for them that the server's warm-up does not
WARM_TESTS = {
    "test_engine.py::test_incremental_legal_lists_equal_the_scan[stuck]":
        "the playout kernels both ways (legal lists and scan), the lists' upkeep and readers",
    "test_engine.py::test_random_playout_kernel_depth_and_goals[ticTacToe]":
        "random_playout and current_state called from Python",
    "test_engine.py::test_the_probe_keeps_the_moves_on_where_frame_axioms_read_them":
        "the build's probes (step modes, strongly connected components, counts)",
    "test_engine.py::test_the_step_mode_is_chosen_by_the_work_it_saves": "probe_step_mode",
    "test_engine.py::test_goals_after_steps_agree_with_prolog": "goal_vector called from Python",
    "test_engine.py::test_turn_fluents_gate_the_legal_moves_instead_of_feeding_them":
        "legal_into on the hot tuple",
    "test_engine_speed.py::test_advance_agrees_with_next_state[ticTacToe]": "advance",
    "test_cli.py::test_bench_both_engines_prints_rates_and_ratio": "the benchmark's playouts_for",
    "test_search_thesis.py::test_search_batch_is_the_thesis_search_by_default":
        "the fitting's batch search (run_batch)",
}


def main() -> int:
    env = dict(os.environ)
    env.pop("GGP_TEST_PASS", None)          # every listed test, whichever pass it belongs to
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="warm-tests-") as tmp:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "--no-header",
               f"--basetemp={tmp}/t", *[f"tests/{t}" for t in WARM_TESTS]]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if proc.returncode == 4:                # pytest's usage error: a listed test is gone
        print(f"warm_tests: a listed test is not there (scripts/warm_tests.py WARM_TESTS):\n{out[-2000:]}",
              file=sys.stderr)
        return 1
    last = (out.strip().splitlines() or ["no output"])[-1]
    print(f"warm_tests: {len(WARM_TESTS)} tests run for numba's cache in {time.monotonic() - t0:.0f} s ({last})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
