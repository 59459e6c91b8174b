"""The non-ground engine: flat rules compiled to arrays, evaluated by ``nonground_kernels``.

For games that do not ground (chess, amazons): the rules are never instantiated over their
relaxed model. ``Compiled`` turns the flat rules (``gdl.flatten``) into int32 arrays:

- every constant becomes a symbol id, every flat relation an id with a width and a kind:
  *derived* (rules evaluated per query, tabled), *static* (reads neither ``true`` nor
  ``does``: its rows listed once, by the evaluator itself in an empty state), ``true`` (the
  state's rows) or ``does`` (the joint move's rows);
- each rule's body in ggp-base's order (``ordered_body``), variables numbered;
- the call patterns each literal can meet (which argument positions are bound), found by
  propagating them from the queries the state machine asks (``legal`` with its role,
  ``goal`` with its role, ``next``, ``terminal``, GDL-II's ``sees`` with its role) through the bodies in that order: a static
  or ``true`` relation gets a hash index for each pattern that binds something.

``NonGroundEngine`` is the state-machine interface on top, exact against the reference
traces (``tests/test_traces.py``).
"""
from __future__ import annotations

import random
import numpy as np

from gdl.analysis import literal_atom
from gdl.flatten import (KEYWORD_TERM, SLOT, FlatRules, FlattenError, flat_name, flat_term, shape_text,
                          slots, unflat_term)
from gdl.kif import Description
from gdl.terms import render, variables

from ..reasoner.prolog import ordered_body
from ..reasoner.statemachine import (BrokenRules, GroundingError, InvalidQuery, PlayoutCap,
                                     ReasonerError, ResourceLimit, goal_int)
from . import nonground_kernels as NK

MAX_STATIC_ROWS = 4_000_000
MEMO = 200_000          # remembered term conversions, each way
MAX_ENTRIES = 1 << 22   # tables, answers, contexts or state rows: the work space grows x4 up to
                        # this (a few hundred MB at most), then the query is a ResourceLimit
STATIC_INFERENCES = 100_000_000   # listing the static relations: a few seconds at most

Program, Work = NK.Program, NK.Work

# the pool a status says is full (the work space grows it and asks again)
_POOL_OF = {NK.E_TABLES: "tables", NK.E_ANSWERS: "answers", NK.E_DEPTH: "depth",
            NK.E_STATE: "state_rows"}


def _failure(status: int, limit: int, what: str):
    """The exception of an evaluator status that growing the work space cannot cure."""
    if status == NK.E_INFERENCES:
        return ResourceLimit(f"{what} ran out of its {limit:,} inferences", "inferences")
    if status == NK.E_NO_MOVE:
        return BrokenRules("a role has no legal move in a non-terminal state")
    if status == NK.E_GOAL:
        return BrokenRules("a goal value is not an integer")
    return BrokenRules("the rules evaluate a negation or a distinct before its variables are "
                       "bound, or through a cycle")

def _split(atom):
    """A flat atom as (relation key, argument list): a keyword relation's flat function term
    names its key by its shape and gives its constants as arguments."""
    if atom.__class__ is str:
        return (atom, 0), []
    k = KEYWORD_TERM.get((atom[0], len(atom) - 1))
    if k is not None:
        return (atom[0], atom[k][0]), list(atom[1:k]) + list(atom[k][1:])
    return (atom[0], len(atom) - 1), list(atom[1:])


def _body_atoms(rule) -> list:
    """The sentences of a rule's body, positive or negated (not the distincts)."""
    return [la[0] for la in map(literal_atom, rule.body) if la is not None]


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


class Compiled:
    """The program arrays and the names behind them."""

    def __init__(self, desc: Description):
        try:
            self.flat = FlatRules(desc)
        except FlattenError as e:
            raise GroundingError(f"no non-ground engine: {e}") from None
        self.roles = desc.roles
        rules = self.flat.rules
        self.sym: dict = {}
        self.names: list = []
        self.rel: dict = {}
        self.rel_keys: list = []
        self._widths: list = []
        for r in rules:
            for atom in [r.head] + _body_atoms(r):
                key, args = _split(atom)
                self._rel_id(key, len(args))
        for s in self.flat.table.get(("true", 1), ()):     # fluents only init or next name
            t = shape_text(s[0])
            self._rel_id(("true", t), slots(s[0]))
        for s in self.flat.table.get(("does", 2), ()):
            t = shape_text(s[1])
            self._rel_id(("does", t), 1 + slots(s[1]))
        # GDL-II percepts: a relation per shape of (role, percept), as any relation with function
        # terms (gdl.flatten); (relation, percept shape) of those whose role is a constant
        self.sees = [(self.rel[k], s[1]) for s in sorted(self.flat.table.get(("sees", 2), ()), key=repr)
                     for k in [(flat_name("sees", s), slots(s[0]) + slots(s[1]))]
                     if s[0] == SLOT and k in self.rel]
        self._kinds(rules)
        self.derived = self.kind == NK.K_RULES   # the final kinds (the listing below changes them)
        self.first = [0] * len(self.rel_keys)    # 1: an existence relation (``_exists_rel``)
        self._exists: dict = {}                  # derived relation -> its existence relation
        self.samplers: dict = {}                 # legal relation -> [(candidates, check)] (``_sampler``)
        # static relations: every row, found by the evaluator itself (their rules run as
        # derived ones, in an empty state), then read as facts
        final = self.kind.copy()
        static = [i for i in range(len(self.rel_keys)) if final[i] == NK.K_FACTS and self.rules_of[i]]
        self.kind[static] = NK.K_RULES
        self._facts({})
        self._encode_rules(rules)
        self._indexes()
        rows = self._static_rows(static)
        self.kind = np.concatenate([final, self.kind[len(final):]])   # and existence relations
        self._facts(rows)
        self._encode_rules(rules)
        self._indexes()

    # -- names
    def sym_id(self, name: str) -> int:
        i = self.sym.get(name)
        if i is None:
            i = self.sym[name] = len(self.names)
            self.names.append(name)
        return i

    def _rel_id(self, key, width: int) -> int:
        i = self.rel.get(key)
        if i is None:
            i = self.rel[key] = len(self.rel_keys)
            self.rel_keys.append(key)
            self._widths.append(width)
        return i

    # -- kinds: derived, static, true, does
    def _kinds(self, rules) -> None:
        n = len(self.rel_keys)
        deps: dict = {i: set() for i in range(n)}
        self.rules_of: dict = {i: [] for i in range(n)}
        for r in rules:
            h = self.rel[_split(r.head)[0]]
            self.rules_of[h].append(r)
            for atom in _body_atoms(r):
                deps[h].add(self.rel[_split(atom)[0]])
        dynamic = {i for i, k in enumerate(self.rel_keys) if k[0] in ("true", "does") and isinstance(k[1], str)}
        changed = True
        while changed:
            changed = False
            for h, bs in deps.items():
                if h not in dynamic and bs & dynamic:
                    dynamic.add(h)
                    changed = True
        kind = np.zeros(n, np.int32)
        for i, k in enumerate(self.rel_keys):
            if k[0] == "true" and isinstance(k[1], str):
                kind[i] = NK.K_TRUE
            elif k[0] == "does" and isinstance(k[1], str):
                kind[i] = NK.K_DOES
            elif i in dynamic:
                kind[i] = NK.K_RULES
            else:
                kind[i] = NK.K_FACTS
        self.kind = kind
        self.width = np.array(self._widths, np.int32)

    # -- static relations: every row, once
    def _static_rows(self, static: list) -> dict:
        P = self.program()
        sizes = {"tables": 1 << 12, "answers": 1 << 14, "depth": 256, "state_rows": 16}
        W = new_work(self, **sizes)
        W.reg[NK.R_INF_LIMIT] = STATIC_INFERENCES
        out: dict = {}
        total = 0
        for rel in static:
            while True:
                call = np.full(int(self.width[rel]) + 1, NK.FREE, np.int32)
                status, t = NK.solve(P, W, rel, call)
                if status == NK.OK:
                    break
                what = _POOL_OF.get(status)
                if what is None or sizes[what] >= MAX_ENTRIES:
                    why = (f"needs more than {sizes[what]:,} {what}" if what else
                           _failure(status, STATIC_INFERENCES, "it"))
                    raise GroundingError(f"no non-ground engine: listing the static relation "
                                         f"{self.rel_keys[rel][0]}: {why}")
                sizes[what] *= 4
                W = new_work(self, **sizes)
                W.reg[NK.R_INF_LIMIT] = STATIC_INFERENCES
            rows = np.empty((int(W.tab_count[t]), int(self.width[rel])), np.int32)
            NK.answer_rows(W, t, rows)
            rows = list(map(tuple, rows.tolist()))
            total += len(rows) * max(1, int(self.width[rel]))
            if total > MAX_STATIC_ROWS:
                raise GroundingError(f"no non-ground engine: static relations over "
                                     f"{MAX_STATIC_ROWS:,} values")
            out[rel] = sorted(rows)
        return out

    def _facts(self, rows: dict) -> None:
        starts, counts, vals = [], [], []
        for i in range(len(self.rel_keys)):
            starts.append(len(vals))
            rs = rows.get(i, [])
            counts.append(len(rs))
            for r in rs:
                vals.extend(r)
        self.fact_start = np.array(starts, np.int32)
        self.fact_count = np.array(counts, np.int32)
        self.fact_vals = np.array(vals or [0], np.int32)

    # -- rules of derived relations
    def _encode_rules(self, rules) -> None:
        order = [i for i in range(len(self.rel_keys)) if self.kind[i] == NK.K_RULES]
        encoded: dict = {}           # relation -> [(variables, head codes, literals)]
        for rel in order:
            encoded[rel] = [self._encode_rule(r) for r in self.rules_of[rel]]
        for rel in order:
            if self.rel_keys[rel][0] == "legal" and isinstance(self.rel_keys[rel][1], str) and self.derived[rel]:
                self._sampler(rel, encoded)
        rs, re = np.zeros(len(self.rel_keys), np.int32), np.zeros(len(self.rel_keys), np.int32)
        nvars, hstart, bstart, bend = [], [], [], []
        lkind, lrel, lcode, codes, lalt, lneed = [], [], [], [], [], []
        self.rule_lits: list = []    # per rule: [(kind, rel, codes)] for the pattern analysis
        n = 0
        for rel, rules_ in encoded.items():
            rs[rel] = n
            for nv, head, lits in rules_:
                alts = self._existential(head, lits)
                nvars.append(nv)
                hstart.append(len(codes))
                codes.extend(head)
                bstart.append(len(lkind))
                for (k, rl, cs), (alt, need) in zip(lits, alts):
                    lkind.append(k)
                    lrel.append(rl)
                    lalt.append(alt)
                    lneed.append(need)
                    lcode.append(len(codes))
                    codes.extend(cs)
                bend.append(len(lkind))
                self.rule_lits.append((rel, head, lits))
                n += 1
            re[rel] = n
        grown = len(self.rel_keys) - len(rs)     # existence relations made meanwhile
        rs, re = np.append(rs, np.zeros(grown, np.int32)), np.append(re, np.zeros(grown, np.int32))
        for base, ex in self._exists.items():    # an existence relation runs its base's rules
            rs[ex], re[ex] = rs[base], re[base]
        self.rel_rule_start, self.rel_rule_end = rs, re
        self.rule_nvars = np.array(nvars or [0], np.int32)
        self.rule_head_start = np.array(hstart or [0], np.int32)
        self.rule_body_start = np.array(bstart or [0], np.int32)
        self.rule_body_end = np.array(bend or [0], np.int32)
        self.lit_kind = np.array(lkind or [0], np.int32)
        self.lit_rel = np.array(lrel or [0], np.int32)
        self.lit_alt = np.array(lalt or [-1], np.int32)
        self.lit_need = np.array(lneed or [0], np.int64)
        self.lit_code_start = np.array(lcode or [0], np.int32)
        self.codes = np.array(codes or [0], np.int32)
        self.max_body = max([e - s for s, e in zip(bstart, bend)] or [0]) + 1
        self.max_vars = max(nvars or [0]) + 1

    def _encode_rule(self, r) -> tuple:
        """(number of variables, head codes, [(literal kind, relation, codes)]): a constant's
        code is its symbol id, variable v's is -v - 1."""
        var: dict = {}

        def code(t):
            if isinstance(t, str) and t.startswith("?"):
                if t not in var:
                    var[t] = len(var)
                return -var[t] - 1
            return self.sym_id(t)
        head = [code(a) for a in _split(r.head)[1]]
        lits = []
        for l in self._body_order(r.body):
            la = literal_atom(l)
            if la is not None:
                k, a = _split(la[0])
                lits.append((NK.L_POS if la[1] else NK.L_NEG, self.rel[k], [code(x) for x in a]))
            elif l[0] == "distinct":
                lits.append((NK.L_DIST, -1, [code(l[1]), code(l[2])]))
            else:   # (not (distinct a b)): a and b equal
                lits.append((NK.L_EQ, -1, [code(l[1][1]), code(l[1][2])]))
        if len(var) > 63:
            raise GroundingError("no non-ground engine: a rule with more than 63 variables")
        return len(var), head, lits

    def _sampler(self, rel: int, encoded: dict) -> None:
        """A playout's random legal move without every legal move (``NK.playout``).

        A legal rule with negations of derived relations (chess's ``(not (threatened ?player
        ?kx ?ky ?u ?v))``: is the king attacked once this piece has moved) is split in two
        relations: its *candidates*, the head with the variables of those negations, by the
        rest of the body; and its *check*, those negations, asked with every argument bound
        (a safe rule's positive literals bind them all). A playout then tests the candidates of one random move after another
        until one passes, instead of evaluating every candidate's check. Each rule of a sampled
        relation gets a candidate relation (a rule with nothing to split: the whole body, no
        check); ``self.samplers[rel]`` lists their (candidate, check or -1) relations."""
        parts = []
        for nv, head, lits in encoded[rel]:
            costly = [l for l in lits if l[0] == NK.L_NEG and self.derived[l[1]]]
            parts.append(([l for l in lits if l not in costly], costly))
        if not any(costly for _, costly in parts):
            return
        out = []
        for i, ((nv, head, _), (cheap, costly)) in enumerate(zip(encoded[rel], parts)):
            hv = {-c - 1 for c in head if c < 0}
            extra = []
            for _, _, cs in costly:
                for c in cs:
                    if c < 0 and (-c - 1) not in hv and c not in extra:
                        extra.append(c)
            ch = head + extra
            cand = self._virtual_rel(("$candidates", self.rel_keys[rel], i), len(ch))
            encoded[cand] = [(nv, ch, cheap)]
            chk = -1
            if costly:
                chk = self._virtual_rel(("$check", self.rel_keys[rel], i), len(ch))
                encoded[chk] = [(nv, ch, costly)]
            out.append((cand, chk))
        self.samplers[rel] = out

    def _body_order(self, body) -> list:
        """ggp-base's order (``ordered_body``), except that in the body's leading run of ground
        literals a negation of a derived relation (chess's castling: ``(not (threatened white
        f 1 e 1))``) comes after the run's lookups of the state and the static relations: a
        lookup costs one probe and often fails, such a negation evaluates tables."""
        lits = ordered_body(body)
        k = 0
        while k < len(lits) and not variables(lits[k]):
            k += 1
        costly = [l for l in lits[:k] if self._derived_negation(l)]
        cheap = [l for l in lits[:k] if not self._derived_negation(l)]
        return cheap + costly + lits[k:]

    def _derived_negation(self, lit) -> bool:
        la = literal_atom(lit)
        return la is not None and not la[1] and bool(self.derived[self.rel[_split(la[0])[0]]])

    def _existential(self, head: list, lits: list) -> list:
        """Per literal, (existence relation, argument positions that must be bound) or (-1, 0).

        A positive literal of a derived relation whose new variables nothing after it reads
        but the head (chess's ``(has_legal_move ?p) <= (legal ?p (move ?piece ?u ?v ?x ?y))``)
        needs one answer, not all, when the call binds the head's variables among them: then
        it reads the relation's existence relation instead, whose tables complete at their
        first answer. Not when a new variable occurs twice in it: that filters the answers."""
        out = []
        bound: set = set()
        head_vars = {-c - 1 for c in head if c < 0}
        for i, (k, rel, cs) in enumerate(lits):
            vs = {-c - 1 for c in cs if c < 0}
            alt = (-1, 0)
            fresh = [c for c in cs if c < 0 and (-c - 1) not in bound]   # ``(count 1 1 ?x ?x)``: twice
            if k == NK.L_POS and fresh and len(set(fresh)) == len(fresh) and self.derived[rel]:
                later = set()
                for _, _, cs2 in lits[i + 1:]:
                    later |= {-c - 1 for c in cs2 if c < 0}
                if not (vs - bound) & later:
                    need = 0
                    for j, c in enumerate(cs):
                        if c < 0 and (-c - 1) in head_vars and (-c - 1) not in bound:
                            need |= 1 << j
                    if (vs - bound) - head_vars:    # something to leave unbound
                        alt = (self._exists_rel(rel), need)
            out.append(alt)
            if k == NK.L_POS:
                bound |= vs
        return out

    def _exists_rel(self, rel: int) -> int:
        ex = self._exists.get(rel)
        if ex is None:
            ex = self._exists[rel] = self._virtual_rel(("$exists", self.rel_keys[rel]), self._widths[rel])
            self.first[ex] = 1
        return ex

    def _virtual_rel(self, key, width: int) -> int:
        """A derived relation of the engine's own, keyed so that no game sentence has its key
        (the same id when both encodings ask for it)."""
        v = self.rel.get(key)
        if v is None:
            v = self.rel[key] = len(self.rel_keys)
            self.rel_keys.append(key)
            self._widths.append(width)
            self.width = np.array(self._widths, np.int32)
            self.kind = np.append(self.kind, np.int32(NK.K_RULES))
            self.rules_of[v] = []
            self.first.append(0)
            self.derived = np.append(self.derived, True)
        return v

    # -- call patterns, and an index for each one on a static or true relation
    def top_calls(self) -> list:
        out = []
        for pairs in self.samplers.values():    # a playout asks these with the role bound,
            for cand, chk in pairs:             # and every check with every argument bound
                out.append((cand, 1))
                if chk >= 0:
                    out.append((chk, (1 << int(self.width[chk])) - 1))
        for i, (name, tag) in enumerate(k[:2] for k in self.rel_keys):
            if name == "legal" and isinstance(tag, str) or (name, tag) == ("goal", 2):
                out.append((i, 1))
            elif name == "next" and isinstance(tag, str) or (name, tag) == ("terminal", 0):
                out.append((i, 0))
            elif name == "init" and isinstance(tag, str):
                out.append((i, 0))
        out.extend((rel, 1) for rel, _ in self.sees)   # asked with the role bound
        return out

    def _indexes(self) -> None:
        rules_by_rel: dict = {}
        for rel, head, lits in self.rule_lits:
            rules_by_rel.setdefault(rel, []).append((head, lits))
        seen, todo, need = set(), list(self.top_calls()), set()
        while todo:
            rel, mask = todo.pop()
            if (rel, mask) in seen or self.kind[rel] != NK.K_RULES:
                continue
            seen.add((rel, mask))
            for head, lits in rules_by_rel.get(rel, ()):
                bound = {-c - 1 for j, c in enumerate(head) if c < 0 and (mask >> j) & 1}
                for k, lrel, cs in lits:
                    if k in (NK.L_DIST, NK.L_EQ):
                        continue
                    m = 0
                    for j, c in enumerate(cs):
                        if c >= 0 or (-c - 1) in bound:
                            m |= 1 << j
                    if self.kind[lrel] == NK.K_RULES:
                        todo.append((lrel, m))
                    elif self.kind[lrel] in (NK.K_FACTS, NK.K_TRUE) and m:
                        need.add((lrel, m))
                    if k == NK.L_POS:
                        bound |= {-c - 1 for c in cs if c < 0}
        self.index_keys = sorted(need)
        nmap = _pow2(2 * len(need) + 2)
        imap_key = np.zeros(nmap, np.int64)
        imap_val = np.full(nmap, -1, np.int32)
        head_start = np.zeros(max(1, len(need)), np.int32)
        nslots = np.zeros(max(1, len(need)), np.int32)
        nh = ne = 0
        for ix, (rel, mask) in enumerate(self.index_keys):
            k = rel * 4294967296 + mask
            s = int(NK.imap_slot(rel, mask, nmap))
            while imap_val[s] >= 0:
                s = (s + 1) & (nmap - 1)
            imap_key[s], imap_val[s] = k, ix
            if self.kind[rel] == NK.K_FACTS:   # a state index is built per state
                head_start[ix] = nh
                nslots[ix] = _pow2(max(2, 2 * int(self.fact_count[rel])))
                nh += int(nslots[ix])
                ne += int(self.fact_count[rel])
        heads = np.full(max(1, nh), -1, np.int32)
        rows = np.zeros(max(1, ne), np.int32)
        nexts = np.full(max(1, ne), -1, np.int32)
        e = 0
        for ix, (rel, mask) in enumerate(self.index_keys):
            if self.kind[rel] == NK.K_FACTS:
                e = NK.build_index(self.fact_vals, int(self.fact_start[rel]), int(self.width[rel]),
                                   int(self.fact_count[rel]), mask, heads, int(head_start[ix]),
                                   int(nslots[ix]), rows, nexts, e)
        self.imap_key, self.imap_val = imap_key, imap_val
        self.ix_head, self.ix_head_start, self.ix_nslots = heads, head_start, nslots
        self.ix_row, self.ix_next = rows, nexts

    def program(self) -> Program:
        return Program(self.kind, self.width, self.rel_rule_start, self.rel_rule_end,
                       self.rule_nvars, self.rule_head_start, self.rule_body_start,
                       self.rule_body_end, self.lit_kind, self.lit_rel, self.lit_code_start,
                       self.codes, self.fact_vals, self.fact_start, self.fact_count,
                       self.imap_key, self.imap_val, self.ix_head, self.ix_head_start,
                       self.ix_nslots, self.ix_row, self.ix_next,
                       np.array(self.first, np.int32), self.lit_alt, self.lit_need)


def new_work(c: Compiled, tables: int = 1 << 14, answers: int = 1 << 16, depth: int = 256,
             state_rows: int = 1024) -> Work:
    i32 = lambda n, v=0: np.full(n, v, np.int32)  # noqa: E731
    nrel = len(c.rel_keys)
    wmax = int(c.width.max()) if len(c.width) else 1
    nix = max(1, len(c.index_keys))
    maxb, maxv = c.max_body, c.max_vars
    reg = np.zeros(NK.N_REGS, np.int64)
    return Work(
        reg, np.array([depth, maxv, maxb], np.int64), i32(1), i32(wmax + 1), i32(wmax + 1),
        i32(tables), i32(tables), i32(tables), i32(tables), i32(tables), i32(tables), i32(tables),
        i32(tables), i32(tables), i32(tables), i32(tables), i32(tables * (wmax + 1)), i32(_pow2(tables), -1),
        i32(answers), i32(answers), i32(answers), i32(answers), i32(answers),
        i32(answers * max(1, wmax)), i32(_pow2(answers), -1), i32(tables),
        i32(depth), i32(depth), i32(depth), i32(depth), np.zeros(depth, np.int64),
        np.zeros(depth, np.int64), i32(depth * maxv, -1), i32(depth * maxb), i32(depth * maxb),
        i32(depth * maxb), i32(depth * maxb), np.zeros(depth * maxb, np.int64),
        i32(state_rows * max(1, wmax)), i32(nrel), i32(nrel),
        i32(max(16, 4 * state_rows * nix), -1), i32(nix), i32(nix), i32(state_rows * nix),
        i32(state_rows * nix), i32(64), i32(64), i32(64 * (wmax + 1)), i32(1))


class NonGroundEngine:
    """The state-machine interface (``agent.reasoner.statemachine``) on the array evaluator."""

    def __init__(self, desc: Description, inference_limit: int = 50_000_000):
        self.c = Compiled(desc)
        self.P = self.c.program()
        self.roles = desc.roles
        self._role_sym = [self.c.sym_id(r) if isinstance(r, str) else -2 for r in self.roles]
        self.inference_limit = inference_limit
        self._sizes = {"tables": 1 << 14, "answers": 1 << 16, "depth": 256, "state_rows": 256}
        self.W = new_work(self.c, **self._sizes)
        self._out = np.empty(1 << 12, np.int32)   # answers of ``_ask_many``
        self._sample_buf = np.empty(1 << 12, np.int32)       # candidate rows (``NK.candidate_rows``)
        self._sample_ent = np.empty((3, 1 << 10), np.int64)
        self._state = None
        self._does = None
        self._sees_memo = (None, None)   # ((state, joint move), every role's percepts)
        self.info: dict = {}   # set by load_engine
        self.closed = False
        rk = self.c.rel_keys
        self._legal = [i for i, k in enumerate(rk) if k[0] == "legal" and isinstance(k[1], str)]
        self._next = [i for i, k in enumerate(rk) if k[0] == "next" and isinstance(k[1], str)]
        self._init = [i for i, k in enumerate(rk) if k[0] == "init" and isinstance(k[1], str)]
        self._true = {k[1]: i for i, k in enumerate(rk) if k[0] == "true" and isinstance(k[1], str)}
        self._does_rel = {k[1]: i for i, k in enumerate(rk) if k[0] == "does" and isinstance(k[1], str)}
        self._goal = self.c.rel.get(("goal", 2))
        self._terminal = self.c.rel.get(("terminal", 0))
        self._encoded: dict = {}   # fluent -> (true relation or -1, symbol ids)
        self._terms: dict = {}     # (relation, row) -> plain term
        self._texts: dict = {}     # move -> its canonical text (the legal moves' order)
        self._game()

    def _game(self) -> None:
        """The arrays a playout reads (``NK.Game``); again when new symbols came in."""
        c, rk = self.c, self.c.rel_keys
        state_ix = [(ix, rel, mask) for ix, (rel, mask) in enumerate(c.index_keys) if c.kind[rel] == NK.K_TRUE]
        sym_int = np.full(len(c.names), NK.NOT_INT, np.int64)   # goal values: as goal_int reads them
        for i, name in enumerate(c.names):
            try:
                sym_int[i] = goal_int(name)
            except BrokenRules:
                pass
        def i32(xs):
            return np.array(list(xs), np.int32).reshape(-1)
        self.G = NK.Game(
            i32(self._legal), i32([self._does_rel.get(rk[r][1], -1) for r in self._legal]),
            i32(self._next), i32([self._true.get(rk[r][1], -1) for r in self._next]),
            -1 if self._terminal is None else self._terminal, -1 if self._goal is None else self._goal,
            np.array(self._role_sym, np.int32), sym_int,
            i32([x[0] for x in state_ix]), i32([x[1] for x in state_ix]), i32([x[2] for x in state_ix]),
            *self._sampler_arrays())

    def _sampler_arrays(self) -> tuple:
        """Per legal relation of ``G.legal_rels``, its sampler's (candidates, check)
        relations (``Compiled._sampler``): start and end in the two lists, the lists."""
        start, end, cand, chk = [], [], [], []
        for rel in self._legal:
            start.append(len(cand))
            for a, b in self.c.samplers.get(rel, ()):
                cand.append(a)
                chk.append(b)
            end.append(len(cand))
        return tuple(np.array(x, np.int32) for x in (start, end, cand or [0], chk or [0]))

    # -- loading a state and a joint move
    def _load(self, state) -> None:
        if self.closed:
            raise InvalidQuery("the engine was closed")
        if state == self._state:
            return
        c = self.c
        rows = []
        for f in state:
            enc = self._encoded.get(f)
            if enc is None:
                if len(self._encoded) > MEMO:
                    self._encoded.clear()
                ft = flat_term(f)
                rel = self._true.get(ft[0], -1)   # -1: a shape no rule reads or makes
                enc = self._encoded[f] = (rel, tuple(c.sym_id(a) for a in ft[1:]))
            if enc[0] >= 0:
                rows.append(enc)
        rows.sort()   # the same rows in the same order whatever the set's order: seeds repeat
        rels = np.array([r for r, _ in rows], np.int32)
        vals = np.array([v for _, vs in rows for v in vs], np.int32)
        if len(c.names) != len(self.G.sym_int):
            self._game()
        while not NK.load_rows(self.P, self.W, self.G, vals, rels, len(rows)):   # too small: grow
            self._sizes["state_rows"] *= 4
            self.W = new_work(c, **self._sizes)
        self._state = state
        self.W.reg[NK.R_INF_LIMIT] = self.inference_limit

    def _set_does(self, joint) -> None:
        W, c = self.W, self.c
        n = 0
        pos = 0
        for role, move in zip(self.roles, joint):
            fm = flat_term(move)
            rel = self._does_rel.get(fm[0])
            if rel is None:
                continue    # a move no rule reads
            vals = [c.sym_id(role)] + [c.sym_id(a) for a in fm[1:]]
            W.does_rel[n] = rel
            W.does_start[n] = pos
            W.does_vals[pos:pos + len(vals)] = vals
            pos += len(vals)
            n += 1
        W.reg_does[0] = n

    # -- queries
    def _ask(self, rel: int, call: list) -> list:
        """Rows of (rel, call); grows the work space and asks again when it is full."""
        if rel is None:
            return []
        c = self.c
        if c.kind[rel] == NK.K_FACTS:
            w = int(c.width[rel])
            s, n = int(c.fact_start[rel]), int(c.fact_count[rel])
            rows = c.fact_vals[s:s + n * w].reshape(n, w) if w else np.zeros((n, 0), np.int32)
            return [tuple(r) for r in rows.tolist()
                    if all(v == NK.FREE or v == x for v, x in zip(call, r))]
        while True:
            W = self.W
            W.reg[NK.R_INF] = 0
            buf = np.array(call + [0], np.int32)
            status, t = NK.solve(self.P, W, rel, buf)
            if status == NK.OK:
                w = int(c.width[rel])
                rows = np.empty((int(W.tab_count[t]), w), np.int32)
                NK.answer_rows(W, t, rows)
                return list(map(tuple, rows.tolist()))
            self._grow_and_reload(status)

    def _ask_many(self, rels: list, calls: list) -> list:
        """``_ask`` of several queries in one evaluator call (``NK.ask_many``): a list of
        row lists, one per query."""
        c = self.c
        n = len(rels)
        width = int(max(int(c.width[r]) for r in rels)) if rels else 0
        rels_a = np.array(rels, np.int32)
        calls_a = np.full((n, width + 1), NK.FREE, np.int32)
        for i, call in enumerate(calls):
            calls_a[i, :len(call)] = call
        counts = np.zeros(n, np.int64)
        while True:
            W = self.W
            status, k = NK.ask_many(self.P, W, rels_a, calls_a, self._out, counts)
            if status == NK.OK:
                break
            if status == NK.E_OUT:          # more answers than the buffer holds: grow it
                self._out = np.empty(2 * self._out.shape[0], np.int32)
                continue
            self._grow_and_reload(status)
        out, pos = [], 0
        for i, rel in enumerate(rels):
            w, m = int(c.width[rel]), int(counts[i])
            out.append(list(map(tuple, self._out[pos:pos + m * w].reshape(m, w).tolist())))
            pos += m * w
        return out

    def _grow_and_reload(self, status: int) -> None:
        """After a query ran out of a pool: a larger work space with the current state (and
        joint move) loaded again, so the query can be asked anew; a limit reached refuses it."""
        try:
            self._grow(status, "the query")
        except ReasonerError:
            self._fresh()
            raise
        state, does = self._state, self._does
        self._state = None
        self._load(state)
        if does is not None:
            self._set_does(does)

    def _grow(self, status: int, what: str) -> None:
        """A new work space with the full pool four times larger; the status's exception
        when growing cannot help (or the pool is at its cap)."""
        key = _POOL_OF.get(status)
        if key is None:
            raise _failure(status, self.inference_limit, what)
        self._sizes[key] *= 4
        if self._sizes[key] > MAX_ENTRIES:
            raise ResourceLimit(f"{what} needs more than {MAX_ENTRIES:,} {key}", "table")
        self.W = new_work(self.c, **self._sizes)

    def _fresh(self) -> None:
        NK.reset(self.W)
        self._state = None

    def _text(self, term) -> str:
        t = self._texts.get(term)
        if t is None:
            if len(self._texts) > MEMO:
                self._texts.clear()
            t = self._texts[term] = render(term)
        return t

    def _decoded(self, rel: int, row: tuple):
        """The plain term (fluent or move) of a ``true``/``init``/``next`` row or of a
        ``legal`` row without its role."""
        t = self._terms.get((rel, row))
        if t is None:
            if len(self._terms) > MEMO:
                self._terms.clear()
            t = self._terms[(rel, row)] = unflat_term(
                (self.c.rel_keys[rel][1],) + tuple(self.c.names[v] for v in row), self.c.flat.shape_of)
        return t

    def initial_state(self) -> frozenset:
        self._load(frozenset())
        out = set()
        for rel in self._init:
            for row in self._ask(rel, [NK.FREE] * int(self.c.width[rel])):
                out.add(self._decoded(rel, row))
        return frozenset(out)

    def legal_moves(self, state, role_index: int) -> list:
        self._load(frozenset(state))
        role = self._role_sym[role_index]
        out = []
        calls = [[role] + [NK.FREE] * (int(self.c.width[rel]) - 1) for rel in self._legal]
        for rel, rows in zip(self._legal, self._ask_many(self._legal, calls)):
            for row in rows:
                out.append(self._decoded(rel, row[1:]))
        # canonical order (gdl.terms.canonical_sorted), each move's text rendered once
        return sorted(set(out), key=self._text)

    def _checked(self, joint_move) -> tuple:
        joint_move = tuple(joint_move)
        if len(joint_move) != len(self.roles):
            raise InvalidQuery(f"a joint move needs one move per role ({len(self.roles)}), "
                               f"got {len(joint_move)}")
        return joint_move

    def _ask_with_moves(self, state, joint_move, rels: list, calls: list) -> list:
        """``_ask_many`` with ``joint_move`` made in ``state`` (next, sees): the tables made
        meanwhile read the move, so they are rolled back after it."""
        self._load(frozenset(state))
        W = self.W
        mark = [int(W.reg[k]) for k in (NK.R_NTAB, NK.R_NKEY, NK.R_NANS, NK.R_NVAL)]
        W.reg[NK.R_MARK] = mark[0]
        W.reg[NK.R_DIRTY] = 0
        self._does = joint_move
        self._set_does(joint_move)
        try:
            return self._ask_many(rels, calls)
        finally:
            self._does = None
            W = self.W
            W.reg_does[0] = 0
            if W.reg[NK.R_DIRTY] or W.reg[NK.R_MARK] != mark[0]:
                self._fresh()   # rebuilt meanwhile, or an older table changed: start over
            else:
                NK.rollback(W, *mark)

    def next_state(self, state, joint_move) -> frozenset:
        joint_move = self._checked(joint_move)
        calls = [[NK.FREE] * int(self.c.width[rel]) for rel in self._next]
        out = set()
        for rel, rows in zip(self._next, self._ask_with_moves(state, joint_move, self._next, calls)):
            for row in rows:
                out.add(self._decoded(rel, row))
        return frozenset(out)

    def sees(self, state, joint_move, role_index: int) -> frozenset:
        """GDL-II: the percepts of ``role_index`` when ``joint_move`` is made in ``state``
        (every role's are asked at once and kept for the next role's query)."""
        joint_move = self._checked(joint_move)
        if not self.c.sees:   # no percept in the rules (GDL-I)
            return frozenset()
        state = frozenset(state)
        key, percepts = self._sees_memo
        if key != (state, joint_move):
            rels = [rel for _ in self.roles for rel, _ in self.c.sees]
            calls = [[role] + [NK.FREE] * (int(self.c.width[rel]) - 1)
                     for role in self._role_sym for rel, _ in self.c.sees]
            answers = iter(self._ask_with_moves(state, joint_move, rels, calls))
            percepts = [frozenset(self._percept(shape, row[1:]) for _, shape in self.c.sees
                                  for row in next(answers)) for _ in self.roles]
            self._sees_memo = ((state, joint_move), percepts)
        return percepts[role_index]

    def _percept(self, shape, row) -> object:
        """The percept term of shape ``shape`` from a row's symbol ids."""
        it = iter(row)

        def build(s):
            return self.c.names[next(it)] if s == SLOT else (s[0],) + tuple(build(a) for a in s[1:])
        return build(shape)

    def is_terminal(self, state) -> bool:
        self._load(frozenset(state))
        return bool(self._ask(self._terminal, []))

    def goal_values(self, state) -> list:
        self._load(frozenset(state))
        out = []
        for r in self._role_sym:
            values = {self.c.names[row[1]] for row in self._ask(self._goal, [r, NK.FREE])}
            out.append(sorted(goal_int(v) for v in values))
        return out

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        """A uniformly random playout, the whole loop in numba (``NK.playout``)."""
        return self._playout(state, cap, seed)[:2]

    def _playout(self, state, cap: int, seed: int | None, keep_moves: bool = False):
        """(depth, goals, joint moves made if ``keep_moves``)."""
        state = frozenset(state)
        if seed is None:
            seed = random.getrandbits(31)
        while True:
            self._load(state)
            W = self.W
            W.reg[NK.R_INF_LIMIT] = self.inference_limit
            n = W.st_vals.shape[0]
            goals = np.zeros(len(self.roles), np.int64)
            stride = W.callbuf.shape[0] + 1
            trail = np.zeros(stride * len(self.roles) * (cap + 1) if keep_moves else 0, np.int32)
            status, depth = NK.playout(self.P, W, self.G, int(seed), int(cap), np.zeros(n, np.int32),
                                       np.zeros(n, np.int32), goals, trail, self._sample_buf,
                                       self._sample_ent)
            self._state = None   # the work space now holds the playout's last state
            if status == NK.OK:
                moves = []
                for d in range(int(depth) if keep_moves else 0):
                    joint = []
                    for r in range(len(self.roles)):
                        row = trail[(d * len(self.roles) + r) * stride:][:stride].tolist()
                        joint.append(self.move_of(row[0], row[1:]))
                    moves.append(tuple(joint))
                return int(depth), [[int(v)] for v in goals], moves
            if status == NK.E_CAP:
                raise PlayoutCap(cap)
            if status == NK.E_OUT:      # more candidate moves than the sampler's buffers hold
                self._grow_sampler()
                continue
            self._grow(status, "a playout")   # too small: grow, and play the same playout again

    # -- a playout's moves drawn from candidates (``Compiled._sampler``)
    @property
    def samples_moves(self) -> bool:
        """Whether playouts draw from candidates (legal rules with checks: ``_sampler``)."""
        return bool(self.c.samplers)

    def move_of(self, k: int, values) -> object:
        """The move of a row of ``G.legal_rels[k]`` (its role first; values past the row's
        width are ignored), as ``legal_moves`` gives it: the row without its role."""
        rel = self._legal[k]
        return self._decoded(rel, tuple(values[1:int(self.c.width[rel])]))

    def grow_for(self, status: int, what: str) -> None:
        """A larger work space after ``status`` (a pool too small), or the status's exception."""
        self._grow(status, what)
        self._state = None

    def load(self, state) -> None:
        """Load ``state`` into the work space, for a loop that runs on it (``driver_sm``'s
        playouts in numba); the engine forgets it (``unload``) when that loop moved it on."""
        self._load(frozenset(state))

    def unload(self) -> None:
        self._state = None

    def loaded_state(self) -> frozenset:
        """The state the work space holds (after such a loop), as terms."""
        W, out = self.W, set()
        for rel in self._true.values():
            w, start = int(self.c.width[rel]), int(W.st_rel_start[rel])
            for q in range(int(W.st_rel_count[rel])):
                out.add(self._decoded(rel, tuple(W.st_vals[start + q * w:start + (q + 1) * w].tolist())))
        return frozenset(out)

    def _grow_sampler(self) -> None:
        if self._sample_buf.shape[0] >= MAX_ENTRIES:
            raise ResourceLimit(f"a role's candidate moves need more than {MAX_ENTRIES:,} values", "table")
        self._sample_buf = np.empty(4 * self._sample_buf.shape[0], np.int32)
        self._sample_ent = np.empty((3, 4 * self._sample_ent.shape[1]), np.int64)

    def close(self) -> None:
        self.closed = True

