"""Analysed rows (what ``ls`` prints for a run), kept in the disk cache while nothing the run was read from changed.

A row is stored with the record of the load that made it and reused only while ``read_record.unchanged`` holds:
``read_record`` is the one rule of "has this run changed" (the Parquet export follows it too) and says what counts
as a change and when a result is never stored. A changed run is loaded again through the per-file cache, so only
what changed is decoded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from ...evidence import RunRow
from ...load import read_record
from .disk_cache import DiskCache

ROW_FORMAT = 2
"""The layout of a stored row, bumped when ``RunRow`` gains or changes a field (2: ``metrics``), so entries stored
before are read again, never half-trusted (the codec also refuses a dataclass whose stored fields differ)."""
ROW_KIND = f"run_row.{ROW_FORMAT}"
ROW_CODE = ("analysis",)
"""A row is made by load and analysis code: entries of any other version of either are ignored."""

RowBuild = Callable[[Path], tuple[RunRow, bool]]
"""Load and analyse one run: (its row, whether the row may be stored)."""


def stored_row(disk: DiskCache, root: Path) -> RunRow | None:
    """The stored row of the run at ``root`` when nothing it was read from changed since, else None."""
    stored = disk.get_value(ROW_KIND, root, "", ROW_CODE)
    if not (isinstance(stored, tuple) and len(stored) == 3 and type(stored[0]) is float
            and isinstance(stored[1], tuple) and isinstance(stored[2], RunRow)):
        return None  # missing, damaged or foreign
    made_s, flat, row = stored
    record = read_record.from_flat(made_s, flat)
    if record is None or row.root != root:
        return None  # damaged, or a row of another path: never trusted
    return row if read_record.unchanged(record) else None  # also None when the clock went back


def cached_row(root: Path, build: RowBuild, disk: DiskCache | None) -> RunRow:
    """The row of the run at ``root``: the stored one when still valid, else ``build(root)`` (then stored)."""
    root = Path(root).absolute()
    row = stored_row(disk, root) if disk is not None and disk.usable_for(root) else None
    return row if row is not None else build_and_store(root, build, disk)


def build_and_store(root: Path, build: RowBuild, disk: DiskCache | None) -> RunRow:
    """``build(root)``, recording what it read, and the row stored with those dependencies when it may be."""
    root = Path(root).absolute()
    if disk is None or not disk.usable_for(root):
        return build(root)[0]
    row, record = read_record.record_read(root, partial(build, root), str(disk.directory))
    if record.reusable:
        disk.put_value(ROW_KIND, root, "", (record.started_s, read_record.flat(record), row), ROW_CODE)
    return row


def worker_count(configured: int | None = None) -> int:
    """Processes for loading runs: ``configured`` (``Settings.jobs``, from ``$PIMM_INSPECT_JOBS``) if given, else the
    processors this process may use that other work leaves idle now (at least 1, at most 8): on a busy machine more
    processes only cost more CPU."""
    if configured is not None:
        return max(1, configured)
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    idle = available - busy_now()
    return max(1, min(int(idle + 0.5), available, 8))


def busy_now() -> float:
    """Processors other work is using now: the runnable tasks of ``/proc/loadavg`` other than this process.

    The 1-minute load average lags by a minute: right after a heavy command ends (or between the commands of a
    script) it still says "busy" on an idle machine. It stands in only where ``/proc/loadavg`` cannot be read.
    """
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            running = int(handle.read().split()[3].split("/")[0])
        return float(max(0, running - 1))
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


POOL_MIN_RUNS = 16
"""Fewer runs to load than this are loaded in this process (starting workers would cost more)."""


def cached_rows(roots: list[Path], build: RowBuild, disk: DiskCache | None, jobs: int | None = None
                ) -> Iterator[RunRow]:
    """The row of every run, in order: stored rows where still valid, the others built by ``jobs`` worker
    processes (forked; ``build`` must pickle: a module-level function or plain object), or here when few or when forking is not possible."""
    roots = [Path(r).absolute() for r in roots]
    hits = {i: row for i, root in enumerate(roots) if disk is not None and disk.usable_for(root)
            and (row := stored_row(disk, root)) is not None}
    misses = [root for i, root in enumerate(roots) if i not in hits]
    jobs = worker_count(jobs)
    built = _built_in_workers(misses, build, disk, jobs) if jobs > 1 and len(misses) >= POOL_MIN_RUNS else None
    serial = (build_and_store(root, build, disk) for root in misses)
    fresh = built if built is not None else serial
    for i in range(len(roots)):
        yield hits[i] if i in hits else next(fresh)


def _worker_signals() -> None:
    """Ctrl-C ends a worker at once and silently (the default action): the command reports the interrupt once;
    Python's handler would print a traceback from every worker waiting for work."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _built_in_workers(misses: list[Path], build: RowBuild, disk: DiskCache | None, jobs: int
                      ) -> Iterator[RunRow] | None:
    """Rows of ``misses`` built by a pool of forked processes, in order (the rest here if a worker dies)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    def rows() -> Iterator[RunRow]:
        done = 0
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                     initializer=_worker_signals) as pool:
                for row in pool.map(partial(build_and_store, build=build, disk=disk), misses, chunksize=4):
                    done += 1
                    yield row
        except BrokenProcessPool:  # a worker died (killed, out of memory): finish here, one run at a time
            for root in misses[done:]:
                yield build_and_store(root, build, disk)

    return rows()
