"""The fast fit (persona-model 4.6): shared evaluations, the per-player model, its floor,
its cache, its determinism, and a fitted model that plays.

Records are made here: ticTacToe matches between a player who always takes the first of
its legal moves in the rules' order ("Lefty") and a uniformly random one, so no test needs
../shared.
"""
from __future__ import annotations

import asyncio
import json
import math
import random

import numpy as np
import pytest

from agent.modelling import choicemodel as CM
from agent.modelling import shared_evaluations as E
from agent.modelling.dataset import Decision, load_dataset
from agent.modelling.fast import FastSettings, run
from agent.persona import PersonaError, load_persona, parse_persona

from conftest import ROOT

TICTACTOE = ROOT / "games" / "ticTacToe.kif"


def _records(folder, n=24, seed=0, who="Lefty"):
    """``n`` ticTacToe matches ``who`` vs Random, roles alternating, as ggp-base Match JSON.
    Lefty takes the first of its legal moves in the rules' order, Righty the last."""
    from agent.engine.loader import load_engine
    from gdl.kif import read_rules_file
    from gdl.terms import render
    eng = load_engine(read_rules_file(TICTACTOE))
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        names = [who, "Random"] if i % 2 == 0 else ["Random", who]
        s, moves = eng.initial_state(), []
        while not eng.is_terminal(s):
            joint = []
            for r, name in enumerate(names):
                legal = eng.legal_moves(s, r)
                joint.append(legal[0] if name == "Lefty" else legal[-1] if name == "Righty" else rng.choice(legal))
            moves.append([render(m) for m in joint])
            s = eng.next_state(s, joint)
        rec = {"matchId": f"ttt.{who}.{i}", "playerNamesFromHost": names, "startTime": 1000 * i,
               "moves": moves, "startClock": 10, "playClock": 5}
        (folder / f"m{i}.json").write_text(json.dumps(rec))
    return folder


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    base = tmp_path_factory.mktemp("fast")
    recs = _records(base / "records")
    ds = load_dataset([recs], game=str(TICTACTOE), cache_dir=base / "decisions", progress=False)
    s = FastSettings(limit=60, n_boot=200)
    res = run(ds, base / "out", s, cache_root=base / "evals", workers=0, progress=False, log=lambda m: None)
    return base, ds, s, res


def test_fast_fit_learns_a_player_and_reports(fitted):
    base, ds, s, res = fitted
    out = base / "out"
    assert (out / "report.html").is_file() and (out / "metric_logp.png").is_file()
    assert set(res["labels"]) == {"Lefty", "Random"}
    rows = {(r["label"], r["model"]): r for r in res["metrics"]}
    # Lefty always plays its first move: its model must find that (the token columns and
    # the move counts see it), far above random, the champion and the pooled model
    lefty = rows[("Lefty", "fitted")]
    assert lefty["argmax"] > 0.9
    assert lefty["logp"] > rows[("Lefty", "random")]["logp"] + 0.5
    assert lefty["logp"] > rows[("Lefty", "champion")]["logp"]
    # Random's own model cannot predict it: cross-validation finds little signal, so the
    # model is mostly the uniform choice and scores about what uniform does
    assert res["models"]["Random"]["epsilon"] >= 0.5
    assert rows[("Random", "fitted")]["logp"] > rows[("Random", "random")]["logp"] - 0.05
    # every stage timed, wall and CPU
    assert {"plan", "shared evaluations", "player models", "evaluation"} <= set(res["stages"])
    assert all(t["wall"] >= 0 and t["cpu"] >= 0 for t in res["stages"].values())
    assert "Time per stage" in (out / "report.html").read_text()
    # fit-bots.md's tables come from scripts/fit_tables.py, for this kind of fit too
    import subprocess
    import sys
    tables = subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_tables.py"), str(out / "results.json")],
                            capture_output=True, text=True)
    assert tables.returncode == 0, tables.stderr
    assert f"| {res['bar']['labels_meeting']} of 2 | {sum(res['matrix']['diagonal_max'])} of 2 rows" in tables.stdout
    assert "| shared evaluations |" in tables.stdout


def test_second_fit_runs_no_search(fitted, tmp_path):
    base, ds, s, res = fitted
    again = run(ds, tmp_path / "out2", s, cache_root=base / "evals", workers=0, progress=False, log=lambda m: None)
    assert again["searched_decisions"] == 0 and again["cached_decisions"] == len(ds.decisions)
    assert "shared evaluations" in again["stages"]
    # same data, same cache, same settings: the same models and figures (deterministic)
    assert again["metrics"] == res["metrics"]
    assert again["models"] == res["models"]


def test_one_more_player_against_an_earlier_fit(fitted, tmp_path):
    """A new player (e.g. a person with a few matches) fitted against an earlier fit: only
    its own decisions are searched, the earlier pooled model is its prior and baseline (not
    refitted), and it is ranked against the earlier models."""
    base, ds, s, res = fitted
    recs = _records(tmp_path / "records", n=8, seed=7, who="Righty")
    new = load_dataset([recs], game=str(TICTACTOE), cache_dir=tmp_path / "decisions", progress=False,
                       players={"Righty"})
    got = run(new, tmp_path / "out", s, cache_root=base / "evals", workers=0, progress=False,
              log=lambda m: None, prior=base / "out")
    assert got["labels"] == ["Righty"] and got["prior"]
    assert 0 < got["searched_decisions"] <= len(new.decisions)
    assert not (tmp_path / "out" / "pooled.toml").exists()
    assert {r["model"] for r in got["metrics"]} >= {"fitted", "pooled", "champion", "random"}
    assert set(got["most_like"]["Righty"]) == {"Lefty", "Random"}
    assert load_persona(tmp_path / "out" / "personas" / "Righty.toml").model is not None
    with pytest.raises(Exception, match="no results.json"):
        run(new, tmp_path / "o2", s, cache_root=base / "evals", workers=0, progress=False,
            log=lambda m: None, prior=tmp_path)


def test_evaluations_are_deterministic_under_crn(fitted):
    base, ds, s, res = fitted
    from agent.engine.loader import load_engine
    from agent.modelling.prepare import decision_seed
    from agent.search.features import FactIndex, calibrate
    eng = load_engine(ds.games[ds.decisions[0].game])
    plan = dict(res["plan"])
    items = [(d.state, d.role, decision_seed(0, d.match_id, d.role, d.ply), d.moves) for d in ds.decisions[:6]]
    a = E.evaluate_items(eng, items, plan, calibrate(eng), FactIndex(eng.roles))
    b = E.evaluate_items(eng, list(reversed(items)), plan, calibrate(eng), FactIndex(eng.roles))[::-1]
    for x, y in zip(a, b):
        assert np.array_equal(x, y)                  # each decision by its own seed, in any batch
    # and live play computes the same matrix for the same seed
    x, _ = E.evaluate_state(eng, *items[0][:2], items[0][3], items[0][2], plan, calibrate(eng), FactIndex(eng.roles))
    assert np.array_equal(x, a[0])


def _synthetic(n_pm=30, per=6, seed=0, absurd=0.0):
    """Decisions with 4 moves and one shared column; the player takes the move with the
    highest column, except a share ``absurd`` of decisions where it takes the lowest."""
    rng = np.random.default_rng(seed)
    ds, xs = [], []
    for pm in range(n_pm):
        for t in range(per):
            x = rng.normal(size=(4, 1)).astype(np.float32)
            c = int(np.argmin(x[:, 0])) if rng.random() < absurd else int(np.argmax(x[:, 0]))
            ds.append(Decision("g", f"m{pm}", 0, t, "P", "P", float(pm), frozenset({("s", pm, t)}),
                               tuple(f"a{rng.integers(1000)}_{j}" for j in range(4)), c, None))
            xs.append(x)
    return ds, xs


def test_uniform_floor_bounds_every_surprise():
    ds, xs = _synthetic()
    model = CM.fit(ds, xs, ["x"])
    assert model.eps >= CM.EPS_MIN
    # a test set where the player takes the move the model finds most absurd
    test, txs = _synthetic(n_pm=10, seed=1, absurd=1.0)
    lps = CM.held_out_log_probs(model, test, txs)
    floor = math.log(CM.EPS_MIN / 4)
    assert all(lp[d.chosen] >= floor - 1e-9 for lp, d in zip(lps, test))
    # a test set with a fifth of such moves still scores above uniform random
    mixed, mxs = _synthetic(n_pm=20, seed=2, absurd=0.2)
    lps = CM.held_out_log_probs(model, mixed, mxs)
    assert np.mean([lp[d.chosen] for lp, d in zip(lps, mixed)]) > math.log(1 / 4)


def test_thin_data_says_so_and_stays_near_the_prior():
    ds, xs = _synthetic(n_pm=40)
    pooled = CM.fit(ds, xs, ["x"])
    few, fxs = _synthetic(n_pm=3, per=4, seed=5)
    m = CM.fit(few, fxs, ["x"], prior=pooled)
    assert any("fewer than 200" in w for w in m.info["warnings"])
    assert m.w[0] == pytest.approx(pooled.w[0], rel=0.5)


def test_fitted_persona_file_loads_and_refuses_damage(fitted, tmp_path):
    base, ds, s, res = fitted
    path = base / "out" / "personas" / "Lefty.toml"
    p = load_persona(path)
    assert p.kind == "fitted" and p.model is not None and p.limit == res["plan"]["limit"]
    text = path.read_text()
    bad = text.replace("epsilon = ", "epsilon = -", 1)
    with pytest.raises(PersonaError, match="epsilon"):
        parse_persona(bad, "bad.toml")
    with pytest.raises(PersonaError, match="model"):
        parse_persona(text.replace("[model.fit]", "[model.fitx]", 1), "bad.toml")


def test_fitted_persona_plays_a_whole_match(fitted, tmp_path):
    """The model plays through the match runner (the server's player machinery): the match
    completes, and each decision the player made in time is the model's argmax, with its
    probabilities in the record.  (A move late on a loaded machine is the server's
    fallback, as for any persona: no timing is asserted here.)"""
    base, ds, s, res = fitted
    from agent.match.players import PersonaPlayer, RandomPlayer
    from agent.match.runner import run_match
    persona = base / "out" / "personas" / "Lefty.toml"
    players = [PersonaPlayer(str(persona), "lefty-model", log_dir=tmp_path / "players"), RandomPlayer(seed=3)]
    rec = asyncio.run(run_match(TICTACTOE.read_text(), players, start_clock=60, play_clock=5,
                                out_dir=tmp_path, referee="prolog"))
    assert rec["isCompleted"] and not rec.get("isAborted")
    logs = list((tmp_path / "players").glob("*.json"))
    assert logs
    ours = json.loads(logs[0].read_text())
    decisions = [d for d in ours["x-decisions"] if len(d.get("legal", [])) > 1]
    ours = [d for d in decisions if not d.get("fallback")]
    assert ours, decisions
    assert all("p" in d and d["move"] == max(d["p"], key=d["p"].get) for d in ours), ours


def _cli(*args):
    import os
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    return subprocess.run([sys.executable, "-m", "agent.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=900)


def test_cli_fit_is_the_fast_fit_and_attribute_reads_its_models(fitted, tmp_path):
    base, ds, s, res = fitted
    recs = base / "records"
    common = [recs, "--game", TICTACTOE, "--cache", base / "cli-cache"]
    r = _cli("fit", *common, "--out", tmp_path / "fit", "--limit", "40", "--workers", "0")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "shared evaluations:" in r.stdout and "bar met for" in r.stdout and "Traceback" not in r.stderr
    got = json.loads((tmp_path / "fit" / "results.json").read_text())
    assert got["mode"] == "fast" and got["plan"]["limit"] == 40
    r2 = _cli("attribute", *common, "--player", "Lefty", "--personas", tmp_path / "fit" / "personas")
    assert r2.returncode == 0, r2.stderr[-2000:]
    first = [line for line in r2.stdout.splitlines() if line.strip().startswith("1.")]
    assert first and "Lefty" in first[0]               # Lefty's records are most like Lefty's model
    # an earlier fit that is not one: one clear line
    r3 = _cli("fit", *common, "--out", tmp_path / "f3", "--prior", tmp_path)
    assert r3.returncode == 2 and "no results.json" in r3.stderr and "Traceback" not in r3.stderr


def test_training_is_capped_only_where_the_budget_binds(tmp_path):
    """Departure pinned (README): training decisions are capped per player only when the
    game's plan cannot give every decision the thesis's 1000 simulations."""
    from agent.modelling.fast import make_plan
    ds, _ = _synthetic(n_pm=30, per=6)
    train, test = ds[:150], ds[150:]
    plan = {"version": E.EVAL_VERSION, "limit": E.DEFAULT_LIMIT, "shallow_horizon": E.SHALLOW_HORIZON,
            "replies": E.REPLIES, "measured": {"fixed_ms": 1.0, "per_simulation_ms": 0.01, "decisions": 180,
                                               "workers": 2, "budget_seconds": 1200}}
    E.EvalCache.store_plan(tmp_path, "g", plan)
    got, modelled = make_plan(None, train, test, 0, cap=40, workers=2, cache_root=tmp_path, game="g")
    assert got["limit"] == E.DEFAULT_LIMIT and modelled == train
    E.EvalCache.store_plan(tmp_path, "g", {**plan, "limit": 300})
    got, modelled = make_plan(None, train, test, 0, cap=40, workers=2, cache_root=tmp_path, game="g")
    assert got["limit"] == 300 and len(modelled) == 40 and set(modelled) <= set(train)
    # the simulations a budget affords, from the measured costs
    m = {"fixed_ms": 10.0, "per_simulation_ms": 0.2, "workers": 2, "budget_seconds": 1200}
    assert E.affordable_limit(m, 24000) == 450          # (100 ms - 10 ms) / 0.2 ms = 450
    assert E.affordable_limit(m, 10) == E.DEFAULT_LIMIT and E.affordable_limit(m, 10 ** 7) == E.MIN_LIMIT


def test_above_the_budget_it_says_the_cost_and_the_way_to_dask(fitted, tmp_path, monkeypatch):
    base, ds, s, res = fitted
    from agent.modelling import fast
    monkeypatch.setattr(fast, "BUDGET_SECONDS", 0)      # any run is then above it
    said = []
    run(ds, tmp_path / "out", s, cache_root=tmp_path / "evals", workers=0, progress=False, log=said.append)
    text = "\n".join(said)
    assert "decisions to search" in text and "min with 1 worker" in text
    assert "above the 0-minute budget" in text and "--scheduler tcp://" in text


def test_pool_workers_end_with_a_killed_fit(tmp_path):
    """A fit killed with -9 leaves no worker searching on (Linux: PR_SET_PDEATHSIG)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    script = tmp_path / "slow.py"
    script.write_text("import time\nfrom agent.compute import run_tasks\n"
                      "def slow(x):\n    time.sleep(60)\n    return x\n"
                      "if __name__ == '__main__':\n    run_tasks(slow, [1, 2], workers=2, progress=False)\n")
    parent = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        kids = []
        while len(kids) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            out = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout
            kids = [int(p) for p in out.split()]
        assert kids, "the pool never started"
        time.sleep(3)                        # the workers are in their tasks now
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        alive = kids
        while alive and time.monotonic() < deadline:
            time.sleep(0.5)
            alive = [k for k in alive if os.path.exists(f"/proc/{k}") and
                     "Z" not in open(f"/proc/{k}/stat").read().split()[2]]
        # the resource tracker is no pool worker: only processes running our task count
        alive = [k for k in alive if "resource_tracker" not in open(f"/proc/{k}/cmdline").read()]
        assert not alive
    finally:
        if parent.poll() is None:
            parent.kill()


def test_move_counts_come_from_earlier_time_blocks_only():
    """Departure pinned (README): a training decision's move counts are those of the
    player's earlier time blocks, never its own block's or a later one's."""
    ds, xs = _synthetic(n_pm=9, per=2)
    ds = [Decision(d.game, d.match_id, d.role, d.ply, d.player, d.label, d.start, frozenset({("s",)}),
                   ("a", "b", "c", "d"), 1, None) for d in ds]     # one state, always move b
    fold = CM._folds([d.pm for d in ds], [d.start for d in ds], 3)
    mats = CM._training_matrices(ds, xs, {}, fold)
    state_freq = 1 + 2       # the shared column, no tokens, then (move, after prev, in state)
    for d, f, x in zip(ds, fold, mats):
        seen = x[1, state_freq]                                  # the frequency of b in this state
        assert seen == (0.0 if f == 0 else 1.0), (d.start, f, seen)
    # eps may be 1: the uniform choice itself
    assert 1.0 in CM.EPS_GRID
    lp = CM.mix(np.log(np.array([0.9, 0.1])), np.log(np.array([2.0, 2.0])), 1.0)
    assert np.allclose(np.exp(lp), 0.5)
