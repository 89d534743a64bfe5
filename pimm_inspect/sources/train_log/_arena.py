"""Buffers the train.log reader writes its template-line columns into, in file order (issue 23).

A 1 GB log gives each tag ~9,000 chunks (one per block piece). Joined once the file is read, they cost a second pass
over every column (~1.4 s of a cold read's CPU, the new buffers' page faults included) after the last byte is read.
With the scanning child (``_ahead``) the reader waits for the child a good part of the read, so the copy is better
done then: each column of the template lines (a tag's values; the steps and times its lines share with the other
tags) is copied, chunk by chunk, into one buffer sized for the rest of the file, and a chunk is a view of its place
there. A series whose chunks are consecutive views of one buffer is that buffer's slice (``Arenas.slice_of``):
nothing is joined at the end. The room after the points is never touched, so it costs address space, not memory,
and an extension of the result may write its points there (``_growable.claim``).

A buffer that fills up is followed by a new one (that series is then joined as before, by copying); one that cannot
be had (a limit on address space) leaves the chunks as they came. Only the template path's tags create a buffer, so
odd lines' own tags (another line shape, a term on a few lines) stay chunks of their own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._growable import claim

MIN_ROWS = 1 << 16
"""The rows a read must expect on the rest of its file to use buffers (a small log's columns are joined as before;
tests lower it), and the least a buffer holds."""
MARGIN = 1.25
"""A buffer holds this times the rows expected, so a log whose later blocks are a little denser still fits."""


class _Buffer:
    """One column's buffer and how much of it is written."""

    __slots__ = ("array", "used")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.used = 0


Span = tuple[np.ndarray, int, int]
"""A chunk's place in a column buffer: (buffer, start, stop)."""


def view(span: Span) -> np.ndarray:
    """The read-only view of a buffer's ``[start, stop)``."""
    out = span[0][span[1]:span[2]]
    out.flags.writeable = False
    return out


def no_rows() -> int:
    return 0


class Arenas:
    """The reader's column buffers, by key: ``("v", tag)`` a tag's values, ``("s", tag)`` / ``("w", tag)`` the steps
    and times first added with that tag."""

    def __init__(self) -> None:
        self._columns: dict[tuple[str, str], _Buffer] = {}
        self._by_id: dict[int, _Buffer] = {}
        self._slices: dict[tuple[int, int, int], np.ndarray] = {}
        self.rows_left: Callable[[], int] = no_rows
        """Rows the rest of the file is expected to hold (set by the reader while it reads a block)."""

    def put(self, key: tuple[str, str], chunk: np.ndarray, create: bool) -> Span | None:
        """``chunk`` copied after the column's points: its place (buffer, start, stop); None when the column has no
        buffer (``create`` false, the rest of the file too small to be worth one, or none could be had)."""
        column = self._columns.get(key)
        if column is None and not create:
            return None
        n = int(chunk.shape[0])
        if chunk.ndim != 1 or (column is not None and column.array.dtype != chunk.dtype):
            return None
        if column is None or column.used + n > column.array.shape[0]:
            expected = self.rows_left()
            if column is None and expected < MIN_ROWS:
                return None
            try:
                array = np.empty(max(n, MIN_ROWS, int(expected * MARGIN)), dtype=chunk.dtype)
            except MemoryError:
                return None
            column = _Buffer(array)
            self._columns[key] = column
            self._by_id[id(array)] = column
        start, column.used = column.used, column.used + n
        column.array[start:column.used] = chunk
        return column.array, start, column.used

    def slice_of(self, parts: list[np.ndarray]) -> np.ndarray | None:
        """The one slice of a buffer that ``parts`` (at least one) are consecutive views of, read-only, or None.

        When it starts the buffer and ends at its last written point it is claimed (``_growable.claim``): an extension
        of the result may write its points in the room after it.
        """
        base = parts[0].base
        column = self._by_id.get(id(base)) if isinstance(base, np.ndarray) else None
        if column is None or column.array is not base:
            return None
        start_ptr = base.__array_interface__["data"][0]
        first = parts[0].__array_interface__["data"][0]
        item = base.itemsize
        expect = first
        for part in parts:
            if part.base is not base or part.__array_interface__["data"][0] != expect:
                return None
            expect += part.shape[0] * item
        start, stop = (first - start_ptr) // item, (expect - start_ptr) // item
        key = (id(base), start, stop)
        out = self._slices.get(key)
        if out is None:  # the tags sharing a steps or times column get the very same array
            out = self._slices[key] = view((base, start, stop))
        if start == 0 and stop == column.used:
            claim(base, stop)
        return out
