"""Priors over the moves a history sampler cannot see: uniform, or learned from recorded
matches (predictive determinisation, Dockhorn 2020, chapter 5).

A prior answers ``probabilities(sm, state, role_index, legal, step)``: one probability per
legal move of a role in a complete (sampled) state, ``step`` joint moves into the match.
``random`` moves uniformly by GDL-II's own semantics, whatever the records say.

The predictive prior counts the moves each role made in recorded matches of the same rules
(the full records a referee keeps) at four levels: the move alone, the move at that step
of the match, the move in exactly that state (a state holds the role's private facts,
its card or its placement, so a habit that depends on them is learned there), and the move
on exactly that view of the role (its own moves and percepts so far, from the records'
``x-percepts``): what a player decides on.  The state is too specific for that: it holds
the others' hidden facts too, so a database where the persona held the queen against a
jack that checked said nothing of the same queen against a jack that bet, and the search
against the prediction then bet into calls.  The sampler asks by state (its histories'
states); the search against the prediction asks by view where it follows the roles' views.  The levels
back off into each other, from the least specific to the most: each level's counts, among
the moves legal now, are smoothed towards the level below with ``ALPHA`` pseudo-counts
(Dirichlet smoothing: uniform → alone → at this step → in this state or on this view), so a habit seen ten
times in exactly this state gets most of the mass, and a level with one observation only
nudges.  (Adding the levels' shares instead, as this module first did, left a habit that
never varied at about 0.6-0.8: in Kuhn poker a bet seen only with the king still made the
queen or the jack about as likely, and the decision to call did not change.)  The result is
mixed with a uniform floor, so that a move never seen keeps some probability: a database
that does not represent the opponent must not make the true history impossible.  Moves and
states are keys and nothing else: no game knowledge.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from gdl.gdl2 import RANDOM
from gdl.kif import GdlError, parse_term, read_first
from gdl.terms import render, render_spaced

from agent.matchtext import parse_rules_text
from agent.modelling.baselines import state_key
from agent.reasoner.statemachine import RulesRefused

ALONE, AT_STEP, IN_STATE, IN_VIEW = range(4)   # the levels of the counts
MAX_RECORDS = 500               # of a folder's records read for one match, the newest first
FLOOR = 0.1                     # the uniform share of every predictive probability
ALPHA = 2.0                     # pseudo-counts a level borrows from the one below it


class UniformPrior:
    kind = "uniform"

    def probabilities(self, sm, state, role_index: int, legal: list, step: int) -> list:
        return [1.0 / len(legal)] * len(legal)

    def describe(self) -> dict:
        return {"sampling": self.kind}


def _move_key(m) -> str:
    """A move as a key: its text in ggp-base's spacing, lower case (records keep texts)."""
    text = m if isinstance(m, str) else render_spaced(m)
    return " ".join(text.lower().split())


class MoveFrequencyPrior:
    """Move counts per role (by its index in the rules) from whole recorded matches."""
    kind = "predictive"

    def __init__(self, roles: list, source: str = "records"):
        self.roles = list(roles)
        self.source = source
        self.counts = [Counter() for _ in roles]    # (level, context, move) -> count
        self.matches = 0

    def add_match(self, joint_moves: list, states: list | None = None, percepts: list | None = None) -> None:
        """One recorded match: its joint moves (terms or texts, role order) and, when the
        record has them, the states they were made in and each role's percepts per step
        (``x-percepts``: what each role knew when it moved)."""
        self.matches += 1
        views = [""] * len(self.roles)
        for k, jm in enumerate(joint_moves):
            state = states[k] if states is not None and k < len(states) else None
            moves = list(jm)[:len(self.roles)]
            for i, m in enumerate(moves):
                key = _move_key(m)
                ctx = [(ALONE, ""), (AT_STEP, str(k))]
                if state is not None:
                    ctx.append((IN_STATE, state_key(state)))
                if percepts is not None:
                    ctx.append((IN_VIEW, views[i]))
                for level, c in ctx:
                    self.counts[i][(level, c, key)] += 1
            if percepts is not None:
                views = [view_key(views[i], moves[i], _percepts_at(percepts, i, k)) for i in range(len(moves))]

    def probabilities(self, sm, state, role_index: int, legal: list, step: int, view: str | None = None) -> list:
        """One probability per legal move of role ``role_index`` in ``state`` at ``step``;
        ``view``: the role's own view of the match so far (``view_key``), where known: a
        player moves on what it saw, not on the others' hidden facts, so its view replaces
        the state as the most specific level."""
        n = len(legal)
        if self.roles[role_index] == RANDOM or self.matches == 0:
            return [1.0 / n] * n
        keys = [_move_key(m) for m in legal]
        counts = self.counts[role_index]
        p = [1.0 / n] * n
        for level, c in self._contexts(state, step, view):   # least specific first
            seen = [counts[(level, c, key)] for key in keys]   # only the moves legal now count
            total = sum(seen)
            if total:
                p = [(k + ALPHA * q) / (total + ALPHA) for k, q in zip(seen, p)]
        return [FLOOR / n + (1 - FLOOR) * q for q in p]

    def _contexts(self, state, step: int, view: str | None) -> list:
        return [(ALONE, ""), (AT_STEP, str(step)),
                (IN_VIEW, view) if view is not None else (IN_STATE, state_key(state))]

    def support(self, state, role_index: int, legal: list, step: int, view: str | None = None) -> int:
        """How many of the role's recorded moves the most specific level saw here (on this
        view, or in this state): 0 where the prediction is only the levels below it."""
        level, c = self._contexts(state, step, view)[-1]
        return sum(self.counts[role_index][(level, c, _move_key(m))] for m in legal)

    def describe(self) -> dict:
        return {"sampling": self.kind, "database": self.source, "matches": self.matches}


def view_key(previous: str, own, percepts) -> str:
    """A role's view of a match after one more step, from its view before it, its own move
    and its percepts (terms or texts): a short key, the same from a record's texts and from
    an engine's terms."""
    text = previous + "|" + _move_key(own) + "|" + ",".join(sorted(_move_key(p) for p in percepts))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _percepts_at(percepts: list, role: int, step: int) -> list:
    rows = percepts[role] if role < len(percepts) else []
    return rows[step] if step < len(rows) else []


def from_records(paths, roles: list) -> MoveFrequencyPrior:
    """A predictive prior from Match JSON records of the same rules with every role's moves
    (a referee's: our runner's GDL-II records keep the whole match); the states, where
    recorded, are read as ggp-base writes them."""
    prior = MoveFrequencyPrior(roles, source=f"{len(paths)} records")
    for path in paths:
        with open(path, encoding="utf-8") as f:
            _add_record(prior, json.load(f), roles)
    return prior


def _add_record(prior: MoveFrequencyPrior, record: dict, roles: list) -> None:
    """One record's match into ``prior``: its moves, and its states and every role's
    percepts where the record has them in a readable shape."""
    moves = record.get("moves") or []
    states = None
    if record.get("states"):
        try:
            states = [_state(s) for s in record["states"]]
        except (ValueError, GdlError):
            states = None
    percepts = record.get("x-percepts")
    if not (isinstance(percepts, list) and len(percepts) == len(roles)
            and all(isinstance(rows, list) for rows in percepts)):
        percepts = None
    if moves:
        prior.add_match(moves, states, percepts)


def _state(text: str) -> frozenset:
    """A state as ggp-base's records write it (``( ( cell 1 1 b ) ( control x ) )``)."""
    node = read_first(text)
    if node is None or node.is_atom:
        raise ValueError(f"a state must be a list: {text[:80]!r}")
    return frozenset(parse_term(repr(n)) for n in node.items)


def rules_identity(description) -> str:
    """The same rules however a manager cases, spaces or orders them (GDL is not case
    sensitive): the parsed rules, each rendered in lower case, sorted and hashed (the symbols as the rules name them: scrambled rules of the
    same game are other rules)."""
    lines = sorted((render(r.head) + " :- " + " & ".join(render(b) for b in r.body)).lower()
                   for r in description.rules)
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()


def from_folder(folder, description, roles: list) -> tuple[MoveFrequencyPrior | None, list]:
    """The predictive prior of a GDL-II match from a folder of recorded matches: every Match
    JSON record under ``folder`` (the newest ``MAX_RECORDS``) whose rules (``x-rules``) are
    these rules and which a host kept whole (every role's moves; a player's own record of a
    GDL-II match, with ``x-role``, holds only what it saw).  ``None`` where no record fits;
    the notes say what was read and skipped.  Each file is read once and each distinct rules
    text parsed once (a folder's records mostly share one; this runs in a start clock)."""
    want = rules_identity(description)
    try:
        paths = sorted(Path(folder).rglob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError as e:
        return None, [f"records folder {folder}: {e.strerror or e}"]
    same: dict = {}      # rules text -> whether it is these rules
    used, skipped = [], 0
    for path in paths[:MAX_RECORDS]:
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
            if not isinstance(record, dict) or "x-role" in record or not record.get("moves"):
                continue
            text = record.get("x-rules") or ""
            if text not in same:
                same[text] = rules_identity(parse_rules_text(text)) == want
            if not same[text]:
                continue
            if any(not isinstance(jm, list) or len(jm) != len(roles) for jm in record["moves"]):
                skipped += 1
                continue
            used.append(record)
        except (OSError, ValueError, GdlError, RulesRefused, RecursionError):
            skipped += 1
    notes = [f"records folder {folder}: {len(used)} whole records of these rules"
             + (f", {skipped} unreadable or partial skipped" if skipped else "")]
    if not used:
        return None, notes
    prior = MoveFrequencyPrior(roles, source=f"{len(used)} records")
    try:
        for record in used:
            _add_record(prior, record, roles)
    except (ValueError, GdlError) as e:
        return None, notes + [f"records folder {folder}: {e}"]
    return prior, notes
