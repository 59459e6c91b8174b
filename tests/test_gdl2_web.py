"""GDL-II on the web page: a person plays seeing only what their role sees, and nothing a
role has not seen reaches its page before the match ends (issue 52).

The property is checked on whole matches played through the web server's HTTP API against a
persona (the server in a process of its own, as the other web tests run it): every response
the person's page could read while the match runs (the match's JSON at every poll, the play
page, the persona's advice, the replies to moves, the start page, a replay of the match's
record) is collected with the step it was read at.  After the match, the record (the whole
match: true states, every role's moves, random's too, every role's percepts) says what was
hidden from the person at each step:

- the fluents of the true states that are neither in the initial state (the rules give it to
  every role) nor among the person's percepts up to that step;
- the moves of the other roles that are not among those percepts and are not moves the
  person could make themself (a move text the person has on a button is no secret);

and no response read at step p may carry one of p's hidden terms, written in any of the
ways the page writes terms (``( cell 1 2 o )``, ``(cell 1 2 o)``, ``cell 1 2 o``).  Boards are
checked by structure: every piece drawn must be a fact the person knows (a board draws
``o`` at a cell from ``(cell 1 2 o)`` without writing the fact), and no JSON object of the
page names another role with a move.  After the end, everything appears: every fact of every
true state, every joint move and every role's percepts.
"""
from __future__ import annotations

import json
import random
import re
import time
import zlib
from pathlib import Path

import httpx
import pytest

from tests.conftest import SHARED
from tests.webbrowser import WebServer

GDL2 = SHARED / "corpus" / "gdl2"
PERSONA = "phlegmatic"
GAMES = [("kuhn_poker", 0), ("kuhn_poker", 1), ("hidden_goofspiel", 1), ("phantom_connect_4x4", 0),
         ("rock_paper_scissors", 1)]
MATCH_SECONDS = 900      # the first match waits for the persona's processes to warm up
pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not GDL2.is_dir():
        pytest.skip("../shared (the GDL-II corpus) is not beside this clone")
    logs = tmp_path_factory.mktemp("logs")
    s = WebServer(logs, [GDL2])
    try:
        yield s, logs
    finally:
        s.stop()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server[0].url, timeout=300, follow_redirects=False) as c:
        c.cookies.set("person", "hana")
        yield c


# ------------------------------------------------------------------ terms and forms
def _terms():
    from gdl.kif import parse_term, read_first

    def state(text: str) -> frozenset:
        node = read_first(text)
        return frozenset(parse_term(repr(n)) for n in node.items)
    return parse_term, state


def subterms(t) -> set:
    out = {t}
    if isinstance(t, tuple):
        for a in t[1:]:
            out |= subterms(a)
    return out


def forms(t) -> list[str]:
    """The ways the page may write a term: ggp-base's spacing, compact, and in words."""
    from gdl.terms import render, render_spaced
    if isinstance(t, str):
        return [t]
    return [render_spaced(t), render(t), render(t)[1:-1]]


def occurs(t, body: str) -> str | None:
    """The form of compound term ``t`` found in ``body`` (as a whole: not inside a longer
    word), or None.  Constants are left to the structural checks: a bare word such as a
    move name is also on the person's own buttons and in the page's text."""
    if isinstance(t, str):
        return None
    for f in forms(t):
        if re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", body):
            return f
    return None


# ------------------------------------------------------------------ one match
class Collected:
    def __init__(self):
        self.bodies: list[tuple[int, str, str]] = []     # (step read at, what, body text)

    def add(self, ply: int, what: str, r: httpx.Response) -> httpx.Response:
        self.bodies.append((ply, what, r.text))
        return r


def play_match(client, key: str, role: int, seed: int, logs: Path) -> tuple[dict, Collected, dict]:
    """A whole match through the HTTP API, the person clicking a random legal move; every
    body the page could read while it runs is collected.  Returns the record, the bodies
    and the final JSON."""
    rng = random.Random(seed)
    got = Collected()
    r = client.post("/play", data={"key": key, "role": role, "persona": PERSONA, "start_clock": 5, "play_clock": 1})
    assert r.status_code == 303, r.text[:500]
    sid = r.headers["location"].rsplit("/", 1)[1]
    record_name = f"web.hana.{sid}.{key.split('/')[-1]}.json"
    asked_advice = asked_idle = False
    ply, last_ply = 0, -1
    deadline = time.monotonic() + MATCH_SECONDS
    while True:
        assert time.monotonic() < deadline, "the match did not end"
        st_r = client.get(f"/api/play/{sid}")
        assert st_r.status_code == 200
        st = st_r.json()
        if st["status"] in ("over", "aborted"):
            final = st
            break
        ply = st["ply"]
        got.add(ply, "state", st_r)
        assert st["gdl2"] is True
        if st["status"] == "playing" and ply != last_ply:      # once a step: the other pages
            last_ply = ply
            pages = [("play page", client.get(f"/play/{sid}")), ("start page", client.get("/")),
                     ("replay", client.get("/replay", params={"file": record_name}))]
            now = client.get(f"/api/play/{sid}").json()
            if now["status"] == "playing":    # read during the match: by step now["ply"] at the latest
                for what, r in pages:
                    got.add(now["ply"], what, r)
                assert pages[2][1].status_code == 403 and "still being played" in pages[2][1].text
        if st["your_turn"] and st["clicks"]:
            if not asked_advice:
                a = client.get(f"/api/play/{sid}/persona")
                assert a.status_code == 200, a.text[:300]
                adv = a.json()
                got.add(adv["ply"], "advice", a)
                assert adv["hidden"] and adv["choice"] in [c["move"] for c in st["clicks"]]
                asked_advice = True
            move = rng.choice(st["clicks"])["move"]
            got.add(ply, "move", client.post(f"/api/play/{sid}/move", json={"move": move}))
        elif st["status"] == "playing" and not st["to_move"] and not asked_idle:
            # not the person's turn: no advice
            # (or, the match having moved on meanwhile: their own, or none after the end)
            a = client.get(f"/api/play/{sid}/persona")
            adv = a.json()
            assert a.status_code == 200
            if not adv.get("over"):
                assert adv.get("unavailable") or adv["hidden"] and adv["role"] == role
                got.add(adv["ply"], "advice", a)
            asked_idle = True
        time.sleep(0.1)
    assert final["status"] == "over", final.get("reason")
    record = json.loads((logs / final["record"]).read_text())
    return record, got, final


# ------------------------------------------------------------------ what was hidden
def hidden_at(record: dict, me: int, rules_text: str):
    """Per step p (0 .. the last), the terms hidden from role ``me`` (see the module's
    notes) and the facts it knows (the initial state and its percepts up to p)."""
    from agent.reasoner.prolog import PrologReasoner
    from gdl.kif import parse_rules
    parse_term, state = _terms()
    states = [state(t) for t in record["states"]]
    moves = [[parse_term(m) for m in jm] for jm in record["moves"]]
    percepts = [[parse_term(p) for p in step] for step in record["x-percepts"][me]]
    sm = PrologReasoner(parse_rules(rules_text, "rules"))
    try:
        own_legal = [set(sm.legal_moves(s, me)) if not sm.is_terminal(s) else set() for s in states]
    finally:
        sm.close()
    all_facts = set().union(*states)
    others = {m for jm in moves for r, m in enumerate(jm) if r != me}
    out = []
    known, mine = set(states[0]), set()
    for p in range(len(states)):
        if p > 0:
            known |= set(percepts[p - 1])
            mine.add(moves[p - 1][me])
        mine |= own_legal[p]
        seen_terms = set().union(*(subterms(t) for t in known)) if known else set()
        facts = {f for f in all_facts - known if not isinstance(f, str)}
        ms = {m for m in others - seen_terms - mine if not isinstance(m, str)}
        out.append((facts | ms, set(known)))
    return out, states, moves


PIECE = re.compile(r'<g class="piece"[^>]*?data-x="(\d+)" data-y="(\d+)" data-content="([^"]*)"')
BOARD = re.compile(r'<svg class="board[^"]*" data-board="(\d+)"(.*?)</svg>', re.S)


def drawn_pieces(body: str) -> set:
    """(board, (x, y), content) of every piece drawn in a body (JSON-escaped or not)."""
    text = body.replace('\\"', '"')
    out = set()
    for b, svg in BOARD.findall(text):
        for x, y, c in PIECE.findall(svg):
            out.add((int(b), (int(x), int(y)), c.replace("&amp;", "&")))
    return out


def allowed_pieces(view, facts) -> set:
    from gdl.board import cells
    return {(i, xy, c) for i, spec in enumerate(view.specs) for xy, cs in cells(spec, facts).items() for c in cs}


def role_moves_in(obj, me: int, path="") -> list[str]:
    """Paths of JSON objects that name another role together with a move."""
    out = []
    if isinstance(obj, dict):
        if isinstance(obj.get("role"), int) and obj["role"] != me and "move" in obj:
            out.append(path)
        for k, v in obj.items():
            out += role_moves_in(v, me, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += role_moves_in(v, me, f"{path}[{i}]")
    return out


@pytest.mark.parametrize("game, role", GAMES)
def test_nothing_hidden_reaches_the_page_before_the_end_and_everything_after(server, client, game, role):
    from agent.web import boardview as bv
    from agent.web import work
    _, logs = server
    text = (GDL2 / f"{game}.kif").read_text()
    view = work.load_game(text, game)["view"]
    record, got, final = play_match(client, f"gdl2/{game}", role, seed=zlib.crc32(game.encode()) + role, logs=logs)
    assert record["x-gdl2"] and record["isCompleted"]
    hidden, states, moves = hidden_at(record, role, text)
    checked = 0
    for ply, what, body in got.bodies:
        secret, known = hidden[min(ply, len(hidden) - 1)]
        checked += len(secret)
        for t in secret:
            f = occurs(t, body)
            assert f is None, f"step {ply}, {what}: the page shows {f!r}, which {record['x-roles'][role]} had not seen"
        extra = drawn_pieces(body) - allowed_pieces(view, known)
        assert not extra, f"step {ply}, {what}: pieces drawn that were not seen: {sorted(extra)[:4]}"
        if body.startswith("{"):
            d = json.loads(body)
            assert not role_moves_in(d, role), f"step {ply}, {what}: another role's move in {role_moves_in(d, role)}"
            assert d.get("to_move", [role]) in ([], [role]) and not d.get("history") and not d.get("reveal")
    assert got.bodies and (checked > 0 or game == "rock_paper_scissors"), "nothing was hidden: the check proves nothing"

    # after the end: the true states, every joint move and every role's percepts
    body = json.dumps(final)
    for s in states:
        for f in s:
            assert bv.words(forms(f)[0]) in body, f"the end does not show {f}"
    assert [[m["move"] for m in jm["moves"]] for jm in final["history"]] == record["moves"]
    assert [st["percepts"] for st in final["reveal"]["steps"]] == [
        [[bv.words(p) for p in per[k]] for per in record["x-percepts"]] for k in range(len(record["moves"]))]
    assert [len(st["state"]) for st in final["reveal"]["steps"]] == [len(s) for s in states[1:]]
    assert not re.search(r'class="cell[^"]*unseen', final["boards"][0]) if final["boards"] else True
    # and the record opens in the replay, each step with what each role saw
    rep = client.get("/replay", params={"file": final["record"]})
    assert rep.status_code == 200 and '"percepts": [[' in rep.text


def test_gdl2_sheets_are_offered_and_random_is_not_a_seat(client):
    r = client.get("/")
    for g in ("kuhn_poker", "phantom_connect_4x4", "hidden_goofspiel", "rock_paper_scissors"):
        assert f'value="gdl2/{g}"' in r.text
    page = client.get("/game", params={"key": "gdl2/kuhn_poker"})
    assert page.status_code == 200 and 'id="gdl2-note"' in page.text
    assert ">first<" in page.text and ">second<" in page.text and ">random<" not in page.text
    r = client.post("/play", data={"key": "gdl2/kuhn_poker", "role": 2, "persona": PERSONA})
    assert r.status_code == 400 and "played by the referee" in r.text


def test_person_position_draws_only_what_was_seen():
    """The page's board of a phantom game from the initial state and the percepts alone:
    the cells seen in the last step plain, earlier ones faded, the others hatched."""
    if not GDL2.is_dir():
        pytest.skip("../shared (the GDL-II corpus) is not beside this clone")
    from agent.web import work
    text = (GDL2 / "phantom_connect_4x4.kif").read_text()
    g = work.load_game(text, "phantom")
    assert g["gdl2"] and g["init"] == ["(control x)"]
    start = work.person_position(g["view"], g["init"], [], None, 0, ["( cell 1 1 )"])
    assert "unseen" not in start["boards"][0] and start["others"] == ["control x (the start)"]
    pos = work.person_position(g["view"], g["init"], [
        ["( cell 1 1 x )", "( control o )", "( revealed x ( cell 1 1 ) )"],
        ["( control x )"],
        ["( cell 2 2 o )", "( control o )", "( revealed x ( cell 2 2 ) )"]], "( cell 2 2 )", 0, ["( cell 3 3 )"])
    svg = pos["boards"][0]
    assert svg.count('class="cell unseen"') + svg.count('class="cell last unseen"') == 16 - 2
    pieces = drawn_pieces(svg)
    assert pieces == {(0, (0, 0), "x"), (0, (1, 1), "o")}
    assert 'data-content="x" data-age="2"' in svg and 'data-content="o" opacity' not in svg
    assert pos["others"] == ["control o", "revealed x (cell 2 2)"]
    assert pos["clicks"] == [{"move": "( cell 3 3 )", "cells": [[2, 2]], "column": None}]
