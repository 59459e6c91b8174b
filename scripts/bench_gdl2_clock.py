"""A GDL-II decision against its deadline (issue 52: "in time, at any clock").

For each sheet and play clock: one match of our GDL-II player (``HiddenPlayer``, in this
process, on the compiled engine) against uniform random roles, refereed here on a second
engine.  Every PLAY is given the deadlines the server would give it: the reply is due at
``received + clock - margin(clock)`` and the player's at ``ipc_slack(clock)`` before that
(``agent.server``'s own functions).  Per PLAY it measures when the belief's update and the
decision returned against the player's deadline, and the whole PLAY against the protocol's
limit (``received + clock``).  ``--steps`` decisions that were not forced per (sheet, clock),
over as many matches as it takes (a fresh player each).  The process first runs the
server's worker warm-up, so no measured decision loads numba's code.

    NUMBA_CACHE_DIR=... .venv/bin/python scripts/bench_gdl2_clock.py --games battleship,phantom_connect_5x5,kuhn_poker \\
        --clocks 1,3,10 --steps 12 --out /tmp/clock.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gdl.gdl2 import RANDOM  # noqa: E402
from gdl.kif import read_rules_file  # noqa: E402
from gdl.terms import render_spaced  # noqa: E402


def run(sheet: Path, clock: float, steps: int, seed: int, persona: str) -> dict:
    """Matches of one player (a fresh one each, seeds ``seed``, ``seed + 1``, ...) until
    ``steps`` decisions that were not forced, or ``4 * steps`` matches."""
    rows, engine_kind = [], None
    for m in range(4 * steps):
        kind = one_match(sheet, clock, steps - len(rows), seed + m, persona, rows)
        engine_kind = engine_kind or kind
        if len(rows) >= steps:
            break
    return summary(sheet.stem, clock, engine_kind, rows)


def one_match(sheet: Path, clock: float, steps: int, seed: int, persona: str, rows: list) -> str:
    from agent.engine import load_engine
    from agent.hidden.player import HiddenPlayer
    from agent.server.config import ServerConfig
    from agent.server.matches import ipc_slack

    cfg = ServerConfig()
    desc = read_rules_file(sheet)
    roles = desc.roles
    me = next(i for i, r in enumerate(roles) if r != RANDOM)
    # the rules as a START carries them: one list, comments dropped
    text = "(" + " ".join(line.split(";")[0] for line in sheet.read_text(encoding="utf-8").splitlines()) + ")"
    player = HiddenPlayer(text, render_spaced(roles[me]), clock, persona, seed=seed)
    player.prepare()
    player.load(budget_seconds=60.0)
    ref = load_engine(desc, budget_seconds=60.0)
    rng = random.Random(seed)
    state = ref.initial_state()
    view = None
    taken = 0
    try:
        while not ref.is_terminal(state) and taken < steps:
            received = time.monotonic()
            reply_by = received + clock - cfg.margin(clock)
            deadline = reply_by - ipc_slack(clock)
            if view is not None:
                player.observe(view, deadline=deadline)
            observed = time.monotonic()
            d = player.decide(deadline)
            done = time.monotonic()
            joint = [rng.choice(ref.legal_moves(state, i)) for i in range(len(roles))]
            true_legal = ref.legal_moves(state, me)
            legal_ok = any(render_spaced(m) == d["move"] for m in true_legal)
            if legal_ok:
                joint[me] = next(m for m in true_legal if render_spaced(m) == d["move"])
            joint = tuple(joint)
            if d["search"] != "forced":
                taken += 1
                rows.append({"observe": observed - received, "decide_late": done - deadline,
                             "reply_late": done - reply_by, "protocol_late": done - (received + clock),
                             "simulations": d.get("simulations") or 0, "legal": legal_ok,
                             "lenient": bool((d.get("belief") or {}).get("lenient")),
                             "load": os.getloadavg()[0]})
            view = {"own": d["move"], "percepts": [render_spaced(p) for p in ref.sees(state, joint, me)]}
            state = ref.next_state(state, joint)
    finally:
        kind = player.engine_kind
        player.close()
        ref.close()
    return kind


def summary(game: str, clock: float, engine_kind, rows: list) -> dict:
    late = [r["decide_late"] for r in rows]
    return {"game": game, "clock": clock, "decisions": len(rows),
            "engine": engine_kind,
            "searched_nothing": sum(r["simulations"] == 0 for r in rows),
            "load_median": statistics.median(r["load"] for r in rows) if rows else None,
            "decide_late_max": max(late) if late else None,
            "decide_late_median": statistics.median(late) if late else None,
            "after_reply_by": sum(r["reply_late"] > 0 for r in rows),
            "after_protocol_limit": sum(r["protocol_late"] > 0 for r in rows),
            "worst_of_clock": max((r["protocol_late"] + clock) / clock for r in rows) if rows else None,
            "illegal": sum(not r["legal"] for r in rows),
            "lenient": sum(r["lenient"] for r in rows),
            "simulations_median": statistics.median(r["simulations"] for r in rows) if rows else None,
            "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "gdl2"))
    ap.add_argument("--games", default="battleship,phantom_connect_5x5,kuhn_poker")
    ap.add_argument("--clocks", default="1,3,10")
    ap.add_argument("--steps", type=int, default=12, help="decisions per (sheet, clock), at most")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--persona", default=None, help="persona spec (default: the server's)")
    ap.add_argument("--out", default=None, help="JSON file of the results (written atomically)")
    a = ap.parse_args(argv)
    # what the server's worker processes run before any match: numba's code loaded (or
    # compiled), so that no measured decision pays for it
    from agent.server.worker import _warm
    print(f"warm-up: {_warm(True)} functions compiled", flush=True)
    results = []
    for game in a.games.split(","):
        sheet = Path(a.corpus) / f"{game}.kif"
        if not sheet.is_file():
            sheet = Path(game)
        if not sheet.is_file():
            print(f"no sheet {game!r} (looked in {a.corpus})", file=sys.stderr)
            return 2
        for clock in (float(c) for c in a.clocks.split(",")):
            r = run(sheet, clock, a.steps, a.seed, a.persona)
            results.append(r)
            print(f"{r['game']:22s} clock {clock:4g}  decisions {r['decisions']:3d}  "
                  f"late vs own deadline: max {r['decide_late_max']:+.3f} s median {r['decide_late_median']:+.3f} s  "
                  f"after reply-by {r['after_reply_by']}  after clock {r['after_protocol_limit']}  "
                  f"illegal {r['illegal']}  lenient {r['lenient']}  sims median {r['simulations_median']}  "
                  f"no search {r['searched_nothing']}  load {r['load_median']}",
                  flush=True)
    if a.out:
        out = Path(a.out)
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
