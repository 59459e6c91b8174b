"""The GA's fit report (spec 4.5): report.html with PNG plots and the data as JSON/CSV (agent.report)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from agent.report import write_report

from . import ga as G
from .heldout_report import comparison_sections, data_text, fmt_ci, metric_figures


def _fitness_figure(result):
    fig, ax = plt.subplots(figsize=(8, 4))
    fits = dict(result["fits"])
    if result.get("pooled"):
        fits["pooled"] = result["pooled"]
    for name, f in fits.items():
        g = [h["generation"] + 1 for h in f["history"]]
        line, = ax.plot(g, [h["best"] for h in f["history"]], marker="o", label=f"{name} best")
        ax.plot(g, [h["mean"] for h in f["history"]], ls="--", color=line.get_color(), alpha=.6)
    # the dashed lines need a key of their own: one grey proxy says what all of them are
    ax.plot([], [], ls="--", color="grey", alpha=.6, label="population mean (dashed)")
    ax.set_xlabel("generation (each scored on its own subsample of training decisions)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("fitness (" + ("thesis log F" if result["settings"]["thesis"] else
                                 "mean log-likelihood per decision") + ")")
    ax.legend(fontsize=7)
    ax.grid(alpha=.3)
    fig.tight_layout()
    return fig


def _parameter_figure(result):
    gl = G.genes(result["settings"]["thesis"])
    lo, hi = G.bounds(gl)
    fig, ax = plt.subplots(figsize=(9, 4))
    fits = dict(result["fits"])
    if result.get("pooled"):
        fits["pooled"] = result["pooled"]
    for k, (name, f) in enumerate(fits.items()):
        z = (np.array(f["genome"]) - lo) / (hi - lo)
        ax.plot(np.arange(len(gl)) + (k - len(fits) / 2) * 0.05, z, "o", label=name)
    ax.set_xticks(range(len(gl)), [g for g, _, _ in gl], rotation=60, ha="right", fontsize=7)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("position in the GA interval (0 = low end, 1 = high end)")
    ax.axhline(0.5, color="#999", lw=.8, ls=":")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _compute_text(c: dict) -> str:
    if c.get("scheduler"):
        return f"Scoring ran on the Dask cluster at {c['scheduler']}."
    w = c.get("workers")
    return ("Scoring ran in this process." if w == 0 else
            f"Scoring ran in a local pool of {w} worker processes." if w else
            "Scoring ran in a local pool of the default size (one worker per core).")


def write(out, result, per_decision) -> None:
    s = result["settings"]
    d = result["data"]
    intro = (f"Personas fitted to {len(result['labels'])} player(s) of one game by the "
             f"{'thesis' if s['thesis'] else 'behaviour-likelihood'} GA (persona-model 4.5). "
             f"Sizes: {s['limit']} simulations per decision, population {s['population']}, at most "
             f"{s['generations']} generations (patience {s['patience']}), {s['subsample']} training decisions "
             f"per generation, finalists ranked on {s['final_size'] or 'all'} training decisions; "
             f"split '{s['split']}' (test fraction {s['test_fraction']}), "
             f"{s['test_pms'] or 'all'} test player-matches per player; seed {s['seed']}; "
             f"{result['scored_decisions']} searches run by this invocation (the rest came from the cache).")
    sections = [{
        "heading": "Data",
        "text": data_text(d),
        "table": {"columns": ["player", "decisions", "test decisions", "test player-matches"],
                  "rows": [[lab, d.get("decisions_per_label", {}).get(lab, ""),
                            next((r["decisions"] for r in result["metrics"] if r["label"] == lab), 0),
                            next((r["player_matches"] for r in result["metrics"] if r["label"] == lab), 0)]
                           for lab in result["labels"]]}}]
    sections.append({"heading": "Fitness per generation",
                     "text": "Best (solid) and mean (dashed) fitness of each generation on that generation's "
                             "training subsample (common random numbers: every individual sees the same "
                             "decisions and seeds).",
                     "figures": [(_fitness_figure(result), "fitness", "GA fitness per generation")]})
    rows = []
    for r in result["metrics"]:
        rows.append([r["label"], r["model"], fmt_ci(r, "logp"), f"{r['geo_mean_p']:.3f}", fmt_ci(r, "argmax"),
                     fmt_ci(r, "choose"), fmt_ci(r, "expected"), fmt_ci(r, "top2"), fmt_ci(r, "top5"),
                     fmt_ci(r, "regret"), fmt_ci(r, "cset")])
    sections.append({"heading": "Test metrics against the baselines",
                     "text": "Per player, on the same held-out decisions: the persona fitted to that player, "
                             "the pooled persona (fitted to all players), the champion preset with its choice "
                             "parameters fitted on the player's training decisions, the move-frequency n-gram "
                             "model from the player's training matches, and uniform random. Values are means per "
                             "decision with 95 % bootstrap intervals over player-matches. 'Moves in C': how many "
                             "moves a persona's CHOOSE picks among (those within its nice threshold of the best); "
                             "the likelihood treats them alike, so where C is wide the argmax is not what the "
                             "persona predicts, and AAR of CHOOSE is its agreement.",
                     "table": {"columns": ["player", "model", "log-lik/decision", "exp(mean log-lik)",
                                           "AAR argmax", "AAR CHOOSE", "expected AAR", "top-2", "top-5",
                                           "Q-regret", "moves in C"], "rows": rows},
                     "figures": metric_figures(result)})
    sections += comparison_sections(result, subject="persona",
                                    bar_text="fitted beats champion and pooled on log-likelihood and argmax AAR")
    fits = dict(result["fits"])
    if result.get("pooled"):
        fits["pooled"] = result["pooled"]
    gl = G.genes(s["thesis"])
    sections.append({"heading": "Fitted parameters",
                     "text": "Search genes of each fitted persona, placed in their GA intervals; choice "
                             "parameters fitted by the likelihood grid. Genes near 0.5 everywhere would mean "
                             "the fit found no signal (persona-model 4.4).",
                     "table": {"columns": ["persona", "stop", "random_error", "nice_threshold", "kappa"]
                               + [g for g, _, _ in gl],
                               "rows": [[n, f["stopped"], f["choice"].get("random_error", ""),
                                         f["choice"].get("nice_threshold", ""), f["choice"].get("kappa", "")]
                                        + [round(x, 3) for x in f["genome"]] for n, f in fits.items()]},
                     "figures": [(_parameter_figure(result), "parameters", "Fitted genes in their ranges")]})
    timed = {n: f["seconds"] for n, f in fits.items() if f.get("seconds")}
    if timed:
        sections.append({"heading": "Wall time of each fit",
                         "text": "The GA's generations, summed over every session that resumed the fit "
                                 "(checkpoints written before timing was kept cover fewer generations than "
                                 "ran: see the second column), and the ranking of the finalists in the run "
                                 "that wrote this report (with the Q cache, only what was not cached costs). "
                                 + _compute_text(result.get("compute") or {}),
                         "table": {"columns": ["persona", "generations timed / run", "GA hours",
                                               "ranking minutes"],
                                   "rows": [[n, f"{t['ga_generations_timed']} / {len(fits[n]['history'])}",
                                             f"{t['ga'] / 3600:.2f}", f"{t['ranking'] / 60:.1f}"]
                                            for n, t in timed.items()]}})
    if result.get("q_noise"):
        sections.append({"heading": "Residual Q noise (replicate 2)",
                         "text": "The fitted persona re-scored with a second seed on some test decisions.",
                         "table": {"columns": ["player", "decisions", "mean |Q1 - Q2|", "same argmax"],
                                   "rows": [[k, v["decisions"], f"{v['mean_abs_q_diff']:.3f}",
                                             f"{v['argmax_agreement']:.3f}"] for k, v in result["q_noise"].items()]}})
    write_report(out, "Fitted personas", sections,
                 data={"results.json": result, "metrics.csv": result["metrics"], "paired.csv": result["paired"],
                       "decisions.csv": per_decision}, intro=intro)
    for sec in sections:
        for fig, _, _ in sec.get("figures", ()):
            plt.close(fig)

