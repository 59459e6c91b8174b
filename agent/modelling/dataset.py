"""Decisions from match records: replayed on the rules, selected by player, role or label.

A *decision* (spec 1) is one (match, ply, role) where the role had at least two legal moves
and the recorded move is the player's own choice: forced decisions are left out, and so are
moves the game server substituted (a non-empty error slot: ``errors[i+1][role]``).

Replaying a record is the slow part, so the replayed decisions of each file are cached
(keyed by the file's path, size and modification time), before any selection; selecting
players, roles or labels is then cheap.  A record that does not replay is reported with
its first problem and left out, never silently.

Duplicates: matches of the same game and players whose move sequences are identical (some
bot pairings repeat the same game 50 times).  They are reported; ``drop_duplicates`` keeps
the earliest of each group.
"""
from __future__ import annotations

import csv
import hashlib
import os
import pickle
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import Progress

from agent.archive import URL_RE, ArchiveError, GameLibrary, _Terms, iter_records, record_files
from agent.matchlog import atomic_write_bytes
from gdl.kif import GdlError, read_rules_file

from .movefeatures import HISTORY

CACHE_FORMAT = "decisions-v3"     # v3: each decision keeps its recent history


class DatasetError(ValueError):
    """Bad input to the dataset (a missing file, an unreadable label file...)."""


@dataclass(frozen=True)
class Decision:
    game: str            # game key (hash of the rules' source, see game_key)
    match_id: str
    role: int
    ply: int
    player: str          # canonical player name (aliases applied)
    label: str           # from a label file, else the player name
    start: float         # match startTime, ms since the epoch
    state: frozenset
    moves: tuple         # legal moves of the role, engine order
    chosen: int          # index of the recorded move in moves
    prev: tuple | None   # the joint move that led to the state (None at ply 0)
    history: tuple = ()  # the last steps before the state, oldest first: (state, joint move) each
                         # (``movefeatures.HISTORY`` of them: the mover's and the others' last moves)

    @property
    def key(self) -> tuple:
        return (self.match_id, self.role, self.ply)

    @property
    def pm(self) -> tuple:
        """The player-match (match, role): the unit of splits and bootstrap."""
        return (self.match_id, self.role)


@dataclass
class Dataset:
    decisions: list
    games: dict                      # game key -> rules Description
    summary: dict = field(default_factory=dict)

    def players(self) -> list:
        return sorted({d.label for d in self.decisions})


def game_key(library: GameLibrary, data: dict) -> str:
    return hashlib.sha256(library.key_for(data).encode()).hexdigest()[:16]


def parse_aliases(items) -> dict:
    """``["ConfidenceAgent=ConfidencePlayer"]`` -> {alias: canonical}."""
    out = {}
    for it in items or ():
        if "=" not in it or not all(p.strip() for p in it.split("=", 1)):
            raise DatasetError(f"alias {it!r}: expected ALIAS=NAME")
        a, b = (p.strip() for p in it.split("=", 1))
        out[a] = b
    return out


def read_labels(path) -> dict:
    """A label file: CSV or TSV rows ``match id, role, label`` (role: name or index; a
    header row is allowed).  Returns {(match_id, role): label}."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"label file {path}: no such file")
    text = p.read_text(encoding="utf-8", errors="replace")
    first = text.splitlines()[0] if text.strip() else ""
    dialect = "excel-tab" if "\t" in first else "excel"
    out = {}
    for n, row in enumerate(csv.reader(text.splitlines(), dialect=dialect), 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 3:
            raise DatasetError(f"{path}:{n}: expected 3 columns (match id, role, label), got {len(row)}")
        mid, role, label = (c.strip() for c in row)
        if n == 1 and mid.lower() in ("match", "match id", "matchid", "match_id"):
            continue
        out[(mid, role)] = label
    return out


# ------------------------------------------------------------------------------ replay

def _replay_record(data: dict, engine, terms: _Terms) -> tuple[list, str | None]:
    """Every non-forced (ply, role) of a record: (ply, role, state, moves, chosen, prev,
    substituted, history).  Returns (rows, problem, forced count); a problem means the record
    is unusable."""
    states, moves = data.get("states"), data.get("moves")
    if not isinstance(moves, list) or not moves:
        return [], "no moves", 0
    errors = data.get("errors") if isinstance(data.get("errors"), list) else []
    n_roles = len(engine.roles)
    rows = []
    forced = 0
    state = engine.initial_state()
    if isinstance(states, list) and states and terms.state(states[0]) != state:
        return [], "the recorded initial state differs from the rules'", 0
    prev = None
    steps: list = []
    for i, jm in enumerate(moves):
        if engine.is_terminal(state):
            return [], f"state {i} is terminal, yet the match goes on", 0
        if not isinstance(jm, list) or len(jm) != n_roles:
            return [], f"joint move {i} is not one move per role", 0
        joint = tuple(terms.move(str(m)) for m in jm)
        err = errors[i + 1] if i + 1 < len(errors) and isinstance(errors[i + 1], list) else []
        for r, m in enumerate(joint):
            legal = list(engine.legal_moves(state, r))
            if m not in legal:
                return [], f"joint move {i}: {jm[r]} is not legal", 0
            if len(legal) >= 2:
                substituted = r < len(err) and bool(err[r])
                rows.append((i, r, state, tuple(legal), legal.index(m), prev, substituted, tuple(steps)))
            else:
                forced += 1
        steps = (steps + [(state, joint)])[-HISTORY:]
        state = engine.next_state(state, joint)
        if isinstance(states, list) and i + 1 < len(states) and terms.state(states[i + 1]) != state:
            return [], f"state {i + 1} differs from the rules'", 0
        prev = joint
    return rows, None, forced


class _Engines:
    def __init__(self, library: GameLibrary):
        self.library = library
        self.engines: dict = {}
        self.descs: dict = {}

    def get(self, data: dict):
        # the engines (numba, about 0.5 s to import): only when records are replayed; a
        # dataset read from its cache loads without them
        from agent.engine.loader import load_engine
        key = game_key(self.library, data)
        if key not in self.engines:
            desc = self.library.description(data)
            self.descs[key] = desc
            self.engines[key] = load_engine(desc)
        return key, self.engines[key]


def _file_cache_path(cache_dir: Path, f: Path, rules_tag: str) -> Path:
    st = f.stat()
    h = hashlib.sha256(f"{CACHE_FORMAT}|{rules_tag}|{f.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    return cache_dir / f"{h[:32]}.pkl"


def _replay_file(f: Path, engines: _Engines, terms: _Terms) -> list:
    """[(record info dict, rows)] for one file; info has 'problem' when unusable."""
    out = []
    for rec in iter_records([f]):
        data = rec.data
        info = {"source": rec.source, "match_id": str(data.get("matchId", rec.source)),
                "players": [str(p) for p in data.get("playerNamesFromHost") or []],
                "start": float(data.get("startTime") or 0), "game": None, "problem": None,
                "name": _game_name(data),
                "moves": [list(map(str, m)) for m in data.get("moves") or [] if isinstance(m, list)]}
        try:
            key, engine = engines.get(data)
            info["game"] = key
            info["roles"] = [str(r) for r in engine.roles]
            rows, problem, info["forced"] = _replay_record(data, engine, terms)
        except (ArchiveError, GdlError) as e:
            rows, problem = [], f"rules or terms: {e}"
        except Exception as e:  # a reasoner failure is a finding about this record
            rows, problem = [], f"{type(e).__name__}: {e}"
        info["problem"] = problem
        out.append((info, rows))
    return out


class FixedRules(GameLibrary):
    """Every record is played on one given rule sheet (``--game RULES``)."""

    def __init__(self, path):
        super().__init__()
        self.path = Path(path)
        try:
            self.desc = read_rules_file(self.path)
        except (GdlError, OSError, UnicodeDecodeError) as e:
            raise DatasetError(f"rules {path}: {e}") from None

    def key_for(self, data: dict) -> str:
        return f"file:{self.path.resolve()}"

    def description(self, data: dict):
        return self.desc


def _game_name(data: dict) -> str | None:
    m = URL_RE.match(str(data.get("gameMetaURL", "")))
    return m.group("key") if m else None


def load_dataset(paths, *, repositories=(), game_dirs=(), players=None, roles=None,
                 labels=None, aliases=None, drop_duplicates=False, cache_dir=None,
                 progress=True, game=None) -> Dataset:
    """Decisions of the selected player-matches in the given records.

    ``players``: canonical names to keep (None: all); ``roles``: role names to keep;
    ``labels``: {(match_id, role name or index): label} — then only labelled player-matches
    are kept and the label replaces the player name as the class; ``aliases``: {alias:
    canonical}; ``game``: a rule file every record is played on, or a game name (the key
    of a games.ggp.org URL) that selects records."""
    for p in paths:
        if not os.path.exists(p):
            raise DatasetError(f"no such file or folder: {p}")
    files = record_files(paths)
    if not files:
        raise DatasetError("no record files (.json, .jsonl) in " + ", ".join(map(str, paths)))
    by_name = None
    if game is not None and os.path.isfile(game):
        library = FixedRules(game)
    else:
        library, by_name = GameLibrary(repositories, game_dirs), game
    engines, terms = _Engines(library), _Terms()
    # where the rules come from is part of a cached replay's identity
    rules_tag = (f"file:{library.path.resolve()}" if isinstance(library, FixedRules) else
                 repr([str(Path(p).resolve()) for p in (*repositories, "|", *game_dirs)]))
    cache = Path(cache_dir) if cache_dir else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    aliases = aliases or {}
    records = []
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("replaying records", total=len(files))
        for f in files:
            cp = _file_cache_path(cache, f, rules_tag) if cache else None
            got = None
            if cp and cp.is_file():
                try:
                    got = pickle.loads(cp.read_bytes())
                except Exception:  # a stale or damaged cache entry is rebuilt
                    got = None
            if got is None:
                try:
                    got = _replay_file(f, engines, terms)
                except (ArchiveError, OSError, UnicodeDecodeError) as e:
                    got = [({"source": str(f), "match_id": "?", "players": [], "start": 0.0,
                             "game": None, "problem": str(e), "moves": []}, [])]
                if cp:
                    atomic_write_bytes(cp, pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
            records.extend(got)
            bar.advance(task)
    # the rules of every game seen (cached entries skipped the engine)
    games = {}
    for info, _ in records:
        if info["game"] and info["game"] not in games:
            games[info["game"]] = None
    for f in files:
        if all(v is not None for v in games.values()):
            break
        try:
            for rec in iter_records([f]):
                k = game_key(library, rec.data)
                if k in games and games[k] is None:
                    games[k] = library.description(rec.data)
        except (ArchiveError, GdlError, OSError, UnicodeDecodeError):
            continue   # already reported as this file's problem
    if by_name is not None:
        records = [(i, r) for i, r in records if i.get("name") == by_name]
        if not records:
            raise DatasetError(f"no records of game {by_name!r} (a games.ggp.org game name, or a rule file)")
    return _select(records, games, players, roles, labels, aliases, drop_duplicates)


def _select(records, games, players, roles, labels, aliases, drop_duplicates) -> Dataset:
    summary = Counter()
    problems = []
    # duplicates: same game, same players in role order, same move sequence
    seen: dict = defaultdict(list)
    for info, _ in records:
        if info["problem"] is None:
            names = tuple(aliases.get(p, p) for p in info["players"])
            seen[(info["game"], names, repr(info["moves"]))].append((info["start"], info["match_id"]))
    dup_groups = [sorted(v) for v in seen.values() if len(v) > 1]
    dropped = {mid for g in dup_groups for _, mid in g[1:]} if drop_duplicates else set()
    decisions = []
    per_label = Counter()
    for info, rows in records:
        summary["records"] += 1
        if info["problem"] is not None:
            problems.append(f"{info['source']} ({info['match_id']}): {info['problem']}")
            continue
        if info["match_id"] in dropped:
            summary["duplicate records dropped"] += 1
            continue
        role_names = info.get("roles", [])
        summary["forced decisions left out (all roles)"] += info.get("forced", 0)
        for ply, r, state, moves, chosen, prev, substituted, history in rows:
            raw = info["players"][r] if r < len(info["players"]) else "?"
            player = aliases.get(raw, raw)
            rname = role_names[r] if r < len(role_names) else str(r)
            if labels is not None:
                label = labels.get((info["match_id"], rname), labels.get((info["match_id"], str(r))))
                if label is None:
                    continue
            else:
                label = player
                if players is not None and player not in players:
                    continue
            if roles is not None and rname not in roles:
                continue
            if substituted:
                summary["substituted moves left out"] += 1
                continue
            decisions.append(Decision(info["game"], info["match_id"], r, ply, player, label,
                                      info["start"], state, moves, chosen, prev, history))
            per_label[label] += 1
    summary["decisions"] = len(decisions)
    summary["player-matches"] = len({d.pm for d in decisions})
    out = {"counts": dict(summary), "problems": problems,
           "duplicate_groups": [[mid for _, mid in g] for g in dup_groups],
           "duplicate_records": sum(len(g) - 1 for g in dup_groups),
           "decisions_per_label": dict(per_label),
           "warnings": [f"{lab}: only {n} non-forced decisions (fewer than 200, spec 4.5 item 9)"
                        for lab, n in sorted(per_label.items()) if n < 200]}
    if players is not None:
        missing = sorted(set(players) - set(per_label))
        out["warnings"] += [f"player {p}: no decisions in these records" for p in missing]
    return Dataset(decisions, {k: v for k, v in games.items() if v is not None}, out)
