"""Protocol messages: every dialect real managers send, and hostile text (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.server.protocol import ProtocolError, info_reply, parse_message

RULES = "(( role xplayer ) ( role oplayer ) ( init ( cell 1 1 b ) ) ( <= terminal ( not open ) ) )"


def test_ggp_base_start_byte_exact():
    text = f"( START Base.ticTacToe.1480000000000 xplayer {RULES} 60 15)"
    m = parse_message(text)
    assert (m.kind, m.match_id, m.role, m.start_clock, m.play_clock) == (
        "start", "Base.ticTacToe.1480000000000", "xplayer", 60, 15)
    assert m.rules_text == RULES  # exactly as received, for the record
    assert m.rules_nodes is None  # the rules stay text: the worker processes parse them


def test_start_rules_text_across_lines():
    text = "(start m1 red\r\n((role red)\n (role black))\n 30 10)"
    m = parse_message(text)
    assert m.rules_text == "((role red)\n (role black))"


def test_play_and_stop_forms():
    m = parse_message("( PLAY Base.ticTacToe.1 NIL )")
    assert (m.kind, m.moves) == ("play", None)
    m = parse_message("( PLAY Base.ticTacToe.1 (( mark 1 1 ) noop ) )")
    assert [mv.text for mv in m.moves] == ["( mark 1 1 )", "noop"]
    assert m.moves[0].term == ("mark", "1", "1")
    m = parse_message("(stop id ((MARK 1 1) NOOP))")  # Dresden: everything upper case
    assert m.kind == "stop" and [mv.text for mv in m.moves] == ["( MARK 1 1 )", "NOOP"]
    assert parse_message("( STOP x nil )").moves is None


def test_dresden_five_element_play():
    m = parse_message("(PLAY m 0 NIL NIL)")
    assert (m.turn, m.last_move, m.percepts, m.did) == (0, None, None, None)
    m = parse_message("(PLAY m 3 (MARK 1 1) ((DID XPLAYER (MARK 1 1)) (DID OPLAYER NOOP)))")
    assert m.turn == 3 and m.last_move.text == "( MARK 1 1 )"
    assert [(r, mv.text) for r, mv in m.did] == [("XPLAYER", "( MARK 1 1 )"), ("OPLAYER", "NOOP")]


def test_info_abort_preview_and_case():
    assert parse_message("( INFO )").kind == "info"
    assert parse_message("info").kind == "info"
    assert parse_message("(Abort m7)").match_id == "m7"
    m = parse_message("( PREVIEW (( role a ) ) 30 )")
    assert m.kind == "preview" and m.preview_clock == 30
    assert parse_message("( info ) trailing ( junk").kind == "info"  # first expression only


def test_unparsable_move_is_kept_as_text():
    m = parse_message("( PLAY m (( ( x ) ) noop ?v ) )")
    assert m.moves[0].term is None and m.moves[1].term == "noop"
    assert m.moves[2].term is None  # a variable is not a move


@pytest.mark.parametrize("text", [
    "", "   ", "(", ")", "( START m r (( role r ) ) 10 )", "( START m (r) (( role r )) 10 5)",
    "( START m r notalist 10 5)", "( START m r (( role r )) ten 5)", "( PLAY )", "( FOO m )",
    "(( INFO ))", "hello", "( START m r (( role r )) nan 5)", "( ABORT )", "( PLAY (m) NIL )",
])
def test_malformed_messages_raise_protocol_error(text):
    with pytest.raises(ProtocolError):
        parse_message(text)


def test_deep_nesting_is_refused_cleanly():
    deep = "(" * 5000 + ")" * 5000
    m = parse_message(f"( PLAY m ({deep} noop) )")
    assert m.moves[0].term is None
    with pytest.raises(ProtocolError):
        parse_message(deep)


def test_info_reply_form():
    assert info_reply("ggp-persona") == "( ( name ggp-persona ) ( status available ) )"


atoms = st.sampled_from(["START", "PLAY", "STOP", "ABORT", "INFO", "PREVIEW", "nil", "NIL", "m1",
                         "xplayer", "10", "-3", "1.5", "?x", "<=", "role", ";", "\u00e9", ""])
sexpr = st.recursive(atoms, lambda kids: st.lists(kids, max_size=6).map(lambda xs: "(" + " ".join(xs) + ")"),
                     max_leaves=40)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(sexpr, st.text(max_size=300), st.lists(sexpr, max_size=4).map(" ".join)))
def test_fuzz_parser_only_raises_protocol_error(text):
    try:
        m = parse_message(text)
    except ProtocolError:
        return
    assert m.kind in ("info", "preview", "start", "play", "stop", "abort")


@pytest.mark.parametrize("clocks", ["-5 10", "10 -1", "0 10", "10 0", "10 1e12", "86401 10"])
def test_start_clocks_must_be_positive_and_sane(clocks):
    with pytest.raises(ProtocolError, match="clock must be a number of seconds in"):
        parse_message(f"( START m r (( role r ) ) {clocks} )")
    assert parse_message("( START m r (( role r ) ) 86400 0.5 )").play_clock == 0.5


def test_a_huge_start_is_split_without_building_a_tree(monkeypatch):
    """A 15.5 MiB START was read into a tree of millions of nodes in the server process,
    which held every match's replies for seconds: START and PREVIEW are now split by their
    parentheses and the rules kept as text (the worker processes read them)."""
    import agent.server.protocol as protocol
    rules = "(( role xplayer ) ( role oplayer ) " + "( pad a ( b c ) ) " * 200_000 + ")"
    text = f"( START Base.big.1 xplayer {rules} 60 15)"

    def no_tree(*args, **kwargs):
        raise AssertionError("a tree was built")
    monkeypatch.setattr(protocol, "read_first", no_tree)
    m = parse_message(text)
    assert (m.kind, m.match_id, m.role, m.start_clock, m.play_clock) == ("start", "Base.big.1", "xplayer", 60, 15)
    assert m.rules_text == rules
    m = parse_message(f"( PREVIEW {rules} 30 )")
    assert m.kind == "preview" and m.rules_text == rules and m.preview_clock == 30
    for bad, why in [(text[:-1], "never closed"), (f"( START m (r) {rules} 60 15)", "must be an atom"),
                     (f"( START m r {rules} (60) 15)", "found a list"), (f"( START m r {rules} 60 )", "needs")]:
        with pytest.raises(ProtocolError, match=why):
            parse_message(bad)


def test_big_rules_are_checked_for_the_role_without_being_parsed(monkeypatch):
    import agent.server.matches as matches
    from agent.player import RulesRefused
    rules = "(( role xplayer ) ( role oplayer ) " + "( pad a ) " * 100_000 + ")"

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed in the server process")
    monkeypatch.setattr(matches, "parse_rules_text", no_parse)
    matches.check_readable(rules, "XPLAYER")
    with pytest.raises(RulesRefused, match="role white"):
        matches.check_readable(rules, "white")


def test_a_huge_message_without_rules_is_refused_unread(monkeypatch):
    """A PLAY of megabytes is no joint move a manager sends; read into a tree it would hold
    the server as a huge START did."""
    import agent.server.protocol as protocol

    def no_tree(*args, **kwargs):
        raise AssertionError("a tree was built")
    monkeypatch.setattr(protocol, "read_first", no_tree)
    with pytest.raises(ProtocolError, match="without rules"):
        parse_message("( PLAY m ( " + "( mark 1 1 ) " * 200_000 + ") )")
