"""Screenshots of the web page's boards, for docs/screenshots/ (regenerate after a change to
the drawing):

    .venv/bin/python scripts/web_screenshots.py [--games ../shared/corpus/games] [--out docs/screenshots]

Starts ``ggp-persona web`` on a free loopback port, opens each game's page in Debian's
Chromium after a few random moves (the page's preview) and saves the board area as PNG.  Games of the game repository are used when it
is given (chess, checkers and the board-of-boards nineBoardTicTacToe come from there).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.webbrowser import WebServer, launch, missing, person_records  # noqa: E402

# (file name, game key on the page, random plies played before the shot); keys under
# games/base/ need --games <corpus games>.
SHOTS = [
    ("ticTacToe", "games/ticTacToe", 4),
    ("connectFour", "games/connectFour", 11),
    ("breakthrough", "games/breakthrough", 10),
    ("nineBoardTicTacToe", "games/base/nineBoardTicTacToe", 12),
    ("checkers", "games/base/checkers", 8),
    ("chess", "games/base/chess", 6),
    ("hex", "games/base/hex", 10),
    ("no-grid-nim1", "games/base/nim1", 2),
]


def shoot_play(page, url: str, out: Path) -> None:
    """A ticTacToe match against a persona: two moves by clicking, then its advice."""
    page.goto(f"{url}/")
    page.fill("#name", "alice")
    page.click("#name-form button")
    page.goto(f"{url}/game?key=games/ticTacToe")
    page.select_option("#persona", "phlegmatic")
    page.fill("#play_clock", "1")
    page.click("#start")
    page.wait_for_url("**/play/*")
    for _ in range(2):
        page.wait_for_function("document.querySelector('#status').dataset.state === 'your-turn' && "
                               "document.querySelectorAll('.cell.clickable').length > 0", timeout=400_000)
        n = page.locator("#history li").count()
        page.locator(".cell.clickable").first.click()
        page.wait_for_function(f"document.querySelectorAll('#history li').length > {n}")
    page.wait_for_function("document.querySelector('#status').dataset.state === 'your-turn'", timeout=400_000)
    page.click("#advice-btn")
    page.wait_for_selector("#advice-table")
    page.screenshot(path=str(out / "play-ticTacToe.png"), full_page=True)
    print(f"wrote {out / 'play-ticTacToe.png'}")


def shoot_warnings(page, url: str, out: Path, tmp: Path) -> None:
    """An upload accepted with a warning (a relation used with two arities)."""
    sheet = tmp / "two-arities.kif"
    sheet.write_text((ROOT / "games" / "ticTacToe.kif").read_text()
                     + "\n(<= (foo ?x) (true (control ?x)))\n(<= (foo ?x ?y) (true (cell ?x ?y b)))\n"
                       "(<= terminal (foo 1))\n")
    page.goto(f"{url}/")
    page.set_input_files("#rules-file", str(sheet))
    page.click("#upload-form button")
    page.wait_for_selector("#warnings")
    page.screenshot(path=str(out / "upload-warnings.png"), full_page=True)
    print(f"wrote {out / 'upload-warnings.png'}")


def shoot_style(page, url: str, out: Path, logs: Path) -> None:
    """Learn my style: six recorded ticTacToe matches of a person, fitted with one click."""
    person_records(logs, "alice", 6)
    page.goto(f"{url}/")
    page.fill("#name", "alice")
    page.click("#name-form button")
    page.locator("#style-games tr", has_text="ticTacToe").locator(".learn-btn").click()
    page.wait_for_selector("#style-result", timeout=600_000)
    page.screenshot(path=str(out / "learn-my-style.png"), full_page=True)
    print(f"wrote {out / 'learn-my-style.png'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default=str(ROOT.parent / "shared" / "corpus" / "games"),
                    help="a game repository folder (default ../shared/corpus/games)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--only-style", action="store_true", help="only the learn-my-style result")
    args = ap.parse_args(argv)
    why = missing()
    if why:
        print(f"web_screenshots: {why}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright
    from rich.progress import track
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    games = [args.games] if Path(args.games).is_dir() else []
    with tempfile.TemporaryDirectory() as logs:
        server = WebServer(logs, games)
        try:
            with sync_playwright() as pw:
                browser = launch(pw)
                page = browser.new_page(viewport={"width": 1100, "height": 800})
                page.set_default_timeout(180_000)
                if args.only_style:
                    shoot_style(page, server.url, out, Path(logs))
                    browser.close()
                    return 0
                for name, key, plies in track(SHOTS, description="screenshots"):
                    target = out / f"{name}.png"
                    resp = page.goto(f"{server.url}/game?key={key}&preview={plies}")
                    if resp is None or resp.status != 200:
                        print(f"skip {name}: {key} not available ({resp.status if resp else 'no answer'})")
                        continue
                    box = page.locator(".layout").bounding_box()    # with a margin: the board's
                    pad = 12                                          # top row is not cut off
                    page.screenshot(path=str(target), full_page=True, clip={
                        "x": max(0, box["x"] - pad), "y": max(0, box["y"] - pad),
                        "width": box["width"] + 2 * pad, "height": box["height"] + 2 * pad})
                    print(f"wrote {target}")
                record = sorted((Path(args.games).parent / "matches" / "ggp-base-local-petewall"
                                 / "connectFour").glob("*/game1.json"))
                if record:   # the replay viewer on a recorded ggp-base match, half-way through
                    page.goto(f"{server.url}/")
                    page.set_input_files("#record-file", str(record[0]))
                    page.click("#replay-form button")
                    page.wait_for_selector("#step")
                    for _ in range(int(page.locator("#steps").inner_text()) // 2):
                        page.click("#next")
                    page.screenshot(path=str(out / "replay-connectFour.png"), full_page=True)
                    print(f"wrote {out / 'replay-connectFour.png'}")
                shoot_play(page, server.url, out)
                shoot_warnings(page, server.url, out, Path(logs))
                shoot_style(page, server.url, out, Path(logs))
                browser.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
