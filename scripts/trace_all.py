"""Replay every reference trace with one engine; one line per game, summary at the end.

Usage: python scripts/trace_all.py [--engine prolog] [--only SUBSTR] [--out FILE]
Each game runs in a fresh subprocess with a time budget, so one slow or broken game
cannot stop the run.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))


def _one(args):
    path, engine, budget = args
    import signal
    from agent.tracecheck import check_trace, load_trace, rules_path_for
    from gdl.kif import read_rules_file

    def on_alarm(*_):
        raise TimeoutError(f"over {budget} s")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(budget)
    t0 = time.time()
    trace = load_trace(path)
    rules = rules_path_for(trace, path)
    try:
        from gdl.validate import check_file, verdict
        desc, problems = check_file(rules)
        v = verdict(problems)
    except ImportError:  # validator not available: read only
        desc, v, problems = read_rules_file(rules), "valid", []
    if v == "invalid":
        errs = [p.message for p in problems if p.level == "error"]
        return {"game": trace["game"], "status": "refused", "why": errs[0] if errs else "?"}
    try:
        if engine == "prolog":
            from agent.reasoner.prolog import PrologReasoner
            sm = PrologReasoner(desc)
        else:
            from agent.engine import load_engine
            sm = load_engine(desc, engine="compiled", budget_seconds=budget, use_cache=False)
        rep = check_trace(sm, trace)
    except Exception as e:
        if type(e).__name__ not in ("GroundingError", "CompileError"):
            if isinstance(e, TimeoutError):
                return {"game": trace["game"], "status": "timeout", "why": str(e),
                        "seconds": round(time.time() - t0, 1)}
            raise
        return {"game": trace["game"], "status": "fallback", "why": str(e)[:300],
                "seconds": round(time.time() - t0, 1)}
    except TimeoutError as e:
        return {"game": trace["game"], "status": "timeout", "why": str(e), "seconds": round(time.time() - t0, 1)}
    status = "exact" if rep.exact else ("error" if rep.error else "diverges")
    return {"game": trace["game"], "status": status, "steps": rep.steps,
            "seconds": round(time.time() - t0, 1), "summary": rep.summary()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="prolog")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    paths = sorted(p for p in (SHARED / "reference" / "prover").glob("*.json") if a.only in p.name)
    ctx = mp.get_context("spawn")
    results = []
    with ctx.Pool(a.jobs, maxtasksperchild=1) as pool:
        for r in pool.imap_unordered(_one, [(str(p), a.engine, a.budget) for p in paths]):
            results.append(r)
            print(f"{r['status']:9s} {r.get('seconds', '')!s:>6} {r['game']} {r.get('why', '')}", flush=True)
            if r["status"] in ("diverges", "error"):
                print("   " + r["summary"].replace("\n", "\n   "), flush=True)
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("SUMMARY", json.dumps(counts, sort_keys=True))
    if a.out:
        Path(a.out).write_text(json.dumps(sorted(results, key=lambda r: r["game"]), indent=1))


if __name__ == "__main__":
    main()
