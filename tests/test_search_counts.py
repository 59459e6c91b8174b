"""What a search did is told apart (issue #34): ``playouts`` (leaf evaluations that walked the
game) and ``proven_descents`` (tree descents that ended in a terminal or proven node, no
playout) add up to the simulations, on both drivers, and reach the player's decision record.
A root the solver has proven ends the search: no simulation re-descends to a known value.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from agent.engine import load_engine
from agent.persona import load_persona
from agent.search import SearchSettings, driver_compiled, driver_sm
from agent.player import result_fields
from gdl.kif import read_rules_file

pytest.importorskip("pyswip")

GAMES = Path(__file__).resolve().parents[1] / "games"
DRIVERS = [driver_sm, driver_compiled]


@pytest.fixture(scope="module")
def c4():
    return load_engine(read_rules_file(GAMES / "connectFour.kif"), engine="compiled")


def _late_state(eng, plies, seed):
    """A non-terminal state ``plies`` random plies in (late: the solver proves nodes there)."""
    rng = random.Random(seed)
    while True:
        s = eng.initial_state()
        for _ in range(plies):
            s2 = eng.next_state(s, [rng.choice(eng.legal_moves(s, r)) for r in range(len(eng.roles))])
            if eng.is_terminal(s2):
                break
            s = s2
        else:
            return s


def _mover(eng, s):
    return next((r for r in range(len(eng.roles)) if len(eng.legal_moves(s, r)) > 1), 0)


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_playouts_and_proven_descents_add_up(c4, driver):
    champion = load_persona("champion")
    seen_proven = False
    for seed in range(4):
        s = _late_state(c4, 24, seed)
        res = driver.search(c4, s, _mover(c4, s), champion, SearchSettings(seed=seed, limit=400))
        assert res.playouts + res.proven_descents == res.simulations
        assert res.playouts >= 0 and res.proven_descents >= 0
        seen_proven |= res.proven_descents > 0
        fields = result_fields(res)
        assert (fields["playouts"], fields["proven_descents"]) == (res.playouts, res.proven_descents)
    assert seen_proven, "late connectFour positions: some descents end in proven nodes"
    # from the start nothing is proven within a few hundred simulations: all are playouts
    s0 = c4.initial_state()
    res = driver.search(c4, s0, 0, champion, SearchSettings(seed=1, limit=200))
    assert res.playouts == res.simulations == 200 and res.proven_descents == 0


def _winning_state(eng):
    """A state where the mover has a move that ends the game with 100 for it."""
    rng = random.Random(7)
    for _ in range(2000):
        s = eng.initial_state()
        while not eng.is_terminal(s):
            r = _mover(eng, s)
            R = len(eng.roles)
            for m in eng.legal_moves(s, r):
                joint = [m if q == r else eng.legal_moves(s, q)[0] for q in range(R)]
                s2 = eng.next_state(s, joint)
                if eng.is_terminal(s2) and eng.goal_values(s2)[r] and max(eng.goal_values(s2)[r]) == 100:
                    return s, r, m
            s = eng.next_state(s, [rng.choice(eng.legal_moves(s, q)) for q in range(len(eng.roles))])
    raise AssertionError("no state with an immediate win found")


@pytest.mark.parametrize("driver", DRIVERS, ids=["sm", "compiled"])
def test_proven_root_stops_the_search(c4, driver):
    champion = load_persona("champion")
    s, r, win = _winning_state(c4)
    res = driver.search(c4, s, r, champion, SearchSettings(seed=3, limit=5000))
    assert res.move == win
    # the root is proven as soon as the winning child is: far fewer than 5000 simulations
    # (each would be a descent to the known win), and the count says so
    assert res.simulations < 5000
    assert res.playouts + res.proven_descents == res.simulations
    # on a clock as well: the search returns long before its time is up, with the win
    res2 = driver.search(c4, s, r, champion, SearchSettings(seed=3, seconds=30.0))
    assert res2.move == win and res2.simulations < 5000


def test_solver_off_searches_its_whole_limit(c4):
    """Without the solver (thesis mode: fitting reads every simulation) nothing stops early."""
    champion = load_persona("champion")
    s, r, _ = _winning_state(c4)
    res = driver_compiled.search(c4, s, r, champion, SearchSettings(seed=3, limit=300, thesis=True))
    assert res.simulations == 300 and res.playouts + res.proven_descents == 300


def test_all_lost_root_plays_the_latest_loss():
    """When every move is proven lost, the move whose loss is farthest is played."""
    import numpy as np
    from agent.search import tree as T
    from agent.search.params import P_ME, P_MIN_SHARE, P_SOLVER, N_PARAMS
    from agent.search.rng import make_rng
    t = T.new_tree(2, 4, 16, 64, 1)
    T.reset_root(t, 0, np.zeros(2))
    assert T.init_slots(t, 0, np.array([3, 1], np.int32), np.array([0, 1, 2, 0], np.int32))
    for k, depth in enumerate([2, 6, 4]):
        c = T.add_child(t, 0, np.array([k, 3], np.int32), 1, np.array([0.0, 100.0]))
        t.pdepth[c] = depth
    p = np.zeros(N_PARAMS)
    p[P_SOLVER], p[P_ME], p[P_MIN_SHARE] = 1.0, 0, 0.1
    q = np.array([5.0, 0.0, 1.0])
    n = np.array([10, 1, 5], np.int64)
    assert T.choose(t, p, q, n, make_rng(1)) == 1


def _root_with_draw(q, n):
    """A one-role root whose move 0 leads to a proven draw (a terminal worth 50), the others
    to unproven children, with the given Q and visits per move."""
    import numpy as np
    from agent.search import tree as T
    k = len(q)
    t = T.new_tree(1, k, 8, 32, 1)
    T.reset_root(t, 0, np.zeros(1))
    assert T.init_slots(t, 0, np.array([k], np.int32), np.arange(k, dtype=np.int32))
    for j in range(k):
        T.add_child(t, 0, np.array([j], np.int32), 1 if j == 0 else 0, np.array([50.0]))
    t.slot_q[:k] = q
    t.slot_n[:k] = n
    t.visits[0] = sum(n)
    return t


def _pick(t, solver):
    import numpy as np
    from agent.search import tree as T
    from agent.search.params import build
    from agent.search.rng import make_rng
    params, _ = build(load_persona("champion"), 1, 0, solver=solver)
    out = np.zeros(1, np.int32)
    T.select(t, 0, 0, params, make_rng(1), out)
    return int(out[0])


def test_proven_draw_does_not_soak_up_visits():
    """A proven child's value is known: it gets no exploration bonus.  UCB (C 40, 100 visits):
    the draw 50 + 12.1, move 1 45 + 13.6, move 2 30 + 27.1; without the bonus the draw (50)
    yields to move 1 (58.6), and it is chosen again once nothing unproven looks as good."""
    t = _root_with_draw([50.0, 45.0, 30.0], [50, 40, 10])
    assert _pick(t, solver=False) == 0      # plain UCT: the draw's bonus wins
    assert _pick(t, solver=True) == 1
    t = _root_with_draw([50.0, 20.0, 10.0], [50, 40, 10])
    assert _pick(t, solver=True) == 0


def test_a_move_into_a_proven_node_gets_the_proof_as_q():
    """Backing up through a move into a proven node sets that move's Q to the proof's value,
    not a mean with the playouts run before the proof; the other roles' slots keep means."""
    import numpy as np
    from agent.search import tree as T
    from agent.search.params import P_TREE_DISCOUNT, build
    t = _root_with_draw([80.0, 45.0, 30.0], [10, 40, 10])
    params, _ = build(load_persona("champion"), 1, 0)
    path = np.array([0, int(t.slot_child[0])], np.int64)
    T.backprop(t, params, path, 1, np.array([[0]], np.int32), np.zeros((1, 1), np.int32), 0,
               np.array([50.0]), 0)
    assert t.slot_n[0] == 11 and t.slot_q[0] == 50.0 * params[P_TREE_DISCOUNT]    # one ply below


def test_reused_tree_on_a_clock_is_not_rebuilt_while_it_has_room(c4):
    """On a clock a reused tree with room left is searched in place: asking for the persona's
    whole limit of new nodes (the tournament preset's 10 million) rebuilt it at every move."""
    from agent.search import advance
    champion = load_persona("champion")
    s = c4.initial_state()
    # a tree with room, made by a fixed number of simulations (a 0.05 s clock ran only one at
    # a load of 10, and the move played then had no node to keep)
    res = driver_compiled.search(c4, s, 0, champion, SearchSettings(seed=1, limit=2_000, seconds=600,
                                                                   max_nodes=150_000))
    joint = [res.move, c4.legal_moves(s, 1)[0]]
    kept = advance(res.tree, joint)
    assert kept is not None and kept.capacity - kept.nodes >= driver_compiled.DEFAULT_TIMED_NODES
    s1 = c4.next_state(s, joint)
    res1 = driver_compiled.search(c4, s1, 1, champion,
                                  SearchSettings(seed=2, limit=200_000, seconds=0.05), tree=kept)
    assert res1.tree.arrays is kept.arrays       # no rebuild
    # without a clock the limit's room is still made: the same tree is rebuilt for it
    kept2 = advance(res1.tree, [c4.legal_moves(s1, 0)[0], res1.move])
    s2 = c4.next_state(s1, [c4.legal_moves(s1, 0)[0], res1.move])
    res2 = driver_compiled.search(c4, s2, 0, champion, SearchSettings(seed=3, limit=200_000), tree=kept2)
    assert res2.tree.arrays is not kept2.arrays and res2.simulations == 200_000


def test_pondering_slices_grow_the_pool_by_doubling_not_at_every_slice(c4, monkeypatch):
    """Pondering searches one state in 0.1 s slices on the same tree.  The pool grew by
    ``DEFAULT_TIMED_NODES`` alone, so after each slice less than that was free again and the
    whole tree was copied at every slice (half of pondering's time, issue #34).  On a clock it
    now doubles: a few copies, however many slices."""
    from agent.search import common
    monkeypatch.setattr(driver_compiled, "DEFAULT_TIMED_NODES", 200)
    copies = []
    real = driver_compiled.compact_into

    def counting(st, new_root, capacity):
        copies.append((st.capacity, capacity))
        return real(st, new_root, capacity)

    monkeypatch.setattr(driver_compiled, "compact_into", counting)
    tournament = load_persona("tournament")
    s = c4.initial_state()
    tree = None
    for i in range(40):
        # a clocked search (its pool grows as pondering's does) that the limit ends, so the
        # nodes added do not depend on the machine's speed
        res = driver_compiled.search(c4, s, 0, tournament,
                                     SearchSettings(seed=i, limit=100, seconds=600.0), tree=tree)
        tree = res.tree
    assert tree.nodes > 8 * 200                      # the slices did add nodes, many times the step
    assert copies and len(copies) <= 6
    for before, asked in copies:
        assert asked >= 2 * before
    assert common.can_grow(tree, 2 * tree.capacity)  # far from the budget: growth was not refused


def test_a_search_goes_on_with_its_mast_table_and_a_new_state_starts_its_own(c4):
    """Spec 2.4: one MAST table per decision.  Pondering's slices and the decision after them
    are one state's search, so a tree searched again from the same root keeps its table
    (reset at every 0.1 s slice, pondering's playouts drew from a table a slice old), also
    when the pool grows; a tree moved on to the next state starts an empty one."""
    from agent.search import advance, common
    tournament = load_persona("tournament")
    s = c4.initial_state()
    first = driver_compiled.search(c4, s, 0, tournament, SearchSettings(seed=1, limit=2000))
    learnt = first.tree.arrays.mast_n.sum()
    assert learnt > 0
    again = driver_compiled.search(c4, s, 0, tournament, SearchSettings(seed=2, limit=50), tree=first.tree)
    assert again.tree.arrays.mast_n.sum() > learnt
    grown = common.compact_into(again.tree, 0, 2 * again.tree.capacity)
    assert np.array_equal(grown.arrays.mast_n, again.tree.arrays.mast_n)
    assert np.array_equal(grown.arrays.mast_q, again.tree.arrays.mast_q)
    moved = advance(again.tree, [again.move, c4.legal_moves(s, 1)[0]])
    assert moved is not None and moved.arrays.mast_n.sum() == 0


def test_a_persona_without_rave_gets_one_amaf_row(c4):
    """Nothing reads or writes AMAF statistics without RAVE (tree.backprop, tree.score): the
    compiled tree keeps one row, as the state-machine driver's does, and moving it on to the
    next ply no longer copies a row per node."""
    from agent.search import advance
    s = c4.initial_state()
    plain = driver_compiled.search(c4, s, 0, load_persona("tournament"), SearchSettings(seed=1, seconds=0.05))
    assert plain.tree.arrays.amaf_n.shape[0] == 1
    moved = advance(plain.tree, [plain.move, c4.legal_moves(s, 1)[0]])
    assert moved.arrays.amaf_n.shape[0] == 1
    rave = driver_compiled.search(c4, s, 0, load_persona("sanguine"), SearchSettings(seed=1, limit=300))
    assert load_persona("sanguine").rave > 0 and rave.tree.arrays.amaf_n.shape[0] > 1
