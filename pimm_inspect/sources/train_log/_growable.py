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
from collections.abc import Callable

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


_RELEASE_BYTES = 16 << 20
"""A consuming join hands back what it freed each time this much was copied (``joined(release=...)``)."""


def joined(parts: list[np.ndarray], dtype: np.dtype | None = None,
           on_ready: Callable[[list[np.ndarray], np.ndarray], None] | None = None,
           release: Callable[[], None] | None = None) -> np.ndarray:
    """``np.concatenate(parts)`` (at least one part) as a read-only array whose buffer has room after it.

    The room is never touched until an extension writes there, so it costs address space, not memory. ``dtype``
    (default: the first part's) must hold every part's values. ``on_ready(parts, out)`` is called before the copy (the
    caller may repoint its own references to the parts into ``out``). With ``release`` the list is consumed: each part
    is dropped from it once copied and ``release()`` is called every ``_RELEASE_BYTES`` copied, so the parts are freed
    as the copy goes instead of after it.
    """
    total = sum(int(p.size) for p in parts)
    target = np.empty(total + int(total * SPARE) + 16, dtype=parts[0].dtype if dtype is None else dtype)
    out = target[:total]
    out.flags.writeable = False
    if on_ready is not None:
        on_ready(parts, out)
    pos = copied = 0
    for i, part in enumerate(parts):
        target[pos:pos + part.size] = part
        pos += part.size
        if release is not None:
            copied += part.nbytes
            parts[i] = target[:0]
            del part
            if copied >= _RELEASE_BYTES:
                copied = 0
                release()
    claim(target, total)
    return out


def claim(buffer: np.ndarray, total: int) -> None:
    """``buffer``'s first ``total`` elements are a result's column and the rest is untouched room: an extension of
    that column may write there (``extended``)."""
    key = id(buffer)
    with _lock:
        _claimed[key] = (weakref.ref(buffer, lambda _ref: _forget(key)), total)


def extended(first: np.ndarray, rest: list[np.ndarray], dtype: np.dtype | None = None) -> np.ndarray:
    """``joined([first, *rest], dtype)``, written after ``first`` in its buffer when it has room, is its head and
    is of ``dtype`` (default: its own)."""
    if dtype is not None and dtype != first.dtype:
        return joined([first, *rest], dtype)
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


_KEEP_WHOLE = 1 << 16
"""A column of one part up to this many elements, an array of its own, is kept as it is (``kept``)."""


def kept(parts: list[np.ndarray], dtype: np.dtype | None = None) -> np.ndarray | None:
    """The only part of a small column, made read-only, when it can be the column as it is (an array of its own, of
    ``dtype``); else None (then it is ``joined``). A small log's columns are made whole at once, and their copy with
    room after it cost more than the rest of their join; an extension of such a column copies it (``extended`` finds
    no room), as it copies any small column."""
    if len(parts) != 1:
        return None
    part = parts[0]
    if part.base is not None or part.size > _KEEP_WHOLE or part.ndim != 1 or (dtype is not None and part.dtype != dtype):
        return None
    part.flags.writeable = False
    return part


def join_tags(chunks: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]], seeded: set[str],
              on_steps: Callable[[list[np.ndarray], np.ndarray], None] | None = None,
              release: Callable[[], None] | None = None,
              slice_of: Callable[[list[np.ndarray]], np.ndarray | None] | None = None
              ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each tag's (steps, values, walls) chunks joined, column by column, emptying ``chunks``.

    The tags of one Train: line share their steps and times chunks: each distinct list of them is joined once, and its
    chunks are dropped from every tag at once, so memory holds the chunks not joined yet, the joined columns and one
    column being joined (then ``release()``, which gives the freed chunks back). A tag in ``seeded`` starts with an
    earlier result's arrays: the new points are written after them (``extended``). ``on_steps(parts, joined)`` is told
    each joined steps column (the line index then points into it instead of holding the chunks). ``slice_of(parts)``
    gives the column without a copy when the chunks are consecutive views of one buffer (``_arena``), else None.
    """
    order = list(chunks)
    columns = {tag: [[p[k] for p in chunks[tag]] for k in range(3)] for tag in order}
    for taken in chunks.values():  # emptied in place: a holder of one of these lists (a preview) frees nothing else
        taken.clear()
    chunks.clear()
    empty = np.zeros(0)
    out: dict[str, list[np.ndarray]] = {tag: [empty, empty, empty] for tag in order}
    for k in (0, 2, 1):  # the shared columns first: their chunks are held by every tag
        groups: dict[tuple[int, ...], list[str]] = {}
        for tag in order:  # every chunk is alive here, so no id is reused while grouping
            groups.setdefault(tuple(id(a) for a in columns[tag][k]), []).append(tag)
        for members in groups.values():
            parts = columns[members[0]][k]
            for tag in members:
                columns[tag][k] = []
            told = on_steps if k == 0 else None
            whole = None
            if members[0] in seeded:
                joined_column = parts[0] if len(parts) == 1 else extended(parts[0], parts[1:])
                if told is not None:
                    told(parts, joined_column)
            else:
                whole = slice_of(parts) if slice_of is not None else None
                if whole is not None:  # the chunks were written one after another into one buffer
                    joined_column = whole
                    if told is not None:
                        told(parts, joined_column)
                elif kept(parts) is not None:  # a small column made whole in one piece: kept, not copied
                    joined_column = parts[0]
                    if told is not None:
                        told(parts, joined_column)
                else:  # each chunk freed once copied
                    joined_column = joined(parts, on_ready=told, release=release)
            del parts
            for tag in members:
                out[tag][k] = joined_column
            if release is not None and whole is None:  # nothing was freed when the column is a buffer's slice
                release()
    return {tag: (cols[0], cols[1], cols[2]) for tag, cols in out.items()}
