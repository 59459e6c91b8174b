"""Ratings, personas in words and match titles in a real Chromium (issue 54): the ratings page
from the navigation, the persona's description under the choice of an opponent, a finished
match (a resignation) that moves its players' ratings, and its replay titled by players,
game and date.  Screenshots of the ratings page, of a replay's title and of an opponent's
description go to GGP_PERSONA_SCREENSHOTS when it is set, else to the test's log folder
(never into docs/).
The pages without a browser: test_web_ratings.py."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.test_web_browser import click_a_move
from tests.webbrowser import TURN_TIMEOUT_MS, wait_turn_or_end
from tests.webbrowser import person_page, require_browser, web_and_browser

TITLE_RE = r"^dana vs champion · ticTacToe · \d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d UTC$"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    require_browser()
    logs = tmp_path_factory.mktemp("match_logs")
    # earlier matches on record: erin beat champion twice and lost to sanguine once
    for i, (names, human, goals) in enumerate([(["erin", "champion"], [True, False], [100, 0]),
                                               (["champion", "erin"], [False, True], [0, 100]),
                                               (["erin", "sanguine"], [True, False], [0, 100])]):
        mid = f"web.erin.{i:010x}.ticTacToe"
        (logs / f"{mid}.json").write_text(json.dumps({
            "matchId": mid, "startTime": 1_796_600_000_000 + 60_000 * i, "playerNamesFromHost": names,
            "isPlayerHuman": human, "isCompleted": True, "isAborted": False, "goalValues": goals,
            "moves": [], "states": ["( )"]}))
    with web_and_browser(logs) as (server, browser):
        yield server, browser, logs


def shots(web) -> Path:
    return Path(os.environ.get("GGP_PERSONA_SCREENSHOTS", "") or web[2])


def ratings(page) -> dict:
    """The ratings table as {name: {kind, rating, mu, matches, wdl, words}}."""
    out = {}
    for row in page.locator("#ratings tr.rating").all():
        name = row.locator("td.name").evaluate("td => td.firstChild.textContent").strip()
        words = row.locator(".persona-words")
        out[name] = {"kind": row.locator("td.kind").inner_text(), "rating": float(row.locator("td.ordinal").inner_text()),
                     "mu": row.locator("td.mu").inner_text(), "matches": int(row.locator("td.matches").inner_text()),
                     "wdl": row.locator("td.wdl").inner_text(), "words": words.inner_text() if words.count() else ""}
    return out


def test_a_finished_match_moves_the_ratings_and_its_replay_is_titled(web):
    server, browser, logs = web
    page = person_page(browser, server.url, "dana")
    try:
        page.click("#nav-ratings")
        page.wait_for_url("**/ratings")
        before = ratings(page)
        assert before["erin"]["kind"] == "person" and before["erin"]["wdl"] == "2 / 0 / 1"
        assert before["champion"]["wdl"] == "0 / 0 / 2" and before["sanguine"]["wdl"] == "1 / 0 / 0"
        assert "best move it finds" in before["champion"]["words"] and "dana" not in before
        assert "started from the 3 finished matches" in page.locator("#ratings-message").inner_text()

        # the opponent's description follows the choice (drawn by the page's script)
        page.goto("/game?key=games/ticTacToe")
        page.wait_for_function("document.querySelector('#persona-words').textContent.length > 0")
        champion = page.locator("#persona-words").inner_text()
        assert champion.startswith("Looks far ahead") and "best move it finds" in champion
        page.select_option("#persona", "sanguine")
        page.wait_for_function("!document.querySelector('#persona-words').textContent.includes('best move it finds')")
        assert "random move" in page.locator("#persona-words").inner_text()
        page.locator("#play-form").screenshot(path=str(shots(web) / "persona-words.png"))

        # a match against the champion, resigned at dana's second turn
        page.select_option("#persona", "champion")
        page.fill("#play_clock", "1")
        page.fill("input[name=start_clock]", "5")
        page.click("#start")
        page.wait_for_url("**/play/*")
        assert wait_turn_or_end(page)
        click_a_move(page)            # a move and the persona's reply: the match has started for both
        assert wait_turn_or_end(page)
        page.once("dialog", lambda d: d.accept())
        page.click("#resign")
        page.wait_for_selector("#result:not([hidden])", timeout=TURN_TIMEOUT_MS)
        sid = page.url.rstrip("/").rsplit("/", 1)[1]
        (record,) = logs.glob(f"web.dana.{sid}.*.json")
        rec = json.loads(record.read_text())
        assert rec["x-result"]["by"] == "resignation"

        page.click("#nav-ratings")
        page.wait_for_url("**/ratings")
        after = ratings(page)
        assert after["dana"] == dict(after["dana"], kind="person", matches=1, wdl="0 / 0 / 1")
        assert after["champion"]["matches"] == 3 and after["champion"]["wdl"] == "1 / 0 / 2"
        assert after["champion"]["rating"] > before["champion"]["rating"]      # a win moves it up
        assert after["erin"] == before["erin"]                                # not in the match
        assert page.locator("#ratings tr.me td.name").inner_text().startswith("dana")
        page.screenshot(path=str(shots(web) / "ratings.png"), full_page=True)

        # the match in dana's list and its replay, titled by players, game and date
        page.goto("/")
        row = page.locator("#past tr", has_text=rec["matchId"])
        title = row.locator("td.match-title").inner_text().replace(rec["matchId"], "").strip()
        assert re.match(TITLE_RE, title), title
        row.locator("a", has_text="replay").click()
        page.wait_for_selector("#boards svg.board")     # app.js has drawn the first step
        assert re.match(TITLE_RE, page.locator("h1#replay-title").inner_text()), page.locator("h1").inner_text()
        assert page.title() == page.locator("h1#replay-title").inner_text()
        assert page.locator("p.match-id").inner_text() == rec["matchId"]
        page.screenshot(path=str(shots(web) / "replay-title.png"), clip={"x": 0, "y": 0, "width": 1200, "height": 260})
    finally:
        page.context.close()


def test_the_ratings_page_without_a_name_and_its_link_from_every_page(web):
    """No name is needed to read the ratings; every page's header links them."""
    server, browser, _ = web
    ctx = browser.new_context(base_url=server.url)
    try:
        page = ctx.new_page()
        page.goto("/game?key=games/ticTacToe")
        page.click("#nav-ratings")
        page.wait_for_url("**/ratings")
        assert page.locator("#ratings tr.rating").count() >= 3
        assert page.locator("#ratings tr.me").count() == 0
    finally:
        ctx.close()
