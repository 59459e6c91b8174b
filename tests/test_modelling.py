"""Fitting personas (agent/modelling): likelihood, metrics, splits, GA, baselines, dataset, CLI.

Small hand-checkable cases first; then the real records of ../shared (skipped without it).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from agent.modelling import attribution as A
from agent.modelling import ga as G
from agent.modelling.baselines import MoveFrequency
from agent.modelling.dataset import DatasetError, Decision, parse_aliases, read_labels
from agent.modelling.likelihood import fit_choice, log_probs, pad, thesis_log_fitness
from agent.modelling.metrics import decision_metrics, interval, paired_interval, random_metrics
from agent.modelling.prepare import decision_seed, stratified_subsample
from agent.modelling.scoring import persona_key
from agent.modelling.splits import group_kfold, later_matches
from agent.persona import load_persona, parse_persona

from conftest import ROOT, SHARED, needs_shared


def dec(match="m", role=0, ply=0, label="A", start=0.0, n=3, chosen=0, state=None, prev=None):
    moves = tuple(f"a{i}" for i in range(n))
    return Decision("g", match, role, ply, label, label, start, frozenset(state or {("s", ply)}), moves, chosen, prev)


# ------------------------------------------------------------------------------ likelihood

def test_likelihood_by_hand():
    Q, mask = pad([np.array([10.0, 0.0]), np.array([10.0, 0.0, 0.0])])
    # Boltzmann: e^(0.1*10) / (e^1 + e^0)
    p = math.e / (math.e + 1)
    lp = log_probs(Q, mask, [0, 0], 0.0, 0.0, 0.1)
    assert lp[0] == pytest.approx(math.log(p))
    assert lp[1] == pytest.approx(math.log(math.e / (math.e + 2)))
    # RandomError mixes in uniform: RE/|A| + (1-RE)*Boltzmann
    assert log_probs(Q, mask, [1], 0.5, 0.0, 0.1)[0] == pytest.approx(math.log(0.25 + 0.5 * (1 - p)))
    # NiceThreshold lifts moves within the gap to Q*: both moves equal
    assert log_probs(Q, mask, [1], 0.0, 10.0, 0.1)[0] == pytest.approx(math.log(0.5))
    assert log_probs(Q, mask, [1], 0.0, 9.99, 0.1)[0] == pytest.approx(math.log(1 - p))
    # RE = 1 is uniform whatever Q
    assert log_probs(Q, mask, [0, 2], 1.0, 0.0, 2.0) == pytest.approx([math.log(.5), math.log(1 / 3)])


def test_fit_choice_finds_the_generating_parameters():
    # a player who always takes the top move: the grid must pick the sharpest kappa, RE = 0
    qs = [np.array([60.0, 40.0, 20.0])] * 20
    Q, mask = pad(qs)
    c = fit_choice(Q, mask, [0] * 20)
    assert (c["random_error"], c["nice_threshold"], c["kappa"]) == (0.0, 0.0, 2.0)
    # a player who picks uniformly: any model with uniform output is best, ll = log(1/3)
    Q, mask = pad(qs[:18])
    c = fit_choice(Q, mask, [0, 1, 2] * 6)
    assert c["ll"] == pytest.approx(math.log(1 / 3))


def test_thesis_fitness_is_mean_over_player_matches_of_mean_log_p():
    Q, mask = pad([np.array([10.0, 0.0])] * 3)
    lp = math.log(math.e / (math.e + 1))
    lq = math.log(1 / (math.e + 1))
    # match a: two decisions (both top), match b: one decision (bottom): F = mean(lp, lq)
    f = thesis_log_fitness(Q, mask, [0, 0, 1], ["a", "a", "b"])
    assert f == pytest.approx((lp + lq) / 2)


# ------------------------------------------------------------------------------ metrics

def test_decision_metrics_by_hand():
    q = [np.array([5.0, 5.0, 1.0]), np.array([3.0, 9.0])]
    lp = [np.log(np.array([.4, .4, .2])), np.log(np.array([.5, .5]))]
    m = decision_metrics(q, lp, [1, 0], choice={"random_error": 0.0, "nice_threshold": 0.0})
    assert list(m["argmax"]) == [0.5, 0.0]           # tie of two at the top: half credit
    assert list(m["top2"]) == [1.0, 1.0]
    assert list(m["choose"]) == [0.5, 0.0]
    assert list(m["regret"]) == [0.0, 6.0]
    assert list(m["cset"]) == [2, 1]                 # the tied pair; the best alone
    assert m["expected"] == pytest.approx([.4, .5])
    m = decision_metrics(q, lp, [2, 0], choice={"random_error": 0.2, "nice_threshold": 6.0})
    # NT = 6 puts every move of both decisions in C; RE adds 0.2/|A|
    assert m["choose"] == pytest.approx([0.2 / 3 + 0.8 / 3, 0.2 / 2 + 0.8 * 0.5])
    assert list(m["cset"]) == [3, 2]
    assert np.isnan(decision_metrics(lp, lp, [0, 0], is_q=False)["cset"]).all()
    r = random_metrics([2, 4])
    assert list(r["top2"]) == [1.0, 0.5] and r["logp"] == pytest.approx([-math.log(2), -math.log(4)])


def test_intervals_resample_player_matches():
    pms = ["a", "a", "b", "b"]
    v, lo, hi = interval(pms, [1, 1, 1, 1], n_boot=200)
    assert (v, lo, hi) == (1.0, 1.0, 1.0)
    v, lo, hi = interval(pms, [1, 1, 0, 0], n_boot=200)
    assert v == 0.5 and lo == 0.0 and hi == 1.0
    d, lo, hi = paired_interval(pms, [1, 1, 1, 1], [0, 0, 0, 1], n_boot=200)
    assert d == pytest.approx(0.75) and lo > 0


# ------------------------------------------------------------------------------ splits

def _many():
    out = []
    for lab in ("A", "B"):
        for m in range(20):
            for ply in range(3):
                out.append(dec(match=f"{lab}{m}", role=m % 2, ply=ply, label=lab, start=float(m)))
    return out


def test_later_matches_holds_out_the_last_30_percent_by_start():
    train, test = later_matches(_many(), 0.3)
    tr, te = {d.pm for d in train}, {d.pm for d in test}
    assert not tr & te
    for lab in "AB":
        starts = sorted({d.start for d in test if d.label == lab})
        assert starts == [14.0, 15.0, 16.0, 17.0, 18.0, 19.0]
        assert max(d.start for d in train if d.label == lab) == 13.0


def test_group_kfold_no_player_match_on_both_sides():
    ds = _many()
    folds = group_kfold(ds, 5, seed=1)
    assert len(folds) == 5
    seen = []
    for train, test in folds:
        assert not {d.pm for d in train} & {d.pm for d in test}
        seen += sorted({d.pm for d in test})
    assert sorted(seen) == sorted({d.pm for d in ds})      # each player-match tested once
    # fewer than 10 player-matches of a label: leave-one-out
    small = [d for d in ds if d.label == "A" and int(d.match_id[1:]) < 4]
    assert len(group_kfold(small, 5)) == 4


def test_stratified_subsample_spreads_over_player_matches_and_is_seeded():
    ds = _many()
    a = stratified_subsample(ds, 40, (0, 1))
    assert a == stratified_subsample(ds, 40, (0, 1)) and a != stratified_subsample(ds, 40, (0, 2))
    assert len({d.pm for d in a}) == 40                    # one per player-match before any second
    assert stratified_subsample(ds, 1000, 0) == ds


# ------------------------------------------------------------------------------ GA

def _quadratic(pop, gen):
    lo, hi = G.bounds(G.genes())
    z = (np.asarray(pop) - lo) / (hi - lo)
    return -((z - 0.3) ** 2).sum(axis=1)


def test_ga_is_deterministic_for_a_seed_and_improves():
    cfg = G.GAConfig(population=10, generations=8, patience=100, seed=3)
    a, b = G.run_ga(_quadratic, cfg), G.run_ga(_quadratic, cfg)
    assert a.history == b.history and a.best == b.best
    c = G.run_ga(_quadratic, G.GAConfig(population=10, generations=8, patience=100, seed=4))
    assert c.history != a.history
    assert a.history[-1]["best"] >= a.history[0]["best"]           # elitism: never worse
    assert all(x["best"] >= y["best"] for x, y in zip(a.history[1:], a.history))


def test_ga_judges_a_gain_against_the_elite_on_the_same_decisions():
    """Each generation scores another subsample: an easy one (here generation 1, every
    fitness +1) must not stop the run as "without gain" while new individuals still beat the
    elite on their own generation's decisions (a full-size fit stopped after 15 generations
    on such a subsample)."""
    def easy_once(pop, gen):
        return _quadratic(pop, gen) + (1.0 if gen == 1 else 0.0)

    st = G.run_ga(easy_once, G.GAConfig(population=10, generations=30, patience=3, seed=3))
    bests = [h["best"] for h in st.history]
    assert max(bests[2:]) < bests[1]          # no later generation reaches the easy one's best
    assert st.generation > 4                  # yet the run went on past patience + 1
    if st.stopped.endswith("without gain"):   # and stopped only when the elite stayed the best
        assert all(h["fitness"][0] == max(h["fitness"]) for h in st.history[-3:])


def test_ga_checkpoint_of_the_old_gain_rule_is_not_resumed(tmp_path):
    cfg = G.GAConfig(population=6, generations=3, patience=100, seed=2)
    ck = tmp_path / "ga.json"
    G.run_ga(_quadratic, cfg, checkpoint=ck)
    doc = json.loads(ck.read_text())
    assert G._load(ck, cfg, []) is not None
    del doc["gain"]
    ck.write_text(json.dumps(doc))
    assert G._load(ck, cfg, []) is None


def test_ga_checkpoint_compressed_resumes_and_reads_an_older_plain_one(tmp_path):
    """A ``.gz`` checkpoint (what a fit writes, so a committed report stays small) resumes
    the run; where only the plain JSON of an earlier run lies beside it, that is read; a
    truncated one starts afresh."""
    import gzip
    cfg = G.GAConfig(population=6, generations=3, patience=100, seed=2)
    ck = tmp_path / "ga.json.gz"
    done = G.run_ga(_quadratic, cfg, checkpoint=ck)
    doc = json.loads(gzip.decompress(ck.read_bytes()))
    assert G._load(ck, cfg, []).history == done.history
    older = tmp_path / "old" / "ga.json"
    older.parent.mkdir()
    older.write_text(json.dumps(doc))
    assert G._load(older.with_suffix(".json.gz"), cfg, []).history == done.history
    ck.write_bytes(ck.read_bytes()[:40])
    assert G._load(ck, cfg, []) is None


def test_ga_resumes_after_an_interruption_exactly(tmp_path):
    cfg = G.GAConfig(population=8, generations=6, patience=100, seed=5)
    whole = G.run_ga(_quadratic, cfg)
    calls = []

    def flaky(pop, gen):
        calls.append(gen)
        if gen == 3 and calls.count(3) == 1:
            raise KeyboardInterrupt
        return _quadratic(pop, gen)

    ck = tmp_path / "ga.json"
    with pytest.raises(KeyboardInterrupt):
        G.run_ga(flaky, cfg, checkpoint=ck)
    resumed = G.run_ga(flaky, cfg, checkpoint=ck)
    assert calls == [0, 1, 2, 3, 3, 4, 5]                          # restarted at generation 3
    assert resumed.history == whole.history and resumed.best == whole.best
    # the wall time is kept beside the history, over both runs: every generation timed once
    assert resumed.timed == len(resumed.history) == 6
    # another configuration does not pick up this checkpoint
    other = G.run_ga(_quadratic, G.GAConfig(population=8, generations=2, seed=5), checkpoint=ck)
    assert len(other.history) == 2


def test_ga_thesis_mode_has_16_genes_and_roulette():
    cfg = G.GAConfig(population=6, generations=3, thesis=True, seed=0)

    def f(pop, gen):
        assert np.asarray(pop).shape == (6, 16)
        return -np.arange(6, dtype=float)
    st = G.run_ga(f, cfg)
    assert len(st.history) == 3


def test_decoded_persona_is_a_valid_persona_file():
    gl = G.genes()
    lo, hi = G.bounds(gl)
    p = G.decode(lo + 0.37 * (hi - lo), gl, name="X", limit=200,
                 choice={"random_error": 0.1, "nice_threshold": 5.0, "kappa": 0.5})
    back = parse_persona(p.to_toml(), "x.toml")
    assert back == p and back.limit == 200 and isinstance(back.rave, int)
    assert persona_key(p, None) == persona_key(p.replace(random_error=0.9, kappa=2.0), None)
    assert persona_key(p, None) != persona_key(p.replace(rave=p.rave + 1), None)


def test_decision_seed_is_the_spec_hash():
    import hashlib
    h = hashlib.sha256(b"7|m1|1|4|0").digest()[:8]
    assert decision_seed(7, "m1", 1, 4) == int.from_bytes(h, "little")
    assert decision_seed(7, "m1", 1, 4, 1) != decision_seed(7, "m1", 1, 4, 0)


# ------------------------------------------------------------------------------ baselines, attribution

def test_move_frequency_learns_what_a_player_usually_plays():
    # player always plays a1 in state s0 across many matches; unigram alone says a1 too
    train = [dec(match=f"m{i}", chosen=1, state={("s", 0)}) for i in range(10)]
    mf = MoveFrequency(train)
    p = np.exp(mf.logp(dec(match="new", chosen=1, state={("s", 0)})))
    assert p.sum() == pytest.approx(1.0) and np.argmax(p) == 1 and p[1] > 0.9
    # an unseen move set still gets a proper distribution
    p = np.exp(mf.logp(dec(match="new", n=5, state={("t",)})))
    assert p.sum() == pytest.approx(1.0) and p.min() > 0


def test_attribution_accuracy_by_hand():
    ds = [dec(match=f"{lab}{m}", label=lab, start=m) for lab in "AB" for m in range(6)]
    # persona A explains A's decisions better everywhere; B explains B's only in match B0
    lp = {"A": [-1.0 if d.label == "A" else -2.0 for d in ds],
          "B": [-3.0 if d.label == "A" else (-1.0 if d.match_id == "B0" else -2.5) for d in ds]}
    rows = {r["k"]: r for r in A.accuracy(ds, lp, {"A": "A", "B": "B"}, sizes=(1, 3))}
    assert (rows[1]["queries"], rows[1]["correct"]) == (12, 7)
    assert (rows[3]["queries"], rows[3]["correct"]) == (4, 2)   # B0..B2 sums to -6 vs -6.0: tie -> by name A
    assert A.rank({"x": -1.0, "y": -0.5}) == ["y", "x"]


def test_aliases_and_label_files(tmp_path):
    assert parse_aliases(["A=B"]) == {"A": "B"}
    with pytest.raises(DatasetError):
        parse_aliases(["nonsense"])
    f = tmp_path / "labels.tsv"
    f.write_text("match\trole\tlabel\nm1\tred\tSanguine\nm2\t1\tCholeric\n")
    assert read_labels(f) == {("m1", "red"): "Sanguine", ("m2", "1"): "Choleric"}
    f.write_text("m1,red\n")
    with pytest.raises(DatasetError, match="3 columns"):
        read_labels(f)


# ------------------------------------------------------------------------------ real records

BULK = SHARED / "corpus" / "matches" / "bulk-sample.jsonl"


@pytest.fixture(scope="module")
def bulk(tmp_path_factory):
    if not BULK.is_file():
        pytest.skip("../shared (corpus and reference traces) is not beside this clone; CI has it")
    from agent.modelling.dataset import load_dataset
    cache = tmp_path_factory.mktemp("decisions")
    kw = dict(repositories=[SHARED / "corpus" / "games"], cache_dir=cache, progress=False,
              aliases={"ConfidenceAgent": "ConfidencePlayer"})
    return load_dataset([BULK], **kw), kw


@needs_shared
def test_dataset_leaves_out_forced_and_substituted_moves(bulk):
    ds, kw = bulk
    recs = [json.loads(line)["data"] for line in BULK.read_text().splitlines() if line.strip()]
    assert ds.summary["counts"]["records"] == len(recs) == 30
    assert not ds.summary["problems"]
    subst = 0
    by_key = {d.key: d for d in ds.decisions}
    for r in recs:
        for i, err in enumerate(r["errors"][1:]):
            for role, e in enumerate(err):
                # in these two games the role not to move plays noop (a forced move)
                subst += bool(e) and r["moves"][i][role] != "noop"
                assert not (e and (r["matchId"], role, i) in by_key)
    assert ds.summary["counts"]["substituted moves left out"] == subst > 0
    assert all(len(d.moves) >= 2 for d in ds.decisions)
    assert {d.player for d in ds.decisions} == {"ConfidencePlayer", "LearningPlayer", "MiniMaxRandomPlayer",
                                               "MultithreadedUCTPlayer"}          # ConfidenceAgent aliased
    # every decision's recorded move is the one in the record
    from gdl.kif import parse_term
    for d in ds.decisions[:200]:
        r = next(x for x in recs if x["matchId"] == d.match_id)
        assert d.moves[d.chosen] == parse_term(r["moves"][d.ply][d.role])


@needs_shared
def test_dataset_selection_and_duplicates(bulk, tmp_path):
    from agent.modelling.dataset import load_dataset
    ds, kw = bulk
    one = load_dataset([BULK], players={"LearningPlayer"}, roles={"red"}, game="connectFour", **kw)
    assert one.decisions and {(d.player, d.role) for d in one.decisions} == {("LearningPlayer", 0)}
    # a record repeated under another match id is a duplicate; dropping keeps the earlier
    first = json.loads(BULK.read_text().splitlines()[0])["data"]
    later = dict(first, matchId=first["matchId"] + ".again", startTime=first["startTime"] + 1)
    f = tmp_path / "dups.jsonl"
    f.write_text("\n".join(json.dumps({"url": "u", "data": x}) for x in (later, first)) + "\n")
    kept = load_dataset([f], **kw)
    assert kept.summary["duplicate_records"] == 1 and kept.summary["duplicate_groups"] == [[first["matchId"], later["matchId"]]]
    dropped = load_dataset([f], drop_duplicates=True, **kw)
    assert dropped.summary["counts"]["duplicate records dropped"] == 1
    assert {d.match_id for d in dropped.decisions} == {first["matchId"]}
    assert len(dropped.decisions) * 2 == len(kept.decisions)


@needs_shared
def test_scoring_is_deterministic_and_cached(bulk):
    from agent.modelling.scoring import Scorer
    ds, _ = bulk
    sub = [d for d in ds.decisions if "connectFour" in d.match_id][:6]
    p = load_persona("champion")
    s1 = Scorer(ds.games, seed=1, limit=20, workers=0, progress=False)
    (a,) = s1.q([p], sub)
    assert s1.computed == 6
    (b,) = s1.q([p.replace(random_error=0.5)], sub)               # choice parameters: same Q, cached
    assert s1.computed == 6 and all(np.array_equal(x, y) for x, y in zip(a, b))
    (c,) = Scorer(ds.games, seed=1, limit=20, workers=0, progress=False).q([p], sub)
    assert all(np.array_equal(x, y) for x, y in zip(a, c))           # CRN: same seed, same Q
    assert all(len(q) == len(d.moves) for q, d in zip(a, sub))
    s2 = Scorer(ds.games, seed=1, limit=20, workers=0, progress=False)
    x, y, z = s2.q([p, p.replace(exploration_factor=3), p], sub)         # a copy in the same batch
    assert s2.computed == 12 and all(np.array_equal(u, v) for u, v in zip(x, z))
    assert all(np.array_equal(u, v) for u, v in zip(x, a))


# ------------------------------------------------------------------------------ CLI

def _cli(*args, cwd=ROOT):
    import os
    env = dict(os.environ, NUMBA_CACHE_DIR=str(ROOT / ".cache" / "numba"))
    return subprocess.run([sys.executable, "-m", "agent.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=900)


def test_cli_bad_input_is_one_clear_line(tmp_path):
    r = _cli("dataset", tmp_path / "missing")
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = _cli("fit", bad, "--out", tmp_path / "o", "--limit", "0")
    assert r.returncode == 2 and "--limit" in r.stderr and "Traceback" not in r.stderr
    r = _cli("dataset", bad, "--alias", "oops")
    assert r.returncode == 2 and "ALIAS=NAME" in r.stderr and "Traceback" not in r.stderr
    r = _cli("attribute", bad, "--personas", tmp_path / "nothing.toml")
    assert r.returncode == 2 and "persona" in r.stderr and "Traceback" not in r.stderr
    r = _cli("fit", bad, "--out", tmp_path / "o", "--scheduler", "localhost:1")
    assert r.returncode == 2 and "tcp://" in r.stderr


@needs_shared
def test_cli_bad_records_are_reported_not_raised(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = _cli("dataset", bad)
    assert r.returncode == 1 and "problem:" in r.stdout and "not JSON" in r.stdout and "Traceback" not in r.stderr


@needs_shared
def test_cli_fit_then_attribute_end_to_end(tmp_path):
    out = tmp_path / "fit"
    common = [BULK, "--games", SHARED / "corpus" / "games", "--game", "connectFour",
              "--alias", "ConfidenceAgent=ConfidencePlayer", "--cache", tmp_path / "cache"]
    r = _cli("fit", "--ga", *common, "--player", "LearningPlayer", "--player", "MultithreadedUCTPlayer",
             "--out", out, "--limit", "10", "--population", "3", "--generations", "2", "--subsample", "8",
             "--final-size", "8", "--workers", "0", "--replicates", "1", "--split", "kfold", "--folds", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "report.html").is_file() and (out / "fitness.png").is_file()
    res = json.loads((out / "results.json").read_text())
    assert {m["model"] for m in res["metrics"]} == {"fitted", "pooled", "champion", "move-frequency", "random"}
    # each fit says how long its generations took, over every session of the run
    for f in [*res["fits"].values(), res["pooled"]]:
        assert f["seconds"]["ga_generations_timed"] == len(f["history"])
    assert "Wall time of each fit" in (out / "report.html").read_text()
    # fit-bots.md's tables come from scripts/fit_tables.py: it reads this results.json and
    # its bar row is the report's bar
    tables = subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_tables.py"), str(out / "results.json")],
                            capture_output=True, text=True)
    assert tables.returncode == 0, tables.stderr
    n = len(res["labels"])
    assert f"| {res['bar']['labels_meeting']} of {n} | {sum(res['matrix']['diagonal_max'])} of {n} rows" in tables.stdout
    assert all(f"| fit | {lab} |" in tables.stdout for lab in res["labels"])
    mf = next(p for p in res["paired"] if p["label"] == res["labels"][0] and p["baseline"] == "move-frequency"
              and p["metric"] == "logp")                          # fit-bots.md's move-frequency figures
    assert "log-lik. vs move-frequency" in tables.stdout
    assert f"{mf['diff']:+.3f} [{mf['lo']:.3f}, {mf['hi']:.3f}]" in tables.stdout
    for name in ("LearningPlayer", "MultithreadedUCTPlayer", "pooled"):
        p = load_persona(out / "personas" / f"{name}.toml")        # loadable by serve and match
        assert p.kind == "fitted" and p.limit == 10
    r2 = _cli("attribute", *common, "--player", "LearningPlayer", "--personas", out / "personas")
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert "most likely first" in r2.stdout and "pooled" in r2.stdout
    # a second run resumes from the checkpoints and the cache: same results
    r3 = _cli("fit", "--ga", *common, "--player", "LearningPlayer", "--player", "MultithreadedUCTPlayer",
              "--out", out, "--limit", "10", "--population", "3", "--generations", "2", "--subsample", "8",
              "--final-size", "8", "--workers", "0", "--replicates", "1", "--split", "kfold", "--folds", "2")
    assert r3.returncode == 0
    again = json.loads((out / "results.json").read_text())
    assert again["metrics"] == res["metrics"] and again["scored_decisions"] == 0
    # from the checkpoints alone (what a later session's clone has of a spec-sized run: the
    # checkpoints are committed, the Q cache is not): the searches are redone, same results
    import shutil
    shutil.rmtree(out / "cache")
    r4 = _cli("fit", "--ga", *common, "--player", "LearningPlayer", "--player", "MultithreadedUCTPlayer",
              "--out", out, "--limit", "10", "--population", "3", "--generations", "2", "--subsample", "8",
              "--final-size", "8", "--workers", "0", "--replicates", "1", "--split", "kfold", "--folds", "2")
    assert r4.returncode == 0, r4.stderr[-2000:]
    fresh = json.loads((out / "results.json").read_text())
    assert fresh["metrics"] == res["metrics"] and fresh["scored_decisions"] > 0


def test_scorer_keeps_finished_chunks_when_interrupted(tmp_path, monkeypatch):
    from agent.modelling import scoring

    def interrupted(fn, tasks, *, on_result, **kw):
        on_result(0, [np.array([1.0, 2.0, 3.0])] * len(tasks[0]["items"]))
        raise KeyboardInterrupt

    monkeypatch.setattr(scoring, "run_tasks", interrupted)
    monkeypatch.setattr(scoring, "CHUNK", 2)
    ds = [dec(match=f"m{i}") for i in range(4)]
    f = tmp_path / "q.pkl"
    s = scoring.Scorer({"g": None}, seed=0, limit=10, cache_file=f, progress=False)
    with pytest.raises(KeyboardInterrupt):
        s.q([load_persona("champion")], ds)
    again = scoring.Scorer({"g": None}, seed=0, limit=10, cache_file=f, progress=False)
    assert len(again.cache) == 2                    # the first chunk survived; the rest is redone


class _FakeScorer:
    """Q-values that depend on the persona's genes only: the GA glue without searches."""

    def q(self, personas, decisions, replicate=0, description=""):
        return [[np.array([p.exploration_factor, 140 - p.exploration_factor, 70.0])[:len(d.moves)]
                 for d in decisions] for p in personas]

    def save(self):
        pass


@pytest.mark.parametrize("thesis", [False, True])
def test_fit_persona_modes(thesis, tmp_path):
    from agent.modelling.fitting import fit_persona
    train = [dec(match=f"m{i}", ply=p, chosen=0) for i in range(6) for p in range(3)]
    cfg = G.GAConfig(population=6, generations=4, thesis=thesis, seed=2)
    out = fit_persona(train, _FakeScorer(), cfg, name="P", subsample=10, checkpoint=tmp_path / "ga.json",
                      limit=50, log=lambda m: None)
    p = out["persona"]
    assert p.name == "P" and p.kind == "fitted" and p.limit == 50
    assert len(out["history"]) == 4 and len(out["genome"]) == (16 if thesis else 14)
    if thesis:   # RE and NT are genes; kappa is the thesis's 0.1
        assert p.kappa == 0.1 and (p.random_error, p.nice_threshold) == tuple(out["genome"][14:16])
    else:        # the player always takes move 0, whose Q grows with exploration_factor
        assert p.exploration_factor > 70 and p.random_error == 0.0
    assert parse_persona(p.to_toml(), "p.toml") == p


@needs_shared
def test_dataset_selection_by_label_file(bulk, tmp_path):
    from agent.modelling.dataset import load_dataset
    ds, kw = bulk
    first = sorted({d.match_id for d in ds.decisions if "connectFour" in d.match_id})[:2]
    f = tmp_path / "labels.csv"
    f.write_text(f"match id,role,label\n{first[0]},red,Sanguine\n{first[1]},1,Choleric\n")
    lab = load_dataset([BULK], labels=read_labels(f), **kw)
    assert {(d.match_id, d.role, d.label) for d in lab.decisions} == {(first[0], 0, "Sanguine"),
                                                                      (first[1], 1, "Choleric")}
    assert lab.summary["warnings"]                       # far fewer than 200 decisions per label


def test_ga_generation_zero_holds_the_seed_genome():
    # README: generation 0 holds the champion's genes (spec 3.3 "can seed the GA")
    gl = G.genes()
    lo, hi = G.bounds(gl)
    seed = list(lo + 0.25 * (hi - lo))
    st = G.run_ga(_quadratic, G.GAConfig(population=5, generations=1, seed=0), initial=[seed])
    assert st.population[0] == pytest.approx(seed) and len(st.population) == 5


def test_ga_checkpoint_of_other_seed_genomes_is_not_resumed(tmp_path):
    gl = G.genes()
    lo, hi = G.bounds(gl)
    cfg = G.GAConfig(population=5, generations=2, seed=0)
    ck = tmp_path / "ga.json"
    a = list(lo + 0.25 * (hi - lo))
    G.run_ga(_quadratic, cfg, checkpoint=ck, initial=[a])
    b = list(lo + 0.75 * (hi - lo))
    st = G.run_ga(_quadratic, cfg, checkpoint=ck, initial=[a, b])     # pooled genes added
    assert st.history[0]["fitness"][1] == pytest.approx(_quadratic([b], 0)[0])


def test_fit_persona_seed_genome_competes_in_the_final_ranking(tmp_path):
    # The player always takes move 0, whose Q grows with exploration_factor.  A GA of one
    # generation of 3 cannot find the top of that gene by itself; the seed genome (the
    # pooled persona's, in a fit) holds it, and the fit must return it.
    from agent.modelling.fitting import fit_persona
    train = [dec(match=f"m{i}", ply=p, chosen=0) for i in range(6) for p in range(3)]
    gl = G.genes()
    lo, hi = G.bounds(gl)
    seed = list(lo + 0.5 * (hi - lo))
    k = [g for g, _, _ in gl].index("exploration_factor")
    seed[k] = float(hi[k])
    out = fit_persona(train, _FakeScorer(), G.GAConfig(population=3, generations=1, seed=1), name="P",
                      subsample=10, limit=50, seeds=[seed], log=lambda m: None)
    assert out["genome"] == pytest.approx(seed) and out["persona"].exploration_factor == hi[k]
