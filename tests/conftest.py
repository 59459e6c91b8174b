"""Shared test helpers.

``SHARED`` is the project's shared material (rule-sheet corpus, reference traces), kept beside
the clone as ``../shared``.  Tests that need it use the ``shared_dir`` fixture or the
``needs_shared`` mark, and are skipped, with the reason below, when it is absent.
"""
from __future__ import annotations

import importlib.util
import os
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


# ----------------------------------------------------------------------------- test tiers
# The markers of the two tiers, applied here and nowhere else (issue 53):
#
# * ``slow``: left out of the fast tier, ``bash scripts/setup.sh test -m "not slow"`` (at most
#   about 3 minutes on 2 cores, every test file still represented);
# * ``serial``: cannot run beside other tests; ``scripts/setup.sh test`` runs these alone after
#   the others ran side by side (pytest-xdist), and keeps their reason here.
#
# Keys are test ids relative to tests/: a file, a test (every parameter of it) or one
# parameter; a key ending in ``*`` is a prefix of the ids it marks.  Seconds are the test's
# measured durations (docs/benchmarks/tests.md; a loaded machine, so read them relatively).
SLOW: dict[str, str] = {
}

SERIAL: dict[str, str] = {
}

# Test files whose tests share an expensive module-scope fixture (a server process, a fitted
# model, engines for the whole file): their tests stay on one worker (``--dist loadgroup``),
# so the fixture is built once, as in a serial run.
ONE_WORKER: dict[str, str] = {
}


def tier_reason(table: dict, nodeid: str) -> str | None:
    """The reason ``table`` gives for the test ``nodeid`` (relative to tests/), or None."""
    for key, why in table.items():
        if key.endswith("*"):
            if nodeid.startswith(key[:-1]):
                return why
        elif nodeid == key or (nodeid.startswith(key) and nodeid[len(key)] in ":["):
            return why
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: left out of the fast tier (-m 'not slow'); "
                                       "why: tests/conftest.py SLOW")
    config.addinivalue_line("markers", "serial: runs alone, not beside other tests; "
                                       "why: tests/conftest.py SERIAL")


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups (``--dist loadgroup``)
def pytest_collection_modifyitems(config, items):
    for item in items:
        nodeid = item.nodeid.removeprefix("tests/")
        why = tier_reason(SLOW, nodeid)
        if why:
            item.add_marker(pytest.mark.slow(reason=why))
        why = tier_reason(SERIAL, nodeid)
        if why:
            item.add_marker(pytest.mark.serial(reason=why))
        if tier_reason(ONE_WORKER, nodeid):
            item.add_marker(pytest.mark.xdist_group(nodeid.split("::")[0]))
    # scripts/setup.sh runs the suite in two passes: side by side, then the serial tests alone
    keep_serial = {"parallel": False, "serial": True}.get(os.environ.get("GGP_TEST_PASS", ""))
    if keep_serial is not None:
        kept = [i for i in items if (i.get_closest_marker("serial") is not None) == keep_serial]
        dropped = [i for i in items if (i.get_closest_marker("serial") is not None) != keep_serial]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
