"""Tests of the KIF reader (gdl/kif.py) and the term helpers it produces (gdl/terms.py).

What is checked is ggp-base's reading of a rule sheet as the reference README describes it
("How ggp-base reads a rule sheet"): comments, tokens, keyword case folding, body
connectives, variables, ``(f)`` versus ``f``, odd constant characters, line ends; then error
reports (file, line, column, message), rules as they arrive inside a START message, GDL-II
``sees``/``random``, and the canonical rendering of terms.  Everything runs on in-memory
text or files written to ``tmp_path``; nothing needs ``../shared``.
"""
from __future__ import annotations

import pytest

from gdl.kif import (Description, GdlError, Problem, Rule, parse_rules, parse_term, read_first,
                     read_nodes, read_rules_file, rules_from_nodes, tokenize)
from gdl.terms import (FOLDED_KEYWORDS, arity, canonical_sorted, is_ground, is_var, render,
                       render_spaced, signature, substitute, variables)

KEYWORDS = "init true next role does goal legal terminal base input random sees _".split()


def facts(text: str) -> list:
    """Heads of the rules of ``text`` (all facts in these tests)."""
    desc = parse_rules(text)
    assert all(r.is_fact for r in desc.rules)
    return [r.head for r in desc.rules]


def only_rule(text: str) -> Rule:
    rules = parse_rules(text).rules
    assert len(rules) == 1
    return rules[0]


def shape(desc: Description) -> list:
    """Rules without positions, to compare two readings of the same rules."""
    return [(r.head, r.body) for r in desc.rules]


def problem_of(text: str, source: str = "game.kif") -> Problem:
    with pytest.raises(GdlError) as info:
        parse_rules(text, source)
    assert info.value.problems, "a GdlError must carry at least one problem"
    return info.value.problems[0]


# ============================================================== comments

def test_semicolon_starts_a_comment_to_the_end_of_the_line():
    text = """; a header comment (with parentheses that are never closed
(role white) ; the first role
; (role commented_out)
(init (cell 1 ; a comment inside a term
        b))
"""
    assert facts(text) == [("role", "white"), ("init", ("cell", "1", "b"))]


def test_a_semicolon_inside_a_token_ends_the_token():
    # ggp-base drops everything from the first ';' of each line, even in the middle of a word
    assert facts("(p ab;cd\n e)") == [("p", "ab", "e")]
    assert facts("(p a;;;)\n)") == [("p", "a")]


def test_a_comment_runs_to_cr_as_well_as_lf_but_not_to_other_whitespace():
    assert facts("(p a) ; x\r(q b)") == [("p", "a"), ("q", "b")]
    assert facts("(p a) ; x\r\n(q b)") == [("p", "a"), ("q", "b")]
    # form feed and vertical tab separate tokens but do not end a line (ggp-base splits lines
    # at \n and \r only), so they do not end a comment either
    assert facts("(p a) ; x \f (q b)\n(r c)") == [("p", "a"), ("r", "c")]
    assert facts("(p a) ; x \x0b (q b)\n(r c)") == [("p", "a"), ("r", "c")]


def test_a_final_comment_without_newline_and_a_file_of_only_comments():
    assert facts("(role a) ; the end, no newline") == [("role", "a")]
    assert parse_rules("; nothing but a comment").rules == []
    assert parse_rules("").rules == []
    assert parse_rules("  \n\t\r\n ").rules == []


def test_block_comment_marks_are_ordinary_symbols():
    # there are no block comments: #| and |# are plain constants
    assert facts("(p #| x |#)") == [("p", "#|", "x", "|#")]


def test_tokenize_skips_comments_unless_told_not_to():
    assert [t for t, _l, _c in tokenize("(a ; b\n c)")] == ["(", "a", "c", ")"]
    assert [t for t, _l, _c in tokenize("(a ; b)", comments=False)] == ["(", "a", ";", "b", ")"]


# ============================================================== case and keywords

@pytest.mark.parametrize("word", KEYWORDS)
def test_each_keyword_is_folded_in_any_case_wherever_it_stands(word):
    # sees too: Dresden's GameController sends whole GDL-II sheets upper-cased
    assert FOLDED_KEYWORDS == frozenset(KEYWORDS)
    for spelling in (word.upper(), word.capitalize(), word.swapcase() if word != "_" else "_"):
        # as a relation name, as a function name and as an argument
        text = f"({spelling} x) (p ({spelling} y) {spelling})"
        assert facts(text) == [(word, "x"), ("p", (word, "y"), word)]


def test_the_2006_upper_case_spelling_reads_as_lower_case_keywords():
    text = """(ROLE OPIRTUNT) (INIT (ERVILL A))
(<= (LEGAL OPIRTUNT (GO ?X)) (TRUE (ERVILL ?X)) (NOT (DONE ?X)) (DISTINCT ?X B))
(<= (NEXT (ERVILL ?X)) (DOES OPIRTUNT (GO ?X)))
(<= TERMINAL (TRUE (ERVILL B)))
(<= (GOAL OPIRTUNT 100) (OR (TRUE (ERVILL B)) (TRUE (ERVILL C))))
"""
    desc = parse_rules(text)
    assert desc.roles == ["OPIRTUNT"]
    role, init, legal, nxt, term, goal = desc.rules
    assert init.head == ("init", ("ERVILL", "A"))
    assert legal.head == ("legal", "OPIRTUNT", ("GO", "?X"))
    assert legal.body == (("true", ("ERVILL", "?X")), ("not", ("DONE", "?X")), ("distinct", "?X", "B"))
    assert nxt.body == (("does", "OPIRTUNT", ("GO", "?X")),)
    assert term.head == "terminal"
    assert goal.body == (("or", ("true", ("ERVILL", "B")), ("true", ("ERVILL", "C"))),)


def test_only_the_keywords_are_folded_other_symbols_keep_their_case():
    assert facts("(CELL WHITE) (cell white) (Sees x) (SEES x) (Noop) (NOT a) (Or b)") == [
        ("CELL", "WHITE"), ("cell", "white"), ("sees", "x"), ("sees", "x"), ("Noop",),
        ("NOT", "a"), ("Or", "b")]


def test_variables_are_never_folded_and_any_question_mark_token_is_one():
    rule = only_rule("(<= (p ?X ?x ?ROLE ? ?_ ?1) (q ?X ?x ?ROLE ? ?_ ?1))")
    assert rule.head == ("p", "?X", "?x", "?ROLE", "?", "?_", "?1")
    assert all(is_var(v) for v in rule.head[1:])
    assert variables(rule.head) == ["?X", "?x", "?ROLE", "?", "?_", "?1"]
    # a variable written like a keyword is still a variable, kept as written
    assert only_rule("(<= (p ?TRUE) (q ?TRUE))").head == ("p", "?TRUE")


def test_rule_arrow_is_matched_exactly():
    assert not only_rule("(<= p q)").is_fact
    # anything else spelled near <= is an ordinary relation name, read as a fact
    assert facts("(=< p q) (<== p q) (< p q)") == [("=<", "p", "q"), ("<==", "p", "q"), ("<", "p", "q")]
    # <= as an argument is an ordinary constant
    assert facts("(p <= q)") == [("p", "<=", "q")]


@pytest.mark.parametrize("spelling", ["not", "NOT", "Not", "nOt"])
def test_not_in_any_case_is_negation_in_a_body(spelling):
    rule = only_rule(f"(<= p ({spelling} q) ({spelling} (r a)))")
    assert rule.body == (("not", "q"), ("not", ("r", "a")))


@pytest.mark.parametrize("spelling", ["distinct", "DISTINCT", "Distinct"])
def test_distinct_in_any_case_is_the_connective_in_a_body(spelling):
    rule = only_rule(f"(<= (p ?x) (q ?x) ({spelling} ?x (f a)))")
    assert rule.body == (("q", "?x"), ("distinct", "?x", ("f", "a")))


@pytest.mark.parametrize("spelling", ["or", "OR", "Or"])
def test_or_in_any_case_is_disjunction_in_a_body_also_nested(spelling):
    rule = only_rule(f"(<= p ({spelling} q (r a) ({spelling} s (not t))) (u))")
    assert rule.body == (("or", "q", ("r", "a"), ("or", "s", ("not", "t"))), ("u",))


def test_connective_words_are_ordinary_names_in_facts_heads_and_arguments():
    assert facts("(distinct a b) (not a) (or a b) (DISTINCT c)") == [
        ("distinct", "a", "b"), ("not", "a"), ("or", "a", "b"), ("DISTINCT", "c")]
    rule = only_rule("(<= (distinct ?x (not ?x)) (q ?x (or a b) (DISTINCT ?x)))")
    assert rule.head == ("distinct", "?x", ("not", "?x"))
    # inside an argument of a body sentence they stay function names
    assert rule.body == (("q", "?x", ("or", "a", "b"), ("DISTINCT", "?x")),)
    # bare words, not lists: propositions named like connectives
    assert only_rule("(<= not or)").body == ("or",)


def test_negated_or_disjunctive_rule_heads_are_refused_with_a_clear_message():
    # ggp-base would read (not p) here as a relation named not; the project refuses it
    p = problem_of("(role r)\n(<= (not p) q)")
    assert (p.line, p.col, p.level) == (2, 5, "error")
    assert "head" in p.message and "negation" in p.message


# ============================================================== (f) versus f

def test_zero_argument_function_differs_from_the_constant():
    assert facts("(init (f)) (init f) (p) p") == [("init", ("f",)), ("init", "f"), ("p",), "p"]
    assert ("f",) != "f"
    assert signature(("f",)) == ("f", 0) and signature("f") == ("f", -1)
    assert arity(("f",)) == 0 and arity("f") == -1
    assert render(("f",)) == "(f)" and render("f") == "f"
    assert parse_term("(f)") == ("f",) and parse_term("f") == "f"
    assert parse_term("( f )") == ("f",)


def test_zero_argument_forms_in_rule_bodies_are_kept_apart_too():
    rule = only_rule("(<= (p) q (r) (not (s)) (not s))")
    assert rule.head == ("p",)
    assert rule.body == ("q", ("r",), ("not", ("s",)), ("not", "s"))


# ============================================================== odd constants

def test_odd_constant_characters_are_plain_symbol_text():
    odd = [">", "1.5", "1.50", "a,b", 'x"y', "'q'", "0'a", "a\\b", "\\+", "50%", "/*", "$me",
           "it's", "=..", "-->", "a.b", "{}", "[]", "|", "!", "=", ",", "-1", "007", "0x1F"]
    text = "(item " + " ".join(odd) + ")"
    assert facts(text) == [("item",) + tuple(odd)]


def test_greater_than_as_a_relation_name():
    rule = only_rule("(<= (bigger ?x ?y) (num ?x) (num ?y) (> ?x ?y))")
    assert rule.body[2] == (">", "?x", "?y")


def test_non_ascii_symbols_are_kept_intact():
    assert facts("(rôle Ünïcode 日本 ÉTÉ)") == [("rôle", "Ünïcode", "日本", "ÉTÉ")]
    # a non-ASCII spelling that lower-cases to something else than a keyword is not folded
    assert facts("(ROLÉ x)") == [("ROLÉ", "x")]


def test_java_whitespace_separates_tokens_but_unicode_spaces_do_not():
    assert facts("(p\ta\x0bb\fc\r\nd)") == [("p", "a", "b", "c", "d")]
    # U+00A0 (no-break space) and U+2003 (em space) are not Java \s: part of the token
    assert facts("(p a\u00a0b c\u2003d)") == [("p", "a\u00a0b", "c\u2003d")]


def test_parentheses_need_no_surrounding_spaces():
    assert facts("(p(f a)(g(h))b)") == [("p", ("f", "a"), ("g", ("h",)), "b")]


# ============================================================== line ends and files

def test_crlf_cr_and_lf_all_end_lines_and_positions_follow_them():
    for eol in ("\n", "\r\n", "\r"):
        text = eol.join(["(role a)", "", "  (init  (p 1))", "(q)"])
        rules = parse_rules(text).rules
        assert [(r.line, r.col) for r in rules] == [(1, 1), (3, 3), (4, 1)], repr(eol)
        assert [r.head for r in rules] == [("role", "a"), ("init", ("p", "1")), ("q",)]
    toks = list(tokenize("ab\r\ncd\ref\n g"))
    assert toks == [("ab", 1, 1), ("cd", 2, 1), ("ef", 3, 1), ("g", 4, 2)]


def test_rule_and_body_positions_point_at_the_text():
    text = "(role r)\n(<= (p ?x)\n    (q ?x)\n    (not (s ?x)))"
    rule = parse_rules(text).rules[1]
    assert (rule.line, rule.col) == (2, 1)
    assert rule.body_pos == ((3, 5), (4, 5))


def test_read_a_file_with_crlf_and_no_trailing_newline(tmp_path):
    path = tmp_path / "crlf.kif"
    path.write_bytes(b"; crlf file\r\n(role white)\r\n(init (cell 1 b))\r\n(legal white noop) ")
    desc = read_rules_file(path)
    assert desc.source == str(path)
    assert desc.roles == ["white"]
    assert [r.head for r in desc.rules] == [("role", "white"), ("init", ("cell", "1", "b")),
                                            ("legal", "white", "noop")]
    assert [r.line for r in desc.rules] == [2, 3, 4]


def test_read_a_utf8_file(tmp_path):
    path = tmp_path / "utf8.kif"
    path.write_bytes("(role jürgen)\n(p 日本)".encode("utf-8"))
    assert read_rules_file(path).roles == ["jürgen"]


def test_a_file_that_is_not_utf8_is_refused_with_the_position_of_the_bad_byte(tmp_path):
    path = tmp_path / "latin1.kif"
    path.write_bytes(b"(role a)\n(p caf\xe9)\n")
    with pytest.raises(GdlError) as info:
        read_rules_file(path)
    p = info.value.problems[0]
    assert (p.source, p.line, p.col, p.level) == (str(path), 2, 7, "error")
    assert "0xE9" in p.message and "UTF-8" in p.message
    assert f"{path}:2:7: error:" in str(info.value)


# ============================================================== errors and positions

def test_unmatched_closing_parenthesis_names_file_line_and_column():
    p = problem_of("(role a)\n(p a))\n(q b)")
    assert (p.source, p.line, p.col, p.level) == ("game.kif", 2, 6, "error")
    assert "unmatched closing parenthesis" in p.message
    assert str(p) == "game.kif:2:6: error: unmatched closing parenthesis"


def test_unmatched_opening_parenthesis_points_at_the_expression_never_closed():
    # the rule on line 2 lacks its last ')'; the rule after it is swallowed into it
    text = "(role a)\n(<= (p ?x)\n    (q ?x)\n(role b)\n"
    p = problem_of(text)
    assert (p.line, p.col) == (2, 1)
    assert "unmatched opening parenthesis" in p.message and "never closed" in p.message
    # an inner list left open: its own position
    p = problem_of("(p a)\n(q (f b)\n   (g c")
    assert (p.line, p.col) == (3, 4)


def test_the_error_text_carries_every_position(tmp_path):
    path = tmp_path / "bad.kif"
    path.write_text("(role a)\n\n   (init (x)))\n")
    with pytest.raises(GdlError) as info:
        read_rules_file(path)
    assert str(info.value) == f"{path}:3:14: error: unmatched closing parenthesis"


@pytest.mark.parametrize("text, line, col, words", [
    ("(role a)\n()", 2, 1, "empty list"),
    ("(role a)\n(p ())", 2, 4, "empty list"),
    ("((p a) b)", 1, 1, "consecutive opening parentheses"),
    ("(role r)\n(<= (p ?x) (?r ?x))", 2, 13, "variable ?r used as a function or relation name"),
    ("?x", 1, 1, "variable ?x stands alone at top level"),
    ("(<=)", 1, 1, "without a head"),
    ("(<= ?x (p ?x))", 1, 5, "head cannot be a variable"),
    ("(<= p ?x)", 1, 7, "variable (?x) cannot be a literal"),
    ("(<= p (not a b))", 1, 7, "not takes exactly one literal, found 2"),
    ("(<= p (NOT))", 1, 7, "not takes exactly one literal, found 0"),
    ("(<= (p ?x) (q ?x) (distinct ?x a b))", 1, 19, "distinct takes exactly two terms, found 3"),
    ("(<= (p ?x) (q ?x) (Distinct ?x))", 1, 19, "distinct takes exactly two terms, found 1"),
])
def test_bad_structure_is_reported_with_position_and_a_clear_message(text, line, col, words):
    p = problem_of(text)
    assert (p.line, p.col, p.level, p.source) == (line, col, "error", "game.kif")
    assert words in p.message


def test_every_structural_problem_of_a_sheet_is_reported_at_once():
    text = "(role a)\n()\n(p (?f x))\n(<= q (not a b))\n(legal a go)\n"
    with pytest.raises(GdlError) as info:
        parse_rules(text, "many.kif")
    assert [(p.line, p.col) for p in info.value.problems] == [(2, 1), (3, 5), (4, 7)]
    assert len(str(info.value).splitlines()) == 3


def test_a_rule_with_an_empty_body_is_a_fact_with_a_warning():
    desc = parse_rules("(role r)\n(<= (legal r go))", "w.kif")
    assert desc.rules[1] == Rule(("legal", "r", "go"), (), 2, 1)
    assert desc.rules[1].is_fact
    [w] = desc.warnings
    assert (w.level, w.line, w.col) == ("warning", 2, 1) and "empty body" in w.message


def test_deep_nesting_is_an_error_with_a_position_not_a_crash():
    deep = "(f " * 5000 + "a" + ")" * 5000
    p = problem_of(f"(role r)\n(p {deep})")
    assert (p.line, p.col) == (2, 1) and "too deep" in p.message
    with pytest.raises(GdlError, match="too deep"):
        parse_term(deep)
    # moderate nesting is fine
    assert parse_term("(f " * 50 + "a" + ")" * 50)[0] == "f"


def test_parse_term_reads_one_term_and_refuses_bad_text():
    assert parse_term("( mark 1 1 )") == ("mark", "1", "1")
    assert parse_term("(move (pos 1 2) (pos 2 3))") == ("move", ("pos", "1", "2"), ("pos", "2", "3"))
    assert parse_term("noop") == "noop"
    assert parse_term("  NOOP  ") == "NOOP"
    assert parse_term("( ROLE x )") == ("role", "x")  # keywords fold here too
    assert parse_term("(a b) trailing text") == ("a", "b")
    for bad, words in [("", "empty text"), ("   ", "empty text"), (")", "unmatched closing"),
                       ("(mark 1", "unmatched opening"), ("()", "empty list"),
                       ("((a))", "consecutive opening"), ("(?x 1)", "variable ?x used as")]:
        with pytest.raises(GdlError) as info:
            parse_term(bad)
        assert words in str(info.value), bad


def test_read_nodes_keeps_structure_and_positions():
    nodes = read_nodes("(a (b c))\n d")
    assert [n.is_atom for n in nodes] == [False, True]
    assert repr(nodes[0]) == "(a (b c))"
    assert (nodes[1].text, nodes[1].line, nodes[1].col) == ("d", 2, 2)
    inner = nodes[0].items[1]
    assert (inner.line, inner.col) == (1, 4)


# ============================================================== START messages

TICTACTOE_COMPACT = """
(role xplayer) (role oplayer)
(init (cell 1 1 b)) (init (control xplayer))
(<= (legal ?w (mark ?x ?y)) (true (cell ?x ?y b)) (true (control ?w)))
(<= (legal xplayer noop) (true (control oplayer)))
(<= (next (cell ?m ?n x)) (does xplayer (mark ?m ?n)) (true (cell ?m ?n b)))
(<= (next (cell ?m ?n ?w)) (true (cell ?m ?n ?w)) (distinct ?w b))
(<= open (true (cell ?m ?n b)))
(<= terminal (not open))
(<= (goal xplayer 100) (or (line x) (true (won xplayer))))
"""

TICTACTOE_START = (
    "(START match.17 xplayer ( ( role xplayer ) ( role oplayer ) ( init ( cell 1 1 b ) ) "
    "( init ( control xplayer ) ) "
    "( <= ( legal ?w ( mark ?x ?y ) ) ( true ( cell ?x ?y b ) ) ( true ( control ?w ) ) ) "
    "( <= ( legal xplayer noop ) ( true ( control oplayer ) ) ) "
    "( <= ( next ( cell ?m ?n x ) ) ( does xplayer ( mark ?m ?n ) ) ( true ( cell ?m ?n b ) ) ) "
    "( <= ( next ( cell ?m ?n ?w ) ) ( true ( cell ?m ?n ?w ) ) ( distinct ?w b ) ) "
    "( <= open ( true ( cell ?m ?n b ) ) ) "
    "( <= terminal ( not open ) ) "
    "( <= ( goal xplayer 100 ) ( or ( line x ) ( true ( won xplayer ) ) ) ) ) 30 10)")


def start_rules(message: str) -> Description:
    """The rules of a START message, read as the player reads them."""
    node = read_first(message)
    assert node is not None and not node.is_atom and node.items[0].text.upper() == "START"
    return rules_from_nodes(node.items[3].items, "<START>")


def test_rules_inside_a_start_message_read_like_the_rule_file():
    from_message = start_rules(TICTACTOE_START)
    from_file = parse_rules(TICTACTOE_COMPACT)
    assert shape(from_message) == shape(from_file)
    assert from_message.roles == ["xplayer", "oplayer"]
    legal = from_message.rules[4]
    assert legal.head == ("legal", "?w", ("mark", "?x", "?y"))
    assert legal.body == (("true", ("cell", "?x", "?y", "b")), ("true", ("control", "?w")))


def test_ggp_base_spacing_round_trips_through_render_spaced():
    desc = parse_rules(TICTACTOE_COMPACT)
    spaced = "( " + " ".join(
        render_spaced(r.head) if r.is_fact else
        "( <= " + " ".join([render_spaced(r.head)] + [_spaced_literal(l) for l in r.body]) + " )"
        for r in desc.rules) + " )"
    assert shape(rules_from_nodes(read_first(spaced).items)) == shape(desc)


def _spaced_literal(lit) -> str:
    if isinstance(lit, tuple) and lit[0] in ("not", "or", "distinct"):
        return "( " + " ".join([lit[0]] + [_spaced_literal(a) for a in lit[1:]]) + " )"
    return render_spaced(lit)


def test_a_start_message_has_no_comments_and_upper_case_keywords_fold():
    # in a protocol message ';' is an ordinary character (ggp-base strips comments only from
    # rule files), so a relation may be called ';'
    message = "(START m1 white ( ( ROLE white ) ( ; a ) ( <= ( LEGAL white ( go ; ) ) ( ; ?x ) ) ) 10 10)"
    desc = start_rules(message)
    assert shape(desc) == [(("role", "white"), ()), ((";", "a"), ()),
                           (("legal", "white", ("go", ";")), ((";", "?x"),))]


def test_read_first_ignores_what_follows_and_reports_unbalanced_messages():
    assert repr(read_first("(PLAY m1 nil) junk ((")) == "(PLAY m1 nil)"
    assert read_first("") is None
    with pytest.raises(GdlError, match="unmatched opening"):
        read_first("(START m1 white ((role white) 10 10)")
    with pytest.raises(GdlError, match="unmatched closing"):
        read_first(") (START)")


# ============================================================== GDL-II

def test_gdl2_sees_and_random_are_parsed_and_represented():
    text = """
(role random) (role player)
(init (round 0))
(card ace) (card king)
(<= (legal random (deal ?c)) (card ?c) (true (round 0)))
(<= (legal player look) (true (round 0)))
(<= (sees player (dealt ?c)) (does random (deal ?c)))
(<= (SEES ?r (announce ?m)) (role ?r) (does player ?m))
(<= (next (hidden ?c)) (does random (deal ?c)))
(<= terminal (true (hidden ?c)))
(<= (goal player 100) (true (hidden ace)))
"""
    desc = parse_rules(text)
    assert desc.roles == ["random", "player"]
    sees = [r for r in desc.rules if isinstance(r.head, tuple) and r.head[0].lower() == "sees"]
    assert [r.head for r in sees] == [("sees", "player", ("dealt", "?c")),
                                      ("sees", "?r", ("announce", "?m"))]  # folded like the others
    assert sees[0].body == (("does", "random", ("deal", "?c")),)
    # RANDOM is one of the folded keywords: the role reads as random
    assert parse_rules("(ROLE RANDOM) (role Player)").roles == ["random", "Player"]


def test_roles_are_the_top_level_role_facts_in_order():
    desc = parse_rules("(role b) (p x) (role a) (<= (role c) (p x)) (role (team 1))")
    assert desc.roles == ["b", "a", ("team", "1")]


# ============================================================== terms

def test_render_and_canonical_order_follow_the_reference_traces():
    t = parse_term("( move ( pos 1 2 ) ( pos 2 3 ) )")
    assert render(t) == "(move (pos 1 2) (pos 2 3))"
    assert render_spaced(t) == "( move ( pos 1 2 ) ( pos 2 3 ) )"
    cells = [parse_term(s) for s in ("(cell 2 1 b)", "(cell 10 1 b)", "noop", "(cell 1 1 b)", "NOOP")]
    assert [render(c) for c in canonical_sorted(cells)] == [
        "(cell 1 1 b)", "(cell 10 1 b)", "(cell 2 1 b)", "NOOP", "noop"]


def test_term_helpers():
    t = ("p", "?x", ("f", "?y", "a"), "?x")
    assert variables(t) == ["?x", "?y"]
    assert not is_ground(t) and is_ground(("p", "a", ("f",)))
    assert substitute(t, {"?x": "1", "?y": ("g",)}) == ("p", "1", ("f", ("g",), "a"), "1")
    assert is_var("?") and not is_var("a?")
