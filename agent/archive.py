"""Read match records (ggp-base Match JSON) and replay them on a state machine.

Sources: single ``.json`` records (ggp-base, Tiltyard, our ``match_logs/``), bulk ``.jsonl``
archives (one ``{"url": ..., "data": {match}}`` per line, the shape of ggp.org's bulk
export), or folders holding either.

Rules: ``x-rules`` when the record carries them (our logs), else the ``gameMetaURL``
``http://games.ggp.org/<repo>/games/<key>/v<N>/`` looked up in local game repositories
(``<root>/<repo>/games/<key>/v<N>/METADATA`` and the rulesheet it names; ggp-base's layout),
else ``<dir>/<key>.kif`` or ``<dir>/<key>/<key>.kif`` in game folders such as our ``games/``.  A record of ggp-base's
local repository (``http://127.0.0.1:9140/games/<key>/v0/``, no repository named) is looked
up by its key in every repository (``base`` first) and game folder.

A replay checks, independently of any player: the recorded initial state is the initial
state; at each step the state is not terminal, every recorded move is legal, the next
recorded state is the one the rules give; a completed match ends terminal with goals equal
to ``goalValues``.  States are compared as sets of terms (ggp-base writes them in hash-set
order).  The first problem of each record is reported.

GDL-II records (``x-gdl2``, ``x-percepts``: per role, its percept texts per step) are replayed
the same way (the ``random`` role's moves are in ``moves`` like any role's, and a chance role
with no goal rule counts as 0, as Dresden's GameController scores it), and each step's
recorded percepts of every role are compared, as sets, with ``sees`` of the state before the
move and the joint move.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from gdl.gdl2 import RANDOM
from gdl.kif import GdlError, parse_term, read_first, read_rules_file, rules_from_nodes
from gdl.terms import render_spaced

# the reasoner's module and the referee's are light: pyswip loads with the first reasoner made,
# the engines (numba) inside ``open_referee`` when one is tried
from agent.reasoner.prolog import PrologReasoner, set_memory_limits
from agent.reasoner.statemachine import CachedStateMachine, ReasonerError
from agent.referee import open_referee

REFEREE_BUDGET = 60.0  # seconds to build and check a game's compiled engine (offline: generous)
MEMORY_MB = 4096       # default memory cap of a replaying process (--memory-mb)


def limit_memory(memory_mb: int | None) -> None:
    """Bound this process's Prolog: its stacks to half the cap and its tables to a quarter (a
    runaway query fails inside Prolog with a resource error, reported for its record; a
    replay of an exploding game grew past 5 GB, and peaks at 636 MB with a 512 MB cap).  The
    engines' own arrays are not capped: they are built by grounding in the same Prolog."""
    if not memory_mb:
        return
    cap = int(memory_mb) * 1024 * 1024
    try:
        set_memory_limits(stack_limit=cap // 2, table_space=cap // 4)
    except Exception:  # no Prolog here: the data limit still holds
        pass

URL_RE = re.compile(r"^https?://games\.ggp\.org/(?P<repo>[^/]+)/games/(?P<key>[^/]+)/(?:v(?P<v>\d+)/?)?$")
# ggp-base's local game repository, as GameServer and Kiosk record it: no repository name
LOCAL_URL_RE = re.compile(r"^https?://[^/]+/games/(?P<key>[^/]+)/(?:v(?P<v>\d+)/?)?$")


@dataclass
class Record:
    source: str              # file, or file:line for bulk archives
    data: dict
    url: str | None = None


@dataclass
class ReplayResult:
    source: str
    match_id: str
    ok: bool
    moves: int = 0
    problem: str | None = None
    skipped: bool = False

    def line(self) -> str:
        if self.skipped:
            return f"skip {self.source} ({self.match_id}): {self.problem}"
        if self.ok:
            return f"ok   {self.source} ({self.match_id}, {self.moves} moves)"
        return f"FAIL {self.source} ({self.match_id}): {self.problem}"


class ArchiveError(ValueError):
    pass


# ------------------------------------------------------------------------------ reading

def record_files(paths) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.suffix in (".json", ".jsonl") and q.is_file()
                              and not q.name.startswith(".")))
        else:
            out.append(p)
    return out


def iter_records(paths):
    """Every record in the given files and folders, in order."""
    for path in record_files(paths):
        if path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ArchiveError(f"{path}:{n}: not JSON: {e}") from None
                    if isinstance(obj, dict) and isinstance(obj.get("data"), dict):
                        yield Record(f"{path}:{n}", obj["data"], obj.get("url"))
                    elif isinstance(obj, dict) and "matchId" in obj:
                        yield Record(f"{path}:{n}", obj)
                    else:
                        raise ArchiveError(f"{path}:{n}: neither {{url, data}} nor a match record")
        else:
            try:
                with open(path, encoding="utf-8") as f:
                    obj = json.load(f)
            except json.JSONDecodeError as e:
                raise ArchiveError(f"{path}: not JSON: {e}") from None
            if not isinstance(obj, dict):
                raise ArchiveError(f"{path}: not a match record (a JSON object)")
            yield Record(str(path), obj.get("data") if isinstance(obj.get("data"), dict) else obj, obj.get("url"))


# ------------------------------------------------------------------------------ rules

class GameLibrary:
    """Finds and caches the rules of records.  ``repositories``: folders laid out like
    games.ggp.org (``<repo>/games/<key>/v<N>/``); ``game_dirs``: folders of ``<key>.kif`` or
    ``<key>/<key>.kif``."""

    def __init__(self, repositories=(), game_dirs=()):
        self.repositories = [Path(p) for p in repositories]
        self.game_dirs = [Path(p) for p in game_dirs]
        self._cache: dict = {}

    def key_for(self, data: dict) -> str:
        if isinstance(data.get("x-rules"), str):
            return "x-rules:" + data["x-rules"]
        return "url:" + str(data.get("gameMetaURL", ""))

    def description(self, data: dict):
        key = self.key_for(data)
        if key not in self._cache:
            self._cache[key] = self._load(data)
        return self._cache[key]

    @staticmethod
    def _from_repository(folder: Path, version):
        """The rules in a game's folder of a repository (``<key>/v<N>/METADATA`` and the
        rule sheet it names), or None."""
        folder = folder / f"v{version}" if version is not None else folder
        meta = folder / "METADATA"
        if not meta.is_file():
            return None
        try:
            metadata = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ArchiveError(f"{meta}: unreadable METADATA: {e}") from None
        sheet = metadata.get("rulesheet") if isinstance(metadata, dict) else None
        if version is None:  # unversioned: METADATA names the version that holds the files
            v = metadata.get("version") if isinstance(metadata, dict) else None
            if v is not None and (folder / f"v{v}" / str(sheet)).is_file():
                folder = folder / f"v{v}"
        if sheet and (folder / str(sheet)).is_file():
            return read_rules_file(folder / str(sheet))
        return None

    def _load(self, data: dict):
        if isinstance(data.get("x-rules"), str):
            node = read_first(data["x-rules"])
            if node is None or node.is_atom:
                raise ArchiveError("x-rules is not a list of rules")
            return rules_from_nodes(node.items, "x-rules")
        url = str(data.get("gameMetaURL", ""))
        m = URL_RE.match(url) or LOCAL_URL_RE.match(url)
        if not m:
            raise ArchiveError(f"no x-rules, and gameMetaURL {url!r} is neither a games.ggp.org game URL "
                               f"nor a game repository's (http://HOST:PORT/games/<key>/v<N>/)")
        game, version = m.group("key"), m.group("v")
        if game in (".", ".."):
            raise ArchiveError(f"gameMetaURL {url!r} names no game")
        for root in self.repositories:
            if "repo" in m.groupdict():
                repos = [m.group("repo")]
            else:
                # ggp-base's local repository (GameServer, Kiosk: http://127.0.0.1:9140/games/<key>/v0/)
                # names no repository: the key in any of them, ggp-base's own "base" first.
                try:
                    repos = sorted((d.name for d in root.iterdir() if (d / "games" / game).is_dir()),
                                   key=lambda name: (name != "base", name))
                except OSError:
                    repos = []
            for repo in repos:
                found = self._from_repository(root / repo / "games" / game, version)
                if found is not None:
                    return found
        for d in self.game_dirs:
            # a plain folder (our games/) or a folder per game (<key>/<key>.kif, as repositories keep)
            for f in (d / f"{game}.kif", d / game / f"{game}.kif"):
                if f.is_file():
                    return read_rules_file(f)
        raise ArchiveError(f"rules for {url} not found in {', '.join(map(str, self.repositories + self.game_dirs)) or 'any folder'}")


# ------------------------------------------------------------------------------ replay

class _Terms:
    """Parsed states and moves, cached by text (records repeat them a lot)."""

    def __init__(self):
        self.states: dict = {}
        self.moves: dict = {}

    def state(self, text: str) -> frozenset:
        s = self.states.get(text)
        if s is None:
            node = read_first(text)
            if node is None or node.is_atom:
                raise ArchiveError(f"a state must be a list: {text[:80]!r}")
            s = frozenset(parse_term(repr(n)) for n in node.items)
            self.states[text] = s
        return s

    def move(self, text: str):
        t = self.moves.get(text)
        if t is None:
            t = self.moves[text] = parse_term(text)
        return t


def _diff(expected: frozenset, ours: frozenset) -> str:
    missing = sorted(render_spaced(f) for f in expected - ours)[:4]
    extra = sorted(render_spaced(f) for f in ours - expected)[:4]
    return f"recorded but not derived: {missing}; derived but not recorded: {extra}"


def _percept_table(data: dict, n_roles: int, n_moves: int):
    """The record's ``x-percepts`` (per role, per step, a list of texts), or a one-line
    problem (str) when it is not shaped so."""
    table = data.get("x-percepts")
    if not isinstance(table, list) or len(table) != n_roles:
        return f"x-percepts must hold one list per role ({n_roles})"
    for r, steps in enumerate(table):
        if not isinstance(steps, list) or len(steps) != n_moves:
            return f"x-percepts of role {r + 1} must hold one list per joint move ({n_moves})"
        if not all(isinstance(ps, list) and all(isinstance(p, str) for p in ps) for ps in steps):
            return f"x-percepts of role {r + 1}: each step must be a list of percept texts"
    return table


def _percepts_differ(recorded: list, derived: frozenset, terms: _Terms) -> str | None:
    """What differs between a step's recorded percepts and the derived ones, or None."""
    got = frozenset(terms.move(t) for t in recorded)
    if got == derived:
        return None
    return _diff(got, derived)


def _goals_agree(values: list, recorded: list, roles: list) -> bool:
    """The derived goal values are the recorded ones; GDL-II's ``random`` with no goal rule
    scores 0 (Dresden's GameController, and our runner)."""
    if len(values) != len(recorded):
        return False
    for role, vs, g in zip(roles, values, recorded):
        if list(vs) == [int(g)] or (role == RANDOM and not vs and int(g) == 0):
            continue
        return False
    return True


def replay(record: Record, sm, terms: _Terms | None = None, seer=None) -> ReplayResult:
    """Check one record against ``sm`` (the state-machine interface).  A GDL-II record's
    percepts are checked with ``seer.sees`` (default ``sm``)."""
    data = record.data
    mid = str(data.get("matchId", "?"))
    terms = terms or _Terms()
    res = ReplayResult(record.source, mid, False)
    if data.get("x-refused"):
        res.skipped, res.problem = True, f"START was refused: {data['x-refused']}"
        return res
    states, moves = data.get("states"), data.get("moves")
    if "x-own-percepts" in data:
        # our server's record of a GDL-II match: one role's view, not the referee's
        res.skipped, res.problem = True, ("a player's view of a GDL-II match (its own moves and percepts, "
                                          "never the joint moves): the referee's record replays")
        return res
    if data.get("isAborted") and not states and not moves:
        # Ended before the first state was known (ABORT or STOP during START, or soon after
        # on a slow machine): nothing to check.
        why = data.get("x-end-reason") or "aborted"
        res.skipped, res.problem = True, f"aborted before any state was recorded, nothing to replay: {why}"
        return res
    if not states and not moves and not data.get("isCompleted"):
        # A record written at START whose match never got further: the server was stopped or
        # killed during START (a record is created before anything else happens).
        res.skipped, res.problem = True, ("no state was recorded, nothing to replay: the match ended during "
                                          "START (the server stopped or was killed)")
        return res
    if not isinstance(states, list) or not isinstance(moves, list) or not states:
        res.problem = "no states or moves"
        return res
    if len(states) != len(moves) + 1:
        res.problem = f"{len(states)} states for {len(moves)} joint moves (expected one more state)"
        return res
    n_roles = len(sm.roles)
    percepts = None
    if data.get("x-gdl2") or "x-percepts" in data:
        percepts = _percept_table(data, n_roles, len(moves))
        if isinstance(percepts, str):
            res.problem = percepts
            return res
    seer = seer if seer is not None else sm
    try:
        state = sm.initial_state()
        recorded = terms.state(states[0])
        if recorded != state:
            res.problem = "the initial state differs: " + _diff(recorded, state)
            return res
        for i, jm in enumerate(moves):
            if sm.is_terminal(state):
                res.problem = f"state {i} is terminal, yet the match goes on"
                return res
            if len(jm) != n_roles:
                res.problem = f"joint move {i} has {len(jm)} moves for {n_roles} roles"
                return res
            joint = tuple(terms.move(m) for m in jm)
            for r, m in enumerate(joint):
                if m not in sm.legal_moves(state, r):
                    res.problem = (f"joint move {i}: {render_spaced(m)} is not a legal move of "
                                   f"{render_spaced(sm.roles[r])}")
                    return res
            if percepts is not None:
                for r in range(n_roles):
                    differ = _percepts_differ(percepts[r][i], seer.sees(state, joint, r), terms)
                    if differ:
                        res.problem = (f"joint move {i}: the percepts of {render_spaced(sm.roles[r])} "
                                       f"differ: {differ}")
                        return res
            state = sm.next_state(state, joint)
            recorded = terms.state(states[i + 1])
            if recorded != state:
                res.problem = f"state {i + 1} differs: " + _diff(recorded, state)
                return res
            res.moves = i + 1
        if data.get("isCompleted"):
            if not sm.is_terminal(state):
                res.problem = "the match is completed but its last state is not terminal"
                return res
            if "goalValues" in data:
                values = sm.goal_values(state)
                if not _goals_agree(values, data["goalValues"], sm.roles):
                    res.problem = f"goals {values} in the final state, recorded {data['goalValues']}"
                    return res
    except (GdlError, ArchiveError) as e:
        res.problem = f"unreadable term: {e}"
        return res
    except Exception as e:  # a reasoner failure is a finding about this record
        res.problem = f"{type(e).__name__}: {e}"
        return res
    res.ok = True
    return res


class Replayer:
    """One state machine (with a query cache) per game, shared by all its records: the
    referee's choice (``agent.referee``: the compiled engine when it is exact, else Prolog),
    or Prolog alone with ``engine="prolog"``, or ``reasoner(description)`` when given."""

    def __init__(self, library: GameLibrary, reasoner=None, engine: str = "auto",
                 budget: float = REFEREE_BUDGET):
        self.library = library
        self.reasoner = reasoner
        self.engine = engine
        self.budget = budget
        self._machines: dict = {}
        self._seers: dict = {}
        self.terms = _Terms()

    def machine(self, data: dict):
        key = self.library.key_for(data)
        sm = self._machines.get(key)
        if sm is None:
            desc = self.library.description(data)
            if self.reasoner is None:
                base = open_referee(desc, self.budget, engine=self.engine).sm
            else:
                base = self.reasoner(desc)
            sm = self._machines[key] = CachedStateMachine(base, maxsize=400_000)
        return sm

    def seer(self, data: dict):
        """The machine that answers ``sees`` for a GDL-II record: the game's machine when it
        has it, else a Prolog reasoner (the reference; the engines are getting ``sees``)."""
        key = self.library.key_for(data)
        seer = self._seers.get(key)
        if seer is None:
            sm = self.machine(data)
            if callable(getattr(sm.sm, "sees", None)):
                seer = sm
            else:
                seer = CachedStateMachine(PrologReasoner(self.library.description(data)))
            self._seers[key] = seer
        return seer

    def replay(self, record: Record) -> ReplayResult:
        data = record.data
        try:
            sm = self.machine(data)
            seer = self.seer(data) if data.get("x-gdl2") or "x-percepts" in data else None
        except (ArchiveError, GdlError, OSError, ReasonerError) as e:
            return ReplayResult(record.source, str(data.get("matchId", "?")), False,
                                problem=f"rules: {e}")
        return replay(record, sm, self.terms, seer)


def _replay_files(args) -> list:
    """Worker: [(file index, [results])] for the given (index, file) pairs."""
    indexed, repositories, game_dirs, engine, memory_mb = args
    limit_memory(memory_mb)
    rp = Replayer(GameLibrary(repositories, game_dirs), engine=engine)
    out = []
    for i, f in indexed:
        rs = []
        try:
            for rec in iter_records([f]):
                rs.append(rp.replay(rec))
        except (ArchiveError, OSError) as e:
            rs.append(ReplayResult(str(f), "?", False, problem=str(e)))
        out.append((i, rs))
    return out


def replay_paths(paths, repositories=(), game_dirs=(), processes: int = 1,
                 engine: str = "auto", memory_mb: int | None = None) -> list[ReplayResult]:
    """Replay every record under ``paths``; ``processes`` > 1 splits the files over that many
    worker processes (each with its own Prolog).  Results come in file order.  ``engine``:
    ``auto`` (the referee's choice, see ``agent.referee``) or ``prolog``; ``memory_mb`` caps
    each replaying process (``limit_memory``; the calling process itself when ``processes``
    is 1)."""
    indexed = list(enumerate(str(f) for f in record_files(paths)))
    repositories, game_dirs = [str(p) for p in repositories], [str(p) for p in game_dirs]
    if processes <= 1 or len(indexed) < 2:
        parts = [_replay_files((indexed, repositories, game_dirs, engine, memory_mb))]
    else:
        chunks = [indexed[k::processes] for k in range(processes)]
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            parts = pool.map(_replay_files, [(c, repositories, game_dirs, engine, memory_mb) for c in chunks])
    by_file = sorted((i, rs) for part in parts for i, rs in part)
    return [r for _, rs in by_file for r in rs]


# ------------------------------------------------------------------------------ CLI

REPLAY_HELP = "replay match records (ggp-base Match JSON, .jsonl archives, match_logs/) on the rules"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="FILE", help="record files (.json, .jsonl) or folders of them")
    p.add_argument("--games", action="append", default=[], metavar="DIR",
                   help="a game repository laid out like games.ggp.org (DIR/<repo>/games/<key>/v<N>/); repeatable")
    p.add_argument("--game-dir", action="append", default=[], metavar="DIR",
                   help="a folder of rule sheets, DIR/<key>.kif or DIR/<key>/<key>.kif (default: games/ "
                        "when it exists); repeatable")
    p.add_argument("--engine", choices=("auto", "prolog"), default="auto",
                   help="auto (default): the compiled engine where it is exact (built and checked "
                        "against Prolog), else Prolog; prolog: the Prolog reasoner only")
    p.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--memory-mb", type=int, default=MEMORY_MB, metavar="MB",
                   help=f"memory cap of each replaying process; a record whose replay needs more fails "
                        f"with the reason (default {MEMORY_MB}; 0: no cap)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems and the summary")


def cmd_replay(args) -> int:
    for p in args.paths:
        if not os.path.exists(p):
            print(f"replay: no such file: {p}", file=sys.stderr)
            return 2
    game_dirs = args.game_dir or ([Path("games")] if Path("games").is_dir() else [])
    if args.memory_mb < 0 or 0 < args.memory_mb < 256:
        print("replay: --memory-mb must be 0 (no cap) or at least 256", file=sys.stderr)
        return 2
    results = replay_paths(args.paths, args.games, game_dirs, max(1, args.jobs), args.engine, args.memory_mb)
    bad = 0
    for r in results:
        if not r.ok and not r.skipped:
            bad += 1
        if not args.quiet or (not r.ok and not r.skipped):
            print(r.line())
    ok = sum(r.ok for r in results)
    skipped = sum(r.skipped for r in results)
    print(f"{ok} ok, {bad} failed, {skipped} skipped, of {len(results)} records")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ggp-persona replay", description=REPLAY_HELP)
    add_arguments(parser)
    return cmd_replay(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
