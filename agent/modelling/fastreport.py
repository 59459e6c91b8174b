"""The fast fit's report (spec 4.6): report.html with PNG plots and the data as JSON/CSV.

Where the folder of a 4.5 GA fit on the same records is given (``--compare``), its models'
per-decision results are joined on the same test decisions (match, role, ply) and shown
beside the new default.
"""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib.pyplot as plt

from agent.report import open_table, write_report

from .heldout_report import comparison_sections, data_text, fmt_ci, metric_figures


def _stage_rows(result) -> list:
    rows = []
    for name, t in result["stages"].items():
        rows.append([name, f"{t['wall']:.1f}", f"{t['cpu']:.1f}"])
    total_w = sum(t["wall"] for t in result["stages"].values())
    total_c = sum(t["cpu"] for t in result["stages"].values())
    rows.append(["total", f"{total_w:.1f}", f"{total_c:.1f}"])
    return rows


def compare_rows(per_decision, folder) -> list:
    """Mean test log-likelihood and argmax AAR of another fit's models, per player, on the
    decisions both fits hold (joined by match, role and ply)."""
    f = open_table(folder, "decisions.csv")        # (compressed when large: agent.report)
    if f is None:
        return []
    ours = {(r["label"], r["match_id"], str(r["role"]), str(r["ply"])) for r in per_decision}
    acc: dict = {}
    with f:
        for r in csv.DictReader(f):
            key = (r["label"], r["match_id"], r["role"], r["ply"])
            if key not in ours or not r.get("fitted_logp"):
                continue
            a = acc.setdefault(r["label"], [0.0, 0.0, 0])
            a[0] += float(r["fitted_logp"])
            a[1] += float(r["fitted_argmax"])
            a[2] += 1
    return [[lab, Path(folder).name, n, f"{lp / n:.3f}", f"{am / n:.3f}"] for lab, (lp, am, n) in sorted(acc.items())]


def write(out, result, per_decision, compare=()) -> None:
    s, d, plan = result["settings"], result["data"], result["plan"]
    intro = (f"Player models fitted by the fast fit (persona-model 4.6) to {len(result['labels'])} player(s) of "
             f"one game: shared evaluations of every decision (three searches of {plan['limit']} simulations: "
             f"the champion's, a broad one and a playout-free one of horizon {plan['shallow_horizon']}; a one-ply "
             f"look-ahead over at most {plan['replies']} replies; fact changes), then per player a conditional "
             f"logit on them, on the move's tokens and on the player's own move counts, mixed with the uniform "
             f"choice (weight fitted, at least 0.01), pulled towards the pooled model by an L2 penalty chosen "
             f"by grouped cross-validation. Split '{s['split']}' (test fraction {s['test_fraction']}), seed "
             f"{s['seed']}; {result['searched_decisions']} decisions searched by this run, "
             f"{result['cached_decisions']} from the shared cache.")
    sections = [{
        "heading": "Data",
        "text": data_text(d) + (f" Modelled: {d['train_decisions']} of {d.get('train_decisions_all')} training "
                                f"decisions (at most {s['train_cap']} per player)."
                                if d.get("train_decisions_all", d["train_decisions"]) > d["train_decisions"] else ""),
        "table": {"columns": ["player", "training decisions", "player-matches", "L2", "epsilon",
                              "CV log-lik.", "CV random", "fit seconds", "warnings"],
                  "rows": [[lab, m["decisions"], m["player_matches"], m["l2"], m["epsilon"],
                            f"{m['cv_logp']:.3f}" if m["cv_logp"] == m["cv_logp"] else "—",
                            f"{m['cv_random_logp']:.3f}" if m.get("cv_random_logp") is not None else "—",
                            result["fit_seconds"].get(lab, ""), "; ".join(m["warnings"]) or "—"]
                           for lab, m in result["models"].items()]}}]
    sections.append({"heading": "Time per stage",
                     "text": "Wall and CPU seconds (CPU of this process and its worker processes; on Dask the "
                             "workers' CPU is not counted). 'shared evaluations' is only what the cache lacked.",
                     "table": {"columns": ["stage", "wall s", "CPU s"], "rows": _stage_rows(result)}})
    rows = [[r["label"], r["model"], fmt_ci(r, "logp"), f"{r['geo_mean_p']:.3f}", fmt_ci(r, "argmax"),
             fmt_ci(r, "expected"), fmt_ci(r, "top2"), fmt_ci(r, "top5")] for r in result["metrics"]]
    sections.append({"heading": "Test metrics against the baselines",
                     "text": "Per player, on the same held-out decisions: 'fitted' is the player's model, "
                             "'pooled' the model of all players, 'champion' the deep search's Q with the "
                             "behaviour likelihood's choice parameters fitted on the player's training decisions "
                             "(spec 4.5 item 4), 'move-frequency' the n-gram model, 'random' the uniform choice. "
                             "Means per decision, 95 % bootstrap intervals over player-matches. Models below "
                             "random: " + (", ".join(result["floor"]["models_below_random"]) or "none") + ".",
                     "table": {"columns": ["player", "model", "log-lik/decision", "exp(mean log-lik)",
                                           "AAR argmax", "expected AAR", "top-2", "top-5"], "rows": rows},
                     "figures": metric_figures(result)})
    sections += comparison_sections(result, subject="model",
                                    bar_text="log-likelihood above champion, pooled and move-frequency; argmax AAR "
                                             "above champion and pooled")
    if result.get("most_like"):
        sections.append({"heading": "Most like",
                         "text": f"Each player's test decisions scored by the models of the earlier fit "
                                 f"({result['prior']}): mean log-likelihood per decision, most likely first.",
                         "table": {"columns": ["player", "models, most likely first"],
                                   "rows": [[lab, ", ".join(f"{k} {v:.3f}" for k, v in r.items())]
                                            for lab, r in result["most_like"].items()]}})
    sections.append({"heading": "What each model weighs",
                     "text": "The largest weights per raw unit of each column (shared evaluations, 'token:' move "
                             "tokens, 'freq'/'logfreq' the player's own move counts).",
                     "table": {"columns": ["model", "largest weights"],
                               "rows": [[lab, ", ".join(f"{k} {v:+.2f}" for k, v in m["top_weights"].items())]
                                        for lab, m in {**result["models"],
                                                       **({"pooled": result["pooled"]} if result["pooled"] else {})}
                                        .items()]}})
    if compare:
        crow = [r for folder in compare for r in compare_rows(per_decision, folder)]
        if crow:
            sections.append({"heading": "Beside the GA modes (spec 4.5)",
                             "text": "The fitted personas of earlier GA fits on the same records, on the test "
                                     "decisions both hold (from each fit's decisions.csv).",
                             "table": {"columns": ["player", "fit", "decisions", "log-lik/decision", "AAR argmax"],
                                       "rows": crow}})
            result["compare"] = crow
    write_report(out, "Fitted player models (fast fit)", sections,
                 data={"results.json": result, "metrics.csv": result["metrics"], "paired.csv": result["paired"],
                       "decisions.csv": per_decision}, intro=intro)
    for sec in sections:
        for fig, _, _ in sec.get("figures", ()):
            plt.close(fig)

