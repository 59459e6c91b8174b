"""GDL-II (Thielscher 2010): the two words it adds to GDL, found in a description.

- the role ``random``: chance; the referee moves it uniformly at random among its legal
  moves (it is a role of the state machine like any other: joint moves include its move);
- ``(sees ROLE PERCEPT)``: derived from a state and the joint move made in it; after each
  step a player of a GDL-II match learns only its percepts (and remembers its own move).

A description is a GDL-II game when it has either word.  A GDL-I game played by a GDL-II
manager is still one where every role sees everything: ``sees`` there is empty.
"""
from __future__ import annotations

import re

RANDOM = "random"
SEES = "sees"


def _defines_sees(rules) -> bool:
    return any(isinstance(r.head, tuple) and r.head[0] == SEES and len(r.head) == 3 for r in rules)


def is_gdl2(description) -> bool:
    """True when the rules name the role ``random`` or define ``sees``."""
    return RANDOM in description.roles or _defines_sees(description.rules)


def random_index(roles) -> int | None:
    """The index of the chance role among ``roles``, or None."""
    return roles.index(RANDOM) if RANDOM in roles else None


def chooser_indices(roles) -> list[int]:
    """The roles that choose their moves (every role but ``random``)."""
    return [i for i, r in enumerate(roles) if r != RANDOM]


_GDL2_TEXT = re.compile(r"\(\s*role\s+random\s*\)|[(\s]sees[\s)]", re.IGNORECASE)


def text_is_gdl2(rules_text: str) -> bool:
    """``is_gdl2`` from the rules' text alone, without parsing them (the server process
    never parses large rules): both words are keywords, which no scrambler renames."""
    return _GDL2_TEXT.search(rules_text or "") is not None
