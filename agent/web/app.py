"""``ggp-persona web``: a person plays any GDL game against a persona in the browser, and
replays recorded matches.

Server-rendered pages (jinja2) and one small script (``static/app.js``) that polls the JSON
state of a match and turns clicks on the board into moves.  Matches are played by the match
runner (``agent.match.runner.run_match``) with a ``HumanPlayer`` for the person and a
``PersonaPlayer`` for the persona; every match is recorded in the log folder with the
person's name and ``isPlayerHuman``.

pyswip is bound to the thread that first used it, so every reasoner query of this process
(board detection, clicks, the persona's view, replays) runs on one worker thread.
"""
from __future__ import annotations

import asyncio
import json
import math
import re
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from gdl.kif import Problem

from . import boardview as bv
from .catalogue import (MAX_PERSONA_BYTES, MAX_RULES_BYTES, Game, check_rules_upload, list_games,
                        list_personas)

HERE = Path(__file__).resolve().parent
PROJECT_GAMES = HERE.parent.parent / "games"
MAX_RECORD_BYTES = 20_000_000
MAX_UPLOADS = 50
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


@dataclass
class GameData:
    text: str
    description: object
    sm: object            # Prolog reasoner (used on the Prolog thread only)
    view: bv.BoardView


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
    roles: list = field(default_factory=list)
    players: list = field(default_factory=list)
    state: list = field(default_factory=list)     # fact texts
    prev_state: list | None = None                # the state before the last joint move
    legal: list = field(default_factory=list)     # per role
    to_move: list = field(default_factory=list)
    history: list = field(default_factory=list)   # joint moves (texts)
    errors: list = field(default_factory=list)
    ply: int = 0
    status: str = "starting"                      # starting, playing, over, aborted
    goals: list | None = None
    reason: str | None = None
    record: str | None = None
    turn_since: float = field(default_factory=time.monotonic)
    task: object = None
    cancel: object = None
    cache: dict = field(default_factory=dict)     # ply -> rendered position


class WebApp:
    def __init__(self, game_folders=(), persona_folders=(), log_dir="match_logs",
                 start_clock: int = 10, play_clock: int = 5):
        folders = ([PROJECT_GAMES] if PROJECT_GAMES.is_dir() else []) + [Path(p) for p in game_folders]
        self.games = {g.key: g for g in list_games(folders)}
        self.game_folders = folders
        self.persona_folders = [Path(p) for p in persona_folders]
        self.uploads: dict = {}          # key -> rules text
        self.uploaded_personas: list = []
        self.persona_tmp = tempfile.TemporaryDirectory(prefix="ggp-persona-web-")
        self.log_dir = Path(log_dir)
        self.defaults = {"start_clock": start_clock, "play_clock": play_clock}
        self.data: dict = {}             # game key -> GameData
        self.plays: dict = {}
        self.kept_players: dict = {}     # persona spec -> PersonaPlayer
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="prolog")
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(["html"]))

    # ------------------------------------------------------------------ helpers
    async def prolog(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def page(self, name: str, status: int = 200, **ctx) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**ctx), status_code=status)

    def personas(self) -> list:
        return list_personas(self.persona_folders) + self.uploaded_personas

    def game_text(self, game: Game) -> str:
        if game.path is None:
            return self.uploads[game.key]
        return Path(game.path).read_text(encoding="utf-8")

    def _load(self, game: Game) -> GameData:     # Prolog thread
        from agent.reasoner.prolog import PrologReasoner
        from agent.reasoner.statemachine import CachedStateMachine
        from gdl.kif import parse_rules
        text = self.game_text(game)
        desc = parse_rules(text, game.title)
        sm = CachedStateMachine(PrologReasoner(desc), maxsize=20_000)
        return GameData(text, desc, sm, bv.build_view(desc, sm))

    async def game_data(self, game: Game) -> GameData:
        if game.key not in self.data:
            self.data[game.key] = await self.prolog(self._load, game)
        return self.data[game.key]

    def past_matches(self, person: str) -> list[dict]:
        out = []
        if not person or not self.log_dir.is_dir():
            return out
        for f in sorted(self.log_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
            try:
                if f.stat().st_size > MAX_RECORD_BYTES:
                    continue
                d = json.loads(f.read_text(encoding="utf-8"))
                names, human = d.get("playerNamesFromHost") or [], d.get("isPlayerHuman") or []
            except (OSError, ValueError):
                continue
            if not isinstance(names, list) or not isinstance(human, list):
                continue
            mine = [i for i, n in enumerate(names) if n == person and i < len(human) and human[i]]
            if not mine:
                continue
            goals = d.get("goalValues")
            out.append({"file": f.name, "match_id": d.get("matchId"), "players": names,
                        "goals": goals, "completed": bool(d.get("isCompleted")),
                        "aborted": bool(d.get("isAborted")), "moves": len(d.get("moves") or []),
                        "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime((d.get("startTime") or 0) / 1000)),
                        "role": mine[0]})
        return out

    # ------------------------------------------------------------------ play
    def on_event(self, s: PlaySession, e: dict) -> None:
        kind = e.get("type")
        if kind == "start":
            s.roles, s.players = e["roles"], e["players"]
            s.status = "playing"
        if kind == "move":
            s.prev_state = s.state
        if kind in ("start", "move"):
            s.state, s.legal, s.to_move = e["state"], e["legal"], e["to_move"]
            s.turn_since = time.monotonic()
        if kind == "move":
            s.ply = e["ply"]
            s.history.append(e["moves"])
            s.errors.append(e["errors"])
        if kind == "end":
            s.status, s.goals, s.record, s.to_move = "over", e["goals"], e.get("record"), []
        if kind == "abort":
            s.status, s.reason, s.record, s.to_move = "aborted", e["reason"], e.get("record"), []

    async def run_play(self, s: PlaySession, players, start_clock: float) -> None:
        from agent.match.runner import MatchError, run_match
        try:
            await run_match(s.data.text, players, start_clock=start_clock, play_clock=s.play_clock,
                            out_dir=self.log_dir, on_event=lambda e: self.on_event(s, e),
                            cancel=s.cancel, human_clock=s.human_clock,
                            match_id=f"web.{s.person}.{s.sid}")
        except MatchError as e:
            s.status, s.reason = "aborted", str(e)
        except Exception as e:  # shown on the page; the server goes on
            s.status, s.reason = "aborted", f"{type(e).__name__}: {e}"
        finally:
            for p in players:
                if p not in self.kept_players.values():
                    try:
                        await p.close()
                    except Exception:
                        pass

    def persona_player(self, spec: str, fresh: bool = False):
        """The persona's player, kept between matches so that only the first match waits
        for its processes to warm up; ``fresh``: a second seat of the same match (a
        player serves a match id once)."""
        from agent.match.players import make_player
        def make():
            return make_player(f"persona:{spec}", name=Path(spec).stem, log_dir=self.log_dir / "personas")
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
        self.pool.shutdown(wait=False)

    def _position(self, s: PlaySession, ply: int, state: list, legal: list, to_move: list) -> dict:
        """Boards, other facts and the click map of the person's moves (Prolog thread)."""
        st = bv.parse_state(state)
        prev = bv.parse_state(s.prev_state) if s.prev_state else None
        pos = bv.render_position(s.data.view, st, bv.changed_cells(s.data.view, prev, st))
        me = s.human_role
        mine = legal[me] if me < len(legal) and me in to_move else []
        pos["clicks"] = bv.click_map(s.data.view, s.data.sm, st, me, mine) if mine else []
        return pos

    async def play_json(self, s: PlaySession) -> dict:
        ply, state, legal, to_move = s.ply, list(s.state), list(s.legal), list(s.to_move)
        key = (ply, s.status, tuple(to_move))
        if state and key not in s.cache:
            s.cache.clear()
            s.cache[key] = await self.prolog(self._position, s, ply, state, legal, to_move)
        pos = s.cache.get(key, {"boards": [], "others": [], "clicks": []})
        waited = time.monotonic() - s.turn_since
        mine = s.human_role in to_move and bool(getattr(s.human, "waiting", False))
        clock = s.human_clock if mine else s.play_clock
        return {"sid": s.sid, "status": s.status, "ply": ply, "roles": s.roles, "players": s.players,
                "human_role": s.human_role, "to_move": to_move, "your_turn": mine,
                "clock_left": None if math.isinf(clock) else max(0.0, clock - waited),
                "history": s.history, "errors": s.errors, "goals": s.goals, "reason": s.reason,
                "record": Path(s.record).name if s.record else None, **pos}

    # ------------------------------------------------------------------ replay
    def _replay(self, data: dict, source: str) -> dict:     # Prolog thread
        from agent.archive import GameLibrary, Record, Replayer, _Terms
        from agent.reasoner.prolog import PrologReasoner
        from agent.reasoner.statemachine import CachedStateMachine
        from gdl.board import detect_board, sample_states
        repos = [p for p in self.game_folders if not (p / "games").is_dir()] + \
                [p.parent for p in self.game_folders if (p / "games").is_dir()]
        lib = GameLibrary(repositories=repos, game_dirs=self.game_folders)
        desc = lib.description(data)
        terms = _Terms()
        states = [terms.state(t) for t in data.get("states") or []]
        if not states:
            raise ValueError("the record has no states")
        sm = CachedStateMachine(PrologReasoner(desc), maxsize=20_000)
        view = bv.view_from_specs(detect_board(desc, states + sample_states(sm, walks=2, steps=60, seconds=3)),
                                  desc.roles)
        verdict = Replayer(lib).replay(Record(source, data))
        moves = data.get("moves") or []
        steps = []
        for i, st in enumerate(states):
            hl = bv.changed_cells(view, states[i - 1], st) if i > 0 else []
            steps.append({"moves": moves[i - 1] if i > 0 and i - 1 < len(moves) else None,
                          **bv.render_position(view, st, hl)})
        roles = [str(r) for r in (data.get("gameRoleNames") or [])] or [str(r) for r in desc.roles]
        return {"match_id": data.get("matchId"), "roles": roles,
                "players": data.get("playerNamesFromHost"), "goals": data.get("goalValues"),
                "completed": bool(data.get("isCompleted")), "steps": steps,
                "legend": bv.legend(view),
                "verdict": "every move legal and every state reproduced on the rules" if verdict.ok
                           else (verdict.problem or "not checked")}


def _error_page(app: WebApp, title: str, problems, status: int = 400):
    return app.page("problems.html", status, title=title, problems=problems)


def create_app(game_folders=(), persona_folders=(), log_dir="match_logs", **defaults) -> FastAPI:
    w = WebApp(game_folders, persona_folders, log_dir, **defaults)
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_app):
        yield
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
        return w.page("index.html", person=person, games=games, personas=w.personas(),
                      past=w.past_matches(person), defaults=w.defaults,
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
        text, desc, problems = check_rules_upload(data, source)
        if desc is None:
            return _error_page(w, f"{source} cannot be played", problems)
        key = f"upload/{Path(source).stem}-{bv.game_key(text)}"
        w.uploads[key] = text
        while len(w.uploads) > MAX_UPLOADS:        # a long-running page keeps the latest ones
            old = next(iter(w.uploads))
            w.uploads.pop(old)
            w.data.pop(old, None)
        w.games.pop(key, None)
        return RedirectResponse(f"/game?key={key}", status_code=303)

    @api.post("/persona-upload")
    async def persona_upload(persona: UploadFile = File(...)):
        from agent.persona import PersonaError, parse_persona
        data = await persona.read(MAX_PERSONA_BYTES + 1)
        source = Path(persona.filename or "persona.toml").name[:80]
        try:
            if len(data) > MAX_PERSONA_BYTES:
                raise PersonaError(f"larger than {MAX_PERSONA_BYTES // 1000} kB")
            p = parse_persona(data.decode("utf-8"), source)
        except (PersonaError, UnicodeDecodeError, ValueError) as e:
            return _error_page(w, f"{source} is not a persona", [Problem("error", str(e), source)])
        from agent.matchlog import atomic_write_bytes
        stem = re.sub(r"[^A-Za-z0-9_-]", "_", Path(source).stem)[:40] or "persona"
        path = Path(w.persona_tmp.name) / f"{stem}-{uuid.uuid4().hex[:6]}.toml"
        atomic_write_bytes(path, data)
        w.uploaded_personas.append((f"{getattr(p, 'name', stem)} (uploaded)", str(path)))
        return RedirectResponse("/", status_code=303)

    def find_game(key: str) -> Game | None:
        if key in w.uploads:
            return Game(key, key.split("/")[-1], None)
        return w.games.get(key)

    @api.get("/game", response_class=HTMLResponse)
    async def game_page(request: Request, key: str = "", preview: int = 0):
        game = find_game(key)
        if game is None:
            return _error_page(w, "No such game", [Problem("error", f"no game {key!r}", "game")], 404)
        try:
            gd = await w.game_data(game)
        except Exception as e:
            return _error_page(w, f"{game.title} cannot be played", [Problem("error", f"{type(e).__name__}: {e}", game.title)])
        state = await w.prolog(bv.random_position, gd.sm, max(0, min(preview, 200)))
        pos = await w.prolog(bv.render_position, gd.view, state)
        return w.page("game.html", game=game, roles=[str(r) for r in gd.description.roles],
                      personas=w.personas(), defaults=w.defaults, person=person_of(request),
                      pos=pos, legend=bv.legend(gd.view), boards=[s.to_dict() for s in gd.view.specs])

    @api.post("/play")
    async def play(request: Request, key: str = Form(...), role: int = Form(0), persona: str = Form("champion"),
                   start_clock: int = Form(10), play_clock: int = Form(5), human_clock: float = Form(0)):
        from agent.match.players import HumanPlayer, PlayerSpecError
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
        try:
            gd = await w.game_data(game)
        except Exception as e:
            return _error_page(w, f"{game.title} cannot be played", [Problem("error", f"{type(e).__name__}: {e}", game.title)])
        n = len(gd.description.roles)
        if not 0 <= role < n:
            return _error_page(w, "The match cannot start", [Problem("error", f"no role {role}", "role")])
        sid = uuid.uuid4().hex[:10]
        human = HumanPlayer(person)
        players = []
        try:
            for r in range(n):
                players.append(human if r == role else w.persona_player(persona, fresh=any(p is not human for p in players)))
        except PlayerSpecError as e:
            return _error_page(w, "The match cannot start", [Problem("error", str(e), "persona")])
        s = PlaySession(sid, person, game, gd, role, persona, play_clock,
                        math.inf if human_clock == 0 else human_clock, human, cancel=asyncio.Event())
        w.plays[sid] = s
        s.task = asyncio.create_task(w.run_play(s, players, start_clock))
        return RedirectResponse(f"/play/{sid}", status_code=303)

    @api.get("/play/{sid}", response_class=HTMLResponse)
    async def play_page(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return _error_page(w, "No such match", [Problem("error", f"no match {sid!r} on this server", "match")], 404)
        return w.page("play.html", s=s, legend=bv.legend(s.data.view))

    @api.get("/api/play/{sid}")
    async def play_state(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        return await w.play_json(s)

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
    async def play_abort(sid: str):
        s = w.plays.get(sid)
        if s is None:
            return JSONResponse({"error": "no such match"}, status_code=404)
        s.cancel.set()
        return {"ok": True}

    @api.get("/api/play/{sid}/persona")
    async def persona_view(sid: str, seconds: float = 1.5):
        s = w.plays.get(sid)
        if s is None or not s.state:
            return JSONResponse({"error": "no position yet"}, status_code=404)
        role = s.human_role if s.human_role in s.to_move else (s.to_move[0] if s.to_move else s.human_role)
        seconds = min(max(seconds, 0.1), 10.0)
        try:
            return await w.prolog(persona_advice, s.data.sm, list(s.state), role, s.persona, seconds)
        except Exception as e:
            return JSONResponse({"error": f"{type(e).__name__}: {e}"}, status_code=500)

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
        except (OSError, ValueError) as e:
            return _error_page(w, "That record cannot be opened", [Problem("error", str(e), path.name)])
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
        except (ValueError, UnicodeDecodeError) as e:
            return _error_page(w, f"{source} cannot be replayed", [Problem("error", str(e), source)])
        return await show_replay(data, source)

    async def show_replay(data: dict, source: str):
        try:
            rep = await w.prolog(w._replay, data, source)
        except Exception as e:  # rules not found, unreadable states: shown, never a traceback
            return _error_page(w, f"{source} cannot be replayed", [Problem("error", f"{e}", source)])
        return w.page("replay.html", rep=rep, source=source, legend=rep["legend"], steps_json=json.dumps(rep["steps"]).replace("</", "<\\/"))

    return api


def persona_advice(sm, state_texts, role: int, persona_spec: str, seconds: float) -> dict:
    """The persona's top moves for ``role`` in the position, with Q-values and visits."""
    import numpy as np

    from agent.persona import load_persona
    from agent.search import search
    from gdl.terms import render_spaced
    persona = load_persona(persona_spec)
    state = bv.parse_state(state_texts)
    search(sm, state, role, persona, seed=0, limit=2)   # loads the compiled search code, untimed
    res = search(sm, state, role, persona, seed=0, seconds=seconds)
    order = np.argsort(-res.visits, kind="stable")[:8]
    return {"role": role, "simulations": int(res.simulations), "choice": render_spaced(res.move),
            "moves": [{"move": render_spaced(res.moves[i]), "q": round(float(res.q[i]), 1),
                       "visits": int(res.visits[i])} for i in order]}
