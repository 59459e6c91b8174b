"""Boards found from the rules' structure, never from symbol names (games arrive scrambled).

A *board* is a fluent relation some of whose arguments are coordinates: arguments whose
values form a small ordered domain -- integers, or constants ordered by a *chain*, a binary
static relation given as facts in which every constant has at most one successor and one
predecessor and that links them all in one line (``(succ 1 2) (succ 2 3)``,
``(next_file a b)`` ...) or one ring (cylinder and torus boards) -- or, where neither orders
a fluent's arguments, by arithmetic facts (``arithmetic_orders``: ``(plus 1 ?x ?y)`` with a
step constant, a total order ``(lessthan ?a ?b)``).  The remaining arguments are the cell's
*content*.

    detect_board(description, states) -> [BoardSpec]   best board first
    cells(spec, state) -> {(x, y): content}             a state's facts on the grid
    move_cells(spec, move) -> [(x, y), ...]             the cells a move's arguments name

Coordinates: the first coordinate argument is ``x`` (column, left to right), the second
``y`` (row); with four coordinate arguments (a board of boards such as nine-board
tic-tac-toe) they pair as (outer x, outer y, inner x, inner y).  Which way ``y`` runs on the
screen is the drawer's choice.

The domains come from sample states (``sample_states``: the initial state and a few random
walks), since a fluent's values are only known by playing the rules; integer domains are
filled between their smallest and largest value, chain domains between their first and last
member seen.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, replace

from gdl.analysis import DOES_SIG, TRUE_SIG, dependencies, expand_or
from gdl.terms import render

MAX_SIDE = 26          # a coordinate domain larger than this is a counter, not a board side
MIN_SIDE = 2
MAX_KINDS = 16       # more content values than this: bookkeeping, not pieces
RESERVED = frozenset("init true next role does goal legal terminal base input distinct not or".split())


@dataclass(frozen=True)
class BoardSpec:
    relation: str                 # fluent name
    arity: int
    coord_args: tuple             # argument positions of the coordinates (2 or 4): x, y[, x2, y2]
    coord_values: tuple           # for each coordinate argument: its ordered domain (texts)
    content_args: tuple           # the other argument positions
    content_values: tuple = ()    # every content text seen, sorted
    background: str | None = None  # the content filling most of the board at the start (empty)
    facts_seen: int = 0           # distinct facts of this relation in the samples
    layout: str = "square"        # "hex": the rules' adjacency links each cell to six (``layout_of``)
    hex_diagonal: int = 0         # hex: the diagonal neighbour is (x+1, y+d) for this d (1 or -1)

    @property
    def x_arg(self) -> int:
        return self.coord_args[0]

    @property
    def y_arg(self) -> int:
        return self.coord_args[1]

    @property
    def width(self) -> int:
        """Columns of the drawn grid (outer x times inner x for a board of boards)."""
        w = len(self.coord_values[0])
        return w * len(self.coord_values[2]) if len(self.coord_args) == 4 else w

    @property
    def height(self) -> int:
        h = len(self.coord_values[1])
        return h * len(self.coord_values[3]) if len(self.coord_args) == 4 else h

    def grid_xy(self, coords: tuple) -> tuple[int, int] | None:
        """Grid column and row (0-based) of the coordinate texts, or None when off the board."""
        try:
            idx = [self.coord_values[k].index(c) for k, c in enumerate(coords)]
        except ValueError:
            return None
        if len(idx) == 4:
            return (idx[0] * len(self.coord_values[2]) + idx[2],
                    idx[1] * len(self.coord_values[3]) + idx[3])
        return idx[0], idx[1]

    def to_dict(self) -> dict:
        return {"relation": self.relation, "arity": self.arity, "coord_args": list(self.coord_args),
                "coord_values": [list(v) for v in self.coord_values],
                "content_args": list(self.content_args), "content_values": list(self.content_values),
                "background": self.background, "width": self.width, "height": self.height,
                "layout": self.layout}


def _text(t) -> str:
    return render(t)


def _args(fact) -> tuple:
    return tuple(fact[1:]) if isinstance(fact, tuple) else ()


def _is_int(s) -> bool:
    return isinstance(s, str) and (s.isdigit() or (s[:1] == "-" and s[1:].isdigit()))


# ------------------------------------------------------------------------------ chains

def chains(description) -> list[list[str]]:
    """Every binary static relation given only as ground facts that orders its constants in
    one line, or in one ring (cut at its first constant in text order).  A relation that
    also has rules, or forks, or is not connected, is no chain."""
    deps = dependencies(description.rules)
    dynamic = deps.depending_on([TRUE_SIG, DOES_SIG])
    facts: dict = {}
    ruled: set = set()
    for r in description.rules:
        h = r.head
        if not isinstance(h, tuple) or len(h) != 3 or h[0] in RESERVED:
            continue
        if r.body or not all(isinstance(a, str) and not a.startswith("?") for a in h[1:]):
            ruled.add(h[0])
            continue
        facts.setdefault(h[0], []).append((h[1], h[2]))
    out = []
    for rel, pairs in facts.items():
        if rel in ruled or (rel, 2) in dynamic or len(pairs) < 1:
            continue
        line = _line(pairs)
        if line is not None:
            out.append(line)
    return out


def _line(pairs) -> list | None:
    """The constants of ``(a, b)`` successor pairs in order, when every constant has at
    most one successor and one predecessor and the pairs link them all in one line, or in
    one ring of at least 3 (cut at its first constant in text order); else None."""
    succ, pred = {}, {}
    for a, b in set(pairs):
        if a == b or a in succ or b in pred:
            return None
        succ[a], pred[b] = b, a
    starts = [a for a in succ if a not in pred]
    if len(starts) == 1:
        line = [starts[0]]
        while line[-1] in succ and len(line) <= len(succ):
            line.append(succ[line[-1]])
        return line if len(line) == len(succ) + 1 else None    # every pair used: one line
    if not starts and len(succ) >= 3:      # a 2-ring is an alternation (opponents)
        # A ring (a cylinder or torus board: the last file is followed by the first).
        # Where to cut it is not in the rules; the first constant in text order, so
        # the cut is the same every time.
        line = [min(succ)]
        while succ[line[-1]] != line[0] and len(line) <= len(succ):
            line.append(succ[line[-1]])
        return line if len(line) == len(succ) else None         # one ring through every constant
    return None


def arithmetic_orders(relations: dict) -> list[list[str]]:
    """Orders given by arithmetic facts rather than a binary successor chain, from the
    static relations (``static_relations``: facts and rules worked out):

    - a relation of three arguments that is a function with a *step* constant: for an
      argument position and a constant ``c`` there, the other two arguments, in their
      order in the relation, link the constants in one line (``(plus 1 ?x ?y)``: y = x + 1;
      ``(sum ?x one ?y)``); other constants (``(plus 2 ?x ?y)``: two lines, odd and even)
      are no line and are left out;
    - a binary relation that is a strict total order (``(lessthan ?a ?b)``: irreflexive,
      one of each pair of distinct constants, transitive), smallest first;
    - a binary relation worked out from rules that is a successor chain.

    Direction: from the earlier argument to the later one, which is how ``plus``, ``succ``
    and ``lessthan`` read; a ``minus``-like relation comes out reversed (the board drawn
    mirrored, its cells and moves still right).  Names are never read."""
    out = []
    for (name, ar), tuples in sorted(relations.items(), key=lambda kv: kv[0]):
        tuples = {t for t in tuples if all(isinstance(a, str) for a in t)}
        if ar == 3 and 2 <= len(tuples) < STATIC_TUPLES_CAP:
            # Each (position, constant) that makes a line; only the longest are kept, since
            # a short one can be incidental (in ``(plus ?step ?x ?y)``, fixing x = 1 links
            # 1-2-3 through the steps 1 and 2).
            found = []
            for p in range(3):
                i, j = [k for k in range(3) if k != p]
                by_step: dict = {}
                for t in tuples:
                    by_step.setdefault(t[p], []).append((t[i], t[j]))
                for c in sorted(by_step):
                    line = _line(by_step[c])
                    if line is not None and len(line) >= 3:
                        found.append(line)
            longest = max(map(len, found), default=0)
            out.extend(line for line in found if len(line) == longest and line not in out)
        elif ar == 2 and 1 <= len(tuples) < STATIC_TUPLES_CAP:
            line = _line(tuples) or _total_order(tuples)
            if line is not None and len(line) >= 3 and line not in out:
                out.append(line)
    return out


def _total_order(pairs: set) -> list | None:
    """The constants of a strict total order given as all its ``(smaller, larger)`` pairs,
    smallest first; None when the pairs are not one."""
    items = sorted({a for p in pairs for a in p})
    n = len(items)
    if n < 3 or len(pairs) != n * (n - 1) // 2 or any(a == b or (b, a) in pairs for a, b in pairs):
        return None
    above = Counter(a for a, _ in pairs)         # how many constants each is smaller than
    line = sorted(items, key=lambda a: -above[a])
    if [above[a] for a in line] != list(range(n - 1, -1, -1)):
        return None                              # not transitive: some rank repeats
    return line


def _order(values: set, lines: list) -> list | None:
    """``values`` in order, filled to a contiguous range; None when they are not ordered."""
    if all(_is_int(v) for v in values):
        lo, hi = min(map(int, values)), max(map(int, values))
        return [str(i) for i in range(lo, hi + 1)]
    best = None
    for line in lines:
        if values <= set(line):
            pos = sorted(line.index(v) for v in values)
            seg = line[pos[0]:pos[-1] + 1]
            if best is None or len(seg) < len(best):
                best = seg
    return best


# ------------------------------------------------------------------------------ detection

def detect_board(description, states) -> list[BoardSpec]:
    """Board specs for the fluents seen in ``states`` (iterables of fluent terms; the first is
    the initial state), best first: more cells covered, then more facts seen."""
    states = [list(s) for s in states]
    by_rel: dict = {}
    for s in states:
        for f in s:
            if isinstance(f, tuple) and len(f) >= 3:
                by_rel.setdefault((f[0], len(f) - 1), set()).add(f)
    lines = chains(description)
    more: list = []              # orders from arithmetic facts, worked out when first needed
    roles = {render(r) for r in description.roles}
    specs = []

    def domains_of(facts, n, lines):
        domains = []
        for k in range(n):
            vals = {a[k] for a in map(_args, facts)}
            ordered = None
            # Roles in a turn order are ordered too, but they name players, not places.
            if all(isinstance(v, str) for v in vals) and not vals <= roles:
                ordered = _order(vals, lines)
            domains.append(ordered if ordered and MIN_SIDE <= len(ordered) <= MAX_SIDE else None)
        return domains
    for (rel, n), facts in by_rel.items():
        domains = domains_of(facts, n, lines)
        if sum(d is not None for d in domains) < 2:
            # No grid from integers and chains: try the orders of arithmetic facts (a
            # fallback only, so a board found by chains is never changed by them).
            if not more:
                more.append(arithmetic_orders(_statics(description)))
            if more[0]:
                domains = domains_of(facts, n, lines + more[0])
        coords = [k for k in range(n) if domains[k] is not None]
        if len(coords) < 2:
            continue
        coords = coords[:4] if len(coords) >= 4 else coords[:2]
        content = tuple(k for k in range(n) if k not in coords)
        spec = BoardSpec(rel, n, tuple(coords), tuple(tuple(domains[k]) for k in coords), content)
        content_vals = sorted({content_text(spec, f) for f in facts})
        background = None
        first = [f for f in states[0] if isinstance(f, tuple) and f[0] == rel and len(f) - 1 == n] if states else []
        if content and first:
            common, count = Counter(content_text(spec, f) for f in first).most_common(1)[0]
            if count * 2 >= spec.width * spec.height:   # fills half the board: the empty square
                background = common
        specs.append(BoardSpec(rel, n, spec.coord_args, spec.coord_values, content,
                               tuple(content_vals), background, len(facts)))
    if specs:
        specs = [_with_layout(s, description) for s in specs]
    # Pieces come in few kinds; a relation with many content values (group numbers, counters
    # per cell) is bookkeeping drawn after the board proper.
    specs.sort(key=lambda s: (len(s.content_values) > MAX_KINDS,
                              -len({_coords(s, f) for f in by_rel[(s.relation, s.arity)]}),
                              -s.facts_seen, s.relation))
    return specs


def _coords(spec: BoardSpec, fact) -> tuple:
    a = _args(fact)
    return tuple(a[k] for k in spec.coord_args)


def content_text(spec: BoardSpec, fact) -> str:
    """The content arguments of a fact as one text ('' when the fluent has no content)."""
    a = _args(fact)
    return " ".join(_text(a[k]) for k in spec.content_args)


def matches(spec: BoardSpec, fact) -> bool:
    return isinstance(fact, tuple) and fact[0] == spec.relation and len(fact) - 1 == spec.arity


def cells(spec: BoardSpec, state) -> dict:
    """``{(column, row): [content, ...]}`` (0-based grid positions) of the facts of ``state``
    on this board; several facts can share a cell."""
    out: dict = {}
    for f in state:
        if matches(spec, f):
            xy = spec.grid_xy(_coords(spec, f))
            if xy is not None:
                out.setdefault(xy, []).append(content_text(spec, f))
    for v in out.values():
        v.sort()
    return out


def _flat(t) -> list:
    if isinstance(t, str):
        return [t]
    return [c for a in t[1:] for c in _flat(a)]


def move_cells(spec: BoardSpec, move) -> list:
    """Grid cells (column, row) that the move's arguments name, left to right: runs of
    consecutive arguments in the coordinates' domains, in the fluent's coordinate order."""
    if isinstance(move, str):
        return []
    args = _flat(move)
    k, n = 0, len(spec.coord_args)
    out = []
    while k + n <= len(args):
        run = tuple(args[k:k + n])
        xy = spec.grid_xy(run)
        if xy is not None:
            out.append(xy)
            k += n
        else:
            k += 1
    return out


# ------------------------------------------------------------------------------ layout

STATIC_TUPLES_CAP = 20_000      # tuples per static relation worked out for the layout


def static_relations(description, seconds: float = 1.0) -> dict:
    """``{(name, arity): set of argument tuples}`` of the relations that depend on neither
    the state nor the moves, worked out bottom-up from their facts and rules (positive
    literals and ``distinct``; a rule with ``not`` or ``or`` is left out, so a relation may
    come out short, never wrong).  Bounded in tuples and time: a board's neighbour relation
    is small."""
    deps = dependencies(description.rules)
    dynamic = deps.depending_on([TRUE_SIG, DOES_SIG])
    rules = []
    for r in description.rules:
        h = r.head
        name = h[0] if isinstance(h, tuple) else h
        ar = len(h) - 1 if isinstance(h, tuple) else 0
        if name in RESERVED or (name, ar) in dynamic or ar == 0:
            continue
        for e in expand_or(r):
            if any(isinstance(l, tuple) and l[0] in ("not", "or") for l in e.body):
                continue
            if any(not isinstance(l, tuple) and l in RESERVED for l in e.body):
                continue
            rules.append(e)
    table: dict = {}
    deadline = time.monotonic() + seconds

    def is_var(t):
        return isinstance(t, str) and t.startswith("?")

    def match(pattern, value, env):
        if is_var(pattern):
            if pattern in env:
                return env if env[pattern] == value else None
            env = dict(env)
            env[pattern] = value
            return env
        if isinstance(pattern, str) or isinstance(value, str):
            return env if pattern == value else None
        if len(pattern) != len(value) or pattern[0] != value[0]:
            return None
        for a, b in zip(pattern[1:], value[1:]):
            env = match(a, b, env)
            if env is None:
                return None
        return env

    def subst(t, env):
        if is_var(t):
            return env.get(t, t)
        if isinstance(t, str):
            return t
        return (t[0],) + tuple(subst(a, env) for a in t[1:])

    def ground(t):
        return not is_var(t) if isinstance(t, str) else all(ground(a) for a in t[1:])

    def solve(body, env):
        if not body:
            yield env
            return
        lit, rest = body[0], body[1:]
        if isinstance(lit, tuple) and lit[0] == "distinct":
            a, b = subst(lit[1], env), subst(lit[2], env)
            if ground(a) and ground(b):
                if a != b:
                    yield from solve(rest, env)
            else:                                   # decide it once its variables are bound
                if rest and any(not (isinstance(x, tuple) and x[0] == "distinct") for x in rest):
                    yield from solve(rest + (lit,), env)
            return
        if not isinstance(lit, tuple):
            return
        for args in list(table.get((lit[0], len(lit) - 1), ())):
            ticks[0] += 1
            if ticks[0] % 2048 == 0 and time.monotonic() > deadline:
                raise TimeoutError
            e = env
            for p, v in zip(lit[1:], args):
                e = match(p, v, e)
                if e is None:
                    break
            if e is not None:
                yield from solve(rest, e)

    ticks = [0]
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        try:
            changed = _round(rules, table, solve, subst, ground, deadline)
        except TimeoutError:
            break
    return table


def _round(rules, table, solve, subst, ground, deadline) -> bool:
    """One pass of every rule over the tuples so far; True when a tuple was added."""
    changed = False
    for r in rules:
        key = (r.head[0], len(r.head) - 1)
        got = table.setdefault(key, set())
        if len(got) >= STATIC_TUPLES_CAP:
            continue
        for env in solve(tuple(r.body), {}):
            h = subst(r.head, env)
            if ground(h) and tuple(h[1:]) not in got:
                got.add(tuple(h[1:]))
                changed = True
                if len(got) >= STATIC_TUPLES_CAP or time.monotonic() > deadline:
                    break
    return changed


HEX_STEPS = {(1, 0), (-1, 0), (0, 1), (0, -1)}


def layout_of(spec: BoardSpec, relations: dict) -> tuple[str, int]:
    """``("hex", d)`` when a static relation of four arguments links the cells of a board
    of two coordinates as a hex grid: every link is a step along a row or a column or along
    one diagonal ``(+1, d)`` / ``(-1, -d)``, and all six directions occur; else
    ``("square", 0)``.  Found from the rules alone (the names are not read)."""
    if len(spec.coord_args) != 2:
        return "square", 0
    xs, ys = spec.coord_values
    for (name, ar), tuples in relations.items():
        if ar != 4 or not tuples or len(tuples) >= STATIC_TUPLES_CAP:
            continue
        for order in ((0, 1, 2, 3), (1, 0, 3, 2)):       # (x1 y1 x2 y2) or (y1 x1 y2 x2)
            steps = set()
            inside = 0
            for t in tuples:         # links off the cells seen so far are left out
                a, b, c, d = (t[k] for k in order)
                if a in xs and b in ys and c in xs and d in ys:
                    inside += 1
                    steps.add((xs.index(c) - xs.index(a), ys.index(d) - ys.index(b)))
            if inside * 2 < len(tuples):
                continue
            for diag in (1, -1):
                if steps == HEX_STEPS | {(1, diag), (-1, -diag)}:
                    return "hex", diag
    return "square", 0


def _statics(description, _cache: dict = {}) -> dict:  # noqa: B006
    """``static_relations`` of the last description asked about (layout and orders both
    read them; the description is kept so that its id is not reused meanwhile)."""
    key = id(description)
    if _cache.get("key") != key or _cache.get("desc") is not description:
        try:
            rels = static_relations(description)
        except (RecursionError, ValueError, TypeError):
            rels = {}
        _cache.clear()
        _cache.update(key=key, rels=rels, desc=description)
    return _cache["rels"]


def _with_layout(spec: BoardSpec, description) -> BoardSpec:
    layout, diag = layout_of(spec, _statics(description))
    if layout == "square":
        return spec
    return replace(spec, layout=layout, hex_diagonal=diag)


# ------------------------------------------------------------------------------ samples

def sample_states(sm, walks: int = 6, steps: int = 120, seed: int = 0, seconds: float = 5.0) -> list:
    """The initial state, then the states of ``walks`` random walks of at most ``steps`` joint
    moves, within about ``seconds``: what ``detect_board`` needs to see each fluent's values."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    init = sm.initial_state()
    out = [init]
    for _ in range(walks):
        s = init
        for _ in range(steps):
            if sm.is_terminal(s) or time.monotonic() > deadline:
                break
            joint = []
            for r in range(len(sm.roles)):
                legal = sm.legal_moves(s, r)
                if not legal:
                    return out
                joint.append(rng.choice(sorted(legal, key=render)))
            s = sm.next_state(s, tuple(joint))
            out.append(s)
    return out
