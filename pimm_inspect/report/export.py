"""Tidy scalar tables for ``export`` (pandas, imported lazily) and an exact JSON writer."""

from __future__ import annotations

import json
import math
from typing import IO, Iterator

from ..analysis.scalar_rows import COLUMNS, NO_ATTEMPT, TagRows, scalar_rows, to_frame
from ..model import Run

NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""JSON has no NaN/inf: a non-finite ``value`` is written as one of these strings (what ``float()`` reads back)."""


def scalar_frame(run: Run, tags: tuple[str, ...] = (), policy: str = "all", all_sources: bool = False):
    """Columns tag, step, value, wall_time, attempt, source: one row per (tag, step, attempt) after ``policy``."""
    return to_frame(scalar_rows(run, tags, policy, all_sources))


def _value(x: float) -> float | str:
    return x if math.isfinite(x) else NON_FINITE[repr(x)]


def json_records(rows: list[TagRows]) -> Iterator[str]:
    """One JSON object per row; floats by ``repr`` (shortest text that reads back to the same double)."""
    for block in rows:
        sources = [json.dumps(s, ensure_ascii=False) for s in block.sources]
        tag = json.dumps(block.tag, ensure_ascii=False)
        steps, values, walls = block.steps.tolist(), block.values.tolist(), block.wall_times_s.tolist()
        attempts, index = block.attempts.tolist(), block.source_index.tolist()
        for i in range(len(steps)):
            wall = walls[i]
            yield (f'{{"tag": {tag}, "step": {steps[i]}, "value": {json.dumps(_value(values[i]))}, '
                   f'"wall_time": {repr(wall) if math.isfinite(wall) else "null"}, '
                   f'"attempt": {"null" if attempts[i] == NO_ATTEMPT else attempts[i]}, '
                   f'"source": {sources[index[i]]}}}')


def write_json(rows: list[TagRows], fh: IO[str]) -> int:
    """Write the rows as one JSON array (streamed, one object per line); returns the row count."""
    count = 0
    fh.write("[")
    for record in json_records(rows):
        fh.write(("\n" if count == 0 else ",\n") + record)
        count += 1
    fh.write("\n]\n" if count else "]\n")
    return count


__all__ = ["COLUMNS", "NON_FINITE", "json_records", "scalar_frame", "write_json"]
