"""A valid game whose state space explodes, generated for the memory and legal-first tests.

Sixty facts ``(d v_i)``; ``terminal`` is a 4-way join over them and ``next`` builds a state
fact for every 5-tuple (60^5 of them): one Prolog query for the next state grows the process
by gigabytes within seconds.  The initial state and the legal moves are cheap, so a player
that asks for those first always has a legal move to send.
"""
from __future__ import annotations

N_FACTS = 60


def exploding_rules(n: int = N_FACTS) -> list[str]:
    """The rules as ggp-base sends them (one rule per string, terms spaced)."""
    rules = ["( role red )", "( role blue )", "( init ( step 0 ) )", "( init ( control red ) )"]
    rules += [f"( d v{i} )" for i in range(1, n + 1)]
    rules += [
        "( <= ( legal red ( mark ?x ) ) ( true ( control red ) ) ( d ?x ) )",
        "( <= ( legal red noop ) ( true ( control blue ) ) )",
        "( <= ( legal blue ( mark ?x ) ) ( true ( control blue ) ) ( d ?x ) )",
        "( <= ( legal blue noop ) ( true ( control red ) ) )",
        "( <= ( next ( tuple ?a ?b ?c ?e ?f ) ) ( d ?a ) ( d ?b ) ( d ?c ) ( d ?e ) ( d ?f ) )",
        "( <= ( next ( control blue ) ) ( true ( control red ) ) )",
        "( <= ( next ( control red ) ) ( true ( control blue ) ) )",
        "( <= ( wide ?a ?b ?c ?e ) ( d ?a ) ( d ?b ) ( d ?c ) ( d ?e ) ( distinct ?a ?e ) )",
        "( <= terminal ( true ( step 9 ) ) )",
        "( <= terminal ( wide ?a ?b ?c ?e ) ( true ( tuple ?a ?b ?c ?e ?e ) ) )",
        "( goal red 50 )",
        "( goal blue 50 )",
    ]
    return rules


def exploding_kif(n: int = N_FACTS) -> str:
    return "\n".join(exploding_rules(n)) + "\n"
