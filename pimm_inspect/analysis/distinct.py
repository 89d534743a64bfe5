"""Sorted distinct values of step (or time) columns in one pass when they are monotone, the common case.

``np.unique`` without index arguments takes a hash path in numpy 2.4 that needs ~8 s for 5M consecutive
int64 steps (a sort takes ~0.4 s, checking the order ~5 ms); a train.log step column is almost always
increasing already, so checking that first and sorting only when steps go back is far cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def strictly_increasing(values: np.ndarray) -> bool:
    """True when every value is larger than the one before (no repeat, no step back)."""
    return values.shape[0] < 2 or bool(np.all(values[1:] > values[:-1]))


def distinct_sorted(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(arrays))`` (NaN-free input), without a sort when the values never go back.

    The result may share memory with an input array (one strictly increasing array is returned as is):
    read it, never write into it.
    """
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    dtype = np.result_type(*arrays)  # what the concatenation of them all would hold
    parts = [a for a in arrays if a.shape[0]]
    if not parts:
        return np.zeros(0, dtype=dtype)
    joined = parts[0].astype(dtype, copy=False) if len(parts) == 1 else np.concatenate(parts).astype(dtype, copy=False)
    if joined.shape[0] < 2:
        return joined
    if not bool(np.all(joined[1:] >= joined[:-1])):
        # Steps went back (a resume, a rollback): a stable sort (timsort) merges the increasing runs in one pass
        # each, ~7 ms for 3 attempts of 5M steps where the default sort needs ~0.4 s.
        joined = np.sort(joined, kind="stable")
    fresh = np.empty(joined.shape[0], dtype=bool)
    fresh[0] = True
    np.not_equal(joined[1:], joined[:-1], out=fresh[1:])
    return joined if bool(fresh.all()) else joined[fresh]
