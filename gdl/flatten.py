"""Flat rules: every argument of every relation a constant, found from the terms' shapes.

A non-ground evaluator on arrays wants each relation to be a set of fixed-width tuples of
constants. GDL has function terms (``(move wp e 2 e 4)`` inside ``legal`` and ``does``,
``(cell a 1 wr)`` inside ``true``), so this module finds, from the rules alone, every *shape*
an argument can take and rewrites each rule once per combination of shapes its variables can
have:

- a shape is ``"_"`` (a constant) or ``(name, shape, ...)`` (a function term);
- the shapes of each relation are a fixpoint over the rules, as the relaxed model is over
  atoms, but with constants forgotten (small: chess has a few dozen); ``true`` takes the
  shapes of ``init`` and ``next``, ``does`` those of ``legal``;
- a relation whose arguments are all constants keeps its name; one with function terms in
  its arguments becomes one relation per shape combination (``name#shapes``), its arguments
  the constants of those terms in order. In ``true``/``init``/``next`` and the move argument
  of ``legal``/``does`` the term becomes one flat function term named by its shape, so the
  keywords keep their meaning (``flat_term``, ``unflat_term`` convert);
- ``distinct`` of two terms of one shape holds when some constant slot differs: one rule per
  slot that can differ; of two shapes, it always holds. A negated literal of a shape its
  relation never has always holds and is dropped.

Terms that grow without bound (a recursion that nests a function term in itself) have no
finite set of shapes: ``FlattenError``.
"""
from __future__ import annotations

from itertools import product

from .analysis import DOES_SIG, TRUE_SIG, expand_or
from .kif import Description, Rule
from .terms import signature

SLOT = "_"
MAX_DEPTH = 12          # a shape nested deeper is a term that grows without bound
MAX_SHAPES = 20_000     # shapes of all relations together
MAX_WORK = 5_000_000    # shapes tried while enumerating rule bodies (chess: about 8,000)
MAX_RULES = 500_000     # flat rules
# keyword relations whose argument at this position (1-based) is one flat function term
KEYWORD_TERM = {("true", 1): 1, ("init", 1): 1, ("next", 1): 1, ("legal", 2): 2, ("does", 2): 2}


class FlattenError(ValueError):
    """The rules build terms without bound, or too many shapes to flatten."""


def term_shape(t):
    """The shape of a ground term."""
    return SLOT if t.__class__ is str else (t[0],) + tuple(term_shape(a) for a in t[1:])


def shape_text(s) -> str:
    return SLOT if s == SLOT else "(" + " ".join([s[0]] + [shape_text(a) for a in s[1:]]) + ")"


def slots(s) -> int:
    """How many constants a term of shape ``s`` holds."""
    return 1 if s == SLOT else sum(slots(a) for a in s[1:])


def _depth(s) -> int:
    return 0 if s == SLOT else 1 + max((_depth(a) for a in s[1:]), default=0)


def _is_var(t) -> bool:
    return t.__class__ is str and t[:1] == "?"


def _unify(term, shape, vs: dict):
    """``vs`` extended so that ``term`` has ``shape``, or None."""
    if term.__class__ is str:
        if term[:1] != "?":
            return vs if shape == SLOT else None
        known = vs.get(term)
        if known is None:
            out = dict(vs)
            out[term] = shape
            return out
        return vs if known == shape else None
    if shape == SLOT or shape[0] != term[0] or len(shape) != len(term):
        return None
    for a, s in zip(term[1:], shape[1:]):
        vs = _unify(a, s, vs)
        if vs is None:
            return None
    return vs


def _shape_of(term, vs):
    if term.__class__ is str:
        return vs[term] if term[:1] == "?" else SLOT
    return (term[0],) + tuple(_shape_of(a, vs) for a in term[1:])


def _args(sentence) -> tuple:
    return sentence[1:] if sentence.__class__ is tuple else ()


def _positives(body) -> list:
    return [l for l in body if not (l.__class__ is tuple and l[0] in ("not", "distinct"))]


def _bindings(lits: list, table: dict, vs: dict, work: list):
    """Every assignment of shapes to the variables of ``lits`` that the table allows.
    ``work``: a one-item countdown of the shapes tried, shared by a whole flattening (rules
    from the network are hostile: a body of many literals over relations of many shapes
    has a product of combinations)."""
    if not lits:
        yield vs
        return
    lit = lits[0]
    for shp in table.get(signature(lit), ()):
        work[0] -= 1
        if work[0] < 0:
            raise FlattenError(f"more than {MAX_WORK:,} combinations of argument shapes")
        v = vs
        for a, s in zip(_args(lit), shp):
            v = _unify(a, s, v)
            if v is None:
                break
        else:
            yield from _bindings(lits[1:], table, v, work)


def shapes(rules: list, work: list | None = None) -> dict:
    """Relation signature -> set of tuples of argument shapes (propositions: ``{()}``)."""
    rules = [rr for r in rules for rr in expand_or(r)]
    work = [MAX_WORK] if work is None else work
    table: dict = {}
    count = 0
    changed = True
    while changed:
        changed = False
        table[TRUE_SIG] = table.get(("init", 1), set()) | table.get(("next", 1), set())
        table[DOES_SIG] = set(table.get(("legal", 2), ()))
        for r in rules:
            hsig = signature(r.head)
            if hsig in (TRUE_SIG, DOES_SIG):
                continue
            for vs in _bindings(_positives(r.body), table, {}, work):
                try:
                    hs = tuple(_shape_of(a, vs) for a in _args(r.head))
                except KeyError:
                    continue   # an unsafe rule (the validator refuses it): no shape
                known = table.setdefault(hsig, set())
                if hs in known:
                    continue
                if any(_depth(s) > MAX_DEPTH for s in hs):
                    raise FlattenError(f"terms of {hsig[0]} nest deeper than {MAX_DEPTH}: "
                                       f"a recursion builds them without bound")
                count += 1
                if count > MAX_SHAPES:
                    raise FlattenError(f"more than {MAX_SHAPES:,} argument shapes")
                known.add(hs)
                changed = True
    return table


def flat_name(name: str, shp: tuple) -> str:
    if all(s == SLOT for s in shp):
        return name
    return name + "#" + " ".join(shape_text(s) for s in shp)


def _flat_slots(t, s) -> list:
    if s == SLOT:
        return [t]
    if _is_var(t):
        return [f"{t}~{i}" for i in range(slots(s))]
    out: list = []
    for a, sa in zip(t[1:], s[1:]):
        out.extend(_flat_slots(a, sa))
    return out


def _flat_keyword_term(t, s):
    """A term of ``true``/``init``/``next`` or a move, as one flat function term."""
    return (shape_text(s),) + tuple(_flat_slots(t, s))


def flat_term(t):
    """A ground fluent or move as the flat rules write it."""
    return _flat_keyword_term(t, term_shape(t))


def unflat_term(flat, shape_of: dict):
    """Back from ``flat_term``; ``shape_of``: shape text -> shape (``FlatRules.shape_of``)."""
    s = shape_of[flat[0]]
    it = iter(flat[1:])

    def build(sh):
        if sh == SLOT:
            return next(it)
        return (sh[0],) + tuple(build(a) for a in sh[1:])
    return build(s)


def _flat_atom(sentence, vs):
    sig = signature(sentence)
    args = _args(sentence)
    shp = tuple(_shape_of(a, vs) for a in args)
    if sig in KEYWORD_TERM:
        k = KEYWORD_TERM[sig]
        out = [sentence[0]] + list(args[:k - 1]) + [_flat_keyword_term(args[k - 1], shp[k - 1])]
        return tuple(out), shp
    if not args:
        return sentence, shp
    flat: list = []
    for a, s in zip(args, shp):
        flat.extend(_flat_slots(a, s))
    return (flat_name(sentence[0], shp),) + tuple(flat), shp


def _distinct_pairs(a, b, vs):
    """None: always true; []: never true; else the slot pairs of which one must differ."""
    sa, sb = _shape_of(a, vs), _shape_of(b, vs)
    if sa != sb:
        return None
    pairs = []
    for x, y in zip(_flat_slots(a, sa), _flat_slots(b, sb)):
        if not _is_var(x) and not _is_var(y):
            if x != y:
                return None
            continue
        if x != y:
            pairs.append((x, y))
    return pairs


class FlatRules:
    """The flat rules of a description, and the shapes behind their names."""

    def __init__(self, description: Description):
        rules = [rr for r in description.rules for rr in expand_or(r)]
        work = [MAX_WORK]
        self.table = shapes(rules, work)
        out: list = []
        for r in rules:
            if signature(r.head) in (TRUE_SIG, DOES_SIG):
                continue
            for vs in _bindings(_positives(r.body), self.table, {}, work):
                out.extend(self._specialise(r, vs))
                if len(out) > MAX_RULES:
                    raise FlattenError(f"more than {MAX_RULES:,} flat rules")
        self.rules = out
        self.roles = description.roles
        self.shape_of: dict = {}
        for sig in (TRUE_SIG, DOES_SIG):
            for shp in self.table.get(sig, ()):
                s = shp[-1]
                self.shape_of[shape_text(s)] = s

    def description(self) -> Description:
        return Description(rules=self.rules, source="<flat rules>")

    def _specialise(self, rule: Rule, vs: dict) -> list:
        try:
            head, hs = _flat_atom(rule.head, vs)
        except KeyError:
            return []
        if hs not in self.table.get(signature(rule.head), ()):
            return []
        body: list = []
        choices: list = []   # one list of alternative literals per multi-slot distinct
        for lit in rule.body:
            if lit.__class__ is tuple and lit[0] == "distinct":
                pairs = _distinct_pairs(lit[1], lit[2], vs)
                if pairs is None:
                    continue
                if not pairs:
                    return []
                choices.append([("distinct", x, y) for x, y in pairs])
            elif lit.__class__ is tuple and lit[0] == "not":
                inner = lit[1]
                if inner.__class__ is tuple and inner[0] == "distinct":
                    pairs = _distinct_pairs(inner[1], inner[2], vs)
                    if pairs is None:
                        return []          # the terms always differ: (not (distinct ..)) fails
                    body.extend(("not", ("distinct", x, y)) for x, y in pairs)
                    continue
                atom, shp = _flat_atom(inner, vs)
                if shp not in self.table.get(signature(inner), ()):
                    continue               # no atom of that shape exists: the negation holds
                body.append(("not", atom))
            else:
                body.append(_flat_atom(lit, vs)[0])
        if not choices:
            return [Rule(head, tuple(body), rule.line, rule.col)]
        return [Rule(head, tuple(body) + combo, rule.line, rule.col) for combo in product(*choices)]
