"""The games and personas a person can pick, and the checks on what they upload.

Games: plain folders of ``<key>.kif`` (the project's ``games/``) and game repositories laid
out like games.ggp.org (``<repo>/games/<key>/[v<N>/]`` with a ``METADATA`` naming the
rulesheet; the latest version holding it is used), or a folder of such repositories.
Uploads are bounded in size, decoded, read and validated (``gdl.validate``); every problem
comes back with its line and column instead of an exception.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gdl.kif import GdlError, Problem, decode_bytes, parse_rules
from gdl.validate import validate

from agent.persona import persona_files, persona_stem, preset_names

MAX_RULES_BYTES = 2_000_000     # the largest corpus rule sheet is well under 1 MB
MAX_PERSONA_BYTES = 100_000
_VERSION = re.compile(r"^v(\d+)$")


@dataclass(frozen=True)
class Game:
    key: str          # unique on the page: "<folder>/<name>" or "upload/<hash>"
    title: str
    path: str | None  # the rule sheet, or None for an upload (text kept in memory)


def _latest_sheet(folder: Path) -> Path | None:
    """The rule sheet of the latest version of a repository game folder."""
    meta_sheet = None
    versions = sorted((int(m.group(1)), d) for d in folder.iterdir()
                      if d.is_dir() and (m := _VERSION.match(d.name)))
    for meta in [folder / "METADATA"] + [d / "METADATA" for _, d in reversed(versions)]:
        try:
            meta_sheet = json.loads(meta.read_text(encoding="utf-8")).get("rulesheet")
        except (OSError, ValueError, AttributeError):
            continue
        if meta_sheet:
            break
    candidates = [d for _, d in reversed(versions)] + [folder]
    for d in candidates:
        if meta_sheet and (d / meta_sheet).is_file():
            return d / meta_sheet
        kifs = sorted(d.glob("*.kif"))
        if not meta_sheet and kifs:
            return kifs[0]
    return None


def list_games(folders) -> list[Game]:
    """Every game in the given folders, sorted by title within each folder."""
    out: list[Game] = []
    for root in map(Path, folders):
        if not root.is_dir():
            continue
        label = root.name
        found = []
        for f in sorted(root.glob("*.kif")):
            found.append(Game(f"{label}/{f.stem}", f.stem, str(f)))
        repos = [root] if (root / "games").is_dir() else sorted(d for d in root.iterdir() if (d / "games").is_dir())
        for repo in repos:
            for g in sorted(d for d in (repo / "games").iterdir() if d.is_dir()):
                sheet = _latest_sheet(g)
                if sheet is not None:
                    prefix = f"{label}/{repo.name}" if repo != root else label
                    found.append(Game(f"{prefix}/{g.name}", f"{g.name} ({repo.name})", str(sheet)))
        out.extend(sorted(found, key=lambda g: g.title.lower()))
    return out


def check_rules_upload(data: bytes, source: str):
    """``(text, description, problems)``: ``description`` is None when the rules cannot be
    played (any error), and ``problems`` (gdl Problems, with line and column) say why."""
    if len(data) > MAX_RULES_BYTES:
        return None, None, [Problem("error", f"the file is larger than {MAX_RULES_BYTES // 1000} kB", source)]
    if not data.strip():
        return None, None, [Problem("error", "the file is empty", source)]
    try:
        text = decode_bytes(data, source)
        if "\x00" in text:
            line = text[:text.index("\x00")].count("\n") + 1
            return None, None, [Problem("error", "the file holds NUL bytes: not a text rule sheet", source, line, 1)]
        desc = parse_rules(text, source)
    except GdlError as e:
        return None, None, e.problems
    except RecursionError:
        return None, None, [Problem("error", "the rules are nested too deeply", source)]
    problems = list(desc.warnings) + validate(desc)
    if not desc.roles:
        problems.append(Problem("error", "the rules define no roles", source))
    if any(p.level == "error" for p in problems):
        return text, None, problems
    return text, desc, problems


def list_personas(folders) -> list[tuple[str, str]]:
    """``(label, spec)`` of the presets and of the persona files in the given folders."""
    out = [(n, n) for n in preset_names()]
    for d in map(Path, folders):
        if d.is_dir():
            out.extend((f"{persona_stem(f)} ({d.name})", str(f)) for f in persona_files(d))
    return out
