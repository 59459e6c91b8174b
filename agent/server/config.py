"""Server settings and the per-match persona choice.

Personas config (TOML), first matching rule wins, else ``default``, else the server's
``--persona``::

    default = "champion"            # optional

    [[match]]
    prefix = "tiltyard."            # match ids starting with this (case-sensitive)
    persona = "phlegmatic"

    [[match]]
    regex = "^Base\\\\.chess\\\\."      # Python regular expression, searched in the match id
    persona = "my_personas/cautious.toml"
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PORT = 9147
DEFAULT_NAME = "ggp-persona"
MAX_BODY_BYTES = 16 * 1024 * 1024


class ConfigError(ValueError):
    """A settings problem found at start-up; the text is shown to the user."""


@dataclass
class PersonaRule:
    persona: str
    prefix: str | None = None
    regex: re.Pattern | None = None

    def matches(self, match_id: str) -> bool:
        if self.prefix is not None and not match_id.startswith(self.prefix):
            return False
        if self.regex is not None and not self.regex.search(match_id):
            return False
        return True


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    name: str = DEFAULT_NAME
    persona: str | None = None               # server default: a persona name or file
    persona_rules: list = field(default_factory=list)
    log_dir: Path = Path("match_logs")
    # Reply this long before the play clock ends: max(margin_min, margin_fraction * clock).
    # Covers network time and scheduling delays on a loaded machine.
    margin_min: float = 0.75
    margin_fraction: float = 0.10
    max_matches: int = 8                     # START beyond this is answered busy
    max_body: int = MAX_BODY_BYTES
    spare_players: int = 1                   # pre-started, warmed player processes (fast START)
    spare_referees: int = 4                  # pre-started referee processes
    worker_nice: int = 5                     # players yield the CPU to the HTTP loop and referees
    referee_nice: int = 0                    # referees do little, and it is urgent
    warm_timeout: float = 300.0              # start-up waits this long for a warm player process
    seed: int | None = None
    use_engine: bool = True                  # False: Prolog only (tests, or a suspect engine)
    use_search: bool = True                  # False: flat Monte Carlo instead of agent.search

    def margin(self, clock: float) -> float:
        return max(self.margin_min, self.margin_fraction * max(clock, 0.0))

    def persona_for(self, match_id: str) -> str | None:
        for rule in self.persona_rules:
            if rule.matches(match_id):
                return rule.persona
        return self.persona


def load_persona_rules(path, base: str | None = None) -> tuple[list, str | None]:
    """Rules and the optional default from a TOML file; persona file paths in it are taken
    relative to the config file's folder."""
    from agent import tomlio
    path = Path(path)
    try:
        data = tomlio.load_file(path)
    except OSError as e:
        raise ConfigError(f"cannot read personas config {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"personas config {path} is not UTF-8 text: {e}") from None
    except tomlio.TOMLDecodeError as e:
        raise ConfigError(f"personas config {path} is not valid TOML: {e}") from None
    folder = path.parent

    def resolve(name: str) -> str:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}: persona must be a non-empty string, found {name!r}")
        candidate = folder / name
        if ("/" in name or name.endswith(".toml") or name.endswith(".json")) and candidate.exists():
            return str(candidate)
        return name

    unknown = set(data) - {"default", "match"}
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)} (expected 'default' and [[match]] tables)")
    rules = []
    for i, entry in enumerate(data.get("match", [])):
        if not isinstance(entry, dict) or "persona" not in entry:
            raise ConfigError(f"{path}: [[match]] #{i + 1} needs a persona")
        extra = set(entry) - {"persona", "prefix", "regex"}
        if extra:
            raise ConfigError(f"{path}: [[match]] #{i + 1} has unknown keys {sorted(extra)}")
        if "prefix" not in entry and "regex" not in entry:
            raise ConfigError(f"{path}: [[match]] #{i + 1} needs a prefix or a regex")
        regex = None
        if "regex" in entry:
            try:
                regex = re.compile(entry["regex"])
            except (re.error, TypeError) as e:
                raise ConfigError(f"{path}: [[match]] #{i + 1} regex {entry['regex']!r}: {e}") from None
        prefix = entry.get("prefix")
        if prefix is not None and not isinstance(prefix, str):
            raise ConfigError(f"{path}: [[match]] #{i + 1} prefix must be a string")
        rules.append(PersonaRule(resolve(entry["persona"]), prefix, regex))
    default = data.get("default")
    return rules, (resolve(default) if default is not None else None)


def check_persona(spec: str | None) -> dict:
    """Load a persona the way a worker will, so a typo fails at start-up, not mid-match.
    Returns its description (name and parameters) for the log; ``{}`` when personas are not
    available in this build."""
    if spec is None:
        return {}
    try:
        from agent.persona import load_persona
    except ImportError:
        raise ConfigError(f"persona {spec!r} requested, but agent.persona is not available") from None
    try:
        persona = load_persona(spec)
    except Exception as e:  # the loader's own error text is the useful part
        raise ConfigError(f"cannot load persona {spec!r}: {e}") from None
    from agent.player import persona_dict
    return persona_dict(persona)

