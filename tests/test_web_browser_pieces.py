"""Piece sets and the board's size in a real Chromium (issue 54): chess figures on a replayed
scrambled chess match, X and O on ticTacToe, stones on connectFour, and the board filling a
large window and a small one with its coordinate labels inside it.  Everything waited for is
what app.js draws (the play and replay pages' boards), never the server's HTML.  Screenshots
go to GGP_PERSONA_SCREENSHOTS when it is set, else to the test's folder (never into docs/)."""
from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.match.players import make_player
from agent.match.rules import Scrambler, read_rules
from agent.match.runner import run_match
from tests.conftest import SHARED
from tests.webbrowser import (TURN_TIMEOUT_MS, person_page, require_browser, start_match, wait_turn_or_end,
                              web_and_browser)

DRAWN = "#boards svg.board"          # app.js puts the boards in #boards


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    require_browser()
    logs = tmp_path_factory.mktemp("match_logs")
    with web_and_browser(logs) as (server, browser):
        yield server, browser, logs, tmp_path_factory.mktemp("shots")


@pytest.fixture
def page(web):
    server, browser, _, _ = web
    pg = person_page(browser, server.url, "cleo")
    yield pg
    pg.context.close()


def shots(web) -> Path:
    return Path(os.environ.get("GGP_PERSONA_SCREENSHOTS", "") or web[3])


def figures(page) -> list:
    return page.eval_on_selector_all(f"{DRAWN}[data-board='0'] g.piece", "gs => gs.map(g => g.dataset.figure || '')")


def resign(page) -> None:
    page.once("dialog", lambda d: d.accept())
    page.click("#resign")
    page.wait_for_selector("#result:not([hidden])")


def board_fits(page) -> dict:
    """The first board's box, its column's width, the window, and whether every label and
    cell of it lies inside the board's box (nothing clipped)."""
    return page.evaluate("""() => {
      const svg = document.querySelector('#boards svg.board[data-board="0"]');
      const b = svg.getBoundingClientRect(), col = svg.parentElement.getBoundingClientRect();
      const inside = (r) => r.left >= b.left - 0.5 && r.right <= b.right + 0.5 && r.top >= b.top - 0.5 && r.bottom <= b.bottom + 0.5;
      const texts = [...svg.querySelectorAll(':scope > text')].map((t) => t.getBoundingClientRect());
      const cells = [...svg.querySelectorAll('.cell')].map((c) => c.getBoundingClientRect());
      const side = document.querySelector('.side').getBoundingClientRect();
      return {x: b.left, y: b.top + window.scrollY, w: b.width, h: b.height, col: col.width,
              side_x: side.left, side_y: side.top + window.scrollY,
              vw: window.innerWidth, vh: window.innerHeight, labels: texts.length,
              labels_inside: texts.every(inside), cells_inside: cells.every(inside),
              cell: cells.length ? cells[0].width : 0};
    }""")


def test_tictactoe_has_x_and_o_and_its_board_fills_large_and_small_windows(web, page):
    start_match(page, "games/ticTacToe")                 # cross, the first role: X
    assert wait_turn_or_end(page)
    page.locator(".cell.clickable").first.click()
    assert wait_turn_or_end(page)                        # the persona has answered
    page.wait_for_selector(f"{DRAWN}[data-pieces='marks'] g.piece[data-figure='O']")
    assert sorted(figures(page)) == ["O", "X"]
    assert page.locator(f"{DRAWN} g.piece[data-figure='X'] text").count() == 0   # a pen stroke, no letter
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.wait_for_timeout(100)                           # one layout after the resize
    big = board_fits(page)
    assert big["labels"] >= 6 and big["labels_inside"] and big["cells_inside"]
    assert big["x"] + big["w"] <= big["vw"] and big["y"] + big["h"] <= big["vh"]   # all in sight
    # as large as the window allows: the whole column wide, or the window's height below it
    assert big["w"] >= 0.95 * big["col"] or big["y"] + big["h"] >= 0.9 * big["vh"], big
    assert big["cell"] > 150                             # 44 px cells before
    assert 0 < big["side_x"] - (big["x"] + big["w"]) <= 60       # the side column right beside it
    page.screenshot(path=str(shots(web) / "pieces-tictactoe-large.png"))
    page.set_viewport_size({"width": 420, "height": 720})
    page.wait_for_timeout(100)
    small = board_fits(page)
    assert small["labels_inside"] and small["cells_inside"]
    assert small["x"] >= 0 and small["x"] + small["w"] <= small["vw"]             # no sideways scrolling
    assert small["w"] >= 0.95 * small["col"] and small["col"] >= 0.8 * small["vw"], small
    assert small["side_y"] >= small["y"] + small["h"]                          # the side wraps below
    page.screenshot(path=str(shots(web) / "pieces-tictactoe-small.png"))
    resign(page)


def test_connect_four_has_stones(web, page):
    start_match(page, "games/connectFour")
    assert wait_turn_or_end(page)
    page.locator(".cell.clickable").first.click()
    assert wait_turn_or_end(page)
    page.wait_for_selector(f"{DRAWN}[data-pieces='stones'] g.piece[data-figure='stone']")
    assert figures(page) == ["stone", "stone"]
    owners = page.eval_on_selector_all(f"{DRAWN} g.piece", "gs => gs.map(g => g.dataset.owner)")
    fills = page.eval_on_selector_all(f"{DRAWN} g.piece circle", "cs => cs.map(c => c.getAttribute('fill'))")
    assert len(set(owners)) == 2 and len(set(fills)) == 2            # a colour per side
    page.screenshot(path=str(shots(web) / "pieces-connectfour.png"))
    resign(page)


def _chess_record(logs: Path, plies: int = 12) -> str:
    """A match of random moves on a scrambled chess sheet (every symbol renamed; the record
    keeps the scrambled rules, so the replay sees no name of chess), by the match runner."""
    sheet = sorted((SHARED / "corpus/games/base/games/chess").glob("v*/*.kif"))[-1]
    rules = read_rules(sheet.read_text())[0][1:-1]
    scrambled = Scrambler(rules, seed=8).text(rules)
    assert " wk " not in scrambled and "cell" not in scrambled

    def play():
        return asyncio.run(run_match(
            scrambled, [make_player("random", seed=3), make_player("random", seed=4)],
            start_clock=30, play_clock=10, out_dir=logs, max_plies=plies, seed=8,
            match_id="chess.pieces.random"))
    with ThreadPoolExecutor(1) as ex:   # playwright's own event loop runs in this thread
        ex.submit(play).result()
    return "chess.pieces.random.json"


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (chess) is not beside this clone")
def test_a_scrambled_chess_replay_has_chess_figures(web, page):
    _, _, logs, _ = web
    name = _chess_record(logs)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/replay?file={name}")
    page.wait_for_selector(f"{DRAWN}[data-pieces='chess'] g.piece[data-figure='K']", timeout=TURN_TIMEOUT_MS)
    start = figures(page)                                 # step 0: the initial position
    assert len(start) == 32
    assert {f: start.count(f) for f in "KQRBNP"} == {"K": 2, "Q": 2, "R": 4, "B": 4, "N": 4, "P": 16}
    # white's figures (outlined) for the side that moves first, black's (solid) for the other
    outlined = page.eval_on_selector_all(f"{DRAWN} g.piece[data-figure='K']",
                                         "gs => gs.map(g => g.textContent.includes('\u2654'))")
    assert sorted(outlined) == [False, True]
    assert page.locator(".legend li[data-figure]").count() == 12
    assert "wk" not in page.locator(".legend").inner_text()          # the scrambled names, as labels
    assert "chess figures" in page.locator(".set-note").first.inner_text()
    page.click("#last")
    page.wait_for_function("document.querySelector('#step').textContent !== '0'")
    assert set(figures(page)) <= set("KQRBNP") and figures(page).count("K") == 2
    fit = board_fits(page)
    assert fit["labels"] == 16 and fit["labels_inside"] and fit["cells_inside"]
    assert fit["w"] >= 0.95 * fit["col"] or fit["y"] + fit["h"] >= 0.9 * fit["vh"], fit
    assert fit["y"] + fit["h"] <= fit["vh"]          # below the replay's title lines, still in sight
    page.screenshot(path=str(shots(web) / "pieces-chess-replay.png"))
