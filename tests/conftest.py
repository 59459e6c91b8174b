"""Shared test helpers.

``SHARED`` is the project's shared material (rule-sheet corpus, reference traces), kept beside
the clone as ``../shared``.  Tests that need it use the ``shared_dir`` fixture or the
``needs_shared`` mark, and are skipped, with the reason below, when it is absent.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_MISSING = "../shared (corpus and reference traces) is not beside this clone; CI has it"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_MISSING)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` directory; skips the test when it is not beside the clone."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    return SHARED


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def load_script(name: str):
    """``scripts/NAME.py`` as a module (scripts are not a package), for tests of the scripts
    that reproduce committed reports."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def refusal_kind(message: str) -> str:
    """A validator error message reduced to its kind, for tables of expected refusals."""
    if message.startswith("unsafe rule"):
        return "unsafe rule"
    if message.startswith("the fact") and "variable" in message:
        return "variables in a fact"
    if message.startswith("recursion restriction"):
        return "recursion restriction"
    return message


@pytest.fixture
def no_decisive(monkeypatch):
    """Live-play searches without decisive and anti-decisive moves (a live-play deviation of
    issue #34, on a compiled engine only): for tests of the spec's own parameters, and of the
    two drivers alike where one runs on Prolog, which gets none."""
    from agent.search import driver_compiled, driver_sm, params

    def build(*args, **kw):
        p, rp = params.build(*args, **kw)
        p[params.P_DECISIVE] = 0.0
        return p, rp

    monkeypatch.setattr(driver_compiled, "build", build)
    monkeypatch.setattr(driver_sm, "build", build)
