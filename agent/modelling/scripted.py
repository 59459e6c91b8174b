"""Scripted "people": players with one simple habit, to measure whether a fitted clone carries
a habit to positions it never saw (``scripts/bench_clone.py``).

Each habit orders the legal moves by keys read from the move features
(``movefeatures.compute`` on the game's board found from the rules), best first, and plays
the first; ties go to the leftmost, then lowest, target cell, then the first legal move.  So a
habit is exactly as expressible in the features as its rule is: "leftmost open column" is
the target's rank along the first coordinate, "capture" is the captures column, "copy the
opponent" is the same move as the opponent's last.

``ScriptedPlayer`` speaks the match runner's player interface (``agent.match.players``): it
reads the rules it is sent (scrambled or not), keeps the state on its own engine, and answers
at once.
"""
from __future__ import annotations

from agent.engine.loader import load_engine
from agent.matchtext import parse_rules_text, resolve_joint, role_index_of
from gdl.terms import render_spaced

from . import movefeatures as MF

I = MF.INDEX


def _tie(X, j):
    """Leftmost, then lowest, then the first legal move; moves without a cell last."""
    return (-X[j, I["cell"]], X[j, I["x"]], X[j, I["y"]], j)


HABITS = {
    "leftmost": ("the leftmost target cell (lowest first coordinate), then the lowest",
                 lambda X, j: _tie(X, j)),
    "rightmost": ("the rightmost target cell, then the lowest",
                  lambda X, j: (-X[j, I["cell"]], -X[j, I["x"]], X[j, I["y"]], j)),
    "centre": ("the target nearest the board's centre",
               lambda X, j: (-X[j, I["cell"]], round(X[j, I["centre_dist"]], 9)) + _tie(X, j)),
    "edge": ("the target nearest an edge",
             lambda X, j: (-X[j, I["cell"]], round(X[j, I["edge_dist"]], 9)) + _tie(X, j)),
    "capture": ("a capture whenever there is one (the most pieces), else the leftmost",
                lambda X, j: (-X[j, I["captured"]],) + _tie(X, j)),
    "copy": ("the opponent's last move where it is legal, else the leftmost",
             lambda X, j: (-X[j, I["same_as_opp"]],) + _tie(X, j)),
    "near-own": ("the target nearest my own last move's, else the leftmost",
                 lambda X, j: (-X[j, I["cell"]], round(X[j, I["own_dist"]], 9)) + _tie(X, j)),
    "near-opp": ("the target nearest the opponent's last move's, else the leftmost",
                 lambda X, j: (-X[j, I["cell"]], round(X[j, I["opp_dist"]], 9)) + _tie(X, j)),
}


def choose(habit: str, view: MF.MoveView, engine, state, role: int, moves, history=()) -> int:
    """Index of the move the habit plays among ``moves``."""
    X = MF.compute(view, engine, state, role, moves, history)
    key = HABITS[habit][1]
    return min(range(len(moves)), key=lambda j: key(X, j))


class ScriptedPlayer:
    """A player with one habit (``HABITS``), for ``agent.match.runner.run_match``."""

    is_human = False
    wants_legal = True

    def __init__(self, habit: str, name: str | None = None):
        if habit not in HABITS:
            raise ValueError(f"unknown habit {habit!r} (one of {', '.join(HABITS)})")
        self.habit = habit
        self.name = name or habit
        self.legal = None
        self.engine = self.view = self.state = None
        self.role = 0
        self.history: list = []
        self._games: dict = {}      # rules text -> (engine, view): one engine per game

    async def prepare(self) -> None:
        pass

    async def start(self, match_id, role, rules_text, start_clock, play_clock) -> None:
        description = parse_rules_text(rules_text)
        got = self._games.get(rules_text)
        if got is None:
            engine = load_engine(description)
            got = self._games[rules_text] = (engine, MF.MoveView.detect(description, engine))
        self.engine, self.view = got
        self.role = role_index_of(description, role)
        self.state = self.engine.initial_state()
        self.history = []

    def _observe(self, last_moves) -> None:
        joint, _ = resolve_joint(self.engine, self.state, last_moves, len(self.engine.roles))
        self.history = (self.history + [(self.state, tuple(joint))])[-MF.HISTORY:]
        self.state = self.engine.next_state(self.state, tuple(joint))

    async def play(self, match_id, last_moves, timeout) -> str:
        if last_moves is not None:
            self._observe(last_moves)
        moves = list(self.engine.legal_moves(self.state, self.role))
        j = choose(self.habit, self.view, self.engine, self.state, self.role, moves, self.history)
        return render_spaced(moves[j])

    async def stop(self, match_id, last_moves) -> None:
        pass

    async def abort(self, match_id) -> None:
        pass

    async def close(self) -> None:
        self._games.clear()
