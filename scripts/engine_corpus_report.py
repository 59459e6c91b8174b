"""Classify every corpus game for the compiled engine and check it against the reference traces.

    .venv/bin/python scripts/engine_corpus_report.py [--budget 30] [--only SUBSTR]
        [--out results.json] [--report docs/reports/engine-corpus.md]
    .venv/bin/python scripts/engine_corpus_report.py --engine nonground [--traced] ...

``--engine nonground``: the same for the non-ground engine (``NonGroundEngine(desc)`` in
step 2, no grounding; *fallback* is then its refusal); ``--traced``: only games with a
reference trace.

For the latest version of every game of ``../shared/corpus/games/*/games/`` (all repositories),
in a fresh subprocess per game, one at a time, with a hard timeout:

1. the validator (``gdl.validate.check_file``, static checks): an invalid sheet is *refused*;
2. ``load_engine(desc, engine="compiled", budget_seconds=BUDGET, use_cache=False)``: either
   *compiled* (ground and compile seconds, atoms, fluents, ground rules from ``engine.info``)
   or *fallback* (the GroundingError that ``engine="auto"`` would log before playing on the
   Prolog reasoner);
3. for a compiled game with a reference trace in ``../shared/reference/prover/``, the trace
   replayed with the compiled engine (``agent.tracecheck.check_trace``, what
   ``ggp-persona trace RULES TRACE --engine compiled`` runs): exact, or the first divergence.

The worker prints a JSON line after each stage, so a game killed at the hard timeout still
reports how far it got.  The Markdown report is written atomically, headed by the command.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

CLASSES = ("compiled", "fallback", "refused", "timeout", "crash")
TRACE_STATUSES = ("exact", "diverges", "error", "timeout")


# ----------------------------------------------------------------------------- games
def latest_games(shared: Path) -> list[tuple[str, Path]]:
    """``[(game, rules path)]``: game = ``<repo>/games/<key>/v<N>`` for the largest N."""
    out = []
    for key_dir in sorted(shared.glob("corpus/games/*/games/*")):
        if not key_dir.is_dir():
            continue
        versions = [(int(v.name[1:]), v) for v in key_dir.glob("v*") if v.is_dir() and v.name[1:].isdigit()]
        if not versions:
            continue
        vdir = max(versions)[1]
        rules = None
        meta = vdir / "METADATA"
        if meta.is_file():
            try:
                name = json.loads(meta.read_text()).get("rulesheet")
                if name and (vdir / name).is_file():
                    rules = vdir / name
            except (ValueError, OSError):
                pass
        if rules is None:
            kifs = sorted(vdir.glob("*.kif"))
            if not kifs:
                continue
            rules = kifs[0]
        out.append((str(vdir.relative_to(shared / "corpus" / "games")), rules))
    return out


def trace_for(shared: Path, game: str) -> Path | None:
    """The reference trace of ``<repo>/games/<key>/v<N>``, from INDEX.tsv."""
    index = shared / "reference" / "prover" / "INDEX.tsv"
    if not index.is_file():
        return None
    for line in index.read_text().splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) > 1 and cols[0] == game:
            p = index.parent / cols[1]
            return p if p.is_file() else None
    return None


# ----------------------------------------------------------------------------- worker
def _emit(d: dict) -> None:
    print(json.dumps(d), flush=True)


def fallback_kind(message: str) -> str:
    m = message.lower()
    if "longer than" in m:
        return "grounding budget exceeded"
    if "ground rule instances" in m:
        return "too many ground rule instances"
    if "inference" in m or "limit" in m:
        return "Prolog limit while grounding"
    if "negation inside a recursive cycle" in m:
        return "negation in a recursive cycle at ground level"
    if "compileerror" in m:
        return "compile error"
    return "grounding error"


def work_nonground(out: dict, desc, trace: str | None) -> int:
    from agent.engine.nonground import NonGroundEngine
    from agent.reasoner.statemachine import GroundingError
    _emit(dict(out, cls="timeout", stage="building"))
    t1 = time.monotonic()
    try:
        sm = NonGroundEngine(desc)
    except GroundingError as e:
        _emit(dict(out, cls="fallback", kind="non-ground engine refused", why=str(e)[:500],
                   seconds=round(time.monotonic() - t1, 2)))
        return 0
    info = {"engine": "nonground", "build_seconds": round(time.monotonic() - t1, 3),
            "relations": len(sm.c.rel_keys), "flat_rules": len(sm.c.flat.rules)}
    return _replay(dict(out, cls="compiled", info=info, load_seconds=info["build_seconds"]), sm, trace)


def _replay(out: dict, sm, trace: str | None) -> int:
    """Emit ``out`` and, with a trace, the replay's verdict."""
    if trace is None:
        _emit(out)
        return 0
    from agent.tracecheck import check_trace, load_trace
    _emit(dict(out, trace_status="timeout"))
    t2 = time.monotonic()
    rep = check_trace(sm, load_trace(trace))
    status = "exact" if rep.exact else ("error" if rep.error else "diverges")
    _emit(dict(out, trace_status=status, steps=rep.steps, agree=rep.agree, checked=rep.checked,
               first_divergence=rep.first_divergence, trace_error=rep.error,
               trace_seconds=round(time.monotonic() - t2, 2)))
    return 0


def work(game: str, rules: str, trace: str | None, budget: float, engine: str = "compiled") -> int:
    from gdl.validate import check_file, verdict

    t0 = time.monotonic()
    out = {"game": game, "rules": rules, "trace": trace}
    desc, problems = check_file(rules)
    out["validate_seconds"] = round(time.monotonic() - t0, 2)
    if verdict(problems) == "invalid":
        errs = [p for p in problems if p.level == "error"]
        _emit(dict(out, cls="refused", why=errs[0].message if errs else "?", n_errors=len(errs),
                   first_error_at=f"line {errs[0].line}" if errs and errs[0].line else ""))
        return 0
    out["roles"] = len(desc.roles)
    if engine == "nonground":
        return work_nonground(out, desc, trace)
    # load_engine(engine="compiled", use_cache=False) step by step, to tell the stage of a runaway
    from agent.engine.compile import compile_program
    from agent.engine.compiled import CompiledEngine
    from agent.engine.ground import GroundingError, ground
    _emit(dict(out, cls="timeout", stage="grounding"))  # what the parent reports if killed now
    t1 = time.monotonic()
    try:
        gp = ground(desc, seconds=budget)
        _emit(dict(out, cls="timeout", stage="compiling", ground_seconds=round(gp.seconds, 3)))
        t2 = time.monotonic()
        game, tables = compile_program(gp)
    except GroundingError as e:
        msg = f"{type(e).__name__}: {e}"
        _emit(dict(out, cls="fallback", kind=fallback_kind(msg), why=msg[:500],
                   seconds=round(time.monotonic() - t1, 2)))
        return 0
    info = {"engine": "compiled", "ground_seconds": round(gp.seconds, 3),
            "compile_seconds": round(time.monotonic() - t2, 3), "iterations": gp.iterations,
            "ground_rules": gp.n_rules, "atoms": int(game.n_atoms), "fluents": int(game.n_base)}
    sm = CompiledEngine(game, tables, info)
    out.update(cls="compiled", info=info, load_seconds=round(time.monotonic() - t1, 2))
    return _replay(out, sm, trace)


# ----------------------------------------------------------------------------- parent
def run_one(game: str, rules: Path, trace: Path | None, budget: float, timeout: float,
            engine: str = "compiled") -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", game, str(rules),
           str(trace) if trace else "-", "--budget", str(budget), "--engine", engine]
    t0 = time.monotonic()
    killed = False
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        stdout, stderr, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:  # the child has been killed
        killed = True
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        rc = None
    wall = round(time.monotonic() - t0, 1)
    last = None
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                last = json.loads(line)
            except ValueError:
                pass
    if last is None:
        last = {"game": game, "rules": str(rules), "trace": str(trace) if trace else None}
        if killed:
            last.update(cls="timeout", stage="validation")
        else:
            tail = " | ".join(stderr.strip().splitlines()[-3:])
            last.update(cls="crash", why=f"exit status {rc}: {tail}"[:500])
    elif not killed and rc != 0:  # died after a stage: report the crash with that stage
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        if last.get("trace_status") == "timeout":
            last["trace_status"] = "error"
            last["trace_error"] = f"worker died: exit status {rc}: {tail}"[:500]
        else:
            last.update(cls="crash", why=f"exit status {rc} while {last.get('stage', '?')}: {tail}"[:500])
    if killed and last.get("cls") == "timeout":
        last["why"] = f"killed after {timeout:g} s while {last.get('stage', '?')}" + (
            f" (grounding took {last['ground_seconds']} s)" if "ground_seconds" in last else
            f"; the {budget:g} s grounding budget was not honoured"
            if last.get("stage") == "grounding" and timeout > budget else "")
    if killed and last.get("trace_status") == "timeout":
        last["trace_error"] = f"killed after {timeout:g} s while replaying the trace"
    last["wall_seconds"] = wall
    return last


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _short(v, n: int = 300) -> str:
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= n else s[:n] + " ..."


def _rel(p) -> str:
    s = str(p)
    i = s.find("/corpus/")
    if i < 0:
        i = s.find("/reference/")
    return "../shared" + s[i:] if i >= 0 else s


def _disagreements(bad: list, engine: str, options: str) -> list:
    """The report's section on traces that did not replay exactly, each with its command."""
    o = [f"## Trace disagreements ({len(bad)})", ""]
    if not bad:
        o += [f"None: every {'built' if engine == 'nonground' else engine} game with a reference "
              f"trace agrees exactly.", ""]
    for r in bad:
        line = f"* `{r['game']}`: {r.get('trace_status')}"
        if r.get("steps") is not None and r.get("agree"):
            line += f" ({r['steps']} steps; " + ", ".join(
                f"{f} {r['agree'][f]}/{r['checked'][f]}" for f in r["agree"]) + ")"
        d = r.get("first_divergence")
        if d:
            line += (f"; first divergence walk {d['walk']} step {d['step']} field `{d['field']}`: "
                     f"expected `{_short(d['expected'])}`, ours `{_short(d['ours'])}`")
        if r.get("trace_error"):
            line += f"; {_short(r['trace_error'], 400)}"
        o += [line, f"  reproduce: `.venv/bin/ggp-persona trace {_rel(r['rules'])} {_rel(r['trace'])} "
                    f"--engine {engine}{options}`"]
    return o + [""]


def _trace_cell(r: dict) -> str:
    tr = r.get("trace_status", "") if r.get("trace") else "no trace"
    if r.get("steps") is not None and tr in ("exact", "diverges"):
        tr += f" ({r['steps']})"
    return tr


def render_report(results: list, budget: float, timeout: float, command: str, seconds: float,
                  planned: int | None = None, engine: str = "compiled") -> str:
    if engine == "nonground":
        return render_nonground(results, timeout, command, seconds, planned)
    by = {c: [r for r in results if r["cls"] == c] for c in CLASSES}
    comp = by["compiled"]

    def total(r):
        i = r["info"]
        return i.get("ground_seconds", 0) + i.get("compile_seconds", 0)

    times = sorted(total(r) for r in comp)
    within = {lim: sum(1 for t in times if t <= lim) for lim in (1, 5, 30)}
    traced = [r for r in comp if r.get("trace")]
    tcount = {s: sum(1 for r in traced if r.get("trace_status") == s) for s in TRACE_STATUSES}
    steps = sum(r.get("steps", 0) for r in traced if r.get("trace_status") == "exact")
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    repos = {}
    for r in results:
        repo = r["game"].split("/")[0]
        repos.setdefault(repo, {c: 0 for c in CLASSES})[r["cls"]] += 1
    o = ["# Compiled engine over the game corpus", "",
         "Reproduce (from the repository root, with `../shared` beside it):", "",
         "```", command, "```", ""]
    if planned is not None and planned > len(results):
        o += [f"**Partial report: {len(results)} of {planned} games done** (the run was still going "
              f"or was cut).", ""]
    o += [f"Written {when}. The latest version of every game in `../shared/corpus/games/` "
         f"({len(results)} games), each in its own subprocess, one at a time: validator, then "
         f"what `load_engine(engine=\"compiled\", budget_seconds={budget:g}, use_cache=False)` does "
         f"(`ground`, then `compile_program`, run step by step to tell where a runaway is), then, "
         f"for a compiled game with a reference trace, the trace replayed with the compiled engine. "
         f"Hard timeout {timeout:g} s per game (grounding, compiling and the trace replay together). "
         f"Wall time of the run: {seconds / 60:.1f} min, on a 2-core machine shared with other work "
         f"(times are indicative).", "",
         "## Headline", "",
         "| class | games |", "| --- | ---: |"]
    for c in CLASSES:
        if by[c] or c in ("compiled", "fallback", "refused"):
            o.append(f"| {c} | {len(by[c])} |")
    o += [f"| **total** | **{len(results)}** |", "",
          "| repository | " + " | ".join(CLASSES) + " |", "| --- |" + " ---: |" * len(CLASSES)]
    for repo, cs in sorted(repos.items()):
        o.append(f"| {repo} | " + " | ".join(str(cs[c]) for c in CLASSES) + " |")
    o += ["", f"Ground + compile time of the {len(comp)} compiled games "
              "(`ground_seconds + compile_seconds` of `engine.info`; numba kernels are cached, so "
              "no JIT time is included):", "",
          "| within | games |", "| --- | ---: |"]
    for lim in (1, 5, 30):
        o.append(f"| {lim} s | {within[lim]} |")
    if times:
        o.append(f"| over 30 s | {len(times) - within[30]} |")
        med = times[len(times) // 2]
        o += ["", f"Median {med:.2f} s, slowest {times[-1]:.2f} s."]
    untraced = [r for r in results if r.get("trace") and r["cls"] != "compiled"]
    o += ["", f"Reference traces: {len(traced) + len(untraced)} games have one; {len(untraced)} of them "
              f"were not compiled (no compiled replay: `trace --engine compiled` exits 1 with the "
              f"reason), {len(traced)} were."]
    o += ["", f"Reference traces of compiled games: {len(traced)}; exact {tcount['exact']} "
              f"({steps} steps checked), diverges {tcount['diverges']}, error {tcount['error']}, "
              f"timeout {tcount['timeout']}.", ""]
    nontraced = [r for r in results if not r.get("trace")]
    if nontraced:
        o += [f"Games without a reference trace: {len(nontraced)} "
              f"({', '.join('`' + r['game'] + '`' for r in nontraced)}).", ""]
    bad = [r for r in traced if r.get("trace_status") != "exact"]
    o += _disagreements(bad, "compiled", f" --budget {budget:g}")
    for c, title in (("fallback", "Fallback to the Prolog reasoner"), ("timeout", "Killed at the hard timeout"),
                     ("crash", "Crashed"), ("refused", "Refused by the validator")):
        if not by[c]:
            continue
        o += [f"## {title} ({len(by[c])})", ""]
        if c == "fallback":
            kinds = {}
            for r in by[c]:
                kinds[r.get("kind", "?")] = kinds.get(r.get("kind", "?"), 0) + 1
            o += ["By reason: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ".", ""]
        for r in by[c]:
            extra = f" ({r['n_errors']} errors)" if "n_errors" in r else ""
            secs = f", {r['seconds']} s" if "seconds" in r else ""
            o.append(f"* `{r['game']}`{extra}{secs}: {_short(r.get('why', '?'), 400)}")
        o.append("")
    o += ["## Every compiled game", "",
          "Seconds are `ground_seconds` / `compile_seconds` of `engine.info`; trace = replay of the "
          "reference trace (steps checked).", "",
          "| game | roles | ground s | compile s | atoms | fluents | ground rules | trace |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in comp:
        i = r["info"]
        o.append(f"| `{r['game']}` | {r.get('roles', '')} | {i.get('ground_seconds', '')} | "
                 f"{i.get('compile_seconds', '')} | {i.get('atoms', '')} | {i.get('fluents', '')} | "
                 f"{i.get('ground_rules', '')} | {_trace_cell(r)} |")
    o.append("")
    return "\n".join(o)


def render_nonground(results: list, timeout: float, command: str, seconds: float,
                     planned: int | None) -> str:
    built = [r for r in results if r["cls"] == "compiled"]
    others = [r for r in results if r["cls"] != "compiled"]
    traced = [r for r in built if r.get("trace")]
    tcount = {s: sum(1 for r in traced if r.get("trace_status") == s) for s in TRACE_STATUSES}
    steps = sum(r.get("steps", 0) for r in traced if r.get("trace_status") == "exact")
    times = sorted(r["info"]["build_seconds"] for r in built)
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    o = ["# Non-ground engine over the game corpus", "",
         "Reproduce (from the repository root, with `../shared` beside it):", "",
         "```", command, "```", ""]
    if planned is not None and planned > len(results):
        o += [f"**Partial report: {len(results)} of {planned} games done.**", ""]
    o += [f"Written {when}. The latest version of each game, each in its own subprocess: the "
          f"validator, then `NonGroundEngine(desc)` (flat rules, static relations listed, no "
          f"grounding), then the reference trace replayed on it (`agent.tracecheck`, what "
          f"`ggp-persona trace RULES TRACE --engine nonground` runs). Hard timeout {timeout:g} s "
          f"per game. Wall time {seconds / 60:.1f} min on a 2-core machine shared with other "
          f"work (times are indicative).", "",
          "| | games |", "| --- | ---: |",
          f"| built | {len(built)} |"]
    for c in CLASSES[1:]:
        n = sum(1 for r in others if r["cls"] == c)
        if n:
            o.append(f"| {'refused by the engine' if c == 'fallback' else c} | {n} |")
    o += [f"| **total** | **{len(results)}** |", "",
          f"Reference traces replayed: {len(traced)}; exact {tcount['exact']} ({steps} steps "
          f"checked), diverges {tcount['diverges']}, error {tcount['error']}, timeout "
          f"{tcount['timeout']}."]
    if times:
        o += ["", f"Build time: median {times[len(times) // 2]:.2f} s, slowest {times[-1]:.2f} s."]
    bad = [r for r in traced if r.get("trace_status") != "exact"]
    o += [""] + _disagreements(bad, "nonground", "")
    if others:
        o += [f"## Not built ({len(others)})", ""]
        for r in others:
            o.append(f"* `{r['game']}` ({r['cls']}): {_short(r.get('why', '?'), 300)}")
        o.append("")
    o += ["## Every built game", "", "| game | roles | build s | relations | flat rules | trace |",
          "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in built:
        i = r["info"]
        o.append(f"| `{r['game']}` | {r.get('roles', '')} | {i['build_seconds']} | {i['relations']} | "
                 f"{i['flat_rules']} | {_trace_cell(r)} |")
    o.append("")
    return "\n".join(o)


def load_earlier(path: Path, budget: float, timeout: float, engine: str = "compiled") -> tuple[dict, float]:
    """``({game: result}, seconds)`` of an earlier run's --out file; nothing if there is none.
    A file from other settings is refused: its games were judged by another budget."""
    if not path.is_file():
        return {}, 0.0
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: cannot resume from {path}: {e}")
    if not isinstance(data, dict) or "results" not in data:
        raise SystemExit(f"error: {path} is not a results file of this script (no 'results')")
    if data.get("engine", "compiled") != engine:
        raise SystemExit(f"error: {path} holds results of the {data.get('engine', 'compiled')} engine, "
                         f"not the {engine} engine")
    if (data.get("budget"), data.get("timeout")) != (budget, timeout):
        raise SystemExit(f"error: {path} was run with budget {data.get('budget')} and timeout "
                         f"{data.get('timeout')}, not {budget:g} and {timeout:g}: start afresh or "
                         f"use the same settings")
    return {r["game"]: r for r in data["results"]}, float(data.get("seconds", 0.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=float, default=30.0, help="grounding budget per game (default 30 s)")
    ap.add_argument("--timeout", type=float, default=150.0,
                    help="hard timeout per game subprocess (default 150 s)")
    ap.add_argument("--only", action="append", default=[],
                    help="only games whose name contains this (repeatable: any of them)")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--out", type=Path, help="write the results as JSON here (after every game)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the games already in --out (same budget and timeout) and run the rest")
    ap.add_argument("--report", type=Path, help="write the Markdown report here (atomically)")
    ap.add_argument("--engine", choices=("compiled", "nonground"), default="compiled",
                    help="which engine to build and replay the traces on (default compiled)")
    ap.add_argument("--traced", action="store_true", help="only games with a reference trace")
    ap.add_argument("--worker", nargs=3, metavar=("GAME", "RULES", "TRACE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        game, rules, trace = a.worker
        return work(game, rules, None if trace == "-" else trace, a.budget, a.engine)
    command = ".venv/bin/python scripts/engine_corpus_report.py " + " ".join(
        shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:]))
    games = [(g, p) for g, p in latest_games(a.shared) if not a.only or any(o in g for o in a.only)]
    if a.traced:
        games = [(g, p) for g, p in games if trace_for(a.shared, g) is not None]
    done, before = {}, 0.0
    if a.resume:
        if not a.out:
            ap.error("--resume needs --out (the results of the earlier run)")
        done, before = load_earlier(a.out, a.budget, a.timeout, a.engine)
        print(f"resuming: {len(done)} games already done in {a.out}", flush=True)
    t0 = time.monotonic() - before
    results = []
    for i, (game, rules) in enumerate(games, 1):
        if game in done:
            results.append(done[game])
            continue
        r = run_one(game, rules, trace_for(a.shared, game), a.budget, a.timeout, a.engine)
        results.append(r)
        if a.out:  # after every game, so that an interrupted run resumes where it stopped
            write_atomic(a.out, json.dumps({"engine": a.engine, "budget": a.budget, "timeout": a.timeout,
                                            "seconds": time.monotonic() - t0, "results": results},
                                           indent=1))
        info = r.get("info", {})
        extra = (f"ground {info.get('ground_seconds')} compile {info.get('compile_seconds')}"
                 if r["cls"] == "compiled" and a.engine == "compiled" else
                 f"build {info.get('build_seconds')}" if r["cls"] == "compiled" else _short(r.get("why", ""), 160))
        ts = f" trace={r['trace_status']}" if r.get("trace_status") else ""
        print(f"[{i}/{len(games)}] {r['cls']:8s} {r['wall_seconds']:6.1f}s {game} {extra}{ts}", flush=True)
        if r.get("first_divergence"):
            d = r["first_divergence"]
            print(f"    walk {d['walk']} step {d['step']} {d['field']}: expected {_short(d['expected'], 150)} "
                  f"ours {_short(d['ours'], 150)}", flush=True)
        if r.get("trace_error"):
            print(f"    {r['trace_error'][:200]}", flush=True)
        if a.report and i < len(games):  # a partial report after every game, in case the run is cut
            write_atomic(a.report, render_report(results, a.budget, a.timeout, command,
                                                 time.monotonic() - t0, planned=len(games),
                                                 engine=a.engine))
    if a.out:
        write_atomic(a.out, json.dumps({"engine": a.engine, "budget": a.budget, "timeout": a.timeout,
                                        "seconds": time.monotonic() - t0, "results": results}, indent=1))
    if a.report:
        write_atomic(a.report, render_report(results, a.budget, a.timeout, command, time.monotonic() - t0,
                                             engine=a.engine))
    counts = {c: sum(1 for r in results if r["cls"] == c) for c in CLASSES}
    print("SUMMARY", json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
