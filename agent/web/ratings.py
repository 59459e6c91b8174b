"""Ratings of the people, personas and clones who play on the web page (openskill).

Every finished match of the page updates the ratings of its players with openskill's
Plackett-Luce model (any number of players; ties share a rank), their goals as the scores.
What counts, read from the match record alone (``outcome``):

* a match that reached a terminal state (``isCompleted``): its ``goalValues``;
* a match ended by agreement (a resignation, an agreed draw): the ``x-result`` goals;
* nothing else: an aborted match (a closed page, a persona that stopped) and a match still
  being played do not count, and neither does a GDL-II match before it has ended;
* only matches with a person in them and at least two seats (GDL-II's random role, which
  the referee moves, is no player); a one-player puzzle rates no one.

The table is kept in ``<log dir>/ratings/table.json`` (written atomically) with the names of
the records it counted and of the ended ones that do not count, so a record is read once it
has ended and never counted twice (``Ratings.sync``, after every match of the page and on
every view of the table; matches that ended while the server was down are counted at the
next sync).  It always equals ``replay`` of the records in date order (``startTime``, then
the match id): a match that ends after a match that started later makes the table be
recomputed from every record.  A missing or unreadable table is recomputed from the records
too, with a message that says so (never a crash).

A player is a ``kind`` and a name: ``person`` (``isPlayerHuman``), ``persona`` (a preset or a
persona file, by its name) or ``clone`` (a person's clone from "learn my style", one per fit,
named "<person>-clone (<game>)").
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from openskill.models import PlackettLuce

from agent.matchlog import atomic_write_bytes

log = logging.getLogger("ggp_persona.web.ratings")

FORMAT = "ggp-persona ratings"
VERSION = 1
TABLE = Path("ratings") / "table.json"     # under the log dir, beside the records
MAX_RECORD_BYTES = 20_000_000
MODEL = PlackettLuce()        # openskill's defaults: mu 25, sigma 25/3
CLONE_DIR = "clones"          # the web page's "learn my style" fits, under the log dir


@dataclass(frozen=True)
class Seat:
    key: str      # "<kind>:<id>", unique in the table
    name: str     # shown on the page
    kind: str     # person, persona or clone


@dataclass(frozen=True)
class Outcome:
    order: tuple          # (startTime, matchId): the order matches are counted in
    seats: list           # the rated players (Seat), in role order
    goals: list           # their goals, the same order


def _clone_seat(name: str, spec: str) -> Seat | None:
    """A clone's seat, from the path of its persona file: ``.../clones/<fit id>/...``; the
    fit id is ``<person>.<game>.<time>.<id>``."""
    parts = Path(spec).parts
    if CLONE_DIR not in parts[:-1]:
        return None
    i = len(parts) - 1 - parts[::-1].index(CLONE_DIR)     # the last "clones" in the path
    if i + 1 >= len(parts) - 1:
        return None
    fit = parts[i + 1]
    bits = fit.rsplit(".", 3)
    game = bits[1] if len(bits) == 4 else ""
    return Seat(f"clone:{fit}", f"{name} ({game})" if game else name, "clone")


def seat_of(record: dict, i: int) -> Seat | None:
    """Who played role ``i``, or None for GDL-II's random role (the referee's)."""
    names = record.get("playerNamesFromHost") or []
    human = record.get("isPlayerHuman") or []
    players = record.get("x-players") if isinstance(record.get("x-players"), list) else []
    info = players[i] if i < len(players) and isinstance(players[i], dict) else {}
    name = str(names[i]) if i < len(names) else f"role {i}"
    if info.get("kind") == "chance" or (record.get("x-gdl2") and not info and name == "referee"):
        return None
    if i < len(human) and human[i] is True:
        return Seat(f"person:{name}", name, "person")
    persona = info.get("persona") if isinstance(info.get("persona"), dict) else {}
    spec = persona.get("name")
    if isinstance(spec, str) and name.endswith("-clone"):     # the page names its clones so
        clone = _clone_seat(name, spec)
        if clone is not None:
            return clone
    if name.endswith("-clone"):        # a record without the persona's file
        return Seat(f"clone:{name}", name, "clone")
    return Seat(f"persona:{name}", name, "persona")


def outcome(record) -> Outcome | None:
    """What a record counts for, or None when it does not count (see the module's text)."""
    if not isinstance(record, dict):
        return None
    names, human = record.get("playerNamesFromHost"), record.get("isPlayerHuman")
    if not isinstance(names, list) or not isinstance(human, list) or True not in human:
        return None
    result = record.get("x-result")
    if isinstance(result, dict) and isinstance(result.get("goals"), list):
        goals = result["goals"]                 # ended by agreement: counts, though aborted
    elif record.get("isCompleted") is True and not record.get("isAborted"):
        goals = record.get("goalValues")
    else:
        return None                             # aborted, or not ended yet (GDL-II too)
    if not isinstance(goals, list) or len(goals) != len(names):
        return None
    seats, scores = [], []
    for i in range(len(names)):
        seat = seat_of(record, i)
        if seat is None:
            continue
        g = goals[i]
        if isinstance(g, bool) or not isinstance(g, (int, float)):
            return None
        seats.append(seat)
        scores.append(float(g))
    if len(seats) < 2 or len({s.key for s in seats}) < len(seats):
        return None        # a puzzle, or one player in two seats: nothing to compare
    start = record.get("startTime")
    start = start if isinstance(start, (int, float)) and not isinstance(start, bool) else 0
    return Outcome((float(start), str(record.get("matchId") or "")), seats, scores)


def final(record) -> bool:
    """A record that will not change any more: ended (completed or aborted), or unreadable.
    A match still being played is not final: it is read again until it ends."""
    if not isinstance(record, dict):
        return True
    return bool(record.get("isCompleted")) or bool(record.get("isAborted"))


def empty_table() -> dict:
    return {"format": FORMAT, "version": VERSION, "model": "openskill PlackettLuce",
            "players": {}, "counted": {}, "skipped": [], "last": None}


def apply(table: dict, out: Outcome, record_name: str) -> None:
    """Count one match in the table (in place): openskill's update, then the tallies."""
    players = table["players"]
    ratings = []
    for seat in out.seats:
        p = players.get(seat.key)
        if p is None:
            p = players[seat.key] = {"name": seat.name, "kind": seat.kind, "mu": MODEL.mu,
                                     "sigma": MODEL.sigma, "matches": 0, "wins": 0, "draws": 0,
                                     "losses": 0}
        ratings.append([MODEL.rating(mu=p["mu"], sigma=p["sigma"])])
    new = MODEL.rate(ratings, scores=list(out.goals))
    best = max(out.goals)
    tied = sum(1 for x in out.goals if x == best)
    for seat, [r], g in zip(out.seats, new, out.goals):
        p = players[seat.key]
        p["mu"], p["sigma"] = r.mu, r.sigma
        p["matches"] += 1
        if g < best:
            p["losses"] += 1
        elif tied == 1:
            p["wins"] += 1
        else:          # level with the best: a draw (two players on the same goals)
            p["draws"] += 1
    table["counted"][record_name] = list(out.order)
    table["last"] = list(out.order)


def _read_record(path: Path):
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _records(log_dir: Path, names) -> tuple[list, list]:
    """``(counting, skipped)`` of the named records: ``(order, name, Outcome)`` of those that
    count, and the names of the final ones that do not."""
    counting, skipped = [], []
    for name in names:
        rec = _read_record(log_dir / name)
        out = outcome(rec)
        if out is not None:
            counting.append((out.order, name, out))
        elif final(rec):
            skipped.append(name)
    return sorted(counting, key=lambda x: (x[0], x[1])), skipped


def replay(log_dir) -> dict:
    """The table from every record in ``log_dir`` (its top level: the page's matches),
    counted in date order."""
    log_dir = Path(log_dir)
    counting, skipped = _records(log_dir, sorted(f.name for f in log_dir.glob("*.json")))
    table = empty_table()
    for _, name, out in counting:
        apply(table, out, name)
    table["skipped"] = sorted(skipped)
    return table


def _valid(table) -> bool:
    if not isinstance(table, dict) or table.get("format") != FORMAT or table.get("version") != VERSION:
        return False
    if not isinstance(table.get("players"), dict) or not isinstance(table.get("counted"), dict) \
            or not isinstance(table.get("skipped"), list):
        return False
    last = table.get("last")
    if last is not None and not (isinstance(last, list) and len(last) == 2):
        return False
    for p in table["players"].values():
        if not isinstance(p, dict) or not all(isinstance(p.get(k), (int, float)) for k in
                                              ("mu", "sigma", "matches", "wins", "draws", "losses")):
            return False
        if not isinstance(p.get("name"), str) or not isinstance(p.get("kind"), str):
            return False
    return True


class Ratings:
    """The table of one log dir.  ``sync`` brings it up to date with the records (each
    record read once it is final; a match still being played is read again next time),
    ``rows`` for the page.  A missing or unreadable table is recomputed from the records,
    and ``message`` says so.  Not thread-safe: the web server calls it from one thread at a
    time."""

    def __init__(self, log_dir):
        self.log_dir = Path(log_dir)
        self.path = self.log_dir / TABLE
        self.message: str | None = None     # what happened to an unreadable table, for the page

    def load(self) -> dict | None:
        """The table on disk, or None (missing or unreadable: ``message`` says which)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            return self._unreadable(f"the ratings table could not be read ({e.strerror or e})")
        try:
            table = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return self._unreadable("the ratings table was not valid JSON")
        if not _valid(table):
            return self._unreadable("the ratings table was not one this server writes")
        return table

    def _unreadable(self, why: str) -> None:
        """Kept beside for a look (``table.json.unreadable``); the table starts afresh."""
        self.message = f"{why[0].upper()}{why[1:]}: it was recomputed from the match records."
        log.warning("%s (%s)", self.message, self.path)
        try:
            self.path.replace(self.path.with_name(self.path.name + ".unreadable"))
        except OSError:
            pass
        return None

    def save(self, table: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, json.dumps(table, indent=1, sort_keys=True).encode("utf-8"))
        except OSError as e:     # the page goes on; the next sync tries again
            log.error("cannot write the ratings table %s: %s", self.path, e)
            self.message = f"The ratings table could not be written ({e.strerror or e})."

    def sync(self) -> dict:
        """The table with every finished match on record counted once.  New matches are
        counted in date order after the ones counted before; a new match that started before
        the last one counted makes the whole table be recomputed (so it always equals
        ``replay``)."""
        table = self.load()
        if table is None:
            missing = self.message is None
            table = replay(self.log_dir)
            if missing and table["counted"]:
                n = len(table["counted"])
                self.message = (f"No ratings table was kept yet: it was started from the {n} finished "
                                f"match{'es' if n != 1 else ''} on record.")
            self.save(table)
            return table
        known = set(table["counted"]) | set(table["skipped"])
        new = sorted(f.name for f in self.log_dir.glob("*.json") if f.name not in known)
        counting, skipped = _records(self.log_dir, new)
        if not counting and not skipped:
            return table
        last = tuple(table["last"]) if table.get("last") else None
        if last is not None and counting and counting[0][0] < (last[0], last[1]):
            table = replay(self.log_dir)
        else:
            for _, name, out in counting:
                apply(table, out, name)
            table["skipped"] = sorted(set(table["skipped"]) | set(skipped))
        self.save(table)
        return table

    def rows(self) -> list[dict]:
        """The players, best first: openskill's ordinal (mu - 3 sigma), mu, sigma, tallies."""
        out = []
        for key, p in self.sync()["players"].items():
            r = MODEL.rating(mu=p["mu"], sigma=p["sigma"])
            out.append(dict(p, key=key, ordinal=r.ordinal()))
        return sorted(out, key=lambda r: (-r["ordinal"], -r["matches"], r["name"]))


_FIT_RE = re.compile(r"^clone:(?P<fit>.+)$")


def clone_fit(key: str) -> str | None:
    """The fit id (the clone's folder under ``<log dir>/clones``) of a clone's key."""
    m = _FIT_RE.match(key)
    return m.group("fit") if m else None
