"""Variants of one game for playtesting: other rule files, or edits of the initial state.

A variant is plain data: a name, the rules as KIF text, and what was edited.  Edits remove
or add ``(init FACT)`` facts of the base rules; they are checked before anything is played:

* a removed fact must be an ``init`` fact of the base rules (a fact the rules derive with an
  ``init`` rule cannot be removed this way: the message says so);
* the edited rules must pass the validator (static and simulation checks);
* the variant's initial state must be exactly the base's with the edits applied, and every
  added fact must be one the rules can use (the compiled engine drops facts no rule reads,
  which would silently play the base game).

Edit TOML (``name``, ``add``, ``remove``; ``rules`` optional, relative to the file):

    name = "no-inky"
    remove = ["(location inky 5 6)"]
    add = ["(location inky 1 1)"]
"""
from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gdl.kif import Description, GdlError, Rule, decode_bytes, parse_rules, parse_term, read_nodes
from gdl.terms import is_ground, render
from gdl.validate import check


class VariantError(ValueError):
    """A variant that cannot be played as asked; the message says which and why."""


@dataclass
class Variant:
    name: str
    rules_text: str                 # the whole rule sheet, KIF
    source: str                     # where it came from (file, or base + edits)
    added: list = field(default_factory=list)      # rendered facts
    removed: list = field(default_factory=list)
    problems: list = field(default_factory=list)   # validator warnings (rendered)

    @property
    def key(self) -> str:
        return hashlib.sha256(self.rules_text.encode()).hexdigest()[:16]


def rule_text(rule: Rule) -> str:
    """KIF of one rule; body literals (not/distinct/or) are tuples and render like terms."""
    if rule.is_fact:
        return render(rule.head)
    return "(<= " + render(rule.head) + " " + " ".join(render(lit) for lit in rule.body) + ")"


def rules_text(desc: Description) -> str:
    return "\n".join(rule_text(r) for r in desc.rules) + "\n"


def read_text(path) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise VariantError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return decode_bytes(data, str(p))
    except GdlError as e:
        raise VariantError(f"{path}: {e}") from None


def parse(text: str, source: str) -> Description:
    try:
        return parse_rules(text, source)
    except GdlError as e:
        raise VariantError(f"{source} does not parse:\n{e}") from None


def parse_facts(text: str, source: str) -> list:
    """Ground terms from text such as ``(cell 1 1 b) (control white)``."""
    try:
        nodes = read_nodes(text, source)
    except GdlError as e:
        raise VariantError(f"{source}: {e}") from None
    out = []
    for n in nodes:
        try:
            t = parse_term(repr(n))
        except GdlError:
            raise VariantError(f"{source}: not a fact: {n!r}") from None
        if not is_ground(t):
            raise VariantError(f"{source}: {render(t)} has variables; a fact must be ground")
        out.append(t)
    return out


def base_variant(path, name: str | None = None) -> Variant:
    text = read_text(path)
    parse(text, str(path))
    return Variant(name or Path(path).stem, text, str(path))


def edited(base: Variant, name: str, add: list, remove: list, source: str) -> Variant:
    """The base rules with ``(init F)`` facts removed and added (terms)."""
    desc = parse(base.rules_text, base.source)
    inits = {r.head[1]: r for r in desc.rules
             if r.is_fact and isinstance(r.head, tuple) and r.head[0] == "init" and len(r.head) == 2}
    derived = {r.head[1][0] if isinstance(r.head[1], tuple) else r.head[1] for r in desc.rules
               if not r.is_fact and isinstance(r.head, tuple) and r.head[0] == "init"}
    gone = set()
    for f in remove:
        if f not in inits:
            rel = f[0] if isinstance(f, tuple) else f
            why = (f" ({rel} facts come from an init rule: edit a copy of the rule file instead)"
                   if rel in derived else "")
            raise VariantError(f"variant {name}: cannot remove {render(f)}: it is not an init fact "
                               f"of {base.source}{why}")
        gone.add(f)
    for f in add:
        if f in inits and f not in gone:
            raise VariantError(f"variant {name}: {render(f)} is already in the initial state")
    rules = [r for r in desc.rules if not (r.is_fact and r.head[0:1] == ("init",) and len(r.head) == 2
                                              and r.head[1] in gone)]
    rules += [Rule(("init", f)) for f in add]
    text = rules_text(Description(rules, source))
    return Variant(name, text, source, [render(f) for f in add], [render(f) for f in remove])


def inline_variant(base: Variant, spec: str) -> Variant:
    """``NAME: -(fact) +(fact) ...`` from the command line."""
    name, sep, rest = spec.partition(":")
    name = name.strip()
    if not sep or not name:
        raise VariantError(f"variant {spec!r}: write NAME: -(fact) +(fact) ...")
    # KIF tokens: "+(cell 1 1 b)" reads as the atom "+" then a list; "-start" as one atom
    try:
        nodes = read_nodes(rest, f"variant {name}")
    except GdlError as e:
        raise VariantError(f"variant {name}: {e}") from None
    add, remove = [], []
    i = 0
    while i < len(nodes):
        n = nodes[i]
        text = n.text if n.is_atom else None
        if text in ("+", "-") and i + 1 < len(nodes):
            sign, fact, i = text, nodes[i + 1], i + 2
        elif text and text[0] in "+-" and len(text) > 1:
            sign, fact, i = text[0], text[1:], i + 1
        else:
            raise VariantError(f"variant {name}: each fact needs + (add) or - (remove) before it, "
                               f"at {n!r}")
        (add if sign == "+" else remove).extend(parse_facts(str(fact) if isinstance(fact, str)
                                                            else repr(fact), f"variant {name}"))
    if not add and not remove:
        raise VariantError(f"variant {name}: no edits (write -(fact) or +(fact))")
    return edited(base, name, add, remove, f"{base.name} edited on the command line")


def toml_variant(base: Variant, path) -> Variant:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeError) as e:
        raise VariantError(f"cannot read {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise VariantError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"name", "add", "remove", "rules"})
    if unknown:
        raise VariantError(f"{path}: unknown field {unknown[0]} (allowed: name, add, remove, rules)")
    for k in ("add", "remove"):
        v = data.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise VariantError(f"{path}: {k} must be a list of facts as strings")
    rules = base
    if "rules" in data:
        rules = base_variant(p.parent / str(data["rules"]))
    add = [f for s in data.get("add", []) for f in parse_facts(s, str(p))]
    remove = [f for s in data.get("remove", []) for f in parse_facts(s, str(p))]
    name = str(data.get("name", p.stem))
    if not add and not remove:
        if "rules" in data:
            return Variant(name, rules.rules_text, rules.source)
        raise VariantError(f"{path}: no edits (add or remove) and no rules")
    return edited(rules, name, add, remove, str(p))


def from_argument(base: Variant, arg: str) -> Variant:
    """A positional VARIANT: a .toml edit file or another rule file."""
    if arg.endswith(".toml"):
        return toml_variant(base, arg)
    return base_variant(arg)


def check_variant(v: Variant, base_engine=None, engine=None) -> list:
    """Validate a variant; raises VariantError on errors, returns warnings (rendered).
    ``engine`` is the variant's engine (for the initial-state check), ``base_engine`` the
    base game's (for edits)."""
    desc = parse(v.rules_text, v.source)
    sm = engine
    problems = check(desc, sm, walks=6, max_steps=300, time_limit=20.0)
    errors = [p for p in problems if p.level == "error"]
    if errors:
        raise VariantError(f"variant {v.name} is not a playable game:\n" +
                           "\n".join(f"  {p}" for p in errors[:10]))
    if engine is not None and base_engine is not None and (v.added or v.removed):
        want = set(base_engine.initial_state())
        added = parse_facts(" ".join(v.added), v.name)
        removed = parse_facts(" ".join(v.removed), v.name)
        want = (want - set(removed)) | set(added)
        got = set(engine.initial_state())
        if got != want:
            lost = sorted(render(f) for f in want - got)
            extra = sorted(render(f) for f in got - want)
            msg = []
            if lost:
                msg.append("never true as asked (no rule reads them, or they are not fluents): "
                           + ", ".join(lost[:8]))
            if extra:
                msg.append("unexpectedly true: " + ", ".join(extra[:8]))
            raise VariantError(f"variant {v.name}: the initial state is not the edited one: "
                               + "; ".join(msg))
    out = [str(p) for p in problems]
    read = _relations_read(desc)
    for f in v.added + v.removed:
        rel = f[1:].split()[0].rstrip(")") if f.startswith("(") else f
        if rel not in read:
            out.append(f"edit {f}: no rule reads {rel} facts (true ...), so it cannot change play")
    return out


def _relations_read(desc: Description) -> set:
    """Relations of the ``(true ...)`` literals in rule bodies: the facts play can depend on."""
    out = set()

    def walk(lit):
        if isinstance(lit, tuple):
            if lit[0] == "true" and len(lit) == 2:
                out.add(lit[1][0] if isinstance(lit[1], tuple) else lit[1])
            else:
                for a in lit[1:]:
                    walk(a)
    for r in desc.rules:
        for lit in r.body:
            walk(lit)
    return out
