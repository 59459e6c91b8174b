"""The fit report: report.html with PNG plots and the data as JSON/CSV (agent.report)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from agent.report import write_report

from . import ga as G

MODEL_COLOURS = {"fitted": "#1f77b4", "pooled": "#ff7f0e", "champion": "#2ca02c",
                 "move-frequency": "#9467bd", "random": "#7f7f7f"}


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


def _metric_figure(result, key, title):
    labels = result["labels"]
    models = [m for m in MODEL_COLOURS if any(r["model"] == m for r in result["metrics"])]
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(labels)), 4))
    w = 0.8 / len(models)
    for j, m in enumerate(models):
        xs, ys, lo, hi = [], [], [], []
        for i, lab in enumerate(labels):
            r = next((r for r in result["metrics"] if r["label"] == lab and r["model"] == m), None)
            if r is None or r[key] is None or math.isnan(r[key]):
                continue
            xs.append(i + (j - (len(models) - 1) / 2) * w)
            ys.append(r[key])
            lo.append(r[key] - r[f"{key}_lo"])
            hi.append(r[f"{key}_hi"] - r[key])
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, color=MODEL_COLOURS[m], label=m)
    ax.set_xticks(range(len(labels)), labels, rotation=15, fontsize=8)
    ax.set_ylabel(title)
    ax.set_title(f"{title} on the test decisions, 95 % bootstrap intervals over player-matches", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=.3, axis="y")
    fig.tight_layout()
    return fig


def _matrix_figure(result, key, title):
    mat = np.array(result["matrix"][key], float)
    labels = result["labels"]
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 2, 1.2 * len(labels) + 1.5))
    im = ax.imshow(mat, cmap="viridis")
    for i in range(len(labels)):
        for j in range(len(labels)):
            ax.text(j, i, f"{mat[i, j]:.3f}", ha="center", va="center",
                    color="white" if mat[i, j] < np.nanmean(mat) else "black", fontsize=8,
                    fontweight="bold" if j == np.nanargmax(mat[i]) else "normal")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlabel("fitted persona")
    ax.set_ylabel("player whose test decisions")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax)
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


def _fmt_ci(r, key):
    v = r.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3f} [{r[f'{key}_lo']:.3f}, {r[f'{key}_hi']:.3f}]"


def _compute_text(c: dict) -> str:
    if c.get("scheduler"):
        return f"Scoring ran on the Dask cluster at {c['scheduler']}."
    w = c.get("workers")
    return ("Scoring ran in this process." if w == 0 else
            f"Scoring ran in a local pool of {w} worker processes." if w else
            "Scoring ran in a local pool of the default size (one worker per core).")


def data_text(d: dict) -> str:
    """The data paragraph of both fit reports (``result["data"]``)."""
    counts = d.get("counts", {})
    return (f"{counts.get('records', '?')} records, {counts.get('decisions', '?')} selected decisions "
            f"({d['train_decisions']} training in {d['train_player_matches']} player-matches, "
            f"{d['test_decisions']} test in {d['test_player_matches']} player-matches). Left out: "
            f"{counts.get('forced decisions left out (all roles)', 0)} forced (ply, role) pairs, "
            f"{counts.get('substituted moves left out', 0)} moves substituted by the server. "
            f"Duplicate records (same players, same moves): {d.get('duplicate_records', 0)} in "
            f"{len(d.get('duplicate_groups', []))} groups"
            f"{', dropped' if counts.get('duplicate records dropped') else ', kept'}. "
            + (" Problems: " + "; ".join(d["problems"][:10]) if d.get("problems") else "")
            + (" Warnings: " + "; ".join(d["warnings"]) if d.get("warnings") else ""))


def metric_figures(result) -> list:
    return [(_metric_figure(result, "logp", "log-likelihood per decision"), "metric_logp",
             "Log-likelihood per decision"),
            (_metric_figure(result, "argmax", "AAR of argmax"), "metric_argmax", "Action agreement of the argmax move")]


def comparison_sections(result, *, subject: str, bar_text: str) -> list:
    """The sections both fit reports share: paired differences against the baselines, the
    model x player matrix and attribution.  ``subject``: what was fitted ("persona",
    "model"); ``bar_text``: what the bar asks."""
    bar = result["bar"]
    per = bar["per_label"]
    prow = [[p["label"], p["baseline"], p["metric"], f"{p['diff']:.4f}", f"[{p['lo']:.4f}, {p['hi']:.4f}]",
             "yes" if p["beats"] else "no"] for p in result["paired"]]
    out = [{"heading": f"Paired differences: the fitted {subject} minus baseline",
            "text": (f"The bar ({bar_text}, interval above 0): met for {bar['labels_meeting']} of {len(per)} players "
                     f"({', '.join(k for k, v in per.items() if v) or 'none'}). "
                     f"Matrix diagonal largest in every row: {'yes' if bar['diagonal_all'] else 'no'}."),
            "table": {"columns": ["player", "baseline", "metric", "difference", "95 % interval", "above 0"],
                      "rows": prow}}]
    if len(result["labels"]) > 1:
        title = subject.capitalize()
        out.append({"heading": f"{title} x player matrix",
                    "text": f"Row: the player whose test decisions are scored; column: the {subject} fitted to "
                            f"a player. The diagonal should hold each row's largest value (bold).",
                    "figures": [(_matrix_figure(result, "logp", "mean log-likelihood per decision"),
                                 "matrix_logp", f"{title} x player: log-likelihood"),
                                (_matrix_figure(result, "argmax", "AAR of argmax"), "matrix_argmax",
                                 f"{title} x player: AAR of argmax")]})
        out.append({"heading": "Attribution",
                    "text": f"Each player's test player-matches, in time order, cut into disjoint queries of k "
                            f"matches; the fitted {subject}s are ranked by the total log-likelihood of the "
                            f"query's decisions. Accuracy = share of queries whose top {subject} is the "
                            f"player's own, with a Wilson 95 % interval.",
                    "table": {"columns": ["matches per query", "queries", "correct", "accuracy",
                                          "95 % interval", "mean rank", "chance"],
                              "rows": [[a["k"], a["queries"], a["correct"], f"{a['accuracy']:.3f}",
                                        f"[{a['lo']:.3f}, {a['hi']:.3f}]", f"{a['mean_rank']:.2f}",
                                        f"{a['chance']:.3f}"] for a in result["attribution"]]}})
    return out


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
        rows.append([r["label"], r["model"], _fmt_ci(r, "logp"), f"{r['geo_mean_p']:.3f}", _fmt_ci(r, "argmax"),
                     _fmt_ci(r, "choose"), _fmt_ci(r, "expected"), _fmt_ci(r, "top2"), _fmt_ci(r, "top5"),
                     _fmt_ci(r, "regret"), _fmt_ci(r, "cset")])
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

