"""Rows of runs (what ``ls`` prints), loaded and analysed, or read from the disk cache while still valid.

``load_row(path)`` is the one call for a front end that lists runs: the cached row when nothing the run was
read from changed (only stats and one small entry read), else the run loaded and analysed now.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..evidence import RunRow
from ..load.disk_cache import DiskCache
from ..load.row_cache import cached_row, cached_rows
from ..load.safe import load_reusable
from . import analyze
from .summary import run_row


def build_row(root: Path) -> tuple[RunRow, bool]:
    """Load and analyse the run at ``root``: its row, and whether that row may be stored (not live, not failed)."""
    run, reusable = load_reusable(root)  # the Parquet export loads its runs the same way
    return run_row(analyze(run)), reusable


def load_row(path: Path | str) -> RunRow:
    """The ``ls`` row of the run at ``path`` (from the disk cache when still valid)."""
    return cached_row(Path(path), build_row, DiskCache.configured())


def load_rows(paths: list[Path], jobs: int | None = None) -> Iterator[RunRow]:
    """The ``ls`` rows of many runs, in order: cached rows where still valid, the others loaded by ``jobs``
    processes (default: ``$PIMM_INSPECT_JOBS``, else the processors available, at most 8)."""
    return cached_rows(list(paths), build_row, DiskCache.configured(), jobs)
