#!/usr/bin/env python3
"""How often the live search picks a move that loses the game's value, on connectFour
positions an exact solver has labelled (issue #34: where are games lost?).

A benchmark referee, not the agent: the solver below knows connectFour (the corpus's 8x6
sheet) and nothing else, and the player never sees it.  Positions come from the corpus's
recorded connectFour matches (plies 12 to 25, where the solver answers in about a second);
each legal move gets its value for the mover (1 win, 0 draw, -1 loss, with perfect play),
and a position is kept where the moves' values differ.  The tournament persona (optionally
changed by ``--set k=v,...``) then searches each position afresh for ``--seconds``; a
blunder is a move worth less than the best.

    python scripts/bench_connect_four_solved.py --build            # the positions (minutes)
    python scripts/bench_connect_four_solved.py --seconds 1 --part 0/2 &   # one core each
    python scripts/bench_connect_four_solved.py --seconds 1 --part 1/2
    python scripts/bench_connect_four_solved.py --report            # blunder rates per run

The solver: negamax with alpha-beta and a transposition table over bitboards (a column is 7
bits, the top one a sentinel), moves that lose at once never tried, the others ordered by the
threats they make: the usual design of connect-four solvers, written here from that idea.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchrows  # noqa: E402  (results kept compressed under docs/)
SHARED = ROOT.parent / "shared"
MATCHES = SHARED / "corpus" / "matches" / "ggp-base-local-petewall" / "connectFour"
RULES = SHARED / "corpus" / "games" / "base" / "games" / "connectFour" / "v0" / "connectFour.kif"
POSITIONS = benchrows.resolve(ROOT / "docs" / "benchmarks" / "connect-four-solved-positions.jsonl")
RESULTS = ROOT / "docs" / "benchmarks" / "connect-four-solved-results.jsonl"
ROLES = ["red", "black"]

W, H = 8, 6
H1 = H + 1
BOTTOM = np.uint64(sum(1 << (c * H1) for c in range(W)))
FULL = np.uint64(sum(((1 << H) - 1) << (c * H1) for c in range(W)))
ORDER = np.array([3, 4, 2, 5, 1, 6, 0, 7], dtype=np.int64)   # centre first
TT_BITS = 25


@njit(cache=True)
def _wins(p, mask):
    """Empty cells that would complete four for the stones ``p``."""
    r = (p << np.uint64(1)) & (p << np.uint64(2)) & (p << np.uint64(3))
    for s in (np.uint64(H1), np.uint64(H), np.uint64(H + 2)):
        q = (p << s) & (p << (s * np.uint64(2)))
        r |= q & (p << (s * np.uint64(3)))
        r |= q & (p >> s)
        q = (p >> s) & (p >> (s * np.uint64(2)))
        r |= q & (p << s)
        r |= q & (p >> (s * np.uint64(3)))
    return r & (FULL ^ mask)


@njit(cache=True)
def _popcount(x):
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@njit(cache=True)
def _negamax(cur, mask, left, alpha, beta, keys, vals):
    """Value for the player to move (stones ``cur``), who cannot win at once."""
    possible = (mask + BOTTOM) & FULL
    opp = cur ^ mask
    opp_win = _wins(opp, mask)
    forced = possible & opp_win
    if forced:
        if forced & (forced - np.uint64(1)):
            return -1
        possible = forced
    nxt = possible & ~(opp_win >> np.uint64(1))      # never under the opponent's threat
    if nxt == 0:
        return -1
    if left <= 2:
        return 0
    key = cur + mask
    h = (key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - TT_BITS)
    if keys[h] == key:
        lo = vals[h] // 3 - 1
        hi = vals[h] % 3 - 1
        alpha = max(alpha, lo)
        beta = min(beta, hi)
        if alpha >= beta:
            return alpha
    a0, b0 = alpha, beta
    mv = np.zeros(W, dtype=np.uint64)
    sc = np.zeros(W, dtype=np.int64)
    n = 0
    for i in range(W):
        m = nxt & (np.uint64(0x3F) << np.uint64(ORDER[i] * H1))
        if m:
            s = _popcount(_wins(cur | m, mask | m))
            j = n
            while j > 0 and sc[j - 1] < s:
                mv[j] = mv[j - 1]
                sc[j] = sc[j - 1]
                j -= 1
            mv[j] = m
            sc[j] = s
            n += 1
    best = -2
    for i in range(n):
        v = -_negamax(opp, mask | mv[i], left - 1, -beta, -alpha, keys, vals)
        best = max(best, v)
        alpha = max(alpha, v)
        if alpha >= beta:
            break
    lo, hi = -1, 1
    if best <= a0:
        hi = best
    elif best >= b0:
        lo = best
    else:
        lo = hi = best
    keys[h] = key
    vals[h] = (lo + 1) * 3 + (hi + 1)
    return best


_TABLES: list = []


def _board(cells: dict, to_move: str):
    cur = mask = 0
    for (x, y), p in cells.items():
        bit = 1 << ((x - 1) * H1 + (y - 1))
        mask |= bit
        if p == to_move:
            cur |= bit
    return np.uint64(cur), np.uint64(mask)


def value(cells: dict, to_move: str) -> int:
    """1: the player to move wins, 0: draw, -1: loses (perfect play on both sides)."""
    cur, mask = _board(cells, to_move)
    if _wins(cur, mask) & ((mask + BOTTOM) & FULL):
        return 1
    if len(cells) == W * H:
        return 0
    if not _TABLES:
        _TABLES.extend([np.zeros(1 << TT_BITS, np.uint64), np.zeros(1 << TT_BITS, np.int64)])
    return int(_negamax(cur, mask, W * H - len(cells), -1, 1, *_TABLES))


def move_values(cells: dict, to_move: str) -> dict:
    """{column: the value for ``to_move`` of dropping a disc in it}."""
    other = ROLES[1 - ROLES.index(to_move)]
    out = {}
    cur, mask = _board(cells, to_move)
    for x in range(1, W + 1):
        y = 1 + sum(1 for (cx, _) in cells if cx == x)
        if y > H:
            continue
        if _wins(cur, mask) & np.uint64(1 << ((x - 1) * H1 + y - 1)):
            out[x] = 1
            continue
        after = dict(cells)
        after[(x, y)] = to_move
        out[x] = 0 if len(after) == W * H else -value(after, other)
    return out


def _column(move: str) -> int:
    return int(move.replace("(", " ").replace(")", " ").split()[1])


def cells_after(moves: list) -> dict:
    cells: dict = {}
    for ply, joint in enumerate(moves):
        x = _column(joint[ply % 2])
        cells[(x, 1 + sum(1 for (cx, _) in cells if cx == x))] = ROLES[ply % 2]
    return cells


def build(seconds: float, per_match: int = 2, most: int = 240, seed: int = 7) -> None:
    """Up to ``per_match`` positions of each recorded match of 18 plies or more (plies 12 to
    25), matches in a shuffled order, until ``most`` are kept or ``seconds`` have passed."""
    from rich.progress import Progress
    files = sorted(MATCHES.glob("*/*.json"))
    rng = random.Random(seed)
    rng.shuffle(files)
    found = []
    t0 = time.monotonic()
    kept = 0
    with Progress() as bar:
        task = bar.add_task("solving", total=len(files))
        for f in files:
            bar.advance(task)
            if kept >= most or time.monotonic() - t0 > seconds:
                break
            moves = json.loads(f.read_text())["moves"]
            if len(moves) < 18:
                continue
            last = min(len(moves), 26)
            for ply in rng.sample(range(12, last), min(per_match, last - 12)):
                vals = move_values(cells_after(moves[:ply]), ROLES[ply % 2])
                if len(set(vals.values())) > 1:
                    found.append({"match": str(f.relative_to(MATCHES)), "ply": ply,
                                  "moves": moves[:ply], "values": vals})
                    kept += 1
                    if kept >= most:
                        break
    benchrows.write(POSITIONS, found)
    print(f"{kept} positions in {time.monotonic() - t0:.0f} s -> {POSITIONS.relative_to(ROOT)}")


def evaluate(seconds: float, changes: str, part: str) -> None:
    import os
    import subprocess
    from agent.engine import load_engine
    from agent.persona import PERSONA_DIR, persona_from_dict
    from agent.search import SearchSettings, item_seed, search
    from gdl.kif import parse_term, read_rules_file
    from gdl.terms import render
    k, n = map(int, part.split("/"))
    base = tomllib.loads((PERSONA_DIR / "tournament.toml").read_text())
    kv = dict(x.split("=") for x in changes.split(",")) if changes else {}
    persona = persona_from_dict({**base, **{a: type(base[a])(float(b)) for a, b in kv.items()}})
    eng = load_engine(read_rules_file(RULES), engine="compiled")
    search(eng, eng.initial_state(), 0, persona, SearchSettings(seed=1, limit=200))      # compiled and warm
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    positions = benchrows.read(POSITIONS)
    with benchrows.append(RESULTS) as out:
        for i, pos in enumerate(positions):
            if i % n != k:
                continue
            s = eng.initial_state()
            for joint in pos["moves"]:
                s = eng.next_state(s, [parse_term(m) for m in joint])
            res = search(eng, s, pos["ply"] % 2, persona, SearchSettings(seed=item_seed(11, i), seconds=seconds))
            col = str(_column(render(res.move)))
            out.write(json.dumps({"version": rev, "set": changes, "seconds": seconds, "index": i,
                                  "move": col, "value": pos["values"][col],
                                  "best": max(pos["values"].values()),
                                  "simulations": int(res.simulations),
                                  "load": round(os.getloadavg()[0], 2)}) + "\n")
            out.flush()


def report() -> None:
    runs: dict = {}
    for r in benchrows.read(RESULTS):
        runs.setdefault((r["version"], r["set"], r["seconds"]), []).append(r)
    print("| version | changes | s a move | positions | blunders | rate | simulations (median) | load |")
    print("|---|---|---|---|---|---|---|---|")
    for (v, c, s), rs in runs.items():
        b = sum(r["value"] < r["best"] for r in rs)
        print(f"| {v} | {c or '-'} | {s} | {len(rs)} | {b} | {b / len(rs):.3f} | "
              f"{int(np.median([r['simulations'] for r in rs])):,} | "
              f"{min(r['load'] for r in rs)}-{max(r['load'] for r in rs)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="store_true", help="solve positions of the corpus's matches")
    ap.add_argument("--build-seconds", type=float, default=600)
    ap.add_argument("--seconds", type=float, default=1.0, help="search time a position")
    ap.add_argument("--set", default="", help="tournament persona changes, k=v,k=v")
    ap.add_argument("--part", default="0/1", help="K/N: every N-th position from the K-th")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    if not MATCHES.is_dir():
        raise SystemExit(f"no recorded connectFour matches at {MATCHES} (the shared corpus is needed)")
    if a.build:
        build(a.build_seconds)
    elif a.report:
        report()
    else:
        if not POSITIONS.is_file():
            raise SystemExit("no positions yet: run with --build first")
        evaluate(a.seconds, a.set, a.part)


if __name__ == "__main__":
    main()
