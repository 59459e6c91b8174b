"""The test tiers' tables in conftest.py (issue 53): every key names a test that exists, every
reason is said, and every test file keeps a test in the fast tier (``-m "not slow"``).

Read from the test files' source (ast), not by collecting the suite, so this stays instant."""
from __future__ import annotations

import ast
import functools

import pytest

from conftest import COVERED_BY, ONE_WORKER, ROOT, SERIAL, SLOW, covering_test, load_script, tier_reason

TESTS = ROOT / "tests"


@functools.cache
def _tests_by_file() -> dict[str, set[str]]:
    """Test file -> its test names (``name`` or ``Class::name``), from the source."""
    out = {}
    for path in sorted(TESTS.glob("test_*.py")):
        names = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                names |= {f"{node.name}::{f.name}" for f in node.body
                          if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and f.name.startswith("test")}
        out[path.name] = names
    return out


@pytest.mark.parametrize("table", ["SLOW", "SERIAL", "ONE_WORKER"])
def test_every_key_names_an_existing_test_and_says_why(table):
    tests = _tests_by_file()
    for key, why in {"SLOW": SLOW, "SERIAL": SERIAL, "ONE_WORKER": ONE_WORKER}[table].items():
        assert why.strip(), f"{table}[{key!r}] gives no reason"
        file, _, rest = key.rstrip("*").partition("::")
        assert file in tests, f"{table}[{key!r}]: no test file {file}"
        name = rest.split("[")[0]
        prefix = key.endswith("*") and "[" not in rest   # a prefix of test names
        if name:
            assert any(t == name or (prefix and t.startswith(name)) for t in tests[file]), \
                f"{table}[{key!r}]: no test {name} in {file}"


def test_every_test_file_keeps_a_fast_test():
    """A file's test counts as fast unless SLOW names it without parameters (a test whose
    parameters are only partly slow keeps the others fast).  A file SLOW names as a whole says
    there why none is kept; files without tests (helpers such as test_search_support.py) need
    none."""
    for file, names in _tests_by_file().items():
        if file in SLOW or not names:
            continue
        fast = [n for n in names if not tier_reason(SLOW, f"{file}::{n}")]
        assert fast, f"{file}: every test is slow; keep one in the fast tier, or mark the file"


def test_tier_keys_match_ids_as_documented():
    table = {"a.py::t": "x", "b.py": "y", "c.py::t[p-*": "z"}
    assert tier_reason(table, "a.py::t") == "x"
    assert tier_reason(table, "a.py::t[1]") == "x"
    assert tier_reason(table, "a.py::tt") is None
    assert tier_reason(table, "b.py::anything[2]") == "y"
    assert tier_reason(table, "bb.py::t") is None
    assert tier_reason(table, "c.py::t[p-q]") == "z"
    assert tier_reason(table, "c.py::t[r-q]") is None


def test_covered_tests_and_their_covers_exist():
    """COVERED_BY names existing tests on both sides, and fills the game into the cover's id."""
    tests = _tests_by_file()
    for prefix, cover in COVERED_BY.items():
        for key in (prefix, cover):
            file, _, rest = key.partition("::")
            assert rest.split("[")[0] in tests.get(file, ()), f"COVERED_BY: no test {key!r}"
        assert "{game}" in cover
    first = "test_conformance.py::test_first_steps_agree_with_the_reference_trace"
    assert covering_test(f"{first}[nonground-base/games/x/v0]") == \
        "test_conformance.py::test_whole_trace_agrees_with_the_reference_trace[nonground-base/games/x/v0]"
    assert covering_test(f"{first}[compiled-base/games/x/v0]") is None
    assert covering_test("test_tiers.py::test_tier_keys_match_ids_as_documented") is None


def test_the_tests_warm_up_names_existing_fast_tests():
    """scripts/warm_tests.py runs these before the suite for numba's cache: each must exist
    (a missing one compiles nothing) and be fast, not a slow test run twice."""
    tests = _tests_by_file()
    for key, why in load_script("warm_tests").WARM_TESTS.items():
        file, _, rest = key.partition("::")
        assert why.strip() and rest.split("[")[0] in tests.get(file, ()), f"WARM_TESTS: no test {key!r}"
        assert not tier_reason(SLOW, key), f"WARM_TESTS: {key} is slow"
