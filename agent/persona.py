"""Personas: the thesis search parameters plus optional designer utility, as TOML files.

A persona file holds the 17 parameters of spec 2.2 (per-role ones as ``[self, others]``),
``mast_tau``, ``kappa``, optional ``[utility]`` with ``lambda`` and ``weights``, and ``name``,
``kind``, ``description``.  Values are checked against the GA intervals of the thesis
(spec 2.2); ``limit`` is not evolved (fixed 1000 there) and may be raised for play: a
persona searches the fewer of its ``limit`` simulations and the clock (skill = limit, 6.6).
Unknown fields are errors, so a typo never silently falls back to a default.

Presets live in ``agent/personas/`` (package data, so every kind of install has them).
"""
from __future__ import annotations

import gzip
import logging
import math
import sys
import zlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from agent import tomlio
from agent.matchlog import atomic_write_packed
from agent.modeltable import ModelError, check_table

PERSONA_DIR = Path(__file__).resolve().parent / "personas"  # package data: installs carry it
KINDS = ("fitted", "procedural", "champion")
MAX_LIMIT = 10_000_000       # play may use far more than the thesis's 1000 simulations
# A persona file larger than this is refused before it is read: a 146 MB file kept ``serve``
# parsing TOML for 6 minutes with its port closed.  Fitted personas (the largest, for their
# move counts) are under 1 MB for ten thousand training decisions.
MAX_PERSONA_BYTES = 16 * 1024 * 1024
LOG_PERSONA_BYTES = 1024 * 1024     # from this size, reading a persona file is logged (seconds)

log = logging.getLogger("ggp_persona.persona")

# field -> (type, lo, hi); per-role pairs are listed in PAIRS
RANGES = {
    "rave": (int, 0, 5000),
    "grave": (int, 0, 120),
    "charge_depth": (int, 0, 100),
    "horizon": (int, 1, 20),
    "exploration_factor": (int, 1, 140),
    "limit": (int, 1, MAX_LIMIT),
    "tree_discount": (float, 0.9, 1.0),
    "charge_discount": (float, 0.9, 1.0),
    "epsilon": (float, 0.0, 1.0),
    "charge_defaults": (float, 35.0, 45.0),
    "defensiveness": (float, 0.0, 3.0),
    "aggressiveness": (float, 0.0, 3.0),
    "random_error": (float, 0.0, 1.0),
    "nice_threshold": (float, 0.0, 100.0),
    "mast_tau": (float, 0.01, 1000.0),   # no thesis value; must be positive (Gibbs temperature)
    "kappa": (float, 0.0001, 100.0),
}
PAIRS = ("charge_defaults", "defensiveness", "aggressiveness")
OPTIONAL = {"mast_tau": 10.0, "kappa": 0.1}           # spec 2.4 and 4.1 decisions
UTILITY_FEATURES = ("goal", "win", "loss", "draw", "length", "mobility", "opp_mobility",
                    "own_facts", "opp_facts")
WEIGHT_RANGE = (-100.0, 100.0)


class PersonaError(ValueError):
    """A persona file or record that cannot be used; the message names field and value."""


class PersonaNotFound(PersonaError):
    """No preset of that name and no such file."""


@dataclass(frozen=True)
class Persona:
    name: str
    kind: str
    description: str
    rave: int
    grave: int
    charge_depth: int
    horizon: int
    exploration_factor: float
    limit: int
    tree_discount: float
    charge_discount: float
    epsilon: float
    charge_defaults: tuple
    defensiveness: tuple
    aggressiveness: tuple
    random_error: float
    nice_threshold: float
    mast_tau: float = 10.0
    kappa: float = 0.1
    utility_weights: dict = field(default_factory=dict)
    utility_lambda: float = 0.0
    model: dict | None = None    # a fast fit's player model (agent.modelplay), played instead of CHOOSE

    def replace(self, **changes) -> "Persona":
        d = asdict(self)
        d.update(changes)
        return Persona(**d)

    def to_toml(self) -> str:
        data = {"name": self.name, "kind": self.kind, "description": self.description}
        for f in fields(self):
            if f.name not in data and f.name not in ("utility_weights", "utility_lambda", "model"):
                v = getattr(self, f.name)
                data[f.name] = list(v) if isinstance(v, tuple) else v
        if self.utility_lambda or self.utility_weights:
            data["utility"] = {"lambda": self.utility_lambda, "weights": dict(self.utility_weights)}
        if self.model is not None:
            data["model"] = self.model
        return tomlio.dumps(data)


def _number(source: str, name: str, value, kind, lo, hi):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PersonaError(f"{source}: {name} = {value!r} must be a number in [{lo}, {hi}]")
    if kind is int and not (isinstance(value, int) or float(value).is_integer()):
        raise PersonaError(f"{source}: {name} = {value!r} must be an integer in [{lo}, {hi}]")
    if isinstance(value, float) and not math.isfinite(value):
        raise PersonaError(f"{source}: {name} = {value!r} must be finite, in [{lo}, {hi}]")
    return kind(value)


def persona_from_dict(data: dict, source: str = "<persona>", *, check_ranges: bool = True) -> Persona:
    """Validate a parsed persona record.  ``check_ranges=False`` is for internal baselines
    (e.g. flat Monte Carlo's unbounded exploration), never for persona files."""
    data = dict(data)
    known = set(RANGES) | {"name", "kind", "description", "utility", "model"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise PersonaError(f"{source}: unknown field{'s' * (len(unknown) > 1)} "
                           f"{', '.join(unknown)} (allowed: {', '.join(sorted(known))})")
    out: dict = {}
    for name, (kind, lo, hi) in RANGES.items():
        if name not in data:
            if name in OPTIONAL:
                out[name] = OPTIONAL[name]
                continue
            raise PersonaError(f"{source}: missing field {name} (range [{lo}, {hi}])")
        value = data[name]
        if name in PAIRS:
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise PersonaError(f"{source}: {name} = {value!r} must be a pair [self, others], "
                                   f"each in [{lo}, {hi}]")
            vals = tuple(_number(source, f"{name}[{i}]", v, kind, lo, hi) for i, v in enumerate(value))
            for i, v in enumerate(vals):
                if check_ranges and not lo <= v <= hi:
                    raise PersonaError(f"{source}: {name}[{i}] ({('self', 'others')[i]}) = {v} "
                                       f"is out of range [{lo}, {hi}]")
            out[name] = vals
        else:
            v = _number(source, name, value, kind, lo, hi)
            if check_ranges and not lo <= v <= hi:
                extra = " (raise limit for play up to that bound; the thesis fixes 1000)" if name == "limit" else ""
                raise PersonaError(f"{source}: {name} = {v} is out of range [{lo}, {hi}]{extra}")
            out[name] = v
    name = data.get("name", Path(source).stem if source != "<persona>" else "persona")
    kind = data.get("kind", "fitted")
    desc = data.get("description", "")
    for fname, v in (("name", name), ("kind", kind), ("description", desc)):
        if not isinstance(v, str):
            raise PersonaError(f"{source}: {fname} = {v!r} must be a string")
    if kind not in KINDS:
        raise PersonaError(f"{source}: kind = {kind!r} must be one of {', '.join(KINDS)}")
    weights, lam = _utility(data.get("utility"), source)
    model = _model(data.get("model"), source)
    return Persona(name=name, kind=kind, description=desc, utility_weights=weights,
                   utility_lambda=lam, model=model, **out)


def _model(m, source: str):
    """A fitted model's table, checked whole here so that a broken file fails on load, not
    at the first move."""
    if m is None:
        return None
    if not isinstance(m, dict) or not isinstance(m.get("plan"), dict) or not isinstance(m.get("fit"), dict):
        raise PersonaError(f"{source}: model must be a table with plan and fit (written by ggp-persona fit)")
    unknown = sorted(set(m) - {"plan", "fit"})
    if unknown:
        raise PersonaError(f"{source}: unknown field model.{unknown[0]} (allowed: plan, fit)")
    try:
        check_table(m["fit"], f"{source}: model")
    except ModelError as e:
        raise PersonaError(str(e)) from None
    limit = m["plan"].get("limit")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise PersonaError(f"{source}: model.plan.limit = {limit!r} must be an integer in [1, {MAX_LIMIT}]")
    return m


def _utility(u, source: str):
    if u is None:
        return {}, 0.0
    if not isinstance(u, dict):
        raise PersonaError(f"{source}: utility must be a table with lambda and weights")
    unknown = sorted(set(u) - {"lambda", "weights"})
    if unknown:
        raise PersonaError(f"{source}: unknown field utility.{unknown[0]} (allowed: lambda, weights)")
    lam = _number(source, "utility.lambda", u.get("lambda", 0.0), float, 0.0, 1.0)
    if not 0.0 <= lam <= 1.0:
        raise PersonaError(f"{source}: utility.lambda = {lam} is out of range [0.0, 1.0]")
    raw = u.get("weights", {})
    if not isinstance(raw, dict):
        raise PersonaError(f"{source}: utility.weights must be a table of feature = weight")
    weights = {}
    lo, hi = WEIGHT_RANGE
    for k, v in raw.items():
        if k not in UTILITY_FEATURES and not (k.startswith("rel:") and len(k) > 4):
            raise PersonaError(f"{source}: unknown utility feature {k!r} (allowed: "
                               f"{', '.join(UTILITY_FEATURES)}, rel:<relation>)")
        w = _number(source, f"utility.weights.{k}", v, float, lo, hi)
        if not lo <= w <= hi:
            raise PersonaError(f"{source}: utility.weights.{k} = {w} is out of range [{lo}, {hi}]")
        weights[k] = w
    if lam > 0 and not any(weights.values()):
        raise PersonaError(f"{source}: utility.lambda = {lam} needs at least one nonzero weight")
    return weights, lam


def parse_persona(text: str, source: str = "<persona>") -> Persona:
    if len(text) > MAX_PERSONA_BYTES:
        raise PersonaError(f"{source}: {len(text) / 2 ** 20:.1f} MB, over the {MAX_PERSONA_BYTES // 2 ** 20} MB "
                           f"limit of a persona file")
    try:
        data = tomlio.loads(text)
    except tomlio.TOMLDecodeError as e:
        raise PersonaError(f"{source}: not valid TOML: {_one_line(e)}") from None
    except RecursionError:
        raise PersonaError(f"{source}: not valid TOML: nested too deeply") from None
    return persona_from_dict(data, source)


def _one_line(e) -> str:
    return " ".join(str(e).split())


def load_persona(name_or_path) -> Persona:
    """A preset by name (``champion``) or a TOML file by path, plain or gzip-compressed
    (``NAME.toml.gz``, as a fit writes its large models); at most ``MAX_PERSONA_BYTES`` of
    text either way, and a large one is logged while it is read."""
    p = Path(name_or_path)
    if not p.suffix and not p.exists():
        p = PERSONA_DIR / f"{name_or_path}.toml"
    if not p.is_file():
        raise PersonaNotFound(f"no persona {str(name_or_path)!r} (presets: {', '.join(preset_names())})")
    limit = f"over the {MAX_PERSONA_BYTES // 2 ** 20} MB limit of a persona file (fitted personas are a few MB at most)"
    try:
        size = p.stat().st_size
        if size > MAX_PERSONA_BYTES:
            raise PersonaError(f"{p}: {size / 2 ** 20:.1f} MB, {limit}")
        if size >= LOG_PERSONA_BYTES or (p.name.endswith(".gz") and size >= LOG_PERSONA_BYTES // 4):
            log.info("reading persona file %s (%.1f MB; a fitted model's tables take seconds)", p, size / 2 ** 20)
        if p.name.endswith(".gz"):
            with gzip.open(p, "rb") as f:
                raw = f.read(MAX_PERSONA_BYTES + 1)     # bounded: a small file may unpack to gigabytes
            if len(raw) > MAX_PERSONA_BYTES:
                raise PersonaError(f"{p}: unpacks to more than {MAX_PERSONA_BYTES // 2 ** 20} MB, {limit}")
        else:
            raw = p.read_bytes()
        text = raw.decode("utf-8")
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise PersonaError(f"{p}: not a whole gzip file ({_one_line(e) or type(e).__name__})") from None
    except OSError as e:
        raise PersonaError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise PersonaError(f"{p}: not UTF-8 text (byte {e.start})") from None
    return parse_persona(text, str(p))


PERSONA_SUFFIXES = (".toml.gz", ".toml")
# A persona file larger than this is written gzip-compressed (a fit's models with their move
# counts: 0.3-1 MB of TOML each for ten thousand decisions; issue 53 keeps report folders
# under 1 MB); ``load_persona`` reads both.
PACK_PERSONA_BYTES = 100_000


def persona_stem(path) -> str:
    """A persona file's name without ``.toml`` or ``.toml.gz``."""
    name = Path(path).name
    for suffix in PERSONA_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return Path(path).stem


def persona_files(folder) -> list[Path]:
    """The persona files of a folder, plain and compressed, in order of name."""
    d = Path(folder)
    return sorted([*d.glob("*.toml"), *d.glob("*.toml.gz")], key=lambda p: (persona_stem(p), p.name))


def write_persona_file(folder, stem: str, text: str) -> Path:
    """Write a persona atomically as ``stem.toml``, or as ``stem.toml.gz`` when its text is
    over ``PACK_PERSONA_BYTES``; the other form left by an earlier run is removed, so that a
    folder never holds two versions of one persona."""
    return atomic_write_packed(Path(folder) / f"{stem}.toml", text.encode(), PACK_PERSONA_BYTES)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PERSONA_DIR.glob("*.toml"))


# ------------------------------------------------------------------------------- CLI
def persona_list(args) -> int:
    """``ggp-persona persona list``: one line per preset (name, kind, description)."""
    d = Path(getattr(args, "dir", None) or PERSONA_DIR)
    status = 0
    for p in persona_files(d):
        try:
            pe = load_persona(p)
            print(f"{pe.name:<14} {pe.kind:<11} {pe.description}")
        except PersonaError as e:
            print(f"{persona_stem(p):<14} INVALID     {e}", file=sys.stderr)
            status = 1
    return status


def persona_show(args) -> int:
    """``ggp-persona persona show NAME|FILE``: the validated persona as TOML.  Exit 1 when
    the file is invalid, 2 when there is no such persona (the CLI's usage-error status)."""
    try:
        pe = load_persona(args.persona)
    except PersonaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, PersonaNotFound) else 1
    sys.stdout.write(pe.to_toml())
    return 0
