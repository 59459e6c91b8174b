"""Archive reader: the 1,200 recorded corpus matches and the bulk sample replay exactly on the
Prolog reasoner; broken records are caught with a clear first problem; the CLI works."""
from __future__ import annotations

import json
import random

import pytest

from agent.archive import GameLibrary, Record, Replayer, iter_records, main, replay_paths
from agent.matchlog import MatchRecord
from agent.matchtext import state_text
from gdl.terms import render_spaced

from conftest import ROOT, SHARED, needs_shared
from gamemanager import rules_list

MATCHES = SHARED / "corpus" / "matches"
REPOS = SHARED / "corpus" / "games"
GAMES = ROOT / "games"


@needs_shared
def test_corpus_matches_replay_exactly():
    """Every record of ggp-base-local-petewall and bulk-sample.jsonl (slow: about a minute of
    Prolog on two processes)."""
    results = replay_paths([MATCHES / "ggp-base-local-petewall", MATCHES / "bulk-sample.jsonl"],
                           repositories=[REPOS], processes=2)
    assert len(results) == 1230
    bad = [r.line() for r in results if not r.ok]
    assert bad == [], bad[:5]
    assert sum(r.moves for r in results) > 31_000


def play_random_record(seed=0, moves=None) -> dict:
    """A match record as our server writes it, from a random game of our tic-tac-toe."""
    from agent.reasoner.prolog import PrologReasoner
    from gdl.kif import read_rules_file
    text = (GAMES / "ticTacToe.kif").read_text()
    sm = PrologReasoner(read_rules_file(GAMES / "ticTacToe.kif"))
    rng = random.Random(seed)
    rules_text = "( " + " ".join(rules_list(text)) + " )"  # as a START carries them: no comments
    rec = MatchRecord("t.1", "cross", rules_text, 10, 5, {"name": "champion", "parameters": {}})
    rec.set_roles([render_spaced(r) for r in sm.roles], 0)
    s = sm.initial_state()
    rec.set_state(0, state_text(s))
    while not sm.is_terminal(s):
        joint = [rng.choice(sm.legal_moves(s, i)) for i in range(2)]
        rec.add_moves([render_spaced(m) for m in joint])
        s = sm.next_state(s, joint)
        rec.set_state(len(rec.states), state_text(s))
    rec.complete([max(v) for v in sm.goal_values(s)])
    sm.close()
    return rec.to_json()


def replay_one(data, **kw):
    return Replayer(GameLibrary(**kw)).replay(Record("<test>", data))


def test_our_record_with_x_rules_replays():
    r = replay_one(play_random_record())
    assert r.ok, r.problem


@pytest.mark.parametrize("mutate,expected", [
    (lambda d: d["moves"][1].__setitem__(0, "( place 9 9 )"), "not a legal move"),
    (lambda d: d["states"].__setitem__(2, "( ( control cross ) )"), "state 2 differs"),
    (lambda d: d.__setitem__("goalValues", [7, 7]), "goals"),
    (lambda d: d["states"].pop(), "states for"),
    (lambda d: d["states"].__setitem__(0, "( ( control nought ) )"), "initial state differs"),
    (lambda d: d["moves"][0].__setitem__(0, "( ( bad"), "unreadable"),
    (lambda d: d.__setitem__("x-rules", "( ( role a )"), "rules"),
])
def test_broken_records_report_first_problem(mutate, expected):
    d = play_random_record(seed=3)
    mutate(d)
    r = replay_one(d)
    assert not r.ok and expected in r.problem, r.problem


def test_game_url_from_plain_game_folder():
    d = play_random_record(seed=5)
    del d["x-rules"]
    d["gameMetaURL"] = "http://games.ggp.org/base/games/ticTacToe/v0/"
    assert replay_one(d, game_dirs=[GAMES]).ok
    r = replay_one(d)
    assert not r.ok and "not found" in r.problem



def test_game_url_of_a_ggp_base_local_repository(tmp_path):
    """ggp-base's GameServer and Kiosk record ``http://127.0.0.1:9140/games/<key>/v0/`` (their
    local repository, no repository name): the key is looked up in every repository of
    ``--games`` and in the game folders (every such record failed: "not a games.ggp.org
    game URL")."""
    d = play_random_record(seed=6)
    del d["x-rules"]
    d["gameMetaURL"] = "http://127.0.0.1:9140/games/ticTacToe/v0/"
    assert replay_one(d, game_dirs=[GAMES]).ok
    folder = tmp_path / "repos" / "dresden" / "games" / "ticTacToe" / "v0"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text('{"rulesheet": "ttt.kif", "version": 0}')
    (folder / "ttt.kif").write_text((GAMES / "ticTacToe.kif").read_text())
    (folder.parent / "METADATA").write_text('{"rulesheet": "ttt.kif", "version": 0}')
    assert replay_one(d, repositories=[tmp_path / "repos"]).ok
    d["gameMetaURL"] = "http://localhost:9140/games/ticTacToe/"
    assert replay_one(d, repositories=[tmp_path / "repos"]).ok
    d["gameMetaURL"] = "http://127.0.0.1:9140/games/nosuchgame/v0/"
    r = replay_one(d, repositories=[tmp_path / "repos"], game_dirs=[GAMES])
    assert not r.ok and "not found" in r.problem
    d["gameMetaURL"] = "http://127.0.0.1:9140/games/../v0/"
    r = replay_one(d, repositories=[tmp_path / "repos"])
    assert not r.ok and "names no game" in r.problem


def test_a_record_of_a_match_killed_during_start_is_skipped():
    """The server writes a record at START; killed before the first state, it leaves one
    with no state, neither completed nor aborted: nothing to check (it was a FAIL, exit 1)."""
    d = play_random_record(seed=7)
    d["states"], d["moves"], d["isCompleted"] = [], [], False
    r = replay_one(d)
    assert r.skipped and not r.ok and "during START" in r.problem


def test_replay_of_an_exploding_game_stays_within_its_memory_cap(tmp_path):
    """A record of a game whose next state has 60^5 facts: the replay grew past 5 GB; with
    ``--memory-mb`` (default 4096) Prolog's stacks and tables are bounded by the cap and the
    record fails with the reason (in a process of its own: the cap stays with it)."""
    import json
    import subprocess
    import sys
    from exploding_game import exploding_rules
    d = {"matchId": "ex.1", "isCompleted": False, "isAborted": False,
         "x-rules": "( " + " ".join(exploding_rules()) + " )",
         "states": ["( ( step 0 ) ( control red ) )", "( ( control blue ) )"],
         "moves": [["( mark v1 )", "noop"]]}
    (tmp_path / "ex.json").write_text(json.dumps(d))
    # The replay's peak resident memory, read by a parent of its own (getrusage of children).
    measure = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
               "print('peak-kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
               "sys.exit(r.returncode)")
    for engine in ("prolog", "auto"):
        r = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "agent.archive", "--engine", engine,
                            "--memory-mb", "512", str(tmp_path / "ex.json")],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "FAIL" in r.stdout and "ResourceLimit" in r.stdout and "1 failed" in r.stdout, r.stdout + r.stderr
        peak_mb = int(r.stderr.split("peak-kb")[-1].split()[0]) / 1024
        # Prolog's share (stacks 256 MB, tables 128 MB) plus the interpreter and its libraries
        # (measured: 636 MB); without the cap it grew past 5 GB
        assert peak_mb < 512 + 300, (engine, peak_mb)

def test_bulk_and_single_files_and_cli(tmp_path, capsys):
    good, bad = play_random_record(1), play_random_record(2)
    bad["moves"][0][0] = "( place 7 7 )"
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "bulk.jsonl").write_text(json.dumps({"url": "http://x/1/", "data": good}) + "\n\n"
                                         + json.dumps({"url": "http://x/2/", "data": bad}) + "\n")
    recs = list(iter_records([tmp_path]))
    assert [r.source.rsplit("/", 1)[-1] for r in recs] == ["a.json", "bulk.jsonl:1", "bulk.jsonl:3"]
    assert recs[1].url == "http://x/1/"
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "2 ok, 1 failed" in out and "FAIL" in out and "bulk.jsonl:3" in out
    (tmp_path / "bulk.jsonl").unlink()
    assert main([str(tmp_path / "a.json")]) == 0
    assert main([str(tmp_path / "missing.json")]) == 2


@needs_shared
def test_cli_on_bulk_sample(capsys):
    assert main(["-q", "--games", str(REPOS), str(MATCHES / "bulk-sample.jsonl")]) == 0
    assert "30 ok, 0 failed" in capsys.readouterr().out
