"""On-disk cache of compiled games, keyed by the rules' *structure*.

Tiltyard replays the same games with fresh scrambled names each time, so the key is a
hash of the rules with every non-keyword, non-integer symbol renamed by order of first
occurrence (the scrambler is a consistent one-to-one renaming that keeps rule order).
Entries are stored with those canonical names and renamed to the current game's names on
load.  Integers are kept: scramblers leave them alone and goal values live in them.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from gdl.terms import FOLDED_KEYWORDS, Term

from .kernels import CompiledGame

FORMAT = "compiled-game/15"  # 3: goal-only logic kept apart; 4: legal gates; 5: fewer arrays;
# 6: gates pushed through the ORs that read legal atoms; 7: legal lists (``legal_lists``, their edges in ``lazy``);
# 8: the order of a step's first events (``ons_first``); 9: moves kept on between steps (``keep_moves``);
# 10: derived atoms without rules folded as false (fewer nodes); 11: move_in nodes counted
# against the union of their sets (compile.encode_move_in); 12: copy nodes bypassed (compile._bypass_copies);
# 13: ORs read only by ORs, ANDs only by ANDs, merged into their readers (compile._merge_into_reader);
# 14: the merges kept only where the probe finds them cheaper; 15: GDL-II percepts (``sees``) kept as
# outputs, their terms and atoms in the entry (an older entry of a game with percepts had them folded away)
log = logging.getLogger("ggp_persona.engine")
_KEEP = FOLDED_KEYWORDS | {"not", "distinct", "or", "<=", "sees"}


# The cache only grew (issue 35): past this size the entries used longest ago go, and
# temporary files a killed process left behind are removed after an hour.
DEFAULT_LIMIT_MB = 2048
STALE_TMP_SECONDS = 3600


def cache_limit_bytes() -> int:
    """``GGP_PERSONA_CACHE_MB`` (megabytes; 0: no limit), else ``DEFAULT_LIMIT_MB``."""
    try:
        mb = float(os.environ.get("GGP_PERSONA_CACHE_MB", DEFAULT_LIMIT_MB))
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    return int(mb * 1024 * 1024)


def prune(cache_dir: Path, keep: Path | None = None, limit: int | None = None) -> list[Path]:
    """Delete the least recently used entries until the cache is within ``limit`` bytes
    (never ``keep``, the entry just written), and stale temporary files; returns what went.
    Use is the modification time: ``load`` touches an entry it hits."""
    limit = cache_limit_bytes() if limit is None else limit
    removed = []
    entries = []
    now = time.time()
    try:
        listing = list(Path(cache_dir).iterdir())
    except OSError:
        return removed
    for f in listing:
        try:
            st = f.stat()
        except OSError:
            continue
        if f.name.startswith(".tmp-"):
            if now - st.st_mtime > STALE_TMP_SECONDS:
                try:
                    f.unlink()
                    removed.append(f)
                except OSError:
                    pass
        elif f.suffix == ".npz":
            entries.append((st.st_mtime, st.st_size, f))
    total = sum(size for _, size, _ in entries)
    if limit <= 0 or total <= limit:
        return removed
    for _, size, f in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if keep is not None and f == Path(keep):
            continue
        try:
            f.unlink()
            removed.append(f)
            total -= size
        except OSError:
            pass
    if removed:
        log.info("engine cache over %d MB: removed %d entries used longest ago", limit // 2 ** 20, len(removed))
    return removed


def default_cache_dir() -> Path:
    env = os.environ.get("GGP_PERSONA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "ggp-persona" / "engines"


def _is_int(s: str) -> bool:
    try:
        int(s)
        return True
    except ValueError:
        return False


class Canon:
    """Renaming game symbols <-> canonical ones (``c0``, ``c1``, ...)."""

    def __init__(self):
        self.to_canon: dict = {}
        self.from_canon: dict = {}

    def sym(self, s: str) -> str:
        if s.startswith("?") or s in _KEEP or _is_int(s):
            return s
        c = self.to_canon.get(s)
        if c is None:
            c = self.to_canon[s] = f"c{len(self.to_canon)}"
            self.from_canon[c] = s
        return c

    def term(self, t: Term) -> Term:
        if isinstance(t, str):
            return self.sym(t)
        return tuple(self.sym(t[0]) if i == 0 else self.term(a) for i, a in enumerate(t))

    def back(self, t: Term) -> Term:
        if isinstance(t, str):
            return self.from_canon.get(t, t)
        return tuple(self.back(a) for a in t)


def structure_key(rules) -> tuple[str, Canon]:
    canon = Canon()
    h = hashlib.sha256(FORMAT.encode())
    for r in rules:
        var: dict = {}

        def lit(l):
            if isinstance(l, tuple) and l[0] in ("not", "or"):
                return (l[0],) + tuple(lit(x) for x in l[1:])
            if isinstance(l, tuple) and l[0] == "distinct":
                return ("distinct",) + tuple(term(x) for x in l[1:])
            return term(l)

        def term(t):
            if isinstance(t, str) and t.startswith("?"):
                return var.setdefault(t, f"?v{len(var)}")
            if isinstance(t, str):
                return canon.sym(t)
            return (canon.sym(t[0]),) + tuple(term(a) for a in t[1:])

        h.update(repr((term(r.head), tuple(lit(l) for l in r.body))).encode())
        h.update(b"\n")
    return h.hexdigest(), canon


def _to_json(t: Term):
    return t if isinstance(t, str) else [_to_json(a) for a in t]


def _from_json(t) -> Term:
    return t if isinstance(t, str) else tuple(_from_json(a) for a in t)


def save(path: Path, game: CompiledGame, tables: dict, canon: Canon, info: dict) -> None:
    """Atomic write (temp file + rename): a crash never leaves a half-written entry.
    npz without pickles + JSON, so a tampered cache file cannot run code."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {k: np.asarray(v) for k, v in game._asdict().items()}
    meta = {"format": FORMAT, "info": info,
            "roles": [_to_json(canon.term(r)) for r in tables["roles"]],
            "base": [_to_json(canon.term(f)) for f in tables["base"]],
            "move_terms": [[_to_json(canon.term(m)) for m in ms] for ms in tables["move_terms"]],
            "sees": [[[_to_json(canon.term(p)), int(a)] for p, a in
                      zip(ps, tables["sees_atom"][tables["sees_start"][r]:tables["sees_start"][r + 1]])]
                     for r, ps in enumerate(tables["sees_terms"])]}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, __meta__=np.array(json.dumps(meta)), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    prune(path.parent, keep=path)


def load(path: Path, canon: Canon):
    """(game, tables, info) or None when absent/unreadable (a bad entry is just a miss, logged
    with the reason; the caller rebuilds and overwrites it)."""
    if not os.path.exists(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            if meta.get("format") != FORMAT:
                log.info("engine cache entry %s is of format %s, not %s: rebuilding", path,
                         meta.get("format"), FORMAT)
                return None
            fields = {}
            for k in CompiledGame._fields:
                v = z[k]
                fields[k] = int(v) if v.ndim == 0 else v
        game = CompiledGame(**fields)
        try:
            os.utime(path)  # recently used: the last to go when the cache is pruned
        except OSError:
            pass
        tables = {"roles": [canon.back(_from_json(r)) for r in meta["roles"]],
                  "base": [canon.back(_from_json(f)) for f in meta["base"]],
                  "move_terms": [[canon.back(_from_json(m)) for m in ms] for ms in meta["move_terms"]],
                  "sees_terms": [[canon.back(_from_json(p)) for p, _ in ps] for ps in meta["sees"]],
                  "sees_atom": np.array([a for ps in meta["sees"] for _, a in ps], dtype=np.int64),
                  "sees_start": np.cumsum([0] + [len(ps) for ps in meta["sees"]]).astype(np.int64)}
        return game, tables, meta.get("info", {})
    except Exception as e:  # noqa: BLE001 - any unreadable entry is a miss (BadZipFile, EOFError, bad JSON, ...)
        log.warning("ignoring unreadable engine cache entry %s (%s: %s)", path, type(e).__name__, e)
        return None


def entry_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / f"{key}.npz"


def describe(info: dict) -> str:
    return json.dumps(info, sort_keys=True)
