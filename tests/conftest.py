"""Shared test helpers.

``SHARED`` is the project's shared material (rule-sheet corpus, reference traces), kept beside
the clone as ``../shared``.  Tests that need it use the ``shared_dir`` fixture or the
``needs_shared`` mark, and are skipped, with the reason below, when it is absent.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_MISSING = "../shared (corpus and reference traces) is not beside this clone; CI has it"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_MISSING)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` directory; skips the test when it is not beside the clone."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    return SHARED


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def load_script(name: str):
    """``scripts/NAME.py`` as a module (scripts are not a package), for tests of the scripts
    that reproduce committed reports."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def refusal_kind(message: str) -> str:
    """A validator error message reduced to its kind, for tables of expected refusals."""
    if message.startswith("unsafe rule"):
        return "unsafe rule"
    if message.startswith("the fact") and "variable" in message:
        return "variables in a fact"
    if message.startswith("recursion restriction"):
        return "recursion restriction"
    return message


@pytest.fixture
def no_decisive(monkeypatch):
    """Live-play searches without decisive and anti-decisive moves (a live-play deviation of
    issue #34, on a compiled engine only): for tests of the spec's own parameters, and of the
    two drivers alike where one runs on Prolog, which gets none."""
    from agent.search import driver_compiled, driver_sm, params

    def build(*args, **kw):
        p, rp = params.build(*args, **kw)
        p[params.P_DECISIVE] = 0.0
        return p, rp

    monkeypatch.setattr(driver_compiled, "build", build)
    monkeypatch.setattr(driver_sm, "build", build)


# ----------------------------------------------------------------------------- full sweeps
# A few long checks run in the suite on a representative part of their inputs, and on all of
# them from ``scripts/full_sweeps.py``, which sets GGP_FULL_SWEEPS=1 and commits its report
# (docs/benchmarks/full-sweeps.md): issue 53, the whole suite within 20 minutes.
FULL_SWEEPS = os.environ.get("GGP_FULL_SWEEPS") == "1"


def sweep(fast, full):
    """``full`` under ``scripts/full_sweeps.py``, else ``fast`` (the suite's share)."""
    return full if FULL_SWEEPS else fast


# ----------------------------------------------------------------------------- test tiers
# The markers of the two tiers, applied here and nowhere else (issue 53):
#
# * ``slow``: left out of the fast tier, ``bash scripts/setup.sh test -m "not slow"`` (at most
#   about 3 minutes on 2 cores, every test file still represented);
# * ``serial``: cannot run beside other tests; ``scripts/setup.sh test`` runs these alone after
#   the others ran side by side (pytest-xdist), and keeps their reason here.
#
# Keys are test ids relative to tests/: a file, a test (every parameter of it) or one
# parameter; a key ending in ``*`` is a prefix of the ids it marks.  Seconds are the test's
# measured durations (docs/benchmarks/tests.md; a loaded machine, so read them relatively).
_SERVER = "plays through a server process of its own, whose warm-up alone takes 10-20 s"
_FILE_SERVER = ("needs the file's server process (10-20 s of warm-up); test_server.py keeps a "
                "server in the fast tier")
_BROWSER = ("drives Chromium against a web server (about 15 s to start both); the pages are in the "
            "fast tier through test_web.py")
_MATCH = "a whole match between search players over HTTP, on real clocks"

SLOW: dict[str, str] = {
    # the conformance test: whole traces (the fast tier replays the first steps of each)
    "test_conformance.py::test_whole_trace_agrees_with_the_reference_trace[nonground-*":
        "whole traces of every game on the non-ground engine",
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[nonground-base/games/gt_two_thirds_6p/v0]":
        "its non-ground engine takes about 12 s of CPU to build (the corpus's slowest)",
    "test_traces.py::test_prolog_reasoner_agrees_exactly_with_the_reference_trace":
        "84 whole traces on the Prolog reasoner (about 1.5 minutes)",
    "test_traces.py::test_nonground_engine_agrees_exactly_with_the_reference_trace":
        "whole traces of chess and amazons on the non-ground engine",
    "test_traces.py::test_the_validator_refuses_exactly_the_listed_games":
        "validates all 389 traced rule sheets",
    # reasoning engines
    "test_engine.py::test_corpus_game_random_walks_agree":
        "12 corpus games, each walked for 3 s on both engines",
    "test_engine.py::test_every_step_mode_gives_the_same_network_in_corpus_games[hex]":
        "grounds and compiles hex several times",
    "test_engine.py::test_checkers_capture_tests_no_jump_can_pass_are_folded_away":
        "grounds checkers and replays its reference trace",
    "test_engine.py::test_goals_settled_incrementally_equal_goals_from_scratch_in_reversi":
        "random walks of reversi, goals recomputed at every step",
    "test_engine.py::test_own_game_random_walk_agrees[breakthrough]":
        "hypothesis walks of breakthrough on both engines",
    "test_engine_speed.py::test_advance_agrees_with_next_state_on_corpus_games[hex]":
        "grounds and compiles hex",
    "test_ground.py::test_big_game_compiles_and_agrees_with_its_reference_trace":
        "grounds skirmish and hex, the corpus's big games",
    "test_prolog.py::test_a_term_growing_without_bound_is_stopped_quickly":
        "runs Prolog into its stack limit (a few seconds each)",
    "test_referee.py::test_the_majorities_state_beyond_prolog_is_answered_by_the_referee":
        "grounds and compiles the 2015 majorities",
    "test_referee.py::test_standby_referee_answers_on_prolog_then_switches_where_prolog_runs_out":
        "runs Prolog out of its limits, then builds the compiled engine",
    "test_our_games.py::test_validator_simulation_finds_nothing":
        "the validator's random simulations of each of our games on Prolog",
    "test_our_games.py::test_random_playouts_end_with_one_goal_per_role":
        "random playouts of our games on Prolog",
    "test_our_games.py::test_stepped_random_games_take_turns":
        "random games of ours stepped on Prolog",
    "test_validate.py::test_case_verdict[real_chess.kif]": "simulates chess on Prolog",
    "test_validate.py::test_case_verdict[real_snakeAssemblit_2012.kif]": "simulates snakeAssemblit on Prolog",
    "test_validate.py::test_case_verdict[real_snakeAssemblit_v1.kif]": "simulates snakeAssemblit on Prolog",
    "test_validate.py::test_corpus_refusals_are_exactly_the_expected_ones":
        "reads and validates every sheet of the corpus",
    "test_chess.py::test_chess_match_decisions_are_searched_within_memory": _MATCH + " (chess)",
    "test_chess.py::test_a_person_waits_for_the_interim_engine_not_for_the_grounder_to_give_up":
        "a chess match with a long start clock while chess grounds",
    "test_chess.py::test_grounder_announces_the_nonground_engine_while_chess_still_grounds":
        "grounds chess until the grounder gives up",
    "test_chess.py::test_chess_search_on_a_clock_keeps_its_tree_small": "searches chess on a clock",
    "test_chess.py::test_chess_variants_replay_exactly_on_the_nonground_engine":
        "four whole chess traces on the non-ground engine",
    "test_chess.py::test_scrambled_chess_playouts_draw_checked_moves_that_are_legal":
        "chess playouts replayed move by move on the full legal-move query",
    "test_chess.py::test_chess_search_playouts_are_legal":
        "chess playouts replayed move by move on the full legal-move query",
    # search
    "test_search_playout_loop.py::test_champion_same_search_on_both_drivers":
        "the same search on both drivers, the Python one being slow (up to a minute)",
    "test_search_playout_loop.py::test_other_personas_same_search_on_both_drivers[sanguine]":
        "the same search on both drivers, the Python one being slow (up to a minute)",
    "test_search_playout_loop.py::test_corpus_games_same_search_on_both_drivers[base/games/smallest_4player/v0]":
        "the same search on both drivers, the Python one being slow",
    "test_search_games.py::test_connect_four_wins_in_one_and_blocks[ours-prolog]":
        "connect four searched on Prolog",
    "test_search_games.py::test_connect_four_wins_in_one_and_blocks[corpus-prolog]":
        "connect four searched on Prolog",
    "test_search_counts.py::test_playouts_and_proven_descents_add_up[sm]":
        "connect four searched on the state-machine driver",
    "test_search_counts.py::test_reused_tree_on_a_clock_is_not_rebuilt_while_it_has_room":
        "searches on a clock for seconds",
    "test_search_leaf.py::test_both_drivers_same_q_and_visits[survivor-live]":
        "the same search on both drivers",
    "test_search_sampled.py::test_the_sampled_draw_is_playout_move_over_the_legal_moves[0.0]":
        "draws enough playouts for a frequency test",
    "test_search_sampled.py::test_the_sampled_draw_is_playout_move_over_the_legal_moves[1.0]":
        "draws enough playouts for a frequency test",
    "test_transpositions.py::test_a_transposition_is_one_node[sm]": "searches on the Prolog driver",
    "test_transpositions.py::test_a_kept_subtree_keeps_its_transpositions[sm]": "searches on the Prolog driver",
    "test_player_search.py::test_pondering_between_moves_grows_the_tree_the_next_move_reuses":
        "ponders on a clock between moves",
    "test_player_search.py::test_limit_caps_simulations_in_live_play[prolog]":
        "100 simulations on Prolog",
    "test_player_search.py::test_slow_engine_answers_by_its_deadline_with_best_so_far":
        "waits out a slow engine's deadline",
    "test_bench_search.py::test_versus_live_keeps_trees_and_ponders_between_moves":
        "games between two checkouts' players in child processes",
    "test_bench_search.py::test_versus_plays_legal_games_with_alternating_sides":
        "games between two checkouts' players in child processes",
    # matches, servers, web pages
    "test_match.py::test_cli_persona_vs_persona_scrambled_rounds": _MATCH,
    "test_match.py::test_cli_persona_vs_server_over_http": _MATCH + ", against a server process",
    "test_match.py::test_cli_three_roles": _MATCH + ", against a server process",
    "test_match.py::test_cli_simultaneous_moves": _MATCH,
    "test_match.py::test_cli_ctrl_c_aborts_and_the_run_resumes": "matches interrupted and resumed",
    "test_match.py::test_bad_http_player_errors_are_recorded_with_ggp_base_codes":
        "waits out the clocks of late and hung players",
    "test_server.py::test_fuzz_endpoint_no_5xx": "hundreds of random requests, with matches started",
    "test_server.py::test_dresden_dialect": "a whole match on 10 s / 3 s clocks",
    "test_server.py::test_personas_chosen_by_match_id": "starts matches of three personas",
    "test_server.py::test_illegal_and_unparsable_moves_in_play": "a match played on to its end",
    "test_server_hardening.py::test_exploding_rules_end_the_match_cleanly": _FILE_SERVER,
    "test_server_hardening.py::test_incomplete_body_times_out": _FILE_SERVER,
    "test_server_hardening.py::test_half_open_connections_capped_and_matches_still_served": _FILE_SERVER,
    "test_server_hardening.py::test_negative_and_absurd_clocks_refused": _FILE_SERVER,
    "test_server_hardening.py::test_abort_or_stop_during_start_ends_it_at_once": _FILE_SERVER,
    "test_server_hardening.py::test_start_clock_builds_the_engine_and_reply_uses_the_play_clock": _FILE_SERVER,
    "test_server_hardening.py::test_port_in_use_is_a_clear_error": _FILE_SERVER,
    "test_server_hardening.py::test_server_memory_budget_ends_the_largest_match": _SERVER,
    "test_server_hardening.py::test_exploding_match_ends_when_prolog_runs_out_and_replies_before_the_clock": _SERVER,
    "test_server_hardening.py::test_listens_at_once_and_plays_while_warming_up": _SERVER,
    "test_server_matches.py": "every test plays whole matches through the file's server process (10-20 s "
                              "of warm-up); test_server.py keeps a server in the fast tier",
    "test_server_odd_managers.py": "every test needs the file's server process (10-20 s of warm-up); "
                                   "test_server.py keeps a server in the fast tier",
    "test_busy_host.py::test_a_slow_build_is_played_on_when_it_is_ready":
        "a match whose engine arrives 20 s after START",
    "test_web.py::test_first_match_after_start_says_what_it_waits_for_and_has_no_fallback_move":
        "a fresh web server's first match, engines built",
    "test_web.py::test_learn_my_style_names_the_fitted_bot_a_person_plays_most_like":
        "a web server that scores fitted bots",
    "test_web_browser.py": _BROWSER,
    "test_web_browser_ratings.py": _BROWSER + "; the first match waits for the persona's processes",
    "test_web_browser_boards.py": _BROWSER + "; whole ticTacToe matches until one is won",
    "test_web_browser_pieces.py": _BROWSER + "; two persona matches and a chess match recorded, then replayed",
    "test_web_browser_people.py": _BROWSER + "; thinks and stays away past the persona's silence limit "
                                  "(6 s) and a closed page's wait (22 s)",
    "test_gdl2_browser.py": _BROWSER,
    "test_gdl2_web.py::test_nothing_hidden_reaches_the_page_before_the_end_and_everything_after":
        "whole GDL-II matches through the web page",
    "test_gdl2_server.py": "every test plays whole GDL-II matches through a server process (10-20 s of "
                           "warm-up); test_gdl2_match.py keeps GDL-II matches in the fast tier",
    "test_gdl2_match.py::test_persona_player_in_a_gdl2_match": "a GDL-II match with our search player",
    "test_gdl2_predicted.py::test_a_server_given_records_predicts_in_a_gdl2_match":
        "a server process of its own and a whole GDL-II match through it",
    "test_gdl2_engines.py::test_compiled_engine_agrees_with_prolog_on_every_state[battleship]":
        "every reachable state of battleship on both engines",
    "test_gdl2_engines.py::test_compiled_engine_agrees_with_prolog_on_every_state[phantom_connect_4x4]":
        "every reachable state on both engines",
    "test_gdl2_engines.py::test_compiled_engine_agrees_with_prolog_on_every_state[phantom_connect_5x5]":
        "every reachable state on both engines",
    "test_gdl2_engines.py::test_prolog_percepts_late_in_battleship": "45 joint moves of battleship on Prolog",
    "test_gdl2_belief.py::test_every_kept_history_fits_what_the_role_saw[phantom_connect_4x4]":
        "histories of phantom connect four kept and checked",
    "test_gdl2_own_sheets.py::test_our_player_plays_the_sheet_through_the_runner":
        "whole GDL-II matches of our search player (the server's worker processes), 30 s start clocks",
    "test_gdl2_search.py::test_the_compiled_search_reads_the_clock_after_its_first_simulations":
        "builds battleship's compiled engine (seconds without its cache)",
    # fitting, modelling, playtesting
    "test_fastfit.py::test_cli_fit_is_the_fast_fit_and_attribute_reads_its_models":
        "a whole fit through the command line",
    "test_fastfit.py::test_fitted_persona_plays_a_whole_match": _MATCH,
    "test_fastfit.py::test_second_fit_runs_no_search": "a second fit of the file's records",
    "test_fastfit.py::test_above_the_budget_it_says_the_cost_and_the_way_to_dask": "a fit over its budget",
    "test_fastfit.py::test_one_more_player_against_an_earlier_fit": "a fit of one more player",
    "test_fastfit.py::test_pool_workers_end_with_a_killed_fit": "a fit killed with -9 and its pool waited on",
    "test_fastfit.py::test_fast_fit_learns_a_player_and_reports":
        "the first user of the file's fitted model (a fit, about 13 s)",
    "test_modelling.py::test_cli_fit_then_attribute_end_to_end": "a fit and an attribution through the command line",
    "test_modelling.py::test_cli_bad_input_is_one_clear_line": "starts the command line many times",
    "test_modelling_dask.py": "starts a Dask scheduler and two worker processes (about 12 s) for each test; "
                              "test_shared_support.py keeps the Dask client's errors in the fast tier",
    "test_shared_support.py::test_the_pool_is_kept_between_calls": "starts a process pool",
    "test_playtest.py::test_command_writes_the_report": "a playtest run through the command line",
    "test_playtest.py::test_same_seed_same_runs_in_process_and_in_a_pool": "playtests in a process pool",
    # the fast tier's heaviest, measured in one sitting at load 16-24 (docs/benchmarks/tests.md)
    "test_fastfit.py::test_evaluations_are_deterministic_under_crn":
        "builds the file's fitted model (a fit, about 13 s idle)",
    "test_fastfit.py::test_fitted_persona_file_loads_and_refuses_damage":
        "builds the file's fitted model (a fit, about 13 s idle)",
    "test_gdl2_engines.py::test_nonground_engine_agrees_with_prolog_on_every_state[battleship]":
        "every reachable state of battleship on the non-ground engine",
    "test_gdl2_engines.py::test_nonground_engine_agrees_with_prolog_on_every_state[phantom_connect_4x4]":
        "every reachable state on the non-ground engine",
    "test_engine.py::test_the_probe_prefers_the_fluents_turning_off_first_where_that_saves_work":
        "grounds and probes several corpus games",
    "test_engine.py::test_no_node_is_left_unmerged_in_checkers": "grounds and compiles checkers",
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[nonground-base/games/gt_two_thirds_4p/v0]":
        "its non-ground engine takes seconds of CPU to build, like the 6-player version",
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[prolog-base/games/alexChess/v1]":
        "loads a chess variant into Prolog",
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[prolog-base/games/blokbox_simple/v0]":
        "its first steps take seconds on Prolog",
    "test_transpositions.py::test_thesis_mode_searches_a_tree[sm]": "searches on the Prolog driver",
    "test_validate.py::test_corpus_*": "reads and validates every sheet of the corpus (the file's corpus fixture)",
    "test_archive.py::test_corpus_matches_replay_exactly":
        "replays every recorded corpus match on Prolog (about a minute)",
    "test_archive.py::test_replay_of_an_exploding_game_stays_within_its_memory_cap":
        "runs a replay into its memory cap",
    "test_protocol.py::test_fuzz_parser_only_raises_protocol_error": "hypothesis fuzzing of the parser",
    "test_web_boardview.py::test_hex_adjacency_in_the_rules_draws_hexagons": "grounds scrambled hex",
    "test_web_pieceset.py::test_chess_gets_its_figures_from_the_rules_and_the_same_when_scrambled":
        "random walks of chess and chess_200 on Prolog, plain and scrambled (5 s each idle, 10-20 s loaded)",
}

# Tests that cannot run beside others: they assert replies within real play clocks of 1-2 s,
# or push a process to gigabytes (two at once may exhaust a small CI machine's memory).
SERIAL: dict[str, str] = {
    "test_server_matches.py": "matches through one server on 1-2 s play clocks, four at once, and "
                              "what the player learns within its start clock; beside another test "
                              "replies came late (measured at loads of 8-19)",
    "test_server_hardening.py::test_exploding_match_ends_when_prolog_runs_out_and_replies_before_the_clock":
        "Prolog's stacks grow to half the worker's 2 GB cap, and the reply must come within a 2 s "
        "clock (late beside another test)",
    "test_server_hardening.py::test_exploding_rules_end_the_match_cleanly":
        "a worker grows to its memory cap while the server must keep answering on time",
    "test_server_hardening.py::test_server_memory_budget_ends_the_largest_match":
        "several workers grow together up to the server's memory budget",
    "test_archive.py::test_replay_of_an_exploding_game_stays_within_its_memory_cap":
        "a replay grows to its 4 GB memory cap",
}

# Test files (or tests) that share an expensive module-scope fixture (a server process, a
# fitted model, the corpus read once): they go to one worker together (the scheduler below),
# so the fixture is built once, as in a serial run.
ONE_WORKER: dict[str, str] = {
    "test_server.py": "one server process for the file",
    "test_server_hardening.py": "one server process for the file",
    "test_server_odd_managers.py": "one server process for the file",
    "test_gdl2_server.py": "one server process for the file",
    "test_web.py": "one web server for the file",
    "test_gdl2_web.py": "one web server for the file",
    "test_web_browser.py": "one web server and browser for the file",
    "test_web_browser_people.py": "one web server and browser for the file",
    "test_web_browser_ratings.py": "one web server and browser for the file",
    "test_web_browser_boards.py": "one web server and browser for the file",
    "test_web_browser_pieces.py": "one web server and browser for the file",
    "test_gdl2_browser.py": "one web server and browser for the file",
    "test_match.py::test_cli_persona_vs_server_over_http": "the file's server process (ggp_server)",
    "test_match.py::test_cli_three_roles": "the file's server process (ggp_server)",
    "test_fastfit.py": "one fitted model for the file (about 13 s)",
    "test_validate.py": "the corpus read and validated once for the file",
}


# Tests whose every check a longer test repeats (issue 53): the fast tier runs them, and a run
# that also selects the longer test leaves them out (pytest counts them as deselected).  Key: a
# prefix of test ids ending in a game's folder; value: the covering test's id, {game} filled in.
COVERED_BY: dict[str, str] = {
    # the first steps of a trace on the non-ground engine are the start of its whole trace
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[nonground-":
        "test_conformance.py::test_whole_trace_agrees_with_the_reference_trace[nonground-{game}]",
    # ... and on Prolog, of test_traces.py's whole traces of the required, scrambled and
    # unstratified games (three of them capped at 12 or more steps, past the first 3)
    "test_conformance.py::test_first_steps_agree_with_the_reference_trace[prolog-":
        "test_traces.py::test_prolog_reasoner_agrees_exactly_with_the_reference_trace[{game}]",
}


def covering_test(nodeid: str) -> str | None:
    """The id of the test that repeats every check of ``nodeid`` (relative to tests/), or None."""
    for prefix, cover in COVERED_BY.items():
        if nodeid.startswith(prefix) and nodeid.endswith("]"):
            return cover.format(game=nodeid[len(prefix):-1])
    return None


class _LeaveOutCovered:
    """Runs after ``-m`` and ``-k`` chose the tests: of a test and the test that covers it
    (COVERED_BY), only the second runs."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        chosen = {i.nodeid.removeprefix("tests/") for i in items}
        covered = [i for i in items if covering_test(i.nodeid.removeprefix("tests/")) in chosen]
        if covered:
            config.hook.pytest_deselected(items=covered)
            left = set(map(id, covered))
            items[:] = [i for i in items if id(i) not in left]


def tier_reason(table: dict, nodeid: str) -> str | None:
    """The reason ``table`` gives for the test ``nodeid`` (relative to tests/), or None."""
    for key, why in table.items():
        if key.endswith("*"):
            if nodeid.startswith(key[:-1]):
                return why
        elif nodeid == key or (nodeid.startswith(key) and nodeid[len(key)] in ":["):
            return why
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: left out of the fast tier (-m 'not slow'); "
                                       "why: tests/conftest.py SLOW")
    config.addinivalue_line("markers", "serial: runs alone, not beside other tests; "
                                       "why: tests/conftest.py SERIAL")
    config.pluginmanager.register(_LeaveOutCovered(), "ggp-leave-out-covered")


def pytest_collection_modifyitems(config, items):
    for item in items:
        nodeid = item.nodeid.removeprefix("tests/")
        why = tier_reason(SLOW, nodeid)
        if why:
            item.add_marker(pytest.mark.slow(reason=why))
        why = tier_reason(SERIAL, nodeid)
        if why:
            item.add_marker(pytest.mark.serial(reason=why))
    # scripts/setup.sh runs the suite in two passes: side by side, then the serial tests alone
    keep_serial = {"parallel": False, "serial": True}.get(os.environ.get("GGP_TEST_PASS", ""))
    if keep_serial is not None:
        kept = [i for i in items if (i.get_closest_marker("serial") is not None) == keep_serial]
        dropped = [i for i in items if (i.get_closest_marker("serial") is not None) != keep_serial]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's ``load`` distribution (``-n``'s default), but each ONE_WORKER entry's
    tests go to one worker together.  (``--dist loadgroup`` with ``xdist_group`` marks would
    say the same, but pytest-xdist 3.8 renames the tests through an attribute pytest 9 no
    longer reads, so its groups are lost.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            test = nodeid.removeprefix("tests/")
            return "one worker: " + test.split("::")[0] if tier_reason(ONE_WORKER, test) else nodeid

    return OneWorkerGroups(config, log)
