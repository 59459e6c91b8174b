"""One playtest run: a persona plays one role of a game to the end against a fixed opponent.

``play_run(task)`` is the task function of the compute backend (top level, picklable, no
shared state): it loads the variant's engine (from the structure-keyed cache after the first
time), plays the game from the initial state, calling the search for each role that has a
choice (the persona for its role, the opponent for the others; ``random`` picks uniformly),
and returns plain data:

    goals, length (plies), outcome (win/draw/loss for the persona's role, spec 6.4),
    features (raw 6.4 features of the final state), utility (the persona's u at the end),
    facts (every ground fact that was true at some point, rendered),
    decisions (the persona's non-forced decisions: ply, state, chosen move)

Every random choice comes from the run's seed, so the same task gives the same run.
"""
from __future__ import annotations

import hashlib
import random

import numpy as np

from agent.persona import persona_from_dict
from agent.reasoner.statemachine import goal_vector
from gdl.kif import parse_rules, parse_term
from gdl.terms import render

# Imports inside functions: the engines and the search (numba) load in the pool's worker
# processes that run the tasks, not in the process that hands them out.

_ENGINES: dict = {}     # per worker process: rules key -> engine


def sub_seed(*parts) -> int:
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def engine_for(rules_text: str, key: str, budget: float = 60.0):
    hit = _ENGINES.get(key)
    if hit is None:
        from agent.engine import load_engine
        hit = _ENGINES[key] = load_engine(parse_rules(rules_text, key), budget_seconds=budget)
    return hit


def outcome(goals: list, role: int) -> str:
    """Spec 6.4: win / loss against the best other role; one role: 100 wins, 0 loses."""
    g = goals[role]
    others = [x for q, x in enumerate(goals) if q != role]
    if not others:
        return "win" if g >= 100 else "loss" if g <= 0 else "draw"
    best = max(others)
    return "win" if g > best else "loss" if g < best else "draw"


def play_run(task: dict) -> dict:
    """Task keys: rules_text, rules_key, persona (dict), role, opponent (dict or "random"),
    limit, opponent_limit, seed, max_plies."""
    from agent.search import features as F
    from agent.search import leaf as L
    from agent.search import SearchSettings, search

    engine = engine_for(task["rules_text"], task["rules_key"])
    cal = F.calibrate(engine)          # cached per engine; the same for every persona
    me = task["role"]
    persona = persona_from_dict(task["persona"], "persona")
    opp = task["opponent"]
    opponent = None if opp == "random" else persona_from_dict(opp, "opponent")
    rnd = random.Random(sub_seed(task["seed"], "random-opponent"))
    n = len(engine.roles)
    facts_index = F.FactIndex(engine.roles)
    s = engine.initial_state()
    seen = set(s)
    mobility = np.ones(n)   # carried forward in place by the search's one feature code
    decisions = []
    ply = 0
    trees = [None] * n
    while not engine.is_terminal(s):
        if ply >= task["max_plies"]:
            break
        legal = [engine.legal_moves(s, r) for r in range(n)]
        L.carry_mobility(mobility, np.array([len(m) for m in legal], np.int64))
        joint = []
        for r in range(n):
            if len(legal[r]) == 1:
                joint.append(legal[r][0])
                continue
            seed = sub_seed(task["seed"], ply, r)
            if r == me:
                res = search(engine, s, r, persona, SearchSettings(seed=seed, limit=task["limit"]))
                decisions.append({"ply": ply, "state": sorted(render(f) for f in s),
                                  "move": render(res.move), "n_moves": len(legal[r])})
                joint.append(res.move)
            elif opponent is None:
                joint.append(rnd.choice(legal[r]))
            else:
                joint.append(search(engine, s, r, opponent,
                                    SearchSettings(seed=seed, limit=task["opponent_limit"])).move)
        s = engine.next_state(s, joint)
        seen.update(s)
        ply += 1
    terminal = engine.is_terminal(s)
    gv = engine.goal_values(s)
    goals = goal_vector(gv)
    raw = F.raw_features(s, terminal, gv, ply, mobility, me, facts_index, cal.relations)
    w = F.weight_vector(persona.utility_weights, cal)
    u = float(L.utility(raw, cal.lo[me], cal.hi[me], w)) if any(w) else float("nan")
    return {"role": me, "goals": goals, "length": ply, "terminal": bool(terminal),
            "outcome": outcome(goals, me) if terminal else "unfinished",
            "features": {name: float(raw[i]) for i, name in enumerate(F.FIXED)},
            "utility": u, "facts": sorted(render(f) for f in seen), "decisions": decisions}


def modal_move(searches: list) -> str:
    """The persona's modal choice at one state over independently seeded searches
    (``SearchResult``s): the move chosen most often; a tie goes to the move with the most
    visits summed over the searches, then the highest summed Q, then the first in text order,
    so the answer depends on the searches only."""
    votes: dict = {}
    visits: dict = {}
    qsum: dict = {}
    for r in searches:
        m = render(r.move)
        votes[m] = votes.get(m, 0) + 1
        for mv, n, q in zip(r.moves, r.visits, r.q):
            t = render(mv)
            visits[t] = visits.get(t, 0) + int(n)
            qsum[t] = qsum.get(t, 0.0) + float(q)
    return min(votes, key=lambda m: (-votes[m], -visits.get(m, 0), -qsum.get(m, 0.0), m))


def repeat_seed(seed: int, k: int) -> int:
    """The batch seed of the judge's k-th search of every state (k = 0: the task's seed)."""
    return seed if k == 0 else sub_seed(seed, "repeat", k)


def agreement_task(task: dict) -> list:
    """Persona B's choices on persona A's decision states: the chosen move (rendered) per
    item, in item order.
    B's choice at a state is its modal choice over ``seeds`` (default 1) independently seeded
    searches (``modal_move``): one search is noisy, so with a single judge search a persona
    agrees with itself no more than with another persona of the same habits; its mode is what
    the persona would play most often, and a persona's own mode is the move it is likeliest to
    have recorded (departure from persona-model 5.1's single search, see README).
    Task keys: rules_text, rules_key, persona (B, dict), role, limit, seed, [seeds],
    items [(state facts rendered, move rendered)] (the recorded move is compared by the caller)."""
    from agent.search import item_seed, search_batch

    engine = engine_for(task["rules_text"], task["rules_key"])
    persona = persona_from_dict(task["persona"], "persona")
    states = [frozenset(parse_term(f) for f in facts) for facts, _ in task["items"]]
    repeats = int(task.get("seeds", 1))
    if repeats < 1:
        raise ValueError(f"agreement seeds must be at least 1, got {repeats}")
    # one batch (one numba call) for every search of every state; the k-th search of state i
    # is seeded as a batch seeded repeat_seed(seed, k) would seed its item i
    batch = [(st, task["role"], item_seed(repeat_seed(task["seed"], k), i))
             for k in range(repeats) for i, st in enumerate(states)]
    # thesis=False: the search the persona played with in play_run (fresh tree per decision,
    # the live final choice), so a persona judging its own states differs from the player
    # only by its seeds
    results = search_batch(engine, batch, persona, seed=task["seed"], limit=task["limit"],
                           thesis=False)
    n = len(states)
    return [modal_move(results[i::n]) for i in range(n)]
