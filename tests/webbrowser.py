"""Driving the web page in Debian's Chromium with pip playwright (no browser download):
shared by the browser tests and the screenshot script."""
from __future__ import annotations

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
