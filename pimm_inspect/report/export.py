"""Tidy scalar tables for ``export`` (pandas, imported lazily) and an exact JSON writer."""

from __future__ import annotations

import json
from typing import IO, Callable, Iterable, Iterator

import numpy as np

from ..analysis.scalar_rows import COLUMNS, NO_ATTEMPT, TagRows

NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""JSON has no NaN/inf: a non-finite ``value`` is written as one of these strings (what ``float()`` reads back)."""


def _floats(array: np.ndarray, non_finite: Callable[[str], str]) -> list[str]:
    """Each float as ``repr`` text (the shortest that reads back to the same double); non-finite via ``non_finite``."""
    texts = list(map(float.__repr__, array.tolist()))
    for i in np.flatnonzero(~np.isfinite(array)).tolist():
        texts[i] = non_finite(texts[i])
    return texts


SLICE_ROWS = 1 << 16
"""Rows turned into Python objects at a time: a tag of 5M points costs a few MB of lists, not over a GB."""


def json_records(rows: Iterable[TagRows]) -> Iterator[str]:
    """One JSON object per row; floats by ``repr``, NaN/inf values as the documented strings."""
    for block in rows:
        if not len(block):
            continue
        sources = [json.dumps(s, ensure_ascii=False) for s in block.sources]
        head = '{"tag": ' + json.dumps(block.tag, ensure_ascii=False) + ', "step": '
        for start in range(0, len(block), SLICE_ROWS):
            part = slice(start, start + SLICE_ROWS)
            values = _floats(block.values[part], lambda text: f'"{NON_FINITE[text]}"')
            walls = _floats(block.wall_times_s[part], lambda _text: "null")
            attempts = ["null" if a == NO_ATTEMPT else str(a) for a in block.attempts[part].tolist()]
            files = [sources[i] for i in block.source_index[part].tolist()]
            for step, value, wall, attempt, source, seq in zip(block.steps[part].tolist(), values, walls, attempts,
                                                               files, block.seq[part].tolist()):
                yield (f'{head}{step}, "value": {value}, "wall_time": {wall}, "attempt": {attempt}, '
                       f'"source": {source}, "seq": {seq}}}')


def write_json(rows: Iterable[TagRows], fh: IO[str], batch: int = 10_000) -> int:
    """Write the rows as one JSON array (streamed in batches, one object per line); returns the row count."""
    count = 0
    pending: list[str] = []
    fh.write("[")
    for record in json_records(rows):
        pending.append(record)
        if len(pending) >= batch:
            fh.write(("\n" if count == 0 else ",\n") + ",\n".join(pending))
            count += len(pending)
            pending = []
    if pending:
        fh.write(("\n" if count == 0 else ",\n") + ",\n".join(pending))
        count += len(pending)
    fh.write("\n]\n" if count else "]\n")
    return count


__all__ = ["COLUMNS", "NON_FINITE", "json_records", "write_json"]
