"""Match records: ggp-base's shape, consistent lengths, atomic writes."""
from __future__ import annotations

import json
import os

from agent.matchlog import MatchRecord, atomic_write_json, create_record_file, rules_urn, safe_name


def make_record():
    r = MatchRecord("Base.ticTacToe.1", "xplayer", "(( role xplayer ) ( role oplayer ) )", 30, 10,
                    {"name": "champion", "parameters": {"limit": 1000}}, player_name="ggp-persona")
    r.set_roles(["xplayer", "oplayer"], 0)
    r.set_state(0, "( ( control xplayer ) )")
    return r


def test_fields_and_lengths():
    r = make_record()
    r.add_moves(["( mark 1 1 )", "noop"])
    d = r.to_json()
    # the move arrived but its state did not: the record stays consistent
    assert len(d["states"]) == len(d["moves"]) + 1 == len(d["stateTimes"]) == len(d["errors"]) == 1
    assert d["x-pending-moves"] == [["( mark 1 1 )", "noop"]]
    r.set_state(1, "( ( control oplayer ) ( cell 1 1 x ) )")
    r.complete([100, 0])
    d = r.to_json()
    assert len(d["states"]) == 2 and d["moves"] == [["( mark 1 1 )", "noop"]]
    assert d["goalValues"] == [100, 0] and d["isCompleted"] and not d["isAborted"]
    assert len(d["randomToken"]) == 32 and d["randomToken"].isalnum()
    assert d["gameMetaURL"] == rules_urn(r.rules_text) and d["scrambled"] is False
    assert d["playerNamesFromHost"] == ["ggp-persona", ""]
    assert d["previewClock"] == -1 and d["startClock"] == 30 and d["playClock"] == 10
    assert d["x-persona"]["name"] == "champion" and d["x-rules"] == r.rules_text
    assert "goalValues" not in make_record().to_json()


def test_atomic_write_replaces_whole_file(tmp_path):
    path = create_record_file(tmp_path, "a/b c", {"i": -1})
    assert path.name == "a_b_c.json" and json.loads(path.read_text()) == {"i": -1}
    assert create_record_file(tmp_path, "a/b c", {}).name == "a_b_c.2.json"  # a reused id: own file
    (tmp_path / "a_b_c.2.json").unlink()
    for i in range(20):
        atomic_write_json(path, {"i": i, "pad": "x" * (1000 * i)})
        assert json.loads(path.read_text())["i"] == i
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)


def test_failed_write_leaves_old_file(tmp_path):
    path = tmp_path / "m.json"
    atomic_write_json(path, {"ok": True})
    try:
        atomic_write_json(path, {"bad": object()})
    except TypeError:
        pass
    assert json.loads(path.read_text()) == {"ok": True}
    assert len(list(tmp_path.iterdir())) == 1


def test_safe_name():
    assert safe_name("tiltyard.ticTacToev0.1400000000000") == "tiltyard.ticTacToev0.1400000000000"
    assert safe_name("../../etc/passwd") == "_.._etc_passwd"
    assert safe_name("") == "match"
