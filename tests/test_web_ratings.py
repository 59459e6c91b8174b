"""Ratings of people, personas and clones (openskill), personas described in words, and
matches titled by players, game and date: without a browser (test_web_browser_ratings.py
drives the pages in Chromium)."""
from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path

import pytest

from agent.persona import RANGES, load_persona, preset_names
from agent.web.persona_words import describe, summary, words_of_spec
from agent.web.ratings import MODEL, TABLE, Ratings, outcome, replay
from agent.web.titles import match_title

ROOT = Path(__file__).resolve().parents[1]
GAMES = ROOT / "games"


def rec(mid: str, start: int, names, human, goals=None, *, completed=True, aborted=False, result=None,
        gdl2=False, players=None) -> dict:
    """A page's match record with just what the ratings and titles read."""
    d = {"matchId": mid, "startTime": start, "playerNamesFromHost": list(names), "isPlayerHuman": list(human),
         "isCompleted": completed, "isAborted": aborted, "moves": [], "states": ["( )"]}
    if completed and goals is not None:
        d["goalValues"] = list(goals)
    if result is not None:
        d["x-result"] = result
    if gdl2:
        d["x-gdl2"] = True
    if players is not None:
        d["x-players"] = players
    return d


def write(folder: Path, d: dict) -> Path:
    p = folder / f"{d['matchId']}.json"
    p.write_text(json.dumps(d))
    return p


# ------------------------------------------------------------------ what counts
def test_finished_matches_count_and_aborted_or_unfinished_ones_do_not():
    won = outcome(rec("a", 1, ["alice", "champion"], [True, False], [100, 0]))
    assert [s.key for s in won.seats] == ["person:alice", "persona:champion"] and won.goals == [100, 0]
    resigned = outcome(rec("b", 2, ["alice", "champion"], [True, False], completed=False, aborted=True,
                           result={"by": "resignation", "goals": [0, 100]}))
    assert resigned is not None and resigned.goals == [0, 100]
    drawn = outcome(rec("c", 3, ["champion", "alice"], [False, True], completed=False, aborted=True,
                        result={"by": "draw", "goals": [50, 50]}))
    assert drawn is not None and drawn.goals == [50, 50]
    # aborted (a closed page, a persona that stopped), still being played, no person, a puzzle
    assert outcome(rec("d", 4, ["alice", "champion"], [True, False], completed=False, aborted=True)) is None
    assert outcome(rec("e", 5, ["alice", "champion"], [True, False], completed=False)) is None
    assert outcome(rec("f", 6, ["sanguine", "champion"], [False, False], [100, 0])) is None
    assert outcome(rec("g", 7, ["alice"], [True], [100])) is None
    assert outcome("not a record") is None and outcome({"playerNamesFromHost": 3}) is None


def test_gdl2_counts_once_ended_and_its_random_role_is_no_player():
    chance = [{"name": "alice", "kind": "HumanPlayer"}, {"name": "referee", "kind": "chance"},
              {"name": "champion", "kind": "PersonaPlayer", "persona": {"name": "champion"}}]
    names, human = ["alice", "referee", "champion"], [True, False, False]
    running = rec("h", 1, names, human, completed=False, gdl2=True, players=chance)
    assert outcome(running) is None                 # its record exists while it is played
    ended = rec("h", 1, names, human, [0, 0, 100], gdl2=True, players=chance)
    out = outcome(ended)
    assert [s.key for s in out.seats] == ["person:alice", "persona:champion"] and out.goals == [0, 100]


def test_a_clone_is_rated_per_fit_with_its_game_in_its_name():
    spec = str(Path("logs") / "clones" / "carol.ticTacToe.20261207-101500.ab12" / "fit" / "personas" / "carol.toml")
    players = [{"name": "carol", "kind": "HumanPlayer"},
               {"name": "carol-clone", "kind": "PersonaPlayer", "persona": {"name": spec}}]
    out = outcome(rec("i", 1, ["carol", "carol-clone"], [True, False], [50, 50], players=players))
    clone = out.seats[1]
    assert clone.kind == "clone" and clone.key == "clone:carol.ticTacToe.20261207-101500.ab12"
    assert clone.name == "carol-clone (ticTacToe)"


def test_a_win_moves_the_ratings_apart_and_a_draw_of_equals_does_not(tmp_path):
    write(tmp_path, rec("web.alice.0000000001.ticTacToe", 1000, ["alice", "champion"], [True, False], [100, 0]))
    rows = {r["key"]: r for r in Ratings(tmp_path).rows()}
    alice, champ = rows["person:alice"], rows["persona:champion"]
    assert alice["mu"] > MODEL.mu > champ["mu"] and alice["sigma"] < MODEL.sigma
    assert (alice["wins"], alice["draws"], alice["losses"], alice["matches"]) == (1, 0, 0, 1)
    assert (champ["wins"], champ["losses"]) == (0, 1)
    assert math.isclose(alice["ordinal"], alice["mu"] - 3 * alice["sigma"])
    assert [r["key"] for r in Ratings(tmp_path).rows()][0] == "person:alice"     # best first
    write(tmp_path, rec("web.bob.0000000002.ticTacToe", 2000, ["bob", "dave"], [True, True], [50, 50]))
    rows = {r["key"]: r for r in Ratings(tmp_path).rows()}
    assert rows["person:bob"]["mu"] == pytest.approx(MODEL.mu) and rows["person:bob"]["draws"] == 1


# ------------------------------------------------------------------ the table and its file
def _players(table: dict) -> dict:
    return table["players"]


def test_the_table_kept_as_matches_end_equals_the_replay_in_date_order(tmp_path):
    """Matches end in another order than they started (a long one started first); after
    every end the kept table is the replay of the records in date order, float for float."""
    rng = random.Random(5)
    people, personas = ["alice", "bob", "carol"], ["champion", "sanguine", "melancholic"]
    matches = []
    for i in range(24):
        p, q = rng.choice(people), rng.choice(personas)
        names, human = ([p, q], [True, False]) if i % 2 else ([q, p], [False, True])
        kind = rng.choice(["won", "lost", "draw", "resigned", "aborted", "agreed"])
        goals = {"won": [100, 0], "lost": [0, 100], "draw": [50, 50]}.get(kind)
        if kind in ("won", "lost", "draw"):
            d = rec(f"web.{p}.{i:010x}.ticTacToe", 1_700_000_000_000 + 1000 * i, names, human, goals)
        elif kind == "aborted":
            d = rec(f"web.{p}.{i:010x}.ticTacToe", 1_700_000_000_000 + 1000 * i, names, human,
                    completed=False, aborted=True)
        else:
            d = rec(f"web.{p}.{i:010x}.ticTacToe", 1_700_000_000_000 + 1000 * i, names, human, completed=False,
                    aborted=True, result={"by": "draw" if kind == "agreed" else "resignation",
                                          "goals": [50, 50] if kind == "agreed" else [0, 100]})
        matches.append(d)
    order = list(range(len(matches)))
    rng.shuffle(order)                 # the order they end in
    ratings = Ratings(tmp_path)
    running = rec("web.zed.00000000ff.ticTacToe", 1_700_000_000_500, ["zed", "champion"], [True, False],
                  completed=False)
    write(tmp_path, running)           # a match being played all along: read, never counted
    for i in order:
        write(tmp_path, matches[i])
        table = ratings.sync()
        assert _players(table) == _players(replay(tmp_path))
        assert json.loads((tmp_path / TABLE).read_text())["players"] == _players(table)
    counted = [m for m in matches if outcome(m) is not None]
    assert len(table["counted"]) == len(counted) and sum(p["matches"] for p in table["players"].values()) == 2 * len(counted)
    assert "person:zed" not in table["players"]
    write(tmp_path, dict(running, isCompleted=True, goalValues=[0, 100]))    # it ends, before others started
    assert _players(ratings.sync()) == _players(replay(tmp_path)) and "person:zed" in ratings.sync()["players"]
    n = sum(p["matches"] for p in ratings.sync()["players"].values())
    assert sum(p["matches"] for p in Ratings(tmp_path).sync()["players"].values()) == n   # counted once


@pytest.mark.parametrize("bad", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"format": "ggp-persona ratings"}',
                                 json.dumps({"format": "ggp-persona ratings", "version": 1, "players": {"x": 3},
                                             "counted": {}, "skipped": [], "last": None}).encode()])
def test_an_unreadable_table_is_a_message_and_a_fresh_start(tmp_path, bad):
    write(tmp_path, rec("web.alice.0000000001.ticTacToe", 1000, ["alice", "champion"], [True, False], [100, 0]))
    (tmp_path / TABLE).parent.mkdir()
    (tmp_path / TABLE).write_bytes(bad)
    ratings = Ratings(tmp_path)
    rows = ratings.rows()
    assert {r["key"] for r in rows} == {"person:alice", "persona:champion"}
    assert "recomputed from the match records" in ratings.message
    assert (tmp_path / TABLE).with_name("table.json.unreadable").read_bytes() == bad   # kept for a look
    assert _players(json.loads((tmp_path / TABLE).read_text())) == _players(replay(tmp_path))


def test_a_missing_table_is_computed_from_the_records_and_says_so(tmp_path):
    assert Ratings(tmp_path).rows() == [] and Ratings(tmp_path).message is None    # nothing yet
    write(tmp_path, rec("web.alice.0000000001.ticTacToe", 1000, ["alice", "champion"], [True, False], [0, 100]))
    (tmp_path / TABLE).unlink()
    ratings = Ratings(tmp_path)
    assert len(ratings.rows()) == 2 and "started from the 1 finished match on record" in ratings.message


def page_match(tmp_path, during):
    """A ticTacToe match of the page (``WebApp.run_play``) of alice against a random player:
    at alice's first turn ``await during(webapp, session)``, which ends the match (or lets
    it end); returns (the session, what ``during`` returned) once the match is over."""
    from agent.match.players import HumanPlayer, RandomPlayer
    from agent.match.runner import Stop
    from agent.web import work
    from agent.web.app import GameData, PlaySession, WebApp
    from agent.web.catalogue import Game
    w = WebApp(log_dir=tmp_path)
    game = Game("games/ticTacToe", "ticTacToe", str(GAMES / "ticTacToe.kif"))
    text = (GAMES / "ticTacToe.kif").read_text()
    gd = GameData(game.key, "ticTacToe", text, ["xplayer", "oplayer"], view=work.load_game(text, "ticTacToe")["view"])
    human = HumanPlayer("alice")

    async def go():
        s = PlaySession(f"{random.getrandbits(40):010x}", "alice", game, gd, 0, "random", 5, math.inf, human,
                        cancel=Stop())
        task = asyncio.create_task(w.run_play(s, [human, RandomPlayer(seed=1)], 10))
        while not (s.status == "playing" and human.waiting) and not task.done():
            await asyncio.sleep(0.05)
        got = await during(w, s)
        await task
        return s, got
    try:
        return asyncio.run(go())
    finally:
        w.work.shutdown()


def _page_match(tmp_path, end):
    """``page_match`` ended by ``end(webapp, session)``; the ratings' rows after it."""
    async def during(w, s):
        end(w, s)
    s, _ = page_match(tmp_path, during)
    return s, {r["key"]: r for r in Ratings(tmp_path).rows()}


def test_the_page_counts_a_resignation_and_not_an_abandoned_match(tmp_path):
    s, rows = _page_match(tmp_path, lambda w, s: w.resign(s))
    assert s.by == "resignation"
    alice, rnd = rows["person:alice"], rows["persona:random"]
    assert (alice["matches"], alice["losses"], rnd["wins"]) == (1, 1, 1) and rnd["mu"] > alice["mu"]
    s, again = _page_match(tmp_path, lambda w, s: s.cancel.end("nobody came back"))
    assert s.status == "aborted" and again == rows


# ------------------------------------------------------------------ personas in words
GAME_WORDS = ("board", "piece", "column", "row", "capture", "chess", "stone", "disc", "check", "cell")


def test_every_shipped_persona_is_described_in_a_few_sentences_without_game_words():
    shipped = sorted(p.stem for p in (ROOT / "agent" / "personas").glob("*.toml"))
    assert shipped and set(shipped) <= set(preset_names())
    seen = {}
    for name in shipped:
        words = describe(load_persona(name))
        sentences = [x for x in words.split(". ") if x]
        assert 3 <= len(sentences) <= 8, (name, words)
        assert not any(w in words.lower().split() or w + "s" in words.lower().split() for w in GAME_WORDS), words
        seen[words] = name
    assert len(seen) == len(shipped)        # no two shipped personas read the same
    lines = {summary(load_persona(n)) for n in shipped}         # the ratings rows' one line
    assert len(lines) == len(shipped) and all(len(x) < 200 for x in lines)
    assert summary(load_persona("champion")) == ("Looks far ahead, plays the best move it finds, "
                                                 "trusts its first impressions.")


def test_a_persona_file_that_cannot_be_read_is_said_so(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("horizon = 99\n")
    got = words_of_spec(str(bad))
    assert got["words"].startswith("(no description: bad.toml: missing field") and str(tmp_path) not in got["words"]


# each of the 17 parameters (the pairs as both entries) at the two ends of its range
def _ends(name):
    kind, lo, hi = RANGES[name]
    if name == "limit":
        return 50, 10_000
    return kind(lo), kind(hi)


@pytest.mark.parametrize("name", ["rave", "grave", "charge_depth", "horizon", "exploration_factor", "limit",
                                  "tree_discount", "charge_discount", "epsilon", "charge_defaults",
                                  "defensiveness", "aggressiveness", "random_error", "nice_threshold"])
def test_opposite_settings_of_each_parameter_read_differently(name):
    base = load_persona("champion").replace(rave=1000, charge_discount=0.99)   # so grave and both discounts show
    lo, hi = _ends(name)
    if name in ("charge_defaults", "defensiveness", "aggressiveness"):
        lo, hi = (lo, lo), (hi, hi)
    a, b = describe(base.replace(**{name: lo})), describe(base.replace(**{name: hi}))
    assert a != b, (name, a)


def test_opposite_personas_read_differently():
    champ = load_persona("champion")
    careful = champ.replace(horizon=20, charge_depth=100, nice_threshold=0.0, random_error=0.0,
                            exploration_factor=10, aggressiveness=(1.0, 1.0), defensiveness=(0.2, 0.2))
    reckless = champ.replace(horizon=2, charge_depth=5, nice_threshold=80.0, random_error=0.6,
                             exploration_factor=130, aggressiveness=(2.8, 2.8), defensiveness=(2.5, 2.5))
    a, b = describe(careful), describe(reckless)
    assert a != b
    assert "Looks far ahead" in a and "best move it finds" in a and "first impressions" in a and "cautious" in a.lower()
    assert "one or two moves ahead" in b and "random move about 6 times in ten" in b and "bold" in b.lower()
    assert summary(careful) != summary(reckless)


# ------------------------------------------------------------------ titles
def test_a_match_is_titled_by_its_players_game_and_date():
    t = match_title(rec("web.alice.0123456789.connectFour", 1_796_652_180_000, ["alice", "champion"],
                        [True, False], [100, 0]))
    assert t["text"] == "alice vs champion · connectFour · 7 Dec 2026 14:03 UTC"
    assert t["match_id"] == "web.alice.0123456789.connectFour"
    gdl2 = rec("web.bob.0123456789.kuhnPoker", 0, ["bob", "referee", "champion"], [True, False, False],
               players=[{"kind": "HumanPlayer"}, {"kind": "chance"}, {"kind": "PersonaPlayer"}])
    assert match_title(gdl2)["text"] == "bob vs champion · kuhnPoker"          # no date recorded
    tiltyard = {"matchId": "tiltyard.1", "gameMetaURL": "http://games.ggp.org/base/games/ticTacToe/v0/"}
    assert match_title(tiltyard)["text"] == "ticTacToe"
    assert match_title({"matchId": "m7"})["text"] == "m7"


def test_the_replay_page_and_the_past_matches_show_the_title_with_the_id_beside(tmp_path):
    from agent.web.app import WebApp
    w = WebApp(log_dir=tmp_path)
    d = rec("web.alice.0123456789.connectFour", 1_796_652_180_000, ["alice", "champion"], [True, False], [100, 0])
    rep = {"match_id": d["matchId"], "roles": ["red", "black"], "players": d["playerNamesFromHost"],
           "goals": [100, 0], "completed": True, "steps": [{}], "legend": []}
    html = w.page("replay.html", rep=rep, source="x.json", legend=[], key="k", verdict="ok", steps_json="[]",
                  title=match_title(d)).body.decode()
    assert "<title>alice vs champion · connectFour · 7 Dec 2026 14:03 UTC</title>" in html
    h1 = html.split('<h1 id="replay-title">')[1].split("</h1>")[0]
    assert '<span class="players">alice vs champion</span>' in h1 and '<span class="date">7 Dec 2026 14:03 UTC</span>' in h1
    assert d["matchId"] not in h1 and f'class="match-id" title="the match\'s id">{d["matchId"]}<' in html
    write(tmp_path, d)
    past = w.page("index.html", person="alice", games=[], personas=[], words={}, past=w.past_matches("alice"),
                  defaults=w.defaults, style_games=[], min_matches=5, clones=[], logs=[]).body.decode()
    row = past.split('id="past"')[1].split("</table>")[0]
    assert '<span class="players">alice vs champion</span> · <span class="game">connectFour</span>' in row
    assert f'<span class="match-id" title="the match\'s id">{d["matchId"]}</span>' in row
