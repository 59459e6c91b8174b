"""A persona described in words from its parameters, for people choosing an opponent.

The 17 search parameters of the persona model (spec 2.2; ``agent.persona``) say how far a
persona looks, how it chooses and what it makes of good and bad positions; a person picking
an opponent should not need to know what ``nice_threshold = 24.6`` means.  ``describe``
turns the values into a few sentences ("Looks far ahead ... Plays the best move it finds.
Trusts its first impressions.") from bands of each parameter's range.  Nothing here knows a
game: the words are about looking ahead, choosing and temper, never about boards or pieces.

The bands are our reading of the spec's meanings (2.2-2.7); the values at their edges are
chosen so that the shipped presets fall on the side their temperament suggests.
"""
from __future__ import annotations

from pathlib import Path

from agent.persona import Persona, PersonaError, load_persona


def _times_in_ten(p: float) -> str:
    n = round(10 * p)
    return "about once in ten moves" if n <= 1 else f"about {n} times in ten"


def _look(p: Persona) -> str:
    """How far ahead it looks, how it judges where it stops, and how long it thinks."""
    if p.horizon >= 15:
        look = "Looks far ahead"
    elif p.horizon >= 8:
        look = "Looks a fair way ahead"
    elif p.horizon >= 3:
        look = "Looks only a few moves ahead"
    else:
        look = "Looks just one or two moves ahead"
    if p.charge_depth == 0:
        judge = "judges the positions it reaches by how they look rather than playing on"
    elif p.charge_depth >= 80:
        judge = "plays imagined games out to the end"
    elif p.charge_depth >= 30:
        judge = "plays imagined games a good part of the way on"
    else:
        judge = "plays imagined games only a few moves on"
    if p.limit >= 5000:
        think = "thinks for as long as its clock allows"
    elif p.limit >= 500:
        think = f"tries about {p.limit:,} continuations before each move"
    elif p.limit >= 100:
        think = f"tries a few hundred continuations ({p.limit}) before each move"
    else:
        think = f"thinks only briefly ({p.limit} continuations a move)"
    return f"{look}, {judge}, and {think}."


def _imagined(p: Persona) -> str | None:
    """How its imagined games are played (epsilon: MAST's share of the playout moves)."""
    if p.charge_depth == 0:
        return None       # no imagined games to play
    if p.epsilon >= 0.8:
        return "In its imagined games both sides play moves that did well before."
    if p.epsilon <= 0.1:
        return "In its imagined games both sides play at random."
    return "In its imagined games both sides partly play moves that did well before, partly at random."


def _choice(p: Persona) -> str:
    """The final choice: the model of a person, the nice threshold and the random error."""
    if p.model is not None:
        return ("Picks its moves the way the person it was learned from did (a model of their "
                "matches), not simply the best move it finds.")
    t = p.nice_threshold
    if t <= 0:
        pick = "Plays the best move it finds"
    elif t <= 5:
        pick = "Almost always plays the best move it finds"
    elif t <= 20:
        pick = "Is content with a move a little below the best it finds"
    elif t <= 40:
        pick = "Often settles for a good-enough move instead of the best"
    else:
        pick = "Plays loosely, taking any move not far below the best"
    e = p.random_error
    if e <= 0:
        slip = "never a random one"
    elif e <= 0.05:
        slip = "and rarely slips"
    elif e <= 0.2:
        slip = "and now and then plays a careless, random move"
    else:
        slip = f"and plays a careless, random move {_times_in_ten(e)}"
    sep = "; " if e <= 0 else ", "
    return f"{pick}{sep}{slip}."


def _impressions(p: Persona) -> str:
    """Exploration and RAVE/GRAVE: how it spreads its attention over the moves."""
    c = p.exploration_factor
    if c <= 50:
        first = "Trusts its first impressions, spending its thought on the moves that look best early"
    elif c <= 90:
        first = "Keeps an open mind, giving unlikely moves a second look"
    else:
        first = "Explores widely, trying unlikely moves again and again"
    if p.rave <= 0:
        return f"{first}."
    how = "strongly" if p.rave >= 2000 else "a little"
    where = ("from the whole of its search" if p.grave >= 60 else
             "from the nearby positions of its search" if p.grave >= 10 else "from the position in hand")
    return (f"{first}; a move that worked in one line raises its hopes for that move in others "
            f"({how}, judged {where}).")


def _biases(a: float, d: float) -> list[tuple[str, str]]:
    """The personality bias (spec 2.6) in words: (trait, its explanation) for the
    aggressiveness ``a`` and the defensiveness ``d`` of a role, when they are far from 1."""
    out = []
    if a >= 2.0:
        out.append(("very bold", "promising positions look better to it than they are, and it chases them"))
    elif a >= 1.3:
        out.append(("bold", "it rates promising positions above their worth"))
    elif a <= 0.7:
        out.append(("modest", "it rates promising positions below their worth"))
    if d <= 0.6:
        out.append(("cautious", "bad positions look worse to it than they are, so it steers away from risk"))
    elif d >= 1.4:
        out.append(("careless of danger", "bad positions look less bad to it than they are"))
    return out


def _temper(p: Persona) -> str:
    """The personality bias (spec 2.6) on its own role, and the charge default."""
    a, d = p.aggressiveness[0], p.defensiveness[0]
    parts = [f"{trait} ({why})" for trait, why in _biases(a, d)]
    if not parts:
        mood = "Even-tempered: it takes good and bad positions at their worth"
    else:
        mood = " and ".join(parts)
        mood = mood[0].upper() + mood[1:]
    if p.charge_defaults[0] <= 38:
        mood += "; it is pessimistic about games it cannot see to the end"
    oa, od = p.aggressiveness[1], p.defensiveness[1]
    if (oa, od) != (a, d):
        mood += (f"; it expects its opponents to be {'bolder' if oa > a else 'more modest'}"
                 f" and {'more careless' if od > d else 'more cautious'} than itself")
    return mood + "."


def _patience(p: Persona) -> str | None:
    td, cd = p.tree_discount, p.charge_discount
    if td <= 0.96 or cd <= 0.95:
        return "Impatient: a quick result counts for more than the same result later."
    if td >= 0.99 and cd >= 0.99:
        return "Patient: a result later counts nearly as much as one now."
    return None


# utility feature -> (words when its weight is positive, when negative); spec 6.4
_WANTS = {
    "win": ("goes for the win", "does not mind missing a win"),
    "loss": ("does not mind losing", "avoids losing"),
    "draw": ("is happy with a draw", "avoids draws"),
    "length": ("likes long games", "wants the game over quickly"),
    "mobility": ("keeps its own options open", "narrows its own options"),
    "opp_mobility": ("leaves its opponents room", "hems its opponents in, leaving them few moves"),
    "own_facts": ("likes to have more of its own in play", "sheds its own holdings"),
    "opp_facts": ("lets its opponents gather", "whittles down what its opponents hold"),
}


def _strength(feature: str, w: float) -> str:
    """How much an aim weighs, beside the goal's own weight (a weight of 1 is the goal's)."""
    if feature == "loss" and w <= -2:
        return "above all "
    if abs(w) >= 1:
        return "strongly "
    if abs(w) < 0.3:
        return "mildly "
    return ""


def _utility(p: Persona) -> str | None:
    """A procedural persona's own aims (utility weights mixed in with weight lambda)."""
    if p.utility_lambda <= 0 or not p.utility_weights:
        return None
    aims = []
    for feature, (pos, neg) in _WANTS.items():
        w = p.utility_weights.get(feature, 0.0)
        if w:
            aims.append(_strength(feature, w) + (pos if w > 0 else neg))
    if not aims:
        return None
    share = "as much as the score itself" if p.utility_lambda >= 0.5 else "a little, beside the score"
    if len(aims) <= 2:
        listed = " and ".join(aims)
    else:      # the aims have commas of their own
        listed = "; ".join(aims[:-1]) + "; and " + aims[-1]
    return f"It has aims of its own, weighed {share}: it {listed}."


def describe(p: Persona) -> str:
    """A few sentences on how the persona plays, from its parameters alone."""
    sentences = [_look(p), _imagined(p), _choice(p), _impressions(p), _temper(p), _patience(p), _utility(p)]
    return " ".join(s for s in sentences if s)


def summary(p: Persona) -> str:
    """The persona in one line of short traits ("looks far ahead, plays the best move it
    finds, trusts its first impressions"), for a table's row; ``describe`` says it whole."""
    traits = [("looks far ahead" if p.horizon >= 15 else "looks a fair way ahead" if p.horizon >= 8
               else "looks only a few moves ahead" if p.horizon >= 3 else "looks just a move or two ahead")]
    if p.limit >= 5000:
        traits.append("thinks until its clock runs out")
    elif p.limit < 100:
        traits.append("thinks only briefly")
    if p.model is not None:
        traits.append("picks its moves the way its person did")
    else:
        t, e = p.nice_threshold, p.random_error
        traits.append("plays the best move it finds" if t <= 0 else "almost always plays the best move" if t <= 5
                      else "settles for good-enough moves" if t <= 40 else "plays loosely")
        if e > 0.2:
            traits.append(f"plays at random {_times_in_ten(e)}")
        elif e > 0.05:
            traits.append("now and then careless")
    c = p.exploration_factor
    traits.append("trusts its first impressions" if c <= 50 else "gives unlikely moves a second look" if c <= 90
                  else "explores widely")
    traits += [trait for trait, _ in _biases(p.aggressiveness[0], p.defensiveness[0])]
    if p.utility_lambda > 0:
        # its two weightiest aims; "goes for the win" only when it is the only one (most have it)
        weights = sorted((x for x in p.utility_weights.items() if x[0] in _WANTS and x[1]), key=lambda x: -abs(x[1]))
        aims = [_strength(f, w) + (_WANTS[f][0] if w > 0 else _WANTS[f][1]).split(",")[0]
                for f, w in weights if f != "win" or len(weights) == 1]
        traits += aims[:2]
    out = ", ".join(traits)
    return out[0].upper() + out[1:] + "."


def words_of_spec(spec: str) -> dict:
    """``{"words": describe, "summary": summary}`` of a preset name or persona file; a file
    that cannot be read says so in both."""
    try:
        p = load_persona(spec)
    except (PersonaError, OSError, ValueError) as e:
        msg = str(e).replace(str(spec), Path(spec).name)     # no path of the server on a page
        why = f"(no description: {msg.splitlines()[0][:200] if msg else 'the persona cannot be read'})"
        return {"words": why, "summary": why}
    return {"words": describe(p), "summary": summary(p)}
