"""The playtest page: what a designer looks at first (outcome bars, lengths, agreement,
boards), then the tables and tests; written with the shared ``agent.report`` writer."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402

from agent.report import write_report  # noqa: E402

from . import heatmap, metrics  # noqa: E402

# how much more often (on average) a persona must reproduce its own choice than another persona
# matches it before the page says the utilities, not the noise, decide: a tenth of the states
ALIKE_MARGIN = 0.10
BAR_METRICS = ("length", "final goal", "end utility", "end mobility", "end opp_mobility",
               "end own_facts", "end opp_facts")


def _groups(runs, key_a, key_b):
    out: dict = {}
    for r in runs:
        out.setdefault(r[key_a], {}).setdefault(r[key_b], []).append(r)
    return out


def metric_bounds(name: str) -> tuple:
    """The range a metric's values can take: every one counts or scores from 0, goals and
    utilities end at 100 (the table and the bars clip their intervals to it)."""
    return (0.0, 100.0 if name in ("final goal", "end utility") else None)


def interval_cell(name: str, stat) -> str:
    """``mean [lo, hi]`` of a metric for a table, the interval clipped to its range."""
    lo, hi = np.clip(np.asarray(stat[1:3], float), *metric_bounds(name))
    return f"{stat[0]:.1f} [{lo:.1f}, {hi:.1f}]"


def _bars(ax, labels, series: dict, ylabel: str, ylim=None, bounds=(0.0, None)):
    """Grouped bars with 95 % intervals: ``series[name] = [(mean, lo, hi) per label]``; the
    intervals are clipped to the metric's possible range (``bounds``): a t interval on a few
    goals of 0 and 100 reaches below 0, which no run can."""
    n = max(1, len(series))
    w = 0.8 / n
    x = np.arange(len(labels))
    for k, (name, vals) in enumerate(series.items()):
        m = np.array([v[0] for v in vals], float)
        lo = np.clip(np.array([v[1] for v in vals], float), bounds[0], bounds[1])
        hi = np.clip(np.array([v[2] for v in vals], float), bounds[0], bounds[1])
        err = np.vstack([np.nan_to_num(m - lo), np.nan_to_num(hi - m)])
        ax.bar(x + (k - (n - 1) / 2) * w, m, w, yerr=err, capsize=2, label=name)
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(axis="y", alpha=0.3)


def _legend(fig, ax):
    """One variant legend above the panels, where it hides no bar."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, title="variant", loc="outside upper center",
               ncol=min(6, len(labels)), fontsize=8)


def outcome_figure(summ, players, variants):
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), layout="constrained")
    for ax, o in zip(axes, metrics.OUTCOMES):
        _bars(ax, players, {v: [summ[p][v][o] for p in players] for v in variants},
              f"{o} rate", (0, 1.05))
        ax.set_title(f"{o} rate (95 % Wilson interval)", fontsize=10)
    _legend(fig, axes[0])
    return fig


def metric_figure(summ, players, variants):
    # a feature that is the same in every run (e.g. opponents' facts in a one-player game)
    # says nothing: left out
    names = [m for m in BAR_METRICS if all(m in summ[p][v] for p in players for v in variants)
             and len({round(summ[p][v][m][k], 9) for p in players for v in variants for k in (0, 1, 2)}) > 1]
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(13, 3.4 * rows + 0.6), layout="constrained",
                             squeeze=False)
    for ax, m in zip(axes.flat, names):
        _bars(ax, players, {v: [summ[p][v][m] for p in players] for v in variants}, m,
              bounds=metric_bounds(m))
        ax.set_title(f"{m} (mean, 95 % t interval)", fontsize=9)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    if names:
        _legend(fig, axes[0][0])
    return fig


def length_figure(runs, players, variants):
    """Per variant, one histogram of game lengths, stacked by persona (overlaid outlines of
    six personas with few runs each are unreadable)."""
    fig, axes = plt.subplots(1, len(variants), figsize=(4.4 * len(variants), 3.6),
                             layout="constrained", squeeze=False, sharey=True)
    lengths = [r["length"] for r in runs]
    lo, hi = (min(lengths), max(lengths)) if lengths else (0, 1)
    step = max(1, int(np.ceil((hi - lo + 1) / 15)))       # whole plies per bin, at most ~15 bins
    bins = np.arange(lo - 0.5, hi + step + 0.5, step)
    g = _groups(runs, "variant", "player")
    for ax, v in zip(axes[0], variants):
        ax.hist([[r["length"] for r in g.get(v, {}).get(p, [])] for p in players], bins=bins,
                stacked=True, label=players, edgecolor="white", linewidth=0.5)
        ax.set_title(f"variant {v}", fontsize=10)
        ax.set_xlabel("game length (plies)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].set_ylabel("runs")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=8, title="persona")
    return fig


def agreement_figure(agr, key="matrix", label="action agreement ratio"):
    owners = agr["owners"]
    m = np.array(agr[key], float)
    fig, ax = plt.subplots(figsize=(1.1 * len(owners) + 2.5, 0.9 * len(owners) + 1.8),
                           constrained_layout=True)
    im = ax.imshow(m, vmin=0, vmax=1, cmap="magma")
    for i in range(len(owners)):
        for j in range(len(owners)):
            if not math.isnan(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=9,
                        color="black" if m[i, j] > 0.55 else "white",
                        fontweight="bold" if i == j else "normal")
    ax.set_xticks(range(len(owners)), owners, rotation=30, ha="right")
    ax.set_yticks(range(len(owners)), owners)
    ax.set_xlabel("judge B (whose choice)")
    ax.set_ylabel("trace owner A (whose states)")
    fig.colorbar(im, ax=ax, label=label)
    return fig


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.0f} %"


def build(setup, runs, agr, props, warnings, title, intro) -> "Path":
    players = [p.label for p in setup.players]
    variants = [v.name for v in setup.variants]
    by_pv = _groups(runs, "player", "variant")
    summ = {p: {v: metrics.summary(by_pv[p][v]) for v in variants} for p in players}
    sections = []

    # --- variants
    vrows = []
    for v in setup.variants:
        pr = props[v.name]
        edits = " ".join([f"+{f}" for f in v.added] + [f"-{f}" for f in v.removed]) or "(rules file)"
        vrows.append([v.name, v.source, edits, round(pr["branching"], 2),
                      round(pr["random length"], 1), int(pr["initial facts"]), int(pr["fluents"]),
                      "; ".join(warnings.get(v.name, [])) or "valid"])
    sections.append({"heading": "Variants", "text":
                     "Each variant was validated before play (static and simulation checks; for "
                     "edits, the initial state is exactly the base one with the edits). Properties "
                     "come from 30 seeded uniform random playouts.",
                     "table": {"columns": ["variant", "source", "edits", "branching",
                                           "random length", "initial facts", "fluents",
                                           "validation"], "rows": vrows}})

    # --- outcomes and metrics
    rows = []
    for p in players:
        for v in variants:
            s = summ[p][v]
            rows.append([p, v, s["runs"]] + [f"{s[o][0]:.2f} [{s[o][1]:.2f}, {s[o][2]:.2f}]"
                                             for o in metrics.OUTCOMES] +
                        [interval_cell(m, s[m]) for m in ("length", "final goal")])
    sections.append({"heading": "Outcomes", "text":
                     f"Each persona plays role {setup.role_name} against "
                     f"{setup.opponent_label}; win/draw/loss as in persona-model 6.4 "
                     "(against the best other role; one role: goal 100 wins, 0 loses).",
                     "table": {"columns": ["player", "variant", "runs", "win", "draw", "loss",
                                           "length", "final goal"], "rows": rows},
                     "figures": [(outcome_figure(summ, players, variants), "outcomes",
                                  "Win, draw and loss rates per persona and variant, 95 % Wilson intervals."),
                                 (metric_figure(summ, players, variants), "metrics",
                                  "Game length, final goal, the persona's utility and the 6.4 features "
                                  "of the final state (raw values), means with 95 % t intervals (clipped to the "
                                  "possible range)."),
                                 (length_figure(runs, players, variants), "lengths",
                                  "Game length histograms per variant, stacked by persona.")]})

    # --- agreement
    a = agr
    owners_ = a["owners"]
    w, b = a["within"], a["between"]
    verdict = ("The diagonal is higher than every off-diagonal entry: the personas are distinct."
               if a["diagonal_dominant"] else
               "The diagonal is NOT higher than every off-diagonal entry.")
    pairs = ", ".join(f"{x} / {y}" for x, y in a["not_separated"])
    flat = [f for f in metrics.FEATURES
            if len({r["features"][f] for r in runs}) == 1]
    seeds = setup.agreement_seeds
    text = (f"Agreement matrix (persona-model 5.1): row A = whose decision states, column B = "
            f"whose choice on them. B's choice at a state is its most frequent move over {seeds} "
            f"independently seeded searches (the search it plays with; ties go to the most visits), "
            f"compared with the move A played there; within-persona agreement uses fresh seeds. "
            f"One search is noisy, and with a single judge search a persona agrees with itself no "
            f"more than with another persona of the same habits; the most frequent move is what "
            f"the persona plays most often, so with enough searches the diagonal is the highest in "
            f"a row when the personas' choices differ, and equal when they do not (a departure "
            f"from 5.1's single search, listed in the README). With few searches and many "
            f"near-equal moves the most frequent move is itself a guess (each search picks a "
            f"different one and the tie goes to the most visits), and then a persona whose "
            f"searches agree more on the same moves can match A better than A does. Within-persona agreement {w[0]:.3f} "
            f"[{w[1]:.3f}, {w[2]:.3f}] vs between {b[0]:.3f} [{b[1]:.3f}, {b[2]:.3f}] (per-run AARs; "
            f"Welch t = {a['t']:.2f}, p = {a['p']:.3g}). {verdict} {len(a['self_dominant'])} of "
            f"{len(owners_)} personas agree with themselves more than with any other persona on "
            f"their own states{': ' + ', '.join(a['self_dominant']) if a['self_dominant'] else ''}.")
    alike = a.get("alike")
    if alike and len(owners_) > 1:
        diag = [alike[i][i] for i in range(len(owners_)) if not math.isnan(alike[i][i])]
        off = [alike[i][j] for i in range(len(owners_)) for j in range(len(owners_))
               if i != j and not math.isnan(alike[i][j])]
        if diag and off:
            self_mean, other_mean = sum(diag) / len(diag), sum(off) / len(off)
            text += (f"\n\nHow alike they choose (second matrix): a persona's choice is reproduced "
                     f"by itself with other seeds on {_pct(self_mean)} of its states "
                     f"on average ({_pct(min(diag))} to {_pct(max(diag))}), and matched by another "
                     f"persona on {_pct(other_mean)} ({_pct(min(off))} to "
                     f"{_pct(max(off))}). "
                     + ("The personas choose differently from each other more often than each "
                        "does from itself: their utilities, not the search's noise, decide."
                        if self_mean - other_mean >= ALIKE_MARGIN else
                        "The two are close: the personas choose no more differently from each "
                        "other than each does from itself, so at this search size their choices "
                        "are decided by the search's noise, not their utility."))
    inert = setup.extra.get("inert") or {}
    same = metrics.same_in_game(setup.extra.get("utilities") or {}, inert)
    if pairs:
        idx = {o: i for i, o in enumerate(owners_)}
        why = []
        for x, y in a["not_separated"]:
            i, j = idx[x], idx[y]
            reason = ("the same utility in this game" if (x, y) in same or (y, x) in same else
                      "utilities that differ")
            if alike:
                reason += (f"; they choose alike on {_pct(alike[i][j])} of {x}'s states and "
                           f"{_pct(alike[j][i])} of {y}'s, against {_pct(alike[i][i])} and "
                           f"{_pct(alike[j][j])} for each with itself")
            why.append(f"{x} / {y} ({reason})")
        text += (f"\n\nThese pairs do not separate in this game (one agrees with the other's "
                 f"recorded moves at least as much as with itself): {'; '.join(why)}. Where two "
                 f"personas choose alike on most states, their utilities lead to the same moves "
                 f"here (or the difference is smaller than these few states can show); where they "
                 f"choose alike on few states and still do not separate, the recorded moves are "
                 f"spread over moves neither judge prefers.")
        if not (a["p"] < 0.05 and a["within"][0] > a["between"][0]):
            text += (" Within-persona agreement is not significantly higher than between-persona "
                     "agreement: in this game, at this search size, the personas do not separate "
                     "as a whole.")
        if flat:
            text += (f" These 6.4 features never change in any run of this game: "
                     f"{', '.join(flat)}; personas that differ in their weights play alike here.")
    if any(inert.values()):
        text += ("\n\nWhat the rules allow (calibration, persona-model 6.4): the search sees these "
                 "weighted features take a single value in this game, so they cannot steer it: "
                 + "; ".join(f"{p}: {', '.join(f)}" for p, f in inert.items() if f) + ".")
        if same:
            text += (" Without them these personas have the same utility here, and any difference "
                     "between them is search noise: " + ", ".join(f"{x} / {y}" for x, y in same) + ".")
    sections.append({"heading": "Are the personas distinct?", "text": text,
                     "figures": [(agreement_figure(a), "agreement",
                                  "Agreement matrix: share of A's decisions where B's most frequent "
                                  "choice is the move A played."),
                                 (agreement_figure(a, "alike", "share of states chosen alike"), "alike",
                                  "Choosing alike: share of A's decision states where B's most "
                                  "frequent choice is A's own; on the diagonal, A's again with other "
                                  "seeds (how reproducible A's choice is). Two personas play "
                                  "differently where their entry is below both their diagonals.")]})

    # --- Welch tests
    wrows = []
    for p in players:
        for r in metrics.welch_table(by_pv[p]):
            if not math.isnan(r["p"]) and r["p"] < 0.05:
                wrows.append([p, r["metric"], f"{r['a']} vs {r['b']}", r["mean_a"], r["mean_b"], r["t"], r["p"]])
    for v in variants:
        g = {p: by_pv[p][v] for p in players}
        for r in metrics.welch_table(g):
            if not math.isnan(r["p"]) and r["p"] < 0.05:
                wrows.append([v, r["metric"], f"{r['a']} vs {r['b']}", r["mean_a"], r["mean_b"], r["t"], r["p"]])
    sections.append({"heading": "Significant differences (Welch t-tests, p < 0.05)", "text":
                     "Between variants for each persona (first column a persona) and between "
                     "personas in each variant (first column a variant); two-sided, uncorrected for "
                     "multiple comparisons. Every test, significant or not, is in welch.csv.",
                     "table": {"columns": ["within", "metric", "comparison", "mean a", "mean b", "t", "p"],
                               "rows": wrows}})

    # --- Pearson
    means = {p: {v: {m: summ[p][v][m][0] for m in ("win", "length", "final goal")} for v in variants}
             for p in players}
    corr = metrics.correlations(props, means)
    crow = [[c["persona"], c["property"], c["metric"], c["n"], c["r"], c["p"]] for c in corr
            if not math.isnan(c["r"])]
    best = [[p, max(variants, key=lambda v: summ[p][v]["final goal"][0]),
             min(variants, key=lambda v: summ[p][v]["final goal"][0])] for p in players]
    sections.append({"heading": "Variant properties against persona metrics (Pearson)", "text":
                     f"r across the {len(variants)} variants; with so few variants r is descriptive "
                     "and its p-value weak. Rows where a side is constant are left out.",
                     "table": {"columns": ["persona", "property", "metric", "variants", "r", "p"],
                               "rows": crow}})
    sections.append({"heading": "Best and worst variant per persona (by mean final goal)",
                     "table": {"columns": ["persona", "best", "worst"], "rows": best}})

    # --- heat maps
    figs = []
    notes = []
    notes_static = []
    for v in setup.variants:
        shares = {p: metrics.fact_shares(by_pv[p][v.name]) for p in players}
        specs = setup.extra.get("boards", {}).get(v.name)
        if specs:
            for k, spec in enumerate(specs[:2]):
                grids = {p: heatmap.board_shares(spec, shares[p]) for p in players}
                if heatmap.static(grids):
                    notes_static.append(f"{spec.relation} ({v.name})")
                    continue
                fig = heatmap.board_figure(spec, grids, f"variant {v.name}: board {spec.relation}")
                if fig is not None:
                    figs.append((fig, f"board_{v.name}_{k}",
                                 f"Variant {v.name}: share of runs in which each {spec.relation} fact "
                                 f"became true, on the board (x: first coordinate, left to right; y: second "
                                 f"coordinate, first value at the bottom)."))
        else:
            notes.append(v.name)
            fig = heatmap.top_facts_figure(shares, f"variant {v.name}: facts that separate the personas")
            if fig is not None:
                figs.append((fig, f"facts_{v.name}", f"Variant {v.name}: facts whose shares differ most."))
    text = ("For each persona, the share of its runs in which each ground fact became true. "
            "Relations with two coordinates over ordered domains (found from the rules' structure) "
            "are drawn as grids, one per content, the most frequent contents first; the empty "
            "square (the content filling most of the initial board) is left out.")
    if notes:
        text += f"\n\nNo board found in: {', '.join(notes)} (drawn as bars instead)."
    if notes_static:
        text += (f"\n\nNot drawn, the same in every run of every persona: "
                 f"{', '.join(notes_static)}.")
    sections.append({"heading": "Heat maps", "text": text, "figures": figs})

    data = {
        "runs.csv": [{"variant": r["variant"], "player": r["player"], "run": r["run"],
                      "outcome": r["outcome"], "length": r["length"],
                      "goal": r["goals"][r["role"]], "utility": r["utility"],
                      **{f"end_{k}": x for k, x in r["features"].items()}} for r in runs],
        "summary.json": {p: {v: {k: list(x) if isinstance(x, tuple) else x
                                 for k, x in summ[p][v].items()} for v in variants} for p in players},
        "welch.csv": [dict(r, within=p) for p in players for r in metrics.welch_table(by_pv[p])]
        + [dict(r, within=v) for v in variants
           for r in metrics.welch_table({p: by_pv[p][v] for p in players})],
        "agreement.json": {**{k: (list(x) if isinstance(x, tuple) else x) for k, x in a.items()},
                           "inert_weights": inert,
                           "same_in_game": [list(x) for x in same]},
        "properties.json": props,
        "pearson.csv": corr,
        "fact_shares.json": {v: {p: metrics.fact_shares(by_pv[p][v]) for p in players} for v in variants},
    }
    for old in [*setup.out.glob("board_*.png"), *setup.out.glob("facts_*.png")]:
        old.unlink()            # a figure this page no longer draws must not linger beside it
    return write_report(setup.out, title, sections, data, intro=intro)
