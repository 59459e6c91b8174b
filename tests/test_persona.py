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
