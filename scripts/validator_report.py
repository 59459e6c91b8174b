"""Run the GDL validator over every rule sheet of the shared game corpus and write a report.

    .venv/bin/python scripts/validator_report.py [--shared DIR] [--out FILE]

By default the corpus is ``../shared`` beside the repository and the report goes to
``docs/validator-corpus-report.md``.  Only the static checks run (no reasoner is needed).
Problem locations are written relative to the shared folder.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gdl.kif import GdlError, decode_bytes, parse_rules  # noqa: E402
from gdl.validate import validate, verdict  # noqa: E402

COMMAND = ".venv/bin/python scripts/validator_report.py"


def game_key(rel: Path) -> str:
    """``corpus/games/base/games/chess/v0/chess.kif`` -> ``base/chess/v0``."""
    parts = rel.parts
    return f"{parts[2]}/{parts[4]}/{parts[5]}"


def run(shared: Path):
    """``[(key, relative path, verdict, problems)]`` and the seconds spent reading/validating."""
    files = sorted(shared.glob("corpus/games/*/games/*/v*/*.kif"))
    results = []
    read_s = check_s = 0.0
    for path in files:
        rel = path.relative_to(shared)
        t0 = time.perf_counter()
        try:
            desc = parse_rules(decode_bytes(path.read_bytes(), str(rel)), str(rel))
        except GdlError as e:
            read_s += time.perf_counter() - t0
            results.append((game_key(rel), rel, "invalid", list(e.problems)))
            continue
        t1 = time.perf_counter()
        problems = validate(desc)
        t2 = time.perf_counter()
        read_s += t1 - t0
        check_s += t2 - t1
        results.append((game_key(rel), rel, verdict(problems), problems))
    return results, read_s, check_s


def _kind(message: str) -> str:
    """A short label for a message: its text up to the first ';' with symbols kept."""
    return message.split(";")[0]


def render_report(results, read_s: float, check_s: float) -> str:
    counts = Counter(v for _k, _r, v, _p in results)
    out = [
        "# GDL validator over the shared game corpus",
        "",
        f"Regenerate with `{COMMAND}` (from the repository root, with `../shared` beside it).",
        "Static checks only (`gdl.validate.validate`); the simulation checks need a reasoner and",
        "are not run here.",
        "",
        f"Rule sheets: {len(results)} (base, aaai2006, benderng; every version folder). "
        f"Verdicts: {counts['valid']} valid, {counts['warning']} warning, "
        f"{counts['invalid']} invalid (refused).",
        f"Time on the machine that wrote this report: reading {read_s:.1f} s, validating "
        f"{check_s:.1f} s in all.",
        "",
        "## Refused rule sheets",
        "",
        "`tests/test_validate.py` asserts that exactly these are refused.  All three are BenderNG",
        "test games that the reference traces tag `unsafe-dropped`: ggp-base silently deletes their",
        "unsafe `not`/`distinct` literals, so players that keep them read a different game.",
        "`corridor` also uses Prolog-style list programming (`append`, `lmember` over `cons` terms",
        "with variables in facts), which breaks safety and the recursion restriction; ggp-base's",
        "prover could not finish its initial state either.  No base or aaai2006 game is refused.",
        "",
    ]
    refused = [(k, r, p) for k, r, v, p in results if v == "invalid"]
    if not refused:
        out.append("None.")
    for key, rel, problems in refused:
        errors = [p for p in problems if p.level == "error"]
        out.append(f"### {key} ({len(errors)} error{'s' * (len(errors) != 1)})")
        out.append("")
        out.append(f"`{rel}`")
        out.append("")
        kinds = Counter()
        for p in errors:
            kinds[_first_words(p.message)] += 1
        out.append("Errors by kind: " + "; ".join(f"{k} ({n})" for k, n in kinds.most_common()) + ".")
        out.append("")
        for p in errors[:6]:
            out.append(f"* line {p.line}:{p.col}: {p.message}")
        if len(errors) > 6:
            out.append(f"* ... and {len(errors) - 6} more")
        out.append("")
    out += ["## Accepted with warnings", "",
            "| game | warnings |", "| --- | --- |"]
    for key, _rel, v, problems in results:
        if v != "warning":
            continue
        kinds = Counter(_kind(p.message) for p in problems if p.level == "warning")
        text = "; ".join(f"{k}" + (f" (x{n})" if n > 1 else "") for k, n in sorted(kinds.items()))
        out.append(f"| {key} | {text.replace('|', '/')} |")
    out.append("")
    return "\n".join(out)


def _first_words(message: str) -> str:
    if message.startswith("unsafe rule"):
        return "unsafe rule"
    if message.startswith("recursion restriction"):
        return "recursion restriction"
    if message.startswith("the fact") and "variable" in message:
        return "variables in a fact"
    return _kind(message)[:60]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared",
                    help="the shared folder holding corpus/ (default: ../shared beside the repo)")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "validator-corpus-report.md")
    args = ap.parse_args(argv)
    if not (args.shared / "corpus" / "games").is_dir():
        print(f"no corpus/games under {args.shared}", file=sys.stderr)
        return 2
    results, read_s, check_s = run(args.shared)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_report(results, read_s, check_s))
    refused = [k for k, _r, v, _p in results if v == "invalid"]
    print(f"{len(results)} rule sheets, {len(refused)} refused: {', '.join(refused) or 'none'}; "
          f"validated in {check_s:.1f} s; report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
