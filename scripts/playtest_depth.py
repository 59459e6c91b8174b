"""Do the personas separate, and how well do they play, as the utility is read nearer the root?

Runs ``ggp-persona playtest`` once per charge depth with the same personas, whose only change
is ``charge_depth`` (0 = the utility read where the tree's descent ends; 100 = the champion's
playouts, spec 6.5 as written), and writes ``DIR/depth.md``: per depth, within- vs
between-persona agreement with Welch's test, whether the diagonal is the highest in every row,
each persona's win rate against the opponent, and a few features at the end of play.  Each
depth is a full playtest report in ``DIR/depth-N/`` (its own cache: an interrupted sweep
resumes where it stopped).  This is the measurement behind the generic presets' charge depth
(README, deviations from persona-model.md).

    python scripts/playtest_depth.py RULES --depths 0,3,10,100 --out DIR [playtest options...]

Any option after the known ones is passed to ``ggp-persona playtest`` as it is (--runs,
--limit, --agreement-states, --agreement-seeds, --workers, ...).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from agent.matchlog import atomic_write_bytes
from agent.persona import PersonaError, load_persona

FEATURES = ("end own_facts", "end opp_facts", "end mobility")


def persona_files(names: list, depth: int, folder: Path) -> list:
    """Each persona with ``charge_depth = depth`` (and ``-dN`` in its name) as a file in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in names:
        p = load_persona(n)
        q = p.replace(name=f"{p.name}-d{depth}", charge_depth=depth,
                      description=f"{p.description}; charge_depth {depth}")
        path = folder / f"{q.name}.toml"
        atomic_write_bytes(path, q.to_toml().encode())
        paths.append(str(path))
    return paths


def _ci(v) -> str:
    return f"{v[0]:.2f} [{max(v[1], 0.0):.2f}, {v[2]:.2f}]"


def summary_rows(depth: int, folder: Path) -> tuple:
    """(agreement row, per-persona rows) of one depth's report data."""
    a = json.loads((folder / "agreement.json").read_text())
    s = json.loads((folder / "summary.json").read_text())
    dom = "yes" if a["diagonal_dominant"] else f"no ({len(a['self_dominant'])} of {len(a['owners'])})"
    agree = (f"| {depth} | {a['within'][0]:.2f} | {a['between'][0]:.2f} | {a['p']:.2g} | {dom} "
             f"| {len(a['not_separated'])} of {len(a['owners']) * (len(a['owners']) - 1) // 2} |")
    rows = []
    for label, variants in s.items():
        for variant, m in variants.items():
            rows.append(f"| {depth} | {label} | {variant} | {_ci(m['win'])} | {m['length'][0]:.1f} | "
                        + " | ".join(f"{m[f][0]:.1f}" for f in FEATURES) + " |")
    return agree, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rules")
    ap.add_argument("--depths", default="0,3,10,100")
    ap.add_argument("--personas", default="finisher,survivor,attacker,collector")
    ap.add_argument("--out", required=True)
    args, rest = ap.parse_known_args(argv)
    out = Path(args.out)
    try:
        depths = [int(d) for d in args.depths.split(",")]
        names = [n.strip() for n in args.personas.split(",") if n.strip()]
        for n in names:
            load_persona(n)
    except (ValueError, PersonaError) as e:
        print(f"playtest_depth: {e}", file=sys.stderr)
        return 2
    agree_rows, persona_rows = [], []
    for d in depths:
        folder = out / f"depth-{d}"
        files = persona_files(names, d, out / "personas")
        cmd = [sys.executable, "-m", "agent.cli", "playtest", args.rules, "--personas", ",".join(files),
               "--out", str(folder), "--title", f"charge_depth {d}", *rest]
        print(f"== charge_depth {d}: {folder}", flush=True)
        rc = subprocess.call(cmd)
        if rc != 0:
            print(f"playtest_depth: the playtest at charge_depth {d} stopped (exit {rc})", file=sys.stderr)
            return rc
        a, rows = summary_rows(d, folder)
        agree_rows.append(a)
        persona_rows += rows
    head = " | ".join(f.replace("end ", "") for f in FEATURES)
    text = "\n".join([
        "# Persona separation and strength against the charge depth",
        "",
        "Command: `python scripts/playtest_depth.py " + " ".join([args.rules, "--depths", args.depths,
                                                                 "--personas", args.personas, "--out",
                                                                 args.out, *rest]) + "`",
        "",
        "Agreement (persona-model 5.1, modal judge): within- vs between-persona, Welch's test on",
        "per-run agreement; whether each persona agrees with itself more than with any other.",
        "",
        "| charge_depth | within | between | p | diagonal highest in every row | pairs not separated |",
        "|---:|---:|---:|---:|---|---|",
        *agree_rows,
        "",
        "Play against the opponent: win rate [95 % Wilson], plies, features at the end of play.",
        "",
        f"| charge_depth | persona | variant | win | plies | {head} |",
        "|---:|---|---|---|---:|" + "---:|" * len(FEATURES),
        *persona_rows,
        "",
    ])
    atomic_write_bytes(out / "depth.md", text.encode())
    print(f"wrote {out / 'depth.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
