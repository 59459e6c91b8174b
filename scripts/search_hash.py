#!/usr/bin/env python3
"""A digest of the search's results, to show that a change meant to be faster leaves them
exactly as they were: the Q values, visit counts and moves of seeded searches (live play's
``search``, with the solver) and of batch scorings (``search_batch``, the fitting path),
for the champion and two personas that use RAVE, GRAVE, MAST and the personality bias, from
positions of seeded random walks.

    python scripts/search_hash.py [--games connectFour breakthrough ...] [--sims 300]

Run it on two checkouts (each with its own ``agent``) and compare the lines: equal digests
mean equal numbers, so a running fit's Q cache stays valid and SEARCH_VERSION stays.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engines import rules_path  # noqa: E402  (the benchmark games' rule sheets)


def positions(engine, n: int, seed: int) -> list:
    """(state, role with a choice) at the end of seeded random walks of 0-11 joint moves."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        s = engine.initial_state()
        for _ in range(int(rng.integers(0, 12))):
            joint = []
            for r in range(len(engine.roles)):
                moves = list(engine.legal_moves(s, r))
                joint.append(moves[int(rng.integers(len(moves)))])
            t = engine.next_state(s, joint)
            if engine.is_terminal(t):
                break
            s = t
        roles = [r for r in range(len(engine.roles)) if len(engine.legal_moves(s, r)) > 1]
        if roles:
            out.append((s, roles[0]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", nargs="+", default=["connectFour", "nineBoardTicTacToe", "breakthrough", "checkers"])
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--positions", type=int, default=12)
    a = ap.parse_args()
    from agent.engine.loader import load_engine
    from agent.persona import load_persona
    from agent.search.common import SearchSettings
    from agent.search.driver_compiled import search, search_batch
    from gdl.kif import read_rules_file

    champion = load_persona("champion")
    personas = [champion,
                champion.replace(rave=500.0, grave=50, epsilon=0.4, horizon=8, charge_depth=12),
                load_persona("sanguine").replace(rave=2000.0, grave=0, charge_depth=30)]
    for game in a.games:
        engine = load_engine(read_rules_file(rules_path(game)), engine="compiled")
        h = hashlib.sha256()
        pos = positions(engine, a.positions, 7)
        for k, p in enumerate(personas):
            for i, (s, r) in enumerate(pos):
                res = search(engine, s, r, p, SearchSettings(seed=1000 * k + i, limit=a.sims))
                h.update(repr((res.move, res.moves, res.q.tolist(), res.visits.tolist())).encode())
            for res in search_batch(engine, [(s, r, 77 + i) for i, (s, r) in enumerate(pos)], p, limit=a.sims):
                h.update(repr((res.move, res.moves, res.q.tolist(), res.visits.tolist())).encode())
        print(f"{game}: {h.hexdigest()[:16]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
