"""Board detection (gdl/board.py) over a game corpus: which games get a drawn grid, of what
size, with which relation, and how long detection takes.

    .venv/bin/python scripts/board_corpus_report.py [--games ../shared/corpus/games] [--seconds 1]
        [--out docs/reports/boards-corpus.md]

Each game: the rules on the Prolog reasoner, the initial state plus random walks for about
``--seconds``, then ``detect_board``.  Results are appended to ``<out>.jsonl`` as they come, so
an interrupted run resumes where it stopped (delete the file to start over).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(path: str, seconds: float) -> dict:
    from agent.reasoner.prolog import PrologReasoner
    from gdl.board import detect_board, sample_states
    from gdl.kif import read_rules_file
    t0 = time.perf_counter()
    try:
        d = read_rules_file(path)
        sm = PrologReasoner(d)
        states = sample_states(sm, walks=4, steps=80, seconds=seconds)
        specs = detect_board(d, states)
        sm.close()
    except Exception as e:  # a game the reasoner refuses is a finding, not a crash
        return {"error": f"{type(e).__name__}: {str(e)[:120]}", "seconds": time.perf_counter() - t0}
    out = {"seconds": round(time.perf_counter() - t0, 2), "states": len(states), "boards": []}
    for s in specs[:3]:
        out["boards"].append({"relation": s.relation, "size": f"{s.width}x{s.height}",
                              "coords": len(s.coord_args), "kinds": len(s.content_values),
                              "background": s.background is not None})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default=str(ROOT.parent / "shared" / "corpus" / "games"))
    ap.add_argument("--seconds", type=float, default=1.0, help="random-walk budget per game")
    ap.add_argument("--out", default=str(ROOT / "docs" / "reports" / "boards-corpus.md"))
    args = ap.parse_args(argv)
    from rich.progress import Progress

    from agent.web.catalogue import list_games
    games = list_games([args.games])
    if not games:
        print(f"no games under {args.games}", file=sys.stderr)
        return 2
    out = Path(args.out)
    jsonl = out.with_suffix(".jsonl")
    done = {}
    if jsonl.is_file():
        for line in jsonl.read_text().splitlines():
            r = json.loads(line)
            done[r["key"]] = r
    with Progress() as progress, open(jsonl, "a") as f:
        task = progress.add_task("boards", total=len(games), completed=len(done))
        for g in games:
            if g.key in done:
                continue
            progress.update(task, description=g.title[:30])
            r = {"key": g.key, **one(g.path, args.seconds)}
            f.write(json.dumps(r) + "\n")
            f.flush()
            done[g.key] = r
            progress.advance(task)
    rows = [done[g.key] for g in games if g.key in done]
    with_board = [r for r in rows if r.get("boards")]
    errors = [r for r in rows if "error" in r]
    nested = [r for r in with_board if r["boards"][0]["coords"] == 4]
    lines = [
        "# Board detection over the corpus",
        "",
        f"Command: `.venv/bin/python scripts/board_corpus_report.py --seconds {args.seconds:g}` "
        f"(games from the corpus game repositories; random walks of about {args.seconds:g} s per game "
        "on the Prolog reasoner, then `gdl.board.detect_board`).",
        "",
        f"- games: {len(rows)}",
        f"- a grid found: {len(with_board)} ({100 * len(with_board) / max(1, len(rows)):.0f} %), "
        f"of which {len(nested)} boards of boards (four coordinates)",
        f"- no grid (played from the list of moves): {len(rows) - len(with_board) - len(errors)}",
        f"- the reasoner refused the rules or failed: {len(errors)}",
        "",
        "| game | seconds | states seen | first board | size | kinds | empty square | more boards |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['key']} | {r['seconds']:.1f} | | error: {r['error'].replace('|', '/')} | | | | |")
            continue
        b = r["boards"]
        if not b:
            lines.append(f"| {r['key']} | {r['seconds']} | {r['states']} | (none) | | | | |")
            continue
        lines.append(f"| {r['key']} | {r['seconds']} | {r['states']} | {b[0]['relation']} | {b[0]['size']} | "
                     f"{b[0]['kinds']} | {'yes' if b[0]['background'] else ''} | "
                     f"{', '.join(x['relation'] + ' ' + x['size'] for x in b[1:])} |")
    from agent.matchlog import atomic_write_bytes
    atomic_write_bytes(out, ("\n".join(lines) + "\n").encode())
    print(f"wrote {out}: {len(with_board)} of {len(rows)} games with a grid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
