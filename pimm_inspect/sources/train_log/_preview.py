"""A preview of one tag's points read so far, thinned and kept up to date as chunks are added (``_Reader.so_far``).

The preview keeps every k-th point of the tag (by the point's index since the start of the attempt, k a power of two
that doubles as the points grow, so about ``budget`` to ``2 * budget`` are kept): each call looks only at the chunks
added since the last one, and a doubling takes every other kept point, so a preview costs about the same at the end of
a 1 GB log as at its start. Kept points are copies: the reader's chunks are never held here once a call returns.
"""

from __future__ import annotations

import numpy as np

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(steps, values, wall times) of consecutive points of one tag."""


class ThinnedPoints:
    """Every k-th point of a growing list of chunks of one tag (the reader's ``SegmentState.chunks[tag]``)."""

    def __init__(self, budget: int) -> None:
        self.budget = max(1, budget)
        self._parts: list[Chunk] | None = None
        """The list of chunks followed (the reader appends to it; another list means start again)."""
        self._seen = 0
        """Chunks of that list taken in so far."""
        self._count = 0
        """Points in those chunks (the index of the next point)."""
        self._k = 1
        self._kept: Chunk | None = None
        self._last = 0
        """Points of the last chunk of that list taken in so far."""

    def update(self, parts: list[Chunk]) -> Chunk:
        """The thinned points of ``parts`` (the same list as last time, grown, or a new one)."""
        if parts is not self._parts or len(parts) < self._seen:
            self._parts, self._seen, self._count, self._k, self._kept = parts, 0, 0, 1, None
            self._last = 0
        new = parts[self._seen:]
        if self._seen:  # the reader widens its last chunk when the next one goes on in the same buffers (_arena)
            last = parts[self._seen - 1]
            if int(last[0].shape[0]) > self._last:
                new.insert(0, (last[0][self._last:], last[1][self._last:], last[2][self._last:]))
        self._seen = len(parts)
        self._last = int(parts[-1][0].shape[0]) if parts else 0
        total = self._count + sum(int(p[0].shape[0]) for p in new)
        k = self._k
        while total > k * self.budget:
            k *= 2
        pieces: list[list[np.ndarray]] = [[], [], []]
        if self._kept is not None:
            ratio = k // self._k  # kept points are those at multiples of the old k: every ratio-th is at one of k
            for column, kept in zip(pieces, self._kept):
                column.append(kept[::ratio])
        self._k = k
        for part in new:
            start = (-self._count) % k  # the first point of this chunk whose index is a multiple of k
            for column, array in zip(pieces, part):
                column.append(array[start::k])
            self._count += int(part[0].shape[0])
        if not pieces[0]:
            return (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        joined = (np.concatenate(pieces[0]), np.concatenate(pieces[1]), np.concatenate(pieces[2]))  # copies
        self._kept = joined
        return joined
