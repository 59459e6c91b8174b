"""Boards in a real Chromium (issue 54): a won ticTacToe shows its winning line, a scrambled
knightThrough whose coordinates only arithmetic facts order is drawn on its 8x8 board, and
the persona's advice names its moves as the buttons do and says when it cannot tell them
apart.  Screenshots go to GGP_PERSONA_SCREENSHOTS when it is set, else to the test's folder
(never into docs/)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.webbrowser import (TURN_TIMEOUT_MS, person_page, require_browser, start_match, upload_sheet,
                              wait_turn_or_end, web_and_browser)

GAMES = Path(__file__).resolve().parents[1] / "games"
KNIGHT_THROUGH = "corpus/games/base/games/knightThrough/v0/knightThrough.kif"
NUMBER_WORDS = "naught uno dos tres cuatro cinco seis siete ocho".split()


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    require_browser()
    logs = tmp_path_factory.mktemp("match_logs")
    with web_and_browser(logs) as (server, browser):
        yield server, browser, tmp_path_factory.mktemp("shots")


@pytest.fixture
def page(web):
    server, browser, _ = web
    pg = person_page(browser, server.url, "bea")
    yield pg
    pg.context.close()


def shots(web) -> Path:
    return Path(os.environ.get("GGP_PERSONA_SCREENSHOTS", "") or web[2])


def test_a_won_tictactoe_shows_its_winning_line(web, page):
    # the person clicks the first open cell each turn: the persona wins (a draw: play again)
    page.goto("/game?key=games/ticTacToe")
    start_match(page)
    for attempt in range(4):
        if attempt:                                      # the same game and persona again
            first = page.url
            page.click("#rematch")
            page.wait_for_function(f"location.href !== {first!r} && location.pathname.startsWith('/play/')")
        for _ in range(6):
            if not wait_turn_or_end(page):
                break
            n = page.locator("#history li").count()
            page.locator(".cell.clickable").first.click()
            page.wait_for_function(f"document.querySelectorAll('#history li').length > {n} "
                                   "|| !document.querySelector('#result').hidden", timeout=TURN_TIMEOUT_MS)
        page.wait_for_selector("#result:not([hidden])", timeout=TURN_TIMEOUT_MS)
        if page.locator("#result .verdict").inner_text() != "A draw.":
            break
    else:
        pytest.skip("four draws in a row: no winning line to show")
    # drawn by app.js from the final position: the three cells of the line and its stroke
    page.wait_for_selector("#boards svg.board .cell.win")
    assert page.locator("#boards svg.board .cell.win").count() == 3
    assert page.locator("#boards svg.board line.win-line").count() == 1
    page.screenshot(path=str(shots(web) / "tictactoe-won.png"), full_page=True)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (knightThrough) is not beside this clone")
def test_scrambled_knightthrough_has_its_board(web, page, tmp_path):
    from agent.match.rules import Scrambler, read_rules
    rules = read_rules((SHARED / KNIGHT_THROUGH).read_text())[0][1:-1]
    scrambled = Scrambler(rules, seed=9).text(rules)
    # its numbers renamed too: only the (plus 1 ?x ?y) facts order the coordinates
    scrambled = re.sub(r"(?<=[\s(])([1-8])(?=[\s)])", lambda m: NUMBER_WORDS[int(m.group(1))], scrambled)
    assert "cell" not in scrambled and " 3 " not in scrambled
    upload_sheet(page, tmp_path / "riddle.kif", scrambled)
    assert page.locator("svg.board rect.cell").count() == 64
    start_match(page)
    assert wait_turn_or_end(page)
    page.wait_for_selector("#boards svg.board .cell.clickable")      # drawn by app.js
    assert page.locator("#boards svg.board rect.cell").count() == 64
    # the column labels (drawn after the cells, then the row labels) are the number words
    # in their order, left to right as the rules count (shortened, perhaps)
    labels = [t.strip() for t in page.locator("#boards svg.board > text").evaluate_all("els => els.map((e) => e.textContent)")]
    assert len(labels) == 16
    assert all(w.startswith(t) and t for w, t in zip(NUMBER_WORDS[1:9], labels[:8]))
    assert all(w.startswith(t) and t for w, t in zip(NUMBER_WORDS[1:9], labels[8:]))
    # a from-cell then a to-cell: a knight's move named by its cells
    n = page.locator("#history li").count()
    for _ in range(4):
        page.locator(".cell.clickable").first.click()
        if page.locator("#pending").inner_text().startswith("sen"):   # sending, or sent
            break
    page.wait_for_function(f"document.querySelectorAll('#history li').length > {n}", timeout=TURN_TIMEOUT_MS)
    assert " → " in page.locator("#history li").first.inner_text()
    page.screenshot(path=str(shots(web) / "knightthrough-scrambled.png"), full_page=True)


def test_advice_names_moves_as_the_buttons_and_says_when_it_cannot_tell(web, page):
    page.goto("/game?key=games/connectFour")
    start_match(page)
    assert wait_turn_or_end(page)
    page.click("#advice-btn")
    page.wait_for_selector("#advice-table", timeout=TURN_TIMEOUT_MS)
    buttons = set(page.locator("#moves button").all_inner_texts())
    labels = [t.strip() for t in page.locator("#advice-table tr td:first-child").all_inner_texts()]
    assert labels and set(labels) <= buttons                 # "column 5", as the buttons say
    tied = page.locator("#advice-table tr.tied")
    if tied.count():
        assert "too few simulations" in page.locator("#advice-noise").inner_text().lower()
        names = [t.strip() for t in tied.locator("td:first-child").all_inner_texts()]
        assert names == sorted(names)                        # not ranked
    page.screenshot(path=str(shots(web) / "advice-connectfour.png"), full_page=True)
