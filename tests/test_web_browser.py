"""The web page in a real Chromium (Debian's, driven by pip playwright; no browser download).

A person gives a name, plays whole ticTacToe and connectFour matches against a persona by
clicking the board and reaches the result screen; plays a scrambled breakthrough (every
non-keyword symbol renamed) from the board; sees the problems of an invalid upload with line
and column; steps through a recorded ggp-base match.  Under CI (CI=true) a missing Chromium
or playwright fails these tests instead of skipping them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.webbrowser import (TURN_TIMEOUT_MS, person_page, person_records, require_browser, start_match,
                              upload_sheet, wait_turn_or_end, web_and_browser)

GAMES = Path(__file__).resolve().parents[1] / "games"
PERSONA = "phlegmatic"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    require_browser()
    logs = tmp_path_factory.mktemp("match_logs")
    games = [SHARED / "corpus" / "games"] if SHARED.is_dir() else []
    with web_and_browser(logs, games, env={"GGP_PERSONA_WEB_STYLE_LIMIT": "60"}) as (server, browser):  # a small fit
        yield server, browser, logs


@pytest.fixture
def page(web):
    server, browser, _ = web
    pg = person_page(browser, server.url, "alice")
    yield pg
    pg.context.close()


def click_a_move(page) -> None:
    """Click cells until a move is sent: the first clickable cell, then (from-cell, to-cell
    moves) the first cell clickable after it."""
    ply = page.locator("#history li").count()
    for _ in range(4):
        page.locator(".cell.clickable").first.click()
        if page.locator("#pending").inner_text().startswith("sen"):   # sending, or sent
            break
    page.wait_for_function(f"document.querySelectorAll('#history li').length > {ply} "
                           "|| !document.querySelector('#result').hidden", timeout=TURN_TIMEOUT_MS)


def play_to_the_end(page, max_turns: int = 60) -> None:
    for _ in range(max_turns):
        if not wait_turn_or_end(page):
            return
        click_a_move(page)
    pytest.fail("the match did not end")


def check_result_and_record(page, logs: Path, role: int = 0) -> dict:
    assert page.locator("#result h2").inner_text() == "Result"
    assert page.locator("#goals tr").count() == 2
    assert page.locator("#result .verdict").inner_text() in ("You won.", "You lost.", "A draw.")
    name = page.locator("#replay-link").get_attribute("href").split("file=")[1]
    record = json.loads((logs / name).read_text())
    assert record["isCompleted"] and record["playerNamesFromHost"][role] == "alice"
    assert record["isPlayerHuman"] == [r == role for r in range(2)]
    assert not any(e for row in record["errors"] for e in row)   # every click was a legal move
    return record


def test_tictactoe_whole_match_by_clicking(web, page):
    _, _, logs = web
    start_match(page, "games/ticTacToe")
    assert wait_turn_or_end(page)
    # the persona's view of the position: its top moves with Q-values and visits
    page.click("#advice-btn")
    page.wait_for_selector("#advice-table", timeout=TURN_TIMEOUT_MS)   # the first advice warms its worker
    rows = page.locator("#advice-table tr")
    assert rows.count() == 1 + 9                       # header, then every legal move
    # what it would play on top, or the moves it cannot tell apart (unranked, said in words)
    top = rows.nth(1).get_attribute("class")
    assert "choice" in top or ("tied" in top and page.locator("#advice-noise").is_visible())
    q, visits = rows.nth(1).locator("td").nth(1).inner_text(), rows.nth(1).locator("td").nth(2).inner_text()
    assert 0 <= float(q.split("±")[0]) <= 100 and int(visits) > 0      # "55.0 ± 4": its 95 % interval
    play_to_the_end(page)
    record = check_result_and_record(page, logs)
    assert page.locator("#advice").inner_text() == ""   # the advice was for an earlier position
    page.click("#advice-btn")                           # after the end: a clear answer, no error
    page.wait_for_selector("#advice .advice-over")
    assert "over" in page.locator("#advice").inner_text()
    assert page.locator("#clock").inner_text() == ""    # the clock stopped
    assert page.locator("#rematch").is_visible()
    first = page.url
    page.click("#rematch")                              # the same game and persona again
    page.wait_for_function(f"location.href !== {first!r} && location.pathname.startsWith('/play/')")
    assert page.locator("h1").inner_text() == "ticTacToe"
    assert wait_turn_or_end(page)
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")
    # the page lists the person's matches
    page.goto("/")
    assert record["matchId"] in page.locator("#past").inner_text()


def test_connect_four_whole_match_by_clicking(web, page):
    _, _, logs = web
    start_match(page, "games/connectFour", role=1)
    play_to_the_end(page)
    record = check_result_and_record(page, logs, role=1)
    history = page.locator("#history li")
    assert history.count() == len(record["moves"])           # one line a move, passes hidden
    assert "noop" not in page.locator("#history").inner_text()
    numbers = [t.strip() for t in page.locator("#history .ply").all_inner_texts()]
    assert numbers == [f"{i}." for i in range(1, len(numbers) + 1)]   # 10, 11, ... whole


def test_scrambled_breakthrough_played_from_the_board(web, page, tmp_path):
    from agent.match.rules import Scrambler, read_rules
    rules = read_rules((GAMES / "breakthrough.kif").read_text())[0][1:-1]
    scrambled = Scrambler(rules, seed=7).text(rules)
    assert "cell" not in scrambled and "white" not in scrambled
    upload_sheet(page, tmp_path / "mystery.kif", scrambled)
    assert page.locator("svg.board rect.cell").count() == 64
    page.locator("#start").click()
    page.wait_for_url("**/play/*")
    for _ in range(3):   # three moves, each a from-cell then a to-cell click
        assert wait_turn_or_end(page)
        click_a_move(page)
    assert page.locator("#history li").count() >= 3
    first = page.locator("#history li").first
    assert " → " in first.inner_text() and "(" not in first.inner_text()   # named by its cells
    assert "(" in first.locator(".mv").first.get_attribute("title")         # the raw term on hover
    page.once("dialog", lambda d: d.dismiss())          # abort asks first; "no" keeps playing
    page.click("#resign")
    page.wait_for_timeout(500)
    assert page.locator("#result").is_hidden()
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")


def test_a_whole_scrambled_chess_match_played_by_clicking(web, page, tmp_path):
    """Chess (the base repository's chess_200: chess with a 200-step limit and goals at every
    end; played by the non-ground engine), every symbol renamed, uploaded and played to its end
    by clicking a from-cell then a to-cell.  A whole match of the real sheet is up to 200 plies
    (over 5 minutes at a 1 s play clock), so the sheet's move limit, its one ``terminal`` rule
    on the step counter, is cut from 201 to 21 steps: the same board, pieces and moves, a
    whole match in CI's time (the persona's START alone waits 2 minutes for the grounder to
    give up on chess)."""
    if not SHARED.is_dir():
        pytest.skip("../shared (chess) is not beside this clone")
    from agent.match.rules import Scrambler, read_rules
    _, _, logs = web
    text = sorted((SHARED / "corpus/games/base/games/chess_200").glob("v*/*.kif"))[-1].read_text()
    assert text.count("(true (step 201))") == 1
    rules = read_rules(text.replace("(true (step 201))", "(true (step 21))"))[0][1:-1]
    scrambled = Scrambler(rules, seed=3).text(rules)
    assert "king" not in scrambled and "cell" not in scrambled
    upload_sheet(page, tmp_path / "shortchess.kif", scrambled)
    assert page.locator("svg.board rect.cell").count() == 64
    key = page.url.split("key=")[1]
    start_match(page, key)
    play_to_the_end(page, max_turns=30)
    record = check_result_and_record(page, logs)
    assert 2 <= len(record["moves"]) <= 20 and sorted(record["goalValues"]) in ([50, 50], [0, 100])
    moves = page.locator("#history li .mv").all_inner_texts()
    assert any(" → " in m for m in moves)                # moves named from-cell -> to-cell
    assert "(" not in " ".join(moves)


@pytest.mark.parametrize("content, expect", [
    (b"(role a)\n(init (p))\n(<= (legal a go) (true (q ?x)) (not (r ?y)))\n", "line"),
    (b"", "empty"),
    (b"\x00\x01\x02binary\xff\xfe", "error"),
    (b"(role a", "error"),
])
def test_invalid_upload_shows_its_problems(web, page, tmp_path, content, expect):
    f = tmp_path / "bad.kif"
    f.write_bytes(content)
    page.set_input_files("#rules-file", str(f))
    page.click("#upload-form button")
    page.wait_for_selector("#problems")
    assert "cannot be played" in page.locator("#problems-title").inner_text()
    rows = page.locator("#problems tr.error")
    assert rows.count() >= 1
    if expect == "line":   # the unsafe rule is on line 3, with its column
        unsafe = rows.filter(has_text="unsafe")
        assert unsafe.count() == 1
        assert unsafe.locator("td.line").inner_text() == "3"
        assert unsafe.locator("td.col").inner_text() != ""
    elif expect == "empty":
        assert "empty" in rows.first.inner_text()


def test_an_upload_with_warnings_is_played_and_shows_them(web, page, tmp_path):
    """A sheet that is valid GDL but almost surely has a typo (a relation no rule defines) and
    a relation used with two arities: accepted, its game page lists both warnings with their
    line, and the game can still be started."""
    text = (GAMES / "ticTacToe.kif").read_text()
    lines = text.count("\n") + 1
    text += ("\n(<= terminal (markedx 1))\n(<= (foo ?x) (true (control ?x)))\n"
             "(<= (foo ?x ?y) (true (cell ?x ?y b)))\n(<= terminal (foo 1))\n")
    upload_sheet(page, tmp_path / "typo.kif", text)
    rows = page.locator("#warnings tr.warning")
    assert rows.count() >= 2
    typo = rows.filter(has_text="markedx")
    assert typo.count() == 1 and "no rule or fact defines it" in typo.inner_text()
    assert int(typo.locator("td.line").inner_text()) > lines - 2     # where the typo is
    assert rows.filter(has_text="foo").count() >= 1                  # the two arities
    assert page.locator("svg.board rect.cell").count() == 9 and page.locator("#start").is_visible()


def test_replay_viewer_steps_through_a_ggp_base_match(web, page):
    if not SHARED.is_dir():
        pytest.skip("../shared (recorded matches and game repositories) is not beside this clone")
    folder = next(iter(sorted((SHARED / "corpus/matches/ggp-base-local-petewall/connectFour").iterdir())))
    record = folder / "game1.json"
    n = len(json.loads(record.read_text())["moves"])
    page.set_input_files("#record-file", str(record))
    page.click("#replay-form button")
    page.wait_for_selector("#boards svg.board")     # #step is in the HTML: app.js has drawn once
    page.wait_for_function("!document.querySelector('#verdict').dataset.pending")
    assert "every move legal" in page.locator(".verdict").inner_text()
    assert page.locator("#steps").inner_text() == str(n)
    pieces = lambda: page.locator("svg.board g.piece").count()  # noqa: E731
    assert pieces() == 0 and page.locator("#step").inner_text() == "0"
    page.click("#next")
    page.click("#next")
    assert page.locator("#step").inner_text() == "2" and pieces() == 2
    page.click("#prev")
    assert page.locator("#step").inner_text() == "1" and pieces() == 1
    page.click("#last")
    assert page.locator("#step").inner_text() == str(n)
    assert pieces() >= n // 2


def _chess_record(logs: Path, plies: int = 16) -> str:
    """A scrambled chess match of random moves, recorded by the match runner."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from agent.match.players import make_player
    from agent.match.runner import run_match
    sheet = sorted((SHARED / "corpus/games/base/games/chess").glob("v*/*.kif"))[-1]

    def play():
        return asyncio.run(run_match(
            sheet.read_text(), [make_player("random", seed=1), make_player("random", seed=2)],
            start_clock=30, play_clock=10, out_dir=logs, max_plies=plies, scramble=True, seed=5,
            match_id="chess.scrambled.random"))
    with ThreadPoolExecutor(1) as ex:   # playwright's own event loop runs in this thread
        ex.submit(play).result()
    return "chess.scrambled.random.json"


def test_a_chess_replay_in_one_tab_while_a_match_goes_on_in_another(web, page):
    """Two people at once: one opens the replay of a scrambled chess match, the other keeps
    playing ticTacToe; the replay's work runs beside the match (its own worker), both end."""
    if not SHARED.is_dir():
        pytest.skip("../shared (chess) is not beside this clone")
    server, browser, logs = web
    name = _chess_record(logs)
    start_match(page, "games/ticTacToe")
    assert wait_turn_or_end(page)
    other = browser.new_context(base_url=server.url, viewport={"width": 1200, "height": 900}).new_page()
    other.set_default_timeout(120_000)
    other.goto("/")
    other.evaluate(f"location.href = '/replay?file={name}'")    # not waited for: it loads meanwhile
    click_a_move(page)                                            # the persona answers meanwhile
    assert wait_turn_or_end(page)
    other.wait_for_selector("#boards svg.board")    # #step is in the HTML: app.js has drawn once
    assert other.locator("#steps").inner_text() == "16"
    other.wait_for_function("!document.querySelector('#verdict').dataset.pending")
    assert "every move legal" in other.locator("#verdict").inner_text()
    assert other.locator("svg.board").count() == 1                # no extra empty grids
    other.click("#last")
    assert other.locator("svg.board g.piece").count() >= 20
    owners = {other.locator("svg.board g.piece").nth(i).get_attribute("data-owner")
              for i in range(other.locator("svg.board g.piece").count())}
    assert len(owners - {None}) == 2                              # both sides' pieces, by owner
    assert "→" in other.locator("#joint").inner_text()            # the move named by its cells
    other.context.close()
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")


def test_a_move_played_for_the_person_on_timeout_says_so(web, page):
    page.goto("/game?key=games/ticTacToe")
    page.select_option("#persona", PERSONA)
    page.fill("#play_clock", "1")
    page.fill("input[name=human_clock]", "2")
    page.click("#start")
    page.wait_for_url("**/play/*")
    page.wait_for_selector("#history .played-for-you", timeout=TURN_TIMEOUT_MS)
    note = page.locator("#history .played-for-you").first.inner_text()
    assert "played for you" in note and "TO" not in note
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")
    assert page.locator("#clock").inner_text() == ""          # no clock after the end


def test_scrambled_hex_is_played_on_hexagons(web, page, tmp_path):
    if not SHARED.is_dir():
        pytest.skip("../shared (hex) is not beside this clone")
    from agent.match.rules import Scrambler, read_rules
    rules = read_rules((SHARED / "corpus/games/base/games/hex/v0/hex.kif").read_text())[0][1:-1]
    upload_sheet(page, tmp_path / "honeycomb.kif", Scrambler(rules, seed=3).text(rules))
    assert page.locator("svg.board.hex polygon.cell").count() == 81
    page.locator("#start").click()
    page.wait_for_url("**/play/*")
    assert wait_turn_or_end(page)
    click_a_move(page)                       # one click on a hexagon places a stone
    assert page.locator("#history li").count() >= 1
    assert page.locator("svg.board.hex g.piece").count() >= 1
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")


def test_learn_my_style_then_play_the_clone(web, page):
    """A person's recorded ticTacToe matches -> Learn my style -> the result (predictability
    with intervals, whom they play most like, the thin-data warning) -> Play my clone."""
    _, _, logs = web
    person_records(logs, "carol", 6)
    person_records(logs, "dave", 3, seed=1)
    # too few matches: the start page and the fit both say how many more are needed
    page.fill("#name", "dave")
    page.click("#name-form button")
    page.wait_for_selector("#style-games")
    assert "2 more to go" in page.locator("#style-games").inner_text()
    refused = page.request.post("/style", form={"game": "ticTacToe"})
    assert refused.status == 400 and "finish 2 more" in refused.text() and "Traceback" not in refused.text()
    page.goto("/game?key=games/ticTacToe")
    assert "finish 2 more" in page.locator("#game-style").inner_text()
    page.goto("/")
    # enough: one click, a progress bar, then the result
    page.fill("#name", "carol")
    page.click("#name-form button")
    page.wait_for_selector("#style-games")
    assert page.locator("#style-games tr", has_text="ticTacToe").locator(".learn-btn").count() == 1
    page.goto("/game?key=games/ticTacToe")           # the game's page has the button too
    page.click("#game-style .learn-btn")
    page.wait_for_url("**/style/*")
    assert page.locator("#style-running progress, #style-result").count() == 1   # a progress bar, or done
    page.wait_for_selector("#style-result", timeout=TURN_TIMEOUT_MS)
    metrics = page.locator("#style-metrics").inner_text()
    assert "your model" in metrics and "random" in metrics and "champion" in metrics and "[" in metrics
    assert "Thin data" in page.locator("#style-warnings").inner_text()     # 6 matches are few
    assert page.locator("#like-table tr").count() > 2
    assert page.locator("#most-like").inner_text()
    shots = Path(os.environ.get("GGP_PERSONA_SCREENSHOTS", "") or logs)
    page.screenshot(path=str(shots / "learn-my-style.png"), full_page=True)
    style_url = page.url
    # the clone is kept with the matches and listed on the start page
    clones = list((logs / "clones").glob("*/style.json"))
    assert len(clones) == 1
    page.goto("/")
    assert "carol's clone" in page.locator("#clones").inner_text()
    page.goto(style_url)
    page.click("#play-clone")
    page.wait_for_url("**/play/*")
    assert wait_turn_or_end(page)                     # the clone's match started: carol's turn
    click_a_move(page)
    assert wait_turn_or_end(page)                     # the clone answered
    assert page.locator("#history li").count() >= 2
    assert "carol-clone" in page.locator("body").inner_text()
