"""Board detection before and after a change to gdl/board.py, on the same sampled states of
every corpus game: which games' first board changed, appeared or went.

    .venv/bin/python scripts/board_corpus_compare.py --base REV [--games ../shared/corpus/games]
        [--seconds 1] --out FILE.jsonl [--words]

``--base`` is a git revision whose gdl/board.py is "before" (loaded as a module of its own);
"after" is the working tree's.  Each game: the rules on the Prolog reasoner, the initial state
plus random walks for about ``--seconds`` (``sample_states``), then both ``detect_board`` on
those states, so the sampling cannot make a difference.  ``--words`` renames the integers
first (goal values kept), as a scrambler that renamed numbers would: only the rules' facts
can order the coordinates then.  One JSON line per game goes to
``--out`` as it comes (an interrupted run resumes); the summary is printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.reasoner.prolog import PrologReasoner  # noqa: E402
from agent.web.catalogue import list_games  # noqa: E402
from gdl import board as after  # noqa: E402
from gdl.kif import parse_rules, read_rules_file  # noqa: E402


def load_base(rev: str):
    """gdl/board.py as it was at ``rev``, as a module of its own."""
    text = subprocess.run(["git", "show", f"{rev}:gdl/board.py"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "board_base.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("board_base", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["board_base"] = mod          # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def summary(specs) -> list:
    return [{"relation": s.relation, "coords": list(s.coord_args), "size": f"{s.width}x{s.height}",
             "values": [list(v) for v in s.coord_values]} for s in specs[:3]]


_INT = re.compile(r"(?<=[\s(])(\d+)(?=[\s)])")
_GOAL_VALUE = re.compile(r"\(\s*goal\s+[^\s()]+\s+(\d+)\s*\)", re.I)


def as_words(text: str) -> str:
    """The rules with every integer renamed to a word (``n7``), except the goal heads'
    values: as a scrambler that renamed numbers too would leave them, so that only the rules'
    facts (chains, arithmetic) can order them.  GDL has no arithmetic of its own, so a
    consistent renaming keeps the game."""
    goals = set(_GOAL_VALUE.findall(text))
    return _INT.sub(lambda m: m.group(1) if m.group(1) in goals else f"n{m.group(1)}", text)


def one(path: str, seconds: float, before, words: bool = False) -> dict:
    try:
        if words:
            d = parse_rules(as_words(Path(path).read_text()), path)
        else:
            d = read_rules_file(path)
        sm = PrologReasoner(d)
        try:
            states = after.sample_states(sm, walks=4, steps=80, seconds=seconds)
        finally:
            sm.close()
        return {"before": summary(before.detect_board(d, states)), "after": summary(after.detect_board(d, states))}
    except Exception as e:   # a game the reasoner refuses is a finding, not a crash
        return {"error": f"{type(e).__name__}: {str(e)[:120]}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="git revision of the 'before' gdl/board.py")
    ap.add_argument("--games", default=str(ROOT.parent / "shared" / "corpus" / "games"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--out", required=True, help="JSON lines, one per game (resumed when present)")
    ap.add_argument("--words", action="store_true",
                    help="rename every integer but goal values to a word first (``as_words``)")
    args = ap.parse_args(argv)
    before = load_base(args.base)
    games = list_games([args.games])
    if not games:
        print(f"no games under {args.games}", file=sys.stderr)
        return 2
    out = Path(args.out)
    done = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done[r["key"]] = r
    with open(out, "a") as f:
        for k, g in enumerate(games):
            if g.key in done:
                continue
            r = {"key": g.key, **one(g.path, args.seconds, before, args.words)}
            f.write(json.dumps(r) + "\n")
            f.flush()
            done[g.key] = r
            print(f"{k + 1}/{len(games)} {g.key}", file=sys.stderr, flush=True)
    rows = [done[g.key] for g in games if g.key in done]
    errors = [r for r in rows if "error" in r]
    ok = [r for r in rows if "error" not in r]
    had = sum(1 for r in ok if r["before"])
    has = sum(1 for r in ok if r["after"])
    print(f"games: {len(rows)}, refused by the reasoner: {len(errors)}")
    print(f"a board before: {had}, after: {has}")
    for r in ok:
        b, a = r["before"], r["after"]
        if b[:1] == a[:1] and b == a:
            continue
        what = ("new board" if not b else "board lost" if not a else
                "first board changed" if b[0] != a[0] else "other boards changed")
        first = (lambda x: f"{x[0]['relation']} {x[0]['size']}" if x else "(none)")
        print(f"  {r['key']}: {what}: {first(b)} -> {first(a)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
