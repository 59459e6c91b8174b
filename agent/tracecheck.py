"""Replay a reference trace (format ``ggp-trace/1``) against one of our engines.

Every recorded step is re-derived independently of the previous answers: the first state
is our initial state, each later state is our next state from the *recorded* previous state
and joint move, so one divergence does not cascade.  Per field (state, terminal, legal,
goals) we count agreements and keep the first divergence with its context.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gdl.kif import parse_term
from gdl.terms import render

FIELDS = ("state", "terminal", "legal", "goals")


@dataclass
class TraceReport:
    game: str
    steps: int = 0
    agree: dict = field(default_factory=lambda: {f: 0 for f in FIELDS})
    checked: dict = field(default_factory=lambda: {f: 0 for f in FIELDS})
    first_divergence: dict | None = None
    error: str | None = None

    @property
    def exact(self) -> bool:
        return self.error is None and self.first_divergence is None and self.steps > 0

    def summary(self) -> str:
        parts = [f"{f} {self.agree[f]}/{self.checked[f]}" for f in FIELDS]
        head = f"{self.game}: {self.steps} steps; " + ", ".join(parts)
        if self.error:
            return head + f"\n  error: {self.error}"
        if self.first_divergence:
            d = self.first_divergence
            return (head + f"\n  first divergence: walk {d['walk']} step {d['step']} field {d['field']}"
                    f"\n    expected: {d['expected']}\n    ours:     {d['ours']}"
                    f"\n    state:    {' '.join(d['state'])}")
        return head + "\n  exact agreement"


def load_trace(path) -> dict:
    with open(path) as f:
        trace = json.load(f)
    if trace.get("format") != "ggp-trace/1":
        raise ValueError(f"{path}: not a ggp-trace/1 file (format={trace.get('format')!r})")
    return trace


def check_trace(sm, trace: dict, max_steps: int | None = None) -> TraceReport:
    rep = TraceReport(trace.get("game") or trace.get("rules", "?"))
    roles = [render(r) for r in sm.roles]
    if roles != trace["roles"]:
        rep.error = f"roles differ: expected {trace['roles']}, ours {roles}"
        return rep
    parsed: dict = {}

    def term(text):
        t = parsed.get(text)
        if t is None:
            t = parsed[text] = parse_term(text)
        return t

    try:
        for wi, walk in enumerate(trace["walks"]):
            prev_state = prev_move = None
            for si, step in enumerate(walk["steps"]):
                if max_steps is not None and rep.steps >= max_steps:
                    return rep
                recorded = frozenset(term(t) for t in step["state"])
                ours_state = sm.initial_state() if si == 0 else sm.next_state(prev_state, prev_move)
                ours = {
                    "state": sorted(render(f) for f in ours_state),
                    "terminal": sm.is_terminal(recorded),
                    "legal": [[render(m) for m in sm.legal_moves(recorded, i)] for i in range(len(roles))],
                    "goals": sm.goal_values(recorded),
                }
                expected = {"state": sorted(step["state"]), "terminal": step["terminal"],
                            "legal": [sorted(ms) for ms in step["legal"]], "goals": step["goals"]}
                rep.steps += 1
                for f in FIELDS:
                    rep.checked[f] += 1
                    if ours[f] == expected[f]:
                        rep.agree[f] += 1
                    elif rep.first_divergence is None:
                        rep.first_divergence = {"walk": wi, "step": si, "field": f,
                                                "expected": expected[f], "ours": ours[f],
                                                "state": sorted(step["state"])}
                prev_state = recorded
                prev_move = tuple(term(m) for m in step["move"]) if "move" in step else None
    except Exception as e:  # a reasoner error is a finding, reported with the game
        rep.error = f"{type(e).__name__}: {e}"
    return rep


def rules_path_for(trace: dict, trace_path) -> Path:
    """The trace names its rules relative to the shared folder (``corpus/games/...``)."""
    shared = Path(trace_path).resolve().parent.parent.parent
    return shared / trace["rules"]
