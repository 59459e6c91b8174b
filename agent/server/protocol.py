"""GGP protocol messages: parse what game managers send, format what they expect back.

Accepted dialects (ggp-facts sections 1-2):
  * ggp-base / Tiltyard: ``( START id role (( role x ) ...) 60 15)``, ``( PLAY id NIL )``,
    ``( PLAY id (m1 m2 ) )``, ``( STOP ... )``, ``( ABORT id )``, ``( INFO )``, ``( PREVIEW rules clock )``;
  * Dresden: everything upper case, and the 5-element ``(PLAY id turn lastmove percepts)``.
Keywords are case-insensitive; the moves slot is ``NIL`` (or any atom) or a list; only the
first s-expression counts and ``;`` is an ordinary character (managers never send comments).

Nothing here touches a reasoner: this is pure text handling, safe on hostile input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from gdl.kif import GdlError, Node, parse_term, read_first
from gdl.terms import Term, render_spaced

KINDS = ("info", "preview", "start", "play", "stop", "abort")


class ProtocolError(ValueError):
    """A message that cannot be understood; the text says what is wrong."""


@dataclass
class Move:
    """One move of a joint move as received: ``text`` is ggp-base's spaced rendering (the
    record form), ``term`` the parsed term, or None when the move does not parse."""
    text: str
    term: Term | None


@dataclass
class Message:
    kind: str
    match_id: str | None = None
    role: str | None = None
    rules_text: str | None = None          # the rules list exactly as received, parentheses included
    rules_nodes: list | None = field(default=None, repr=False)  # not built: see _scan_rules_message
    start_clock: float | None = None
    play_clock: float | None = None
    preview_clock: float | None = None
    moves: list | None = None              # list[Move]; None for NIL (first PLAY, STOP at start)
    did: list | None = None                # Dresden 5-element form: [(role text, Move)] from DID percepts
    turn: int | None = None                # Dresden 5-element PLAY/STOP
    last_move: Move | None = None          # Dresden: our move as executed
    percepts: list | None = None           # Dresden: percept texts (GDL-II)


def decode_body(data: bytes) -> str:
    """Bodies are ASCII in practice; UTF-8 is tried first, latin-1 never fails."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _line_offsets(text: str) -> list[int]:
    """Start offset of every line, numbered as the KIF tokenizer numbers them (CR, LF, CRLF)."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            starts.append(i + 1)
        elif c == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        i += 1
    return starts


def _offset(starts: list[int], node: Node) -> int:
    return starts[node.line - 1] + node.col - 1


def _atom(node: Node, what: str) -> str:
    if not node.is_atom:
        raise ProtocolError(f"{what} must be an atom, found a list")
    return node.text


def _clock(node: Node, what: str) -> float:
    if not node.is_atom:
        raise ProtocolError(f"{what} must be a number of seconds, found a list")
    try:
        value = float(node.text)
    except ValueError:
        raise ProtocolError(f"{what} must be a number of seconds, found {node.text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ProtocolError(f"{what} must be a finite number, found {node.text!r}")
    return value


# A match clock must be positive; more than a day is not a clock a manager means (and would
# put deadlines past what the event loop's timers can hold sensibly).
MAX_CLOCK = 24 * 3600.0


def _match_clock(node: Node, what: str) -> float:
    value = _clock(node, what)
    if not 0 < value <= MAX_CLOCK:
        raise ProtocolError(f"{what} must be a number of seconds in (0, {MAX_CLOCK:.0f}], found {node.text!r}")
    return value


MAX_MOVE_DEPTH = 100  # deeper terms are refused before any recursive code sees them


def depth(node: Node) -> int:
    """Nesting depth, computed without recursion (hostile input can nest arbitrarily)."""
    best, todo = 0, [(node, 1)]
    while todo:
        n, d = todo.pop()
        if not n.is_atom:
            best = max(best, d)
            todo.extend((c, d + 1) for c in n.items)
    return best


def node_text(node: Node) -> str:
    if depth(node) > MAX_MOVE_DEPTH:
        return "<too deeply nested>"
    return _node_text(node)


def _node_text(node: Node) -> str:
    return node.text if node.is_atom else "( " + " ".join(_node_text(n) for n in node.items) + " )"


def to_move(node: Node) -> Move:
    if depth(node) > MAX_MOVE_DEPTH:
        return Move("<too deeply nested>", None)
    try:
        term = parse_term(repr(node))
    except GdlError:
        return Move(node_text(node), None)
    if not _ground(term):
        return Move(render_spaced(term), None)
    return Move(render_spaced(term), term)


def _ground(t) -> bool:
    if isinstance(t, str):
        return not t.startswith("?")
    return all(_ground(a) for a in t[1:])


def _moves(node: Node) -> list | None:
    if node.is_atom:  # NIL, nil, or any atom: "no moves" (as ggp-base reads it)
        return None
    return [to_move(n) for n in node.items]


_RULES_MESSAGE = re.compile(r"[ \t\n\x0b\f\r]*\([ \t\n\x0b\f\r]*(start|preview)(?=[ \t\n\x0b\f\r()]|$)",
                            re.IGNORECASE)
_TOKEN = re.compile(rb"[ \t\n\x0b\f\r]*(?:([()])|([^ \t\n\x0b\f\r()]+))")
_CHUNK = 1 << 20


def _depth_reaches(data: np.ndarray, start: int, depth: int, target: int) -> int | None:
    """The first index ``i >= start`` where the parenthesis depth after ``data[i]`` is
    ``target`` (``depth``: the depth before ``data[start]``), or None.  Vectorised, in
    chunks: a 16 MiB START is scanned in well under a second, and no tree is built."""
    i, n, size = start, len(data), 4096
    while i < n:
        chunk = data[i:i + size]
        d = depth + np.cumsum((chunk == 40).astype(np.int32) - (chunk == 41).astype(np.int32), dtype=np.int64)
        hit = np.flatnonzero(d <= target)  # the depth moves by one per character
        if hit.size:
            return i + int(hit[0])
        depth = int(d[-1])
        i += size
        size = min(2 * size, _CHUNK)
    return None


def _scan_rules_message(text: str, kind: str) -> Message:
    """START and PREVIEW, which carry the rules (megabytes, from anyone): the message is
    split by scanning parentheses, the rules kept as text (the worker processes parse them).
    Building a tree of a huge START here held the event loop for seconds."""
    raw = text.encode("utf-8", "surrogatepass")
    data = np.frombuffer(raw, dtype=np.uint8)
    open_at = raw.index(b"(")
    end = _depth_reaches(data, open_at, 0, 0)
    if end is None:
        raise ProtocolError("not an s-expression: unmatched opening parenthesis (the message is never closed)")
    items: list = []   # (atom text, None) or (None, (begin, end)) for lists, top-level only
    pos = open_at + 1
    wanted = 3 if kind == "preview" else 6  # the keyword and its arguments; more are ignored
    while len(items) < wanted:
        m = _TOKEN.match(raw, pos, end)
        if m is None or m.group(1) == b")":
            break
        if m.group(2) is not None:
            items.append((m.group(2).decode("utf-8", "replace"), None))
            pos = m.end()
        else:
            begin = m.end() - 1
            close = _depth_reaches(data, begin, 1, 1)
            items.append((None, (begin, close + 1)))
            pos = close + 1
    args = items[1:]

    def atom(item, what):
        if item[0] is None:
            raise ProtocolError(f"{what} must be an atom, found a list")
        return item[0]

    def clock(item, what, check=_clock):
        if item[0] is None:
            raise ProtocolError(f"{what} must be a number of seconds, found a list")
        return check(Node(item[0], None, 0, 0), what)

    def rules(item, what):
        if item[0] is not None:
            raise ProtocolError(f"{what} must be a list")
        b, e = item[1]
        return raw[b:e].decode("utf-8", "replace").rstrip()

    if kind == "preview":
        if len(args) < 2:
            raise ProtocolError("PREVIEW needs rules and a clock")
        return Message("preview", rules_text=rules(args[0], "PREVIEW rules"),
                       preview_clock=clock(args[1], "preview clock"))
    if len(args) < 5:
        raise ProtocolError(f"START needs id, role, rules, start clock and play clock; found {len(args)} arguments")
    match_id = atom(args[0], "the match id")
    role = atom(args[1], "the role")
    rules_text = rules(args[2], "START rules")
    start_clock = clock(args[3], "start clock", _match_clock)
    play_clock = clock(args[4], "play clock", _match_clock)
    return Message("start", match_id=match_id, role=role, rules_text=rules_text,
                   start_clock=start_clock, play_clock=play_clock)


# Only START and PREVIEW carry rules; every other message is a few moves at most (a joint
# move of chess is under 200 bytes).  A longer one is refused before it is read: its tree would
# hold the server's interpreter as a huge START's did.
MAX_PLAIN_MESSAGE = 1024 * 1024


def parse_message(text: str) -> Message:
    """Parse one protocol message; raises ProtocolError (never anything else) when malformed."""
    head = _RULES_MESSAGE.match(text[:4096])
    if head is not None:
        return _scan_rules_message(text, head.group(1).lower())
    if len(text) > MAX_PLAIN_MESSAGE:
        raise ProtocolError(f"a message without rules of {len(text)} characters (at most {MAX_PLAIN_MESSAGE})")
    try:
        node = read_first(text)
    except GdlError as e:
        raise ProtocolError(f"not an s-expression: {e.problems[0].message}") from None
    except RecursionError:
        raise ProtocolError("nested too deeply") from None
    if node is None:
        raise ProtocolError("empty message")
    if node.is_atom:
        # A bare word: accept the argument-less messages (some tools send "info" or "ping").
        word = node.text.lower()
        if word == "info":
            return Message("info")
        raise ProtocolError(f"a message is a list, found the atom {node.text[:80]!r}")
    items = node.items
    if not items or not items[0].is_atom:
        raise ProtocolError("a message starts with its keyword (INFO, START, PLAY, STOP, ABORT, PREVIEW)")
    kind = items[0].text.lower()
    args = items[1:]
    if kind == "info":
        return Message("info")
    if kind == "preview":
        if len(args) < 2:
            raise ProtocolError("PREVIEW needs rules and a clock")
        if args[0].is_atom:
            raise ProtocolError("PREVIEW rules must be a list")
        return Message("preview", rules_nodes=args[0].items, preview_clock=_clock(args[1], "preview clock"))
    if kind == "abort":
        if not args:
            raise ProtocolError("ABORT needs a match id")
        return Message("abort", match_id=_atom(args[0], "the match id"))
    if kind == "start":
        if len(args) < 5:
            raise ProtocolError(f"START needs id, role, rules, start clock and play clock; found {len(args)} arguments")
        match_id = _atom(args[0], "the match id")
        role = _atom(args[1], "the role")
        rules = args[2]
        if rules.is_atom:
            raise ProtocolError("START rules must be a list")
        starts = _line_offsets(text)
        begin = _offset(starts, rules)
        end = _offset(starts, args[3])
        rules_text = text[begin:end].rstrip()
        return Message("start", match_id=match_id, role=role, rules_text=rules_text, rules_nodes=rules.items,
                       start_clock=_match_clock(args[3], "start clock"),
                       play_clock=_match_clock(args[4], "play clock"))
    if kind in ("play", "stop"):
        if len(args) < 2:
            raise ProtocolError(f"{kind.upper()} needs a match id and the last moves")
        match_id = _atom(args[0], "the match id")
        if len(args) >= 4:
            # Dresden's later form: (PLAY id turn lastmove percepts)
            turn = None
            if args[1].is_atom:
                try:
                    turn = int(args[1].text)
                except ValueError:
                    turn = None
            last = None if args[2].is_atom and args[2].text.lower() == "nil" else to_move(args[2])
            percepts = None if args[3].is_atom else [node_text(n) for n in args[3].items]
            return Message(kind, match_id=match_id, turn=turn, last_move=last, percepts=percepts,
                           did=_did_moves(args[3]))
        return Message(kind, match_id=match_id, moves=_moves(args[1]))
    raise ProtocolError(f"unknown message {items[0].text[:40]!r}")


def _did_moves(node: Node) -> list | None:
    """Dresden sends GDL-I games to GDL-II players with ``(DID role move)`` percepts: those
    give the full joint move (role order is fixed by the caller, who maps roles)."""
    if node.is_atom:
        return None
    out = []
    for n in node.items:
        if (not n.is_atom and len(n.items) == 3 and n.items[0].is_atom and n.items[0].text.lower() == "did"):
            out.append((node_text(n.items[1]), to_move(n.items[2])))
        else:
            return None
    return out or None


# ------------------------------------------------------------------------------ replies

def info_reply(name: str, status: str = "available") -> str:
    return f"( ( name {name} ) ( status {status} ) )"


def move_reply(term: Term) -> str:
    return render_spaced(term)
