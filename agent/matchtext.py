"""A match as the game manager writes it: the rules of a START read into a description, our
role found among its roles, the joint move of a PLAY resolved against a state machine, and
a state spelled as ggp-base spells it.

Below ``agent.player`` (the player of a match) so that whatever else reads a START or tracks
a match from the manager's moves (the server's worker and its referee, the match runner's
referee, the scripted players of the clone benchmark) takes these without the player.
Problems are ``RulesRefused`` (the START gets ``busy``) and ``ReasonerError``, the
reasoners' own classes.
"""
from __future__ import annotations

from gdl.kif import GdlError, parse_term, read_first, rules_from_nodes
from gdl.terms import render_spaced
from gdl.validate import validate

from agent.reasoner.statemachine import ReasonerError, RulesRefused


def parse_rules_text(rules_text: str, source: str = "<START>"):
    """Description from the rules list of a START message (one s-expression)."""
    try:
        node = read_first(rules_text)
        if node is None or node.is_atom:
            raise RulesRefused("the rules are not a list")
        return rules_from_nodes(node.items, source)
    except GdlError as e:
        raise RulesRefused("unreadable rules: " + "; ".join(p.message for p in e.problems[:5])) from None
    except RecursionError:
        raise RulesRefused("unreadable rules: nested too deeply") from None


def validate_rules(description) -> list:
    """Validator problems."""
    return validate(description)


def role_index_of(description, role_text: str) -> int:
    try:
        role = parse_term(role_text)
    except GdlError:
        raise RulesRefused(f"role {role_text!r} is not a term") from None
    roles = description.roles
    if not roles:
        raise RulesRefused("the rules define no roles")
    if role in roles:
        return roles.index(role)
    # Dresden upper-cases roles but not always the rules' own copy: match by case as a last resort
    lowered = [render_spaced(r).lower() for r in roles]
    if lowered.count(role_text.lower()) == 1:
        return lowered.index(role_text.lower())
    raise RulesRefused(f"role {role_text} is not among the roles "
                       f"{' '.join(render_spaced(r) for r in roles)}")


def resolve_joint(sm, state, move_texts, n_roles: int):
    """The joint move to apply from what the manager sent, and notes on anything wrong.

    Like ggp-base's own players we apply the moves as received even when our reasoner finds
    one illegal (the manager is the referee; it already replaced bad replies).  A move that
    is missing or does not parse cannot be applied: we take the role's only legal move when
    it has one, else its first legal move, and say the state may now be wrong.
    """
    notes = []
    texts = list(move_texts or [])
    if len(texts) != n_roles:
        notes.append(f"the joint move has {len(texts)} moves for {n_roles} roles")
    joint = []
    for i in range(n_roles):
        text = texts[i] if i < len(texts) else None
        term = None
        if text is not None:
            try:
                term = parse_term(text)
            except GdlError:
                notes.append(f"move {i + 1} ({text[:80]}) does not parse")
        legal = sm.legal_moves(state, i)
        if term is None:
            if not legal:
                raise ReasonerError(f"role {i + 1} has no legal move to stand in for a missing move")
            term = legal[0]
            if len(legal) > 1:
                notes.append(f"role {i + 1}: guessed {render_spaced(term)} for the missing move; "
                             f"the tracked state may differ from the manager's")
        elif term not in legal:
            notes.append(f"role {i + 1}: {render_spaced(term)} is not legal here by our rules; applied anyway")
        joint.append(term)
    return tuple(joint), notes


def state_text(state) -> str:
    """ggp-base's rendering of a state: ``( ( cell 1 1 b ) ( control red ) )``."""
    return "( " + "".join(render_spaced(f) + " " for f in sorted(state, key=render_spaced)) + ")"
