"""ggp-persona: a General Game Playing agent with a character."""
from __future__ import annotations

import functools
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Which code this is, for match records: the package version, and when it runs from a
    git checkout the commit (``-dirty`` with uncommitted changes).  A benchmark run's records
    then say which code played: a server started from one checkout with another on its path
    runs the checkout its module path finds first (``python -m`` puts the current folder first)."""
    try:
        v = version("ggp-persona")
    except PackageNotFoundError:
        v = "unknown"
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=7",
                              "--exclude", "*"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            v += "+" + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass            # not a checkout, or no git: the package version alone
    return v
