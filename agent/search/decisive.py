"""Moves that can end the game, found from the compiled rules (issue #34).

A playout that takes a winning move when its mover has one ("decisive moves", Teytaud and
Teytaud 2010) plays endings as players do, not as a random walk that steps past a win.
Stepping every legal move to find one cost 3.7-16x the simulations (search-equal-time.md).
Most moves cannot end the game at all: a move can only end it by turning on a fluent that
terminal reads (positively), and only the moves of a rule of that fluent's ``next`` that is
not its frame axiom can turn it on.  Those are this module's candidates; a playout steps
only a legal candidate, and keeps it when the state it reaches is terminal with the mover's
best goal.

``analyse`` also finds, for each candidate, the moves of the other roles that may stop it
(a capture, a block): when the next mover could win at once, a playout's last move is
replaced by one of those that leaves no win (anti-decisive moves).

Where more than ``MAX_SHARE`` of a role's moves are candidates (connectFour, the tic-tac-
toes: any disc or mark may complete a line), stepping them all cost more than it gave.  There
the candidates are narrowed in each state by terminal's conditions written out over the
fluents (``conditions``): a move can end the game only by turning on the one fluent a
condition still lacks ("one input missing"), so a playout steps only the legal moves that
turn on such a fluent, and only where the move's rule for that fluent holds in the state
(``_guard``): none in most states, the move that completes a line of three in the others.

Read from the ground rules' structure alone (``CompiledGame``'s rule arrays), so a scrambled
game gets the same candidates.  Not found: a win made by turning a fluent *off* (capturing
the last piece where terminal reads "no piece left" under ``not``), or, in a narrowed game,
by turning on two fluents of a condition at once; such a move is simply not tried.
"""
from __future__ import annotations

import numpy as np

# A role's candidates are used when at most this share of its moves are candidates: then a
# legal one is rare and mostly a win (breakthrough: the moves onto the last row, 14 % of a
# role's moves).  Where every move can end the game (connectFour, the tic-tac-toes: any
# mark may complete a line), finding a win means stepping every move, which cost more
# than it gave (0.27 at equal time on connectFour).
MAX_SHARE = 0.25


def _positive_body(g, atom):
    """The rules of ``atom`` as lists of the atoms they read positively."""
    out = []
    for r in range(g.rule_start[atom], g.rule_start[atom + 1]):
        lits = g.lits[g.lit_start[r]:g.lit_start[r + 1]]
        out.append([int(x >> 1) for x in lits if (x & 1) == 0])
    return out


def _read_by_terminal(g) -> set:
    """The fluents terminal reads positively, through any chain of rules."""
    t = int(g.terminal_atom)
    if t < 0:
        return set()
    seen = {t}
    todo = [t]
    while todo:
        a = todo.pop()
        for body in _positive_body(g, a):
            for b in body:
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
    return {a for a in seen if a < g.n_base}


def _moves_below(g, atoms, is_move) -> set:
    """The move atoms read positively by ``atoms`` or anything they read positively."""
    found = set()
    seen = set()
    todo = list(atoms)
    while todo:
        a = todo.pop()
        if a in seen:
            continue
        seen.add(a)
        if is_move[a]:
            found.add(a)
        elif a >= g.n_base:
            for body in _positive_body(g, a):
                todo.extend(body)
    return found


def _moves(g):
    """(move atom -> (role, move id), bool per atom: is a move atom)."""
    move_of = {}
    is_move = np.zeros(int(g.n_atoms), dtype=bool)
    for r in range(int(g.n_roles)):
        for k in range(int(g.legal_start[r]), int(g.legal_start[r + 1])):
            a = int(g.does_atom[k])
            move_of[a] = (r, k - int(g.legal_start[r]))
            is_move[a] = True
    return move_of, is_move


def _turning_on(g, f, is_move) -> set:
    """The move atoms that may turn fluent ``f`` on: those read (positively) by a rule of its
    ``next`` that is not its frame axiom (a frame axiom keeps it on, never turns it on)."""
    below = []
    for body in _positive_body(g, int(g.next_atom[f])):
        if f not in body:
            below.extend(body)
    return _moves_below(g, below, is_move)


def _mark(g, atoms, move_of) -> np.ndarray:
    """uint8[n_roles, max moves]: 1 for each move atom of ``atoms``."""
    width = int(max(1, max(int(x) for x in g.role_nmoves)))
    out = np.zeros((int(g.n_roles), width), np.uint8)
    for a in atoms:
        r, k = move_of[a]
        out[r, k] = 1
    return out


def _too_many(g, marked) -> bool:
    """Some role has more than ``MAX_SHARE`` of its moves marked."""
    return any(marked[r].sum() > MAX_SHARE * int(g.role_nmoves[r]) for r in range(int(g.n_roles)))


def _static_on(g, is_move) -> set:
    """The move atoms that may turn on a fluent terminal reads."""
    on = set()
    for f in _read_by_terminal(g):
        on |= _turning_on(g, f, is_move)
    return on


def candidates(g) -> np.ndarray:
    """uint8[n_roles, max moves]: 1 for a move that may end the game (see above).  Where some
    role has more than ``MAX_SHARE`` of its moves as candidates, those that may complete one
    of ``conditions`` (narrowed in each state), or none when there are no conditions."""
    move_of, is_move = _moves(g)
    out = _mark(g, _static_on(g, is_move), move_of)
    if _too_many(g, out):
        cond = _conditions(g, is_move)
        out = _mark(g, set().union(*cond[1].values()), move_of) if cond else out * 0
    return out


def conditions(g):
    """``_conditions`` where the candidates are narrowed in each state, else None."""
    move_of, is_move = _moves(g)
    if not _too_many(g, _mark(g, _static_on(g, is_move), move_of)):
        return None
    return _conditions(g, is_move)


class _TooBig(Exception):
    pass


# Terminal written out over the fluents (``_dnf``) is used when it has at most this many
# conditions, each with at most MAX_LITERALS literals: a playout reads them at every ply.
MAX_CONDITIONS = 4096
MAX_LITERALS = 64
# ... and where at most this many moves (all roles) may complete one: their analysis (the
# stoppers of each, the rule that turns each fluent on) runs in the start clock, and took
# 37 s on a chess endgame's 1,724 (nineBoard has 162, connectFour 16, draughts 340).
MAX_NARROWED = 400


def _dnf(g, atom, is_move, memo, active) -> list:
    """``atom`` as a list of conditions (positive fluents, negated fluents), any of which
    makes it true.  A derived atom under ``not`` becomes negated (or positive) fluents when
    its own conditions are single fluents (``not open``: no empty cell); otherwise it is left
    out, which makes a condition weaker, never stronger (the conditions are a filter: a move
    they let through is stepped).  _TooBig on recursion, a move, or past the bounds."""
    if atom < g.n_base:
        return [(frozenset((atom,)), frozenset())]
    if is_move[atom] or atom in active:
        raise _TooBig
    hit = memo.get(atom)
    if hit is not None:
        return hit
    active.add(atom)
    out = set()
    for r in range(g.rule_start[atom], g.rule_start[atom + 1]):
        out.update(_body_dnf(g, g.lits[g.lit_start[r]:g.lit_start[r + 1]], is_move, memo, active))
        if len(out) > MAX_CONDITIONS:
            raise _TooBig
    active.discard(atom)
    memo[atom] = list(out)
    return memo[atom]


def _body_dnf(g, lits, is_move, memo, active) -> list:
    """A rule body (its literals) as conditions over the fluents (``_dnf``)."""
    conds = [(frozenset(), frozenset())]
    for x in lits:
        b, neg = int(x >> 1), int(x & 1)
        if b < g.n_base:
            one = frozenset((b,))
            conds = [(p, q | one) if neg else (p | one, q) for p, q in conds]
        elif not neg:
            sub = _dnf(g, b, is_move, memo, active)
            if len(conds) * len(sub) > MAX_CONDITIONS:
                raise _TooBig
            conds = [(p | p2, q | q2) for p, q in conds for p2, q2 in sub]
        else:
            sub = _dnf(g, b, is_move, memo, active)
            if all(len(p2) + len(q2) == 1 for p2, q2 in sub):
                flip_p = frozenset(x for _, q2 in sub for x in q2)
                flip_q = frozenset(x for p2, _ in sub for x in p2)
                conds = [(p | flip_p, q | flip_q) for p, q in conds]
        conds = [(p, q) for p, q in conds if not p & q]   # (never true: dropped)
        if len(conds) > MAX_CONDITIONS:
            raise _TooBig
    return conds


# The last game's conditions: ``candidates`` and ``conditions`` both need them for one game
# (``analyse``), and on the largest narrowed games of the corpus (a chess endgame: 896
# conditions, 1,304 candidates) writing them out takes seconds.
_LAST: list = [None, None]


def _conditions(g, is_move):
    """``_write_out``, the last game's answer kept."""
    if _LAST[0] is not g:
        _LAST[:] = [g, _write_out(g, is_move)]
    return _LAST[1]


def _write_out(g, is_move):
    """(terminal's conditions that a single move may complete, sorted; per fluent they lack,
    the move atoms that may turn it on), or None where terminal cannot be written out within
    the bounds.  A condition with no positive fluent is not kept (only turning a fluent off
    completes it); nor one of a single fluent that more than ``MAX_SHARE`` of some role's
    moves may turn on (it lacks that fluent in every state where it is false, so a playout
    would step those moves at every ply: a step counter's last value, read by no move)."""
    t = int(g.terminal_atom)
    if t < 0:
        return None
    try:
        conds = _dnf(g, t, is_move, {}, set())
    except (_TooBig, RecursionError):
        return None
    move_of, _ = _moves(g)
    on: dict = {}
    kept = []
    for p, q in conds:
        if not p or len(p) + len(q) > MAX_LITERALS:
            continue
        for f in p:
            if f not in on:
                on[f] = _turning_on(g, f, is_move)
        if len(p) == 1 and _too_many(g, _mark(g, on[next(iter(p))], move_of)):
            continue
        if any(on[f] for f in p):
            kept.append((tuple(sorted(p)), tuple(sorted(q))))
    used = {f for p, _ in kept for f in p}
    if not kept or len(set().union(*(on[f] for f in used))) > MAX_NARROWED:
        return None
    kept.sort()
    return kept, {f: on[f] for f in sorted(used)}


def near_arrays(g, cond, width: int):
    """``conditions`` as a playout reads them (driver_compiled._near), a tuple of arrays:

    - the conditions: ``cond_start`` int32[n + 1], ``cond_lit`` int32[...] (fluent * 2, + 1
      if negated; positives first);
    - per fluent, the (role, move) that may turn it on: ``on_start`` int32[n_base + 1],
      ``on_move`` int32[k, 2]; and the conditions that read it: ``fl_start`` int32[n_base + 1],
      ``fl_cond`` int32[...] (condition * 2, + 1 if negated there);
    - work space, kept up to date with a state from one call to the next (only the fluents
      that changed are read): ``mark`` int64[n_roles, width] and ``stamp`` int64[1] (a move
      whose mark equals the stamp may complete a condition in the state last read),
      ``missing`` int32[n] (positive fluents off), ``broken`` int32[n] (negated fluents on),
      ``seen`` uint8[n_base + 8] (the state they count), ``near_list`` int32[n] and
      ``near_at`` int32[n] (the conditions with one positive fluent missing and none
      broken, and where each is in the list, -1 if not), ``n_near`` int32[1];
    - per (fluent, move) entry of ``on_move``, the conditions under which the move turns the
      fluent on, which the state decides (``_guard``): ``guard_start`` int32[k + 1] (entry
      k's conditions), ``rule_start`` int32[...] and ``guard_lit`` int32[...] (fluent * 2,
      + 1 if negated; -1: the move is not tested).

    No conditions for None (the candidates are not narrowed)."""
    R = int(g.n_roles)
    n_base = int(g.n_base)
    kept, turn_on = cond if cond is not None else ([], {})
    move_of, is_move = _moves(g)
    n = len(kept)
    cond_start = np.zeros(n + 1, np.int32)
    lits = []
    readers = [[] for _ in range(n_base)]
    for i, (p, q) in enumerate(kept):
        lits += [2 * f for f in p] + [2 * f + 1 for f in q]
        cond_start[i + 1] = len(lits)
        for f in p:
            readers[f].append(2 * i)
        for f in q:
            readers[f].append(2 * i + 1)
    on_start = np.zeros(n_base + 1, np.int32)
    fl_start = np.zeros(n_base + 1, np.int32)
    pairs = []
    fl_cond = []
    guards = []     # per (fluent, move): its guard conditions (lists of literals), None: untested
    memo: dict = {}
    for f in range(n_base):
        atoms = sorted(turn_on.get(f, ()), key=lambda a: move_of[a])
        pairs += [move_of[a] for a in atoms]
        guards += [_guard(g, f, a, is_move, memo) for a in atoms]
        on_start[f + 1] = len(pairs)
        fl_cond += readers[f]
        fl_start[f + 1] = len(fl_cond)
    guard_start = np.zeros(len(guards) + 1, np.int32)      # entry k: rules guard_start[k]..
    rule_start = [0]
    glits = []
    for k, rules in enumerate(guards):
        for body in rules if rules is not None else [None]:
            glits += body if body is not None else [-1]     # (-1: the move is not tested)
            rule_start.append(len(glits))
        guard_start[k + 1] = len(rule_start) - 1
    missing = np.array([len(p) for p, _ in kept], np.int32)     # counted from no fluent on
    near_list = np.zeros(n, np.int32)
    near_at = np.full(n, -1, np.int32)
    ones = np.nonzero(missing == 1)[0]
    near_list[:len(ones)] = ones
    near_at[ones] = np.arange(len(ones))
    return (cond_start, np.array(lits, np.int32), on_start, np.array(pairs, np.int32).reshape(-1, 2),
            fl_start, np.array(fl_cond, np.int32), np.zeros((R, width), np.int64), np.zeros(1, np.int64),
            missing, np.zeros(n, np.int32), np.zeros(n_base + 8, np.uint8), near_list, near_at,
            np.array([len(ones)], np.int32), guard_start, np.array(rule_start, np.int32),
            np.array(glits, np.int32))


def _guard(g, f, move, is_move, memo):
    """The conditions over the fluents under which ``move`` turns fluent ``f`` on (each as
    literals: fluent * 2, + 1 if negated), which a state decides: a playout reads them before
    it steps the move (connectFour's drop lands on the missing cell or not).  Written out
    through the derived atoms (the network keeps no value for most of them) as ``_dnf``
    does, so a condition may be weaker than the rule, never stronger.  None where a rule
    reads ``move`` only through another rule, or its other literals cannot be written out:
    then the move is stepped untested."""
    nxt = int(g.next_atom[f])
    out = []
    for r in range(g.rule_start[nxt], g.rule_start[nxt + 1]):
        lits = [int(x) for x in g.lits[g.lit_start[r]:g.lit_start[r + 1]]]
        if 2 * f in lits:
            continue                        # the frame axiom: keeps f, never turns it on
        if 2 * move not in lits:
            if move in _moves_below(g, [x >> 1 for x in lits if not x & 1], is_move):
                return None
            continue                        # a rule of another move
        try:
            conds = _body_dnf(g, [x for x in lits if x != 2 * move], is_move, memo, set())
        except (_TooBig, RecursionError):
            return None
        out += [[2 * x for x in sorted(p)] + [2 * x + 1 for x in sorted(q)] for p, q in conds]
        if len(out) > MAX_CONDITIONS:
            return None
    return out


# The stoppers' analysis keeps, for every atom, the fluents and moves it reads (with the
# polarity they are read in); past this many entries in all it gives up (the game then gets
# no anti-decisive moves: a filter, not a rule).
MAX_READS = 2_000_000
# ... and past this many entries of its table (candidates x roles x moves), none: the game
# gets decisive moves only.
MAX_STOPS = 8_000_000


def _reads(g, is_move):
    """(reads, rule_reads): reads(atom) -> (positive, negative), the fluents and moves
    ``atom`` reads through its rules, with their polarity (a literal under ``not`` flips it).
    Memoised; a recursive cycle reads what its members read outside the cycle."""
    memo: dict = {}
    size = [0]

    def rule_reads(r):
        """The same for one rule (its index in the rule arrays), not memoised."""
        pos, neg = set(), set()
        for x in g.lits[g.lit_start[r]:g.lit_start[r + 1]]:
            b, n = int(x >> 1), int(x & 1)
            if b < g.n_base or is_move[b]:
                (neg if n else pos).add(b)
            else:
                p2, n2 = reads(b)
                pos |= n2 if n else p2
                neg |= p2 if n else n2
        return pos, neg

    def reads(a):
        hit = memo.get(a)
        if hit is not None:
            return hit
        memo[a] = (frozenset(), frozenset())    # (a cycle back to a reads nothing more)
        pos, neg = set(), set()
        for r in range(g.rule_start[a], g.rule_start[a + 1]):
            p, n = rule_reads(r)
            pos |= p
            neg |= n
        size[0] += len(pos) + len(neg)
        if size[0] > MAX_READS:
            raise _TooBig
        memo[a] = (frozenset(pos), frozenset(neg))
        return memo[a]

    return reads, rule_reads


def analyse(g):
    """(cand_row int32[R, max moves], stops uint8[rows, R, max moves], ``conditions``).

    ``cand_row[d, w]``: the row of role d's move w in ``stops`` when w is a candidate
    (``candidates``), else -1.  ``stops[row, c, m]``: 1 where role c's move m may stop w:
    turn off a fluent w's legality reads positively (capture the piece that would move) or
    turn on one it reads under ``not`` (block its square).  A move turns a fluent on through
    a rule of its ``next`` that is not a frame axiom; it may turn it off where it can falsify
    every frame axiom of the fluent (a move outside the moves of that role the axiom reads
    positively, or one it reads under ``not``).  Where the analysis is too big, every move
    of the other roles is a stopper (the rescue then tries them all); where the table would
    be too big, it has no rows (decisive moves only).  ``conditions``: None unless the
    candidates are narrowed in each state."""
    wins = candidates(g)
    R, width = wins.shape
    cand_row = np.full((R, width), -1, np.int32)
    rows = list(zip(*np.nonzero(wins)))
    for i, (d, w) in enumerate(rows):
        cand_row[d, w] = i
    cond = conditions(g) if rows else None
    if not rows or len(rows) * R * width > MAX_STOPS:
        return cand_row, np.ones((0, R, width), np.uint8), cond
    stops = np.ones((len(rows), R, width), np.uint8)
    move_of, is_move = _moves(g)
    role_moves = [{a for a, (r, _) in move_of.items() if r == role} for role in range(R)]
    reads, rule_reads = _reads(g, is_move)
    size = 0
    try:
        turn_on: dict = {}      # move atom -> fluents it may turn on
        turn_off: dict = {}     # move atom -> fluents it may turn off
        for f in range(int(g.n_base)):
            nxt = int(g.next_atom[f])
            frames = []
            for r in range(g.rule_start[nxt], g.rule_start[nxt + 1]):
                pos, neg = rule_reads(r)
                if f in pos:
                    frames.append((pos, neg))
                else:
                    for m in pos:
                        if is_move[m]:
                            turn_on.setdefault(m, set()).add(f)
            if not frames:
                # Nothing keeps it: it holds next only where one of its rules fires again,
                # so a move of a role those rules read may turn it off (nineBoard's board to
                # play on, set by the last mark: another mark sends the opponent elsewhere).
                # None where they read no move (whose turn it is).
                for r in {move_of[m][0] for m in _moves_below(g, [x for b in _positive_body(g, nxt) for x in b],
                                                             is_move)}:
                    for x in role_moves[r]:
                        turn_off.setdefault(x, set()).add(f)
                    size += len(role_moves[r])
                continue
            off = None      # the moves that may falsify every frame axiom of f
            for pos, neg in frames:
                kept_by = {x for x in pos if is_move[x]}
                may = set().union(*(role_moves[r] for r in {move_of[x][0] for x in kept_by})) - kept_by
                may |= {x for x in neg if is_move[x]}
                off = may if off is None else off & may
            for m in off:
                turn_off.setdefault(m, set()).add(f)
            size += len(off)
            if size > MAX_READS:
                raise _TooBig
        for i, (d, w) in enumerate(rows):
            lpos, lneg = reads(int(g.legal_atom[int(g.legal_start[d]) + w]))
            stops[i] = 0
            for m, (c, k) in move_of.items():
                if c != d and (turn_off.get(m, set()) & lpos or turn_on.get(m, set()) & lneg):
                    stops[i, c, k] = 1
    except (_TooBig, RecursionError):
        stops[:] = 1
    return cand_row, stops, cond


def near_moves(narrowing, state, c) -> set:
    """In terms (``analyse_terms``' narrowing; ``state`` a set of fluents): role ``c``'s
    moves that may turn on the one positive fluent a condition of terminal lacks in
    ``state`` while its other literals hold (driver_compiled._near in numba)."""
    conds, turn_on = narrowing
    out = set()
    for pos, neg in conds:
        missing = pos - state
        if len(missing) == 1 and not neg & state:
            out |= {m for r, m in turn_on[next(iter(missing))] if r == c}
    return out


def best_goals(g) -> np.ndarray:
    """Each role's best goal value (the largest its goal rules name): what a win must give."""
    return np.array([max((float(v) for v in g.goal_value[g.goal_start[r]:g.goal_start[r + 1]]), default=0.0)
                     for r in range(int(g.n_roles))])


def analyse_terms(engine):
    """``analyse`` in terms, for a driver that plays moves as terms: (per role, the set of its
    candidate moves; per (role, candidate), the set of (role, move) that may stop it, or None
    where ``analyse`` has no table; ``best_goals``; the conditions as (positive fluents,
    negated fluents) with, per fluent they may lack, the (role, move) that may turn it on, or
    None where the candidates are not narrowed).  None for an engine whose rules are not
    compiled (the analysis reads the ground rules) or a game without candidates."""
    g = getattr(engine, "game", None)
    if g is None or not hasattr(g, "rule_start"):
        return None
    rows, stops, cond = analyse(g)
    if not (rows >= 0).any():
        return None
    terms = engine.move_terms
    wins = [{terms[d][w] for w in np.nonzero(rows[d] >= 0)[0]} for d in range(rows.shape[0])]
    stoppers = None
    if stops.shape[0]:
        stoppers = {(d, terms[d][w]): {(c, terms[c][m]) for c, m in zip(*np.nonzero(stops[rows[d, w]]))}
                    for d in range(rows.shape[0]) for w in np.nonzero(rows[d] >= 0)[0]}
    narrowing = None
    if cond is not None:
        kept, turn_on = cond
        move_of, _ = _moves(g)
        base = engine.base
        narrowing = ([(frozenset(base[f] for f in p), frozenset(base[f] for f in q)) for p, q in kept],
                     {base[f]: {(move_of[a][0], terms[move_of[a][0]][move_of[a][1]]) for a in atoms}
                      for f, atoms in turn_on.items()})
    return wins, stoppers, best_goals(g), narrowing
