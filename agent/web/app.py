"""``ggp-persona web``: a person plays any GDL game against a persona in the browser, and
replays recorded matches.

Server-rendered pages (jinja2) and one small script (``static/app.js``) that polls the JSON
state of a match and turns clicks on the board into moves.  Matches are played by the match
runner (``agent.match.runner.run_match``) with a ``HumanPlayer`` for the person and a
``PersonaPlayer`` for the persona; every match is recorded in the log folder with the
person's name and ``isPlayerHuman``.

A person's match is never lost to silence: while its page lives (and for an hour after it
was closed, so that it opens again where it was) the persona's match manager is told the
person is there (``keep_waiting``); a page gone for longer ends the match with the reason.  A
person may resign or offer a draw, which the persona accepts by its own search's value of the
position (``offer_draw``); both end the match by agreement (``runner.Stop``), said in the
record (``x-result``, ``x-end-reason``).

pyswip binds Prolog to the thread that first used it, so the reasoner work (board detection,
clicks, the persona's advice, replays) runs in worker processes (``work.Workers``), in
separate pools by kind of work: a replay or an advice never delays another person's match.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
import tempfile
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from agent.match import referee
from agent.matchlog import atomic_write_bytes
from agent.persona import PERSONA_SUFFIXES, PersonaError, parse_persona, persona_stem
from agent.match.players import HumanPlayer, PlayerSpecError, make_player
from agent.match.rules import read_rules
from agent.match.runner import MatchError, Stop, role_view, run_match
from gdl.gdl2 import random_index
from gdl.kif import Problem

from . import boardview as bv
from . import work
from .catalogue import (MAX_PERSONA_BYTES, MAX_RULES_BYTES, Game, check_rules_upload, list_games,
                        list_personas)
from .persona_words import words_of_spec
from .ratings import Ratings, clone_fit
from .titles import match_title
from .work import Workers

log = logging.getLogger("ggp_persona.web")

HERE = Path(__file__).resolve().parent
PROJECT_GAMES = HERE.parent.parent / "games"
# the shared material's GDL-II sheets, listed when the shared folder is beside the clone
SHARED_GDL2 = HERE.parent.parent.parent / "shared" / "corpus" / "gdl2"
MAX_RECORD_BYTES = 20_000_000
MAX_UPLOADS = 50
MAX_PROBLEMS_SHOWN = 50   # an upload's problems listed on its page (and how many more)
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
STYLE_MIN_MATCHES = 5     # finished matches of a game before "learn my style" fits a model
STYLE_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")


def style_settings() -> dict:
    """The fast fit's settings for "learn my style" (``GGP_PERSONA_WEB_STYLE_LIMIT``: the
    simulations per search, smaller in tests)."""
    s = {"n_boot": 300}
    limit = os.environ.get("GGP_PERSONA_WEB_STYLE_LIMIT", "")
    if limit.isdigit() and int(limit) > 0:
        s["limit"] = int(limit)
    return s


# A person's match never ends for silence while its page lives: the persona's match manager
# abandons a match that gets no message for its idle limit (start clock + 10 play clocks +
# 60 s: about 4 minutes at the page's clocks), and a person may think far longer.  Every
# KEEPALIVE_SECONDS the page's server tells the persona's manager the person is still there,
# as long as the page was seen (it polls the match's state) within PAGE_GONE_SECONDS; a page
# closed for longer ends the match with that reason.  Opened again before then, the match
# goes on where it was.
KEEPALIVE_SECONDS = 10.0
PAGE_GONE_SECONDS = 3600.0
DRAW_GOAL = 50            # a draw: every player scores 50 (of 0-100, halfway between a loss and a win)


def _env_seconds(name: str) -> float | None:
    try:
        v = float(os.environ.get(name, "") or "nan")
    except ValueError:
        return None
    return v if v > 0 else None


def silence_settings() -> dict:
    """``silence``: the persona's own silence limit (``GGP_PERSONA_WEB_SILENCE``, seconds;
    unset: its server's default; tests shorten it to think past it), ``page_gone``: how long a
    closed page's match waits for its person (``GGP_PERSONA_WEB_PAGE_GONE``, default an
    hour), ``every``: how often the persona is told the person is there."""
    silence = _env_seconds("GGP_PERSONA_WEB_SILENCE")
    every = KEEPALIVE_SECONDS if silence is None else max(0.5, min(KEEPALIVE_SECONDS, silence / 4))
    return {"silence": silence, "page_gone": _env_seconds("GGP_PERSONA_WEB_PAGE_GONE") or PAGE_GONE_SECONDS,
            "every": every}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class StyleJob:
    """One "learn my style" fit: runs in the ``style`` worker; its folder is
    ``<log dir>/clones/<jid>`` (progress.txt while it runs, style.json and the clone after)."""
    jid: str
    person: str
    game: str             # the game's name in the match ids
    game_key: str         # the page's key of the game (to play the clone on)
    folder: Path
    matches: int
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    task: object = None
    result: dict | None = None
    error: str | None = None


@dataclass
class GameData:
    key: str
    title: str
    text: str
    roles: list           # role names
    view: bv.BoardView    # found once per game (in a worker), drawn everywhere
    engine: str | None = None   # the engine the advice searched on (a hint for other workers)
    gdl2: bool = False    # a GDL-II game: each role sees only its percepts
    init: list = field(default_factory=list)   # the initial state's fact texts (the rules give it to all)


@dataclass
class PlaySession:
    sid: str
    person: str
    game: Game
    data: GameData
    human_role: int
    persona: str
    play_clock: float
    human_clock: float
    human: object
    start_clock: float = 10
    roles: list = field(default_factory=list)
    players: list = field(default_factory=list)
    state: list = field(default_factory=list)     # fact texts
    prev_state: list | None = None                # the state before the last joint move
    legal: list = field(default_factory=list)     # per role
    to_move: list = field(default_factory=list)
    choosers: list = field(default_factory=list)  # per joint move: the roles that had a choice
    labels: dict = field(default_factory=dict)    # move text -> its name on the board (from clicks)
    history: list = field(default_factory=list)   # joint moves (texts)
    errors: list = field(default_factory=list)
    ply: int = 0
    status: str = "starting"                      # starting, playing, over, aborted
    goals: list | None = None
    reason: str | None = None
    record: str | None = None
    started: float = field(default_factory=time.monotonic)
    turn_since: float = field(default_factory=time.monotonic)
    ended_at: float | None = None
    task: object = None
    cancel: object = None
    cache: dict = field(default_factory=dict)     # (ply, status, to_move) -> rendered position
    pending: dict = field(default_factory=dict)   # the same key -> the position being drawn
    advice: dict = field(default_factory=dict)    # ply -> the persona's advice (a future)
    seats: list = field(default_factory=list)     # the player objects, in role order
    # GDL-II: during the match the page knows only the person's view (the runner's
    # ``role_view``); ``state``, ``legal`` and ``history`` stay empty until the end
    gdl2: bool = False
    seen: list = field(default_factory=list)      # per step: the person's move, error, percepts
    my_legal: list = field(default_factory=list)  # the person's legal moves now
    my_turn: bool = False                         # the person has a choice to make now
    sealed: list = field(default_factory=list)    # the runner's whole events: read only once ended
    page_seen: float = field(default_factory=time.monotonic)   # the page's last poll
    by: str | None = None                         # ended by agreement: "resignation" or "draw"
    draw: dict | None = None                      # the person's latest draw offer and its answer
    watcher: object = None                        # the task that keeps the persona waiting


# The persona's START carries at least this start clock: loading a game (the rules, the
# game's compiled engine) may take a minute on a busy machine, and a persona still loading at
# the first PLAY answers with a fallback move.  Our player answers READY as soon as
# everything is in place, so a quick load costs nothing; the person's clock starts with the
# first position, after READY.  On a game still grounding after a quarter of this (chess)
# READY comes once the player searches on the grounder's interim non-ground engine
# (``ready_when_searching``): a person should not wait for the grounder to give up.
LOAD_SECONDS = 120


MATCH_ID_RE = re.compile(r"^web\.(?P<person>.+)\.(?P<sid>[0-9a-f]{10})\.(?P<game>[A-Za-z0-9_-]+)$")
MAX_REPLAYS = 16


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _game_label(title: str) -> str:
    """A game's name as one word of a match id."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", title.split(" (")[0]).strip("_")[:40] or "game"


def _game_of_record(d: dict) -> str:
    """The game a record is of, for the list of a person's matches."""
    m = MATCH_ID_RE.match(str(d.get("matchId") or ""))
    if m:
        return m.group("game")
    url = str(d.get("gameMetaURL") or "")
    g = re.search(r"/games/([^/]+)", url)
    return g.group(1) if g else ""


class WebApp:
    def __init__(self, game_folders=(), persona_folders=(), log_dir="match_logs",
                 start_clock: int = 10, play_clock: int = 5, workers: dict | None = None, fits=()):
        given = [Path(p) for p in game_folders]
        folders = ([PROJECT_GAMES] if PROJECT_GAMES.is_dir() else []) + given
        if SHARED_GDL2.is_dir() and not any(_same_dir(SHARED_GDL2, g) for g in given):
            folders.append(SHARED_GDL2)
        self.games = {g.key: g for g in list_games(folders)}
        self.game_folders = folders
        self.persona_folders = [Path(p) for p in persona_folders]
        self.fit_folders = [Path(p) for p in fits]      # earlier fast fits, for "plays most like"
        self.uploads: dict = {}          # key -> rules text
        self.upload_warnings: dict = {}  # key -> the check's warnings (Problems)
        self.uploaded_personas: list = []
        self.persona_tmp = tempfile.TemporaryDirectory(prefix="ggp-persona-web-")
        self.log_dir = Path(log_dir)
        self.defaults = {"start_clock": start_clock, "play_clock": play_clock}
        self.data: dict = {}             # game key -> GameData
        self.loading: dict = {}          # game key -> the future loading it
        self.plays: dict = {}
        self.kept_players: dict = {}     # persona spec -> PersonaPlayer
        self.work = Workers(workers)
        self.replays: OrderedDict = OrderedDict()   # record digest -> the replay (a future)
        self.verdicts: dict = {}                    # record digest -> the check (a future)
        self.styles: dict = {}                      # job id -> StyleJob
        self.silence = silence_settings()
        self.ratings = Ratings(self.log_dir)        # people's and personas' ratings (openskill)
        self.ratings_lock: asyncio.Lock | None = None
        self.words: dict = {}                       # (persona spec, file time) -> its description
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(["html"]))

    # ------------------------------------------------------------------ helpers
    def page(self, name: str, status: int = 200, **ctx) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**ctx), status_code=status)

    def personas(self) -> list:
        return list_personas(self.persona_folders) + self.uploaded_personas + \
            [(f"{c['person']}'s clone ({c['game']})", c["clone"]) for c in self.clones()]

    # ------------------------------------------------------------------ learn my style
    @property
    def clone_dir(self) -> Path:
        return self.log_dir / "clones"

    def clones(self, person: str | None = None) -> list[dict]:
        """The clones fitted on this server (newest first): their style.json, with the job id."""
        out = []
        if not self.clone_dir.is_dir():
            return out
        for f in self.clone_dir.glob("*/style.json"):
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(d, dict) or not d.get("clone") or (person and d.get("person") != person):
                continue
            clone = f.parent / str(d["clone"])
            if not clone.is_file():
                continue
            out.append(dict(d, jid=f.parent.name, clone=str(clone), mtime=f.stat().st_mtime))
        return sorted(out, key=lambda d: -d["mtime"])

    def fits(self) -> list[Path]:
        """The earlier fast fits a person is compared with (the fitter takes the first that
        applies to the game's rules): each ``--fits`` folder is a fit (its results.json) or
        holds fits, and so does ``<log dir>/fits/``."""
        out = []
        for folder in self.fit_folders + [self.log_dir / "fits"]:
            if (folder / "results.json").is_file():
                out.append(folder)
            elif folder.is_dir():
                out += sorted(f.parent for f in folder.glob("*/results.json"))
        return out

    def finished_by_game(self, person: str) -> dict:
        """{game name: [record files]} of the person's finished matches, by game."""
        out: dict = {}
        for m in self.past_matches(person):
            # a style is learned from states the person saw whole: not from GDL-II matches
            # (a match ended by agreement, a resignation or a draw, counts: its moves are real)
            if (m["completed"] or m["by"]) and m["game"] and not m.get("gdl2"):
                out.setdefault(m["game"], []).append(self.log_dir / m["file"])
        return out

    def style_games(self, person: str) -> list[dict]:
        return [{"game": g, "matches": len(fs), "missing": max(0, STYLE_MIN_MATCHES - len(fs))}
                for g, fs in sorted(self.finished_by_game(person).items())]

    def game_key_of(self, name: str, record: Path | None = None) -> str | None:
        """The page's key of the game a match id names (a server game, an upload, or else the
        rules the record carries, added as an upload).  With a record, a game of that name
        counts only if its rules are the record's: two sheets may share a name (the project's
        connectFour and a repository's)."""
        text = None
        if record is not None:
            try:
                text = json.loads(record.read_text(encoding="utf-8")).get("x-rules")
            except (OSError, ValueError, AttributeError):
                text = None
            text = text if isinstance(text, str) else None

        def same(game_text) -> bool:
            if text is None:
                return True
            try:
                return read_rules(game_text())[0] == text
            except Exception:      # an unreadable sheet is not this record's game
                return False
        for g in self.games.values():
            if _game_label(g.title) == name and same(lambda: self.game_text(g)):
                return g.key
        for k in self.uploads:
            if (_game_label(k.split("/")[-1]) == name or k.split("/")[-1].startswith(name + "-")) \
                    and same(lambda: self.uploads[k]):
                return k
        if text is None:
            return None
        key = f"upload/{name}-{bv.game_key(text)}"
        self.uploads[key] = text
        self.upload_warnings.setdefault(key, [])
        return key

    def start_style(self, person: str, game: str) -> StyleJob:
        files = self.finished_by_game(person).get(game, [])
        if len(files) < STYLE_MIN_MATCHES:
            raise ValueError(f"{len(files)} finished match{'es' if len(files) != 1 else ''} of {game} so far: "
                             f"finish {STYLE_MIN_MATCHES - len(files)} more to learn your style")
        for j in self.styles.values():     # one fit per person and game at a time
            if j.person == person and j.game == game and j.ended is None:
                return j
        jid = f"{person}.{game}.{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.{uuid.uuid4().hex[:4]}"
        key = self.game_key_of(game, files[0]) or ""
        job = StyleJob(jid, person, game, key, self.clone_dir / jid, len(files))
        job.folder.mkdir(parents=True, exist_ok=True)
        fits = [str(f) for f in self.fits()]
        self.styles[jid] = job

        async def fit():
            try:
                res = await self.work.run("style", work.learn_style, [str(f) for f in files], person,
                                          str(job.folder), str(self.clone_dir / ".evaluations"), fits,
                                          style_settings())
                res["game"], res["game_key"] = game, key
                res["seconds"] = round(time.monotonic() - job.started, 1)
                if res.get("clone"):       # kept relative to its folder (no machine paths in it)
                    res["clone"] = str(Path(res["clone"]).relative_to(job.folder))
                res.pop("report", None)
                atomic_write_bytes(job.folder / "style.json", json.dumps(res, indent=1).encode())
                job.result = res
            except Exception as e:   # shown as a sentence on the page
                job.error = f"Your style could not be learned: {work.clean_message(e)}"
            finally:
                job.ended = time.monotonic()
        job.task = asyncio.ensure_future(fit())
        return job

    def style_progress(self, job: StyleJob) -> dict:
        """How far a fit is, from its progress lines: a fraction and the latest line."""
        try:
            lines = (job.folder / "progress.txt").read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        frac = 0.02
        for ln in lines:
            if ln.startswith("reading"):
                frac = max(frac, 0.05)
            elif "of your decisions" in ln:
                frac = max(frac, 0.1)
            elif ln.startswith("shared evaluations"):
                frac = max(frac, 0.3)
            elif ln.startswith("scoring you as"):
                frac = min(0.95, max(frac, 0.45) + 0.04)
        if job.ended is not None:
            frac = 1.0
        status = "running" if job.ended is None else ("failed" if job.error else "done")
        return {"status": status, "progress": round(frac, 2), "message": work.clean_message(lines[-1]) if lines else "starting",
                "seconds": round((job.ended or time.monotonic()) - job.started), "error": job.error}

    def style_result(self, jid: str) -> dict | None:
        job = self.styles.get(jid)
        if job is not None and job.result is not None:
            return dict(job.result, jid=jid, clone=str(job.folder / job.result["clone"]) if job.result.get("clone") else None)
        for c in self.clones():
            if c["jid"] == jid:
                return c
        return None

    def game_text(self, game: Game) -> str:
        if game.path is None:
            return self.uploads[game.key]
        return Path(game.path).read_text(encoding="utf-8")

    async def game_data(self, game: Game) -> GameData:
        """Roles and boards of a game, found once (in a worker); concurrent requests for the
        same game wait on the same load."""
        if game.key in self.data:
            return self.data[game.key]
        fut = self.loading.get(game.key)
        if fut is None:
            async def load():
                text = self.game_text(game)
                got = await self.work.run("page", work.load_game, text, game.title)
                return GameData(game.key, game.title, text, got["roles"], got["view"],
                                gdl2=bool(got.get("gdl2")), init=list(got.get("init") or []))
            fut = self.loading[game.key] = asyncio.ensure_future(load())
        try:
            gd = await asyncio.shield(fut)
        finally:
            if fut.done():
                self.loading.pop(game.key, None)
        self.data[game.key] = gd
        return gd

    def past_matches(self, person: str) -> list[dict]:
        out = []
        if not person or not self.log_dir.is_dir():
            return out
        # the matches this server is playing: their page opens again where they are
        live = {self.match_id(s): sid for sid, s in self.plays.items() if s.status in ("starting", "playing")}
        for f in sorted(self.log_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
            try:
                if f.stat().st_size > MAX_RECORD_BYTES:
                    continue
                d = json.loads(f.read_text(encoding="utf-8"))
                names, human = d.get("playerNamesFromHost") or [], d.get("isPlayerHuman") or []
            except (OSError, ValueError):
                continue
            if not isinstance(d, dict) or not isinstance(names, list) or not isinstance(human, list):
                continue
            mine = [i for i, n in enumerate(names) if n == person and i < len(human) and human[i]]
            if not mine:
                continue
            goals = d.get("goalValues")
            result = d.get("x-result") if isinstance(d.get("x-result"), dict) else None
            if result is not None and isinstance(result.get("goals"), list):
                goals = result["goals"]          # ended by agreement (a resignation, a draw)
            if self.hides_running_match(d):     # a GDL-II match still on: its goals at its end
                goals, d["isCompleted"] = None, False
            out.append({"file": f.name, "match_id": d.get("matchId"), "players": names,
                        "title": match_title(d),
                        "by": str(result.get("by") or "") if result else "",
                        "live": live.get(str(d.get("matchId") or "")),
                        "reason": str(d.get("x-end-reason") or "")[:200],
                        "game": _game_of_record(d),
                        "goals": goals, "completed": bool(d.get("isCompleted")),
                        "aborted": bool(d.get("isAborted")), "moves": len(d.get("moves") or []),
                        "gdl2": bool(d.get("x-gdl2")),
                        "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime((d.get("startTime") or 0) / 1000)),
                        "role": mine[0]})
        return out

    # ------------------------------------------------------------------ play
    def on_event(self, s: PlaySession, e: dict) -> None:
        if e.get("gdl2"):
            return self.on_hidden_event(s, e)
        kind = e.get("type")
        if kind == "opened":     # the rules are read: the board, and maybe a first move, at once
            s.roles = s.roles or e["roles"]
            s.state, s.legal, s.to_move = e["state"], e["legal"], e["to_move"]
        if kind == "start":
            s.roles, s.players = e["roles"], e["players"]
            s.status = "playing"
        if kind == "move":
            s.prev_state = s.state
            s.choosers.append(list(s.to_move))
        if kind in ("start", "move"):
            s.state, s.legal, s.to_move = e["state"], e["legal"], e["to_move"]
            s.turn_since = time.monotonic()
        if kind == "move":
            s.ply = e["ply"]
            s.history.append(e["moves"])
            s.errors.append(e["errors"])
        if kind == "end":
            s.status, s.goals, s.record, s.to_move = "over", e["goals"], e.get("record"), []
            s.by, s.reason = e.get("by"), e.get("reason")
            s.ended_at = time.monotonic()
        if kind == "abort":
            s.status, s.reason, s.record, s.to_move = "aborted", e["reason"], e.get("record"), []
            s.ended_at = time.monotonic()

    def on_hidden_event(self, s: PlaySession, e: dict) -> None:
        """A GDL-II match's event: the session takes the person's view of it (the runner's
        ``role_view``) and seals the whole event, which nothing reads before the end."""
        kind = e.get("type")
        s.gdl2 = True
        if kind in ("start", "move"):
            s.sealed.append(e)
            mine = role_view(e, s.human_role)
            v = mine["view"]
            if kind == "start":
                s.roles, s.players = mine["roles"], mine["players"]
                s.status = "playing"
            else:
                s.ply = mine["ply"]
                s.seen.append({"move": v["move"], "error": v["error"] or "", "chose": s.my_turn,
                               "percepts": list(v["percepts"] or [])})
            s.my_legal, s.my_turn = list(v["legal"]), bool(v["to_move"])
            s.to_move = [s.human_role] if s.my_turn else []
            s.turn_since = time.monotonic()
        elif kind in ("end", "abort"):
            s.my_legal, s.my_turn, s.to_move = [], False, []
            states = [x["hidden"]["state"] for x in s.sealed]
            if states:     # the end: the true states are the page's to draw now
                s.state, s.prev_state = states[-1], (states[-2] if len(states) > 1 else None)
            if kind == "end":
                s.status, s.goals = "over", e["goals"]
                s.by, s.reason = e.get("by"), e.get("reason")
            else:
                s.status, s.reason = "aborted", e["reason"]
            s.record = e.get("record")
            s.ended_at = time.monotonic()

    def revealed(self, s: PlaySession) -> tuple[list, dict | None]:
        """``(history, reveal)`` of an ended GDL-II match: every joint move (random's too),
        and per step every role's percepts and the true state; nothing while it runs."""
        if s.status in ("starting", "playing") or not s.sealed:
            return [], None
        view = s.data.view
        history, steps = [], []
        start, prev = s.sealed[0], s.sealed[0]
        for e in s.sealed[1:]:
            h = e["hidden"]
            choosers = prev["hidden"]["to_move"]
            history.append({"n": e["ply"], "moves": [
                {"role": r, "move": m, "label": s.labels.get(m) or bv.move_label(view, m),
                 "noop": r not in choosers, "error": (h["errors"][r] if r < len(h["errors"]) else "") or ""}
                for r, m in enumerate(h["moves"])]})
            steps.append({"n": e["ply"], "percepts": [[bv.words(p) for p in ps] for ps in h["percepts"]],
                          "state": [bv.words(f) for f in h["state"]]})
            prev = e
        return history, {"initial": [bv.words(f) for f in start["hidden"]["state"]], "steps": steps}

    def match_id(self, s: PlaySession) -> str:
        return f"web.{s.person}.{s.sid}.{_game_label(s.game.title)}"

    def starting_phase(self, s: PlaySession) -> str:
        """What a match that has not started yet waits for, in words (read from the persona's
        match manager: its processes, then this match's rules and compiled engine)."""
        for p in s.seats:
            m = getattr(p, "manager", None)
            if p is None or getattr(p, "is_human", False):    # None: GDL-II's random, the runner's
                continue
            if m is None or not m.warm:
                return "the persona's processes are starting (after a server start they load the compiled code)"
            mm = m.matches.get(self.match_id(s))
            if mm is None:
                return "the persona is receiving the rules"
            if mm.player_status in (None, "legal") or mm.ref_status is None:
                return "the persona is reading the rules"
            if mm.engine_status in (None, "switching"):
                return "the persona is building its compiled engine for this game"
        return "the persona is ready; the match is starting"

    async def run_play(self, s: PlaySession, players, start_clock: float) -> None:
        s.seats = list(players)
        s.watcher = asyncio.ensure_future(self.keep_waiting(s))
        try:
            await run_match(s.data.text, players, start_clock=max(start_clock, LOAD_SECONDS),
                            play_clock=s.play_clock,
                            out_dir=self.log_dir, on_event=lambda e: self.on_event(s, e),
                            cancel=s.cancel, human_clock=s.human_clock, match_id=self.match_id(s))
        except MatchError as e:
            s.status, s.reason = "aborted", work.clean_message(e)
        except Exception as e:  # shown on the page; the server goes on
            s.status, s.reason = "aborted", f"the match stopped: {work.clean_message(e)}"
        finally:
            if s.ended_at is None:
                s.ended_at = time.monotonic()
            if s.status in ("starting", "playing"):
                s.status = "aborted"
            s.watcher.cancel()
            try:      # a finished match moves its players' ratings (an aborted one counts for nothing)
                await self.sync_ratings()
            except Exception as e:
                log.error("ratings not updated after %s: %s", self.match_id(s), e)
            for p in players:
                if p is not None and p not in self.kept_players.values():
                    try:
                        await p.close()
                    except Exception:
                        pass

    async def keep_waiting(self, s: PlaySession) -> None:
        """While the match runs: tell the persona's match manager the person is there (it
        would abandon a match silent for its idle limit, about 4 minutes), as long as the
        page was seen within ``page_gone`` seconds; a page closed for longer ends the match
        with the reason.  A persona whose manager no longer plays the match (ended for
        memory, say) ends it too, with its reason: no random moves on its behalf."""
        every, limit = self.silence["every"], self.silence["page_gone"]
        lost = 0
        mid = self.match_id(s)
        while s.status in ("starting", "playing"):
            await asyncio.sleep(every)
            away = time.monotonic() - s.page_seen
            if away > limit:
                s.cancel.end(f"nobody came back: the match's page was closed for {_duration(away)} "
                             f"(a match waits {_duration(limit)} for its player to come back)")
                return
            whys = [p.keepalive(mid) for p in s.seats if p is not None and p is not s.human
                    and hasattr(p, "keepalive")]
            why = next((w for w in whys if w), None)
            # twice in a row while playing: not the moment a STOP or START is on its way
            lost = lost + 1 if why and s.status == "playing" else 0
            if lost >= 2:
                s.cancel.end(f"{self.persona_name(s.persona)} stopped playing: {why}")
                return

    def seated_roles(self, s: PlaySession) -> list[int]:
        """The roles with a player (not GDL-II's random, which the referee moves)."""
        chance = _chance(s.data)
        return [r for r in range(len(s.data.roles)) if r != chance]

    def solo(self, s: PlaySession) -> bool:
        """A one-player game (a puzzle): giving up, no one to offer a draw to."""
        return len(self.seated_roles(s)) < 2

    def can_offer_draw(self, s: PlaySession) -> bool:
        """A draw needs someone to agree with: two or more seated players.  Not in a GDL-II
        game: the persona's yes or no comes from what it has seen, which the person must not
        learn before the end."""
        return not self.solo(s) and not s.gdl2

    def resign(self, s: PlaySession) -> str | None:
        """The person resigns: the match ends, every other player scores 100, the person 0
        (GDL-II's random 0).  Before the first position there is nothing to resign: the
        match is abandoned with that reason.  None, or why nothing was done."""
        if s.status not in ("starting", "playing"):
            return "the match is over"
        if s.status == "starting":
            s.cancel.end(f"{s.person} left before the first move")
            return None
        seated = self.seated_roles(s)
        goals = [0 if r == s.human_role or r not in seated else 100 for r in range(len(s.data.roles))]
        me = s.data.roles[s.human_role]
        if len(seated) == 1:
            why = f"{s.person} ({me}) gave up after {s.ply} step{'s' * (s.ply != 1)}"
        else:
            why = (f"{s.person} ({me}) resigned after {s.ply} step{'s' * (s.ply != 1)}: "
                   f"{self.persona_name(s.persona)} wins")
        s.cancel.end(why, goals=goals, by="resignation")
        return None

    def draw_rule(self, s: PlaySession) -> str:
        name = self.persona_name(s.persona)
        n = len(self.seated_roles(s))
        rule = (f"{name} accepts a draw when its own search expects at most {DRAW_GOAL} of 100 for itself "
                f"from this position (the search of its last move, else one run now; a draw scores "
                f"{DRAW_GOAL} for {'both players' if n == 2 else 'every player'}); otherwise it plays on. "
                f"One offer per position.")
        if n > 2:
            rule += f" With {n} players, every persona's search must expect at most {DRAW_GOAL} for it."
        return rule

    def offer_draw(self, s: PlaySession) -> dict:
        """The person offers a draw: each persona searches the position for its own role
        (``work.advice``, its own parameters at the play clock) and accepts when it expects
        at most ``DRAW_GOAL``.  One offer per position; the answer comes in the match's state
        (``draw``)."""
        if s.status != "playing":
            return {"error": "the match is not being played"}
        if not self.can_offer_draw(s):
            return {"error": "no one to offer a draw to in a one-player game" if self.solo(s) else
                    "no draw offers in a game with hidden information: the answer would tell you "
                    "something of what the persona has seen"}
        if s.draw is not None and s.draw["ply"] == s.ply:
            return dict(s.draw)
        s.draw = {"ply": s.ply, "status": "thinking",
                  "message": f"{self.persona_name(s.persona)} is looking at the position…"}
        asyncio.ensure_future(self._answer_draw(s, s.ply, s.draw))
        return dict(s.draw)

    async def _draw_value(self, s: PlaySession, role: int) -> float | None:
        """The persona's expected goal for ``role`` now: the Q its search gave the move that
        led to this position (its decision of the step before, in its own match manager:
        no waiting), else a search of this position run now for that role (``work.advice``:
        the Q of the move it would play, its only move when it has no choice); None when it
        could not tell."""
        seat = s.seats[role] if role < len(s.seats) else None
        last = seat.last_value(self.match_id(s)) if hasattr(seat, "last_value") else None
        if last is not None and last[0] >= s.ply - 1:
            return last[1]
        a = await self.work.run("advice", work.advice, s.data.text, s.data.title, s.data.view,
                                list(s.state), role, s.persona, float(s.play_clock), s.data.engine)
        if a.get("engine"):
            s.data.engine = a["engine"]
        if a.get("over"):
            return None
        best = next((m for m in a.get("moves", []) if m.get("choice")), None)
        if best is None or not best.get("visits"):
            return None
        return float(best["q"])

    async def _answer_draw(self, s: PlaySession, ply: int, offer: dict) -> None:
        name = self.persona_name(s.persona)
        try:
            values = [await self._draw_value(s, r) for r in self.seated_roles(s) if r != s.human_role]
        except Exception as e:
            offer.update(status="refused", message=f"{name} could not look at the position "
                                                  f"({work.clean_message(e)}): it plays on")
            return
        if s.status != "playing":
            return
        if s.ply != ply:
            offer.update(status="stale", message="The position changed before the answer: offer again if you like.")
            return
        known = [v for v in values if v is not None]
        shown = ", ".join(f"{v:.0f}" for v in known)
        if not known or len(known) < len(values):
            offer.update(status="refused", message=f"{name} cannot tell how this position stands: it plays on.")
        elif max(known) <= DRAW_GOAL:
            offer.update(status="accepted", message=f"{name} accepts the draw.")
            why = (f"draw agreed at step {ply}: {s.person} offered, {name} accepted (its search expects "
                   f"{shown} of 100 for itself, no more than a draw's {DRAW_GOAL})")
            if not s.cancel.end(why, goals=[DRAW_GOAL if r in self.seated_roles(s) else 0
                                            for r in range(len(s.data.roles))], by="draw"):
                offer.update(status="stale", message="The match was ending already.")
        else:
            offer.update(status="refused", message=f"{name} refuses the draw: its search expects {shown} of 100 "
                                                  f"for itself, more than a draw's {DRAW_GOAL}. Play on.")

    def hides_running_match(self, data: dict) -> bool:
        """A record a replay must not open yet: a GDL-II match not ended (its record holds
        every role's moves and the true states), or any GDL-II match this server is playing."""
        live = {self.match_id(s) for s in self.plays.values() if s.gdl2 and s.status in ("starting", "playing")}
        if str(data.get("matchId") or "") in live:
            return True
        return bool(data.get("x-gdl2")) and not data.get("isCompleted") and not data.get("isAborted")

    async def sync_ratings(self) -> list[dict]:
        """The ratings table brought up to date with the records (``Ratings.sync``, in a
        thread: it reads the records that ended since the last time), one sync at a time;
        its rows, best first."""
        if self.ratings_lock is None:
            self.ratings_lock = asyncio.Lock()
        async with self.ratings_lock:
            return await asyncio.to_thread(self.ratings.rows)

    def persona_words(self, spec: str) -> dict:
        """The persona described in words from its parameters (``persona_words``: ``words``,
        a few sentences, and ``summary``, one line), read once per version of its file."""
        p = Path(spec)
        try:
            stamp = p.stat().st_mtime if p.suffix == ".toml" else 0
        except OSError:
            stamp = None
        key = (spec, stamp)
        if key not in self.words:
            self.words[key] = words_of_spec(spec)
        return self.words[key]

    def rating_words(self, rows: list[dict]) -> dict:
        """{row key: ``persona_words``} for the personas and clones of the ratings table that
        this server still has (a persona's name, a clone's fit)."""
        specs = {self.persona_name(spec): spec for _, spec in self.personas()}
        fits = {c["jid"]: c["clone"] for c in self.clones()}
        out = {}
        for r in rows:
            spec = fits.get(clone_fit(r["key"]) or "") if r["kind"] == "clone" else \
                specs.get(r["name"]) if r["kind"] == "persona" else None
            if spec:
                out[r["key"]] = self.persona_words(spec)
        return out

    def persona_name(self, spec: str) -> str:
        """A persona's name on the page and in records: a person's clone is "<person>-clone"."""
        p = Path(spec)
        try:
            if p.name.endswith(PERSONA_SUFFIXES) and p.resolve().is_relative_to(self.clone_dir.resolve()):
                return f"{persona_stem(p)}-clone"
        except (OSError, ValueError):
            pass
        return persona_stem(p)

    def persona_player(self, spec: str, fresh: bool = False):
        """The persona's player, kept between matches so that only the first match waits
        for its processes to warm up; ``fresh``: a second seat of the same match (a
        player serves a match id once)."""
        def make():
            return make_player(f"persona:{spec}", name=self.persona_name(spec), log_dir=self.log_dir / "personas",
                               ready_when_searching=True, ponder=False,   # a person's turn is long
                               max_idle=self.silence["silence"])
        if fresh:
            return make()
        if spec not in self.kept_players:
            self.kept_players[spec] = make()
        return self.kept_players[spec]

    async def close(self) -> None:
        running = [s for s in self.plays.values() if s.task is not None and not s.task.done()]
        for s in running:   # the runner sends ABORT and records the match as aborted
            s.cancel.set()
        if running:
            await asyncio.wait([s.task for s in running], timeout=10)
        for p in self.kept_players.values():
            try:
                await p.close()
            except Exception:
                pass
        self.kept_players.clear()
        self.work.shutdown()

    async def position(self, s: PlaySession) -> dict:
        """The match's position drawn, with the click map of the person's moves; drawn once
        per position (in a ``play`` worker), however many polls ask meanwhile."""
        ply, state, legal, to_move, status = s.ply, list(s.state), list(s.legal), list(s.to_move), s.status
        # the person's moves are clickable while playing, and before the START's end while a
        # first move may be chosen early (the runner's offer_first)
        offer = s.human_role in to_move and (status == "playing" or getattr(s.human, "first_legal", None) is not None)
        key = (ply, status, tuple(to_move), offer)
        if not state:
            return {"boards": [], "others": [], "clicks": []}
        if key in s.cache:
            return s.cache[key]
        fut = s.pending.get(key)
        if fut is None:
            me = s.human_role
            mine = legal[me] if offer and me < len(legal) else []
            fut = s.pending[key] = asyncio.ensure_future(self.work.run(
                "play", work.position, s.data.text, s.data.title, s.data.view, state, s.prev_state, me, mine))
        try:
            pos = await asyncio.shield(fut)
        finally:
            if fut.done():
                s.pending.pop(key, None)
        s.cache.clear()
        s.cache[key] = pos
        for c in pos.get("clicks", []):
            s.labels[c["move"]] = bv.click_label(s.data.view, c)
        return pos

    async def hidden_position(self, s: PlaySession, ply: int, seen: list, mine: list) -> dict:
        """A GDL-II match's position as the person knows it (``work.person_position``: the
        initial state and the person's percepts, nothing else), drawn once per step."""
        key = ("seen", ply, tuple(mine))
        if key in s.cache:
            return s.cache[key]
        fut = s.pending.get(key)
        if fut is None:
            own = seen[-1]["move"] if seen else None
            fut = s.pending[key] = asyncio.ensure_future(self.work.run(
                "play", work.person_position, s.data.view, list(s.data.init), [x["percepts"] for x in seen],
                own, s.human_role, mine))
        try:
            pos = await asyncio.shield(fut)
        finally:
            if fut.done():
                s.pending.pop(key, None)
        s.cache.clear()
        s.cache[key] = pos
        for c in pos.get("clicks", []):
            s.labels[c["move"]] = bv.click_label(s.data.view, c)
        return pos

    async def hidden_json(self, s: PlaySession) -> dict:
        """The state of a GDL-II match for the person's page.  While it runs, every field
        comes from one snapshot of the person's view (their percepts, own moves, own legal
        moves, whether they have a choice): never the true state, another role's move, percept
        or error, nor whether another role has a choice.  Once it has ended, everything: the
        true final state drawn, every joint move, every role's percepts and the true states."""
        status, ply = s.status, s.ply
        seen = [dict(x) for x in s.seen]
        live = status in ("starting", "playing")
        your_turn = live and s.my_turn and bool(getattr(s.human, "waiting", False))
        mine = list(s.my_legal) if live and s.my_turn else []
        if status == "starting":
            pos = {"boards": [], "others": [], "clicks": []}
        elif live:
            pos = await self.hidden_position(s, ply, seen, mine)
        else:
            pos = await self.position(s)
        history, reveal = self.revealed(s) if not live else ([], None)
        waited = time.monotonic() - s.turn_since
        clock = s.human_clock if your_turn else s.play_clock
        view = s.data.view
        steps = []
        for i, x in enumerate(seen):
            m = x["move"]
            steps.append({"n": i + 1, "move": m, "label": (s.labels.get(m) or bv.move_label(view, m)) if m else None,
                          "chose": bool(x.get("chose")), "error": x["error"],
                          "percepts": [bv.words(p) for p in x["percepts"]]})
        return {"sid": s.sid, "gdl2": True, "status": status, "ply": ply, "roles": s.roles, "players": s.players,
                "human_role": s.human_role, "to_move": [s.human_role] if live and s.my_turn else [],
                "your_turn": your_turn, "thinking": status == "playing" and not your_turn,
                "persona": self.persona_name(s.persona), "game": s.game.title, "game_key": s.game.key,
                "play_clock": s.play_clock,
                "clock_left": None if (math.isinf(clock) or not live or status == "starting")
                else max(0.0, clock - waited),
                "waiting_for_start": round(time.monotonic() - s.started) if status == "starting" else None,
                "starting_phase": self.starting_phase(s) if status == "starting" else None,
                "seen": steps, "history": history, "reveal": reveal,
                "goals": s.goals if not live else None, "reason": s.reason if not live else None,
                "record": Path(s.record).name if s.record and not live else None,
                "clicks": [dict(c, label=bv.click_label(view, c)) for c in pos.get("clicks", [])] if your_turn else [],
                "boards": pos.get("boards", []), "others": pos.get("others", []), **self.extras(s, pos)}

    async def play_json(self, s: PlaySession) -> dict:
        if s.gdl2:
            return await self.hidden_json(s)
        # Every field from one snapshot, taken before the position is drawn: the match goes
        # on while a worker draws it, and a history read after the wait listed the person's
        # move above a board drawn without it (a busy host's page showed both at once).
        ply, to_move = s.ply, list(s.to_move)
        live = s.status in ("starting", "playing")
        waited = time.monotonic() - s.turn_since
        mine = live and s.human_role in to_move and bool(getattr(s.human, "waiting", False))
        clock = s.human_clock if mine else s.play_clock
        # the persona is thinking while a role other than the person's has a choice to make,
        # or (all moves at once) while the person has moved and the others have not
        others = [r for r in to_move if r != s.human_role]
        thinking = s.status == "playing" and bool(others) and not mine
        view = s.data.view
        history = []
        for i, jm in enumerate(s.history):
            errs = s.errors[i] if i < len(s.errors) else []
            choosers = s.choosers[i] if i < len(s.choosers) else list(range(len(jm)))
            history.append({"n": i + 1, "moves": [
                {"role": r, "move": m, "label": s.labels.get(m) or bv.move_label(view, m),
                 "noop": r not in choosers,       # its only legal move: no choice was made
                 "error": (errs[r] if r < len(errs) else "") or ""} for r, m in enumerate(jm)]})
        reply = {"sid": s.sid, "status": s.status, "ply": ply, "roles": s.roles, "players": s.players,
                 "human_role": s.human_role, "to_move": to_move, "your_turn": mine, "thinking": thinking,
                 "persona": self.persona_name(s.persona), "game": s.game.title, "game_key": s.game.key,
                 "play_clock": s.play_clock,
                 "clock_left": None if (math.isinf(clock) or not live or s.status == "starting")
                 else max(0.0, clock - waited),
                 "waiting_for_start": round(time.monotonic() - s.started) if s.status == "starting" else None,
                 "starting_phase": self.starting_phase(s) if s.status == "starting" else None,
                 "history": history, "goals": s.goals, "reason": s.reason,
                 "record": Path(s.record).name if s.record else None}
        pos = await self.position(s)    # reads the same ply: nothing ran since the snapshot
        return {**reply, "clicks": [dict(c, label=bv.click_label(view, c)) for c in pos.get("clicks", [])],
                "boards": pos.get("boards", []), "others": pos.get("others", []), **self.extras(s, pos)}

    def extras(self, s: PlaySession, pos: dict) -> dict:
        """What the page shows of resigning and draws, and whether the board is turned."""
        live = s.status in ("starting", "playing")
        draw = dict(s.draw) if s.draw else None
        if draw is not None:
            draw["current"] = draw["ply"] == s.ply
        return {"can_draw": live and self.can_offer_draw(s), "solo": self.solo(s),
                "draw": draw, "by": s.by, "flipped": bool(pos.get("flipped"))}

    async def advice(self, s: PlaySession) -> dict:
        """The persona's view of the match's current position, searched once per position.
        In a GDL-II match, for the person's own move only and from the person's view alone
        (``work.advice_hidden``: their moves and percepts go to the worker, nothing else)."""
        ply = s.ply
        if s.gdl2 and s.status in ("starting", "playing"):
            if not s.my_turn:
                return {"over": False, "unavailable": True, "ply": ply,
                        "message": "In a game with hidden information the persona advises on your own "
                                   "moves only, from what you have seen: ask when it is your turn."}
            if ply not in s.advice:
                s.advice.clear()
                s.advice[ply] = asyncio.ensure_future(self.work.run(
                    "advice", work.advice_hidden, s.data.text, s.data.title, s.data.view,
                    [(x["move"], list(x["percepts"])) for x in s.seen], s.human_role, list(s.my_legal),
                    s.persona, float(s.play_clock), s.data.engine))
            out = await asyncio.shield(s.advice[ply])
            if out.get("engine"):
                s.data.engine = out["engine"]
            return dict(out, ply=ply)
        if ply not in s.advice:
            if s.status in ("over", "aborted"):
                return {"over": True, "ply": ply,
                        "message": "The match is over: there is no move to play in this position."}
            role = s.human_role if s.human_role in s.to_move else (s.to_move[0] if s.to_move else s.human_role)
            s.advice.clear()
            s.advice[ply] = asyncio.ensure_future(self.work.run(
                "advice", work.advice, s.data.text, s.data.title, s.data.view, list(s.state), role,
                s.persona, float(s.play_clock), s.data.engine))
        out = await asyncio.shield(s.advice[ply])
        if out.get("engine"):
            s.data.engine = out["engine"]
        return dict(out, ply=ply)

    # ------------------------------------------------------------------ replay
    def replay_key(self, data: dict) -> str:
        return work.digest(json.dumps(data, sort_keys=True, default=str))

    async def replay(self, data: dict, source: str) -> tuple[str, dict]:
        """The replay of a record (drawn once, kept for the next visits), its digest."""
        key = self.replay_key(data)
        folders = [str(p) for p in self.game_folders]
        if key not in self.replays:
            self.replays[key] = asyncio.ensure_future(self.work.run("replay", work.replay, data, source, folders))
            self.verdicts[key] = asyncio.ensure_future(self.work.run("check", work.replay_verdict, data, source, folders))
            while len(self.replays) > MAX_REPLAYS:
                old, fut = self.replays.popitem(last=False)
                self.verdicts.pop(old, None)
        self.replays.move_to_end(key)
        try:
            return key, await asyncio.shield(self.replays[key])
        except Exception:
            self.replays.pop(key, None)      # an error is shown, not kept: the next try starts anew
            v = self.verdicts.pop(key, None)
            if v is not None:
                v.cancel()
            raise

    async def verdict(self, key: str, wait: float = 0.0) -> str | None:
        """The check of a replayed record on its rules, or None while it runs."""
        fut = self.verdicts.get(key)
        if fut is None:
            return "not checked (the server no longer holds this replay: open it again)"
        if not fut.done() and wait > 0:
            await asyncio.wait([fut], timeout=wait)
        if not fut.done():
            return None
        try:
            return fut.result()
        except Exception as e:
            return f"not checked ({work.clean_message(e)})"


def _chance(gd: GameData) -> int | None:
    """GDL-II's random role's index (played by the referee), or None."""
    return random_index(gd.roles) if gd.gdl2 else None


def _error_page(app: WebApp, title: str, problems, status: int = 400):
    problems = list(problems)
    return app.page("problems.html", status, title=title, problems=problems[:MAX_PROBLEMS_SHOWN],
                    more=max(0, len(problems) - MAX_PROBLEMS_SHOWN),
                    errors=sum(p.level == "error" for p in problems),
                    warnings=sum(p.level != "error" for p in problems))


def create_app(game_folders=(), persona_folders=(), log_dir="match_logs", **defaults) -> FastAPI:
    w = WebApp(game_folders, persona_folders, log_dir, **defaults)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        w.work.warm()       # the workers import the reasoner now, not on the first page
        referee.keep_spare(True)   # each match's referee process is started ahead of it
        yield
        referee.keep_spare(False)
        await w.close()
    api = FastAPI(title="ggp-persona web", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    api.state.web = w

    @api.exception_handler(RequestValidationError)
    async def bad_form(request: Request, exc: RequestValidationError):
        """A form or query that does not fit (a clock that is not a whole number, a missing
        file): the problems page, not FastAPI's JSON."""
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc.errors()[:3])}, status_code=400)
        return _error_page(w, "The form is not filled in right", [
            Problem("error", f"{'.'.join(str(x) for x in e.get('loc', ())[1:]) or 'form'}: {e.get('msg', '')}", "form")
            for e in exc.errors()[:10]])
    api.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def person_of(request: Request) -> str:
        n = request.cookies.get("person", "")
        return n if NAME_RE.match(n) else ""

    @api.get("/", response_class=HTMLResponse)
    async def index(request: Request):
        person = person_of(request)
        games = list(w.games.values()) + [Game(k, f"{k.split('/')[-1]} (uploaded)", None) for k in w.uploads]
        personas = w.personas()
        return w.page("index.html", person=person, games=games, personas=personas,
                      words={spec: w.persona_words(spec)["words"] for _, spec in personas},
                      past=w.past_matches(person), defaults=w.defaults,
                      style_games=w.style_games(person) if person else [], min_matches=STYLE_MIN_MATCHES,
                      clones=w.clones(),
                      logs=sorted((f.name for f in w.log_dir.glob("*.json")), reverse=True)[:50]
                      if w.log_dir.is_dir() else [])

    @api.post("/name")
    async def set_name(name: str = Form("")):
        name = name.strip()
        if not NAME_RE.match(name):
            return _error_page(w, "That name cannot be used", [Problem(
                "error", "a name is 1 to 40 letters, digits, '_', '.' or '-'", "name")])
        r = RedirectResponse("/", status_code=303)
        r.set_cookie("person", name, max_age=365 * 86400, samesite="lax")
        return r

    @api.post("/upload")
    async def upload(rules: UploadFile = File(...)):
        data = await rules.read(MAX_RULES_BYTES + 1)
        source = Path(rules.filename or "upload.kif").name[:80]
        # reading and validating a large sheet takes a while: not on the event loop
        text, desc, problems = await asyncio.to_thread(check_rules_upload, data, source)
        if desc is None:
            return _error_page(w, f"{source} cannot be played", problems)
        key = f"upload/{Path(source).stem}-{bv.game_key(text)}"
        w.uploads[key] = text
        w.upload_warnings[key] = [p for p in problems if p.level != "error"]
        while len(w.uploads) > MAX_UPLOADS:        # a long-running page keeps the latest ones
            old = next(iter(w.uploads))
            w.uploads.pop(old)
            w.upload_warnings.pop(old, None)
            w.data.pop(old, None)
        w.games.pop(key, None)
        return RedirectResponse(f"/game?key={key}", status_code=303)

    @api.post("/persona-upload")
    async def persona_upload(persona: UploadFile = File(...)):
        data = await persona.read(MAX_PERSONA_BYTES + 1)
        source = Path(persona.filename or "persona.toml").name[:80]
        try:
            if len(data) > MAX_PERSONA_BYTES:
                raise PersonaError(f"larger than {MAX_PERSONA_BYTES // 1000} kB")
            p = parse_persona(data.decode("utf-8"), source)
        except (PersonaError, UnicodeDecodeError, ValueError) as e:
            return _error_page(w, f"{source} is not a persona", [Problem("error", work.clean_message(e), source)])
        stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(source).stem)[:40] or "persona"
        path = Path(w.persona_tmp.name) / f"{stem}-{uuid.uuid4().hex[:6]}.toml"
        atomic_write_bytes(path, data)
        w.uploaded_personas.append((f"{getattr(p, 'name', stem)} (uploaded)", str(path)))
        return RedirectResponse("/", status_code=303)

    def find_game(key: str) -> Game | None:
        if key in w.uploads:
            return Game(key, key.split("/")[-1], None)
        return w.games.get(key)

    def cannot_play(game: Game, e: Exception):
        return _error_page(w, f"{game.title} cannot be played", [Problem("error", work.clean_message(e), game.title)])

    @api.get("/game", response_class=HTMLResponse)
    async def game_page(request: Request, key: str = "", preview: int = 0):
        game = find_game(key)
        if game is None:
            return _error_page(w, "No such game", [Problem("error", f"no game {key!r}", "game")], 404)
        try:
            gd = await w.game_data(game)
            pos = await w.work.run("page", work.preview, gd.text, gd.title, gd.view, max(0, min(preview, 200)))
        except Exception as e:
            return cannot_play(game, e)
        warnings = w.upload_warnings.get(key, [])
        person = person_of(request)
        mine = [g for g in w.style_games(person) if g["game"] == _game_label(game.title)] if person else []
        personas = w.personas()
        return w.page("game.html", game=game, roles=gd.roles, style=mine[0] if mine else None,
                      gdl2=gd.gdl2, chance=_chance(gd),
                      personas=personas, words={spec: w.persona_words(spec) for _, spec in personas},
                      defaults=w.defaults, person=person_of(request),
                      pos=pos, legend=bv.legend(gd.view), boards=[s.to_dict() for s in gd.view.specs],
                      warnings=warnings[:MAX_PROBLEMS_SHOWN], more_warnings=max(0, len(warnings) - MAX_PROBLEMS_SHOWN))

    async def start_play(person: str, game: Game, role: int, persona: str, start_clock: float,
                         play_clock: float, human_clock: float):
        """A new match of the person against the persona: its id, or an error page."""
        try:
            gd = await w.game_data(game)
        except Exception as e:
            return None, cannot_play(game, e)
        n = len(gd.roles)
        if not 0 <= role < n:
            return None, _error_page(w, "The match cannot start", [Problem("error", f"no role {role}", "role")])
        chance = _chance(gd)
        if role == chance:
            return None, _error_page(w, "The match cannot start", [Problem(
                "error", f"the role {gd.roles[role]} is played by the referee, at random: choose another", "role")])
        sid = uuid.uuid4().hex[:10]
        human = HumanPlayer(person)
        players = []
        try:
            for r in range(n):
                if r == chance:          # GDL-II's random: the runner moves it
                    players.append(None)
                    continue
                fresh = any(p is not None and p is not human for p in players)
                players.append(human if r == role else w.persona_player(persona, fresh=fresh))
        except PlayerSpecError as e:
            return None, _error_page(w, "The match cannot start", [Problem("error", work.clean_message(e), "persona")])
        s = PlaySession(sid, person, game, gd, role, persona, play_clock,
                        math.inf if human_clock == 0 else human_clock, human, start_clock=start_clock,
                        cancel=Stop(), gdl2=gd.gdl2)
        w.plays[sid] = s
        s.task = asyncio.create_task(w.run_play(s, players, start_clock))
        return sid, None

    @api.post("/play")
    async def play(request: Request, key: str = Form(...), role: int = Form(0), persona: str = Form("champion"),
                   start_clock: int = Form(10), play_clock: int = Form(5), human_clock: float = Form(0)):
        person = person_of(request)
        problems = []
        if not person:
            problems.append(Problem("error", "give your name first (on the start page)", "name"))
        game = find_game(key)
        if game is None:
            problems.append(Problem("error", f"no game {key!r}", "game"))
        if not (0 < start_clock <= 3600 and 0 < play_clock <= 3600 and 0 <= human_clock <= 36000):
            problems.append(Problem("error", "clocks are positive numbers of seconds (at most an hour)", "clocks"))
        if persona not in {spec for _, spec in w.personas()}:
            problems.append(Problem("error", f"no persona {persona!r}", "persona"))
        if problems:
            return _error_page(w, "The match cannot start", problems)
        sid, err = await start_play(person, game, role, persona, start_clock, play_clock, human_clock)
        if err is not None:
            return err
        return RedirectResponse(f"/play/{sid}", status_code=303)

    @api.post("/play/{sid}/rematch")
    async def rematch(request: Request, sid: str):
        """The same game, persona, role and clocks again."""
        s = w.plays.get(sid)
        if s is None:
            return _error_page(w, "No such match", [Problem("error", f"no match {sid!r} on this server", "match")], 404)
        person = person_of(request) or s.person
        game = find_game(s.game.key) or s.game
        new, err = await start_play(person, game, s.human_role, s.persona, s.start_clock, s.play_clock,
                                    0 if math.isinf(s.human_clock) else s.human_clock)
        if err is not None:
            return err
        return RedirectResponse(f"/play/{new}", status_code=303)

    @api.get("/play/{sid}", response_class=HTMLResponse)
    async def play_page(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return _error_page(w, "No such match", [Problem("error", f"no match {sid!r} on this server", "match")], 404)
        s.page_seen = time.monotonic()      # a page (re)opened: the match waits for its person
        return w.page("play.html", s=s, legend=bv.legend(s.data.view), persona_name=w.persona_name(s.persona),
                      solo=w.solo(s), draws=w.can_offer_draw(s), draw_rule=w.draw_rule(s))

    @api.get("/api/play/{sid}")
    async def play_state(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        s.page_seen = time.monotonic()      # the page polls: its person is there
        try:
            return await w.play_json(s)
        except Exception as e:
            return JSONResponse({"error": f"the position could not be drawn: {work.clean_message(e)}"}, status_code=503)

    @api.post("/api/play/{sid}/move")
    async def play_move(sid: str, request: Request):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        try:
            body = await request.json()
            s.human.submit(str(body.get("move", "")))
        except (ValueError, AttributeError) as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return {"ok": True}

    @api.post("/api/play/{sid}/resign")
    async def play_resign(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        why = w.resign(s)
        if why:
            return JSONResponse({"error": why}, status_code=409)
        return {"ok": True}

    @api.post("/api/play/{sid}/draw")
    async def play_draw(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        s.page_seen = time.monotonic()
        out = w.offer_draw(s)
        return JSONResponse(out, status_code=409 if "error" in out else 200)

    @api.get("/api/play/{sid}/persona")
    async def persona_view(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        if (s.gdl2 and s.status == "starting") or (not s.gdl2 and not s.state):   # GDL-I: the board shows once the rules are read
            return JSONResponse({"error": "the match has not started yet: no position to look at"}, status_code=409)
        try:
            return await w.advice(s)
        except Exception as e:
            s.advice.clear()
            return JSONResponse({"error": f"{w.persona_name(s.persona)} could not look at this position: "
                                          f"{work.clean_message(e)}"}, status_code=503)

    # ------------------------------------------------------------------ learn my style
    @api.post("/style")
    async def style_start(request: Request, game: str = Form("")):
        person = person_of(request)
        if not person:
            return _error_page(w, "Your style cannot be learned yet", [Problem(
                "error", "give your name first (on the start page)", "name")])
        try:
            job = w.start_style(person, game)
        except ValueError as e:
            return _error_page(w, "Your style cannot be learned yet", [Problem("error", str(e), game or "game")])
        return RedirectResponse(f"/style/{job.jid}", status_code=303)

    @api.get("/style/{jid}", response_class=HTMLResponse)
    async def style_page(jid: str):
        job = w.styles.get(jid) if STYLE_ID_RE.match(jid) else None
        res = w.style_result(jid) if STYLE_ID_RE.match(jid) else None
        if job is None and res is None:
            return _error_page(w, "No such style", [Problem("error", f"no fit {jid!r} on this server", "style")], 404)
        prog = w.style_progress(job) if job is not None else {"status": "done", "progress": 1.0}
        return w.page("style.html", jid=jid, job=job, res=res, prog=prog,
                      person=res["person"] if res else job.person, game=res["game"] if res else job.game)

    @api.get("/api/style/{jid}")
    async def style_state(jid: str):
        job = w.styles.get(jid)
        if job is None:
            if STYLE_ID_RE.match(jid) and w.style_result(jid) is not None:
                return {"status": "done", "progress": 1.0}
            return JSONResponse({"error": "no such fit"}, status_code=404)
        return w.style_progress(job)

    @api.post("/style/{jid}/play")
    async def style_play(request: Request, jid: str, role: int = Form(0)):
        res = w.style_result(jid) if STYLE_ID_RE.match(jid) else None
        if res is None or not res.get("clone"):
            return _error_page(w, "No clone to play", [Problem("error", f"no finished fit {jid!r} on this server", "style")], 404)
        person = person_of(request) or res["person"]
        key = res.get("game_key") or ""
        game = find_game(key) if key else None
        if game is None:     # an upload gone with a restart: the rules the person's records carry
            records = w.finished_by_game(res["person"]).get(res["game"]) or [None]
            key = w.game_key_of(res["game"], records[0])
            game = find_game(key) if key else None
        if game is None:
            return _error_page(w, "The match cannot start", [Problem(
                "error", f"the game {res['game']} is no longer on this server", "game")])
        sid, err = await start_play(person, game, role, res["clone"], w.defaults["start_clock"],
                                    w.defaults["play_clock"], 0)
        if err is not None:
            return err
        return RedirectResponse(f"/play/{sid}", status_code=303)

    # ------------------------------------------------------------------ replay
    @api.get("/replay", response_class=HTMLResponse)
    async def replay_page(file: str = ""):
        if not file:
            return RedirectResponse("/", status_code=303)
        path = w.log_dir / Path(file).name
        try:
            if path.stat().st_size > MAX_RECORD_BYTES:
                raise ValueError("the record is too large")
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a match record (a JSON object)")
        except FileNotFoundError:
            return _error_page(w, "That record cannot be opened", [Problem("error", "no such record", path.name)], 404)
        except (OSError, ValueError) as e:
            return _error_page(w, "That record cannot be opened", [Problem("error", work.clean_message(e), path.name)])
        if w.hides_running_match(data):
            return _error_page(w, "That match is still being played", [Problem(
                "error", "it is a game with hidden information: its record opens when the match ends", path.name)], 403)
        return await show_replay(data, path.name)

    @api.post("/replay", response_class=HTMLResponse)
    async def replay_upload(record: UploadFile = File(...)):
        raw = await record.read(MAX_RECORD_BYTES + 1)
        source = Path(record.filename or "record.json").name[:80]
        try:
            if len(raw) > MAX_RECORD_BYTES:
                raise ValueError(f"larger than {MAX_RECORD_BYTES // 1_000_000} MB")
            data = json.loads(raw.decode("utf-8"))
            if isinstance(data, dict) and isinstance(data.get("data"), dict):
                data = data["data"]
            if not isinstance(data, dict):
                raise ValueError("not a match record (a JSON object)")
        except UnicodeDecodeError:
            return _error_page(w, f"{source} cannot be replayed", [Problem("error", "not a text file (UTF-8 JSON)", source)])
        except ValueError as e:
            return _error_page(w, f"{source} cannot be replayed", [Problem("error", f"not JSON: {work.clean_message(e)}"
                                                                            if isinstance(e, json.JSONDecodeError)
                                                                            else work.clean_message(e), source)])
        return await show_replay(data, source)

    async def show_replay(data: dict, source: str):
        try:
            key, rep = await w.replay(data, source)
        except Exception as e:  # rules not found, unreadable states: shown, never a traceback
            return _error_page(w, f"{source} cannot be replayed", [Problem("error", work.clean_message(e), source)])
        verdict = await w.verdict(key, wait=3.0)
        return w.page("replay.html", rep=rep, source=source, legend=rep["legend"], key=key, verdict=verdict,
                      title=match_title(data),
                      steps_json=json.dumps(rep["steps"]).replace("</", "<\\/"))

    @api.get("/ratings", response_class=HTMLResponse)
    async def ratings_page(request: Request):
        try:
            rows = await w.sync_ratings()
        except Exception as e:     # the page says so; the matches go on
            log.error("ratings: %s", e)
            return _error_page(w, "The ratings cannot be shown", [Problem("error", work.clean_message(e), "ratings")], 500)
        return w.page("ratings.html", rows=rows, words=w.rating_words(rows), message=w.ratings.message,
                      person=person_of(request))

    @api.get("/api/replay/{key}/verdict")
    async def replay_verdict(key: str):
        return {"verdict": await w.verdict(key, wait=10.0)}

    return api
