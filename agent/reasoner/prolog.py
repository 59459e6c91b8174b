"""The reference reasoner: GDL translated to SWI-Prolog and queried through pyswip.

Safety: no game symbol ever reaches Prolog.  Every constant, function and relation is
renamed to a generated identifier (``s12``, ``r3``) before any Prolog text is written, so a
rule named ``halt``, ``shell`` or ``assert`` is just ``r7`` to Prolog, and quoted-atom tricks
(``'q'``, ``0'a``, ``a\\b``) are data in a Python table, never Prolog syntax.

Semantics follow ggp-base's prover: ``or`` is expanded, ``not``/``distinct`` are moved to just
after the positive literal that binds their variables (negation as failure, ``\\==``),
recursive relations are tabled (so left recursion and cycles terminate), and the state and
the joint move are passed as data (lists) to the relations that depend on them, so nothing
is asserted or retracted per state (a tabled one reads them from the query instead, so that
its tables do not hold them: ``PrologReasoner._keyed_text``).

Limits: every query runs under an inference limit, a wall-clock limit and Prolog's stack
limit, and a tabled answer may not grow past ``MAX_TABLE_ANSWER_SIZE`` cells; a runaway query
raises ``ReasonerError`` with the query named instead of hanging or killing the process.

pyswip is not thread-safe: Prolog is owned by the first thread that creates a reasoner in
the process; using it from another thread raises ``ReasonerError``.
"""
from __future__ import annotations

import itertools
import os
import re
import tempfile
import threading

from gdl.analysis import DOES_SIG, TRUE_SIG, dependencies, expand_or, literal_atom, positive_vars
from gdl.kif import Description, Rule
from gdl.terms import Term, canonical_sorted, signature, variables

from .statemachine import (BrokenRules, InvalidQuery, PlayoutCap, ReasonerError, ResourceLimit,
                           RulesRefused, UnsupportedRules, goal_int)

DEFAULT_INFERENCE_LIMIT = 200_000_000
PROBE_INFERENCES = 20_000_000
STACK_LIMIT_BYTES = 2 * 1024 ** 3
# Why both of these exist: SWI-Prolog's tabling does the work of storing and completing answers
# in C without counting inferences, so a recursive relation whose answers grow without bound
# ((<= (nat (s ?x)) (nat ?x))) ran on for over ten minutes, far under the inference limit
# (found by tests/test_prolog.py).  A tabled answer larger than this many cells raises a
# resource error instead, within about a second (no GDL game comes near the size: the
# recursion restriction keeps terms bounded) ...
MAX_TABLE_ANSWER_SIZE = 10_000
# ... and every query of a PrologReasoner also has a wall-clock limit, as a last safety net.
DEFAULT_TIME_LIMIT = 120.0

_API = r"""
:- module(gdl_api, [gdl_run/5, gdl_load/2]).
:- use_module(library(time)).
% gdl_run(+Module, +Goal, +Limit, +Seconds, -Outcome): Outcome is ok, failed, limit (inferences),
% time (wall clock; Seconds =< 0: no time limit) or error(Kind, E), Kind classifying E.
gdl_run(M, G, Limit, Secs, Out) :-
    catch(( ( Secs > 0 -> call_with_time_limit(Secs, gdl_inf(M:G, Limit, R)) ; gdl_inf(M:G, Limit, R) )
            -> ( R == inference_limit_exceeded -> Out = limit ; Out = ok )
            ;  Out = failed ),
          E, ( E == time_limit_exceeded -> Out = time ; gdl_kind(E, K), Out = error(K, E) )).
gdl_inf(G, Limit, R) :- call_with_inference_limit(G, Limit, R).
gdl_kind(gdl_error(playout_cap(_)), playout) :- !.
gdl_kind(gdl_error(no_legal_move(_)), broken) :- !.
gdl_kind(gdl_error(unsafe_rule(_)), unsafe) :- !.
gdl_kind(error(resource_error(tripwire(max_table_answer_size, _)), _), table) :- !.
gdl_kind(error(resource_error(table_space), _), table) :- !.
gdl_kind(error(resource_error(_), _), stack) :- !.
gdl_kind(_, error).
% gdl_outcome(+Outcome, -O, -Kind, -Detail): an outcome as atoms for the Python side.
gdl_outcome(error(playout, gdl_error(playout_cap(C))), error, playout, C) :- !.
gdl_outcome(error(K, E), error, K, X) :- !, format(atom(X), '~q', [E]).
gdl_outcome(O, O, none, '').

% gdl_load(+File, -Messages): load File; Messages lists every error and warning printed or
% raised while loading, as atoms 'Class Text' (Class: limit or refused).  SWI-Prolog reports a clause it cannot take (more than
% 1024 arguments, say) and loads the rest: the caller refuses the program when the list is
% not empty.  The hook also keeps these messages off stderr.
:- dynamic loading/0, load_msg/2.
:- multifile user:message_hook/3.
:- dynamic user:message_hook/3.
user:message_hook(Term, Kind, Lines) :-
    gdl_api:loading, ( Kind == error ; Kind == warning ), !,
    with_output_to(string(S0), forall(member(X, Lines), gdl_api:line_part(X))),
    ( source_location(_, N) -> format(string(S), 'line ~w: ~s', [N, S0]) ; S = S0 ),
    ( Term = error(Formal, _), ( Formal = representation_error(_) ; Formal = resource_error(_) )
    -> Class = limit ; Class = refused ),
    assertz(gdl_api:load_msg(Class, S)).
line_part(Fmt-Args) :- !, catch(format(Fmt, Args), _, true).
line_part(nl) :- !, nl.
line_part(X) :- atomic(X), !, write(X).
line_part(_).
gdl_load(File, Msgs) :-
    retractall(load_msg(_, _)),
    setup_call_cleanup(assertz(loading),
                       catch(load_files(File, [silent(true)]), E, print_message(error, E)),
                       retractall(loading)),
    findall(A, (retract(load_msg(K, S)), format(atom(A), '~w ~w', [K, S])), Msgs).
"""

_owner_lock = threading.Lock()
_owner_thread: int | None = None
_prolog = None
_module_ids = itertools.count(1)


def _engine():
    """The process's Prolog engine, created once, owned by the calling thread."""
    global _owner_thread, _prolog
    with _owner_lock:
        me = threading.get_ident()
        if _owner_thread is None:
            from pyswip import Prolog   # libswipl (about 0.1 s): the grounder reads this module's helpers without it
            _prolog = Prolog()
            _consult_text(_prolog, _API, checked=False)
            list(_prolog.query(f"set_prolog_flag(stack_limit, {STACK_LIMIT_BYTES})"))
            list(_prolog.query(f"set_prolog_flag(max_table_answer_size, {MAX_TABLE_ANSWER_SIZE}), "
                               f"set_prolog_flag(max_table_answer_size_action, error)"))
            _owner_thread = me
        elif _owner_thread != me:
            raise ReasonerError("the Prolog engine belongs to another thread of this process; pyswip "
                                "is not thread-safe, so run each reasoner in the thread (or process) "
                                "that created the first one")
        return _prolog


def set_memory_limits(stack_limit: int | None = None, table_space: int | None = None) -> None:
    """Set SWI-Prolog's stack limit and table space (bytes) for this process's engine; the
    server sets them per worker process from its memory cap."""
    prolog = _engine()
    for flag, value in (("stack_limit", stack_limit), ("table_space", table_space)):
        if value is not None:
            list(prolog.query(f"set_prolog_flag({flag}, {int(value)})"))


def _consult_text(prolog, text: str, what: str = "the rules", checked: bool = True) -> None:
    """Load ``text`` into Prolog.  ``checked``: any error or warning on load refuses it
    (``UnsupportedRules`` for a limit of SWI-Prolog, else ``RulesRefused``), since SWI-Prolog
    skips a clause it cannot take and loads the rest: the game would silently change."""
    fd, path = tempfile.mkstemp(suffix=".pl", prefix="gdl_")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        if not checked:  # our own fixed API text
            list(prolog.query(f"load_files('{path}', [silent(true)])"))
            return
        res = list(prolog.query(f"gdl_api:gdl_load('{path}', Ms)", maxresult=1))
    finally:
        os.unlink(path)
    msgs = [] if not res else [_load_message(m, path) for m in res[0]["Ms"]]
    if msgs:
        cls = UnsupportedRules if any(kind == "limit" for kind, _ in msgs) else RulesRefused
        more = len(msgs) - 3
        raise cls(f"Prolog refused {what} on load: " + "; ".join(text for _, text in msgs[:3])
                  + (f" (and {more} more message{'s' * (more > 1)})" if more > 0 else ""))


def _load_message(m, path: str) -> tuple:
    """(class, text on one line naming no temporary file) from gdl_load's 'Class Text'."""
    m = m.decode() if isinstance(m, bytes) else str(m)
    kind, _, text = m.partition(" ")
    return kind, " ".join(text.replace(path, "<program>").split())


# Every run of other characters is a token too: nothing unexpected is skipped silently.
TOKEN = re.compile(r"[()\[\],]|[^\s()\[\],]+")


def new_module_name(kind: str = "game") -> str:
    return f"gdl_{kind}_{next(_module_ids)}"


def load_program(text: str) -> None:
    _consult_text(_engine(), text)


def reset_tables() -> None:
    try:
        list(_engine().query("abolish_all_tables"))
    except Exception:
        pass


def run_goal(module: str, goal: str, limit: int, what: str, seconds: float | None = None) -> str:
    """Run ``goal`` (which binds ``T`` to an atom) in ``module`` under an inference limit and,
    when ``seconds`` is given, a wall-clock limit.

    Returns T's text; raises naming ``what``: ResourceLimit (inferences, time, table, stack),
    PlayoutCap, BrokenRules (no legal move, a Prolog error in the rules), or ReasonerError."""
    if seconds is not None and seconds <= 0:
        raise ResourceLimit(f"no time left for {what}", "time", what)
    q = (f"gdl_api:gdl_run({module}, ({goal}), {limit}, {0 if seconds is None else round(seconds, 3)}, O0), "
         f"gdl_api:gdl_outcome(O0, O, K, X)")
    try:
        res = list(_engine().query(q, maxresult=1))
    except ReasonerError:
        raise
    except Exception as e:  # pyswip raises for Prolog-level failures outside our catch
        reset_tables()
        raise ReasonerError(f"Prolog failed on {what}: {e}") from None
    if not res:
        raise ReasonerError(f"Prolog gave no answer for {what}")
    out = str(res[0]["O"])
    if out == "ok":
        return str(res[0]["T"])
    reset_tables()
    if out == "limit":
        raise ResourceLimit(f"{what} exceeded {limit:,} inferences (runaway rules?)", "inferences", what)
    if out == "time":
        raise ResourceLimit(f"{what} took longer than {seconds:g} s (runaway rules?)", "time", what)
    if out == "failed":
        raise BrokenRules(f"{what} failed in Prolog")
    kind, detail = str(res[0]["K"]), str(res[0]["X"])
    if kind == "playout":
        raise PlayoutCap(int(detail))
    if kind == "table":
        raise ResourceLimit(f"{what}: a recursive relation derived an answer of over "
                            f"{MAX_TABLE_ANSWER_SIZE:,} cells (a term that grows without bound "
                            f"through recursion?)", "table", what)
    if kind == "stack":
        raise ResourceLimit(f"{what} ran out of Prolog stack (deep recursion or a huge answer "
                            f"set)", "stack", what)
    if kind == "unsafe":
        raise RulesRefused(f"{what}: an answer keeps a variable that no positive literal binds "
                           f"(an unsafe rule)")
    if kind == "broken":
        raise BrokenRules(f"{what}: a role has no legal move in a non-terminal state")
    raise BrokenRules(f"{what} raised a Prolog error: {detail[:300]}")


def ordered_body(body) -> list:
    """ggp-base's DistinctAndNotMover: each not/distinct goes right after the first
    positive literal that binds all its variables (or first, if already ground)."""
    positives = [l for l in body if (literal_atom(l) or (None, False))[1]]
    checks = [l for l in body if l not in positives]
    placed: list = []
    bound: set = set()
    pending = list(checks)

    def flush():
        for c in list(pending):
            if set(variables(c)) <= bound:
                placed.append(c)
                pending.remove(c)
    flush()
    for p in positives:
        placed.append(p)
        bound.update(variables(p))
        flush()
    return placed + pending  # leftovers are unsafe (the validator refuses such rules)


class Codec:
    """Game symbols <-> generated Prolog atoms (``s0``, ``s1``...), keyed by (name, arity) so
    the constant ``f`` and the zero-argument function ``(f)`` stay apart."""

    def __init__(self):
        self._sym: dict = {}       # (name, arity) -> generated atom
        self._unsym: dict = {}     # generated atom -> (name, arity)
        self._enc_cache: dict = {}
        self._dec_cache: dict = {}

    def atom(self, name: str, arity: int) -> str:
        key = (name, arity)
        a = self._sym.get(key)
        if a is None:
            a = f"s{len(self._sym)}"
            self._sym[key] = a
            self._unsym[a] = key
        return a

    def term_text(self, t: Term, var: dict) -> str:
        if isinstance(t, str):
            if t.startswith("?"):
                v = var.get(t)
                if v is None:
                    v = var[t] = f"V{len(var)}"
                return v
            return self.atom(t, -1)
        f = self.atom(t[0], len(t) - 1)
        if len(t) == 1:
            return f
        return f + "(" + ",".join(self.term_text(a, var) for a in t[1:]) + ")"

    def enc(self, t: Term) -> str:
        e = self._enc_cache.get(t)
        if e is None:
            if isinstance(t, str):
                key = (t, -1)
                e = self._sym.get(key)
                if e is None:  # a symbol the rules never mention: cannot be true or legal
                    e = self.atom(t, -1)
            else:
                e = self.atom(t[0], len(t) - 1)
                if len(t) > 1:
                    e += "(" + ",".join(self.enc(a) for a in t[1:]) + ")"
            self._enc_cache[t] = e
        return e

    def read_term(self, toks: list, pos: int, error) -> tuple:
        """One game term from Prolog's tokens at ``pos``: (term, next position).  Anything
        that is not a generated atom raises ``error`` (the caller's exception class)."""
        tok = toks[pos]
        pos += 1
        sym = self._unsym.get(tok)
        if sym is None:
            raise error(f"Prolog answered with {tok!r} where a game term belongs"
                        + (" (an unbound variable: a rule is unsafe)" if tok.startswith("_") else ""))
        name, ar = sym
        if pos < len(toks) and toks[pos] == "(":
            pos += 1
            args = []
            while True:
                a, pos = self.read_term(toks, pos, error)
                args.append(a)
                tok = toks[pos]
                pos += 1
                if tok == ")":
                    return (name,) + tuple(args), pos
        return ((name,) if ar == 0 else name), pos

    def decode(self, text: str):
        """Parse Prolog's ``~w`` output (generated atoms, lists, ``-`` pairs) into terms."""
        cached = self._dec_cache.get(text)
        if cached is not None:
            return cached
        toks = TOKEN.findall(text)
        pos = 0

        def parse():
            nonlocal pos
            if toks[pos] == "[":
                pos += 1
                items = []
                if toks[pos] == "]":
                    pos += 1
                    return items
                while True:
                    items.append(parse())
                    tok = toks[pos]
                    pos += 1
                    if tok == "]":
                        return items
            try:
                term, pos = self.read_term(toks, pos, BrokenRules)
            except BrokenRules as e:
                raise BrokenRules(f"{e}, in {text[:200]!r}") from None
            return term

        try:
            value = parse()
        except IndexError:
            raise BrokenRules(f"Prolog's answer ends early: {text[:200]!r}") from None
        if len(self._dec_cache) < 200_000:
            self._dec_cache[text] = value
        return value



class PrologReasoner:
    """State machine on SWI-Prolog (see ``statemachine.StateMachine``)."""

    def __init__(self, description: Description, inference_limit: int = DEFAULT_INFERENCE_LIMIT,
                 table: str = "auto", time_limit: float | None = DEFAULT_TIME_LIMIT):
        """``table``: which relations to table.  ``recursive`` (needed for termination) is the
        fastest for most games; ``all`` also memoises every state-dependent sub-query within one
        query, as ggp-base's prover does, which games like alexChess need (their goal rules
        re-derive full legal-move generation many times).  ``auto`` probes the initial state
        with a fixed inference budget and picks ``all`` only when ``recursive`` runs away.
        ``time_limit``: wall-clock seconds allowed to each query (None: no limit)."""
        if table == "auto":
            try:
                probe = PrologReasoner(description, PROBE_INFERENCES, table="recursive",
                                       time_limit=time_limit)
            except ReasonerError:
                raise
            try:
                probe._probe()
                table = "recursive"
            except ReasonerError:
                table = "all"
            finally:
                probe.close()
        self.table_policy = table
        self.prolog = _engine()
        self.inference_limit = inference_limit
        self.time_limit = time_limit
        self.module = new_module_name()
        self.roles: list = description.roles
        self.codec = Codec()
        self._rel: dict = {}       # relation signature -> generated predicate name
        program = self._translate(description.rules)
        self.closed = True  # until loaded: close() of a half-built reasoner is harmless
        try:
            _consult_text(self.prolog, program)
        except RulesRefused:
            self.closed = False
            self.close()  # the clauses Prolog did take
            raise
        self._roles_enc = [self.codec.enc(r) for r in self.roles]
        self.closed = False

    # ------------------------------------------------------------ translation
    def _pred(self, sig) -> str:
        p = self._rel.get(sig)
        if p is None:
            p = self._rel[sig] = f"r{len(self._rel)}"
        return p

    def _call_text(self, sentence: Term, var: dict) -> str:
        sig = signature(sentence)
        if sig == TRUE_SIG:
            return f"lists:member({self.codec.term_text(sentence[1], var)},S)"
        if sig == DOES_SIG:
            return (f"lists:member(d({self.codec.term_text(sentence[1], var)},"
                    f"{self.codec.term_text(sentence[2], var)}),M)")
        args = [self.codec.term_text(a, var) for a in sentence[1:]] if isinstance(sentence, tuple) else []
        if sig in self._dynamic:
            args += ["S", "M"]
        p = self._pred(sig)
        return p + ("(" + ",".join(args) + ")" if args else "")

    def _literal_text(self, lit, var: dict) -> str:
        if isinstance(lit, tuple) and lit[0] == "distinct":
            return f"{self.codec.term_text(lit[1], var)}\\=={self.codec.term_text(lit[2], var)}"
        if isinstance(lit, tuple) and lit[0] == "not":
            inner = lit[1]
            if isinstance(inner, tuple) and inner[0] == "distinct":  # (not (distinct a b)): a == b
                return f"{self.codec.term_text(inner[1], var)}=={self.codec.term_text(inner[2], var)}"
            return f"\\+ {self._literal_text(inner, var)}"
        return self._call_text(lit, var)

    def _translate(self, rules: list[Rule]) -> str:
        rules = [rr for r in rules for rr in expand_or(r)]
        deps = dependencies(rules)
        self._dynamic = deps.depending_on([TRUE_SIG, DOES_SIG]) - {TRUE_SIG, DOES_SIG}
        # Tabled relations that read the state are tabled without it (``_keyed_text``).
        self._keyed = {signature(r.head) for r in rules if signature(r.head) in self._dynamic
                       and self._tabled(signature(r.head), deps)}
        clauses: dict = {}
        for r in rules:
            hsig = signature(r.head)
            if hsig in (TRUE_SIG, DOES_SIG):
                continue  # invalid GDL (the validator says so); never a Prolog clause
            var: dict = {}
            if hsig in self._keyed:
                args = [self.codec.term_text(a, var) for a in r.head[1:]] if isinstance(r.head, tuple) else []
                head = f"{self._pred(hsig)}k({','.join(args + ['K'])})"
            else:
                head = self._call_text(r.head, var)
            body = [self._literal_text(l, var) for l in ordered_body(r.body)]
            if hsig in self._dynamic and not body:
                body = ["true"]
            if hsig in self._keyed:
                body = ["gdl_sm(K,S,M)"] + body
            text = head + (" :- " + ", ".join(body) if body else "") + "."
            clauses.setdefault(hsig, []).append(text)
        out = [f":- module({self.module}, []).", ":- style_check(-singleton)."]
        sigs = set(deps.edges) - {TRUE_SIG, DOES_SIG}
        for sig in ("init", 1), ("legal", 2), ("next", 1), ("terminal", -1), ("goal", 2), ("role", 1), ("sees", 2):
            sigs.add(sig)
        for sig in sorted(sigs):
            p = self._pred(sig)
            n = max(sig[1], 0) + (2 if sig in self._dynamic else 0)
            if sig not in clauses:
                out.append(f":- dynamic {p}/{n}.")  # undefined relations are simply false
            elif sig in self._keyed:
                out.append(f":- table {p}k/{n - 1}.")
            elif self._tabled(sig, deps):
                out.append(f":- table {p}/{n}.")
        self._dynamic_tabled = bool(self._keyed)
        for sig in sorted(clauses):
            if sig in self._keyed:
                out.append(self._keyed_text(sig))
            out.extend(clauses[sig])
        out.append(self._api_text())
        return "\n".join(out) + "\n"

    def _tabled(self, sig, deps) -> bool:
        if deps.recursive(sig):
            return True
        if self.table_policy == "all":
            return sig in self._dynamic
        if self.table_policy == "props":
            return sig in self._dynamic and sig[1] <= 0
        return False

    def _keyed_text(self, sig) -> str:
        """The entry of a tabled relation that reads the state: its table holds (arguments,
        K), K = 0 for the state alone (legal, terminal, goal: no joint move) and 1 for the state
        with the query's joint move (next, sees), and its clauses read the state and the move
        from the query's global variables (``gdl_sm``).  Tabled with the state and the move as
        arguments, every call variant copied the whole state into its table: battleship's
        percepts ask its recursive ``set`` in 19,000 variants of a 124-fluent state, over a
        gigabyte of table space for one query.  Within one query the state and the move are
        those of the query (every clause passes them on unchanged; the playout sets them at
        each step and abolishes the tables between steps), and the tables go after each query,
        so the key tells apart exactly what the arguments did."""
        p = self._pred(sig)
        a = [f"A{i}" for i in range(max(sig[1], 0))]
        return f"{p}({','.join(a + ['S', 'M'])}) :- ( M == [] -> K = 0 ; K = 1 ), {p}k({','.join(a + ['K'])})."

    def _api_text(self) -> str:
        def call(sig, args):
            a = list(args) + (["S", "[]"] if sig in self._dynamic else [])
            if sig in (("next", 1), ("sees", 2)) and sig in self._dynamic:
                a[-1] = "M"  # the two views of a joint move
            return self._pred(sig) + ("(" + ",".join(a) + ")" if a else "")
        legal = call(("legal", 2), ["R", "A"])
        goal = call(("goal", 2), ["R", "V"])
        term = call(("terminal", -1), [])
        # Each query sets its state and joint move for the keyed tables (``_keyed_text``).
        ks, km = f"{self.module}_s", f"{self.module}_m"
        get = (f"gdl_sm(0, S, []) :- nb_getval({ks}, S).\n"
               f"gdl_sm(1, S, M) :- nb_getval({ks}, S), nb_getval({km}, M).") if self._keyed else ""

        def set_(s, m):
            return f"nb_setval({ks}, {s}), nb_setval({km}, {m}), " if self._keyed else ""
        return f"""
{get}
q_init(T) :- S = [], M = [], {set_("[]", "[]")}findall(X, {call(("init", 1), ["X"])}, L), sort(L, L2), format(atom(T), '~w', [L2]).
q_legal(S, R, T) :- {set_("S", "[]")}findall(A, {legal}, L), sort(L, L2), format(atom(T), '~w', [L2]).
q_next(S, M, T) :- {set_("S", "M")}findall(X, {call(("next", 1), ["X"])}, L), sort(L, L2), format(atom(T), '~w', [L2]).
q_sees(S, M, R, T) :- {set_("S", "M")}findall(P, {call(("sees", 2), ["R", "P"])}, L), sort(L, L2), format(atom(T), '~w', [L2]).
q_terminal(S, T) :- {set_("S", "[]")}( {term} -> T = yes ; T = no ).
q_goals(S, Rs, T) :- {set_("S", "[]")}findall(Vs, (lists:member(R, Rs), findall(V, {goal}, Vs0), sort(Vs0, Vs)), G), format(atom(T), '~w', [G]).
q_playout(S0, Rs, Cap, T) :- {set_("S0", "[]")}playout(S0, Rs, 0, Cap, D, G), format(atom(T), '~w', [D-G]).
playout(S, Rs, D, Cap, D, G) :- {term}, !, findall(Vs, (lists:member(R, Rs), findall(V, {goal}, Vs0), sort(Vs0, Vs)), G).
playout(_, _, D, Cap, _, _) :- D >= Cap, !, throw(gdl_error(playout_cap(Cap))).
playout(S, Rs, D, Cap, DN, G) :- joint(Rs, S, M), {set_("S", "M")}findall(X, {call(("next", 1), ["X"])}, L), sort(L, S1),
    D1 is D + 1, {'abolish_all_tables,' if self._dynamic_tabled else ''} {set_("S1", "[]")}playout(S1, Rs, D1, Cap, DN, G).
joint([], _, []).
joint([R|Rs], S, [d(R,A)|Ms]) :- findall(A0, {legal.replace("A", "A0")}, L), sort(L, L2),
    ( L2 == [] -> throw(gdl_error(no_legal_move(R))) ; random_member(A, L2) ), joint(Rs, S, Ms).
"""

    # ------------------------------------------------------------ queries
    def _state_text(self, state) -> str:
        return "[" + ",".join(sorted(self.codec.enc(f) for f in state)) + "]"

    def _run(self, goal: str, what: str) -> str:
        if self.closed:
            raise InvalidQuery("the reasoner was closed")
        try:
            return run_goal(self.module, goal, self.inference_limit, what, self.time_limit)
        finally:
            if self._dynamic_tabled:
                reset_tables()

    def initial_state(self) -> frozenset:
        return frozenset(self.codec.decode(self._run("q_init(T)", "the initial state")))

    def legal_moves(self, state, role_index: int) -> list:
        role = self._roles_enc[role_index]
        moves = self.codec.decode(self._run(f"q_legal({self._state_text(state)},{role},T)",
                                       f"legal moves of {self.roles[role_index]}"))
        return canonical_sorted(moves)

    def next_state(self, state, joint_move) -> frozenset:
        joint_move = tuple(joint_move)
        if len(joint_move) != len(self.roles):
            raise InvalidQuery(f"a joint move needs one move per role ({len(self.roles)}), "
                               f"got {len(joint_move)}")
        m = ",".join(f"d({r},{self.codec.enc(a)})" for r, a in zip(self._roles_enc, joint_move))
        return frozenset(self.codec.decode(self._run(f"q_next({self._state_text(state)},[{m}],T)", "the next state")))

    def sees(self, state, joint_move, role_index: int) -> frozenset:
        """The percepts of ``role_index`` when ``joint_move`` is made in ``state`` (GDL-II)."""
        joint_move = tuple(joint_move)
        if len(joint_move) != len(self.roles):
            raise InvalidQuery(f"a joint move needs one move per role ({len(self.roles)}), "
                               f"got {len(joint_move)}")
        m = ",".join(f"d({r},{self.codec.enc(a)})" for r, a in zip(self._roles_enc, joint_move))
        role = self._roles_enc[role_index]
        return frozenset(self.codec.decode(self._run(f"q_sees({self._state_text(state)},[{m}],{role},T)",
                                                     f"the percepts of {self.roles[role_index]}")))

    def is_terminal(self, state) -> bool:
        return self._run(f"q_terminal({self._state_text(state)},T)", "terminal") == "yes"

    def goal_values(self, state) -> list:
        roles = "[" + ",".join(self._roles_enc) + "]"
        raw = self.codec.decode(self._run(f"q_goals({self._state_text(state)},{roles},T)", "goal values"))
        return [sorted(goal_int(v) for v in vs) for vs in raw]

    def random_playout(self, state, cap: int = 10_000, seed: int | None = None):
        """One uniformly random playout run inside Prolog: (joint moves made, goal values)."""
        if seed is not None:
            list(_engine().query(f"set_random(seed({int(seed)}))"))
        roles = "[" + ",".join(self._roles_enc) + "]"
        text = self._run(f"q_playout({self._state_text(state)},{roles},{cap},T)", "a random playout")
        depth_text, _, goals_text = text.partition("-")
        goals = self.codec.decode(goals_text)
        return int(depth_text), [sorted(goal_int(v) for v in vs) for vs in goals]

    def _probe(self) -> None:
        s = self.initial_state()
        moves = [self.legal_moves(s, i) for i in range(len(self.roles))]
        self.is_terminal(s)
        self.goal_values(s)
        if all(moves):
            self.next_state(s, [m[0] for m in moves])

    def close(self) -> None:
        """Drop the game's predicates from the Prolog engine."""
        if self.closed:
            return
        self.closed = True
        try:
            list(_engine().query(
                f"forall(current_predicate({self.module}:P/N), (functor(H,P,N), "
                f"(predicate_property({self.module}:H, imported_from(_)) -> true ; abolish({self.module}:P/N))))"))
            reset_tables()
        except Exception:
            pass

