"""Seeded random streams for the search, usable inside numba.

Spec 2.8 asks for separate streams per purpose (tree ties, playouts, bias coins, final
choice) so that, e.g., changing a choice parameter never shifts the playouts.  Each stream
is one splitmix64 counter in a uint64 array; numba's own np.random is a single global
stream, so it cannot give that.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TREE, PLAYOUT, BIAS, CHOICE = 0, 1, 2, 3
N_STREAMS = 4

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1


@njit(cache=True)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def next_u64(rng, k):
    rng[k] += _GOLDEN
    return _mix(rng[k])


@njit(cache=True)
def uniform(rng, k):
    """A float in [0, 1) from stream k."""
    return float(next_u64(rng, k) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def randint(rng, k, n):
    """An int in [0, n) from stream k."""
    i = int(uniform(rng, k) * n)
    return i if i < n else n - 1


def _mix_py(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def make_rng(seed: int) -> np.ndarray:
    """Independent stream states derived from one seed (any Python int)."""
    base = _mix_py(int(seed) & _MASK64)
    return np.array([_mix_py((base + (k + 1) * 0x9E3779B97F4A7C15) & _MASK64)
                     for k in range(N_STREAMS)], dtype=np.uint64)


def reseed(rng: np.ndarray, seed: int) -> None:
    rng[:] = make_rng(seed)
