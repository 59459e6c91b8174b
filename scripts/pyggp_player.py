#!/usr/bin/env python3
"""pyggp's MO-ISMCTS agent as a GGP player over HTTP, in Dresden's GDL-II form.

Runs in a virtual environment where pyggp (github.com/Entze/pyggp, MIT) is installed, never in
the project's: pyggp is not a dependency of the project; ``scripts/bench_gdl2_pyggp.py``
starts this script with that environment's python.  Standard library and pyggp only.

pyggp reads rules in its own Prolog syntax, not KIF, so the adapter is given pyggp's original
sheet of the game (``--rules``, e.g. ``src/games/minipoker.gdl``) and checks on START that
the sheet sent (the project's KIF conversion, ``../shared/corpus/gdl2``) names the same
roles.  The conversion keeps pyggp's terms, so the percepts a GDL-II referee sends for step k
(``sees`` of the state before the move and the move, written there over ``next_true``) are
exactly pyggp's *view* of state k+1 (``sees`` over ``true``), and moves read the same both
ways.  Messages and their translation:

- ``(START id role rules start play)``: a fresh agent, ``prepare_match`` with pyggp's clock
  model of a GGP clock (``GameClock.Configuration(total_time=0, delay=clock - margin)``),
  which builds pyggp's books when the start clock leaves it more than 10 s.
- ``(PLAY id NIL)``: step 0; our view of the initial state comes from pyggp's interpreter
  (the initial state is common knowledge: a referee sends no percepts before the first move).
- ``(PLAY id (P1 ... ))``: our percepts of the last step become our view of the new state.
  As pyggp's own match loop does (``pyggp.match``), the agent is asked for a move
  (``calculate_move(ply, 0, view)``) only when its view shows it holding ``control``; else the
  reply is ``noop`` (the KIF conversion gives roles out of control exactly that move).
- ``(STOP id ...)``: ``conclude_match`` with the last view; ``(ABORT id)``: ``abort_match``.
- ``(INFO)``: ``available``, or ``busy`` during a match.

Nothing is sent to the agent that its role was not sent by the referee.  Each decision's
step, search iterations (MO-ISMCTS steps, counted around the agent's own ``step``) and seconds
are appended as one JSON line to ``--stats`` when given.

    PYGGP_VENV/bin/python scripts/pyggp_player.py --rules PYGGP_SRC/src/games/nim.gdl \
        --port 9301 --stats STATS.jsonl
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

try:
    import pyggp.game_description_language as gdl
    from pyggp.agents import MOISMCTSAgent
    from pyggp.gameclocks import GameClock
    from pyggp.interpreters import ClingoInterpreter
except ImportError as exc:  # run with the wrong python
    sys.exit(f"pyggp_player.py: cannot import pyggp ({exc}); run it with the python of a "
             "virtual environment where pyggp is installed")


# ---------------------------------------------------------------- messages (s-expressions)

def tokens(text: str):
    """KIF tokens: parentheses and atoms; ``;`` comments dropped."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == ";":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "()":
            out.append(c)
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "();":
                j += 1
            out.append(text[i:j])
            i = j
    return out


def parse_all(text: str) -> list:
    """Every top-level term of ``text``: atoms as strings, compound terms as lists."""
    stack: list[list] = [[]]
    for tok in tokens(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


def to_infix(term) -> str:
    """A KIF term as pyggp's Prolog-style text: ``(cell 1 2 x)`` -> ``cell(1,2,x)``.
    Lower case: Dresden's manager upper-cases sheets, pyggp's names are lower case."""
    if isinstance(term, str):
        return term.lower()
    if not term or not isinstance(term[0], str):
        raise ValueError(f"not a GDL term: {term!r}")
    if len(term) == 1:
        return term[0].lower()
    return f"{term[0].lower()}({','.join(to_infix(a) for a in term[1:])})"


def to_kif(sub) -> str:
    """A pyggp subrelation (a move) as KIF text: ``cell(1,2)`` -> ``(cell 1 2)``."""
    symbol = sub.symbol
    if isinstance(symbol, gdl.Relation):
        if symbol.name is None:
            raise ValueError(f"pyggp tuple {sub} has no KIF form")
        if not symbol.arguments:
            return symbol.name
        return "(" + " ".join([symbol.name, *(to_kif(a) for a in symbol.arguments)]) + ")"
    return str(symbol)  # a number or a string


def percepts_view(arg) -> frozenset:
    """The percepts of a PLAY/STOP message as a pyggp view (a set of subrelations)."""
    if isinstance(arg, str):  # NIL: nothing was sent
        return frozenset()
    return frozenset(gdl.parse_subrelation(to_infix(p)) for p in arg)


# ---------------------------------------------------------------- one match

class Match:
    def __init__(self, ruleset, match_id: str, role: str, start: float, play: float, margin: float,
                 stats: Path | None, label: str, skip_book: bool = False):
        self.id = match_id
        self.role = gdl.parse_subrelation(role.lower())
        self.ply = 0
        self.stats = stats
        self.label = label
        self.view = None
        self.agent = MOISMCTSAgent(skip_book=skip_book)
        # iterations of the search, counted around the agent's own step (its repeater calls
        # self.step, looked up when prepare_match builds it)
        self.iterations = 0
        inner = self.agent.step

        def counted():
            self.iterations += 1
            inner()
        self.agent.step = counted
        self.agent.set_up()
        startclock = GameClock.Configuration(total_time=0.0, increment=0.0, delay=max(0.5, start - margin))
        self.playclock = GameClock.Configuration(total_time=0.0, increment=0.0, delay=max(0.5, play - margin))
        t0 = time.monotonic()
        self.agent.prepare_match(self.role, ruleset, startclock, self.playclock)
        self.start_seconds = time.monotonic() - t0
        books = self.agent.books or {}
        self.book_entries = len(books.get(self.role) or {})

    def in_control(self, view) -> bool:
        return any(s.symbol.matches_signature(name="control", arity=1) and s.symbol.arguments[0] == self.role
                   for s in view if isinstance(s.symbol, gdl.Relation))

    def play(self, percepts) -> str:
        if self.ply == 0:
            interp = self.agent.interpreter
            view = interp.get_sees_by_role(interp.get_init_state(), self.role)
        else:
            view = percepts_view(percepts)
        self.view = view
        ply = self.ply
        self.ply += 1
        if not self.in_control(view):
            return "noop"
        self.iterations = 0
        t0 = time.monotonic()
        row = {"match": self.id, "game": self.label, "role": str(self.role), "ply": ply,
               "clock": self.playclock.delay}
        try:
            move = self.agent.calculate_move(ply, 0, view)
            row["move"] = str(move)
        except Exception as exc:  # recorded, then the manager hears of it as a bad reply
            row["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            row.update(iterations=self.iterations, seconds=round(time.monotonic() - t0, 3),
                       book_entries=self.book_entries)
            if self.stats is not None:
                with open(self.stats, "a") as f:
                    f.write(json.dumps(row) + "\n")
        return to_kif(move)

    def stop(self, percepts) -> None:
        view = percepts_view(percepts) if self.ply > 0 else self.view
        try:
            self.agent.conclude_match(view)
        finally:
            self.agent.tear_down()

    def abort(self) -> None:
        try:
            self.agent.abort_match()
        finally:
            self.agent.tear_down()


class Player:
    def __init__(self, rules: Path, margin: float, stats: Path | None, skip_book: bool = False):
        self.skip_book = skip_book
        self.rules_path = rules
        self.ruleset = gdl.parse(rules.read_text())
        self.roles = {str(r).lower() for r in ClingoInterpreter.from_ruleset(self.ruleset).get_roles()}
        self.margin = margin
        self.stats = stats
        self.lock = threading.Lock()
        self.match: Match | None = None

    def handle(self, body: str) -> str:
        terms = parse_all(body)
        if len(terms) != 1 or not isinstance(terms[0], list) or not terms[0]:
            return "error"
        msg = terms[0]
        kind = str(msg[0]).upper()
        if kind == "INFO":
            return "busy" if self.match is not None else "available"
        if kind == "PREVIEW":
            return "ready"
        with self.lock:
            if kind == "START":
                return self.start(msg)
            if kind == "PLAY":
                m = self.current(msg)
                return m.play(msg[2] if len(msg) > 2 else "NIL") if m else "NIL"
            if kind == "STOP":
                m = self.current(msg)
                if m:
                    self.match = None
                    m.stop(msg[2] if len(msg) > 2 else "NIL")
                return "done"
            if kind == "ABORT":
                m = self.current(msg)
                if m:
                    self.match = None
                    m.abort()
                return "done"
        return "error"

    def current(self, msg) -> Match | None:
        if self.match is None or len(msg) < 2 or str(msg[1]) != self.match.id:
            log.warning("message for a match not played here: %.80s", msg[:2])
            return None
        return self.match

    def start(self, msg) -> str:
        if len(msg) < 6:
            return "error"
        _, match_id, role, rules, start, play = msg[:6]
        sent = {str(t[1]).lower() for t in rules if isinstance(t, list) and len(t) == 2
                and str(t[0]).lower() == "role"}
        mine = self.roles
        if sent != mine:
            log.error("START %s: the sheet sent has roles %s, pyggp's sheet %s has %s: wrong --rules",
                      match_id, sorted(sent), self.rules_path.name, sorted(mine))
            return "error"
        if self.match is not None:
            self.match.abort()
        self.match = Match(self.ruleset, str(match_id), str(role), float(start), float(play), self.margin,
                           self.stats, self.rules_path.stem, self.skip_book)
        log.info("START %s as %s: prepared in %.1f s, book entries %d", match_id, role,
                 self.match.start_seconds, self.match.book_entries)
        return "ready"


log = logging.getLogger("pyggp_player")


def check_walks(rules: Path, walks_file: Path) -> int:
    """Check the translation on walks a GDL-II referee recorded on the KIF conversion (JSON:
    ``{"roles": [...], "walks": [[{"moves": [KIF per role], "sees": [[KIF percepts] per role]}]]}``):
    replayed on pyggp's interpreter with pyggp's sheet, every role's percepts of a step must be
    pyggp's view of the next state, every move of a role out of control ``noop``, and every
    move must read back to the same KIF.  Prints the counts; exit code 1 on any difference."""
    from pyggp.engine_primitives import Turn
    data = json.loads(walks_file.read_text())
    interp = ClingoInterpreter.from_ruleset(gdl.parse(rules.read_text()))
    roles = [gdl.parse_subrelation(to_infix(parse_all(r)[0])) for r in data["roles"]]
    views = moves = bad = 0
    for walk in data["walks"]:
        state = interp.get_init_state()
        for step in walk:
            control = interp.get_roles_in_control(state)
            turn = {}
            for role, text in zip(roles, step["moves"]):
                term = parse_all(text)[0]
                if role not in control:
                    bad += text.strip().lower() != "noop"
                    continue
                move = gdl.parse_subrelation(to_infix(term))
                bad += parse_all(to_kif(move))[0] != term
                moves += 1
                turn[role] = move
            state = interp.get_next_state(state, Turn(turn))
            for role, percepts in zip(roles, step["sees"]):
                views += 1
                if percepts_view(parse_all("(" + " ".join(percepts) + ")")[0]) != interp.get_sees_by_role(state, role):
                    bad += 1
    print(json.dumps({"rules": rules.name, "views": views, "moves": moves, "differences": bad}))
    return 1 if bad else 0


def make_handler(player: Player):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, fmt, *args):  # requests are logged by the player, not per line
            pass

        def _reply(self, text: str) -> None:
            data = text.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/acl")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n).decode("utf-8", "replace")
            try:
                reply = player.handle(body)
            except Exception as exc:  # pyggp failed: the manager substitutes a move; keep serving
                log.error("pyggp failed on %.60s: %s: %s", body, type(exc).__name__, exc)
                log.debug("traceback", exc_info=True)
                reply = "error"
            try:
                self._reply(reply)
            except OSError:  # the manager stopped waiting (the reply came after its clock)
                log.warning("reply %r to %.60s came too late: the manager had closed the connection", reply, body)

        def do_GET(self):
            self._reply("available")

        def do_OPTIONS(self):
            self._reply("")

    return Handler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", required=True, type=Path,
                    help="pyggp's own sheet of the game (Prolog syntax, its src/games/*.gdl)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9301)
    ap.add_argument("--margin", type=float, default=0.5,
                    help="seconds kept back from each clock for HTTP (default 0.5)")
    ap.add_argument("--stats", type=Path, help="append one JSON line per decision here")
    ap.add_argument("--skip-book", action="store_true",
                    help="pyggp's skip_book: no book from the start clock, so every decision searches "
                         "(by default pyggp builds one when the start clock leaves it more than 10 s)")
    ap.add_argument("--check-walks", type=Path, metavar="JSON",
                    help="check the translation on a referee's walks (see check_walks) and exit")
    ap.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s pyggp_player %(message)s")
    logging.getLogger("pyggp").setLevel(logging.WARNING)  # pyggp's DEBUG level adds 1 s buffers
    if not args.rules.is_file():
        print(f"pyggp_player.py: no rules sheet at {args.rules}", file=sys.stderr)
        return 2
    if args.check_walks:
        return check_walks(args.rules, args.check_walks)
    try:
        player = Player(args.rules, args.margin, args.stats, args.skip_book)
    except Exception as exc:
        print(f"pyggp_player.py: pyggp cannot read {args.rules}: {exc}", file=sys.stderr)
        return 2
    try:
        server = ThreadingHTTPServer((args.host, args.port), make_handler(player))
    except OSError as exc:
        print(f"pyggp_player.py: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    log.info("pyggp %s MO-ISMCTS on http://%s:%d/ with %s (pid %d)",
             getattr(sys.modules.get("pyggp"), "__version__", "?"), args.host, args.port, args.rules.name,
             os.getpid())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
