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

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import tomlio
from ..compute import default_workers
from ..persona import load_persona
from ..player import persona_dict

DEFAULT_PORT = 9147
DEFAULT_NAME = "ggp-persona"
MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MARGIN = 0.5
DEFAULT_MARGIN_FRACTION = 0.05
# Slow clients on a public port.  A manager writes its whole request at once (ggp-base's
# HttpWriter) and waits for the reply with one connection per request, so a request that
# is not complete after READ_TIMEOUT seconds is not a manager's; a 16 MB START needs about
# 1.3 MB/s to make it.  At most MAX_CONNECTIONS connections are open; when one more arrives
# the oldest connection still sending its request is closed (requests already complete,
# which wait for their reply, are never closed), so slow clients cannot lock managers out.
READ_TIMEOUT = 12.0
MAX_CONNECTIONS = 64


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
    # Reply this long before a clock ends: max(margin_min, margin_fraction * clock).  It covers
    # what happens between our deadline and the manager reading the reply: the event loop
    # waking up, the reply's write, the local part of the network.  Measured from a manager on
    # the same 2-core machine (docs/benchmarks/server.md): the median reply is a few ms after
    # our deadline, but with the machine oversubscribed ten times over (load average 20-29)
    # the worst replies came up to 0.52 s after it.  0.5 s covers that; managers add 1-5 s of
    # grace to PLAY on top (ggp-facts 3.1), which is left for the network.
    margin_min: float = DEFAULT_MARGIN
    margin_fraction: float = DEFAULT_MARGIN_FRACTION
    max_matches: int = 8                     # START beyond this is answered busy (unless one is evicted)
    evict_idle: float = 300.0                # when full, a START ends a match silent this long (or overdue)
    max_idle: float = 3600.0                 # a match silent this long is abandoned, whatever its clocks
    max_body: int = MAX_BODY_BYTES
    read_timeout: float = READ_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    # Memory.  Each worker process (referee, player, grounder) is killed when its resident
    # memory passes worker_memory_mb; the match's processes together with every other match's
    # may not pass memory_budget_mb (the match using most is ended).  A referee or player over
    # its cap ends its match, with the reason in the record; a grounder over it only means no
    # compiled engine (Prolog plays).  SWI-Prolog's own stack and table limits sit below the
    # cap, so a runaway query usually fails cleanly inside Prolog before the process is killed.
    worker_memory_mb: int = 2048
    prolog_stack_mb: int | None = None       # SWI-Prolog stack limit per worker; None: half the cap
    memory_budget_mb: int = field(default_factory=lambda: default_memory_budget_mb())
    memory_poll: float = 0.2                 # seconds between two looks at the workers' memory
    spare_players: int = 1                   # pre-started, warmed player processes (fast START)
    spare_referees: int = 4                  # pre-started referee processes
    worker_nice: int = 5                     # players yield the CPU to the HTTP loop and referees
    referee_nice: int = 0                    # referees do little, and it is urgent
    warm_timeout: float = 300.0              # start-up waits this long for a warm player process
    seed: int | None = None
    use_engine: bool = True                  # False: Prolog only (tests, or a suspect engine)
    use_search: bool = True                  # False: flat Monte Carlo instead of agent.search
    # True: READY as soon as the player searches on an engine, the grounder's interim
    # non-ground one included (a person waiting for the first board; a manager's start clock
    # is there to build the compiled engine, so the server waits for it)
    ready_when_searching: bool = False
    # between PLAYs (the opponents' turn) the player searches on from the match's state, its
    # tree kept for the next move, when its persona searches until the clock (a persona with
    # a smaller ``limit`` would gain skill from it); False: idle between PLAYs (a server that
    # plays persons, whose turns are long, on cores that other games need)
    ponder: bool = True
    # search threads per player (root parallelism on the compiled engine): by default every
    # core this server may run on (``taskset`` narrows it), one tree per thread
    threads: int = field(default_factory=default_workers)
    # recorded GDL-II matches (a host's whole records: every role's moves): a GDL-II match whose
    # rules some of them share samples the hidden moves as they were made there, and predicts
    # the opponents in its search (agent.hidden.prior.from_folder, agent.hidden.predicted)
    gdl2_records: Path | None = None

    def prolog_limits(self) -> dict:
        """SWI-Prolog's limits for one worker, in bytes (see worker.apply_limits)."""
        cap = self.worker_memory_mb * 1024 * 1024
        stack = cap // 2 if self.prolog_stack_mb is None else self.prolog_stack_mb * 1024 * 1024
        return {"stack_limit": stack, "table_space": cap // 4}

    def margin(self, clock: float) -> float:
        return max(self.margin_min, self.margin_fraction * max(clock, 0.0))

    def persona_for(self, match_id: str) -> str | None:
        for rule in self.persona_rules:
            if rule.matches(match_id):
                return rule.persona
        return self.persona


def default_memory_budget_mb() -> int:
    """Three quarters of the machine's memory (what the matches may use together)."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return max(1024, int(pages * size * 0.75) // (1024 * 1024))
    except (ValueError, OSError, AttributeError):
        return 8192


def load_persona_rules(path, base: str | None = None) -> tuple[list, str | None]:
    """Rules and the optional default from a TOML file; persona file paths in it are taken
    relative to the config file's folder."""
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
    Returns its description (name and parameters) for the log; ``{}`` when none is named."""
    if spec is None:
        return {}
    try:
        persona = load_persona(spec)
    except Exception as e:  # the loader's own error text is the useful part
        raise ConfigError(f"cannot load persona {spec!r}: {e}") from None
    return persona_dict(persona)

