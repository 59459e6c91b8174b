"""What both drivers share outside numba: the settings of one decision, its result and the
reusable tree, the final choice at the root (with the one-ply fallback when not one
simulation finished), and the best-so-far reports of a running search."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import tree as T
from .params import P_MIN_SHARE, P_SOLVER
from .rng import CHOICE, randint


def is_compiled(engine) -> bool:
    """A compiled engine (its packed states and kernels: driver B), not a state machine."""
    return hasattr(engine, "game") and hasattr(getattr(engine, "game"), "n_words")

AMAF_BYTES = 64 * 1024 * 1024      # AMAF rows beyond this budget are not allocated (degrade)
# Node and slot pools are preallocated: a persona whose ``limit`` is huge (the tournament
# preset searches until the clock) must not ask for ``limit`` nodes up front, or one search
# allocates gigabytes before its first simulation. Beyond this budget the pool is full and
# the search degrades as a full pool does (simulations go on from the frontier).
TREE_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class SearchSettings:
    """The budget and switches of one search (``agent.search.search``), apart from what it
    searches (engine, state, role, persona) and what it carries between calls (tree,
    progress reports).  Same settings with a fixed ``limit`` and no clock, same result."""
    seed: int
    limit: int | None = None        # simulations; None: the persona's (or the clock alone)
    seconds: float | None = None    # the clock; with ``limit`` too, whichever ends first
    solver: bool = True             # False: no terminal solver (baselines)
    max_nodes: int | None = None    # bound on the node pool
    thesis: bool = False            # exactly spec 2.8's search (fresh tree, no live-play deviations)
    threads: int = 1                # on a clock, trees searched at once (compiled engine only)
    # the game's evaluation inputs: ``heuristic.learn``'s evaluation (ends playouts after
    # ``heuristic.EVAL_DEPTH`` plies in live play) and each role's pieces
    # (``material.Material``: a prior on the moves the compiled engine's search tries)
    heuristic: object = field(default=None, compare=False)
    material: object = field(default=None, compare=False)


def settings_of(settings: SearchSettings | None, keywords: dict) -> SearchSettings:
    """The settings of a search call: ``settings``, or built from the keywords of the older
    form ``search(..., seed=, limit=, ...)``.  Every caller of the project gives settings;
    the keywords are kept for scripts that run the same call on older checkouts too
    (scripts/bench_search.py, scripts/chess_search_ab.py)."""
    if settings is None:
        return SearchSettings(**keywords)
    if keywords:
        raise TypeError(f"search: give SearchSettings or keywords, not both ({', '.join(sorted(keywords))})")
    if not isinstance(settings, SearchSettings):
        raise TypeError(f"search: settings must be a SearchSettings, not {type(settings).__name__}")
    return settings


@dataclass
class SearchTree:
    """A search tree kept between decisions.  ``arrays`` is the numba ``Tree``; ``states``
    (state-machine driver) holds node states as terms; ``move_terms``/``move_index`` map
    each role's move ids to terms and back."""
    kind: str                   # "sm" or "compiled"
    arrays: T.Tree
    root_state: object
    move_terms: list            # per role: list of move terms by id
    move_index: list            # per role: dict term -> id
    states: list = field(default_factory=list)
    # driver A: each state's first node (transpositions; driver B's table is ``arrays.tt``)
    index: dict = field(default_factory=dict)
    # the bytes this tree's node and slot pools may take (``node_capacity``): None for
    # TREE_BYTES, or its share when several threads search trees of their own (``share``)
    budget: int | None = None
    # driver B on several threads: the other threads' trees of the same root (root
    # parallelism), moved on with this one by ``advance``
    helpers: list = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return int(self.arrays.meta[T.M_NODES])

    @property
    def capacity(self) -> int:
        return int(self.arrays.visits.shape[0])


@dataclass
class SearchResult:
    move: object                # the chosen move term
    moves: list                 # every legal move of the deciding role (engine order)
    q: np.ndarray               # float64 per move; unvisited: charge_defaults[self]
    visits: np.ndarray          # int64 per move
    simulations: int
    elapsed: float
    tree: SearchTree | None
    proven: np.ndarray | None = None    # per move: the proven goal of the deciding role or NaN
    nodes: int = 0
    pool_full: int = 0                  # expansions refused for lack of room (degradation)
    # what the simulations were (tree.M_PLAYOUTS, M_PROVEN_ENDS): playouts actually run, and
    # descents that ended in a terminal or proven node (no playout: they cost a descent)
    playouts: int = 0
    proven_descents: int = 0
    transpositions: int = 0             # moves that reached a state already in the tree (T.M_TRANSPOSED)
    evaluated: int = 0                  # playouts ended by the game's evaluation (T.M_EVALUATED)
    extended: int = 0                   # of them, run on past its depth to a quiet state (T.M_EXTENDED)
    threads: int = 1                    # trees searched at once, one per thread (root parallelism)

    @property
    def best(self):
        """The argmax-Q move, whatever the persona's choice rules picked."""
        return self.moves[int(np.argmax(self.q))]


def amaf_rows(max_nodes: int, n_roles: int, n_moves: int) -> int:
    return max(1, min(max_nodes, AMAF_BYTES // max(1, n_roles * n_moves * 8)))


def share(threads: int) -> int | None:
    """The tree budget of each of ``threads`` trees searched at once: None (all of
    TREE_BYTES) for one."""
    return None if threads <= 1 else TREE_BYTES // threads


def node_capacity(want: int, n_roles: int, state_words: int, slots_per_node: int,
                  budget: int | None = None) -> int:
    """``want`` nodes, or as many as fit in ``budget`` bytes (None: ``TREE_BYTES``; the node
    arrays of ``T.new_tree`` and ``slots_per_node`` slots each)."""
    per_node = (8 + 1 + 1 + 4 + 1 + 4 + 4 + 8 + 4       # visits .. child_key, amaf_row
                + n_roles * (8 + 8 + 4)                 # pval, slot_off, slot_count
                + 8 * state_words + (16 if state_words else 0)  # the state; table slots (T.tt_size: <= 4 x 4 bytes)
                + slots_per_node * (4 + 8 + 8 + 4))     # slot_move, slot_n, slot_q, slot_child
    return max(1, min(int(want), (TREE_BYTES if budget is None else budget) // per_node))


def root_choice(arrays: T.Tree, params, default: float, rng, me: int, others=()):
    """The root's statistics for role ``me`` and the persona's choice among its slots:
    (slot ids of the moves, q, visits, index chosen), in slot order.  ``others``: trees of
    the same root searched by other threads; their visits add to ``arrays``' and each Q is
    the visit-weighted mean (root parallelism; the proofs ``choose`` reads are ``arrays``')."""
    cnt = int(arrays.slot_count[0, me])
    q = np.zeros(cnt)
    n = np.zeros(cnt, np.int64)
    T.root_stats(arrays, me, default, q, n)
    if len(others):
        q, n = merged_root_stats(arrays, others, me, default, q, n)
    if cnt and n.max() == 0:        # not one simulation finished (a clock on a slow engine)
        k = fallback_choice(arrays, me, default, rng)
    else:
        k = int(T.choose(arrays, params, q, n, rng))
    off = int(arrays.slot_off[0, me])
    return [int(arrays.slot_move[off + j]) for j in range(cnt)], q, n, k


def merged_root_stats(arrays: T.Tree, others, me: int, default: float, q, n):
    """``arrays``' root statistics (``q``, ``n``, slot order) with those of ``others`` added,
    matched by move id (a helper's root was expanded alike, but it costs nothing to be sure)."""
    off = int(arrays.slot_off[0, me])
    at = {int(arrays.slot_move[off + k]): k for k in range(len(n))}
    total = q * n
    n = n.copy()
    for o in others:
        c = int(o.slot_count[0, me])
        oq = np.zeros(c)
        on = np.zeros(c, np.int64)
        T.root_stats(o, me, default, oq, on)
        ooff = int(o.slot_off[0, me])
        for j in range(c):
            k = at.get(int(o.slot_move[ooff + j]))
            if k is not None and on[j] > 0:
                total[k] += oq[j] * on[j]
                n[k] += on[j]
    out = np.where(n > 0, total / np.maximum(n, 1), default)
    return out, n


def one_ply_values(arrays: T.Tree, me: int, default: float) -> np.ndarray:
    """What a one-ply look-ahead knows of the deciding role's root moves, in slot order: the
    goal (or proven value) of a root child already generated and decided, else ``default``
    (the charge default: the spec's value of a simulation cut before it learnt anything)."""
    off = int(arrays.slot_off[0, me])
    cnt = int(arrays.slot_count[0, me])
    out = np.full(cnt, float(default))
    for k in range(cnt):
        c = int(arrays.slot_child[off + k])
        if c >= 0 and arrays.proven[c]:
            out[k] = arrays.pval[c, me]
    return out


def fallback_choice(arrays: T.Tree, me: int, default: float, rng) -> int:
    """The choice when not one simulation finished (a slow engine near its deadline): the
    best one-ply value (an immediate win is taken, an immediate loss avoided), ties uniform
    (choice stream).  Index in slot order."""
    v = one_ply_values(arrays, me, default)
    best = np.flatnonzero(v == v.max())
    return int(best[randint(rng, CHOICE, len(best))])


def best_so_far(arrays: T.Tree, params, me: int, default: float) -> int:
    """The move the search would stand by now, without drawing from any random stream (so
    watching a search never changes it): with visits, the best Q among the moves with enough
    visits (``P_MIN_SHARE``; a proven win first when the solver is on); without, the best
    one-ply value.  Index in slot order; -1 before the root is expanded."""
    if not arrays.ready[0]:
        return -1
    cnt = int(arrays.slot_count[0, me])
    q = np.zeros(cnt)
    n = np.zeros(cnt, np.int64)
    T.root_stats(arrays, me, default, q, n)
    if n.max() == 0:
        return int(np.argmax(one_ply_values(arrays, me, default)))
    if params[P_SOLVER] > 0:
        v = one_ply_values(arrays, me, -1.0)
        if v.max() >= T.WIN:
            return int(np.argmax(v))
    ok = n >= max(1, params[P_MIN_SHARE] * n.max())
    return int(np.flatnonzero(ok)[np.argmax(q[ok])])


PROGRESS_INTERVAL = 0.1     # seconds between two reports of the best-so-far move


class Progress:
    """Reports the best-so-far move while a search runs: ``callback(move_term, simulations)``
    when it differs from the last one reported, at most every ``PROGRESS_INTERVAL`` seconds
    (the first report as soon as there is a move), and once more at the end (``final``) if
    the last report is out of date.  Drivers call it between simulations (driver_sm) or
    chunks (driver_compiled)."""

    def __init__(self, callback, params, me: int, default: float):
        self.callback, self.params, self.me, self.default = callback, params, me, default
        self.last = None
        self.when = -1e18

    def __call__(self, st: "SearchTree", sims: int, final: bool = False) -> None:
        if self.callback is None:
            return
        now = time.perf_counter()
        if now - self.when < PROGRESS_INTERVAL and not final:
            return
        a = st.arrays
        k = best_so_far(a, self.params, self.me, self.default)
        if k < 0:
            return
        move = st.move_terms[self.me][int(a.slot_move[int(a.slot_off[0, self.me]) + k])]
        if move != self.last:
            self.last, self.when = move, now
            self.callback(move, sims)


def start_counts(arrays: T.Tree) -> None:
    """Zero what a decision searched (a reused tree carries the last decision's counts)."""
    arrays.meta[T.M_PLAYOUTS] = 0
    arrays.meta[T.M_PROVEN_ENDS] = 0
    arrays.meta[T.M_TRANSPOSED] = 0
    arrays.meta[T.M_EVALUATED] = 0
    arrays.meta[T.M_EXTENDED] = 0


def searched(arrays: T.Tree) -> dict:
    """The ``SearchResult`` fields that say what a decision searched."""
    return {"playouts": int(arrays.meta[T.M_PLAYOUTS]),
            "proven_descents": int(arrays.meta[T.M_PROVEN_ENDS]),
            "transpositions": int(arrays.meta[T.M_TRANSPOSED]),
            "evaluated": int(arrays.meta[T.M_EVALUATED]),
            "extended": int(arrays.meta[T.M_EXTENDED])}


def root_settled(arrays: T.Tree, params) -> bool:
    """With the solver on, the root is proven: its value is known and ``choose`` plays the
    proof (the nearest win, a draw before a loss), so more simulations would only re-descend
    to proven nodes and count as work.  The search stops."""
    return params[P_SOLVER] > 0 and bool(arrays.proven[0])


def root_proven(arrays: T.Tree, me: int) -> np.ndarray:
    off = int(arrays.slot_off[0, me])
    cnt = int(arrays.slot_count[0, me])
    out = np.full(cnt, np.nan)
    for k in range(cnt):
        c = int(arrays.slot_child[off + k])
        if c >= 0 and arrays.proven[c]:
            out[k] = arrays.pval[c, me]
    return out


def find_child(st: SearchTree, joint_move) -> int:
    """The root's child for a joint move given as terms, or -1."""
    a = st.arrays
    if not a.ready[0]:
        return -1
    R = len(st.move_terms)
    slots = np.zeros(R, np.int32)
    for r, term in enumerate(joint_move):
        mid = st.move_index[r].get(term, -1)
        off, cnt = int(a.slot_off[0, r]), int(a.slot_count[0, r])
        hit = [off + k for k in range(cnt) if a.slot_move[off + k] == mid]
        if not hit:
            return -1
        slots[r] = hit[0]
    return int(T.get_child(a, 0, slots))


def _copy_size(src: T.Tree, capacity: int, budget: int | None) -> tuple:
    """(nodes, slots per node) of ``compact_into``'s copy asked for ``capacity`` nodes."""
    R = src.mast_n.shape[0]
    used_slots = max(1, int(src.meta[T.M_SLOTS]))
    per_node = max(4, used_slots // max(1, int(src.meta[T.M_NODES])) + 2)
    return max(int(src.meta[T.M_NODES]), node_capacity(capacity, R, src.state.shape[1], per_node, budget)), per_node


def can_grow(st: SearchTree, capacity: int) -> bool:
    """Whether a copy asked for ``capacity`` nodes would hold more than ``st`` does (at its
    ``budget`` it cannot: copying the whole tree then only costs time)."""
    return _copy_size(st.arrays, capacity, st.budget)[0] > st.capacity


def compact_into(st: SearchTree, new_root: int, capacity: int) -> SearchTree:
    """A new SearchTree holding the subtree under ``new_root`` with room for ``capacity``
    nodes (slots scaled alike)."""
    src = st.arrays
    R, M = src.mast_n.shape
    capacity, per_node = _copy_size(src, capacity, st.budget)
    slots = max(src.slot_move.shape[0], capacity * per_node)
    # a tree made with one AMAF row (no RAVE: nothing reads them) keeps one
    rows = amaf_rows(capacity, R, M) if src.amaf_n.shape[0] > 1 else 1
    dst = T.new_tree(R, M, capacity, slots, rows, src.state.shape[1], src.nst_key.shape[0])
    mapping = np.full(max(1, int(src.meta[T.M_NODES])), -1, np.int64)
    T.compact(src, dst, new_root, mapping)
    if new_root == 0:   # the same root, a larger pool: its search goes on, with its MAST table
        dst.mast_n[:] = src.mast_n
        dst.mast_q[:] = src.mast_q
        dst.nst_key[:] = src.nst_key
        dst.nst_n[:] = src.nst_n
        dst.nst_q[:] = src.nst_q
    states = []
    index: dict = {}
    if st.states:
        states = [None] * int(dst.meta[T.M_NODES])
        for old, new in enumerate(mapping):
            if new >= 0:
                states[new] = st.states[old]
        for new, s in enumerate(states):    # in id order, as T.tt_index
            index.setdefault(s, new)
    root_state = st.states[new_root] if st.states else None
    return SearchTree(st.kind, dst, root_state, st.move_terms, st.move_index, states, index, st.budget)


def advance(st: SearchTree | None, joint_move) -> SearchTree | None:
    """Keep the subtree reached by ``joint_move`` (terms, role order) for the next decision;
    None when that move was never expanded (search then starts afresh)."""
    if st is None:
        return None
    child = find_child(st, tuple(joint_move))
    if child < 0:
        return None
    new = compact_into(st, child, st.capacity)
    if st.kind == "compiled":
        new.root_state = None   # the compiled driver reads the packed state of node 0
    new.helpers = [h for h in (advance(x, joint_move) for x in st.helpers) if h is not None]
    return new
