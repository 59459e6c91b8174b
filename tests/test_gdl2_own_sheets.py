"""Our own GDL-II sheets (``games/gdl2``), for kinds of hidden information the shared corpus
lacks: a deck drawn over time (``deck_duel``: cards dealt round by round from one shuffled
deck, each player seeing his own and the ones played) and a blind chess-like board
(``dark_breakthrough``: each side knows only its own pawns and learns of the other's
through refused moves and captures).

Each sheet is valid GDL-II (our validator, with its simulation check on Prolog); on random
matches the compiled engine agrees with Prolog at every state (terminal, legal moves, goals,
every role's percepts, the next state); a belief of every seat keeps only histories that fit
what it saw (replayed on a separate Prolog reasoner) and reads its legal moves right, and
the sheet does hide something (the belief holds several states); whole matches go through
the runner, each player sent only its own percepts, the record replayed with its percepts
checked; and our own GDL-II player plays both through the runner with legal moves in time.
"""
from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("pyswip")

from agent.archive import replay_paths  # noqa: E402
from agent.hidden.belief import Belief, inconsistency  # noqa: E402
from agent.hidden.prior import UniformPrior  # noqa: E402
from agent.match.players import RandomPlayer  # noqa: E402
from agent.match.runner import run_match  # noqa: E402
from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from agent.reasoner.statemachine import CachedStateMachine  # noqa: E402
from gdl.gdl2 import chooser_indices, is_gdl2  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402

SHEETS_DIR = ROOT / "games" / "gdl2"
SHEETS = ["deck_duel", "dark_breakthrough"]
SEEDS = (0, 1, 2)


def sheet(name: str) -> Path:
    return SHEETS_DIR / f"{name}.kif"


def random_match(sm, seed: int) -> list:
    """A random match on ``sm``: per step (state, joint move, percepts per role, next state)."""
    rng = random.Random(seed)
    state, steps = sm.initial_state(), []
    while not sm.is_terminal(state):
        joint = tuple(rng.choice(sm.legal_moves(state, r)) for r in range(len(sm.roles)))
        nxt = sm.next_state(state, joint)
        steps.append((state, joint, [sm.sees(state, joint, r) for r in range(len(sm.roles))], nxt))
        state = nxt
    return steps


@pytest.mark.parametrize("name", SHEETS)
def test_the_sheet_is_valid_gdl2(name):
    from gdl.validate import check_file, verdict
    desc, problems = check_file(str(sheet(name)), sm_factory=PrologReasoner, walks=6, time_limit=20.0)
    assert desc is not None and is_gdl2(desc)
    assert verdict(problems) == "valid", "\n".join(map(str, problems))


@pytest.mark.parametrize("name", SHEETS)
def test_compiled_engine_agrees_with_prolog_on_every_state(name):
    from agent.engine import load_engine
    desc = read_rules_file(sheet(name))
    pl = PrologReasoner(desc)
    engine = load_engine(desc, budget_seconds=60)
    try:
        assert type(engine).__name__ == "CompiledEngine", engine
        roles = range(len(pl.roles))
        percepts = 0
        for seed in SEEDS:
            steps = random_match(pl, seed)
            for state, joint, sees, nxt in steps:
                assert not engine.is_terminal(state)
                for r in roles:
                    assert sorted(engine.legal_moves(state, r)) == sorted(pl.legal_moves(state, r))
                    assert engine.sees(state, joint, r) == sees[r], (seed, state, joint, r)
                    percepts += len(sees[r])
                assert engine.next_state(state, joint) == nxt
            end = steps[-1][3]
            assert engine.is_terminal(end)
            assert engine.goal_values(end) == pl.goal_values(end)
        assert percepts > 0, "random matches of a GDL-II sheet show something"
    finally:
        engine.close()
        pl.close()


@pytest.mark.parametrize("name", SHEETS)
def test_every_kept_history_fits_what_the_role_saw(name):
    """On the compiled engine (the player's), judged on a separate Prolog reasoner."""
    from agent.engine import load_engine
    desc = read_rules_file(sheet(name))
    engine = load_engine(desc, budget_seconds=60)
    judge = CachedStateMachine(PrologReasoner(desc))
    try:
        hidden = 0
        for seed in SEEDS[:2]:
            steps = random_match(engine, seed)
            for role in chooser_indices(engine.roles):
                belief = Belief(engine, role, UniformPrior(), rng=random.Random(seed), size=16)
                for k, (state, joint, sees, nxt) in enumerate(steps):
                    # as the player: a PLAY after the step says the match goes on
                    belief.observe(joint[role], sees[role], goes_on=not engine.is_terminal(nxt))
                    assert not belief.lenient, (name, seed, role, k, belief.notes)
                    for p in belief.particles:
                        why = inconsistency(judge, role, belief.steps, p.joints)
                        assert why is None, (name, seed, role, k, why)
                    hidden = max(hidden, len(belief.distribution()))
                    if not engine.is_terminal(nxt):
                        assert belief.legal() == engine.legal_moves(nxt, role), (name, seed, role, k)
        assert hidden > 1, "the sheet hides something from every seat's belief"
    finally:
        judge.close()
        engine.close()


def test_the_deck_duel_hides_the_other_hand_until_it_is_played():
    """No card the other player holds is named in our percepts (cards are distinct), and
    his card is named when he plays it: the step's played card, nothing else of his."""
    pl = PrologReasoner(read_rules_file(sheet("deck_duel")))
    try:
        for seed in SEEDS:
            steps = random_match(pl, seed)
            for me in (0, 1):
                other = pl.roles[1 - me]
                named_so_far = set()
                for state, joint, sees, nxt in steps:
                    named_so_far |= {a for p in sees[me] if isinstance(p, tuple) for a in p[1:]}
                    kept = {f[2] for f in nxt if isinstance(f, tuple) and f[0] == "hand" and f[1] == other}
                    assert not (kept & named_so_far), (seed, me, kept, named_so_far)
                    his = joint[1 - me]
                    named = {p[2] for p in sees[me] if isinstance(p, tuple) and p[0] == "played" and p[1] == other}
                    assert named == ({his[1]} if isinstance(his, tuple) else set())
    finally:
        pl.close()


@pytest.mark.parametrize("name", SHEETS)
def test_whole_matches_through_the_runner(tmp_path, name):
    """Random players, one per seat: each is sent only its own percepts (the runner), the
    match completes, and the record replays with every percept checked against sees."""
    text = sheet(name).read_text()
    roles = read_rules_file(sheet(name)).roles

    for seed in (3, 4):
        players = [RandomPlayer(f"r{i}", seed=seed * 10 + i) for i in chooser_indices(roles)]
        rec = asyncio.run(run_match(text, players, start_clock=5, play_clock=1, out_dir=tmp_path,
                                    seed=seed, match_id=f"own.{name}.{seed}"))
        assert rec["isCompleted"] and not rec["isAborted"], rec.get("x-notes")
        assert rec.get("x-percepts"), "the record keeps each role's percepts"
    results = replay_paths(sorted(tmp_path.glob("*.json")))
    assert len(results) == 2 and all(r.ok for r in results), [r for r in results if not r.ok]


@pytest.mark.parametrize("name", SHEETS)
def test_our_player_plays_the_sheet_through_the_runner(tmp_path, name):
    """Our server's GDL-II player (``agent.hidden``) on the first seat: every move legal and
    in time (no substitute), its decisions its belief's.  A 30 s start clock: at load 50 a
    fresh player process was still loading after 10 s, and the server, knowing no legal move
    yet, answered nil for the whole match."""
    from agent.match.players import PersonaPlayer

    async def main():
        p = PersonaPlayer("champion", log_dir=tmp_path / "players", spare_players=0, spare_referees=0)
        try:
            return await run_match(sheet(name).read_text(), [p, RandomPlayer("r", seed=5)],
                                   start_clock=30, play_clock=2, out_dir=tmp_path, seed=5)
        finally:
            await p.close()
    rec = asyncio.run(main())
    assert rec["isCompleted"], rec.get("x-notes")
    first = [row[0] for row in rec["errors"]]
    assert not [e for e in first if e], first
    assert all(r.ok for r in replay_paths(sorted(tmp_path.glob("*.json"))))
    ours = [json.loads(p.read_text()) for p in (tmp_path / "players").glob("*.json")]
    decisions = [x for d in ours for x in d.get("x-decisions", []) if x.get("belief")]
    assert ours and all(d.get("x-gdl2") for d in ours) and decisions
