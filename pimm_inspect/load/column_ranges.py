"""Each series' step span and time range, taken once per column during one pass over a run's series.

``ScalarSeries.first_step``/``last_step`` each scan the step column (``arrays.value_range`` remembers a range only
for a read-only array), so a loop reading both scanned every writable column twice, and again for every tag sharing
it (a train.log's tags share their step and time columns). A ``ColumnRanges`` made for one pass scans each column
once: it keeps the arrays it saw, so an ``id`` is never reused while it lives.
"""

from __future__ import annotations

import numpy as np

from ..arrays import value_range
from ..model import ScalarSeries


class ColumnRanges:
    """``value_range`` of each array met during one pass (make one per pass; it holds the arrays it saw)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[tuple[int, bool], tuple[np.ndarray, tuple[float, float] | None]] = {}

    def of(self, values: np.ndarray, finite_only: bool = False) -> tuple[float, float] | None:
        """(min, max) of ``values`` (its finite ones with ``finite_only``), None when there is none."""
        key = (id(values), finite_only)
        hit = self._seen.get(key)
        if hit is not None and hit[0] is values:
            return hit[1]
        got = value_range(values, finite_only)
        self._seen[key] = (values, got)
        return got

    def steps(self, s: ScalarSeries) -> tuple[int, int] | None:
        """(``s.first_step``, ``s.last_step``), None for an empty series."""
        span = self.of(s.steps)
        return None if span is None else (int(span[0]), int(span[1]))
