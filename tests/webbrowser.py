"""Driving the web page in Debian's Chromium with pip playwright (no browser download):
shared by the browser tests and the screenshot script."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[1]


def missing() -> str | None:
    """Why a browser test cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "pip playwright is not installed (bash scripts/setup.sh installs it)"
    if not Path(CHROMIUM).is_file():
        return f"Chromium is not at {CHROMIUM} (apt-get install chromium)"
    return None


def launch(pw):
    return pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def require_browser() -> None:
    """In a test: skip where playwright or Chromium is missing; under CI (CI=true) fail."""
    import pytest   # here, not at the top: the screenshot script uses this module without pytest
    why = missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI: {why}")
        pytest.skip(why)


@contextlib.contextmanager
def web_and_browser(log_dir, games=(), env=None):
    """A web server (``WebServer``) and a headless Chromium, for a test module's fixture:
    ``(server, browser)``, both stopped on the way out."""
    from playwright.sync_api import sync_playwright
    server = WebServer(log_dir, games, env=env)
    pw = browser = None
    try:
        pw = sync_playwright().start()
        browser = launch(pw)
        yield server, browser
    finally:
        if browser is not None:
            browser.close()
        if pw is not None:
            pw.stop()
        server.stop()


def person_page(browser, url: str, name: str):
    """A new tab in its own browser context (closing the context closes the page), signed in
    on the start page as ``name``."""
    ctx = browser.new_context(base_url=url, viewport={"width": 1200, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.goto("/")
    pg.fill("#name", name)
    pg.click("#name-form button")
    pg.wait_for_selector("#person")
    return pg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebServer:
    """``ggp-persona web`` in a process of its own, on a free loopback port."""

    def __init__(self, log_dir, games=(), timeout: float = 120, extra=(), env=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-c", "import sys; from agent.cli import main; sys.exit(main(sys.argv[1:]))",
                "web", "--port", str(self.port), "--log-dir", str(log_dir)]
        for g in games:
            args += ["--games", str(g)]
        args += list(extra)
        env = dict(os.environ, **(env or {}))
        env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env)
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=5).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the web server did not start")
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def person_records(folder: Path, person: str, n: int = 6, seed: int = 0, game: str = "ticTacToe",
                   rules: Path | None = None) -> list:
    """``n`` finished matches of ``game`` (the project's rule sheet, or ``rules``) by
    ``person`` (a human who takes the first legal move in the rules' order, mostly) against a
    random persona, recorded as the page records them: ggp-base Match JSON with the rules,
    the person's name and ``isPlayerHuman``."""
    import random

    from agent.engine.loader import load_engine
    from agent.matchlog import rules_urn
    from gdl.kif import read_rules_file
    from gdl.terms import render
    from agent.match.rules import read_rules
    rules = Path(rules) if rules else ROOT / "games" / f"{game}.kif"
    text, _ = read_rules(rules.read_text())   # the rules list as START sends it
    eng = load_engine(read_rules_file(rules))
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        me = i % 2
        names = [person, "random"] if me == 0 else ["random", person]
        s, moves = eng.initial_state(), []
        while not eng.is_terminal(s):
            joint = []
            for r in range(2):
                legal = eng.legal_moves(s, r)
                joint.append(legal[0] if r == me and rng.random() < 0.9 else rng.choice(legal))
            moves.append([render(m) for m in joint])
            s = eng.next_state(s, joint)
        rec = {"matchId": f"web.{person}.{i:010x}.{game}", "playerNamesFromHost": names,
               "isPlayerHuman": [r == me for r in range(2)], "startTime": 1_700_000_000_000 + 60_000 * i,
               "moves": moves, "errors": [["", ""] for _ in moves], "isCompleted": True, "isAborted": False,
               "goalValues": [(g or [0])[0] for g in eng.goal_values(s)], "startClock": 10, "playClock": 5,
               "x-rules": text, "gameMetaURL": rules_urn(text)}
        path = folder / f"web.{person}.{i:010x}.{game}.json"
        path.write_text(json.dumps(rec))
        out.append(path)
    return out


# ------------------------------------------------------------------ a person's page
TURN_TIMEOUT_MS = 400_000      # the first persona move waits for its processes to warm up (up to 300 s)


def upload_sheet(page, path, text: str) -> None:
    """Write a rule sheet, upload it from the start page and wait for its game page."""
    path.write_text(text)
    page.goto("/")
    page.set_input_files("#rules-file", str(path))
    page.click("#upload-form button")
    page.wait_for_url("**/game?key=upload/*")


def start_match(page, key: str | None = None, role: int = 0, persona: str = "phlegmatic") -> None:
    """Start a match from the game page of ``key`` (None: the page already open)."""
    if key is not None:
        page.goto(f"/game?key={key}")
    page.select_option("#role", str(role))
    page.select_option("#persona", persona)
    page.fill("#play_clock", "1")
    page.fill("input[name=start_clock]", "5")
    page.click("#start")
    page.wait_for_url("**/play/*")


def wait_turn_or_end(page, clickable: str = ".cell.clickable", timeout_ms: int = TURN_TIMEOUT_MS) -> bool:
    """True when it is the person's turn (and ``clickable`` is there: the board's cells, or
    the move buttons), False at the end."""
    page.wait_for_function(
        "document.querySelector('#status').dataset.state === 'your-turn' && "
        f"document.querySelectorAll('{clickable}').length > 0 "
        "|| !document.querySelector('#result').hidden", timeout=timeout_ms)
    return page.locator("#result").is_hidden()
