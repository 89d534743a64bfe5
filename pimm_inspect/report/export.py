"""Tidy scalar tables for ``export`` (pandas, imported lazily) and an exact JSON writer."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np

from ..analysis.scalar_rows import COLUMNS, NO_ATTEMPT, TagRows
from .safe_text import clean_json, encodable_text, name_text

if TYPE_CHECKING:
    import pandas as pd

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
        # C1 controls, bidi and invisible characters as \uXXXX (json.dumps leaves them raw): the same value, inert
        sources = [clean_json(json.dumps(name_text(s), ensure_ascii=False)) for s in block.sources]
        head = '{"tag": ' + clean_json(json.dumps(encodable_text(block.tag), ensure_ascii=False)) + ', "step": '
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


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
"""A CSV cell starting with one of these is a formula to a spreadsheet (OWASP's list for CSV injection, with the NUL
character that ASVS 5.0's requirement 1.2.10 adds: a spreadsheet may drop a leading NUL and read the rest)."""
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")
"""A cell that is just a number (``-0.5``, ``+1e-3``) is a number, not a formula: left as it is."""


def csv_cell(text: str) -> str:
    """A text cell as OWASP recommends for CSV: one starting with ``= + - @``, TAB, CR or NUL gets a leading ``'``, so a
    spreadsheet shows it as text instead of evaluating it (``=HYPERLINK(...)``, ``=cmd|...``); a plain number is
    kept. Only CSV does this: JSON and Parquet keep the exact value."""
    if text and text[0] in FORMULA_START and not _NUMBER.match(text):
        return "'" + text
    return text


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The export table (``to_frame``: names already escaped) as written to CSV: text cells through ``csv_cell``;
    numbers unchanged."""
    frame = frame.copy()
    for column in ("tag", "source"):
        if len(frame):
            frame[column] = frame[column].map({value: csv_cell(value) for value in frame[column].unique()})
    return frame


def csv_text(frame: pd.DataFrame) -> str:
    """The export table as CSV text: text cells neutralised (``csv_cell``) and always quoted, so a CR or LF inside a
    tag or file name stays inside its cell (the csv module leaves a lone CR unquoted, which every reader takes for
    a line break: a new row that could start with a formula); numbers unquoted."""
    import csv

    text: str = csv_frame(frame).to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)
    return text


@contextmanager
def replaced_atomically(target: str | Path, binary: bool = False) -> Generator[IO[Any], None, None]:
    """A file to write in ``target``'s folder (a temporary name), renamed over ``target`` once the body finished:
    a failure (a crash, a full disk, Ctrl-C) removes it and never leaves a partial ``target``. The file gets the
    mode ``open`` would give a new one (0666 less the umask)."""
    target = Path(target)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:  # named by the file asked for, not by the temporary one
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        handle: IO[Any] = (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=""))
        with handle:
            yield handle
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


__all__ = ["COLUMNS", "NON_FINITE", "csv_cell", "csv_frame", "csv_text", "json_records",
           "replaced_atomically", "write_json"]
