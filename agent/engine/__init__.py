"""The compiled engine: rules grounded with Prolog, compiled to arrays, run in numba.
(Games that do not ground get the non-ground engine instead: ``nonground.py``, the flat rules
evaluated per query in numba; ``load_engine`` picks.)

Contract for numba callers (the search runs its whole loop in nopython mode on top of it):

``CompiledGame`` (a namedtuple of ints and numpy arrays, passed as-is to njit functions):
    n_roles            number of roles
    n_words            uint64 words of a packed state (one bit per base proposition)
    n_atoms            size of the ``vals`` work buffer
    role_nmoves        int32[n_roles]: moves per role (move k of role r is ``move_terms[r][k]``)
    init_state         uint64[n_words]
    ... program arrays (private to agent.engine.kernels)

Kernels in ``agent.engine.kernels`` (all ``@njit(cache=True)``):
    new_vals(g) -> uint8[...]                        a work buffer (one per thread/search); its
                                                     first n_atoms bytes are the atom values
    load_state(g, state, vals)                       set the state and derive legal/terminal
    is_terminal(g, vals) -> bool
    legal_moves(g, vals, role, out) -> n             int32 move indices of ``role`` into out[:n] (the
                                                     only way to read legality: a legal atom's byte
                                                     alone is not, its gate fluent counts too)
    goal_vector(g, vals, out)                        int32 goal per role (statemachine.goal_vector rule)
    settle_goals(g, vals)                            goal atoms up to date: call before reading
                                                     vals[goal_atom] (goal-only logic is not kept
                                                     current by load_state or the steps)
    next_state(g, vals, joint, out_state)            joint: int32[n_roles] move indices
    read_with_moves(g, vals, joint, atoms, out)      values of ``atoms`` with the joint move on:
                                                     GDL-II percepts (``CompiledEngine.sees_atom``;
                                                     not part of the CompiledGame, so a game
                                                     without percepts is compiled as before)
    random_playout(g, state, vals, max_depth, out_goals) -> depth
                                                     uniform random joint moves until terminal
                                                     (or max_depth: then depth == -1); in a game
                                                     compiled with ``legal_lists`` the moves come
                                                     from unordered legal lists: a seed gives the
                                                     same playout every time, not the one the
                                                     ``legal_moves`` order would give

A playout loop (a search's playouts) moves the work buffer on in place, without packing:
    h = hot(g, vals)                                 once: the arrays a step reads, one tuple
    step(h, joint) -> f                              the state after ``joint``; when f != h[H_NB]
    step_finish(g, vals, h, joint, f)                finish it (rare: recursive rules, overflow)
    legal_into(h, role, out) -> n, terminal_in(h)    legal_moves / is_terminal on ``h``
    current_state(g, vals, out_state)                pack the state when it must be kept
Functions that take ``g`` pay the reference counting of all its arrays on every call, more
than a step costs: keep them out of per-move loops.

Python side: ``CompiledEngine`` wraps a CompiledGame behind the StateMachine interface
(frozensets of terms), with ``game`` (the namedtuple), ``move_terms`` and state packing; a
GDL-II game's percepts are ``sees_terms[r]`` with their atoms
``sees_atom[sees_start[r]:sees_start[r + 1]]``.
"""

from .loader import load_engine  # noqa: E402,F401  (the entry point most callers want)
