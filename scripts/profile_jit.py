#!/usr/bin/env python3
"""Sampling profile of the compiled code (numba) on a real workload: where the time goes,
per compiled function, including numba's runtime (reference counting).

    python scripts/profile_jit.py GAME [--workload scoring|playouts] [--seconds 20] [--mode 0-3]

Runs the workload under Linux ``perf record`` (software clock, so it works where hardware
counters do not), in a fresh numba cache so that every compiled function's code library is
at hand, then maps each sample's instruction address to the compiled function it falls in
(perf cannot name JIT code itself). Prints each function's share of the samples that fell in
compiled code. ``scoring``: the champion's batch search (1000 simulations) on positions of
seeded random walks, the fitting path; ``playouts``: the engine's random playouts.

Functions inlined into their callers count as the caller. ``NRT_incref``/``NRT_decref`` are
numba's reference counting: a large share there means arrays passed through calls with their
references (see kernels.borrowed). Needs ``perf`` (Debian's linux-perf).
"""
from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def workload(game: str, kind: str, seconds: float, addr_file: Path, mode: int | None = None) -> None:
    """Child: run the workload for ``seconds``, then write every compiled function's address."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_engines import rules_path
    from search_hash import positions

    from agent.engine import kernels as K
    from agent.engine.loader import load_engine
    from agent.persona import load_persona
    from agent.search import driver_compiled as D
    from agent.search import leaf as L
    from agent.search import tree as T
    from gdl.kif import read_rules_file

    engine = load_engine(read_rules_file(rules_path(game)), engine="compiled")
    g = engine.game
    if mode is not None:   # playouts in another step mode than the one compiled in
        g = g._replace(ons_first=mode & 1, keep_moves=mode >> 1)
    items = [(s, r, 500 + i) for i, (s, r) in enumerate(positions(engine, 40, 3))]
    champion = load_persona("champion")
    D.search_batch(engine, items[:2], champion, limit=10)     # compiled before the clock starts
    K.playouts_for(g, g.init_state, 1, 10_000)
    t0 = time.time()
    while time.time() - t0 < seconds:
        if kind == "scoring":
            D.search_batch(engine, items, champion, limit=1000)
        else:
            K.playouts_for(g, g.init_state, 1000, 10_000)
    with open(addr_file, "w") as f:
        for mod in (K, D, T, L):
            for name in dir(mod):
                for cres in getattr(getattr(mod, name), "overloads", {}).values():
                    lib = cres.library
                    for fn in lib._final_module.functions:
                        if not fn.is_declaration:
                            addr = lib.get_pointer_to_function(fn.name)
                            if addr:
                                f.write(f"{addr} {fn.name}\n")


def readable(symbol: str) -> str:
    """``agent.engine.kernels._drain`` from a mangled numba symbol (else the symbol)."""
    m = re.match(r"(?:cfunc\.)?_ZN(?:7cpython)?((?:\d+\w+?)+?)B\d", symbol)
    if not m:
        return symbol
    s, out, j = m.group(1), [], 0
    while j < len(s) and s[j].isdigit():
        k = j
        while s[k].isdigit():
            k += 1
        n = int(s[j:k])
        out.append(s[k:k + n])
        j = k + n
    return ".".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("game")
    ap.add_argument("--workload", choices=["scoring", "playouts"], default="scoring")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--mode", type=int, choices=range(4), help="playouts: the step mode (kernels."
                    "probe_step_mode: bit 0 fluents turning on first, bit 1 moves kept on); default: the game's")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        workload(a.game, a.workload, a.seconds, Path(a.child), a.mode)
        return 0
    if not shutil.which("perf"):
        print("profile_jit: perf not found (Debian: apt-get install linux-perf)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba"))   # compiled here: code libraries at hand
        data, addrs = tmp / "perf.data", tmp / "addrs.txt"
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-o", str(data),
                            sys.executable, __file__, a.game, "--workload", a.workload,
                            "--seconds", str(a.seconds), "--child", str(addrs)]
                           + (["--mode", str(a.mode)] if a.mode is not None else []), env=env)
        if r.returncode != 0 or not addrs.is_file():
            print(f"profile_jit: the profiled run failed (exit {r.returncode})", file=sys.stderr)
            return 1
        ips = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"], capture_output=True,
                             text=True).stdout.split()
        table = sorted((int(x), n) for x, n in (line.split(" ", 1) for line in addrs.read_text().splitlines()))
    starts = [s for s, _ in table]
    shares: collections.Counter = collections.Counter()
    for ip in ips:
        ip = int(ip, 16)
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and ip - starts[i] < 1 << 20:    # within reach of a compiled function
            shares[readable(table[i][1].strip())] += 1
    jit = sum(shares.values())
    print(f"{len(ips):,} samples, {jit:,} in compiled code (the rest: compiling, Python, the kernel)")
    for name, n in shares.most_common(a.top):
        print(f"{n / max(jit, 1):6.1%}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
