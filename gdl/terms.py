"""GDL terms as plain Python data.

A term is one of
  * ``str``   -- a constant (``"b"``, ``"100"``) or a variable (starts with ``?``);
  * ``tuple`` -- a compound ``(name, arg1, ..., argN)``; ``("f",)`` is the zero-argument
    function ``(f)``, which ggp-base's prover keeps apart from the constant ``f``.

Sentences (relation instances) use the same shapes.  Data, not classes: terms are
hashable, comparable, cheap, and pickle across processes.
"""
from __future__ import annotations

from typing import Iterator, Union

Term = Union[str, tuple]

# Words ggp-base folds to lower case wherever they stand (GdlPool.getConstant), and GDL-II's
# `sees` with them: Dresden's GameController sends whole sheets upper-cased.
FOLDED_KEYWORDS = frozenset(
    "init true next role does goal legal terminal base input random sees _".split())
# Body connectives, recognised in any case inside rule bodies only.
CONNECTIVES = frozenset(("not", "distinct", "or"))


def is_var(t: Term) -> bool:
    return isinstance(t, str) and t.startswith("?")


def is_ground(t: Term) -> bool:
    if isinstance(t, str):
        return not t.startswith("?")
    return all(is_ground(a) for a in t[1:])


def variables(t: Term, out: list | None = None) -> list:
    """Variables of ``t`` in first-occurrence order (no duplicates)."""
    if out is None:
        out = []
    if isinstance(t, str):
        if t.startswith("?") and t not in out:
            out.append(t)
    else:
        for a in t[1:]:
            variables(a, out)
    return out


def name(t: Term) -> str:
    return t if isinstance(t, str) else t[0]


def arity(t: Term) -> int:
    """Argument count; -1 for a bare constant, so ``f`` and ``(f)`` stay apart."""
    return -1 if isinstance(t, str) else len(t) - 1


def signature(t: Term) -> tuple[str, int]:
    return (name(t), arity(t))


def signature_text(sig: tuple[str, int]) -> str:
    n, a = sig
    return n if a < 0 else f"{n}/{a}"


def subterms(t: Term) -> Iterator[Term]:
    yield t
    if isinstance(t, tuple):
        for a in t[1:]:
            yield from subterms(a)


def render(t: Term) -> str:
    """Canonical text of the reference traces: ``(cell 1 1 b)``."""
    if isinstance(t, str):
        return t
    return "(" + " ".join(render(a) for a in t) + ")"


def render_spaced(t: Term) -> str:
    """ggp-base's ``toString``: ``( cell 1 1 b )`` (what managers send and records hold)."""
    if isinstance(t, str):
        return t
    return "( " + " ".join(render_spaced(a) for a in t) + " )"


def substitute(t: Term, theta: dict) -> Term:
    if isinstance(t, str):
        return theta.get(t, t) if t.startswith("?") else t
    return (t[0],) + tuple(substitute(a, theta) for a in t[1:])


def canonical_sorted(terms) -> list[Term]:
    """Sort as the reference traces do: by canonical text, Java String order (bytes for ASCII)."""
    return sorted(terms, key=render)
