"""A rule sheet as data, whatever its syntax: rules, the whole description, and the problems
found in it (with file, line and column).  The readers (``kif.py``, ``prolog_syntax.py``)
make these, and the analysis, the validator and every reasoner read them; they live here so
that no reader and no checker has to import another to share them."""
from __future__ import annotations

from dataclasses import dataclass, field

from .terms import Term


@dataclass(frozen=True)
class Problem:
    """One finding about a rule file: ``level`` is ``error`` or ``warning``."""
    level: str
    message: str
    source: str = "<rules>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.col}" if self.line else self.source
        return f"{where}: {self.level}: {self.message}"


class GdlError(Exception):
    """Rules that cannot be read or played; ``problems`` says why and where."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@dataclass(frozen=True)
class Rule:
    """``head <= body``; a fact has an empty body.

    Body literals: a sentence term, ``("not", lit)``, ``("distinct", t1, t2)`` or
    ``("or", lit, ...)`` (the connective names are always lower case here).
    """
    head: Term
    body: tuple = ()
    line: int = 0
    col: int = 0
    body_pos: tuple = field(default=(), compare=False)

    @property
    def is_fact(self) -> bool:
        return not self.body


@dataclass
class Description:
    rules: list
    source: str = "<rules>"
    warnings: list = field(default_factory=list)  # reader-level warnings

    @property
    def roles(self) -> list:
        """Arguments of top-level ``(role x)`` facts in textual order (ggp-base's rule)."""
        return [r.head[1] for r in self.rules
                if r.is_fact and isinstance(r.head, tuple) and r.head[0] == "role" and len(r.head) == 2]
