"""A match's title for people: its players, its game and its date ("alice vs champion ·
connectFour · 7 Dec 2026 14:03 UTC"), instead of its id, on the replay page and in the list
of a person's matches (the id stays beside, as a small label)."""
from __future__ import annotations

import re
import time

# the page's match ids: web.<person>.<10 hex>.<game>
_WEB_ID = re.compile(r"^web\..+\.[0-9a-f]{10}\.(?P<game>[A-Za-z0-9_-]+)$")
_GAME_URL = re.compile(r"/games/([^/]+)")


def game_of(record: dict) -> str:
    """The game a record is of: from the page's match id, else the game's URL (ggp-base's
    and Tiltyard's records), else ''."""
    m = _WEB_ID.match(str(record.get("matchId") or ""))
    if m:
        return m.group("game")
    g = _GAME_URL.search(str(record.get("gameMetaURL") or ""))
    return g.group(1) if g else ""


def players_of(record: dict) -> list[str]:
    """The players' names in role order, without GDL-II's random role (the referee's)."""
    names = record.get("playerNamesFromHost")
    if not isinstance(names, list):
        return []
    kinds = record.get("x-players") if isinstance(record.get("x-players"), list) else []
    out = []
    for i, n in enumerate(names):
        info = kinds[i] if i < len(kinds) and isinstance(kinds[i], dict) else {}
        if info.get("kind") == "chance":
            continue
        out.append(str(n))
    return out


def date_of(record: dict) -> str:
    """The match's start, "7 Dec 2026 14:03 UTC", or '' when the record has no time."""
    ms = record.get("startTime")
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0:
        return ""
    try:
        t = time.gmtime(ms / 1000)
    except (OverflowError, OSError, ValueError):
        return ""
    return f"{t.tm_mday} {time.strftime('%b %Y %H:%M', t)} UTC"


def match_title(record: dict) -> dict:
    """``players`` ("alice vs champion"), ``game``, ``date``, ``match_id`` and ``text`` (the
    three parts that are known, joined by " · "; the match id when none is)."""
    players = " vs ".join(players_of(record))
    game, date = game_of(record), date_of(record)
    match_id = str(record.get("matchId") or "")
    text = " · ".join(x for x in (players, game, date) if x) or match_id or "a match"
    return {"players": players, "game": game, "date": date, "match_id": match_id, "text": text}
