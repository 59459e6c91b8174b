"""The scoring task on a real Dask cluster: a scheduler and two workers started as separate
processes on 127.0.0.1 (the ``dask`` commands of dask[distributed]); the Q-values must equal
those computed in this process for the same seed."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, SHARED, needs_shared

DASK = Path(sys.executable).with_name("dask")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    if not DASK.is_file():
        pytest.skip("the dask command (dask[distributed]) is not installed in this environment")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                           "--no-dashboard"], cwd=ROOT, env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client
        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(address, timeout="5s") as c:
                    c.wait_for_workers(2, timeout=120)
                    assert len(c.scheduler_info()["workers"]) == 2
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


@needs_shared
def test_scoring_on_dask_equals_local(cluster, tmp_path, monkeypatch):
    from agent.modelling import scoring
    from agent.modelling.dataset import load_dataset
    from agent.persona import load_persona
    bulk = SHARED / "corpus" / "matches" / "bulk-sample.jsonl"
    ds = load_dataset([bulk], repositories=[SHARED / "corpus" / "games"], game="connectFour",
                      cache_dir=tmp_path / "decisions", progress=False)
    sub = ds.decisions[:8]
    monkeypatch.setattr(scoring, "CHUNK", 2)          # four tasks, spread over both workers
    p = load_persona("champion")
    remote = scoring.Scorer(ds.games, seed=11, limit=30, scheduler=cluster, progress=False)
    (q_remote,) = remote.q([p], sub)
    local = scoring.Scorer(ds.games, seed=11, limit=30, workers=0, progress=False)
    (q_local,) = local.q([p], sub)
    assert remote.computed == local.computed == 8
    assert all(np.array_equal(a, b) for a, b in zip(q_remote, q_local))


@needs_shared
def test_shared_evaluations_on_dask_equal_local(cluster, tmp_path, monkeypatch):
    """The fast fit's shared evaluations (spec 4.6 item 1) on the cluster are the local ones:
    every decision carries its CRN seed, so the backend cannot change a feature."""
    from agent.modelling import evaluations as E
    from agent.modelling.dataset import load_dataset
    from agent.modelling.fast import _items
    bulk = SHARED / "corpus" / "matches" / "bulk-sample.jsonl"
    ds = load_dataset([bulk], repositories=[SHARED / "corpus" / "games"], game="connectFour",
                      cache_dir=tmp_path / "decisions", progress=False)
    sub = ds.decisions[:8]
    game = sub[0].game
    monkeypatch.setattr(E, "CHUNK", 2)                # four tasks, spread over both workers
    plan = {"version": E.EVAL_VERSION, "limit": 30, "shallow_horizon": E.SHALLOW_HORIZON, "replies": E.REPLIES}
    keyed = _items(sub, 5)
    remote = E.EvalCache(tmp_path / "remote", game, plan)
    remote.fill(game, ds.games[game], keyed, scheduler=cluster, progress=False)
    local = E.EvalCache(tmp_path / "local", game, plan)
    local.fill(game, ds.games[game], keyed, workers=0, progress=False)
    assert remote.computed == local.computed == 8
    assert all(np.array_equal(remote.data[k], local.data[k]) for k, _ in keyed)
    # what the cluster computed is on disk: a new cache over the folder searches nothing
    again = E.EvalCache(tmp_path / "remote", game, plan)
    assert again.fill(game, ds.games[game], keyed, workers=0, progress=False) == 0
