"""Log lines from hostile input: match ids, moves and rules come from the network.

A handler filter that escapes control characters (a match id with a newline forged log
lines; escape sequences reached the terminal) and shortens long string arguments (a 2 MiB
match id wrote 18 MiB of log) in every record, whichever logger wrote it.  Tracebacks
(``exc_info``) are formatted by the handler and left whole.
"""
from __future__ import annotations

import logging
import re

MAX_ARG = 500  # characters of one string argument (or message) in a log line
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(text: str, limit: int = MAX_ARG) -> str:
    if len(text) > limit:
        text = f"{text[:limit]}...({len(text)} characters)"
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class SafeArgs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(clean(a) if isinstance(a, str)
                                else clean(str(a)) if isinstance(a, BaseException) else a for a in args)
        elif isinstance(args, dict) and args:
            record.args = {k: clean(v) if isinstance(v, str) else v for k, v in args.items()}
        if isinstance(record.msg, str) and (len(record.msg) > MAX_ARG * 4 or _CONTROL.search(record.msg)):
            record.msg = clean(record.msg, MAX_ARG * 4)
        return True


def install() -> None:
    """Add the filter to every handler of the root logger (call after ``basicConfig``)."""
    for h in logging.getLogger().handlers:
        if not any(isinstance(f, SafeArgs) for f in h.filters):
            h.addFilter(SafeArgs())
