"""Benchmark rows: JSON lines, one per measurement, kept gzip-compressed under docs/.

The scripts that measure write their rows here and read them back (to resume, and to write
their report), through ``benchrows.read``, ``append`` and ``write``.  A path given as
``X.jsonl`` means ``X.jsonl.gz`` when that file exists, or when it lies under ``docs/`` and
no plain ``X.jsonl`` is there (the repository keeps its report folders under 1 MB, issue 53),
so the commands written in the committed reports, which name ``.jsonl`` files, still run.  Elsewhere (``--out /tmp/x.jsonl``)
a plain file is written, as before.

A run cut short (Ctrl-C, a crash) leaves a compressed stream without its end: reading keeps
every whole row before the cut, and the next append rewrites the file whole first, so that
later rows are readable too.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import zlib
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _under_docs(p: Path) -> bool:
    try:
        p.resolve().relative_to(DOCS)
        return True
    except ValueError:
        return False


def resolve(path) -> Path:
    """The file a rows path means (see the module's docstring)."""
    p = Path(path)
    if p.name.endswith(".jsonl"):
        gz = p.with_name(p.name + ".gz")
        if gz.exists() or (not p.exists() and _under_docs(p)):
            return gz
    return p


def exists(path) -> bool:
    return resolve(path).exists()


def _open(p: Path, mode: str, gz: bool | None = None):
    """``p`` opened as text; compressed when its name ends in .gz (or ``gz`` says so)."""
    if p.name.endswith(".gz") if gz is None else gz:
        return gzip.open(p, mode + "t", encoding="utf-8")
    return open(p, mode, encoding="utf-8")


def _read(p: Path) -> tuple[list, bool]:
    """(rows, whole): the rows of ``p``; ``whole`` is False when the file was cut short (a
    stream without its end, or a last line half written)."""
    rows, whole = [], True
    try:
        with _open(p, "r") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    whole = False       # a row half written: only the last can be
    except (EOFError, gzip.BadGzipFile, zlib.error):
        whole = False
    return rows, whole


def read(path) -> list:
    """Every row of the file (none when it does not exist)."""
    p = resolve(path)
    return _read(p)[0] if p.exists() else []


def write(path, rows) -> Path:
    """The file holds exactly ``rows`` (written to a temporary file, then renamed)."""
    p = resolve(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with _open(tmp, "w", gz=p.name.endswith(".gz")) as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, p)
    return p


class Appender:
    """Rows appended one at a time, each flushed to the file as it comes (a run that stops
    keeps what it measured).  Use as a context manager: ``with benchrows.append(path) as out:
    out.add(row)``."""

    def __init__(self, path):
        self.path = resolve(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            rows, whole = _read(self.path)
            if not whole:           # a cut stream first: rewrite it whole
                write(self.path, rows)
        self.f = _open(self.path, "a")

    def add(self, row) -> None:
        self.write(json.dumps(row) + "\n")

    def write(self, text: str) -> None:
        """Whole lines of JSON, as a file opened for appending takes them."""
        self.f.write(text)
        self.f.flush()

    def flush(self) -> None:
        self.f.flush()

    def close(self) -> None:
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def append(path) -> Appender:
    return Appender(path)


def glob(folder, pattern: str) -> list:
    """Rows files matching ``pattern`` (a ``*.jsonl`` pattern) in ``folder``, compressed or
    not, each once (its ``.jsonl`` name)."""
    folder = Path(folder)
    found = {p.with_name(p.name[:-3]) if p.name.endswith(".gz") else p
             for p in list(folder.glob(pattern)) + list(folder.glob(pattern + ".gz"))}
    return sorted(found)


def code_version(root, dirty_paths: tuple = ()) -> str:
    """The commit a benchmark's rows are labelled with: a frozen copy's ``COMMIT`` file, else
    the checkout's HEAD, with ``-dirty`` when ``dirty_paths`` (folders of ``root``) differ
    from it; "unknown" without git."""
    f = Path(root) / "COMMIT"
    if f.exists():
        return f.read_text().strip()
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
        if dirty_paths and subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *dirty_paths],
                                          cwd=root, timeout=10).returncode:
            head += "-dirty"
        return head
    except (OSError, subprocess.SubprocessError):
        return "unknown"
