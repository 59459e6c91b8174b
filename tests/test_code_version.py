"""Match records say which code played (agent.code_version, the server's ``x-code``)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from agent import code_version

ROOT = Path(__file__).resolve().parents[1]


def test_the_code_version_names_the_package_and_the_commit_of_a_checkout():
    v = code_version()
    package, _, commit = v.partition("+")
    assert package
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the version is the package's alone")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert commit.removesuffix("-dirty") and head.startswith(commit.removesuffix("-dirty")), (v, head)
