"""The web page's server without a browser: game listing, uploads (nothing crashes on any
file), boards and click maps from the rules' structure, the replay viewer, a person's past
matches.  The server runs in its own process (pyswip binds to one thread per process)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from tests.conftest import SHARED
from tests.webbrowser import WebServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    games = [SHARED / "corpus" / "games"] if SHARED.is_dir() else []
    # a past match of "bob" (human, role 1) and one of someone else
    for i, (names, human) in enumerate([(["p", "bob"], [False, True]), (["bob", "p"], [False, False])]):
        (logs / f"m{i}.json").write_text(json.dumps({
            "matchId": f"m{i}", "playerNamesFromHost": names, "isPlayerHuman": human,
            "isCompleted": True, "goalValues": [0, 100], "moves": [], "states": ["( )"], "startTime": 0}))
    fitted = tmp_path_factory.mktemp("fitted")
    champion = Path(__file__).resolve().parents[1] / "agent" / "personas" / "champion.toml"
    (fitted / "alice_fit.toml").write_text(champion.read_text().replace('name = "champion"', 'name = "alice_fit"'))
    s = WebServer(logs, games, extra=["--personas", str(fitted)])
    try:
        yield s, logs
    finally:
        s.stop()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server[0].url, timeout=120, follow_redirects=False) as c:
        yield c


def upload(client, data: bytes, name="x.kif"):
    return client.post("/upload", files={"rules": (name, data, "application/octet-stream")})


def test_index_lists_project_games(client):
    r = client.get("/")
    assert r.status_code == 200
    for g in ("games/ticTacToe", "games/connectFour", "games/breakthrough"):
        assert f'value="{g}"' in r.text


@pytest.mark.parametrize("data, needle", [
    (b"", "empty"),
    (b"\x00" * 100, "NUL"),
    (b"\xff\xfe\x00garbage", "line"),
    (b"(role a) (<= (legal a (go ?x)) (true (p)))", "unsafe"),
    (b"(role a) ((", "error"),
    (b"(" * 100_000, "error"),
    (b"x" * 2_100_000, "larger"),
    (b"(init (p))", "no roles"),
])
def test_bad_uploads_show_problems_never_a_traceback(client, data, needle):
    r = upload(client, data)
    assert r.status_code == 400
    assert 'id="problems"' in r.text and "Traceback" not in r.text
    assert needle.lower() in r.text.lower()


def test_problem_rows_carry_line_and_column(client):
    r = upload(client, b"(role a)\n(init (p))\n  (<= (legal a (go ?x)) (true (p)))\n")
    row = re.search(r'<tr class="error"><td>error</td><td class="line">(\d+)</td><td class="col">(\d+)</td>', r.text)
    assert row and row.group(1) == "3" and int(row.group(2)) >= 3


def test_valid_upload_opens_its_game_page(client):
    text = (Path(__file__).resolve().parents[1] / "games" / "ticTacToe.kif").read_bytes()
    r = upload(client, text, "mine.kif")
    assert r.status_code == 303 and r.headers["location"].startswith("/game?key=upload/mine-")
    page = client.get(r.headers["location"])
    assert page.status_code == 200 and page.text.count('class="cell"') == 9


def test_board_pieces_and_other_facts(client):
    r = client.get("/game", params={"key": "games/breakthrough"})
    assert r.text.count('class="cell"') == 64
    assert r.text.count('class="piece"') == 32           # two rows of pawns each side
    r = client.get("/game", params={"key": "games/ticTacToe", "preview": 3})
    assert r.text.count('class="piece"') == 3            # blank is the background, not a piece


def test_game_without_grid_is_listed_only(client):
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this clone")
    r = client.get("/game", params={"key": "games/base/nim1"})
    assert r.status_code == 200 and "No grid found" in r.text and "(heap" in r.text


def test_fitted_personas_from_a_folder_are_offered(client):
    r = client.get("/game", params={"key": "games/ticTacToe"})
    assert "alice_fit (fitted" in r.text and "alice_fit.toml" in r.text and "champion" in r.text


def test_a_form_that_does_not_fit_gets_the_problems_page(client):
    client.cookies.set("person", "carol")
    r = client.post("/play", data={"key": "games/ticTacToe", "play_clock": "1.5"})
    assert r.status_code == 400 and 'id="problems"' in r.text and "play_clock" in r.text
    r = client.post("/upload")                            # no file at all
    assert r.status_code == 400 and 'id="problems"' in r.text


def test_unknown_game_and_persona_upload_errors(client):
    assert client.get("/game", params={"key": "nope"}).status_code == 404
    r = client.post("/persona-upload", files={"persona": ("p.toml", b"limit = 'many'", "text/plain")})
    assert r.status_code == 400 and "not a persona" in r.text


def test_past_matches_of_a_person(client):
    r = client.post("/name", data={"name": "bob"})
    assert r.status_code == 303 and "person=bob" in r.headers["set-cookie"]
    client.cookies.set("person", "bob")
    r = client.get("/")
    past = r.text.split('id="past"')[1].split("</table>")[0]
    assert "m0" in past and "m1" not in past          # m1: bob's name, but not as a human


def test_replay_of_a_ggp_base_record(client):
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this clone")
    folder = sorted((SHARED / "corpus/matches/ggp-base-local-petewall/nineBoardTicTacToe").iterdir())[0]
    record = (folder / "game1.json").read_bytes()
    r = client.post("/replay", files={"record": ("game1.json", record, "application/json")})
    assert r.status_code == 200 and "every move legal" in r.text
    steps = json.loads(re.search(r'<script id="replay-data" type="application/json">(.*?)</script>',
                                 r.text, re.S).group(1).replace("<\\/", "</"))
    assert len(steps) == len(json.loads(record)["moves"]) + 1
    assert steps[-1]["boards"][0].count('class="piece"') >= len(steps) // 2
    r = client.post("/replay", files={"record": ("x.json", b"{not json", "application/json")})
    assert r.status_code == 400 and "cannot be replayed" in r.text


def test_cli_refuses_a_missing_games_folder(capsys):
    from agent.cli import main
    assert main(["web", "--games", "no/such/folder"]) == 2
    assert "not a folder" in capsys.readouterr().err
