"""scripts/benchrows.py: benchmark rows kept compressed under docs/ (issue 53), read and written
by the scripts that measure, with the .jsonl names the committed reports' commands give."""
from __future__ import annotations

import gzip
import json

from conftest import load_script


def _rows(tmp_path, monkeypatch):
    rows = load_script("benchrows")
    monkeypatch.setattr(rows, "DOCS", tmp_path / "docs")
    return rows


def test_a_jsonl_name_under_docs_means_the_compressed_file(tmp_path, monkeypatch):
    rows = _rows(tmp_path, monkeypatch)
    named = tmp_path / "docs" / "benchmarks" / "x.jsonl"
    with rows.append(named) as out:
        out.add({"game": "a"})
        out.write(json.dumps({"game": "b"}) + "\n")
    packed = named.with_name("x.jsonl.gz")
    assert not named.exists() and packed.is_file()
    assert [json.loads(x) for x in gzip.open(packed, "rt")] == [{"game": "a"}, {"game": "b"}]
    assert rows.read(named) == rows.read(packed) == [{"game": "a"}, {"game": "b"}]
    assert rows.glob(named.parent, "*.jsonl") == [named]
    # elsewhere a plain file, as before; a plain file under docs is read as it is
    plain = tmp_path / "elsewhere.jsonl"
    rows.write(plain, [{"k": 1}])
    assert plain.read_text() == '{"k": 1}\n' and rows.read(plain) == [{"k": 1}]
    old = tmp_path / "docs" / "old.jsonl"
    old.write_text('{"k": 2}\n')
    assert rows.read(old) == [{"k": 2}] and rows.resolve(old) == old


def test_a_run_cut_short_keeps_its_rows_and_the_next_one_appends_after_them(tmp_path, monkeypatch):
    rows = _rows(tmp_path, monkeypatch)
    named = tmp_path / "docs" / "r.jsonl"
    rows.write(named, [{"i": 0}, {"i": 1}])
    left_open = rows.append(named)          # a run killed while it measures: no stream end
    left_open.add({"i": 2})
    assert rows.read(named) == [{"i": 0}, {"i": 1}, {"i": 2}]
    packed = rows.resolve(named)
    packed.write_bytes(packed.read_bytes()[:-3])    # and a torn last write
    kept = rows.read(named)
    assert kept[:2] == [{"i": 0}, {"i": 1}]
    with rows.append(named) as out:          # the next run repairs the stream, then appends
        out.add({"i": 3})
    assert rows.read(named) == kept + [{"i": 3}]
    assert not list(packed.parent.glob("*.tmp"))
