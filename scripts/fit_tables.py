"""Markdown tables of fit reports (results.json), as docs/reports/fit-bots.md shows them.

    .venv/bin/python scripts/fit_tables.py docs/reports/fit-connectFour-full/results.json ...

One table of test metrics, one of paired differences, the bar per game, attribution: the
figures fit-bots.md quotes come from here, never typed by hand. A report is named by its
folder (fit-connectFour-full -> connectFour-full): results.json names the game by the hash
of its rules only.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MODELS = ("fitted", "champion", "pooled", "move-frequency", "random")


def _row(results, lab, model):
    return next((r for r in results["metrics"] if r["label"] == lab and r["model"] == model), None)


def _pair(results, lab, base, metric):
    p = next((p for p in results["paired"] if p["label"] == lab and p["baseline"] == base
              and p["metric"] == metric), None)
    if p is None:
        return "—"
    s = f"{p['diff']:+.3f} [{p['lo']:.3f}, {p['hi']:.3f}]"
    return f"**{s}**" if p["beats"] else s


def metrics_table(all_results) -> str:
    out = ["| game | bot | " + " | ".join(MODELS) + " |", "|---|---|" + "---|" * len(MODELS)]
    for res in all_results:
        for lab in res["labels"]:
            cells = []
            rows = {m: _row(res, lab, m) for m in MODELS}
            best = max((r["logp"] for r in rows.values() if r), default=None)
            for m in MODELS:
                r = rows[m]
                if r is None:
                    cells.append("—")
                    continue
                s = f"{r['logp']:.3f} / {r['argmax']:.3f} / {r['choose']:.3f}"
                cells.append(f"**{s}**" if r["logp"] == best else s)
            out.append(f"| {res['game']} | {lab} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def paired_table(all_results) -> str:
    cols = [("pooled", "logp"), ("champion", "logp"), ("pooled", "argmax"), ("champion", "argmax"),
            ("pooled", "choose"), ("move-frequency", "logp")]
    out = ["| game | bot | " + " | ".join(f"{'log-lik.' if m == 'logp' else 'AAR ' + m} vs {b}"
                                         for b, m in cols) + " |", "|---|---|" + "---|" * len(cols)]
    for res in all_results:
        for lab in res["labels"]:
            out.append(f"| {res['game']} | {lab} | " + " | ".join(_pair(res, lab, b, m) for b, m in cols) + " |")
    return "\n".join(out)


def bar_table(all_results) -> str:
    out = ["| game | log-lik. beats pooled | log-lik. beats champion | argmax beats pooled | "
           "argmax beats champion | log-lik. beats move-frequency | bots meeting the bar | "
           "diagonal largest (log-lik.) |",
           "|---|---|---|---|---|---|---|---|"]
    for res in all_results:
        n = len(res["labels"])

        def count(base, metric):
            return sum(any(p["label"] == lab and p["baseline"] == base and p["metric"] == metric and p["beats"]
                           for p in res["paired"]) for lab in res["labels"])
        diag = res["matrix"]["diagonal_max"]
        missing = [lab for lab, ok in zip(res["labels"], diag) if not ok]
        out.append(f"| {res['game']} | {count('pooled', 'logp')} of {n} | {count('champion', 'logp')} of {n} | "
                   f"{count('pooled', 'argmax')} of {n} | {count('champion', 'argmax')} of {n} | "
                   f"{count('move-frequency', 'logp')} of {n} | {res['bar']['labels_meeting']} of {n} | {sum(diag)} of {n} rows"
                   + (f" (not {', '.join(missing)})" if missing else "") + " |")
    return "\n".join(out)


def choice_table(all_results) -> str:
    out = ["| game | persona | RE | NT | kappa | moves in C (test, own bot) |", "|---|---|---|---|---|---|"]
    for res in all_results:
        if "fits" not in res:        # a fast fit: no choice parameters (model_table)
            continue
        fits = dict(res["fits"])
        if res.get("pooled"):
            fits["pooled"] = res["pooled"]
        for name, f in fits.items():
            c = f["choice"]
            own = _row(res, name, "fitted")   # none for the pooled persona: it has no bot of its own
            cs = f"{own['cset']:.2f}" if own and own.get("cset") is not None else "—"
            out.append(f"| {res['game']} | {name} | {c.get('random_error')} | {c.get('nice_threshold')} | "
                       f"{c.get('kappa')} | {cs} |")
    return "\n".join(out)


def model_table(all_results) -> str:
    """The fast fit's models: data, penalty, uniform weight, cross-validated log-likelihood,
    and the stages' wall and CPU seconds."""
    out = ["| game | model | training decisions | L2 | eps | CV log-lik. (random) |", "|---|---|---|---|---|---|"]
    for res in all_results:
        if "models" not in res:      # a GA fit: choice_table
            continue
        models = dict(res["models"])
        if res.get("pooled"):
            models["pooled"] = res["pooled"]
        for name, m in models.items():
            out.append(f"| {res['game']} | {name} | {m['decisions']} | {m['l2']} | {m['epsilon']} | "
                       f"{m['cv_logp']:.3f} ({m['cv_random_logp']:.3f}) |")
    out += ["", "| game | stage | wall s | CPU s |", "|---|---|---|---|"]
    for res in all_results:
        for stage, t in (res.get("stages") or {}).items():
            out.append(f"| {res['game']} | {stage} | {t['wall']:.1f} | {t['cpu']:.1f} |")
    return "\n".join(out)


def attribution_table(all_results) -> str:
    out = ["| game | matches per query | queries | accuracy [95 % Wilson] | chance |", "|---|---|---|---|---|"]
    for res in all_results:
        for a in res["attribution"]:
            out.append(f"| {res['game']} | {a['k']} | {a['queries']} | {a['accuracy']:.3f} "
                       f"[{a['lo']:.3f}, {a['hi']:.3f}] | {a['chance']:.3f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results.json of ggp-persona fit")
    args = ap.parse_args(argv)
    try:
        all_results = []
        for p in args.results:
            res = json.loads(Path(p).read_text())
            res["game"] = Path(p).resolve().parent.name.removeprefix("fit-")
            all_results.append(res)
    except (OSError, ValueError) as e:
        print(f"fit_tables: {e}", file=sys.stderr)
        return 2
    print("Test log-likelihood per decision / AAR of argmax / AAR of CHOOSE (best log-likelihood in bold):\n")
    print(metrics_table(all_results))
    print("\nPaired differences, fitted minus baseline, 95 % bootstrap intervals over player-matches "
          "(bold: above 0):\n")
    print(paired_table(all_results))
    print("\nThe bar:\n")
    print(bar_table(all_results))
    if any("fits" in r for r in all_results):
        print("\nChoice parameters of the fitted personas:\n")
        print(choice_table(all_results))
    if any("models" in r for r in all_results):
        print("\nThe fast fit's models and stages:\n")
        print(model_table(all_results))
    print("\nAttribution:\n")
    print(attribution_table(all_results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
