"""Persona files: presets load and match the spec tables, range checks name field, value
and range, unknown fields are errors, TOML round-trips, the CLI lists and shows."""
from __future__ import annotations

import argparse

import pytest

from agent.persona import (MAX_LIMIT, PersonaError, load_persona, parse_persona, persona_from_dict,
                           persona_list, persona_show, preset_names)

TEMPERAMENTS = {  # spec 3.2 (thesis Table 4.10)
    "phlegmatic": dict(epsilon=0.264, rave=2328, grave=65, horizon=12, random_error=0.503, nice_threshold=33.903),
    "sanguine": dict(epsilon=0.507, rave=2744, grave=71, horizon=12, random_error=0.451, nice_threshold=55.308),
    "choleric": dict(epsilon=0.435, rave=4102, grave=84, horizon=11, random_error=0.398, nice_threshold=24.593),
    "melancholic": dict(epsilon=0.045, rave=832, grave=55, horizon=19, random_error=0.380, nice_threshold=12.885),
}
GENERIC = ["attacker", "collector", "completionist", "finisher", "rusher", "survivor"]


def test_presets():
    assert set(preset_names()) == {"champion", "tournament", *TEMPERAMENTS, *GENERIC}
    for name in preset_names():
        p = load_persona(name)
        assert p.name == name and p.description
        assert p.limit == (MAX_LIMIT if name == "tournament" else 1000)


def test_champion_matches_spec():
    c = load_persona("champion")
    assert (c.kind, c.exploration_factor, c.rave, c.grave, c.horizon, c.charge_depth) == ("champion", 40, 0, 0, 20, 100)
    assert c.charge_defaults == (45.0, 45.0) and c.epsilon == 1.0 and c.mast_tau == 10.0
    assert (c.tree_discount, c.charge_discount, c.random_error, c.nice_threshold) == (0.99, 1.0, 0.0, 0.0)
    assert c.aggressiveness == c.defensiveness == (1.0, 1.0) and c.utility_lambda == 0


@pytest.mark.parametrize("name", sorted(TEMPERAMENTS))
def test_temperaments_match_table(name):
    p = load_persona(name)
    assert p.kind == "fitted"
    for k, v in TEMPERAMENTS[name].items():
        assert getattr(p, k) == v, k
    assert p.aggressiveness[0] == p.aggressiveness[1]        # one printed value -> both (8.2)


def test_generic_personas_match_table():
    w = {n: load_persona(n).utility_weights for n in GENERIC}
    assert w["completionist"] == {"goal": 0.3, "loss": -5.0, "own_facts": 0.35, "opp_facts": -0.35}
    assert w["attacker"]["opp_facts"] == -0.5 and w["survivor"]["mobility"] == 0.5
    champion = load_persona("champion")
    for n in GENERIC:
        p = load_persona(n)
        assert p.kind == "procedural" and p.utility_lambda == 0.5
        # README deviation from 6.5: the champion's search settings but for charge_depth 0
        # (the utility read where the tree's descent ends: docs/reports/playtest/breakthrough-depth)
        assert p.charge_depth == 0 and champion.charge_depth == 100
        assert p.replace(name="x", kind="x", description="", utility_weights={}, utility_lambda=0.0) == \
            champion.replace(name="x", kind="x", description="", charge_depth=0)


def _base() -> dict:
    c = load_persona("champion")
    return {k: v for k, v in c.__dict__.items() if k not in ("utility_weights", "utility_lambda")}


@pytest.mark.parametrize("field,value,needle", [
    ("horizon", 0, "horizon = 0 is out of range [1, 20]"),
    ("rave", 5001, "rave = 5001 is out of range [0, 5000]"),
    ("tree_discount", 0.5, "tree_discount = 0.5 is out of range [0.9, 1.0]"),
    ("exploration_factor", 141, "exploration_factor = 141 is out of range [1, 140]"),
    ("charge_defaults", [30, 40], "charge_defaults[0] (self) = 30.0 is out of range [35.0, 45.0]"),
    ("aggressiveness", [1, 3.5], "aggressiveness[1] (others) = 3.5 is out of range [0.0, 3.0]"),
    ("defensiveness", 1.0, "must be a pair [self, others]"),
    ("grave", 2.5, "grave = 2.5 must be an integer in [0, 120]"),
    ("epsilon", "high", "epsilon = 'high' must be a number"),
    ("random_error", True, "random_error = True must be a number"),
    ("limit", 0, "limit = 0 is out of range [1, 10000000] (raise limit for play"),
    ("kind", "wizard", "kind = 'wizard' must be one of fitted, procedural, champion"),
])
def test_errors_name_field_value_and_range(field, value, needle):
    d = _base()
    d[field] = value
    with pytest.raises(PersonaError) as e:
        persona_from_dict(d, "my.toml")
    assert needle in str(e.value) and str(e.value).startswith("my.toml: ")


def test_limit_may_be_raised_for_play():
    d = _base()
    d["limit"] = 50_000
    assert persona_from_dict(d).limit == 50_000


def test_unknown_and_missing_fields():
    d = _base()
    d["explorationfactor"] = 40
    with pytest.raises(PersonaError, match="unknown field explorationfactor"):
        persona_from_dict(d)
    d = _base()
    del d["horizon"]
    with pytest.raises(PersonaError, match=r"missing field horizon \(range \[1, 20\]\)"):
        persona_from_dict(d)
    d = _base()
    del d["mast_tau"], d["kappa"]
    p = persona_from_dict(d)
    assert (p.mast_tau, p.kappa) == (10.0, 0.1)


def test_utility_validation():
    d = _base()
    d["utility"] = {"lambda": 0.5, "weights": {"goal": 1, "rel:cell": 0.2}}
    p = persona_from_dict(d)
    assert p.utility_weights == {"goal": 1.0, "rel:cell": 0.2}
    for bad, needle in [({"lambda": 2, "weights": {"goal": 1}}, "utility.lambda = 2.0 is out of range"),
                        ({"lambda": 0.5, "weights": {"gold": 1}}, "unknown utility feature 'gold'"),
                        ({"lambda": 0.5, "weights": {}}, "needs at least one nonzero weight"),
                        ({"lambda": 0.5, "weight": {}}, "unknown field utility.weight"),
                        ({"lambda": 0.5, "weights": {"goal": 1000}}, "utility.weights.goal = 1000.0 is out of range")]:
        d["utility"] = bad
        with pytest.raises(PersonaError, match=needle.replace("(", r"\(").replace(".", r"\.")):
            persona_from_dict(d)


def test_toml_round_trip_and_bad_toml():
    for name in preset_names():
        p = load_persona(name)
        assert parse_persona(p.to_toml(), name) == p
    with pytest.raises(PersonaError, match="not valid TOML"):
        parse_persona("rave = = 3", "x.toml")
    with pytest.raises(PersonaError, match="no persona 'nobody'"):
        load_persona("nobody")


def test_load_from_path(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(load_persona("sanguine").to_toml().replace('name = "sanguine"\n', ""))
    p = load_persona(f)
    assert p.name == "mine" and p.rave == 2744


def test_cli_list_and_show(capsys, tmp_path):
    assert persona_list(argparse.Namespace(dir=None)) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in preset_names()) and "champion" in out
    assert persona_show(argparse.Namespace(persona="melancholic")) == 0
    shown = capsys.readouterr().out
    assert parse_persona(shown) == load_persona("melancholic")
    assert persona_show(argparse.Namespace(persona="nobody")) == 2
    assert "no persona" in capsys.readouterr().err
    (tmp_path / "bad.toml").write_text("rave = 9999\n")
    assert persona_list(argparse.Namespace(dir=str(tmp_path))) == 1
    assert "INVALID" in capsys.readouterr().err
    assert persona_show(argparse.Namespace(persona=str(tmp_path / "bad.toml"))) == 1


def test_cli_subcommand():
    from agent.cli import main
    assert main(["persona", "show", "champion"]) == 0
    assert main(["persona", "list"]) == 0


def test_toml_round_trip_keeps_keys_with_backslashes_and_quotes():
    """The hand-written writer escaped only quotes in keys: ``rel:a\\b`` came back changed
    (or did not parse).  tomli_w writes them."""
    base = load_persona("sanguine")
    keys = ["rel:a\\b", 'rel:q"uote', "rel:tab\there", "rel:ünï", "rel:a.b c"]
    p = base.replace(utility_lambda=0.5, utility_weights={k: float(i + 1) for i, k in enumerate(keys)},
                     description='back\\slash "quoted"\nnew line')
    again = parse_persona(p.to_toml(), "x.toml")
    assert again == p
    assert list(again.utility_weights) == keys


def test_toml_reader_falls_back_to_the_tomli_backport(monkeypatch):
    """On Python 3.10 there is no tomllib: tomlio reads with tomli (same API)."""
    import importlib
    import sys

    from agent import tomlio
    parser = tomlio.tomllib  # tomllib here, or tomli itself on 3.10
    monkeypatch.setitem(sys.modules, "tomllib", None)  # import tomllib fails, as on 3.10
    monkeypatch.setitem(sys.modules, "tomli", parser)  # the backport, standing in
    try:
        importlib.reload(tomlio)
        assert tomlio.tomllib is parser and tomlio.loads('a = "b"') == {"a": "b"}
    finally:
        monkeypatch.undo()
        importlib.reload(tomlio)


def test_tournament_is_the_champion_searching_until_the_clock():
    """The server's default differs from the champion only in its limit (skill = limit: the
    champion keeps the thesis's 1000 simulations as the fitting and playtesting baseline)."""
    from agent.player import DEFAULT_PERSONA
    from dataclasses import asdict
    champion, tournament = asdict(load_persona("champion")), asdict(load_persona("tournament"))
    assert DEFAULT_PERSONA == "tournament"
    assert tournament["limit"] == MAX_LIMIT and champion["limit"] == 1000
    differ = {k for k in champion if champion[k] != tournament.get(k)}
    assert differ <= {"name", "description", "limit"}


# --------------------------------------------------------------------------- fitted model tables (issue 53)

TTT_PATH = __import__("conftest").ROOT / "games" / "ticTacToe.kif"


@pytest.fixture(scope="module")
def ttt_game():
    """ticTacToe's compiled engine, initial state, the first role's legal moves."""
    from agent.engine.loader import load_engine
    from gdl.kif import read_rules_file
    eng = load_engine(read_rules_file(TTT_PATH))
    s0 = eng.initial_state()
    return eng, s0, eng.legal_moves(s0, 0)


@pytest.fixture(scope="module")
def fitted_text(ttt_game):
    """A fitted persona file for ticTacToe as ``ggp-persona fit`` writes one (its model's
    columns named after the game's own evaluations, counts from a few decisions)."""
    from collections import namedtuple

    import numpy as np

    from agent.modelling import choicemodel as CM
    from agent.modelling import shared_evaluations as E
    from agent.modelling.baselines import MoveCounts
    from agent.modelling.modelfile import model_persona_toml
    from agent.search.features import calibrate
    eng, s0, legal = ttt_game
    names = E.feature_names(calibrate(eng))
    Dec = namedtuple("Dec", "state prev moves chosen pm")
    decisions = [Dec(s0, None, legal, i % len(legal), f"pm{i % 3}") for i in range(12)]
    vocab = CM.token_vocabulary(decisions)
    k = len(names) + len(vocab) + len(CM.FREQ_COLUMNS)
    rng = np.random.default_rng(0)
    model = CM.ChoiceModel(names, vocab, MoveCounts(decisions), rng.normal(size=k), rng.uniform(0.5, 2.0, size=k),
                           rng.normal(size=k), 0.05, {"decisions": len(decisions)})
    plan = {"version": E.EVAL_VERSION, "limit": 20, "shallow_horizon": E.SHALLOW_HORIZON, "replies": E.REPLIES}
    return model_persona_toml("fuzzed", model, plan)


def _plays_a_legal_move(persona, ttt_game) -> bool:
    from agent import modelplay
    eng, s0, legal = ttt_game
    d = modelplay.decide(eng, s0, 0, legal, None, persona, seed=1, seconds=0.05)
    return d.move in legal


def _with(text: str, change) -> str:
    """``text`` with ``change(data)`` applied to its parsed TOML."""
    from agent import tomlio
    data = tomlio.loads(text)
    change(data)
    return tomlio.dumps(data)


@pytest.mark.parametrize("field,change", [
    ("mean", lambda f: f["mean"].__setitem__(0, float("nan"))),
    ("scale", lambda f: f["scale"].__setitem__(1, float("inf"))),
    ("mean", lambda f: f["mean"].__setitem__(2, float("-inf"))),
    ("weights", lambda f: f.__setitem__("weights", [f["weights"], f["weights"]])),      # 2-D
    ("weights", lambda f: f["weights"].pop()),
    ("scale", lambda f: f["scale"].__setitem__(0, 0.0)),
    ("counts", lambda f: f["counts"]["counts"].pop()),                                 # two levels
    ("counts", lambda f: f["counts"].__setitem__("totals", "garbage")),
    ("counts", lambda f: f["counts"]["counts"][0].__setitem__("|x", "many")),
    ("counts", lambda f: f["counts"].__setitem__("totals", [{}, {}, {"": -4}])),
    ("shared", lambda f: f.__setitem__("shared", "q_deep")),
    ("epsilon", lambda f: f.__setitem__("epsilon", float("nan"))),
])
def test_model_tables_are_checked_whole_on_load(fitted_text, ttt_game, field, change):
    """NaN or infinity in mean or scale passed the check and the model then always played the
    first legal move; garbage counts or 2-D weights loaded and raised IndexError at the first
    decision.  Each is refused on load, one line naming the field."""
    assert _plays_a_legal_move(parse_persona(fitted_text, "good.toml"), ttt_game)
    bad = _with(fitted_text, lambda d: change(d["model"]["fit"]))
    with pytest.raises(PersonaError) as e:
        parse_persona(bad, "bad.toml")
    assert field in str(e.value) and str(e.value).startswith("bad.toml: model") and "\n" not in str(e.value)


def test_a_persona_file_over_the_size_limit_is_refused_unread(tmp_path):
    """A 146 MB persona file kept ``serve`` parsing for 6 minutes: over the limit it is
    refused before it is read, and the message names the limit."""
    from agent.persona import MAX_PERSONA_BYTES
    big = tmp_path / "huge.toml"
    with open(big, "wb") as f:
        f.truncate(MAX_PERSONA_BYTES + 1)      # sparse: nothing written, nothing read
    with pytest.raises(PersonaError, match=rf"over the {MAX_PERSONA_BYTES // 2 ** 20} MB limit of a persona file"):
        load_persona(big)
    with pytest.raises(PersonaError, match="MB limit"):
        parse_persona("#" * (MAX_PERSONA_BYTES + 1), "upload.toml")


def test_reading_a_large_persona_file_is_logged(fitted_text, tmp_path, monkeypatch, caplog):
    import logging

    import agent.persona as P
    path = tmp_path / "fitted.toml"
    path.write_text(fitted_text)
    monkeypatch.setattr(P, "LOG_PERSONA_BYTES", 1024)
    with caplog.at_level(logging.INFO, logger="ggp_persona.persona"):
        assert load_persona(path).model is not None
    assert any("reading persona file" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)


def test_a_large_fitted_persona_is_written_compressed_and_read_back(fitted_text, ttt_game, tmp_path, monkeypatch):
    """A fit's large models go to ``NAME.toml.gz`` (issue 53: report folders under 1 MB) and
    load and play as the plain file does; a later small one replaces the compressed file, so
    a folder never holds two versions of one persona."""
    import agent.persona as P
    monkeypatch.setattr(P, "PACK_PERSONA_BYTES", len(fitted_text) - 1)
    packed = P.write_persona_file(tmp_path, "clone", fitted_text)
    assert packed.name == "clone.toml.gz" and packed.stat().st_size < len(fitted_text)
    assert P.persona_files(tmp_path) == [packed] and P.persona_stem(packed) == "clone"
    pe = load_persona(packed)
    assert pe.model is not None and _plays_a_legal_move(pe, ttt_game)
    assert pe.model == parse_persona(fitted_text).model
    monkeypatch.setattr(P, "PACK_PERSONA_BYTES", len(fitted_text))
    plain = P.write_persona_file(tmp_path, "clone", fitted_text)
    assert plain.name == "clone.toml" and P.persona_files(tmp_path) == [plain]


def test_a_compressed_persona_is_bounded_and_checked(tmp_path, monkeypatch):
    """A few kilobytes of gzip can unpack to gigabytes: the text read is bounded by the same
    limit as a plain file's; a damaged or truncated file gets one line, not a traceback."""
    import gzip

    import agent.persona as P
    monkeypatch.setattr(P, "MAX_PERSONA_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.toml.gz"
    bomb.write_bytes(gzip.compress(b"#" * (4 << 20)))
    assert bomb.stat().st_size < 20_000
    with pytest.raises(PersonaError, match="unpacks to more than 1 MB"):
        load_persona(bomb)
    whole = gzip.compress(b'name = "x"\n' * 1000)
    for name, data in (("junk.toml.gz", b"not gzip at all"), ("cut.toml.gz", whole[:len(whole) // 2])):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(PersonaError, match="not a whole gzip file") as e:
            load_persona(tmp_path / name)
        assert "\n" not in str(e.value)


def test_move_counts_leave_out_the_totals_they_can_be_summed_from():
    """The totals of a model's move counts are the counts summed per context: written only
    where summing would not give them back (a previous move whose text holds "|"), and read back equal
    either way, older files with totals included."""
    from collections import namedtuple

    from agent.modelling.baselines import MoveCounts
    Dec = namedtuple("Dec", "state prev moves chosen pm")
    s0 = frozenset({("cell", 1, "b")})
    plain = [Dec(s0, None, [("mark", 1), ("mark", 2)], i % 2, f"pm{i}") for i in range(5)]
    odd = plain + [Dec(s0, ("x|y", "noop"), ["a|b", "c"], 0, "pm9")]     # a context holding "|"
    for decisions, kept in ((plain, False), (odd, True)):
        mc = MoveCounts(decisions)
        d = mc.to_dict()
        assert ("totals" in d) == kept
        back = MoveCounts.from_dict(d)
        assert back.c == mc.c and back.n == mc.n
        old = MoveCounts.from_dict({"counts": d["counts"], "totals": [dict(n) for n in mc.n]})
        assert old.n == mc.n
        assert (back.frequencies(s0, None, decisions[0].moves) == mc.frequencies(s0, None, decisions[0].moves)).all()


FUZZ_CASES = 120


def _mutations(rng):
    """One random damage to a parsed value: the kinds of garbage a hand edit, a truncated
    copy or another program's writer leaves."""
    big = float(rng.choice([1e300, -1e300, 1e13, 2.0 ** 70]))
    return rng.choice([
        lambda v: float("nan"), lambda v: float("inf"), lambda v: -float("inf"), lambda v: big,
        lambda v: -1, lambda v: 0, lambda v: "x", lambda v: True, lambda v: [], lambda v: {},
        lambda v: [v, v], lambda v: [[1, 2], [3]], lambda v: {"a": v},
        lambda v: v[:-1] if isinstance(v, list) and v else v, lambda v: (v + v[:1]) if isinstance(v, list) else v,
        lambda v: -v if isinstance(v, (int, float)) and not isinstance(v, bool) else "-",
        lambda v: v * 1e9 if isinstance(v, (int, float)) and not isinstance(v, bool) else v,
    ])


def _paths(value, prefix=()):
    """Every place in a parsed TOML value (tables, lists, leaves)."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


def _damage_value(text: str, rng) -> str:
    import math

    from agent import tomlio
    data = tomlio.loads(text)
    places = [p for p in _paths(data) if p]
    # most damage where it matters: the model's table (a few among its counts, which are many)
    fit = [p for p in places if p[:2] == ("model", "fit") and (p[2:3] != ("counts",) or len(p) <= 5)]
    place = rng.choice(fit if rng.random() < 0.8 else places)
    parent = data
    for k in place[:-1]:
        parent = parent[k]
    if rng.random() < 0.15 and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        new = _mutations(rng)(parent[place[-1]])
        if isinstance(new, float) and not math.isfinite(new) and rng.random() < 0.5:
            new = str(new)            # a NaN written as text, as some writers do
        parent[place[-1]] = new
    return tomlio.dumps(data)


def _damage_bytes(data: bytes, rng) -> bytes:
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 200))
    kind = rng.randrange(5)
    if kind == 0:
        return data[:i]                                       # truncated copy
    if kind == 1:
        return data[:i] + data[j:]                            # a span lost
    if kind == 2:
        return data[:i] + data[i:j] + data[i:]                # a span doubled
    if kind == 3:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]   # one byte garbled
    return data[:i] + b"\n[model.fit]\nweights = [[1.0]]\n" + data[i:]  # a table pasted in


def test_corrupted_fitted_personas_load_and_play_or_are_refused(fitted_text, ttt_game, tmp_path):
    """Fuzz: random damage to a valid fitted persona file, to its values (parsed and written
    back) and to its bytes.  Every result is either loaded and plays a legal move, or
    refused with one clear line naming the file; never a traceback."""
    import random
    rng = random.Random(53)
    outcomes = {"loaded": 0, "refused": 0}
    data = fitted_text.encode("utf-8")
    for case in range(FUZZ_CASES):
        path = tmp_path / f"case{case}.toml"
        if case % 2:
            path.write_bytes(_damage_bytes(data, rng))
        else:
            path.write_text(_damage_value(fitted_text, rng), encoding="utf-8")
        try:
            persona = load_persona(path)
        except PersonaError as e:
            msg = str(e)
            assert msg.startswith(str(path)) and "\n" not in msg and len(msg) < 600, (case, msg)
            outcomes["refused"] += 1
            continue
        assert persona.model is None or _plays_a_legal_move(persona, ttt_game), case
        outcomes["loaded"] += 1
    assert outcomes["loaded"] and outcomes["refused"], outcomes
