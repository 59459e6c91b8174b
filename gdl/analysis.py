"""Structural analysis of a rule set, shared by the validator, the Prolog translation and the
grounder: disjunction expansion, the relation dependency graph, its strongly connected
components, and which relations depend on the state (``true``) or on moves (``does``).

Relations are identified by their signature ``(name, arity)`` (see ``terms.arity``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import product

from .description import Problem, Rule
from .terms import signature, variables

TRUE_SIG = ("true", 1)
DOES_SIG = ("does", 2)
STATE_WORDS = ("true", "does", "next", "legal", "goal", "terminal")   # the words of a state


def expand_or(rule: Rule) -> list[Rule]:
    """Rules without ``or``: one rule per combination of disjuncts (as ggp-base's DeORer)."""
    def alternatives(lit):
        if isinstance(lit, tuple) and lit[0] == "or":
            out = []
            for d in lit[1:]:
                out.extend(alternatives(d))
            return out
        if isinstance(lit, tuple) and lit[0] == "not":
            return [("not", inner) for inner in alternatives(lit[1])]
        return [lit]

    if not any(isinstance(l, tuple) and l[0] in ("or", "not") and _has_or(l) for l in rule.body):
        return [rule]
    choices = [alternatives(l) for l in rule.body]
    pos = rule.body_pos or tuple((rule.line, rule.col) for _ in rule.body)
    return [Rule(rule.head, tuple(c), rule.line, rule.col, pos) for c in product(*choices)]


def _has_or(lit) -> bool:
    if not isinstance(lit, tuple):
        return False
    if lit[0] == "or":
        return True
    return lit[0] == "not" and _has_or(lit[1])


def literal_atom(lit):
    """``(sentence, positive)`` for a sentence or a negated sentence; None for distinct."""
    if isinstance(lit, tuple) and lit[0] == "distinct":
        return None
    if isinstance(lit, tuple) and lit[0] == "not":
        inner = lit[1]
        if isinstance(inner, tuple) and inner[0] in ("not", "distinct", "or"):
            return None
        return inner, False
    return lit, True


def positive_vars(body) -> set:
    out: list = []
    for lit in body:
        la = literal_atom(lit)
        if la and la[1]:
            variables(la[0], out)
    return set(out)


@dataclass
class Dependencies:
    """Edges head -> body relation, marked negative when through ``not``."""
    edges: dict = field(default_factory=dict)      # sig -> {sig: negative?}
    defined: set = field(default_factory=set)      # relations with a rule or fact
    used: set = field(default_factory=set)         # relations appearing in bodies
    scc_of: dict = field(default_factory=dict)     # sig -> component id
    components: list = field(default_factory=list)  # in dependency order (callees first)

    def recursive(self, sig) -> bool:
        comp = self.components[self.scc_of[sig]] if sig in self.scc_of else ()
        return len(comp) > 1 or sig in self.edges.get(sig, {})

    def same_cycle(self, a, b) -> bool:
        return a in self.scc_of and self.scc_of.get(a) == self.scc_of.get(b) and self.recursive(a)

    def reaches(self, start, targets) -> set:
        """Relations reachable from ``start`` (following body edges) that are in ``targets``."""
        seen, todo = {start}, [start]
        while todo:
            s = todo.pop()
            for t in self.edges.get(s, ()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen & set(targets)

    def depending_on(self, roots) -> set:
        """Every relation that (transitively) depends on one of ``roots``."""
        rev: dict = {}
        for h, bs in self.edges.items():
            for b in bs:
                rev.setdefault(b, set()).add(h)
        seen, todo = set(roots), list(roots)
        while todo:
            s = todo.pop()
            for h in rev.get(s, ()):
                if h not in seen:
                    seen.add(h)
                    todo.append(h)
        return seen


def dependencies(rules: list[Rule]) -> Dependencies:
    d = Dependencies()
    for r in rules:
        for rr in expand_or(r):
            h = signature(rr.head)
            d.defined.add(h)
            out = d.edges.setdefault(h, {})
            for lit in rr.body:
                la = literal_atom(lit)
                if la is None:
                    continue
                s = signature(la[0])
                d.used.add(s)
                out[s] = out.get(s, False) or not la[1]
    nodes = set(d.edges) | d.used
    for n in nodes:
        d.edges.setdefault(n, {})
    d.components = strongly_connected(sorted(nodes), d.edges)
    for i, comp in enumerate(d.components):
        for s in comp:
            d.scc_of[s] = i
    return d


def strongly_connected(nodes, edges) -> list[list]:
    """SCCs in reverse topological order of the head->body graph (callees first)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def dependency_path(edges: dict, start, targets: set) -> list | None:
    """Shortest dependency path from ``start`` to any of ``targets`` (BFS), or None."""
    parent = {start: None}
    todo = [start]
    for s in todo:
        for t in sorted(edges.get(s, ())):
            if t in parent:
                continue
            parent[t] = s
            if t in targets:
                path = [t]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1]
            todo.append(t)
    return None


HINTS = ("base", "input")


def drop_state_dependent_hints(rules: list, source: str = "<rules>") -> tuple[list, list]:
    """``base`` and ``input`` are hints a player can do without.  Where one of their rules
    depends on the state (``true``) or another state word, which GDL forbids, every rule of
    that relation is dropped with a warning and the game is played without it, as ggp-base
    plays it (its reasoners never read them).  Returns the rules kept and the warnings."""
    suspects = [r for r in rules if r.body and isinstance(r.head, tuple) and r.head[0] in HINTS]
    if not suspects:
        return rules, []
    deps = dependencies(rules)
    by_name: dict = defaultdict(list)
    for sig in deps.edges:
        by_name[sig[0]].append(sig)
    targets = {sig for w in STATE_WORDS for sig in by_name.get(w, ())}
    drop: dict = {}
    for r in suspects:
        name = r.head[0]
        if name in drop:
            continue
        path = dependency_path(deps.edges, (name, len(r.head) - 1), targets) if targets else None
        if path:
            drop[name] = (r, path)
    if not drop:
        return rules, []
    warnings = []
    for name, (r, path) in sorted(drop.items(), key=lambda kv: (kv[1][0].line, kv[1][0].col)):
        n = sum(1 for q in rules if (q.head if isinstance(q.head, str) else q.head[0]) == name)
        chain = " -> ".join(s[0] for s in path)
        via = f" (through {chain})" if len(path) > 2 else ""
        warnings.append(Problem(
            "warning", f"{name} depends on {path[-1][0]}{via}, which GDL forbids; {name} is only a "
                       f"hint players can do without, so its {n} rule{'' if n == 1 else 's'} "
                       f"{'is' if n == 1 else 'are'} dropped and the game is played without it, "
                       f"as ggp-base does", source, r.line, r.col))
    kept = [q for q in rules if (q.head if isinstance(q.head, str) else q.head[0]) not in drop]
    return kept, warnings
