"""Columns an extension appends to without copying what an earlier result holds.

An extended attempt's series are the earlier series plus the new points. Copying the earlier
points each time made a refresh of a 1 GB log cost a second of memory traffic however little was
appended. Here every column is built in a buffer with some room after it (untouched, so not resident
memory), and extensions write the new points into that room: the earlier result's arrays are views of the
buffer's first elements and never see what is written after them. A buffer is extended in place only
by the array that ends at its last claimed element (one extension per result), so two extensions
of the same earlier result never write over each other: the second one copies.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

SPARE = 1 / 16
"""Room left after the points when a buffer is allocated (a fraction of them)."""
_lock = threading.Lock()
_claimed: dict[int, tuple[weakref.ref[np.ndarray], int]] = {}
"""id(buffer) -> (the buffer, how many of its elements some result's array already covers)."""


def _forget(key: int) -> None:
    _claimed.pop(key, None)


def _room(first: np.ndarray, total: int) -> np.ndarray | None:
    """The buffer ``first`` is the claimed head of, if ``total`` elements fit in it (claims them)."""
    if not isinstance(first.base, np.ndarray):
        return None
    base: np.ndarray = first.base
    if base.dtype != first.dtype or base.ndim != 1 or first.ndim != 1:
        return None
    entry = _claimed.get(id(base))
    owner = entry[0]() if entry is not None else None
    if entry is None or owner is not base or entry[1] != first.size or base.size < total:
        return None
    if first.size and first.__array_interface__["data"][0] != base.__array_interface__["data"][0]:
        return None  # a view that does not start the buffer
    _claimed[id(base)] = (entry[0], total)
    return base


def joined(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` (at least one part) as a read-only array whose buffer has room after it.

    The room is never touched until an extension writes there, so it costs address space, not memory.
    """
    total = sum(int(p.size) for p in parts)
    target = np.empty(total + int(total * SPARE) + 16, dtype=parts[0].dtype)
    pos = 0
    for part in parts:
        target[pos:pos + part.size] = part
        pos += part.size
    key = id(target)
    with _lock:
        _claimed[key] = (weakref.ref(target, lambda _ref: _forget(key)), total)
    out = target[:total]
    out.flags.writeable = False
    return out


def extended(first: np.ndarray, rest: list[np.ndarray]) -> np.ndarray:
    """``joined([first, *rest])``, written after ``first`` in its buffer when it has room and is its head."""
    total = first.size + sum(int(r.size) for r in rest)
    with _lock:
        target = _room(first, total)
    if target is None:
        return joined([first, *rest])
    pos = first.size
    for part in rest:
        target[pos:pos + part.size] = part
        pos += part.size
    out = target[:total]
    out.flags.writeable = False
    return out
