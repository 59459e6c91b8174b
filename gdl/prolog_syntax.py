"""GDL in Prolog syntax: reader and writer.

Some GDL (and GDL-II) sheets are written as Prolog clauses rather than KIF, e.g. pyggp's
``src/games/*.gdl``::

    role(bluffer).
    next(dealt(C)) :- colour(C), does(random, deal(C)).
    goal(R, 0) :- role(R), true(pile(size(0))), not true(control(R)).

``parse_prolog_rules`` reads such text into the same ``Description`` the KIF reader makes, so
everything downstream is unchanged:

* a name (``role``, ``'Odd'``) is a constant or a function/relation name, spelled as
  written (the KIF reader's keyword folding applies: ``'ROLE'`` is ``role``); an integer
  (``7``, ``-1``) is a constant; ``"text"`` is a constant too;
* a variable (a name starting with a capital or ``_``) ``X`` becomes ``?X``, the KIF spelling;
  each bare ``_`` is a fresh variable ``?_1``, ``?_2``, ... (numbers no variable of the clause
  uses);
* ``f()`` is the zero-argument function ``(f)``, as in KIF;
* bodies: ``,`` joins literals; ``not L``, ``not(L)`` and ``\\+ L`` are ``(not L)``;
  ``distinct(A, B)``, ``A \\= B`` and ``A \\== B`` are ``(distinct A B)``; ``L1 ; L2`` and
  ``or(L1, L2)`` are ``(or L1 L2)`` (each disjunct one literal: GDL's ``or`` has no
  conjunctions inside);
* ``h :- .`` is the fact ``h`` (pyggp's grammar allows it);
* ``%`` comments to the end of the line and ``/* ... */`` comments.

Anything else (lists, tuples, ``=``, directives, a missing ``.``) is a ``GdlError`` whose
``Problem``s carry line and column, like the KIF reader's.  ``render_prolog`` writes a
``Description`` back in this syntax (``parse_prolog_rules(render_prolog(d))`` is ``d`` up to
variable names and positions); ``render_kif_rules`` writes it as the one rules list a START
message carries.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .analysis import drop_state_dependent_hints
from .description import Description, GdlError, Problem, Rule
from .terms import CONNECTIVES, FOLDED_KEYWORDS, Term, render_spaced

_SYMBOL_CHARS = set("+-*/\\^<>=~:.?@#&$")
_SOLO = set("(),;|[]{}!")
_LAYOUT = " \t\n\x0b\f\r"
# A constant the KIF reader could read back as one token (what a quoted atom may hold).
_KIF_TOKEN = re.compile(r"[^\s();]+")
_PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*")
_INTEGER = re.compile(r"-?[0-9]+")
_PLAIN_VAR = re.compile(r"[A-Z_][A-Za-z0-9_]*")


# ---------------------------------------------------------------- syntax detection

def looks_like_prolog(text: str) -> bool:
    """Whether a rule sheet is written in Prolog syntax rather than KIF, by its first clause.

    KIF starts (after whitespace and ``;`` comments) with ``(``; Prolog syntax starts with a
    ``%`` or ``/*`` comment, a ``:-`` directive, or a name followed at once by ``(``, or by
    ``.`` or ``:-``.  Anything else (including an empty text) is left to the KIF reader."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _LAYOUT:
            i += 1
        elif c == ";":
            while i < n and text[i] not in "\r\n":
                i += 1
        else:
            break
    if i >= n or text[i] == "(":
        return False
    if text.startswith(("%", "/*", ":-"), i):
        return True
    m = re.compile(r"[a-z][A-Za-z0-9_]*|'(?:[^'\\\n]|\\.|'')*'").match(text, i)
    if not m:
        return False
    j = m.end()
    if j < n and text[j] == "(":
        return True
    while j < n and text[j] in " \t":
        j += 1
    return text.startswith(":-", j) or (text.startswith(".", j)
                                         and (j + 1 == n or text[j + 1] in _LAYOUT + "%"))


# ---------------------------------------------------------------- tokens

@dataclass(slots=True)
class _Tok:
    kind: str        # name, qname, var, num, str, punct, op, end, eof
    text: str        # the value (quoted names and strings without quotes and escapes)
    line: int
    col: int
    end_line: int
    end_col: int     # just after the token
    glued: bool      # no layout or comment between the previous token and this one

    def shown(self) -> str:
        if self.kind == "eof":
            return "the end of the file"
        if self.kind == "end":
            return "'.' (the end of the clause)"
        if self.kind == "qname":
            return "'" + self.text + "'"
        if self.kind == "str":
            return '"' + self.text + '"'
        return "'" + self.text + "'"


class _Lexer:
    def __init__(self, text: str, source: str):
        self.text, self.source = text, source
        self.i, self.line, self.line_start = 0, 1, 0

    def _err(self, msg: str, line: int, col: int):
        raise GdlError([Problem("error", msg, self.source, line, col)])

    def _advance_to(self, j: int):
        """Move to ``j``, counting the line ends passed (CR, LF and CR LF each end a line)."""
        t = self.text
        while self.i < j:
            c = t[self.i]
            self.i += 1
            if c == "\n" or (c == "\r" and not (self.i < len(t) and t[self.i] == "\n")):
                self.line += 1
                self.line_start = self.i

    def col(self) -> int:
        return self.i - self.line_start + 1

    def tokens(self) -> list[_Tok]:
        t, n = self.text, len(self.text)
        out: list[_Tok] = []
        glued = False
        while True:
            # layout and comments
            while self.i < n:
                c = t[self.i]
                if c in _LAYOUT:
                    self._advance_to(self.i + 1)
                elif c == "%":
                    j = self.i
                    while j < n and t[j] not in "\r\n":
                        j += 1
                    self._advance_to(j)
                elif t.startswith("/*", self.i):
                    j = t.find("*/", self.i + 2)
                    if j < 0:
                        self._err("a /* comment is never closed with */", self.line, self.col())
                    self._advance_to(j + 2)
                else:
                    break
                glued = False
            line, col = self.line, self.col()
            if self.i >= n:
                out.append(_Tok("eof", "", line, col, line, col, glued))
                return out
            c = t[self.i]
            start = self.i
            if c.isalpha() or c == "_" or c.isdigit():
                j = start + 1
                while j < n and (t[j].isalnum() or t[j] == "_"):
                    j += 1
                word = t[start:j]
                if c.isdigit():
                    if not word.isdigit():
                        self._err(f"{word} is neither a number nor a name (names start with a "
                                  f"lower-case letter); write it quoted: '{word}'", line, col)
                    kind = "num"
                elif c == "_" or c.isupper():
                    kind = "var"
                else:
                    kind = "name"
                self._advance_to(j)
                tok = _Tok(kind, word, line, col, self.line, self.col(), glued)
            elif c == "-" and start + 1 < n and t[start + 1].isdigit() and not (
                    out and glued and out[-1].kind in ("name", "qname", "var", "num", "str")
                    or out and out[-1].kind == "punct" and out[-1].text == ")"):
                j = start + 1
                while j < n and t[j].isdigit():
                    j += 1
                self._advance_to(j)
                tok = _Tok("num", t[start:j], line, col, self.line, self.col(), glued)
            elif c in "'\"":
                value, j = self._quoted(start, line, col)
                self._advance_to(j)
                tok = _Tok("qname" if c == "'" else "str", value, line, col, self.line, self.col(), glued)
            elif c in _SOLO:
                self._advance_to(start + 1)
                tok = _Tok("punct", c, line, col, self.line, self.col(), glued)
            elif c in _SYMBOL_CHARS:
                j = start
                while j < n and t[j] in _SYMBOL_CHARS:
                    j += 1
                sym = t[start:j]
                if sym == "." and (j == n or t[j] in _LAYOUT or t[j] == "%"):
                    kind = "end"
                elif sym.endswith(".") and (j == n or t[j] in _LAYOUT or t[j] == "%"):
                    # 'a \= b.': the final '.' ends the clause, whatever symbols stand before it
                    j -= 1
                    sym = sym[:-1]
                    kind = "op"
                else:
                    kind = "op"
                self._advance_to(j)
                tok = _Tok(kind, sym, line, col, self.line, self.col(), glued)
            else:
                self._err(f"unexpected character {c!r} (U+{ord(c):04X})", line, col)
            out.append(tok)
            glued = True

    def _quoted(self, start: int, line: int, col: int) -> tuple[str, int]:
        """The value of a quoted name or string starting at ``start``, and the index after it.
        Escapes: a doubled quote, and backslash before a quote, a backslash, n or t."""
        t, q = self.text, self.text[start]
        out, j, n = [], start + 1, len(self.text)
        while j < n:
            c = t[j]
            if c == q:
                if j + 1 < n and t[j + 1] == q:
                    out.append(q)
                    j += 2
                    continue
                return "".join(out), j + 1
            if c == "\\" and j + 1 < n:
                e = t[j + 1]
                out.append({"n": "\n", "t": "\t"}.get(e, e))
                j += 2
                continue
            if c in "\r\n":
                break
            out.append(c)
            j += 1
        what = "quoted name" if q == "'" else "string"
        self._err(f"a {what} opened here is never closed with {q} on its line", line, col)


# ---------------------------------------------------------------- clauses

class _Skip(Exception):
    """A clause with a syntax error: reported, and reading resumes after its '.'."""


def _fold(name: str) -> str:
    low = name.lower()
    return low if low in FOLDED_KEYWORDS else name


_FRESH = "?_\x00"   # placeholder prefix of anonymous variables, renamed when the clause ends


class _Parser:
    def __init__(self, toks: list[_Tok], source: str):
        self.toks, self.source = toks, source
        self.k = 0
        self.problems: list[Problem] = []
        self.open: list[_Tok] = []        # '(' not yet closed, innermost last
        self.fresh = 0

    # --------------------------------------------------------------- helpers
    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.k + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.toks[self.k]
        if tok.kind != "eof":
            self.k += 1
        return tok

    def is_punct(self, tok: _Tok, text: str) -> bool:
        return tok.kind == "punct" and tok.text == text

    def fail(self, tok: _Tok, msg: str):
        self.problems.append(Problem("error", msg, self.source, tok.line, tok.col))
        raise _Skip

    def unexpected(self, tok: _Tok, wanted: str):
        """An error at ``tok``; an unclosed parenthesis is named at its own position."""
        if tok.kind in ("end", "eof") and self.open:
            p = self.open[-1]
            where = "the clause ends" if tok.kind == "end" else "the file ends"
            self.fail(p, f"this parenthesis is never closed ({where} at line {tok.line}, column "
                         f"{tok.col})")
        if tok.kind == "eof":
            last = self.toks[self.k - 1] if self.k else tok
            self.problems.append(Problem(
                "error", f"the file ends inside a clause: {wanted} was expected (is the final '.' "
                         f"missing?)", self.source, last.end_line, last.end_col))
            raise _Skip
        self.fail(tok, f"expected {wanted}, found {tok.shown()}")

    def expect_close(self, wanted: str):
        tok = self.peek()
        if not self.is_punct(tok, ")"):
            self.unexpected(tok, wanted)
        self.take()
        self.open.pop()

    def open_paren(self) -> _Tok:
        tok = self.take()
        self.open.append(tok)
        return tok

    # --------------------------------------------------------------- terms
    def name_value(self, tok: _Tok) -> str:
        if tok.kind in ("qname", "str"):
            if not _KIF_TOKEN.fullmatch(tok.text) or tok.text.startswith("?"):
                self.fail(tok, f"the quoted constant {tok.shown()} cannot be a GDL constant: GDL "
                               f"constants are one word without spaces, parentheses, ';' or a "
                               f"leading '?'")
            return _fold(tok.text)
        return _fold(tok.text)

    def term(self) -> Term:
        tok = self.peek()
        if tok.kind == "var":
            self.take()
            if tok.text == "_":
                self.fresh += 1
                return f"{_FRESH}{self.fresh}"
            return "?" + tok.text
        if tok.kind == "num":
            self.take()
            return tok.text
        if tok.kind in ("name", "qname", "str"):
            self.take()
            name = self.name_value(tok)
            if tok.kind != "str" and self.is_punct(self.peek(), "("):
                return (name,) + tuple(self.arguments(name))
            return name
        if self.is_punct(tok, "("):
            self.fail(tok, "a parenthesised term such as (A, B) has no function name; GDL terms "
                           "are constants, variables or name(arguments)")
        if self.is_punct(tok, "["):
            self.fail(tok, "lists [...] are Prolog, not GDL; write a term such as "
                           "cons(Head, Tail)")
        if tok.kind == "op" and tok.text.startswith("?"):
            nxt = self.peek(1)
            shown = tok.text + (nxt.text if nxt.glued and nxt.kind in ("name", "var") else "")
            self.fail(tok, f"{shown} is a KIF variable; in Prolog syntax a variable starts "
                           f"with a capital letter or _ (X, _x)")
        self.unexpected(tok, "a term (a name, a number or a variable)")

    def arguments(self, name: str) -> list:
        opened = self.open_paren()
        args: list = []
        if self.is_punct(self.peek(), ")"):
            self.take()
            self.open.pop()
            return args
        while True:
            args.append(self.term())
            tok = self.peek()
            if self.is_punct(tok, ","):
                self.take()
                continue
            self.expect_close(f"',' or ')' in the arguments of {name} (opened at line "
                              f"{opened.line}, column {opened.col})")
            return args

    # --------------------------------------------------------------- bodies
    # A body parses to a list of (literal, line, col): a conjunction; a disjunction is one
    # ("or", ...) literal in it.  Prolog's priorities: not/\+ bind tighter than ',', which
    # binds tighter than ';'.
    def disjunction(self) -> list:
        parts = [self.conjunction()]
        while self.is_punct(self.peek(), ";"):
            self.take()
            nxt = self.peek()
            if nxt.kind in ("end", "eof") or (nxt.kind == "punct" and nxt.text in ",;)"):
                self.unexpected(nxt, "a literal after ';'")
            parts.append(self.conjunction())
        return self.disjunct_literals(parts)

    def disjunct_literals(self, parts: list) -> list:
        """``parts`` joined by ';': one ``or`` literal (or the only part)."""
        if len(parts) == 1:
            return parts[0]
        for p in parts:
            if len(p) != 1:
                _lit, line, col = p[0]
                self.problems.append(Problem(
                    "error", f"a disjunct of ';' is a conjunction of {len(p)} literals; GDL's or "
                             f"takes single literals (write a helper relation, or one rule per "
                             f"disjunct)", self.source, line, col))
                raise _Skip
        _lit, line, col = parts[0][0]
        return [(("or",) + tuple(p[0][0] for p in parts), line, col)]

    def conjunction(self) -> list:
        lits = self.unary()
        while self.is_punct(self.peek(), ","):
            self.take()
            lits = lits + self.unary()
        return lits

    def single(self, lits: list, tok: _Tok, what: str):
        if len(lits) != 1:
            self.fail(tok, f"{what} takes exactly one literal, found a conjunction of {len(lits)}")
        return lits[0][0]

    def unary(self) -> list:
        tok = self.peek()
        negation = (tok.kind == "op" and tok.text == "\\+") or (
            tok.kind == "name" and tok.text == "not" and not self.is_punct(self.peek(1), ",")
            and not (self.is_punct(self.peek(1), "(") and self.peek(1).glued))
        if negation:
            self.take()
            nxt = self.peek()
            if nxt.kind in ("end", "eof") or (nxt.kind == "punct" and nxt.text in ",;)"):
                self.unexpected(nxt, f"a literal after {tok.text}")
            inner = self.single(self.unary(), tok, tok.text)
            return [(("not", inner), tok.line, tok.col)]
        return self.primary()

    def primary(self) -> list:
        tok = self.peek()
        if self.is_punct(tok, "("):
            self.open_paren()
            inner = self.disjunction()
            self.expect_close(f"',', ';' or ')' (the parenthesis opened at line {tok.line}, "
                              f"column {tok.col})")
            if len(inner) == 1 and isinstance(inner[0][0], tuple) and inner[0][0][0] == "or":
                return [(inner[0][0], tok.line, tok.col)]
            return inner
        if tok.kind in ("name", "qname") and tok.text.lower() in CONNECTIVES and \
                self.is_punct(self.peek(1), "("):
            return [(self.connective_call(), tok.line, tok.col)]
        if tok.kind in ("end", "eof") or (tok.kind == "punct" and tok.text in ",;)"):
            self.unexpected(tok, "a literal")
        left = self.term()
        op = self.peek()
        if op.kind == "op" and op.text in ("\\=", "\\=="):
            self.take()
            return [(("distinct", left, self.term()), tok.line, tok.col)]
        if op.kind == "op" and op.text in ("=", "=="):
            self.fail(op, f"{op.text} is Prolog's equality; GDL has none (write the same "
                          f"variable twice, or not distinct(A, B))")
        if tok.kind == "var":
            self.fail(tok, f"a variable ({tok.text}) cannot be a literal")
        return [(left, tok.line, tok.col)]

    def connective_call(self):
        """``not(L)``, ``or(L1, ..., Ln)``, ``distinct(A, B)`` in functional notation."""
        tok = self.take()
        kw = tok.text.lower()
        opened = self.open_paren()
        args: list = []
        if self.is_punct(self.peek(), ")"):
            self.take()
            self.open.pop()
        else:
            while True:
                if kw == "distinct":
                    args.append(self.term())
                else:
                    inner_tok = self.peek()
                    args.append(self.single(self.disjunction_arg(), inner_tok, "each argument of " + kw))
                if self.is_punct(self.peek(), ","):
                    self.take()
                    continue
                self.expect_close(f"',' or ')' in the arguments of {kw} (opened at line "
                                  f"{opened.line}, column {opened.col})")
                break
        if kw == "not":
            if len(args) != 1:
                self.fail(tok, f"not takes exactly one literal, found {len(args)}")
            return ("not", args[0])
        if kw == "distinct":
            if len(args) != 2:
                self.fail(tok, f"distinct takes exactly two terms, found {len(args)}")
            return ("distinct", args[0], args[1])
        return ("or",) + tuple(args)

    def disjunction_arg(self) -> list:
        """One argument of ``or(...)``/``not(...)``: literals joined by ';' only (',' there
        separates arguments)."""
        parts = [self.unary()]
        while self.is_punct(self.peek(), ";"):
            self.take()
            parts.append(self.unary())
        return self.disjunct_literals(parts)

    # --------------------------------------------------------------- clauses
    def clause(self) -> Rule | None:
        start = self.peek()
        self.fresh = 0
        self.open = []
        if start.kind == "op" and start.text in (":-", "?-"):
            self.fail(start, f"a directive ({start.text} ...) is Prolog, not GDL; a sheet holds "
                             f"only facts and rules")
        if start.kind == "var":
            self.fail(start, f"a clause cannot start with a variable ({start.text}); a fact or "
                             f"rule head is a relation name with its arguments")
        if start.kind not in ("name", "qname"):
            self.unexpected(start, "a fact or rule (a relation name)")
        if start.text.lower() in ("not", "or") and start.kind == "name":
            self.fail(start, "a rule head must be an atomic sentence, not a negation or "
                             "disjunction")
        head = self.term()
        tok = self.peek()
        body: list = []
        if tok.kind == "op" and tok.text == ":-":
            self.take()
            if self.peek().kind != "end":   # pyggp's grammar reads 'h :- .' as the fact h
                body = self.disjunction()
        elif tok.kind != "end":
            if tok.kind in ("name", "qname", "var") and tok.line > start.line:
                self.fail(tok, f"expected '.' or ':-' after {render_prolog_term(head)}, found "
                               f"{tok.shown()}: is the '.' that ends the clause at line "
                               f"{start.line} missing?")
            self.unexpected(tok, f"'.' or ':-' after {render_prolog_term(head)}")
        end = self.peek()
        if end.kind != "end":
            if end.kind in ("name", "qname", "var") and end.line > self.toks[self.k - 1].line:
                self.fail(end, f"expected ',', ';' or '.' after a literal, found {end.shown()}: "
                               f"is the '.' that ends the clause at line {start.line} missing?")
            self.unexpected(end, "',', ';' or '.' after a literal")
        self.take()
        rule = Rule(head, tuple(lit for lit, _l, _c in body), start.line, start.col,
                    tuple((l, c) for _lit, l, c in body))
        return _name_fresh(rule) if self.fresh else rule

    def skip_clause(self):
        """After an error: past the next '.' (or to the end of the file)."""
        while True:
            tok = self.take()
            if tok.kind in ("end", "eof"):
                return

    def rules(self) -> list[Rule]:
        out: list[Rule] = []
        while self.peek().kind != "eof":
            here = self.k
            try:
                out.append(self.clause())
            except _Skip:
                self.skip_clause()
            except RecursionError:
                tok = self.toks[here]
                self.problems.append(Problem("error", "a term nested too deeply to read",
                                             self.source, tok.line, tok.col))
                self.skip_clause()
        return out


def _vars_of(t, out: set) -> set:
    if isinstance(t, str):
        if t.startswith("?"):
            out.add(t)
    else:
        for a in t[1:]:
            _vars_of(a, out)
    return out


def _name_fresh(rule: Rule) -> Rule:
    """Anonymous variables get names ``?_1``, ``?_2``, ... that no named variable of the
    clause has (a named ``_1`` is ``?_1`` too)."""
    used: set = set()
    for t in (rule.head,) + rule.body:
        _vars_of(t, used)
    names, k = {}, 0
    for v in sorted((v for v in used if v.startswith(_FRESH)), key=lambda v: int(v[len(_FRESH):])):
        k += 1
        while f"?_{k}" in used:
            k += 1
        names[v] = f"?_{k}"

    def sub(t):
        if isinstance(t, str):
            return names.get(t, t)
        return (t[0],) + tuple(sub(a) for a in t[1:])
    return Rule(sub(rule.head), tuple(sub(b) for b in rule.body), rule.line, rule.col, rule.body_pos)


def parse_prolog_rules(text: str, source: str = "<rules>") -> Description:
    """Read a whole sheet in Prolog syntax; raises GdlError with every problem found."""
    toks = _Lexer(text, source).tokens()
    p = _Parser(toks, source)
    rules = p.rules()
    if p.problems:
        raise GdlError(p.problems)
    rules, dropped = drop_state_dependent_hints(rules, source)
    return Description(rules, source, dropped)


# ---------------------------------------------------------------- writers

def _atom(name: str) -> str:
    if _PLAIN_ATOM.fullmatch(name) or _INTEGER.fullmatch(name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render_prolog_term(t: Term, names: dict | None = None) -> str:
    """A term in Prolog syntax; ``names`` maps KIF variables to Prolog ones."""
    if isinstance(t, str):
        if t.startswith("?"):
            return names[t] if names and t in names else _var_name(t)
        return _atom(t)
    return _atom(t[0]) + "(" + ", ".join(render_prolog_term(a, names) for a in t[1:]) + ")"


def _var_name(v: str) -> str:
    """A Prolog spelling of ``?v`` (may collide; ``render_prolog`` makes them unique)."""
    if v.startswith(_FRESH):   # an anonymous variable, shown in a message
        return "_"
    body = v[1:]
    if _PLAIN_VAR.fullmatch(body) and body != "_":   # a lone _ would be a fresh variable
        return body
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", body)
    if cleaned and cleaned[0].isalpha():
        return cleaned[0].upper() + cleaned[1:]
    return "V_" + cleaned


def _literal(lit, names: dict) -> str:
    if isinstance(lit, tuple) and lit[0] in CONNECTIVES:
        if lit[0] == "not":
            return "not " + _literal(lit[1], names)
        if lit[0] == "distinct":
            return "distinct(" + ", ".join(render_prolog_term(a, names) for a in lit[1:]) + ")"
        if len(lit) >= 3:
            return "(" + " ; ".join(_literal(d, names) for d in lit[1:]) + ")"
        return "or(" + ", ".join(_literal(d, names) for d in lit[1:]) + ")"   # (or) and (or a)
    return render_prolog_term(lit, names)


def _clause_names(rule: Rule) -> dict:
    used: set = set()
    for t in (rule.head,) + rule.body:
        _vars_of(t, used)
    names, taken = {}, set()
    for v in sorted(used):
        n = _var_name(v)
        base, k = n, 1
        while n in taken:
            k += 1
            n = f"{base}_{k}"
        taken.add(n)
        names[v] = n
    return names


def render_prolog(description: Description) -> str:
    """The rules of ``description`` in Prolog syntax, one clause a line."""
    lines = []
    for r in description.rules:
        names = _clause_names(r)
        head = render_prolog_term(r.head, names)
        if r.is_fact:
            lines.append(head + ".")
        else:
            lines.append(head + " :- " + ", ".join(_literal(b, names) for b in r.body) + ".")
    return "\n".join(lines) + ("\n" if lines else "")


def render_kif_rules(description: Description) -> str:
    """The rules as one KIF list, ggp-base's spacing, as a START message carries them:
    ``( ( role x ) ( <= ( legal ?r noop ) ( role ?r ) ) )``."""
    def rule(r: Rule) -> str:
        if r.is_fact:
            return render_spaced(r.head)
        return "( <= " + render_spaced(r.head) + " " + " ".join(render_spaced(b) for b in r.body) + " )"
    return "( " + " ".join(rule(r) for r in description.rules) + " )"
