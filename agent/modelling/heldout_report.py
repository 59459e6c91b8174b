"""The report sections of the held-out evaluation (``heldout.py``) that both fit reports
share (the GA's ``fitreport.py`` and the fast fit's ``fastreport.py``): the data paragraph,
the metrics against the baselines with their intervals, the paired differences, the model x
player matrix and attribution."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

MODEL_COLOURS = {"fitted": "#1f77b4", "pooled": "#ff7f0e", "champion": "#2ca02c",
                 "move-frequency": "#9467bd", "random": "#7f7f7f"}


def fmt_ci(r, key):
    v = r.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3f} [{r[f'{key}_lo']:.3f}, {r[f'{key}_hi']:.3f}]"


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
