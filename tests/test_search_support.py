"""Helpers for the search tests: tiny inline GDL games, board builders, persona tweaks.

The inline games need nothing beside the repository, so the tests that use them always
run; each isolates one parameter's effect (fixed terminal goals one move away, etc.).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from agent.persona import load_persona, persona_from_dict
from gdl.kif import parse_rules, parse_term, read_rules_file

ROOT = Path(__file__).resolve().parents[1]
SHARED_GAMES = ROOT.parent / "shared" / "corpus" / "games" / "base" / "games"

_reasoners: dict = {}


def reasoner(text_or_path):
    """A (memoised) Prolog reasoner for inline rules text or a .kif path."""
    from agent.reasoner.prolog import PrologReasoner
    key = str(text_or_path)
    if key not in _reasoners:
        desc = (read_rules_file(text_or_path) if isinstance(text_or_path, Path)
                else parse_rules(text_or_path))
        _reasoners[key] = PrologReasoner(desc)
    return _reasoners[key]


_compiled: dict = {}


def compiled(text_or_path):
    """A (memoised) compiled engine for inline rules text or a .kif path."""
    from agent.engine import load_engine
    key = str(text_or_path)
    if key not in _compiled:
        desc = (read_rules_file(text_or_path) if isinstance(text_or_path, Path)
                else parse_rules(text_or_path))
        _compiled[key] = load_engine(desc, engine="compiled", use_cache=False)
    return _compiled[key]


@pytest.fixture(params=["prolog", "compiled"])
def make(request):
    """Engine factory for both drivers: Prolog (driver A) and compiled (driver B)."""
    return reasoner if request.param == "prolog" else compiled


def T(text: str):
    return parse_term(text)


def persona(**changes):
    """The champion with changes (validated like a file, unless a value is out of range
    on purpose: pass check=False)."""
    check = changes.pop("check", True)
    base = load_persona("champion")
    d = {k: getattr(base, k) for k in (
        "rave", "grave", "charge_depth", "horizon", "exploration_factor", "limit",
        "tree_discount", "charge_discount", "epsilon", "charge_defaults", "defensiveness",
        "aggressiveness", "random_error", "nice_threshold", "mast_tau", "kappa")}
    d.update(name="test", kind="champion")
    utility = changes.pop("utility", None)
    d.update(changes)
    if utility:
        d["utility"] = utility
    return persona_from_dict(d, "<test>", check_ranges=check)


def neutral(**changes):
    """No discounts, no RAVE/MAST: Q is the plain mean of exact results."""
    base = dict(tree_discount=1.0, charge_discount=1.0, rave=0, grave=0, epsilon=0.0)
    base.update(changes)
    return persona(**base)


# ------------------------------------------------------------------ inline games
def menu_game(options: dict) -> str:
    """One player picks an option; the game ends with that option's goal."""
    facts = " ".join(f"(opt {k} {v})" for k, v in options.items())
    return f"""
(role p)
(init start)
{facts}
(<= (legal p (pick ?x)) (true start) (opt ?x ?v))
(<= (next (chose ?x)) (does p (pick ?x)))
(<= terminal (true (chose ?x)))
(<= (goal p ?v) (true (chose ?x)) (opt ?x ?v))
(<= (goal p 0) (true start))
"""


RACE = """
(role p)
(init start)
(<= (legal p quick) (true start))
(<= (legal p slow) (true start))
(<= (legal p go) (true (far ?n)))
(<= (next won) (does p quick))
(<= (next (far 1)) (does p slow))
(<= (next (far 2)) (true (far 1)))
(<= (next (far 3)) (true (far 2)))
(<= (next won) (true (far 3)))
(<= terminal (true won))
(<= (goal p 100) (true won))
(<= (goal p 0) (not (true won)))
"""


def counter_game(n: int) -> str:
    """Two moves per step, ends at step n with 100: only depth decides anything."""
    succ = " ".join(f"(succ {i} {i + 1})" for i in range(n))
    return f"""
(role p)
(init (step 0))
{succ}
(<= (legal p a) (true (step ?n)))
(<= (legal p b) (true (step ?n)))
(<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))
(<= terminal (true (step {n})))
(<= (goal p 100) (true (step {n})))
(<= (goal p 0) (not (true (step {n}))))
"""


NEEDLE = """
(role p)
(init start)
(slot 0) (slot 1) (slot 2) (slot 3) (slot 4) (slot 5) (slot 6) (slot 7) (slot 8) (slot 9)
(<= (legal p a) (true start))
(<= (legal p b) (true start))
(<= (legal p (n ?k)) (true mid) (slot ?k))
(<= (next mid) (does p a))
(<= (next (done 40)) (does p b))
(<= (next (done 100)) (does p (n 7)))
(<= (next (done 0)) (does p (n ?k)) (distinct ?k 7))
(<= finished (true (done ?v)))
(<= terminal finished)
(<= (goal p ?v) (true (done ?v)))
(<= (goal p 0) (not finished))
"""


def needle(make):
    """The NEEDLE engine.  Its moves ``(n ?k)`` become legal only after the propositional
    fluent ``mid``: the compiled engine's grounding once missed them (see ground.py)."""
    e = make(NEEDLE)
    assert e.next_state(frozenset(["mid"]), [T("(n 7)")]) == {T("(done 100)")}
    return e


def nim_game(stones: int) -> str:
    """Take 1 or 2; whoever takes the last stone wins.  Multiples of 3 lose for the mover."""
    minus = " ".join(f"(minus {s} {k} {s - k})" for s in range(1, stones + 1) for k in (1, 2) if s - k >= 0)
    return f"""
(role first)
(role second)
(init (stones {stones}))
(init (control first))
{minus}
(<= (legal ?r (take ?n)) (true (control ?r)) (true (stones ?s)) (minus ?s ?n ?t))
(<= (legal ?r noop) (role ?r) (not (true (control ?r))))
(<= (next (stones ?t)) (does ?r (take ?n)) (true (stones ?s)) (minus ?s ?n ?t))
(<= (next (control second)) (true (control first)))
(<= (next (control first)) (true (control second)))
(<= (next (last ?r)) (does ?r (take ?n)))
(<= terminal (true (stones 0)))
(<= (goal ?r 100) (true (last ?r)))
(<= (goal ?r 0) (role ?r) (not (true (last ?r))))
"""


# Simultaneous moves: both pick heads or tails; matching pays `first`, else `second`.
MATCHING = """
(role first)
(role second)
(init start)
(side heads) (side tails)
(<= (legal ?r (show ?s)) (role ?r) (true start) (side ?s))
(<= (next (shown ?r ?s)) (does ?r (show ?s)))
(<= played (true (shown ?r ?s)))
(<= terminal played)
(<= same (true (shown first ?s)) (true (shown second ?s)))
(<= (goal first 100) same)
(<= (goal first 0) played (not same))
(<= (goal second 0) same)
(<= (goal second 100) played (not same))
(<= (goal ?r 50) (role ?r) (not played))
"""


# ------------------------------------------------------------------ board games
class TicTacToe:
    """Board text (3 rows of 'x', 'o', '.') -> a state, for our sheet or the corpus one."""

    def __init__(self, path: Path, corpus: bool):
        self.path, self.corpus = path, corpus
        self.sm = reasoner(path)
        self.roles = self.sm.roles

    def state(self, board: str, to_move: str):
        rows = board.split()
        names = ({"x": "x", "o": "o", ".": "b"} if self.corpus
                 else {"x": "cross", "o": "nought", ".": "blank"})
        rel = "cell" if self.corpus else "square"
        facts = [T(f"({rel} {i + 1} {j + 1} {names[c]})") for i, row in enumerate(rows) for j, c in enumerate(row)]
        role = self.roles[0 if to_move == "x" else 1]
        return frozenset(facts + [("control", role)])

    def move(self, row: int, col: int):
        return T(f"(mark {row} {col})" if self.corpus else f"(place {row} {col})")


class ConnectFour:
    """Columns bottom-up (e.g. ['rr', 'y', '', ...]) -> a state."""

    def __init__(self, path: Path, corpus: bool):
        self.path, self.corpus = path, corpus
        self.sm = reasoner(path)
        self.roles = self.sm.roles     # red first

    def state(self, columns: list, to_move: str):
        rel = "cell" if self.corpus else "disc"
        names = {"r": self.roles[0], "y": self.roles[1]}
        facts = [(rel, str(c + 1), str(h + 1), names[d]) for c, col in enumerate(columns) for h, d in enumerate(col)]
        return frozenset(facts + [("control", names[to_move])])

    def move(self, col: int):
        return T(f"(drop {col})")


def ttt_variants():
    out = [("ours", ROOT / "games" / "ticTacToe.kif", False)]
    out.append(("corpus", SHARED_GAMES / "ticTacToe" / "v0" / "ticTacToe.kif", True))
    return out


def c4_variants():
    return [("ours", ROOT / "games" / "connectFour.kif", False),
            ("corpus", SHARED_GAMES / "connectFour" / "v0" / "connectFour.kif", True)]
