"""Rows of runs (what ``ls`` prints and the UI's runs table shows), loaded and analysed, or read from the disk cache
while still valid.

The cached row is served when nothing the run was read from changed (only stats and one small entry read), else the
run is loaded (through the per-file cache) and analysed now, and its row stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..analysis import analyze
from ..analysis.summary import run_row
from ..evidence import RunRow
from ..load.safe import load_reusable
from .store.cache import ReadCache
from .store.disk_cache import DiskCache
from .row_index import Fresh, indexed_rows
from .store.row_cache import cached_row


def build_row(root: Path, cache: ReadCache | None = None) -> tuple[RunRow, bool]:
    """Load and analyse the run at ``root``: its row, and whether that row may be stored (not live, not failed)."""
    run, reusable = load_reusable(root, cache)  # the Parquet export loads its runs the same way
    return run_row(analyze(run)), reusable


def load_row(path: Path | str, disk: DiskCache | None, cache: ReadCache | None = None) -> RunRow:
    """The row of the run at ``path`` (from ``disk`` when still valid)."""
    return cached_row(Path(path), _Build(cache), disk)


def load_rows(paths: list[Path], disk: DiskCache | None, cache: ReadCache | None = None, jobs: int | None = None,
              under: Path | None = None, fresh: Fresh | None = None) -> Iterator[RunRow]:
    """The rows of many runs, in order: cached rows where still valid, the others loaded by ``jobs`` processes
    (None: the processors other work leaves idle, at most 8). ``under``: the folder the runs were found in, whose
    row index (``row_index``) is read first and written again when it missed rows (default: their common folder);
    ``fresh``: where runs lead and what their folders hold, found a moment ago (``row_index.served_from`` takes
    each once)."""
    return indexed_rows(list(paths), _Build(cache), disk, jobs, under, fresh)


class _Build:
    """``build_row`` through one per-file cache; a plain object, so worker processes receive it by pickle."""

    def __init__(self, cache: ReadCache | None) -> None:
        self.cache = cache

    def __call__(self, root: Path) -> tuple[RunRow, bool]:
        return build_row(root, self.cache)
