"""Sorted distinct values of step (or time) columns in one pass when they are monotone, the common case.

``np.unique`` without index arguments takes a hash path in numpy 2.4 that needs ~8 s for 5M consecutive
int64 steps (a sort takes ~0.4 s, checking the order ~5 ms); a train.log step column is almost always
increasing already, so checking that first and sorting only when steps go back is far cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..arrays import SMALL, unique_sorted


SMALL_TOTAL = 256
"""``distinct_sorted`` of at most this many integers (over all its arrays) is worked out in Python."""
SMALL_KEY = 1024
"""An array of at most this many values is told from the others taken by its bytes (a set lookup) rather than by
comparing it with those alike at its ends."""


def strictly_increasing(values: np.ndarray) -> bool:
    """True when every value is larger than the one before (no repeat, no step back)."""
    if values.shape[0] <= SMALL and values.ndim == 1:
        items = values.tolist()  # a few values: compared in Python (a NaN compares False either way, as in numpy)
        return all(a < b for a, b in zip(items, items[1:]))
    return values.shape[0] < 2 or bool(np.all(values[1:] > values[:-1]))


def distinct_sorted(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(arrays))`` (NaN-free input), without a sort when the values never go back.

    The result may share memory with an input array (one strictly increasing array is returned as is):
    read it, never write into it.
    """
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    dtype = np.result_type(*arrays)  # what the concatenation of them all would hold
    if len(arrays) > 1 and dtype.kind in "iu" and sum(a.shape[0] for a in arrays) <= SMALL_TOTAL and all(
            a.ndim == 1 for a in arrays):  # a few integers: a set and a sort in Python cost less than numpy's calls
        return np.array(sorted({v for a in arrays for v in a.tolist()}), dtype=dtype)
    parts: list[np.ndarray] = []
    seen: dict[tuple[int, object, object], list[np.ndarray]] = {}
    held: set[tuple[str, bytes]] = set()  # the content of each small array taken
    for a in arrays:  # an array equal to one taken adds nothing (the tags of one writer share their steps)
        if not a.shape[0]:
            continue
        if a.shape[0] <= SMALL_KEY and a.ndim == 1:  # small: its bytes are its key (one hash, no comparisons)
            key = (a.dtype.str, a.tobytes())
            if key not in held:
                held.add(key)
                parts.append(a)
            continue
        alike = seen.setdefault((a.shape[0], a[0].item(), a[-1].item()), [])
        if any(np.array_equal(a, b) for b in alike):
            continue
        if len(alike) < 4:  # compared with a few at most: many arrays alike at their ends stay linear
            alike.append(a)
        parts.append(a)
    if not parts:
        return np.zeros(0, dtype=dtype)
    joined = parts[0].astype(dtype, copy=False) if len(parts) == 1 else np.concatenate(parts).astype(dtype, copy=False)
    if strictly_increasing(joined):
        return joined
    return unique_sorted(joined)  # repeats, or steps that went back (a resume, a rollback)
