"""GDL-II front end: KIF and Prolog-syntax sheets through one reader, and GDL-II's restrictions.

* Every GDL-II sheet of the shared corpus reads as KIF and checks with 0 errors and the
  warnings its SOURCES.md lists.
* Prolog syntax (``gdl/prolog_syntax.py``, pyggp's ``role(a).`` / ``h :- b.``) reads into the same
  ``Description``: the corpus sheets written back in Prolog syntax read as the KIF ones (up to
  variable names), and three sheets written by hand in Prolog syntax under ``tests/data/gdl2``
  play exactly as the corpus' KIF sheets on the Prolog reasoner (initial state, legal moves,
  next states, percepts, goals along random walks).
* Bad Prolog syntax is a ``GdlError`` naming line and column; GDL-II's restrictions (``sees``
  only in heads, with two arguments) are validator errors with positions.
* ``ggp-persona check`` and the match runner's ``read_rules`` take Prolog-syntax files.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from agent.cli import main
from agent.match.rules import read_rules
from agent.matchtext import parse_rules_text
from gdl.gdl2 import is_gdl2
from gdl.kif import GdlError, parse_rules, read_rules_file, syntax_of
from gdl.prolog_syntax import parse_prolog_rules, render_kif_rules, render_prolog
from gdl.validate import validate

from conftest import ROOT, SHARED

DATA = ROOT / "tests" / "data" / "gdl2"
CORPUS = SHARED / "corpus" / "gdl2"
SHEETS = ("battleship", "hidden_goofspiel", "kuhn_poker", "minipoker", "nim", "phantom_connect_4x4",
          "phantom_connect_5x5", "rock_paper_scissors")
# corpus/gdl2/SOURCES.md, "Checked as GDL": the warnings of each sheet, left as pyggp wrote them
EXPECTED_WARNINGS = {"battleship": 6, "phantom_connect_4x4": 1, "phantom_connect_5x5": 1}
# the hand-written Prolog-syntax sheets and the corpus sheet each plays as
HAND_WRITTEN = {"rock_paper_scissors.pl": "rock_paper_scissors", "nim.gdl": "nim",
                "kuhn_poker.pl": "kuhn_poker"}
# corpus sheets small enough for the Prolog reasoner in a test (battleship takes minutes)
WALKED = ("hidden_goofspiel", "kuhn_poker", "minipoker", "nim", "phantom_connect_4x4",
          "rock_paper_scissors")


def corpus_sheet(shared_dir: Path, name: str) -> Path:
    return shared_dir / "corpus" / "gdl2" / f"{name}.kif"


def canonical(desc) -> list:
    """The rules without positions, each rule's variables renamed by first occurrence: two
    readings of the same rules compare equal whatever their variables are called."""
    out = []
    for r in desc.rules:
        names: dict = {}

        def sub(t):
            if isinstance(t, str):
                return names.setdefault(t, f"?v{len(names)}") if t.startswith("?") else t
            return (t[0],) + tuple(sub(a) for a in t[1:])
        out.append((sub(r.head), tuple(sub(b) for b in r.body)))
    return out


def levels(problems) -> tuple:
    return (sum(p.level == "error" for p in problems), sum(p.level == "warning" for p in problems))


def error_of(text: str, source: str = "bad.pl"):
    with pytest.raises(GdlError) as info:
        parse_rules(text, source)
    problems = info.value.problems
    assert problems and all(p.level == "error" for p in problems)
    return problems[0]


# ============================================================== the corpus, as KIF and back

@pytest.mark.parametrize("name", SHEETS)
def test_every_corpus_gdl2_sheet_reads_as_kif_with_the_documented_warnings(shared_dir, name):
    path = corpus_sheet(shared_dir, name)
    assert syntax_of(path.read_text(encoding="utf-8")) == "kif"
    desc = read_rules_file(path)
    assert is_gdl2(desc) and desc.roles
    assert levels(validate(desc)) == (0, EXPECTED_WARNINGS.get(name, 0))


@pytest.mark.parametrize("name", SHEETS)
def test_corpus_sheets_written_in_prolog_syntax_read_back_the_same(shared_dir, name):
    kif = read_rules_file(corpus_sheet(shared_dir, name))
    text = render_prolog(kif)
    assert syntax_of(text) == "prolog"
    back = parse_rules(text, f"{name}.pl")
    assert canonical(back) == canonical(kif)
    assert back.roles == kif.roles
    # the same findings (positions and line references differ)
    assert levels(validate(back)) == levels(validate(kif))
    # and the KIF list a START carries reads as the same rules again
    assert canonical(parse_rules(render_kif_rules(back)[1:-1])) == canonical(kif)


def test_the_hand_written_rock_paper_scissors_is_the_corpus_sheet_rule_for_rule(shared_dir):
    prolog = read_rules_file(DATA / "rock_paper_scissors.pl")
    kif = read_rules_file(corpus_sheet(shared_dir, "rock_paper_scissors"))
    assert canonical(prolog) == canonical(kif)


@pytest.mark.parametrize("sheet", sorted(HAND_WRITTEN))
def test_hand_written_prolog_sheets_check_clean(sheet):
    desc = read_rules_file(DATA / sheet)
    assert is_gdl2(desc)
    assert validate(desc) == []


# ============================================================== same answers on the reasoner

def _walk(a, b, seed: int, steps: int = 40) -> int:
    """A random walk on ``a``; ``b`` must answer every query the same.  Returns the steps."""
    rng = random.Random(seed)
    assert a.roles == b.roles
    s, t = a.initial_state(), b.initial_state()
    assert s == t
    n = 0
    while not a.is_terminal(s) and n < steps:
        assert not b.is_terminal(t)
        legal = [a.legal_moves(s, i) for i in range(len(a.roles))]
        assert legal == [b.legal_moves(t, i) for i in range(len(b.roles))]
        joint = tuple(rng.choice(moves) for moves in legal)
        for i in range(len(a.roles)):
            assert a.sees(s, joint, i) == b.sees(t, joint, i)
        s, t = a.next_state(s, joint), b.next_state(t, joint)
        assert s == t
        n += 1
    assert a.is_terminal(s) == b.is_terminal(t)
    if a.is_terminal(s):
        assert a.goal_values(s) == b.goal_values(t)
    return n


def _pair(desc_a, desc_b):
    from agent.reasoner.prolog import PrologReasoner
    return PrologReasoner(desc_a), PrologReasoner(desc_b)


@pytest.mark.parametrize("sheet", sorted(HAND_WRITTEN))
def test_hand_written_prolog_sheets_play_as_the_corpus_kif_sheets(shared_dir, sheet):
    a, b = _pair(read_rules_file(corpus_sheet(shared_dir, HAND_WRITTEN[sheet])),
                 read_rules_file(DATA / sheet))
    try:
        walked = [_walk(a, b, seed) for seed in range(6)]
        assert all(n >= 1 for n in walked)
        if HAND_WRITTEN[sheet] == "kuhn_poker":   # the percepts hide the cards
            s = a.initial_state()
            deal = next(m for m in a.legal_moves(s, 2) if m != "noop")
            joint = ("noop", "noop", deal)
            assert a.sees(s, joint, 0) != a.sees(s, joint, 1)
            assert a.sees(s, joint, 0) == b.sees(s, joint, 0) != frozenset()
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("name", WALKED)
def test_corpus_sheets_in_prolog_syntax_play_as_the_kif_sheets(shared_dir, name):
    kif = read_rules_file(corpus_sheet(shared_dir, name))
    a, b = _pair(kif, parse_prolog_rules(render_prolog(kif), f"{name}.pl"))
    try:
        for seed in range(2):
            _walk(a, b, seed, steps=12)
    finally:
        a.close()
        b.close()


# ============================================================== what Prolog syntax means

def test_detection_by_content():
    assert syntax_of("role(a).") == "prolog"
    assert syntax_of("% a comment\nrole(a).") == "prolog"
    assert syntax_of("/* c */ role(a).") == "prolog"
    assert syntax_of("terminal :- true(done).") == "prolog"
    assert syntax_of("terminal.\nrole(a).") == "prolog"
    assert syntax_of("'odd name'(a).") == "prolog"
    assert syntax_of("(role a)") == "kif"
    assert syntax_of("; comment\n(role a)") == "kif"
    assert syntax_of("") == "kif"
    assert syntax_of("terminal (role a)") == "kif"       # a bare KIF proposition, then a list
    # a KIF sheet with a Prolog-looking line inside stays KIF: the validator says what is wrong
    assert syntax_of("(succ 2 3)\nwin(1, 2)") == "kif"


def test_terms_variables_and_comments():
    desc = parse_rules("""% header
role(white). role('Black').   % two roles on one line
init(cell(1, -1, b)).         /* a block
                                 comment */
'INIT'(f()).
next(cell(X, Y, _x)) :- true(cell(X, Y, _)), true(cell(Y, X, _)), true(q(_1)).
""")
    heads = [r.head for r in desc.rules]
    assert heads[:4] == [("role", "white"), ("role", "Black"), ("init", ("cell", "1", "-1", "b")),
                         ("init", ("f",))]                     # keywords fold, f() is KIF's (f)
    assert desc.roles == ["white", "Black"]
    rule = desc.rules[4]
    assert rule.head == ("next", ("cell", "?X", "?Y", "?_x"))
    # each bare _ is its own variable, named apart from the clause's own _1
    assert rule.body == (("true", ("cell", "?X", "?Y", "?_2")), ("true", ("cell", "?Y", "?X", "?_3")),
                         ("true", ("q", "?_1")))
    assert (rule.line, rule.col) == (6, 1)
    assert rule.body_pos == ((6, 25), (6, 46), (6, 67))


def test_connectives():
    body = lambda text: parse_rules(text).rules[0].body  # noqa: E731
    assert body("p :- q(X), not r(X).") == (("q", "?X"), ("not", ("r", "?X")))
    assert body("p :- q(X), not(r(X)).") == (("q", "?X"), ("not", ("r", "?X")))
    assert body("p :- q(X), \\+ r(X).") == (("q", "?X"), ("not", ("r", "?X")))
    assert body("p :- q(X), \\+(r(X)).") == (("q", "?X"), ("not", ("r", "?X")))
    assert body("p :- q(X, Y), X \\= Y, distinct(Y, a), X \\== b.") == (
        ("q", "?X", "?Y"), ("distinct", "?X", "?Y"), ("distinct", "?Y", "a"), ("distinct", "?X", "b"))
    assert body("p :- q ; r ; not s.") == (("or", "q", "r", ("not", "s")),)
    assert body("p :- a, (q ; (r ; s)).") == ("a", ("or", "q", ("or", "r", "s")))
    assert body("p :- or(q, not r), (a, b).") == (("or", "q", ("not", "r")), "a", "b")
    assert body("p :- not (q ; r).") == (("not", ("or", "q", "r")),)
    assert body("p :- q(X), not distinct(X, a).") == (("q", "?X"), ("not", ("distinct", "?X", "a")))


def test_the_prolog_writer_keeps_every_shape():
    text = """(role Red) (f 1a) (g a.b) (h it's) (h (z)) (k -1)
(<= (p ?x ?X ?_) (f ?x) (f ?X) (f ?_) (not (distinct ?x ?X)) (or (f ?x)) (or)
    (or (f ?x) (or (g ?X) (not (h ?_)))))"""
    kif = parse_rules(text)
    written = render_prolog(kif)
    assert canonical(parse_prolog_rules(written)) == canonical(kif)


# ============================================================== errors with line and column

@pytest.mark.parametrize("text,line,col,pattern", [
    ("role(a).\ninit(cell(1, 2).\n", 2, 5, "parenthesis is never closed"),
    ("role(a).\ninit(cell(1, 2)\n", 2, 5, "parenthesis is never closed"),
    ("role(a).\nterminal :- true(done)", 2, 23, "final '.' missing"),
    ("role(a)\nrole(b).\n", 2, 1, "'.' that ends the clause at line 1 missing"),
    ("role(a).\nlegal(a, x) :- true(s)\nlegal(a, y) :- true(t).", 3, 1,
     "'.' that ends the clause at line 2 missing"),
    ("role(a).\np :- q :- r.", 2, 8, "expected ',', ';' or '.' after a literal, found ':-'"),
    ("role(a).\np :- , q.", 2, 6, "expected a literal, found ','"),
    ("role(a).\np :- q,, r.", 2, 8, "expected a literal, found ','"),
    ("role(a).\np :- q ; ; r.", 2, 10, "expected a literal after ';'"),
    ("role(a).\np :- q => r.", 2, 8, "found '=>'"),
    ("role(a).\np :- X = a.", 2, 8, "= is Prolog's equality"),
    ("role(a).\np :- X.", 2, 6, "a variable \\(X\\) cannot be a literal"),
    ("role(a).\np :- not.", 2, 9, "a literal after not"),
    ("role(a).\np :- (q, r ; s).", 2, 7, "a disjunct of ';' is a conjunction of 2 literals"),
    ("role(a).\np :- not(q, r).", 2, 6, "not takes exactly one literal, found 2"),
    ("role(a).\np :- distinct(a).", 2, 6, "distinct takes exactly two terms, found 1"),
    ("role(a).\np(?x) :- q.", 2, 3, "\\?x is a KIF variable"),
    ("role(a).\np([a, b]).", 2, 3, "lists"),
    ("role(a).\np((a, b)).", 2, 3, "no function name"),
    ("role(a).\n:- dynamic(p/1).", 2, 1, "directive"),
    ("role(a).\nX :- q.", 2, 1, "cannot start with a variable"),
    ("role(a).\nnot(p) :- q.", 2, 1, "head must be an atomic sentence"),
    ("role(a).\np('a b').", 2, 3, "cannot be a GDL constant"),
    ("role(a).\np('ab).", 2, 3, "never closed"),
    ("role(a).\np(1x).", 2, 3, "neither a number nor a name"),
    ("role(a).\n/* open", 2, 1, "never closed"),
])
def test_bad_prolog_syntax_is_an_error_with_line_and_column(text, line, col, pattern):
    import re
    p = error_of(text)
    assert (p.source, p.line, p.col) == ("bad.pl", line, col), str(p)
    assert re.search(pattern, p.message), p.message


def test_every_bad_clause_is_reported_and_reading_goes_on():
    with pytest.raises(GdlError) as info:
        parse_rules("role(a).\np :- , q.\nok(1).\nr([x]).\ns :- t\n")
    assert [(p.line, p.col) for p in info.value.problems] == [(2, 6), (4, 3), (5, 7)]


def test_a_deeply_nested_term_is_an_error_not_a_crash():
    deep = "f(" * 5000 + "a" + ")" * 5000
    p = error_of(f"role(a).\np({deep}).")
    assert p.line == 2 and "nested too deeply" in p.message


# ============================================================== GDL-II restrictions

BASE = """role(a). role(random).
legal(a, go). legal(random, go).
next(done).
terminal :- true(done).
goal(a, 100).
"""


def _problems(extra: str):
    return validate(parse_rules(BASE + extra, "g2.pl"))


def test_sees_in_its_own_heads_may_read_true_and_does():
    assert _problems("sees(a, moved(M)) :- does(random, M), true(done).\nsees(a, start).\n") == []


@pytest.mark.parametrize("extra,col", [
    ("legal(a, stop) :- sees(a, x).", 19),
    ("p :- true(done), not sees(a, x).\nterminal :- p.", 18),
    ("p :- true(done), (q ; sees(a, x)).\nq :- true(done).\nterminal :- p.", 18),
    ("init(x) :- sees(a, y).", 12),
])
def test_sees_in_a_rule_body_is_an_error_at_the_literal(extra, col):
    errors = [p for p in _problems(extra) if p.level == "error"]
    assert len(errors) == 1, errors
    e = errors[0]
    assert (e.source, e.line, e.col) == ("g2.pl", 6, col)
    assert e.message.startswith("sees is used in a rule body: (sees a ")
    assert "GDL-II allows sees only in rule heads" in e.message


@pytest.mark.parametrize("extra,found", [
    ("sees(a) :- does(a, go).", "1 argument"),
    ("sees(a, x, y) :- does(a, go).", "3 arguments"),
    ("sees :- does(a, go).", "no arguments"),
])
def test_sees_takes_two_arguments(extra, found):
    errors = [p for p in _problems(extra) if p.level == "error"]
    assert len(errors) == 1, errors
    assert (errors[0].line, errors[0].col) == (6, 1)
    assert found in errors[0].message and "the keyword sees takes 2 arguments" in errors[0].message


# ============================================================== the check command, the runner

def test_check_accepts_a_prolog_syntax_sheet(capsys):
    path = str(DATA / "kuhn_poker.pl")
    assert main(["check", path]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{path}: valid (0 errors, 0 warnings)"]


def test_check_names_line_and_column_of_bad_prolog_syntax(tmp_path, capsys):
    bad = tmp_path / "bad.gdl"
    bad.write_text("role(a).\nlegal(a, go) :- true(x.\n")
    assert main(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2:21: error: this parenthesis is never closed" in out
    assert out.strip().splitlines()[-1] == f"{bad}: invalid (1 error, 0 warnings)"


def test_check_reports_gdl2_errors_of_a_prolog_sheet(tmp_path, capsys):
    bad = tmp_path / "bad.pl"
    bad.write_text(BASE + "terminal :- sees(a, done).\n")
    assert main(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:6:13: error: sees is used in a rule body" in out


def test_the_match_runner_sends_a_prolog_sheet_as_kif():
    text = (DATA / "kuhn_poker.pl").read_text(encoding="utf-8")
    rules_list, desc = read_rules(text, "kuhn_poker.pl")
    assert rules_list.startswith("( ( role first ) ( role second ) ( role random ) ")
    assert canonical(parse_rules_text(rules_list)) == canonical(desc)
