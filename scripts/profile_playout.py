"""Work-count profile of the compiled engine's random playouts (a counter build, not a
sampling profile): the playout loop of ``kernels._playouts`` re-run with counters on every
propagation event and every edge walked, per node, and on the legal atoms scanned to pick
the moves.  Nodes are then classed from the network's structure alone:

- *goal-only*: nodes from which no legal, terminal or next atom can be reached (only goals);
- *control fluents*: fluents that changed on every step of the playouts and feed (or gate,
  compile._gate_legal) every legal atom of some role but one (its noop reads the other role's turn) (the "whose turn" fluents).

    python scripts/profile_playout.py RULES [--playouts 200] [--seed 1] [--order 0|1]

Prints the shares that decide where the engine's work goes (docs/benchmarks/engine-internals.md).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
from numba import njit

from agent.engine import kernels as K
from agent.engine.loader import load_engine
from gdl.kif import read_rules_file


@njit(cache=True)
def _profile(g, vals, playouts, ev, ed, flips):
    """(steps, legal atoms scanned, edges walked, playouts that ended) over ``playouts``
    random playouts from the initial state; ``flips[i]``: steps on which fluent i changed."""
    n_roles = g.n_roles
    joint = np.empty(n_roles, dtype=np.int32)
    steps = 0
    scanned = 0
    done = 0
    for p in range(playouts):
        K.load_state(g, g.init_state, vals)
        for depth in range(10_000):
            if g.terminal_atom >= 0 and vals[g.terminal_atom] == 1:
                done += 1
                break
            for r in range(n_roles):
                s = g.legal_start[r]
                m = g.legal_start[r + 1] - s
                l0 = g.legal_atom[s] if m > 0 else 0
                n = 0
                for k in range(m):
                    gt = g.legal_gate[0, s + k]
                    if gt < 0 or vals[gt] == 1:  # (the kernel skips a gated-off run at once)
                        n += vals[l0 + k]
                        scanned += 1
                if n == 0:
                    return steps, scanned, done
                pick = np.random.randint(n)
                k = 0
                while True:
                    gt = g.legal_gate[0, s + k]
                    if vals[l0 + k] == 1 and (gt < 0 or vals[gt] == 1):
                        if pick == 0:
                            break
                        pick -= 1
                    k += 1
                    scanned += 1
                joint[r] = k
            K.count_step(g, vals, joint, ev, ed, flips)   # in the mode of vals' last byte
            steps += 1
    return steps, scanned, done


def reaches(g, targets) -> np.ndarray:
    """Nodes from which a node of ``targets`` can be reached along the network's edges (the
    compiler's ``reach_back``, on the compiled network)."""
    src = np.repeat(np.arange(g.n_nodes, dtype=np.int64), np.diff(g.out_start))
    return K.reach_back(g.n_nodes, src, g.out_edge.astype(np.int64) >> 2, targets).astype(bool)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rules")
    ap.add_argument("--playouts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--order", type=int, choices=[0, 1], help="the order of a step's first events "
                    "(kernels._push_next: 1 the fluents turning on first); default: the game's")
    ap.add_argument("--keep-moves", type=int, choices=[0, 1], help="1: the moves stay on between "
                    "steps (kernels._switch_moves); default: the game's")
    a = ap.parse_args()
    eng = load_engine(read_rules_file(a.rules), budget_seconds=120, engine="compiled")
    g = eng.game
    if a.order is not None:
        g = g._replace(ons_first=a.order)
    if a.keep_moves is not None:
        g = g._replace(keep_moves=a.keep_moves)
    if (g.blk_loop == 1).any():
        print("this game has recursive components: the counter build does not cover them")
        return 1
    vals = K.new_vals(g)
    ev = np.zeros(g.n_nodes, dtype=np.int64)
    ed = np.zeros(g.n_nodes, dtype=np.int64)
    flips = np.zeros(g.n_base, dtype=np.int64)
    K.seed(a.seed)
    steps, scanned, done = _profile(g, vals, a.playouts, ev, ed, flips)
    outputs = np.concatenate([g.legal_atom, g.next_atom, [g.terminal_atom] if g.terminal_atom >= 0 else []])
    eager = reaches(g, outputs.astype(np.int64))
    goal_only = ~eager & (g.node_input == 0)
    # control fluents: changed on every step, and an edge path to every legal atom of a role
    control = []
    for i in np.nonzero(flips == steps)[0]:
        feeds = reaches_from(g, int(i))
        for r in range(g.n_roles):
            la = g.legal_atom[g.legal_start[r]:g.legal_start[r + 1]]
            gated = g.legal_gate[0, g.legal_start[r]:g.legal_start[r + 1]] == i
            if len(la) > 1 and (feeds[la] | gated).sum() >= len(la) - 1:
                control.append(int(i))
                break
    tot_ev, tot_ed = ev.sum(), ed.sum()
    ctl_ev = ev[control].sum()
    ctl_ed = ed[control].sum()
    print(f"{a.rules}: {done}/{a.playouts} playouts ended, {steps} steps, {g.n_nodes:,} nodes, "
          f"{len(g.out_edge):,} edges")
    print(f"goal-only nodes: {goal_only.sum():,} ({goal_only.mean():.0%} of nodes); "
          f"events in them {ev[goal_only].sum() / max(tot_ev, 1):.0%}, "
          f"edges walked from them {ed[goal_only].sum() / max(tot_ed, 1):.0%}")
    print(f"control fluents (flip every step, feed all but one legal move of a role): {len(control)}; "
          f"events {ctl_ev / max(tot_ev, 1):.1%}, edges walked from them {ctl_ed / max(tot_ed, 1):.0%}")
    print(f"per step: {tot_ev / steps:,.0f} events, {tot_ed / steps:,.0f} edges walked, "
          f"{scanned / steps:,.0f} legal atoms scanned (legal scan = "
          f"{scanned / (scanned + tot_ed):.0%} of edges + atoms touched)")
    return 0


def reaches_from(g, node: int) -> np.ndarray:
    """Nodes reachable from ``node`` along the network's edges."""
    seen = np.zeros(g.n_nodes, dtype=bool)
    seen[node] = True
    todo = [node]
    while todo:
        v = todo.pop()
        for e in g.out_edge[g.out_start[v]:g.out_start[v + 1]]:
            t = int(e) >> 2
            if not seen[t]:
                seen[t] = True
                todo.append(t)
    return seen


if __name__ == "__main__":
    sys.exit(main())
