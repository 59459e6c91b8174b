"""KIF reader: text -> s-expressions (with positions) -> GDL rules.

Reads exactly as ggp-base does (see the reference README): ``;`` starts a comment to the
end of the line, ``(`` and ``)`` are tokens, everything else splits on Java ``\\s``
whitespace; a token starting with ``?`` is a variable; the twelve folded keywords become
lower case wherever they stand; ``not``/``distinct``/``or`` are connectives in rule bodies
in any case; ``<=`` is matched exactly.  Errors carry file, line and column.
"""
from __future__ import annotations

from dataclasses import dataclass

from .analysis import drop_state_dependent_hints
# The sheet's data types: defined in description.py, read from here too by most callers.
from .description import Description, GdlError, Problem, Rule  # noqa: F401
from .prolog_syntax import looks_like_prolog, parse_prolog_rules
from .terms import CONNECTIVES, FOLDED_KEYWORDS, Term

_WHITESPACE = " \t\n\x0b\f\r"


@dataclass(slots=True)
class Node:
    """An s-expression: an atom (``text`` set) or a list (``items`` set)."""
    text: str | None
    items: list | None
    line: int
    col: int

    @property
    def is_atom(self) -> bool:
        return self.items is None

    def __repr__(self) -> str:
        return self.text if self.items is None else "(" + " ".join(map(repr, self.items)) + ")"


# ---------------------------------------------------------------- bytes and tokens

def decode_bytes(data: bytes, source: str = "<rules>") -> str:
    """UTF-8 text, or a GdlError naming the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start]
        line = head.count(b"\n") + 1
        col = e.start - (head.rfind(b"\n") + 1) + 1
        raise GdlError([Problem("error", f"byte 0x{data[e.start]:02X} is not valid UTF-8 text "
                                         f"(rule files must be ASCII or UTF-8)", source, line, col)])


def tokenize(text: str, source: str = "<rules>", comments: bool = True):
    """Yield ``(token, line, col)``; positions are 1-based."""
    line, i, n, line_start = 1, 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            line_start = i
        elif c == "\r":  # CR and CR LF both end a line
            i += 1
            if i < n and text[i] == "\n":
                i += 1
            line += 1
            line_start = i
        elif c in _WHITESPACE:
            i += 1
        elif c == ";" and comments:
            while i < n and text[i] not in "\r\n":
                i += 1
        elif c in "()":
            yield c, line, i - line_start + 1
            i += 1
        else:
            j = i
            while j < n and text[j] not in _WHITESPACE and text[j] not in "()" and not (comments and text[j] == ";"):
                j += 1
            yield text[i:j], line, i - line_start + 1
            i = j


def read_nodes(text: str, source: str = "<rules>", comments: bool = True) -> list[Node]:
    """All top-level s-expressions of ``text``."""
    stack: list[Node] = []
    top: list[Node] = []
    for tok, line, col in tokenize(text, source, comments):
        if tok == "(":
            stack.append(Node(None, [], line, col))
        elif tok == ")":
            if not stack:
                raise GdlError([Problem("error", "unmatched closing parenthesis", source, line, col)])
            node = stack.pop()
            (stack[-1].items if stack else top).append(node)
        else:
            node = Node(tok, None, line, col)
            (stack[-1].items if stack else top).append(node)
    if stack:
        n = stack[-1]
        raise GdlError([Problem("error", "unmatched opening parenthesis (the expression is never closed)",
                                source, n.line, n.col)])
    return top


def read_first(text: str) -> Node | None:
    """The first complete s-expression (protocol messages: trailing text is ignored).

    Unlike a rule file, a message has no comments: ``;`` is an ordinary character.
    """
    depth = 0
    stack: list[Node] = []
    for tok, line, col in tokenize(text, "<message>", comments=False):
        if tok == "(":
            stack.append(Node(None, [], line, col))
            depth += 1
        elif tok == ")":
            if not stack:
                raise GdlError([Problem("error", "unmatched closing parenthesis", "<message>", line, col)])
            node = stack.pop()
            if not stack:
                return node
            stack[-1].items.append(node)
        else:
            node = Node(tok, None, line, col)
            if not stack:
                return node
            stack[-1].items.append(node)
    if stack:
        raise GdlError([Problem("error", "unmatched opening parenthesis", "<message>",
                                stack[-1].line, stack[-1].col)])
    return None


# ---------------------------------------------------------------- nodes -> terms

def _fold(tok: str) -> str:
    low = tok.lower()
    return low if low in FOLDED_KEYWORDS else tok


class _Builder:
    def __init__(self, source: str):
        self.source = source
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def err(self, node: Node, msg: str):
        self.problems.append(Problem("error", msg, self.source, node.line, node.col))

    def term(self, node: Node) -> Term | None:
        if node.is_atom:
            return node.text if node.text.startswith("?") else _fold(node.text)
        if not node.items:
            self.err(node, "empty list () is not a term")
            return None
        head = node.items[0]
        if not head.is_atom:
            self.err(node, "consecutive opening parentheses: a function or relation name must be "
                           "a constant, not a list")
            return None
        if head.text.startswith("?"):
            self.err(head, f"variable {head.text} used as a function or relation name "
                           f"(GDL is first-order: names must be constants)")
            return None
        args = [self.term(a) for a in node.items[1:]]
        if any(a is None for a in args):
            return None
        return (_fold(head.text),) + tuple(args)

    def literal(self, node: Node):
        if node.is_atom:
            if node.text.startswith("?"):
                self.err(node, f"a variable ({node.text}) cannot be a literal")
                return None
            return _fold(node.text)
        if node.items and node.items[0].is_atom and node.items[0].text.lower() in CONNECTIVES:
            kw = node.items[0].text.lower()
            args = node.items[1:]
            if kw == "not":
                if len(args) != 1:
                    self.err(node, f"not takes exactly one literal, found {len(args)}")
                    return None
                inner = self.literal(args[0])
                return None if inner is None else ("not", inner)
            if kw == "distinct":
                if len(args) != 2:
                    self.err(node, f"distinct takes exactly two terms, found {len(args)}")
                    return None
                terms = [self.term(a) for a in args]
                return None if None in terms else ("distinct", terms[0], terms[1])
            lits = [self.literal(a) for a in args]
            return None if None in lits else ("or",) + tuple(lits)
        return self.term(node)

    def rule(self, node: Node) -> Rule | None:
        if node.is_atom:
            if node.text.startswith("?"):
                self.err(node, f"variable {node.text} stands alone at top level; variables may "
                               f"only appear within rules")
                return None
            return Rule(_fold(node.text), (), node.line, node.col)
        items = node.items
        if not items:
            self.err(node, "empty list () at top level is not a sentence")
            return None
        if items[0].is_atom and items[0].text == "<=":
            if len(items) < 2:
                self.err(node, "rule (<= ...) without a head")
                return None
            hnode = items[1]
            if (not hnode.is_atom and hnode.items and hnode.items[0].is_atom
                    and hnode.items[0].text.lower() in ("not", "or")):
                self.err(hnode, "a rule head must be an atomic sentence, not a negation or disjunction")
                return None
            if hnode.is_atom and hnode.text.startswith("?"):
                self.err(hnode, "a rule head cannot be a variable")
                return None
            head = self.term(hnode)
            body = [self.literal(b) for b in items[2:]]
            if head is None or any(b is None for b in body):
                return None
            if not body:
                self.warnings.append(Problem(
                    "warning", "rule with an empty body; read as a fact", self.source, node.line, node.col))
            return Rule(head, tuple(body), node.line, node.col,
                        tuple((b.line, b.col) for b in items[2:]))
        t = self.term(node)
        return None if t is None else Rule(t, (), node.line, node.col)


def _depth(node: Node) -> int:
    """Nesting depth of parentheses, without recursion."""
    deepest, todo = 0, [(node, 1)]
    while todo:
        n, d = todo.pop()
        if n.items is not None:
            deepest = max(deepest, d)
            todo.extend((c, d + 1) for c in n.items)
    return deepest


def _too_deep(b: _Builder, node: Node) -> None:
    # The builder recurses once per level; without this a deeply nested expression escaped as a
    # bare RecursionError with no position (found by tests/test_kif.py).
    b.err(node, f"expression nested {_depth(node):,} parentheses deep: too deep to read")


def rules_from_nodes(nodes: list[Node], source: str = "<rules>") -> Description:
    b = _Builder(source)
    rules = []
    for n in nodes:
        try:
            r = b.rule(n)
        except RecursionError:
            _too_deep(b, n)
            r = None
        if r is not None:
            rules.append(r)
    if b.problems:
        raise GdlError(b.problems)
    # base/input rules that depend on the state: dropped with a warning (hints, not the game)
    rules, dropped = drop_state_dependent_hints(rules, source)
    return Description(rules, source, b.warnings + dropped)


def syntax_of(text: str) -> str:
    """``"prolog"`` for a sheet written as Prolog clauses (``role(a).``, ``h :- b.``), else
    ``"kif"``; decided by how the sheet starts (``gdl/prolog_syntax.py``)."""
    return "prolog" if looks_like_prolog(text) else "kif"


def parse_rules(text: str, source: str = "<rules>") -> Description:
    """Parse a whole rule sheet, KIF or Prolog syntax (``syntax_of``); raises GdlError with
    every syntax problem found.  A START message's rules are always KIF
    (``rules_from_nodes``); the Prolog syntax is for files."""
    if syntax_of(text) == "prolog":
        return parse_prolog_rules(text, source)
    return rules_from_nodes(read_nodes(text, source), source)


def read_rules_file(path) -> Description:
    with open(path, "rb") as f:
        data = f.read()
    return parse_rules(decode_bytes(data, str(path)), str(path))


def parse_term(text: str) -> Term:
    """One ground term from protocol or record text, e.g. ``( mark 1 1 )`` or ``noop``."""
    node = read_first(text)
    if node is None:
        raise GdlError([Problem("error", "empty text where a term was expected", "<term>")])
    b = _Builder("<term>")
    try:
        t = b.term(node)
    except RecursionError:
        _too_deep(b, node)
        t = None
    if t is None:
        raise GdlError(b.problems)
    return t
