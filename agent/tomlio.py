"""TOML in one place: read with the standard library's ``tomllib`` (Python 3.11+) or its
backport ``tomli`` on 3.10 (the same parser, a dependency only there), write with ``tomli_w``
(a well-kept writer; the hand-written one it replaced corrupted keys holding a backslash)."""
from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import tomli_w

TOMLDecodeError = tomllib.TOMLDecodeError


def loads(text: str) -> dict:
    """Parse TOML text; raises TOMLDecodeError with the position."""
    return tomllib.loads(text)


def load_file(path) -> dict:
    """Parse a TOML file (read as UTF-8 bytes, as TOML requires); OSError when unreadable."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def dumps(data: dict) -> str:
    """TOML text for ``data`` (tables after plain keys; tuples are written as arrays)."""
    return tomli_w.dumps(data)
