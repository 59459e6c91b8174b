"""The rules of a match as text: read, validated, rendered as a START carries them, and
scrambled.

A START carries the rules as one list, ggp-base style: ``(( role x ) ( <= ... ) ... )``
without comments (our protocol reader, like ggp-base's, has no comments in messages).  The
rendering keeps every token exactly as spelled in the rule sheet.

Scrambling (ggp-facts 3.6): every constant and variable name is renamed consistently to a
generated word, except the GDL keywords (case-insensitive), the connectives and integers.
Generated words never collide with a name of the game (case-insensitively), so a move text
maps back without ambiguity.  Records keep the real vocabulary, as ggp-base's do.
"""
from __future__ import annotations

import random
import re

from gdl.kif import GdlError, Node, parse_rules, read_nodes, rules_from_nodes, syntax_of
from gdl.prolog_syntax import render_kif_rules

from agent.matchtext import validate_rules

# GDL's words keep their meaning: GDL-II's ``sees`` and the ``random`` role too
NEVER_SCRAMBLED = {"init", "true", "next", "role", "does", "goal", "legal", "terminal", "base",
                   "input", "random", "sees", "_", "<=", "not", "distinct", "or"}
_INT = re.compile(r"[+-]?\d+")
_TOKEN = re.compile(r"[^\s()]+")


class RulesError(ValueError):
    """Rules that cannot be played; the text names the problems with line and column."""


def _spaced(node: Node) -> str:
    return node.text if node.is_atom else "( " + " ".join(_spaced(n) for n in node.items) + " )"


def read_rules(text: str, source: str = "<rules>"):
    """``(rules_list_text, description)`` from a rule sheet (KIF, comments allowed, or Prolog
    syntax) or a rules list as a START carries it.  Invalid rules raise ``RulesError`` listing
    the problems."""
    try:
        if syntax_of(text) == "prolog":  # a START carries KIF: the rules rendered as one list
            description = parse_rules(text, source)
            rules_list = render_kif_rules(description)
        else:
            nodes = read_nodes(text, source)
            if len(nodes) == 1 and not nodes[0].is_atom and nodes[0].items and not nodes[0].items[0].is_atom:
                nodes = nodes[0].items  # already a rules list: (( role x ) ...)
            description = rules_from_nodes(nodes, source)
            rules_list = "( " + " ".join(_spaced(n) for n in nodes) + " )"
        problems = validate_rules(description)
    except GdlError as e:
        raise RulesError("\n".join(str(p) for p in e.problems[:20])) from None
    except RecursionError:
        raise RulesError(f"{source}: the rules are nested too deeply") from None
    errors = [p for p in problems if p.level == "error"]
    if errors:
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise RulesError("\n".join(str(p) for p in errors[:20]) + more)
    if not description.roles:
        raise RulesError(f"{source}: the rules define no roles")
    return rules_list, description


def _words(rng: random.Random, taken: set):
    """Distinct pronounceable words not in ``taken`` (lower case)."""
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    while True:
        w = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        if w not in taken:
            taken.add(w)
            yield w


class Scrambler:
    """A consistent renaming of one game's symbols; ``text`` scrambles, ``unscramble`` maps
    back (unknown tokens pass through)."""

    def __init__(self, rules_text: str, seed: int = 0):
        tokens = set(_TOKEN.findall(rules_text))
        taken = {t.lower().lstrip("?") for t in tokens} | NEVER_SCRAMBLED
        words = _words(random.Random(seed), taken)
        self.forward: dict[str, str] = {}
        for tok in sorted(tokens):  # sorted: the mapping depends on the rules and seed only
            if tok.lower() in NEVER_SCRAMBLED or _INT.fullmatch(tok):
                continue
            self.forward[tok] = ("?" if tok.startswith("?") else "") + next(words)
        self.backward = {v: k for k, v in self.forward.items()}

    def text(self, text: str) -> str:
        return _TOKEN.sub(lambda m: self.forward.get(m.group(0), m.group(0)), text)

    def unscramble(self, text: str) -> str:
        return _TOKEN.sub(lambda m: self.backward.get(m.group(0), m.group(0)), text)


class Identity:
    """The vocabulary of an unscrambled match."""

    @staticmethod
    def text(text: str) -> str:
        return text

    unscramble = text
