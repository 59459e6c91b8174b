"""How much of a ply's work on the non-ground engine earlier plies already did: the bound on
what carrying tables from one state to the next (incremental tabling) could save, and how
many distinct calls a ground network of the rules would have to hold.

    python scripts/nonground_reuse.py RULES [--plies 60] [--playouts 30] [--seed 2]

Random joint moves through the engine's interface (terminal, every role's legal moves, next),
as the search's expansion asks them. After each ply's terminal and legal queries the work
space's tables are read: (relation, call values, answers).

- *Reuse*: the share of a ply's tables with the same call and the same answers in one of
  the k plies before (k = 1, 2, 8), from ply 4 on. Only such a table could be skipped by an
  engine that carries tables across states, so one minus it is the least work a ply keeps.
- *Calls*: the distinct calls (relation, call values; ground ones apart) and the distinct
  answers met over whole playouts. Every answer is a derived atom true in a reachable
  state, which a ground network of the rules must hold: a lower bound on its atoms.

Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.engine import nonground_kernels as NK  # noqa: E402
from agent.engine.nonground import NonGroundEngine  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402


def tables(ng: NonGroundEngine) -> set:
    """Every table in the work space: (relation, call values, frozenset of answers)."""
    W, width = ng.W, ng.c.width
    out = set()
    for t in range(int(W.reg[NK.R_NTAB])):
        rel = int(W.tab_rel[t])
        w, k = int(width[rel]), int(W.tab_key[t])
        rows = np.empty((int(W.tab_count[t]), w), np.int32)
        NK.answer_rows(W, t, rows)
        out.add((rel, tuple(W.tkeys[k:k + w].tolist()), frozenset(map(tuple, rows.tolist()))))
    return out


def plies(ng: NonGroundEngine, rng: random.Random, cap: int):
    """The tables of each ply of one random playout (terminal and legal asked)."""
    s = ng.initial_state()
    for _ in range(cap):
        if ng.is_terminal(s):
            return
        moves = [ng.legal_moves(s, r) for r in range(len(ng.roles))]
        yield tables(ng)
        s = ng.next_state(s, tuple(rng.choice(m) for m in moves))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rules")
    ap.add_argument("--plies", type=int, default=60, help="plies of the reuse playout")
    ap.add_argument("--playouts", type=int, default=30, help="whole playouts for the call count")
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args(argv)
    ng = NonGroundEngine(read_rules_file(a.rules))
    rng = random.Random(a.seed)

    hist, total, same = [], 0, {1: 0, 2: 0, 8: 0}
    for i, snap in enumerate(plies(ng, rng, a.plies)):
        if i >= 4:
            total += len(snap)
            for k in same:
                same[k] += len(snap & set().union(*hist[-k:]))
        hist.append(snap)
    measured = max(0, len(hist) - 4)

    calls, atoms, growth, answer_growth = set(), set(), [], []
    for _ in range(a.playouts):
        for snap in plies(ng, rng, 10_000):
            for rel, key, answers in snap:
                calls.add((rel, key))
                atoms.update((rel, row) for row in answers)
        growth.append(len(calls))
        answer_growth.append(len(atoms))
    by_rel = Counter(ng.c.rel_keys[rel][0] for rel, _ in calls)
    print(json.dumps({
        "rules": a.rules, "seed": a.seed,
        "reuse_plies": measured, "tables_per_ply": round(total / max(1, measured)),
        "same_as_within": {k: round(v / max(1, total), 4) for k, v in same.items()},
        "playouts": a.playouts, "distinct_calls": len(calls),
        "distinct_ground_calls": sum(NK.FREE not in key for _, key in calls),
        "distinct_answers": len(atoms),
        "calls_after_each_playout": growth, "answers_after_each_playout": answer_growth,
        "largest_relations_by_calls": dict(by_rel.most_common(8)),
    }))


if __name__ == "__main__":
    main()
