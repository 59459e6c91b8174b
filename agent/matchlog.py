"""Match records in ggp-base's Match JSON, written atomically after every step.

Fields as ggp-base writes them (``Match.toJSON``): matchId, randomToken, startTime,
gameMetaURL, isCompleted, isAborted, states, moves, stateTimes, errors, goalValues (only when
completed), previewClock/startClock/playClock, playerNamesFromHost, scrambled.  Ours add:

  x-role        our role, as received
  x-rules       the rules list exactly as received (the record replays without a repository)
  x-persona     {"name": ..., "parameters": {...}} of the persona that played
  x-decisions   one entry per PLAY we answered: ply, legal moves, chosen move, q and visits per
                move, simulations (= playouts, the leaf evaluations that walked the game, +
                proven_descents, the tree descents that ended in a terminal or proven node;
                both null when the search used does not tell them apart), transpositions
                (moves of the descents that reached a state already searched), evaluated
                (playouts the game's evaluation ended) and extended (of them, the ones run on
                past its depth to a quiet state), elapsed seconds,
                search used, whether a fallback was sent
  x-notes       problems seen during the match (illegal or unparsable moves, late workers, ...)
  x-player      our name; x-refused: why a START was refused
  x-peak-rss-mb the largest resident memory the server's watchdog saw per worker process
                (referee, player, grounder), in MB, sampled every ``memory_poll`` seconds
  x-gdl2        true in a GDL-II match (a role ``random`` or ``sees`` rules)
  x-percepts    GDL-II: for each role (in role order), its percepts per step: one list of
                percept texts (sorted; ``[]`` when it saw nothing) per joint move in ``moves``;
                ``moves`` and ``states`` still hold the whole match (random's moves too)

Vocabulary: everything is spelled as the manager sent it (scrambled names stay scrambled, so
the record agrees with ``x-rules``); ``scrambled`` is false because the record is consistent
in that vocabulary.  ``gameMetaURL`` is unknown to a player: we write
``urn:ggp-persona:rules-sha1:<hex>`` (the SHA-1 of x-rules), which names the exact rules.

Consistency: ``len(states) == len(stateTimes) == len(moves) + 1 == len(errors)``, as ggp-base
and the spectator server require; moves whose resulting state is not known yet are kept in
``x-pending-moves`` until it is.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import secrets
import string
import tempfile
import time
from pathlib import Path

_TOKEN_CHARS = string.ascii_letters + string.digits


def random_token(n: int = 32) -> str:
    return "".join(secrets.choice(_TOKEN_CHARS) for _ in range(n))


def now_ms() -> int:
    return int(time.time() * 1000)


def rules_urn(rules_text: str) -> str:
    return "urn:ggp-persona:rules-sha1:" + hashlib.sha1(rules_text.encode("utf-8", "replace")).hexdigest()


def safe_name(match_id: str) -> str:
    """A file name from a match id (ids are arbitrary atoms; keep them readable but harmless)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", match_id)[:150].lstrip(".")
    return name or "match"


def atomic_write_json(path, obj) -> None:
    """Write JSON so that readers see the old file or the new one, never a part of either."""
    atomic_write_bytes(path, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def atomic_write_bytes(path, data: bytes) -> None:
    """Temporary file in the same folder, fsync, rename over, fsync the folder: a crash
    leaves the old file or the new one.  (Records, reports, anything a reader may open.)"""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp makes it private; these files are for sharing
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)



def atomic_write_packed(path, data: bytes, pack_over: int | None) -> Path:
    """``data`` written atomically as ``path``, or gzip-compressed as ``path.gz`` when it is
    over ``pack_over`` bytes (None: never); the other form an earlier run left is removed,
    so that a folder never holds two versions of one file.  No timestamp goes inside the
    gzip: the same data gives the same bytes.  Returns the path written."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    if pack_over is not None and len(data) > pack_over:
        path, other, data = packed, path, gzip.compress(data, mtime=0)
    else:
        other = packed
    atomic_write_bytes(path, data)
    other.unlink(missing_ok=True)
    return path

def create_record_file(directory, match_id: str, obj) -> Path:
    """Write ``obj`` to a new ``<directory>/<safe id>.json`` (``.2``, ``.3``... when an earlier
    match used the id) and return its path.  Claiming the name and writing the content are
    one step (hard link of a complete temporary file), so no empty or partial record exists
    even for a moment, and two matches never share a file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    base = safe_name(match_id)
    tmp = directory / f".{base}.{os.getpid()}.{secrets.token_hex(4)}.new"
    atomic_write_json(tmp, obj)
    try:
        n = 1
        while True:
            path = directory / (f"{base}.json" if n == 1 else f"{base}.{n}.json")
            try:
                os.link(tmp, path)
                return path
            except FileExistsError:
                n += 1
    finally:
        os.unlink(tmp)


class MatchRecord:
    """The record of one match as seen by our player."""

    def __init__(self, match_id: str, role: str, rules_text: str, start_clock, play_clock,
                 persona: dict | None = None, player_name: str = "", start_time: int | None = None,
                 game_meta_url: str | None = None, preview_clock: int = -1):
        self.match_id = match_id
        self.role = role
        self.rules_text = rules_text
        self.start_time = start_time if start_time is not None else now_ms()
        self.random_token = random_token()
        self.game_meta_url = game_meta_url or rules_urn(rules_text)
        self.start_clock = start_clock
        self.play_clock = play_clock
        self.preview_clock = preview_clock
        self.persona = persona or {}
        self.player_name = player_name
        self.roles: list | None = None
        self.role_index: int | None = None
        self.states: list = []          # state texts by ply
        self.state_times: list = []
        self.moves: list = []           # joint moves (lists of texts), as received
        self.decisions: list = []
        self.notes: list = []
        self.goal_values: list | None = None
        self.completed = False
        self.aborted = False
        self.refused: str | None = None
        self.percepts: list | None = None  # GDL-II: per step, every role's percept texts
        self.extra: dict = {}

    # -------------------------------------------------------------- updates
    def set_roles(self, roles: list, role_index: int) -> None:
        self.roles = list(roles)
        self.role_index = role_index

    def set_state(self, ply: int, text: str, time_ms: int | None = None) -> None:
        """State number ``ply`` (0 = initial); states arrive in order."""
        if ply != len(self.states):
            self.note(f"state {ply} arrived when {len(self.states)} states were known; ignored")
            return
        self.states.append(text)
        self.state_times.append(time_ms if time_ms is not None else now_ms())

    def add_moves(self, joint: list) -> None:
        self.moves.append(list(joint))

    def set_moves(self, ply: int, joint: list) -> None:
        """The joint move that led to state ``ply``, as actually applied (replaces the texts
        recorded on receipt, which may have had unparsable entries)."""
        if ply - 1 < len(self.moves):
            self.moves[ply - 1] = list(joint)
        elif ply - 1 == len(self.moves):
            self.moves.append(list(joint))

    def add_percepts(self, per_role: list) -> None:
        """Every role's percepts of the next step (GDL-II; makes the record a GDL-II one)."""
        if self.percepts is None:
            self.percepts = []
        self.percepts.append([list(ps) for ps in per_role])

    def add_decision(self, decision: dict) -> None:
        self.decisions.append(decision)

    def note(self, text: str) -> None:
        self.notes.append({"time": now_ms(), "text": text})

    def complete(self, goals: list | None) -> None:
        self.completed = True
        self.goal_values = None if goals is None else [int(g) for g in goals]

    def abort(self) -> None:
        self.aborted = True

    # -------------------------------------------------------------- output
    def to_json(self) -> dict:
        n_states = len(self.states)
        n_moves = max(0, min(len(self.moves), n_states - 1))
        n_roles = len(self.roles) if self.roles else (len(self.moves[0]) if self.moves else 0)
        d = {
            "matchId": self.match_id,
            "randomToken": self.random_token,
            "startTime": self.start_time,
            "gameMetaURL": self.game_meta_url,
            "isCompleted": self.completed,
            "isAborted": self.aborted,
            "states": self.states[:n_moves + 1],
            "moves": self.moves[:n_moves],
            "stateTimes": self.state_times[:n_moves + 1],
            "errors": [[""] * n_roles for _ in range(min(n_states, n_moves + 1))],
            "previewClock": self.preview_clock,
            "startClock": _int_clock(self.start_clock),
            "playClock": _int_clock(self.play_clock),
            "scrambled": False,
            "x-role": self.role,
            "x-player": self.player_name,
            "x-rules": self.rules_text,
            "x-persona": self.persona,
            "x-decisions": list(self.decisions),
        }
        if self.roles is not None:
            names = [""] * len(self.roles)
            if self.role_index is not None:
                names[self.role_index] = self.player_name
            d["playerNamesFromHost"] = names
            d["x-roles"] = self.roles
        if self.completed and self.goal_values is not None:
            d["goalValues"] = self.goal_values
        if len(self.moves) > n_moves:
            d["x-pending-moves"] = self.moves[n_moves:]
        if self.percepts is not None:
            d["x-gdl2"] = True
            steps = self.percepts[:n_moves]
            d["x-percepts"] = [[list(step[r]) for step in steps] for r in range(n_roles)]
        if self.notes:
            d["x-notes"] = list(self.notes)
        if self.refused:
            d["x-refused"] = self.refused
        d.update(self.extra)
        return d


def _int_clock(c):
    if c is None:
        return None
    return int(c) if float(c).is_integer() else c
