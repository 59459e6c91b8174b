"""The scoring task on a real Dask cluster: a scheduler and two workers started as separate
processes on 127.0.0.1 (the ``dask`` commands of dask[distributed]); the Q-values must equal
those computed in this process for the same seed."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, SHARED, needs_shared

DASK = Path(sys.executable).with_name("dask")


@pytest.fixture
def cluster(tmp_path):
    if not DASK.is_file():
        pytest.skip("the dask command (dask[distributed]) is not installed in this environment")
    from agent.compute import local_dask_cluster
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    with local_dask_cluster(2, cwd=ROOT, env=env) as address:
        from distributed import Client
        with Client(address, timeout="5s") as c:
            assert len(c.scheduler_info()["workers"]) == 2
        yield address


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
    from agent.modelling import shared_evaluations as E
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
