"""GDL-II messages as Dresden's GameController sends them (captured in
``../shared/tools/gamecontroller/README.md``) and as later GDL-II managers do: our view of
each step (our move, our percepts), and the rules' GDL-II words found without parsing."""
from __future__ import annotations

from agent.server.matches import gdl2_view
from agent.server.protocol import parse_message
from gdl.gdl2 import is_gdl2, text_is_gdl2
from gdl.kif import parse_rules

# The bluffer's messages in a minipoker match (the README's capture, START cut short).
BLUFFER = ["(PLAY mp-s NIL)",
           "(PLAY mp-s ((CONTROL BLUFFER) DEALT (DEALT BLACK) ))",
           "(PLAY mp-s ((CONTROL CALLER) DEALT (HELD BLUFFER) (DEALT BLACK) ))",
           "(STOP mp-s (DEALT (HELD BLUFFER) (CALLED CALLER) (DEALT BLACK) ))"]
CALLER = ["(PLAY mp-s NIL)", "(PLAY mp-s ((CONTROL BLUFFER) DEALT ))"]


def test_dresden_play_carries_only_our_percepts_and_our_move_is_the_one_we_sent():
    views = [gdl2_view(parse_message(m), "HOLD") for m in BLUFFER]
    assert views[0] is None                               # the first PLAY: nothing happened yet
    assert views[1] == {"own": "HOLD", "percepts": ["( CONTROL BLUFFER )", "DEALT", "( DEALT BLACK )"]}
    assert views[3]["percepts"] == ["DEALT", "( HELD BLUFFER )", "( CALLED CALLER )", "( DEALT BLACK )"]
    caller = gdl2_view(parse_message(CALLER[1]), "NOOP")
    assert caller == {"own": "NOOP", "percepts": ["( CONTROL BLUFFER )", "DEALT"]}


def test_no_percepts_is_an_empty_list_not_the_first_play():
    assert gdl2_view(parse_message("(PLAY m ())"), "NOOP") == {"own": "NOOP", "percepts": []}
    assert gdl2_view(parse_message("(STOP m NIL)"), "NOOP") is None


def test_the_later_form_names_the_move_executed():
    """``(PLAY id turn move percepts)``: the manager's move for us wins over the one we
    answered (it replaced ours when ours was late or illegal)."""
    v = gdl2_view(parse_message("(play m 3 (mark 1 2) ((cell 1 2 x) (control o)))"), "(mark 3 3)")
    assert v == {"own": "( mark 1 2 )", "percepts": ["( cell 1 2 x )", "( control o )"]}
    v = gdl2_view(parse_message("(play m 0 nil nil)"), None)
    assert v == {"own": None, "percepts": []}


def test_gdl2_words_are_found_in_text_and_in_rules():
    sheet = "((ROLE A) (ROLE RANDOM) (<= (SEES A (CARD ?C)) (DOES RANDOM (DEAL ?C))))"
    assert text_is_gdl2(sheet) and is_gdl2(parse_rules(sheet[1:-1]))
    plain = "((role a) (<= (seesaw ?x) (true (at ?x))) (role randomly))"
    assert not text_is_gdl2(plain) and not is_gdl2(parse_rules(plain[1:-1]))
