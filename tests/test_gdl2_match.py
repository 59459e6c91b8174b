"""GDL-II matches through the runner (``agent.match``), refereed as Dresden's GameController
does: the runner moves ``random`` (no player, nothing sent to it), each player's PLAY and
STOP carry only its own percepts, the record keeps the whole match with ``x-percepts``, and
``ggp-persona replay`` checks those percepts against ``sees``.

Every check here is built from the rules and the record (a Prolog reasoner of the test's own
walks the recorded joint moves), never from texts written into the test, except the HTTP
test, which shows the exact messages of a tiny game written here.
"""
from __future__ import annotations

import asyncio
import copy
import http.server
import json
import threading
from pathlib import Path

import pytest

from agent import cli
from agent.archive import Record, Replayer, GameLibrary, replay_paths
from agent.match.players import HttpPlayer, RandomPlayer, play_message
from agent.match.runner import CHANCE_NAME, MatchError, role_view, run_match
from gdl.gdl2 import chooser_indices, random_index
from gdl.kif import parse_term, read_first, read_rules_file
from gdl.terms import render_spaced

from conftest import SHARED, SHARED_MISSING

CORPUS = SHARED / "corpus" / "gdl2"
GAMES = ["kuhn_poker", "rock_paper_scissors", "phantom_connect_4x4", "hidden_goofspiel"]
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{SHARED_MISSING} (GDL-II sheets: corpus/gdl2)")


class RecordingPlayer(RandomPlayer):
    """A random player that keeps everything it was sent: START's role, and per PLAY/STOP
    what came in place of the joint move (``None`` for NIL), with the move it answered."""

    def __init__(self, name: str, seed: int):
        super().__init__(name, seed)
        self.role = None
        self.got: list = []       # ("play" | "stop", percept texts or None)
        self.sent: list = []      # moves answered, in order
        self.starts = 0

    async def start(self, match_id, role, rules_text, start_clock, play_clock):
        self.role = role
        self.starts += 1

    async def play(self, match_id, last_moves, timeout):
        self.got.append(("play", None if last_moves is None else list(last_moves)))
        move = await super().play(match_id, last_moves, timeout)
        self.sent.append(move)
        return move

    async def stop(self, match_id, last_moves):
        self.got.append(("stop", None if last_moves is None else list(last_moves)))


def play(rules_text: str, players, out: Path, events: list | None = None, **kw) -> dict:
    kw = {"start_clock": 5, "play_clock": 1, "out_dir": out, "seed": 7, **kw}
    return asyncio.run(run_match(rules_text, players, on_event=(events.append if events is not None else None),
                                 **kw))


def walk(sheet: Path, record: dict):
    """Per step of the record: (state before, joint move as terms, every role's sees, every
    role's legal moves before), from a Prolog reasoner of the test's own."""
    from agent.reasoner.prolog import PrologReasoner
    sm = PrologReasoner(read_rules_file(sheet))
    try:
        state = sm.initial_state()
        steps = []
        for jm in record["moves"]:
            joint = tuple(parse_term(m) for m in jm)
            n = len(sm.roles)
            steps.append((state, joint, [sm.sees(state, joint, r) for r in range(n)],
                          [sm.legal_moves(state, r) for r in range(n)]))
            state = sm.next_state(state, joint)
        return sm.roles, steps
    finally:
        sm.close()


@pytest.fixture(scope="module")
def matches(tmp_path_factory):
    """One match per corpus game between recording random players (one per chooser role),
    with every event: {game: (sheet, players, record, events, out)}."""
    if not CORPUS.is_dir():
        pytest.skip(f"{SHARED_MISSING} (GDL-II sheets: corpus/gdl2)")
    out = tmp_path_factory.mktemp("gdl2_matches")
    found = {}
    for g, game in enumerate(GAMES):
        sheet = CORPUS / f"{game}.kif"
        roles = read_rules_file(sheet).roles
        players = [RecordingPlayer(f"{game}-{render_spaced(roles[i])}", seed=100 * g + i)
                   for i in chooser_indices(roles)]
        events: list = []
        record = play(sheet.read_text(), players, out / game, events, match_id=f"gdl2.{game}")
        found[game] = (sheet, players, record, events, out / game)
    return found


# ------------------------------------------------------------------------------ the runner

@needs_corpus
@pytest.mark.parametrize("game", GAMES)
def test_each_player_gets_only_its_own_percepts(matches, game):
    sheet, players, rec, _, _ = matches[game]
    assert rec["isCompleted"] and not rec["isAborted"], rec.get("x-notes")
    roles, steps = walk(sheet, rec)
    seats = chooser_indices(roles)
    assert len(steps) >= 1
    for player, r in zip(players, seats):
        assert player.role == render_spaced(roles[r]) and player.starts == 1
        # NIL first, then after step k the percepts of step k, the last ones in STOP
        assert [kind for kind, _ in player.got] == ["play"] * len(steps) + ["stop"]
        assert player.got[0][1] is None
        for k, (_, _, sees, _) in enumerate(steps):
            received = player.got[k + 1][1]
            assert received == sorted(render_spaced(p) for p in sees[r]), (game, k, render_spaced(roles[r]))


@needs_corpus
@pytest.mark.parametrize("game", GAMES)
def test_random_moves_are_legal_and_the_record_is_what_happened(matches, game):
    sheet, players, rec, _, out = matches[game]
    roles, steps = walk(sheet, rec)
    chance = random_index(roles)
    seats = chooser_indices(roles)
    assert len(rec["moves"]) == len(steps) == len(rec["states"]) - 1
    for k, (_, joint, _, legal) in enumerate(steps):
        assert all(joint[r] in legal[r] for r in range(len(roles)))   # random's too
    for player, r in zip(players, seats):   # no error: each reply is the move recorded
        assert [jm[r] for jm in rec["moves"]] == player.sent
    assert all(e == "" for row in rec["errors"] for e in row)
    if chance is not None:
        assert rec["playerNamesFromHost"][chance] == CHANCE_NAME and not rec["isPlayerHuman"][chance]
        assert rec["x-players"][chance]["kind"] == "chance"
    # ggp-base's fields stay valid, with the GDL-II ones beside them
    assert len(rec["states"]) == len(rec["stateTimes"]) == len(rec["moves"]) + 1 == len(rec["errors"])
    assert len(rec["playerNamesFromHost"]) == len(rec["goalValues"]) == len(roles)
    assert rec["x-gdl2"] is True
    assert rec["x-percepts"] == [[sorted(render_spaced(p) for p in sees[r]) for _, _, sees, _ in steps]
                                 for r in range(len(roles))]
    on_disk = json.loads(next(out.glob("*.json")).read_text())
    assert on_disk["x-percepts"] == rec["x-percepts"] and on_disk["moves"] == rec["moves"]
    # and the record replays, percepts checked
    results = replay_paths([out])
    assert [r.ok for r in results] == [True], [r.line() for r in results]


def test_the_same_seed_deals_the_same_cards(tmp_path):
    """random's moves come from an RNG seeded by the seed and the match id."""
    if not CORPUS.is_dir():
        pytest.skip(SHARED_MISSING)
    text = (CORPUS / "kuhn_poker.kif").read_text()
    deals = []
    for k in range(2):
        rec = play(text, [RandomPlayer("a", 1), RandomPlayer("b", 2)], tmp_path / str(k), match_id="same")
        deals.append(rec["moves"][0])
    assert deals[0] == deals[1]


def private(steps, r: int, k: int, n: int) -> set:
    """What other roles learned or did at step k that role r did not see: their percepts
    and moves that are not among r's percepts (nor r's own move)."""
    _, joint, sees, _ = steps[k]
    mine = set(sees[r])
    hidden = set()
    for j in range(n):
        if j != r:
            hidden |= set(sees[j]) - mine
            if joint[j] != joint[r] and joint[j] not in mine:
                hidden.add(joint[j])
    return hidden


@needs_corpus
@pytest.mark.parametrize("game", GAMES)
def test_no_message_before_stop_leaks_another_roles_move_or_percepts(matches, game):
    """The property, over every message of the match: before STOP, a player's message holds
    its own percepts and nothing another role did or saw that it did not see itself."""
    sheet, players, rec, _, _ = matches[game]
    roles, steps = walk(sheet, rec)
    n = len(roles)
    checked = 0
    for player, r in zip(players, chooser_indices(roles)):
        for k in range(len(steps)):
            kind, received = player.got[k + 1]
            if kind == "stop":
                continue
            # the message, as an HTTP player would get it, read back as a list of terms
            items = {parse_term(repr(node)) for node in read_first(play_message("m", received)).items[2].items}
            assert items == set(steps[k][2][r])
            hidden = private(steps, r, k, n)
            assert not (hidden & items), (game, k, [render_spaced(h) for h in hidden & items])
            checked += 1
    assert checked >= 1 or len(steps) == 1   # rock_paper_scissors: one PLAY (NIL), then STOP


@needs_corpus
@pytest.mark.parametrize("game", GAMES)
def test_events_for_a_display_keep_each_roles_view_apart(matches, game):
    """A display shows ``role_view(event, i)`` during the match: nothing in it but what role
    i may see (its percepts, its own move, its legal moves); the rest is under ``hidden``."""
    sheet, players, rec, events, _ = matches[game]
    roles, steps = walk(sheet, rec)
    n = len(roles)
    assert [e["type"] for e in events] == ["start"] + ["move"] * len(steps) + ["end"]
    assert all(e["gdl2"] is True for e in events)
    public = {"type", "gdl2", "match_id", "roles", "players", "is_human", "rules", "start_clock",
              "play_clock", "chance", "ply", "terminal", "goals", "record", "reason"}
    for ev in events[:-1]:
        k = ev.get("ply", 0)
        assert set(ev) - {"views", "hidden"} <= public
        for r in range(n):
            view = role_view(ev, r)
            assert "hidden" not in view and "views" not in view
            mine = view["view"]
            assert set(mine) == {"percepts", "move", "error", "legal", "to_move"}
            if k == 0:
                assert mine["percepts"] is None and mine["move"] is None
            else:
                _, joint, sees, _ = steps[k - 1]
                assert mine["percepts"] == sorted(render_spaced(p) for p in sees[r])
                assert mine["move"] == render_spaced(joint[r])
            assert mine["legal"] == ev["hidden"]["legal"][r]
        if k:
            assert ev["hidden"]["moves"] == rec["moves"][k - 1]
            assert ev["hidden"]["percepts"] == [rec["x-percepts"][r][k - 1] for r in range(n)]
    assert events[-1]["goals"] == rec["goalValues"]


def test_scrambled_percepts_reach_players_scrambled_and_records_real(tmp_path):
    """Scrambled GDL-II: players get their percepts in the scrambled vocabulary (``sees`` and
    ``random`` keep their meaning), the record keeps the real one and replays."""
    from agent.match.rules import NEVER_SCRAMBLED, Scrambler, read_rules
    if not CORPUS.is_dir():
        pytest.skip(SHARED_MISSING)
    text = (CORPUS / "kuhn_poker.kif").read_text()
    players = [RecordingPlayer("a", 1), RecordingPlayer("b", 2)]
    rec = play(text, players, tmp_path, scramble=True, seed=3)
    assert rec["isCompleted"] and rec["scrambled"]
    vocab = Scrambler(read_rules(text)[0], 3)
    real = {w for w in vocab.forward if w.lower() not in NEVER_SCRAMBLED}
    for r, player in enumerate(players):
        received = [ps for kind, ps in player.got[1:]]
        assert [sorted(vocab.unscramble(p) for p in ps) for ps in received] == rec["x-percepts"][r]
        words = {w for ps in received for p in ps for w in p.replace("(", " ").replace(")", " ").split()}
        assert not words & real, words & real
    assert [r.ok for r in replay_paths([tmp_path])] == [True]


def test_a_player_for_random_is_refused(tmp_path):
    rules = """(role a) (role random) (init s) (legal a go) (legal random toss)
               (<= terminal (true t)) (<= (next t) (true s)) (goal a 100) (goal random 0)
               (<= (sees a tossed) (does random toss))"""
    with pytest.raises(MatchError, match="random is played by the referee"):
        play(rules, [RandomPlayer("a"), RandomPlayer("r")], tmp_path)
    with pytest.raises(MatchError, match="give 1 player"):
        play(rules, [], tmp_path)
    rec = play(rules, [RandomPlayer("a")], tmp_path)   # or None in its seat: the same
    rec2 = play(rules, [RandomPlayer("a"), None], tmp_path)
    assert rec["moves"] == rec2["moves"] == [["go", "toss"]]
    assert rec["x-percepts"] == [[["tossed"]], [[]]] and rec["goalValues"] == [100, 0]


def test_replay_reports_a_wrong_percept_clearly(matches):
    sheet, players, rec, _, _ = matches["kuhn_poker"]
    rp = Replayer(GameLibrary())
    assert rp.replay(Record("ok", rec)).ok
    bad = copy.deepcopy(rec)
    bad["x-percepts"][1][0] = bad["x-percepts"][0][0]     # second gets first's card
    res = rp.replay(Record("bad", bad))
    assert not res.ok and "percepts of second differ" in res.problem and "joint move 0" in res.problem
    short = copy.deepcopy(rec)
    short["x-percepts"][0] = short["x-percepts"][0][:-1]
    res = rp.replay(Record("short", short))
    assert not res.ok and "one list per joint move" in res.problem


# ------------------------------------------------------------------------------ the exact messages over HTTP

TINY = """
(role a) (role b) (role random)
(init (step 0))
(succ 0 1) (succ 1 2)
(num 1) (num 2)
(<= (legal a (pick ?n)) (num ?n))
(<= (legal b (pick ?n)) (num ?n))
(legal random heads) (legal random tails)
(<= (next (step ?y)) (true (step ?x)) (succ ?x ?y))
(<= terminal (true (step 2)))
(<= (goal ?r 50) (role ?r))
(<= (sees a (saw ?m)) (does b ?m))
(<= (sees b tossed) (does random ?c) (true (step 0)))
"""


class Stub:
    """A GGP player on a local port that records every request body and answers a fixed move."""

    def __init__(self, move: str):
        stub = self
        self.bodies: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                stub.bodies.append(body)
                kind = body.strip("( ").split(" ")[0]
                reply = {"START": "ready", "PLAY": move, "STOP": "done"}.get(kind, "available").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/acl")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_http_players_receive_dresden_percept_messages(tmp_path):
    """What an HTTP player is sent: NIL first, then its percepts, each followed by a space,
    ``()`` when it saw nothing; random gets nothing."""
    a, b = Stub("( pick 1 )"), Stub("( pick 2 )")
    try:
        # a play clock of 5 s: STOP's limit too, which a loaded machine's stub thread may need
        rec = play(TINY, [HttpPlayer(a.url, "a"), HttpPlayer(b.url, "b")], tmp_path, match_id="tiny",
                   play_clock=5)
    finally:
        a.close()
        b.close()
    assert rec["isCompleted"] and all(e == "" for row in rec["errors"] for e in row)
    assert not rec.get("x-notes"), rec["x-notes"]   # no STOP failed
    assert [jm[:2] for jm in rec["moves"]] == [["( pick 1 )", "( pick 2 )"]] * 2
    assert all(jm[2] in ("heads", "tails") for jm in rec["moves"])
    assert a.bodies[0] == b.bodies[0] == "( INFO )"
    assert a.bodies[1].startswith("( START tiny a (( role a ) ( role b ) ( role random ) ") and a.bodies[1].endswith(" 5 5)")
    assert b.bodies[1].startswith("( START tiny b (")
    assert a.bodies[2:] == ["( PLAY tiny NIL )",
                            "( PLAY tiny (( saw ( pick 2 ) ) ) )",
                            "( STOP tiny (( saw ( pick 2 ) ) ) )"]
    assert b.bodies[2:] == ["( PLAY tiny NIL )",
                            "( PLAY tiny (tossed ) )",
                            "( STOP tiny () )"]
    assert rec["x-percepts"] == [[["( saw ( pick 2 ) )"]] * 2, [["tossed"], []], [[], []]]


# ------------------------------------------------------------------------------ the command line

@needs_corpus
def test_cli_plays_gdl2_without_a_player_for_random(tmp_path, capsys):
    sheet = CORPUS / "kuhn_poker.kif"
    out = tmp_path / "logs"
    assert cli.main(["match", str(sheet), "random", "random", "--rounds", "2", "--start", "2",
                     "--play", "1", "--out", str(out), "--run", "t"]) == 0
    text = capsys.readouterr().out
    assert "random (referee)=0" in text and text.count("(referee)") == 3   # a row: kuhn poker gives random a goal
    recs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    assert len(recs) == 2 and all(r["isCompleted"] and r["x-gdl2"] for r in recs)
    assert [r["playerNamesFromHost"] for r in recs] == [["random", "random#2", CHANCE_NAME],
                                                        ["random#2", "random", CHANCE_NAME]]
    assert all(r.ok for r in replay_paths([out]))
    # a player for random, or too few: a message, no traceback
    assert cli.main(["match", str(sheet), "random", "random", "random", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the role random, which the referee moves: give 2 players, not 3" in err and "Traceback" not in err
    assert cli.main(["match", str(sheet), "random", "--out", str(out)]) == 2
    assert "give 2 players, not 1" in capsys.readouterr().err


def test_results_table_leaves_random_out_of_outcomes():
    from agent.match.cli import outcome, results_table
    # random's goal (index 2) decides nothing: 50/50 between the choosers is a draw
    assert outcome([50, 50, 100], 0, chance=2) == "draw" and outcome([50, 50, 100], 0) == "loss"
    matches = [{"order": [0, 1, None], "goals": [75, 25, 0]}, {"order": [1, 0, None], "goals": [25, 75, 10]},
               {"order": [0, 1, None], "goals": None}]
    rows = results_table(["a", "b"], matches, chance=2, chance_row="random (referee)")["rows"]
    assert [(r["player"], r["matches"], r["wins"], r["losses"], r["aborted"]) for r in rows] == [
        ("a", 3, 2, 0, 1), ("b", 3, 0, 2, 1), ("random (referee)", 3, None, None, 1)]
    assert rows[2]["mean_goal"] == 5.0
    assert len(results_table(["a", "b"], matches, chance=2)["rows"]) == 2


def test_persona_player_in_a_gdl2_match(tmp_path):
    """Our server's GDL-II player (``agent.hidden``) through the runner: only its percepts
    reach it; every decision it records is its belief's, none lenient."""
    from agent.match.players import PersonaPlayer
    if not CORPUS.is_dir():
        pytest.skip(SHARED_MISSING)

    async def main():
        p = PersonaPlayer("champion", log_dir=tmp_path / "players", spare_players=0, spare_referees=0)
        try:
            return await run_match((CORPUS / "kuhn_poker.kif").read_text(), [p, RandomPlayer("r")],
                                   start_clock=10, play_clock=2, out_dir=tmp_path)
        finally:
            await p.close()
    rec = asyncio.run(main())
    assert rec["isCompleted"] and not [e for row in rec["errors"] for e in row if e in ("CE", "IL null")]
    assert all(r.ok for r in replay_paths(sorted(tmp_path.glob("*.json"))))
    ours = [json.loads(p.read_text()) for p in (tmp_path / "players").glob("*.json")]
    decisions = [x for d in ours for x in d.get("x-decisions", []) if x.get("belief")]
    assert ours and all(d.get("x-gdl2") for d in ours)
    assert not any(x["belief"]["lenient"] for x in decisions), decisions
