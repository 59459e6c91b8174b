"""The compiled engine (agent.engine) against the Prolog reasoner, its cache, its fallback
and its numba kernels.

* agreement: on random walks the compiled engine and the Prolog reasoner give the same
  initial state, legal moves per role, terminal, goal values and next states - for our own
  games (always; hypothesis draws the walks) and a sample of corpus games of varied kinds
  (seeded walks, bounded in time; skipped without ../shared);
* the cache: a second load comes from the cache, a consistently renamed (scrambled) copy of
  the rules hits the same entry and plays with its own names, a corrupt entry is a miss;
* the fallback: a budget too small to ground gives the Prolog reasoner with the reason
  (``engine="auto"``) or GroundingError (``engine="compiled"``);
* the kernels called from numba: random_playout gives sane depths and goals.

Every compiled game is built into a temporary cache directory, never the user's.
"""
from __future__ import annotations

import itertools
import logging
import random
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdl.kif import parse_rules, read_rules_file
from gdl.terms import render

from conftest import needs_shared, sweep

pytest.importorskip("pyswip")

from agent.engine import cache as engine_cache  # noqa: E402
from agent.engine import compile as engine_compile  # noqa: E402
from agent.engine import kernels as K  # noqa: E402
from agent.engine import load_engine  # noqa: E402
from agent.engine.ground import GroundingError  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402

GAMES_DIR = Path(__file__).resolve().parents[1] / "games"
OWN_GAMES = sorted(p.stem for p in GAMES_DIR.glob("*.kif"))

# Corpus games of varied kinds, each quick to ground (seconds): game folder -> what it covers.
CORPUS_SAMPLE = {
    "base/games/3pffa/v1": "3 roles, recursion",
    "base/games/chineseCheckers4/v1": "4 roles",
    "base/games/smallest_4player/v0": "4 roles, simultaneous, recursion",
    "base/games/roshambo2/v0": "simultaneous",
    "base/games/buttons/v0": "single player",
    "base/games/hanoi/v0": "single player, recursion",
    "base/games/eightPuzzle/v0": "single player, sliding puzzle",
    "aaai2006/games/bunk_s.3359146085/v0": "scrambled, simultaneous",
    "aaai2006/games/fairfield_s.3359145873/v0": "scrambled, simultaneous, recursion",
    "aaai2006/games/pancakes_s.3357334777/v0": "scrambled, single player, recursion",
    "aaai2006/games/nim_s.3357418060/v0": "scrambled",
    "benderng/games/circlesolitaire/v0": "BenderNG test game",
}
# random walking per corpus game (after building both engines): 1 s in the suite, 3 s from
# scripts/full_sweeps.py (the seeded walks go on where the suite's stop; issue 53)
CORPUS_SECONDS = sweep(1.0, 3.0)
BUILD_BUDGET = 60.0        # grounding budget: the sample needs a few seconds at most


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="session")
def engine_cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("engine-cache")


_ENGINES: dict = {}


def engines(path: Path, cache_dir: Path):
    """(compiled, prolog) for a rule file, built once per session."""
    key = str(path)
    if key not in _ENGINES:
        desc = read_rules_file(path)
        compiled = load_engine(desc, engine="compiled", budget_seconds=BUILD_BUDGET, cache_dir=cache_dir)
        _ENGINES[key] = (compiled, PrologReasoner(desc))
    return _ENGINES[key]


def corpus_rules(shared: Path, game: str) -> Path:
    kifs = sorted((shared / "corpus" / "games" / game).glob("*.kif"))
    assert kifs, f"no rule sheet in corpus/games/{game}"
    return kifs[0]


def show(state) -> str:
    return " ".join(sorted(render(f) for f in state))


def compare_state(c, p, state, where: str) -> list:
    """Assert agreement on one state; returns Prolog's legal moves per role."""
    n = len(p.roles)
    assert c.is_terminal(state) == p.is_terminal(state), f"terminal differs at {where}: {show(state)}"
    assert c.goal_values(state) == p.goal_values(state), f"goals differ at {where}: {show(state)}"
    legal = [p.legal_moves(state, r) for r in range(n)]
    for r in range(n):
        assert c.legal_moves(state, r) == legal[r], \
            f"legal moves of {render(p.roles[r])} differ at {where}: {show(state)}"
    return legal


def compare_next(c, p, state, joint, where: str):
    ours, theirs = c.next_state(state, joint), p.next_state(state, joint)
    assert ours == theirs, (f"next state differs at {where} after {[render(m) for m in joint]}: "
                            f"{show(state)}\n  compiled only: {show(ours - theirs)}"
                            f"\n  prolog only:   {show(theirs - ours)}")
    return theirs


def seeded_walks(c, p, seed: int, seconds: float, max_steps: int = 200) -> tuple[int, int]:
    """Random walks from the initial state until ``seconds`` pass; (walks, steps) checked."""
    assert [render(r) for r in c.roles] == [render(r) for r in p.roles]
    s0 = p.initial_state()
    assert c.initial_state() == s0, f"initial state differs:\n  {show(c.initial_state())}\n  {show(s0)}"
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    walks = steps = 0
    while walks == 0 or time.monotonic() < deadline:
        state = s0
        for k in range(max_steps):
            where = f"seed {seed} walk {walks} step {k}"
            legal = compare_state(c, p, state, where)
            steps += 1
            if p.is_terminal(state) or not all(legal) or time.monotonic() > deadline + seconds:
                break
            state = compare_next(c, p, state, tuple(rng.choice(ms) for ms in legal), where)
        walks += 1
    return walks, steps


# ----------------------------------------------------------------------------- agreement
@pytest.mark.parametrize("game", OWN_GAMES)
def test_own_game_initial_state_and_roles_agree(game, engine_cache_dir):
    c, p = engines(GAMES_DIR / f"{game}.kif", engine_cache_dir)
    assert c.roles == p.roles
    assert c.initial_state() == p.initial_state()
    assert c.info["engine"] == "compiled"


@pytest.mark.parametrize("game", OWN_GAMES)
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_own_game_random_walk_agrees(game, data, engine_cache_dir):
    """Hypothesis draws every joint move; each state on the way is compared in full."""
    c, p = engines(GAMES_DIR / f"{game}.kif", engine_cache_dir)
    state = p.initial_state()
    for k in range(250):
        legal = compare_state(c, p, state, f"step {k}")
        if p.is_terminal(state):
            assert all(len(v) == 1 for v in p.goal_values(state)), "a finished game has one goal per role"
            return
        assert all(legal), f"a role has no legal move in a non-terminal state: {show(state)}"
        joint = tuple(ms[data.draw(st.integers(0, len(ms) - 1), label=f"move {k}")] for ms in legal)
        state = compare_next(c, p, state, joint, f"step {k}")


@needs_shared
@pytest.mark.parametrize("game", sorted(CORPUS_SAMPLE), ids=lambda g: g.split("/")[2])
def test_corpus_game_random_walks_agree(game, shared_dir, engine_cache_dir):
    c, p = engines(corpus_rules(shared_dir, game), engine_cache_dir)
    walks, steps = seeded_walks(c, p, seed=sum(map(ord, game)), seconds=CORPUS_SECONDS)
    assert walks >= 1 and steps >= 2, f"{game} ({CORPUS_SAMPLE[game]}): only {steps} steps checked"


# ----------------------------------------------------------------------------- cache
_KEYWORDS = {"role", "init", "true", "next", "legal", "does", "goal", "terminal", "distinct",
             "not", "or", "<=", "base", "input", "sees"}


def scramble(text: str) -> tuple[str, dict]:
    """Rename every symbol that is not a keyword, variable or integer, consistently, the way
    Tiltyard scrambles a game (same rules, same order, fresh names)."""
    text = re.sub(r";[^\n]*", "", text)
    names: dict = {}

    def sub(m):
        tok = m.group(0)
        if tok.startswith("?") or tok.lower() in _KEYWORDS or re.fullmatch(r"-?\d+", tok):
            return tok
        return names.setdefault(tok, f"zq{len(names)}x")
    return re.sub(r"[^\s()]+", sub, text), names


def test_second_load_comes_from_the_cache(tmp_path):
    desc = read_rules_file(GAMES_DIR / "ticTacToe.kif")
    first = load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert first.info["engine"] == "compiled" and first.info["source"] == "built"
    assert len(list(tmp_path.glob("*.npz"))) == 1
    second = load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert second.info["source"] == "cache", second.info
    assert second.info["key"] == first.info["key"]
    for k in ("atoms", "fluents", "ground_rules"):
        assert second.info[k] == first.info[k]
    seeded_walks(second, PrologReasoner(desc), seed=5, seconds=1.0)


def test_other_game_does_not_hit_the_cache(tmp_path):
    load_engine(read_rules_file(GAMES_DIR / "ticTacToe.kif"), cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    other = load_engine(read_rules_file(GAMES_DIR / "connectFour.kif"), cache_dir=tmp_path,
                        budget_seconds=BUILD_BUDGET)
    assert other.info["source"] == "built"
    assert len(list(tmp_path.glob("*.npz"))) == 2


def test_scrambled_copy_hits_the_cache_and_plays_with_its_own_names(tmp_path):
    text = (GAMES_DIR / "ticTacToe.kif").read_text()
    desc = parse_rules(text)
    built = load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert built.info["source"] == "built"
    scrambled_text, names = scramble(text)
    scrambled = parse_rules(scrambled_text)
    assert scrambled.roles == [names[r] for r in desc.roles]
    eng = load_engine(scrambled, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert eng.info["source"] == "cache", eng.info
    assert eng.info["key"] == built.info["key"]
    assert eng.roles == scrambled.roles
    # every symbol the engine answers with is a new name (or an integer), none an old one
    new_names = set(names.values())
    s0 = eng.initial_state()
    symbols = set(re.findall(r"[^\s()]+", show(s0) + " " + " ".join(
        render(m) for r in range(len(eng.roles)) for m in eng.legal_moves(s0, r))))
    assert symbols and all(s in new_names or s.isdigit() for s in symbols), symbols - new_names
    seeded_walks(eng, PrologReasoner(scrambled), seed=11, seconds=2.0)


@needs_shared
def test_scrambled_copy_of_a_scrambled_corpus_game_hits_the_cache(shared_dir, tmp_path):
    """aaai2006 sheets are upper case and already scrambled once: scramble them again."""
    text = corpus_rules(shared_dir, "aaai2006/games/nim_s.3357418060/v0").read_text()
    built = load_engine(parse_rules(text), cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    scrambled = parse_rules(scramble(text)[0])
    eng = load_engine(scrambled, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert eng.info["source"] == "cache" and eng.info["key"] == built.info["key"], eng.info
    seeded_walks(eng, PrologReasoner(scrambled), seed=2, seconds=1.0)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "wrong-arrays"])
def test_corrupt_cache_entry_is_rebuilt_not_a_crash(damage, tmp_path):
    desc = read_rules_file(GAMES_DIR / "ticTacToe.kif")
    load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    (entry,) = tmp_path.glob("*.npz")
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        entry.write_bytes(b"not an npz file\n" * 64)
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a readable npz of the current format whose arrays are not a compiled game
        with open(entry, "wb") as f:
            np.savez(f, __meta__=np.array('{"format": "%s"}' % engine_cache.FORMAT), junk=np.zeros(3))
    eng = load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert eng.info["engine"] == "compiled" and eng.info["source"] == "built", eng.info
    seeded_walks(eng, PrologReasoner(desc), seed=3, seconds=0.5)
    # the bad entry was replaced by a good one
    assert load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET).info["source"] == "cache"


def test_corrupt_cache_entry_is_logged(tmp_path, caplog):
    desc = read_rules_file(GAMES_DIR / "ticTacToe.kif")
    load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    (entry,) = tmp_path.glob("*.npz")
    entry.write_bytes(b"garbage")
    with caplog.at_level(logging.INFO):
        load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    assert any(entry.name in r.getMessage() or "cache" in r.getMessage().lower() for r in caplog.records)


def test_unreadable_cache_entry_is_only_a_miss(tmp_path):
    """cache.load itself: every damaged file is None, never an exception."""
    desc = read_rules_file(GAMES_DIR / "ticTacToe.kif")
    key, canon = engine_cache.structure_key(desc.rules)
    path = engine_cache.entry_path(tmp_path, key)
    assert engine_cache.load(path, canon) is None  # absent
    path.write_bytes(b"PK\x03\x04" + b"\0" * 40)    # a zip header and nothing else
    assert engine_cache.load(path, canon) is None


# ----------------------------------------------------------------------------- fallback
def test_too_small_budget_falls_back_to_the_nonground_engine_with_the_reason(caplog):
    from agent.engine.nonground import NonGroundEngine
    desc = read_rules_file(GAMES_DIR / "connectFour.kif")
    with caplog.at_level(logging.WARNING, logger="ggp_persona.engine"):
        sm = load_engine(desc, engine="auto", budget_seconds=1e-6, use_cache=False)
    assert isinstance(sm, NonGroundEngine)
    assert sm.info["engine"] == "nonground"
    reason = sm.info["reason"]
    assert "1e-06" in reason or "longer than" in reason or "no time left" in reason, reason
    assert any("non-ground" in r.getMessage() for r in caplog.records), "the fallback was not logged"
    assert sm.legal_moves(sm.initial_state(), 0)  # and it plays


def test_rules_neither_engine_takes_fall_back_to_prolog_with_both_reasons(caplog):
    # a term that grows without bound: no finite grounding, no finite set of shapes
    desc = parse_rules("""
    (role r) (init (count z)) (legal r go)
    (<= (next (count (s ?x))) (true (count ?x)))
    (<= terminal (true (count (s (s (s z))))))
    (goal r 100)
    """)
    with caplog.at_level(logging.WARNING, logger="ggp_persona.engine"):
        sm = load_engine(desc, engine="auto", budget_seconds=1e-6, use_cache=False)
    assert isinstance(sm, PrologReasoner)
    assert "without bound" in sm.info["reason"], sm.info["reason"]
    assert any("Prolog" in r.getMessage() for r in caplog.records)
    assert sm.random_playout(sm.initial_state(), seed=1)[0] == 3


def test_too_small_budget_with_engine_compiled_raises():
    desc = read_rules_file(GAMES_DIR / "connectFour.kif")
    with pytest.raises(GroundingError):
        load_engine(desc, engine="compiled", budget_seconds=1e-6, use_cache=False)


def test_engine_prolog_is_asked_for():
    sm = load_engine(read_rules_file(GAMES_DIR / "ticTacToe.kif"), engine="prolog")
    assert isinstance(sm, PrologReasoner) and sm.info == {"engine": "prolog", "reason": "asked for"}


# ----------------------------------------------------------------------------- kernels
# game -> (the longest game in joint moves, the goal vectors a finished game may have)
PLAYOUT_EXPECT = {
    "ticTacToe": (9, {(100, 0), (0, 100), (50, 50)}),
    "connectFour": (42, {(100, 0), (0, 100), (50, 50)}),
    "nineBoardTicTacToe": (81, {(100, 0), (0, 100), (50, 50)}),
    "breakthrough": (2 * 16 * 6, {(100, 0), (0, 100)}),
}


@pytest.mark.parametrize("game", sorted(PLAYOUT_EXPECT))
def test_random_playout_kernel_depth_and_goals(game, engine_cache_dir):
    c, p = engines(GAMES_DIR / f"{game}.kif", engine_cache_dir)
    g = c.game
    longest, outcomes = PLAYOUT_EXPECT[game]
    vals = K.new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    K.seed(12345)
    depths = []
    for i in range(200):
        d = K.random_playout(g, g.init_state, vals, 10_000, goals)
        assert 1 <= d <= longest, f"playout {i}: depth {d}"
        assert tuple(int(v) for v in goals) in outcomes, f"playout {i}: goals {goals}"
        assert K.is_terminal(g, vals), "the work buffer should end in the final state"
        if i < 10 and hasattr(K, "current_state"):  # the final state, checked by Prolog
            bits = np.zeros(g.n_words, dtype=np.uint64)
            K.current_state(g, vals, bits)
            final = c.unpack(bits)
            assert p.is_terminal(final)
            assert [[int(v)] for v in goals] == p.goal_values(final)
        depths.append(d)
    assert len(set(depths)) > 1, "200 random playouts all had the same length"
    # the same seed gives the same playout
    K.seed(99)
    a = (K.random_playout(g, g.init_state, vals, 10_000, goals), tuple(goals))
    K.seed(99)
    assert (K.random_playout(g, g.init_state, vals, 10_000, goals), tuple(goals)) == a
    # the depth cap
    assert K.random_playout(g, g.init_state, vals, 2, goals) == -1


def test_random_playout_through_the_engine_wrapper(engine_cache_dir):
    c, p = engines(GAMES_DIR / "connectFour.kif", engine_cache_dir)
    depth, goals = c.random_playout(c.initial_state(), seed=4)
    assert 7 <= depth <= 42 and goals in ([[100], [0]], [[0], [100]], [[50], [50]])
    assert c.random_playout(c.initial_state(), seed=4) == (depth, goals)


@needs_shared
@pytest.mark.parametrize("game", ["base/games/smallest_4player/v0", "aaai2006/games/bunk_s.3359146085/v0"],
                         ids=lambda g: g.split("/")[2])
def test_random_playout_kernel_on_corpus_games(game, shared_dir, engine_cache_dir):
    """Simultaneous moves and 3+ roles: the goals are values the goal rules can give."""
    c, _ = engines(corpus_rules(shared_dir, game), engine_cache_dir)
    g = c.game
    vals = K.new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    K.seed(7)
    for i in range(100):
        d = K.random_playout(g, g.init_state, vals, 10_000, goals)
        assert d >= 1, f"playout {i}: depth {d}"
        for r in range(g.n_roles):
            possible = {int(v) for v in g.goal_value[g.goal_start[r]:g.goal_start[r + 1]]} | {0}
            assert int(goals[r]) in possible, f"playout {i}: role {r} goal {goals[r]} not in {possible}"


# ----------------------------------------------------------------------------- goal-only logic
# One player paints cells of a row of 4 for 5 moves; the goal reads a recursive relation
# ("a painted path from cell 1 to cell 4") and a negation of it, which nothing else reads:
# the network's goal-only part, with a recursive block in it.
PAINTER = """
(role p)
(init (step 0))
(succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5)
(cell 1) (cell 2) (cell 3) (cell 4)
(adj 1 2) (adj 2 3) (adj 3 4)
(<= (nb ?x ?y) (adj ?x ?y))
(<= (nb ?x ?y) (adj ?y ?x))
(<= (legal p (paint ?c)) (cell ?c))
(<= (next (painted ?c)) (does p (paint ?c)))
(<= (next (painted ?c)) (true (painted ?c)))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= terminal (true (step 5)))
(<= (reach ?x ?x) (true (painted ?x)))
(<= (reach ?x ?z) (true (painted ?x)) (nb ?x ?y) (reach ?y ?z))
(<= (goal p 100) (reach 1 4))
(<= (goal p 50) (true (painted 1)) (not (reach 1 4)))
(<= (goal p 0) (not (true (painted 1))))
"""


def test_goal_only_logic_is_found_from_the_structure_and_left_out_of_the_steps(tmp_path):
    desc = parse_rules(PAINTER)
    c = load_engine(desc, engine="compiled", budget_seconds=BUILD_BUDGET, cache_dir=tmp_path)
    g = c.game
    lazy = np.zeros(g.n_nodes, dtype=bool)
    lazy_start, lazy_edge, lazy_src, items = K.lazy_parts(g)
    lazy[items[items >= 0]] = True
    for b in (-1 - items[items < 0]):
        lazy[g.ent_atom[g.blk_start[b]:g.blk_end[b]]] = True
    assert (items < 0).any(), "the recursive goal relation should be a goal-only block"
    assert lazy[g.goal_atom].all(), "the goal atoms feed nothing else: goal-only"
    outputs = np.concatenate([g.legal_atom, g.next_atom, [g.terminal_atom]])
    assert not lazy[outputs].any() and not lazy[:g.n_base].any()
    assert not lazy[g.out_edge >> 2].any(), "a step must never walk an edge into goal-only logic"
    assert lazy[lazy_edge >> 2].all()


def test_goals_after_steps_agree_with_prolog(tmp_path):
    """The goals read after the steps of a playout loop (the lazily settled part) equal
    Prolog's at every state of exhaustive walks, and those of a freshly loaded buffer."""
    desc = parse_rules(PAINTER)
    c = load_engine(desc, engine="compiled", budget_seconds=BUILD_BUDGET, cache_dir=tmp_path)
    p = PrologReasoner(desc)
    g = c.game
    vals = K.new_vals(g)
    goals = np.zeros(1, dtype=np.int32)
    fresh = np.zeros(1, dtype=np.int32)
    bits = np.zeros(g.n_words, dtype=np.uint64)
    seen = set()
    for seq in range(4 ** 5):
        K.load_state(g, g.init_state, vals)
        for k in range(5):
            K.advance(g, vals, np.array([(seq >> (2 * k)) & 3], dtype=np.int32))
            K.current_state(g, vals, bits)
            state = c.unpack(bits)
            K.goal_vector(g, vals, goals)
            if state not in seen:
                seen.add(state)
                assert [[int(goals[0])]] == p.goal_values(state), show(state)
            other = K.new_vals(g)
            K.load_state(g, bits, other)
            K._rebuild(g, other)  # every node from scratch
            K.goal_vector(g, other, fresh)
            assert fresh[0] == goals[0], show(state)
    assert {v for s in seen for v in p.goal_values(s)[0]} == {0, 50, 100}
    K.seed(3)
    for _ in range(50):  # the playout kernel settles the goals at the terminal state
        assert K.random_playout(g, g.init_state, vals, 100, goals) == 5
        K.current_state(g, vals, bits)
        assert [[int(goals[0])]] == p.goal_values(c.unpack(bits))


@needs_shared
def test_goals_settled_incrementally_equal_goals_from_scratch_in_reversi(shared_dir, engine_cache_dir):
    """Reversi's piece counts are goal-only logic (most of its network): along random walks,
    goals settled from the changes since the last reading equal goals recomputed whole."""
    c, _ = engines(corpus_rules(shared_dir, "base/games/reversi/v0"), engine_cache_dir)
    g = c.game
    assert len(K.lazy_parts(g)[3]) > g.n_nodes // 2
    vals, other = K.new_vals(g), K.new_vals(g)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    fresh = np.zeros(g.n_roles, dtype=np.int32)
    bits = np.zeros(g.n_words, dtype=np.uint64)
    legal = np.zeros(max(int(x) for x in g.role_nmoves) + 1, dtype=np.int32)
    rng = random.Random(5)
    readings = set()
    for walk in range(6):
        K.load_state(g, g.init_state, vals)
        while not K.is_terminal(g, vals):
            joint = np.array([legal[rng.randrange(K.legal_moves(g, vals, r, legal))]
                              for r in range(g.n_roles)], dtype=np.int32)
            K.advance(g, vals, joint)
            if rng.random() < 0.3 or K.is_terminal(g, vals):
                K.goal_vector(g, vals, goals)
                K.current_state(g, vals, bits)
                K.load_state(g, bits, other)
                K._rebuild(g, other)
                K.goal_vector(g, other, fresh)
                assert list(goals) == list(fresh), f"walk {walk}: {show(c.unpack(bits))}"
                readings.add(tuple(int(x) for x in goals))
    assert len(readings) > 2


def test_turn_fluents_gate_the_legal_moves_instead_of_feeding_them(engine_cache_dir):
    """Breakthrough: each role's moves are gated by one fluent (found from the structure: the
    positive fluent input most legal atoms share), which flips on every move; its edges into
    the legal atoms are gone, and legal moves read through the gates agree with Prolog's
    (the random walks above) and between the two readers (legal_moves, legal_into)."""
    c, p = engines(GAMES_DIR / "breakthrough.kif", engine_cache_dir)
    g = c.game
    gated = g.legal_gate[0] >= 0
    assert gated.mean() > 0.9
    for r in range(g.n_roles):
        gates = g.legal_gate[0, g.legal_start[r]:g.legal_start[r + 1]]
        assert len(set(gates[gates >= 0].tolist())) <= 2   # its own turn; its noop the other's
    gate_of = {int(a): int(f) for a, f in zip(g.legal_atom, g.legal_gate[0]) if f >= 0}
    for f in set(gate_of.values()):
        assert f < g.n_base
        targets = set((g.out_edge[g.out_start[f]:g.out_start[f + 1]] >> 2).tolist())
        assert not any(gate_of.get(t) == f for t in targets), "a gate still feeds what it gates"
    vals = K.new_vals(g)
    h = K.hot(g, vals)
    a = np.zeros(int(g.role_nmoves.max()) + 1, dtype=np.int32)
    b = np.zeros_like(a)
    rng = random.Random(2)
    K.load_state(g, g.init_state, vals)
    before = {f: int(vals[f]) for f in set(gate_of.values())}
    for step in range(40):
        if K.is_terminal(g, vals):
            break
        joint = np.zeros(g.n_roles, dtype=np.int32)
        for r in range(g.n_roles):
            n = K.legal_moves(g, vals, r, a)
            assert K.legal_into(h, r, b) == n and (a[:n] == b[:n]).all()
            joint[r] = a[rng.randrange(n)]
        K.advance(g, vals, joint)
        now = {f: int(vals[f]) for f in before}
        assert all(now[f] != before[f] for f in before), "a gate fluent should flip on every move"
        before = now


STUCK_GAME = """
(role a) (role b)
(init (control a))
(init (blank 1)) (init (blank 2)) (init (blank 3)) (init (blank 4))
(allowed a 1) (allowed a 2) (allowed a 3) (allowed b 2) (allowed b 3) (allowed b 4)
(<= (legal ?r (place ?x)) (true (control ?r)) (true (blank ?x)) (allowed ?r ?x))
(<= (legal a noop) (true (control b)))
(<= (legal b noop) (true (control a)))
(<= (placed ?x) (does ?r (place ?x)))
(<= (next (blank ?x)) (true (blank ?x)) (not (placed ?x)))
(<= (next (mark ?r ?x)) (does ?r (place ?x)))
(<= (next (mark ?r ?x)) (true (mark ?r ?x)))
(<= (next (control a)) (true (control b)))
(<= (next (control b)) (true (control a)))
(<= (can_move ?r) (legal ?r (place ?x)))
(<= terminal (true (control ?r)) (not (can_move ?r)))
(<= (wins ?r) (role ?r) (true (control ?o)) (distinct ?o ?r) (not (can_move ?o)))
(<= (goal ?r 100) (wins ?r))
(<= (goal ?r 0) (role ?r) (not (wins ?r)))
"""


def _walk_every_state(c, p) -> tuple:
    """Every state reachable from the initial one, each reached through the kernels'
    incremental path (the initial state loaded, then the moves one by one), checked against
    Prolog on the state itself, legal moves, terminal and goals; returns (states seen, goal
    vectors at the ends)."""
    g = c.game
    vals = K.new_vals(g)
    legal = np.zeros(int(g.role_nmoves.max()) + 1, dtype=np.int32)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    bits = np.zeros(g.n_words, dtype=np.uint64)
    seen, ends = set(), set()

    def walk(path, state):
        K.load_state(g, g.init_state, vals)  # then the moves one by one: the incremental path
        for joint in path:
            K.advance(g, vals, np.array(joint, dtype=np.int32))
        K.current_state(g, vals, bits)
        assert c.unpack(bits) == state, show(state)
        seen.add(state)
        ours = [sorted(render(c.move_terms[r][k]) for k in legal[:K.legal_moves(g, vals, r, legal)])
                for r in range(g.n_roles)]
        assert ours == [sorted(render(m) for m in p.legal_moves(state, r)) for r in range(g.n_roles)], show(state)
        assert K.is_terminal(g, vals) == p.is_terminal(state), show(state)
        K.goal_vector(g, vals, goals)
        assert [[int(x)] for x in goals] == p.goal_values(state), show(state)
        if p.is_terminal(state):
            ends.add(tuple(int(x) for x in goals))
            return
        per_role = [legal[:K.legal_moves(g, vals, r, legal)].copy() for r in range(g.n_roles)]
        for joint in itertools.product(*per_role):
            terms = [c.move_terms[r][int(k)] for r, k in enumerate(joint)]
            walk(path + [tuple(int(m) for m in joint)], p.next_state(state, terms))

    walk([], p.initial_state())
    return seen, ends


def test_gate_is_pushed_through_an_or_that_reads_the_legal_moves(tmp_path, engine_cache_dir):
    """Legal atoms read by another rule (here "some move left", read by terminal and goals,
    as checkers' stuck rule does) are gated too: the turn fluent feeds one node of the OR
    instead of every legal atom.  Every reachable state of this small game, walked through
    the kernels' incremental path, agrees with Prolog on legal moves, terminal and goals."""
    rules = tmp_path / "stuck.kif"
    rules.write_text(STUCK_GAME)
    c, p = engines(rules, engine_cache_dir)
    g = c.game
    place = [k for r in range(g.n_roles) for k, m in enumerate(c.move_terms[r])
             if render(m) != "noop" for k in [g.legal_start[r] + k]]
    assert len(place) == 6 and (g.legal_gate[0, place] >= 0).all()
    gates = set(g.legal_gate[0, place].tolist())
    assert len(gates) == 2
    for f in gates:  # the turn fluent no longer feeds the legal atoms it gates
        targets = set((g.out_edge[g.out_start[f]:g.out_start[f + 1]] >> 2).tolist())
        assert not targets & {int(g.legal_atom[k]) for k in place if g.legal_gate[0, k] == f}
    seen, ends = _walk_every_state(c, p)
    assert len(seen) > 10 and ends == {(100, 0), (0, 100)}


JUMP_GAME = """
(role a) (role b)
(init (control a)) (init (time 0))
(init (cell 1 a)) (init (cell 2 b)) (init (cell 3 e)) (init (cell 4 a)) (init (cell 5 e))
(succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5)
(tick 0 1) (tick 1 2) (tick 2 3) (tick 3 4) (tick 4 5)
(opp a b) (opp b a) (edge 1) (edge 5)
(<= (adj ?x ?y) (succ ?x ?y))
(<= (adj ?x ?y) (succ ?y ?x))
(<= (over ?x ?m ?y) (succ ?x ?m) (succ ?m ?y))
(<= (over ?x ?m ?y) (succ ?y ?m) (succ ?m ?x))
(<= (captures ?r ?x ?m ?y) (over ?x ?m ?y) (true (cell ?m ?o)) (opp ?r ?o))
(<= (safe ?x) (true (cell ?x a)) (not (edge ?x)))
(<= (guarded ?x) (safe ?x))
(<= (legal ?r (step ?x ?y)) (true (control ?r)) (true (cell ?x ?r)) (adj ?x ?y) (true (cell ?y e))
    (not (guarded ?y)))
(<= (legal ?r (jump ?x ?y)) (true (control ?r)) (true (cell ?x ?r)) (over ?x ?m ?y) (true (cell ?y e))
    (captures ?r ?x ?m ?y))
(<= (legal a noop) (true (control b)))
(<= (legal b noop) (true (control a)))
(<= (next (cell ?z ?p)) (true (cell ?z ?p)) (does ?r (jump ?x ?y)) (not (captures ?r ?x ?z ?y))
    (distinct ?z ?x) (distinct ?z ?y))
(<= (next (cell ?z ?p)) (true (cell ?z ?p)) (does ?r (step ?x ?y)) (distinct ?z ?x) (distinct ?z ?y))
(<= (next (cell ?x e)) (does ?r (step ?x ?y)))
(<= (next (cell ?y ?r)) (does ?r (step ?x ?y)))
(<= (next (cell ?x e)) (does ?r (jump ?x ?y)))
(<= (next (cell ?y ?r)) (does ?r (jump ?x ?y)))
(<= (next (cell ?m e)) (does ?r (jump ?x ?y)) (captures ?r ?x ?m ?y))
(<= (next (control a)) (true (control b)))
(<= (next (control b)) (true (control a)))
(<= (next (time ?n)) (true (time ?m)) (tick ?m ?n))
(<= (canmove ?r) (legal ?r (step ?x ?y)))
(<= (canmove ?r) (legal ?r (jump ?x ?y)))
(<= (stuck ?r) (true (control ?r)) (not (canmove ?r)))
(<= terminal (stuck ?r))
(<= terminal (true (time 5)))
(<= (goal ?r 0) (stuck ?r))
(<= (goal ?r 100) (role ?r) (not (stuck ?r)))
"""


def _edges(g) -> tuple:
    """Every edge of the network, the steps' and the goal-only ones: (source node, edge
    ``target * 4 + flags``, in-degree and out-degree of each node)."""
    lazy_start, lazy_edge, _, _ = K.lazy_parts(g)
    src = np.concatenate([np.repeat(np.arange(g.n_nodes), np.diff(g.out_start)),
                          np.repeat(np.arange(g.n_nodes), np.diff(lazy_start))])
    edges = np.concatenate([g.out_edge, lazy_edge]).astype(np.int64)
    return (src, edges, np.bincount(edges >> 2, minlength=g.n_nodes)[:g.n_nodes],
            np.bincount(src, minlength=g.n_nodes))


def _outputs(g) -> np.ndarray:
    """The legal, next, goal and terminal atoms, whose values are read from the work buffer."""
    outputs = np.zeros(g.n_nodes, dtype=bool)
    for a in (g.legal_atom, g.next_atom, g.goal_atom, [g.terminal_atom] if g.terminal_atom >= 0 else []):
        outputs[np.asarray(a, dtype=np.int64)] = True
    return outputs


def _constant_false_nodes(g) -> np.ndarray:
    """Derived nodes that nothing feeds and that need a true input: false in every state.
    (Outputs are left out: a legal, next, goal or terminal atom folded false keeps its slot.)"""
    _, _, indeg, outdeg = _edges(g)
    # (without edges out either: a copy whose edges went to its input, compile._bypass_copies)
    return np.nonzero((g.node_input == 0) & ~_outputs(g) & (g.node_thr >= 1) & (indeg == 0) & (outdeg > 0))[0]


def test_atoms_no_rule_can_make_true_are_folded_away(tmp_path, engine_cache_dir):
    """The relaxed grounder names atoms under ``not`` that no rule can make true (here the
    frame axiom asks "no capture over this cell" of every jump and every cell, as checkers'
    does; and ``guarded`` of an edge cell loses its only rule to a static negation, one
    round later).  They are folded as false: the network keeps one such node, the shared
    false atom, and every reachable state (state, moves, terminal, goals) agrees with Prolog."""
    rules = tmp_path / "jump.kif"
    rules.write_text(JUMP_GAME)
    c, p = engines(rules, engine_cache_dir)
    assert len(_constant_false_nodes(c.game)) <= 1
    seen, ends = _walk_every_state(c, p)
    assert len(seen) > 10 and {0, 100} <= {v for e in ends for v in e}


@needs_shared
def test_checkers_capture_tests_no_jump_can_pass_are_folded_away(shared_dir, engine_cache_dir):
    """Checkers' frame axiom: 10,000 capture atoms no jump makes true, each a node and a
    helper per move before the fold (59,561 nodes); its reference trace is checked with
    the other corpus games (test_traces)."""
    c, _ = engines(corpus_rules(shared_dir, "base/games/checkers/v1"), engine_cache_dir)
    assert len(_constant_false_nodes(c.game)) <= 1
    assert c.game.n_nodes < 10_000


COPY_GAME = """
(role a) (role b)
(init (control a)) (init (at 0)) (init (time 0))
(num 0) (num 1) (num 2) (num 3)
(succ 0 1) (succ 1 2) (succ 2 3)
(<= (adj ?x ?y) (succ ?x ?y))
(<= (adj ?x ?y) (succ ?y ?x))
(<= (mover ?r) (true (control ?r)))
(<= (acting ?r) (mover ?r))
(<= (idle ?r) (role ?r) (not (acting ?r)))
(<= (here ?x) (true (at ?x)))
(<= (seen ?x) (here ?x))
(<= (seen ?y) (seen ?x) (adj ?x ?y) (true (open ?y)))
(<= (legal ?r (go ?y)) (acting ?r) (true (at ?x)) (adj ?x ?y))
(<= (legal ?r (open ?y)) (acting ?r) (num ?y) (not (true (open ?y))))
(<= (legal ?r noop) (idle ?r))
(<= (next (at ?y)) (does ?r (go ?y)))
(<= (next (at ?x)) (true (at ?x)) (does ?r (open ?y)))
(<= (next (open ?y)) (does ?r (open ?y)))
(<= (next (open ?y)) (true (open ?y)))
(<= (next (control b)) (true (control a)))
(<= (next (control a)) (true (control b)))
(<= (next (time ?n)) (true (time ?m)) (succ ?m ?n))
(<= terminal (true (time 3)))
(<= (goal ?r 100) (idle ?r) (seen 3))
(<= (goal ?r 50) (acting ?r))
(<= (goal ?r 0) (idle ?r) (not (seen 3)))
"""


def test_nodes_that_only_copy_an_input_are_bypassed(tmp_path, engine_cache_dir):
    """An atom with one one-literal rule only copies its input (``acting`` of ``mover`` of
    a fluent; ``idle``, a negated copy): its edges out go to the input, polarity flipped for
    ``not``, so a change is one event instead of one per link (checkers: 18 of a step's 93
    events).  Kept: a copy read inside a recursive component (``here``, read by ``seen``'s
    cycle), whose value the component's evaluation reads.  Every reachable state agrees with
    Prolog through the incremental path."""
    rules = tmp_path / "copies.kif"
    rules.write_text(COPY_GAME)
    c, p = engines(rules, engine_cache_dir)
    g = c.game
    src, edges, indeg, outdeg = _edges(g)
    read = g.node_input.astype(bool) | _outputs(g)
    loop = (edges & 2) != 0
    read_by_loop = np.zeros(g.n_nodes, dtype=bool)
    read_by_loop[src[loop]] = True
    read[edges[loop] >> 2] = True   # the atoms of a recursive component are computed whole
    copies = (indeg == 1) & (g.node_thr == 1) & ~read
    assert copies.any() and not (copies & ~read_by_loop).any()
    bypassed = (indeg == 0) & (outdeg == 0) & ~read   # mover, acting, idle: one per role each
    assert bypassed.sum() >= 6
    seen, ends = _walk_every_state(c, p)
    assert len(seen) > 20 and {50, 100, 0} <= {v for e in ends for v in e}


MERGE_GAME = """
(role a)
(init (t 0))
(succ 0 1) (succ 1 2) (succ 2 3)
(flag p) (flag q) (idx 1) (idx 2)
(<= (legal a (flip ?f ?x)) (flag ?f) (idx ?x))
(legal a tog)
(<= (legal a (say any)) any)
(<= (legal a (say all)) all)
(<= (legal a (say quiet)) quiet)
(<= (legal a (say free)) free)
(<= (next (on ?f ?x)) (does a (flip ?f ?x)) (not (true (on ?f ?x))))
(<= (next (on ?f ?x)) (true (on ?f ?x)) (not (does a (flip ?f ?x))))
(<= (next r) (does a tog) (not (true r)))
(<= (next r) (true r) (not (does a tog)))
(<= (next (t ?n)) (true (t ?m)) (succ ?m ?n))
(<= (near ?x) (true (on p ?x)))
(<= (near ?x) (true (on q ?x)))
(<= any (near 1))
(<= any (near 2))
(<= (both ?x) (true (on p ?x)) (true (on q ?x)))
(<= all (both 1) (both 2) (true r))
(<= loud (true (on p 1)))
(<= loud (true (on q 2)))
(<= quiet (true r) (not loud))
(<= busy (true (on p 2)) (true (on q 1)))
(<= free (not busy))
(<= free (true r))
(<= terminal (true (t 3)))
(<= (goal a 100) all)
(<= (goal a 0) (not all))
"""


def _unmerged(g) -> list:
    """Nodes that ``compile._merge_into_reader`` should have merged and did not: one edge
    out, to a node of the matching kind (OR into OR or AND into AND, the other kind through
    a negated edge), nothing reading their value."""
    src, edges, indeg, outdeg = _edges(g)
    tgt = edges >> 2
    read = g.node_input.astype(bool) | _outputs(g)
    loop = (edges & 2) != 0
    read[src[loop]] = True
    read[tgt[loop]] = True
    is_or = g.node_thr == 1
    is_and = (g.node_thr == indeg) & ~is_or
    bad = []
    for k in np.nonzero((outdeg == 1)[src] & ~read[src] & (indeg >= 2)[src] & ~loop)[0]:
        i, p = src[k], tgt[k]
        if (is_or[i] or is_and[i]) and (is_or[p] or is_and[p]) and \
                (is_or[i] == is_or[p]) == ((edges[k] & 1) == 0):
            bad.append(int(i))
    return bad


def test_an_or_read_only_by_an_or_is_merged_into_it(tmp_path, engine_cache_dir):
    """OR(OR(a, b), c) = OR(a, b, c), AND(AND(a, b), c) = AND(a, b, c), AND(not OR(a, b), c)
    = AND(not a, not b, c), OR(not AND(a, b), c) = OR(not a, not b, c): a node read by one
    node of the matching kind gives it its inputs (``near`` into ``any`` into its legal
    atom, ``both`` into ``all``, ``loud`` into ``quiet``, ``busy`` into ``free``), one event
    less for each of its changes (checkers' frame axioms: 75 to 51 events a step).  None
    is left unmerged, and every reachable state agrees with Prolog."""
    rules = tmp_path / "merge.kif"
    rules.write_text(MERGE_GAME)
    c, p = engines(rules, engine_cache_dir)
    g = c.game
    _, _, indeg, outdeg = _edges(g)
    gone = (outdeg == 0) & (indeg == 0) & (g.node_input == 0)
    assert gone.sum() >= 7 and _unmerged(g) == []
    seen, _ = _walk_every_state(c, p)
    assert len(seen) >= 32


@needs_shared
def test_no_node_is_left_unmerged_in_checkers(shared_dir, engine_cache_dir):
    c, _ = engines(corpus_rules(shared_dir, "base/games/checkers/v1"), engine_cache_dir)
    assert _unmerged(c.game) == []


# ----------------------------------------------------------------------------- legal lists
def _lists_agree_with_the_scan(g, vals, where: str) -> None:
    """The incremental legal lists (kernels, "Legal lists") hold, per gate run, exactly the
    legal indices whose atom is true, with consistent slots; and through the gates they give
    the same set of moves as the scan (legal_moves), and the same count."""
    lv = K._legal_area(g, vals)
    nl, b = len(g.legal_atom), g.n_nodes
    run0 = (lv[3:4 * nl:4] - b) // 4
    listed = set()
    for j in sorted(set(run0.tolist())):
        members = [(int(lv[4 * (j + i) + 1]) - b) // 4 for i in range(lv[4 * j + 2])]
        true_in_run = {k for k in range(nl) if run0[k] == j and vals[g.legal_atom[k]] == 1}
        assert sorted(members) == sorted(true_in_run), f"run {j} at {where}"
        assert all(lv[4 * k] == b + 4 * (j + i) for i, k in enumerate(members)), f"slots, run {j} at {where}"
        listed |= true_in_run
    assert all(lv[4 * k] == -1 for k in range(nl) if k not in listed), f"unlisted atoms at {where}"
    out = np.zeros(int(g.role_nmoves.max()) + 1, dtype=np.int32)
    for r in range(g.n_roles):
        n = K.legal_moves(g, vals, r, out)
        cnt = K._views(g, vals)[0]
        picked = [K._legal_nth(g.legal_start, g.legal_gate, cnt, nl, vals, r, i)
                  for i in range(K._legal_count(g.legal_start, g.legal_gate, cnt, nl, vals, r))]
        assert sorted(picked) == out[:n].tolist(), f"role {r} at {where}"


# Legal moves that read legal moves through a cycle: the legal atoms are a recursive component,
# recomputed whole (kernels._loops), not flipped one by one by the propagation.
LOOPED_LEGAL_GAME = """
(role a)
(init (at 1))
(edge 1 2) (edge 2 3) (edge 3 1) (edge 4 5) (edge 5 4) (edge 3 4)
(cell 1) (cell 2) (cell 3) (cell 4) (cell 5)
(<= (legal a (go ?x)) (true (at ?x)))
(<= (legal a (go ?y)) (legal a (go ?x)) (edge ?x ?y) (not (true (blocked ?y))))
(<= (next (at ?y)) (does a (go ?x)) (edge ?x ?y))
(<= (next (blocked ?x)) (does a (go ?x)))
(<= (next (blocked ?x)) (true (blocked ?x)))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(init (step 0))
(succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6)
(<= terminal (true (step 6)))
(<= (goal a 100) (true (blocked 4)))
(<= (goal a 0) (not (true (blocked 4))))
"""

LEGAL_LIST_GAMES = {   # what each covers
    "breakthrough": "turn-gated moves, a role's noop gated by the other role's turn: two runs",
    "base/games/pentago/v0": "three gate runs per role, one ungated",
    "aaai2006/games/bunk_s.3359146085/v0": "simultaneous moves, scrambled",
    "base/games/smallest_4player/v0": "4 roles, simultaneous, recursion",
    "stuck": "legal atoms read by another rule (gate pushed through an OR)",
    "looped": "legal atoms in a recursive component",
}


@pytest.mark.parametrize("game", list(LEGAL_LIST_GAMES))
def test_incremental_legal_lists_equal_the_scan(game, tmp_path, request, monkeypatch):
    """The legal lists that the random playouts keep up to date through the propagation
    equal what the scan of every legal atom gives, after playouts of random length from
    random states (loaded through the lists' upkeep, or reached by other paths in between:
    load_state, rebuilds).  (Lists forced on: the compiler keeps them only for games with
    long gate runs.)"""
    monkeypatch.setattr(engine_compile, "LEGAL_LIST_MIN_RUN", 0)
    if game == "breakthrough":
        path = GAMES_DIR / "breakthrough.kif"
    elif game in ("stuck", "looped"):
        path = tmp_path / f"{game}.kif"
        path.write_text(STUCK_GAME if game == "stuck" else LOOPED_LEGAL_GAME)
    else:
        path = corpus_rules(request.getfixturevalue("shared_dir"), game)
    g = load_engine(read_rules_file(path), engine="compiled", budget_seconds=BUILD_BUDGET, use_cache=False).game
    assert g.legal_lists == 1
    if game == "looped":
        assert (g.atom_block[g.legal_atom] >= 0).all()
    vals = K.new_vals(g)
    rng = random.Random(11)
    bits = np.zeros(g.n_words, dtype=np.uint64)
    goals = np.zeros(g.n_roles, dtype=np.int32)
    seen = [g.init_state.copy()]
    depths = []
    for trial in range(120):
        u, cap = rng.random(), rng.randint(1, 4)
        if u < 0.25:    # from an arbitrary earlier state: loaded through the lists' upkeep
            d = K.random_playout(g, seen[rng.randrange(len(seen))], vals, cap, goals)
        elif u < 0.35:  # three playouts in one call, each loading the state anew
            d = K._playouts(g, seen[rng.randrange(len(seen))], vals, cap, goals, 3, True)[1]
        else:           # on from where the buffer is (moved by other paths in between)
            d = K.random_playout_here(g, vals, cap, goals)
        _lists_agree_with_the_scan(g, vals, f"trial {trial}")
        depths.append(d)
        K.current_state(g, vals, bits)
        if not K.is_terminal(g, vals):
            seen.append(bits.copy())
        if K.is_terminal(g, vals) or rng.random() < 0.2:
            K.load_state(g, seen[rng.randrange(len(seen))], vals)   # not through the lists
        elif rng.random() < 0.1:
            K._rebuild(g, vals)
    assert sum(d != 0 for d in depths) >= 60, "most trials should make moves (with the lists kept)"


@pytest.mark.parametrize("lists", [0, 1])
def test_random_playout_picks_each_legal_move_uniformly(lists, monkeypatch):
    """The playout kernel picks from the unordered legal lists (or by the scan): from
    ticTacToe's first state (nine marks for one role, one noop for the other) every first
    move is made, each about 1/9 of the time, and each is legal (the state after it is one
    a legal joint gives)."""
    monkeypatch.setattr(engine_compile, "LEGAL_LIST_MIN_RUN", 0 if lists else 10 ** 9)
    g = load_engine(read_rules_file(GAMES_DIR / "ticTacToe.kif"), engine="compiled",
                    budget_seconds=BUILD_BUDGET, use_cache=False).game
    assert g.legal_lists == lists
    vals = K.new_vals(g)
    K.load_state(g, g.init_state, vals)
    legal = np.zeros(int(g.role_nmoves.max()) + 1, dtype=np.int32)
    per_role = [legal[:K.legal_moves(g, vals, r, legal)].tolist() for r in range(g.n_roles)]
    assert sorted(len(m) for m in per_role) == [1, 9]
    after = {}
    out = np.zeros(g.n_words, dtype=np.uint64)
    for m0 in per_role[0]:
        for m1 in per_role[1]:
            K.next_state(g, vals, np.array([m0, m1], dtype=np.int32), out)
            after[tuple(out.tolist())] = 0
    goals = np.zeros(g.n_roles, dtype=np.int32)
    K.seed(4)
    draws = 9000
    for _ in range(draws):
        assert K.random_playout(g, g.init_state, vals, 1, goals) == -1   # one joint move, then the cap
        K.current_state(g, vals, out)
        key = tuple(out.tolist())
        assert key in after, "the playout made an illegal move"
        after[key] += 1
    counts = sorted(after.values())
    assert len(counts) == 9 and counts[0] > draws / 9 * 0.8 and counts[-1] < draws / 9 * 1.2, counts


def test_legal_lists_only_where_a_role_has_a_long_gate_run(engine_cache_dir):
    """The compiler keeps legal lists by structure: breakthrough (a run of 154 moves gated by
    the turn) has them, ticTacToe (9) does not; the two have the same moves either way (the
    walks above)."""
    assert engines(GAMES_DIR / "breakthrough.kif", engine_cache_dir)[0].game.legal_lists == 1
    assert engines(GAMES_DIR / "ticTacToe.kif", engine_cache_dir)[0].game.legal_lists == 0


# ----------------------------------------------------------------------------- step modes
def _walk_both_orders(g, seed: int, walks: int) -> list:
    """Seeded random walks (steps, and loads of earlier states) in each of the four step
    modes: the first events of each propagation in either order (``ons_first`` 0 and 1),
    the moves off after each step or kept on (``keep_moves`` 0 and 1).  Every node value and
    counter after each step or load, checked against a rebuild from scratch (which keeps the
    moves that are on); returns the states visited."""
    seen = {}
    for mode in range(4):
        first = mode & 1
        gg = g._replace(ons_first=first, keep_moves=mode >> 1)
        vals, fresh = K.new_vals(gg), K.new_vals(gg)
        assert vals[-1] == mode
        cnt = K._views(gg, vals)[0]
        cnt_fresh = K._views(gg, fresh)[0]
        lazy = np.zeros(g.n_nodes, dtype=bool)
        for item in K.lazy_parts(g)[3]:
            if item >= 0:
                lazy[item] = True   # goal-only nodes are stale between goal readings, by design
        legal = np.zeros(max(int(x) for x in g.role_nmoves) + 1, dtype=np.int32)
        bits = np.zeros(g.n_words, dtype=np.uint64)
        rng = random.Random(seed)
        states = []
        for _ in range(walks):
            K.load_state(gg, g.init_state, vals)
            while not K.is_terminal(gg, vals) and len(states) < 400 * walks:
                joint = np.array([legal[rng.randrange(K.legal_moves(gg, vals, r, legal))]
                                  for r in range(g.n_roles)], dtype=np.int32)
                K.advance(gg, vals, joint)
                if states and rng.random() < 0.2:
                    K.load_state(gg, states[rng.randrange(len(states))], vals)
                K.current_state(gg, vals, bits)
                states.append(bits.copy())
                K.load_state(gg, bits, fresh)
                fresh[g.does_atom] = vals[g.does_atom]  # the moves on
                K._rebuild(gg, fresh)
                n = g.n_nodes
                assert np.array_equal(vals[:n][~lazy], fresh[:n][~lazy]), f"mode {mode}"
                assert np.array_equal(cnt[:n][~lazy], cnt_fresh[:n][~lazy]), f"mode {mode}"
                on = int(vals[g.does_atom].sum())
                assert on == (g.n_roles if mode >> 1 else 0), f"mode {mode}: {on} moves on"
        seen[mode] = [s.tobytes() for s in states]
    # the same walks: the mode changes the work, never a value
    assert seen[0] == seen[1] == seen[2] == seen[3]
    return seen[0]


@pytest.mark.parametrize("game", OWN_GAMES)
def test_every_step_mode_gives_the_same_network(game, engine_cache_dir):
    c, _ = engines(GAMES_DIR / f"{game}.kif", engine_cache_dir)
    assert len(_walk_both_orders(c.game, seed=3, walks=3)) > 10


@needs_shared
@pytest.mark.parametrize("game", ["base/games/hex/v0", "base/games/smallest_4player/v0",
                                  "base/games/breakthrough/v0"], ids=["hex", "recursion", "union-counts"])
def test_every_step_mode_gives_the_same_network_in_corpus_games(game, shared_dir, engine_cache_dir):
    c, _ = engines(corpus_rules(shared_dir, game), engine_cache_dir)
    assert len(_walk_both_orders(c.game, seed=4, walks=1)) > 5


@needs_shared
def test_a_move_no_frame_axiom_names_feeds_only_the_shared_counts(shared_dir, engine_cache_dir):
    """Breakthrough's frame axiom keeps a cell when the mover's move does not touch it: 64
    nodes counting moves, and the noop, which no cell's set names, fed all of them and went
    on and off every step (77 % of the edges walked).  Counted against the union of the sets
    (compile's ``encode_move_in``), the noop feeds only the shared counts ("at least k roles
    have their move in the union", one per role), which the turn passing leaves as they are,
    and the moves stay on between steps, switched in one batch (kernels._switch_moves); the
    walks in every step mode
    agree with rebuilds (``test_every_step_mode_gives_the_same_network_in_corpus_games``)."""
    c, _ = engines(corpus_rules(shared_dir, "base/games/breakthrough/v0"), engine_cache_dir)
    g = c.game
    assert g.keep_moves == 1
    for r in range(g.n_roles):
        noop = [g.legal_start[r] + k for k, m in enumerate(c.move_terms[r]) if render(m) == "noop"]
        assert len(noop) == 1
        d = int(g.does_atom[noop[0]])
        assert g.out_start[d + 1] - g.out_start[d] <= g.n_roles


def test_keeping_the_moves_on_must_pay_for_its_fixed_cost():
    """The probe's choice (``pick_step_mode``): the cheapest mode, where keeping the moves on
    costs ``KEEP_STEP_COST`` a step more than its events and edges (ticTacToe: a quarter less
    work kept on, and 25 % slower); fluents turning on first on a tie; recursive games 1."""
    steps = 1000
    assert K.pick_step_mode(np.array([100_000, 100_000, 90_000, 90_000, steps])) == 1
    assert K.pick_step_mode(np.array([100_000, 100_000, 60_000, 60_000, steps])) == 3
    assert K.pick_step_mode(np.array([90_000, 100_000, 60_000, 50_000, steps])) == 3
    assert K.pick_step_mode(np.array([90_000, 100_000, 80_000, 80_000, steps])) == 0
    assert K.pick_step_mode(np.full(5, -1)) == 1


def test_the_step_mode_is_chosen_by_the_work_it_saves(engine_cache_dir):
    """The probe counts a step's events and edges in the four modes on its own seeded
    playouts: nineBoardTicTacToe's fluents turning on first walk a third of the events of the
    other order (a fluent turning off then on again inside one small board's lines), so it
    gets bit 0; the probe gives the same answer every time and leaves the engine's random
    stream alone."""
    g = engines(GAMES_DIR / "nineBoardTicTacToe.kif", engine_cache_dir)[0].game
    assert g.ons_first == 1
    K.seed(11)
    first = K.playouts_for(g, g.init_state, 3, 1000)
    K.seed(11)
    assert K.probe_step_mode(g, 300) & 1 == 1
    assert K.probe_step_mode(g, 300) == K.probe_step_mode(g, 300)
    assert K.playouts_for(g, g.init_state, 3, 1000) == first


@needs_shared
def test_the_probe_prefers_the_fluents_turning_off_first_where_that_saves_work(shared_dir, engine_cache_dir):
    g = engines(corpus_rules(shared_dir, "base/games/hex/v0"), engine_cache_dir)[0].game
    assert g.ons_first == 0


@needs_shared
def test_the_probe_keeps_the_moves_on_where_frame_axioms_read_them(shared_dir, engine_cache_dir):
    """checkers' frame axioms read the mover's move (``next(cell x y p) <= does(r, move ..),
    true(cell x y p), ..``): with the moves off between steps every unchanged cell's next
    atom flips on and off on every step, so the probe keeps them on (half the events and
    edges).  (Breakthrough keeps them on too, for another reason: its noop,
    ``test_a_move_no_frame_axiom_names_feeds_only_the_shared_counts``.)  Checkers'
    walks agree in every mode."""
    g = engines(corpus_rules(shared_dir, "base/games/checkers/v1"), engine_cache_dir)[0].game
    assert g.keep_moves == 1
    assert len(_walk_both_orders(g, seed=5, walks=1)) > 5


def test_the_engine_cache_is_pruned_to_its_limit(tmp_path):
    """The cache in the home folder only grew: past its limit the entries used longest ago
    go (a hit counts as a use), never the one just written, and temporary files a killed
    process left behind go after an hour."""
    import os
    import time
    from agent.engine.cache import prune
    now = time.time()
    for i, age in enumerate((400, 300, 200, 100)):
        f = tmp_path / f"k{i}.npz"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (now - age, now - age))
    stale, fresh = tmp_path / ".tmp-a.npz", tmp_path / ".tmp-b.npz"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (now - 7200, now - 7200))
    os.utime(tmp_path / "k1.npz")                   # k1 was just used
    removed = prune(tmp_path, keep=tmp_path / "k0.npz", limit=2500)
    assert sorted(p.name for p in removed) == [".tmp-a.npz", "k2.npz", "k3.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-b.npz", "k0.npz", "k1.npz"]
    assert prune(tmp_path, limit=0) == []          # 0: no limit


def test_a_cache_hit_marks_the_entry_used(tmp_path):
    import os
    desc = read_rules_file(GAMES_DIR / "ticTacToe.kif")
    load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET)
    (entry,) = list(tmp_path.glob("*.npz"))
    os.utime(entry, (1, 1))
    assert load_engine(desc, cache_dir=tmp_path, budget_seconds=BUILD_BUDGET).info["source"] == "cache"
    assert entry.stat().st_mtime > 1
