"""Heat maps of play (spec 6.6): for each player, the share of its runs in which each ground
fact became true; facts of a board relation (two coordinates over ordered domains, found
from the rules' structure by ``gdl.board``) are drawn on the board, one grid per content.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gdl.board import content_text, detect_board, matches, sample_states  # noqa: E402
from gdl.kif import parse_term  # noqa: E402

MAX_CONTENTS = 4        # grids per board: the contents most often true


def boards(description, sm) -> list:
    """Board specs of a game, best first (empty when none is found)."""
    return detect_board(description, sample_states(sm))


def board_shares(spec, shares: dict) -> dict:
    """content -> 2-D array [row, column] of fact shares on the board (0 where never true);
    ``shares`` maps rendered facts to shares."""
    out: dict = {}
    for text, share in shares.items():
        fact = parse_term(text)
        if not matches(spec, fact):
            continue
        xy = spec.grid_xy(tuple(fact[1:][k] for k in spec.coord_args))
        if xy is None:
            continue
        c = content_text(spec, fact)
        grid = out.setdefault(c, np.zeros((spec.height, spec.width)))
        grid[xy[1], xy[0]] = max(grid[xy[1], xy[0]], share)
    return out


def static(per_player: dict) -> bool:
    """True when a board looks the same in every run of every player (each cell's share 0
    or 1, equal for all): walls, holes, fixed marks; nothing to compare."""
    grids = list(per_player.values())
    if not grids:
        return True
    first = grids[0]
    for g in grids:
        if set(g) != set(first):
            return False
        for c, a in g.items():
            if not np.array_equal(a, first[c]) or not np.isin(a, (0.0, 1.0)).all():
                return False
    return True


def pick_contents(spec, per_player: dict) -> list:
    """The contents to draw: not the background (the empty square), most often true first."""
    totals: dict = {}
    for grids in per_player.values():
        for c, g in grids.items():
            totals[c] = totals.get(c, 0.0) + float(g.sum())
    order = sorted((c for c in totals if c != spec.background), key=lambda c: (-totals[c], c))
    return order[:MAX_CONTENTS]


def board_figure(spec, per_player: dict, title: str):
    """One row per content, one column per player; y runs upwards (row 1 at the bottom)."""
    contents = pick_contents(spec, per_player)
    players = list(per_player)
    if not contents:
        return None
    nr, nc = len(contents), len(players)
    cell = 0.28 * max(spec.width, spec.height)
    fig, axes = plt.subplots(nr, nc, figsize=(max(2.2, cell) * nc + 1.2, max(2.2, cell) * nr + 0.8),
                             squeeze=False, constrained_layout=True)
    im = None
    xs = spec.coord_values[0] if len(spec.coord_args) == 2 else None
    ys = spec.coord_values[1] if len(spec.coord_args) == 2 else None
    for i, c in enumerate(contents):
        for j, p in enumerate(players):
            ax = axes[i][j]
            g = per_player[p].get(c, np.zeros((spec.height, spec.width)))
            im = ax.imshow(g, origin="lower", vmin=0, vmax=1, cmap="viridis", aspect="equal")
            if xs is not None:
                ax.set_xticks(range(len(xs)), xs, fontsize=7)
                ax.set_yticks(range(len(ys)), ys, fontsize=7)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
            if i == 0:
                ax.set_title(p, fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{spec.relation} … {c}" if c else spec.relation, fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8, label="share of runs")
    fig.suptitle(title, fontsize=10)
    return fig


def top_facts_figure(per_player: dict, title: str, n: int = 20):
    """Without a board: the facts whose shares differ most between players, as bars."""
    players = list(per_player)
    facts = sorted({f for s in per_player.values() for f in s})
    if not facts or not players:
        return None
    spread = {f: np.ptp([per_player[p].get(f, 0.0) for p in players]) for f in facts}
    top = sorted(facts, key=lambda f: (-spread[f], f))[:n]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(top) + 1.5), constrained_layout=True)
    h = 0.8 / len(players)
    for j, p in enumerate(players):
        ax.barh([i + j * h for i in range(len(top))], [per_player[p].get(f, 0.0) for f in top],
                height=h, label=p)
    ax.set_yticks([i + 0.4 - h / 2 for i in range(len(top))], top, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of runs in which the fact became true")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=10)
    return fig
