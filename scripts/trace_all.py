"""Replay every reference trace with one engine; one line per game, summary at the end.

    .venv/bin/python scripts/trace_all.py [--engine prolog|compiled] [--only SUBSTR]
        [--timeout SECONDS] [--out results.json] [--report docs/reports/traces-prolog.md]

Each game runs in a fresh subprocess (one at a time) with a hard timeout: the parent kills
a game that runs over it, so one slow or broken game (a runaway Prolog query ignores
Python's signals) cannot stop the run.  Per game the status is

* ``exact``    every recorded step agrees (state, terminal, legal, goals);
* ``diverges`` some field differs (the first divergence is kept);
* ``error``    the engine raised on a query (e.g. the reasoner's inference limit);
* ``refused``  the validator refuses the rules (the first error is kept);
* ``fallback`` (compiled only) the rules could not be grounded within the budget;
* ``timeout``  the subprocess ran over the hard timeout and was killed;
* ``crash``    the subprocess died without an answer (the end of its stderr is kept).

``--report`` writes a Markdown report atomically, headed by the command that made it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from agent.matchlog import atomic_write_bytes  # noqa: E402

STATUSES = ("exact", "diverges", "error", "refused", "fallback", "timeout", "crash")


# ----------------------------------------------------------------------------- worker
def check_one(path: str, engine: str, budget: float) -> dict:
    """Replay one trace in this process (the worker side)."""
    from agent.tracecheck import check_trace, load_trace, rules_path_for
    from gdl.validate import check_file, verdict

    t0 = time.monotonic()
    trace = load_trace(path)
    rules = rules_path_for(trace, path)
    out = {"game": trace["game"], "trace": Path(path).name, "rules": trace["rules"]}
    desc, problems = check_file(rules)
    if verdict(problems) == "invalid":
        errs = [p.message for p in problems if p.level == "error"]
        return dict(out, status="refused", why=errs[0] if errs else "?", n_errors=len(errs),
                    seconds=round(time.monotonic() - t0, 2))
    try:
        if engine == "prolog":
            from agent.reasoner.prolog import PrologReasoner
            sm = PrologReasoner(desc)
        else:
            from agent.engine import load_engine
            sm = load_engine(desc, engine="compiled", budget_seconds=budget, use_cache=False)
            out["engine_info"] = {k: v for k, v in sm.info.items() if k != "key"}
    except Exception as e:  # noqa: BLE001 - every failure to build is a finding
        from agent.reasoner.statemachine import GroundingError
        status = "fallback" if isinstance(e, GroundingError) else "error"
        return dict(out, status=status, why=f"{type(e).__name__}: {e}"[:500],
                    seconds=round(time.monotonic() - t0, 2))
    t1 = time.monotonic()
    rep = check_trace(sm, trace)
    status = "exact" if rep.exact else ("error" if rep.error else "diverges")
    out.update(status=status, steps=rep.steps, agree=rep.agree, checked=rep.checked,
               first_divergence=rep.first_divergence, why=rep.error,
               load_seconds=round(t1 - t0, 2), check_seconds=round(time.monotonic() - t1, 2),
               seconds=round(time.monotonic() - t0, 2))
    return out


# ----------------------------------------------------------------------------- parent
def run_one(path: Path, engine: str, budget: float, timeout: float) -> dict:
    """One trace in a fresh subprocess, killed after ``timeout`` seconds."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path),
           "--engine", engine, "--budget", str(budget)]
    t0 = time.monotonic()
    base = {"game": _game_of(path), "trace": path.name}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:  # subprocess.run kills the child before raising
        return dict(base, status="timeout", why=f"killed after {timeout:g} s",
                    seconds=round(time.monotonic() - t0, 1))
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = " | ".join(p.stderr.strip().splitlines()[-3:])
    return dict(base, status="crash", why=f"exit status {p.returncode}: {tail}"[:500],
                seconds=round(time.monotonic() - t0, 1))


def _game_of(path: Path) -> str:
    """Trace file name -> game, from INDEX.tsv when possible (keys may contain '-')."""
    index = path.parent / "INDEX.tsv"
    if index.is_file():
        for line in index.read_text().splitlines()[1:]:
            cols = line.split("\t")
            if len(cols) > 1 and cols[1] == path.name:
                return cols[0]
    return path.stem


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, text.encode("utf-8"))


def _short(v, n: int = 300) -> str:
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n] + " ..."


def divergence_text(r: dict) -> str:
    d = r.get("first_divergence")
    if not d:
        return ""
    return (f"walk {d['walk']} step {d['step']} field `{d['field']}`: expected `{_short(d['expected'])}`, "
            f"ours `{_short(d['ours'])}`")


def render_report(results: list, engine: str, command: str, timeout: float, seconds: float) -> str:
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    steps = sum(r.get("steps", 0) for r in results if r["status"] == "exact")
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [f"# Reference traces replayed with the {engine} engine", "",
           "Reproduce (from the repository root, with `../shared` beside it):", "",
           "```", command, "```", "",
           f"Written {when}; {len(results)} traces of `../shared/reference/prover/` "
           f"(ggp-base's ProverStateMachine), each replayed by `agent.tracecheck.check_trace` "
           f"(what `ggp-persona trace RULES TRACE --engine {engine}` runs) in its own subprocess, "
           f"one at a time, killed after {timeout:g} s. Wall time of the run: {seconds / 60:.1f} min.",
           "", "## Counts", "", "| status | games |", "| --- | ---: |"]
    for s in STATUSES:
        if counts[s] or s in ("exact", "diverges", "refused", "timeout"):
            out.append(f"| {s} | {counts[s]} |")
    out += [f"| **total** | **{len(results)}** |", "",
            f"Steps checked in exactly agreeing traces: {steps}.", "",
            "Statuses: *exact* = every recorded step agrees in state, terminal, legal moves and goals; "
            "*diverges* = some field differs (first divergence below); *error* = the engine raised "
            "on a query; *refused* = the validator refuses the rule sheet; *timeout* = killed at the "
            "hard timeout; *crash* = the subprocess died without an answer.", ""]
    bad = [r for r in results if r["status"] != "exact"]
    for s in STATUSES[1:]:
        group = [r for r in bad if r["status"] == s]
        if not group:
            continue
        out += [f"## {s.capitalize()} ({len(group)})", ""]
        for r in group:
            line = f"* `{r['game']}`"
            if "steps" in r:
                agree = ", ".join(f"{f} {r['agree'][f]}/{r['checked'][f]}" for f in r["agree"])
                line += f" ({r['steps']} steps; {agree})"
            if r.get("first_divergence"):
                line += ": " + divergence_text(r)
            if r.get("why"):
                line += f": {_short(r['why'], 400)}"
            out.append(line)
            if s in ("diverges", "error"):
                out.append(f"  reproduce: `.venv/bin/ggp-persona trace ../shared/{r.get('rules', '?')} "
                           f"../shared/reference/prover/{r['trace']} --engine {engine}`")
        out.append("")
    out += ["## Every trace", "", "| game | status | steps | seconds |", "| --- | --- | ---: | ---: |"]
    for r in results:
        out.append(f"| `{r['game']}` | {r['status']} | {r.get('steps', '')} | {r.get('seconds', '')} |")
    out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", default="prolog", choices=("prolog", "compiled"))
    ap.add_argument("--only", default="", help="only traces whose file name contains this")
    ap.add_argument("--budget", type=float, default=30.0,
                    help="grounding budget of the compiled engine (default 30 s)")
    ap.add_argument("--timeout", type=float, default=180.0,
                    help="hard timeout per game, seconds (default 180)")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--report", type=Path, help="write a Markdown report here (atomically)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(check_one(a.worker, a.engine, a.budget)), flush=True)
        return 0
    command = ".venv/bin/python scripts/trace_all.py " + " ".join(
        shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:]))
    paths = sorted(p for p in (a.shared / "reference" / "prover").glob("*.json") if a.only in p.name)
    t0 = time.monotonic()
    results = []
    for i, p in enumerate(paths, 1):
        r = run_one(p, a.engine, a.budget, a.timeout)
        results.append(r)
        print(f"[{i}/{len(paths)}] {r['status']:9s} {r.get('seconds', '')!s:>6} {r['game']} "
              f"{_short(r.get('why') or '', 200)}", flush=True)
        if r.get("first_divergence"):
            print("    " + divergence_text(r), flush=True)
    results.sort(key=lambda r: r["game"])
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    print("SUMMARY", json.dumps({k: v for k, v in counts.items() if v}), flush=True)
    if a.out:
        write_atomic(a.out, json.dumps(results, indent=1))
    if a.report:
        write_atomic(a.report, render_report(results, a.engine, command, a.timeout, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
