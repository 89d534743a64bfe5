"""Analysed rows (what ``ls`` prints for a run), kept in the disk cache while nothing the run was read from changed.

A row is stored with the record of the load that made it and reused only while ``read_record.unchanged`` holds:
``read_record`` is the one rule of "has this run changed" (the Parquet export follows it too) and says what counts
as a change and when a result is never stored. A changed run is loaded again through the per-file cache, so only
what changed is decoded.

An entry is ``(made_s, deps, head, detail)``: the record's dependencies as one ``\\0``-joined string, the row
without its detail (findings, attempts, command, config, per-tag metrics), and that detail as one encoded text kept as raw bytes
(an array of the entry: not parsed when the entry is read). Reading a warm
tree of 10,000 runs then decodes a few dozen values per run; the detail of a row is decoded the first time
something asks for it (``StoredRow``): ``ls --json`` and the runs table's columns never do.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...evidence import RunRow
from ...load import read_record
from ...sources.confine import real_path
from . import codec
from .disk_cache import DiskCache, run_resolved

ROW_FORMAT = 2
"""The layout of a stored row, bumped when ``RunRow`` gains or changes a field (2: ``metrics``), so entries stored
before are read again, never half-trusted (the codec also refuses a dataclass whose stored fields differ)."""
ROW_KIND = f"run_row.{ROW_FORMAT}"
ROW_CODE = ("analysis",)
"""A row is made by load and analysis code: entries of any other version of either are ignored."""

RowBuild = Callable[[Path], tuple[RunRow, bool]]
"""Load and analyse one run: (its row, whether the row may be stored)."""

DETAIL = ("findings", "attempt_facts", "command", "config", "metrics")
"""The fields of a row stored apart, as one text decoded on first use (most of a row's bytes)."""
_FIELDS = tuple(f.name for f in dataclasses.fields(RunRow))
_HEAD = tuple(name for name in _FIELDS if name not in DETAIL)
_SLOTS = {name: RunRow.__dict__[name] for name in _FIELDS}
"""``RunRow``'s own slots for them (``StoredRow`` fills them when its detail is decoded)."""


class LazyRow(RunRow):
    """A ``RunRow`` whose fields are filled from stored text on first use (``StoredRow``: its detail;
    ``row_index.IndexedRow``: every field but its root), by ``_expand(detail)`` of the subclass.

    Compares equal to a plain ``RunRow`` of the same values and hashes alike; ``dataclasses.replace`` works as on a
    plain one; pickles as a plain one unless the subclass says otherwise.
    """

    __slots__ = ()

    def _expand(self, detail: bool) -> None:
        """Fill the slots of the detail fields (``detail``) or of the others."""
        raise NotImplementedError

    def _set_detail(self, text: str) -> None:
        """Fill the detail fields from their stored text; ``codec.BadEntry`` when it is not theirs."""
        values = codec.from_text(text)
        if not (isinstance(values, tuple) and len(values) == len(DETAIL)):
            raise codec.BadEntry("a row's detail does not match its fields")
        for name, value in zip(DETAIL, values):
            _SLOTS[name].__set__(self, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRow):
            return NotImplemented
        return row_values(self) == row_values(other)

    def __hash__(self) -> int:
        return hash(row_values(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return RunRow, row_values(self)


def lazy_fields(cls: type[LazyRow], names: tuple[str, ...]) -> None:
    """Give ``cls`` a property per field of ``names`` that reads ``RunRow``'s slot, expanding the row on first use
    (a detail field expands every detail field at once)."""
    for name in names:
        setattr(cls, name, _lazy_field(name, name in DETAIL))


def _lazy_field(name: str, detail: bool) -> property:
    slot = _SLOTS[name]

    def get(row: LazyRow) -> Any:
        try:
            return slot.__get__(row, RunRow)
        except AttributeError:
            row._expand(detail)
            return slot.__get__(row, RunRow)

    def put(row: LazyRow, value: Any) -> None:
        slot.__set__(row, value)  # RunRow.__init__ (dataclasses.replace of a stored row) sets every field

    return property(get, put, doc=f"``RunRow.{name}``, decoded from the stored text on first use.")


class StoredRow(LazyRow):
    """A ``RunRow`` read back from the cache: equal to the row stored, its detail decoded on first access."""

    __slots__ = ("_detail",)

    def _expand(self, detail: bool) -> None:
        self._set_detail(object.__getattribute__(self, "_detail").tobytes().decode())

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (to or from a worker process) with its detail still encoded."""
        head = RunRow(**{name: getattr(self, name) for name in _HEAD})
        return _unpacked, (head, object.__getattribute__(self, "_detail"))


lazy_fields(StoredRow, DETAIL)


def row_values(row: RunRow) -> tuple[Any, ...]:
    """Every field of ``row``, in order (a stored row's detail decoded)."""
    return tuple(getattr(row, name) for name in _FIELDS)


def _packed(row: RunRow) -> tuple[RunRow, np.ndarray]:
    """(the row without its detail, the detail's text as raw bytes: not parsed when the entry is read)."""
    head = RunRow(**{name: getattr(row, name) for name in _HEAD})  # the detail fields at their defaults
    text = codec.to_text(tuple(getattr(row, name) for name in DETAIL))
    return head, np.frombuffer(text.encode(), dtype=np.uint8)


def _unpacked(head: RunRow, detail: np.ndarray) -> StoredRow:
    row = object.__new__(StoredRow)
    for name in _HEAD:
        _SLOTS[name].__set__(row, getattr(head, name))
    object.__setattr__(row, "_detail", detail)
    return row


def store_entry(disk: DiskCache, root: Path, made_s: float, deps: tuple[str, ...], row: RunRow) -> bytes | None:
    """Store ``row`` of the run at ``root`` with its read record (``made_s`` and ``read_record.flat`` parts): its
    detail's encoded text, or None when the row cannot be stored."""
    try:
        head, detail = _packed(row)
    except (codec.NotCacheable, ValueError, TypeError, RecursionError):
        return None  # not storable: simply not cached
    disk.put_value(ROW_KIND, root, "", (made_s, "\0".join(deps), head, detail), ROW_CODE)
    return detail.tobytes()


def stored_entry(disk: DiskCache, root: Path) -> tuple[float, tuple[str, ...], RunRow] | None:
    """(made_s, ``read_record.flat`` parts, row) as stored for the run at ``root``, whatever changed since; None when
    missing, damaged or foreign."""
    stored = disk.get_value(ROW_KIND, root, "", ROW_CODE)
    if not (isinstance(stored, tuple) and len(stored) == 4 and type(stored[0]) is float and type(stored[1]) is str
            and type(stored[2]) is RunRow and isinstance(stored[3], np.ndarray) and stored[3].dtype == np.uint8
            and stored[3].ndim == 1):
        return None
    made_s, deps, head, detail = stored
    return made_s, tuple(deps.split("\0")) if deps else (), _unpacked(head, detail)


def stored_row(disk: DiskCache, root: Path, real_root: str | None = None) -> RunRow | None:
    """The stored row of the run at ``root`` when nothing it was read from changed since, else None.

    ``real_root``: where ``root`` really leads, resolved just now by the caller (else resolved here when needed)."""
    entry = stored_entry(disk, root)
    if entry is None:
        return None
    made_s, flat, row = entry
    return row if still_valid(root, made_s, flat, row, real_root) else None


def still_valid(root: Path, made_s: float, flat: tuple[str, ...], row: RunRow, real_root: str | None = None) -> bool:
    """True when the stored ``row`` of ``root`` (``stored_entry``'s parts) may be served: nothing it was read from
    changed, the clock did not go back, and it is a row of that path."""
    record = read_record.from_flat(made_s, flat)
    if record is None or row.root != root:
        return False  # damaged, or a row of another path: never trusted
    return read_record.unchanged(record, {str(root): real_root} if real_root is not None else None)


def cached_row(root: Path, build: RowBuild, disk: DiskCache | None) -> RunRow:
    """The row of the run at ``root``: the stored one when still valid, else ``build(root)`` (then stored)."""
    root = Path(root).absolute()
    real = real_path(root) if disk is not None else ""
    row = stored_row(disk, root, real) if disk is not None and disk.usable_for(root, real) else None
    return row if row is not None else build_and_store(root, build, disk)


Keep = Callable[[Path, float, tuple[str, ...], RunRow, bytes], RunRow]
"""What ``build_and_store`` hands back for a row it stored: given the run's root, its record (``made_s`` and
``read_record.flat`` parts), the row and its encoded detail (``row_index`` hands back the row's index record, so the
index is written without reading the stored entries back). A module-level function: workers receive it by pickle."""


def build_and_store(root: Path, build: RowBuild, disk: DiskCache | None, keep: Keep | None = None) -> RunRow:
    """``build(root)``, recording what it read, and the row stored with those dependencies when it may be
    (``keep(...)`` of the stored row handed back instead of the row, when given)."""
    root = Path(root).absolute()
    real = real_path(root) if disk is not None else ""
    if disk is None or not disk.usable_for(root, real):
        return build(root)[0]
    with run_resolved(root, real):  # the files of the run ask whether the cache may serve them: resolved once
        row, record = read_record.record_read(root, partial(build, root), str(disk.directory), real)
    if record.reusable:
        flat = read_record.flat(record)
        detail = store_entry(disk, root, record.started_s, flat, row)
        if keep is not None and detail is not None:
            return keep(root, record.started_s, flat, row, detail)
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


def _off_main_thread() -> bool:
    """True in a thread other than the main one (the UI's loader): rows built here would share the interpreter's
    lock with the thread drawing them."""
    import threading

    return threading.current_thread() is not threading.main_thread()


POOL_MIN_RUNS = 16
"""Fewer runs to load than this are loaded in this process (starting workers would cost more)."""


def cached_rows(roots: list[Path], build: RowBuild, disk: DiskCache | None, jobs: int | None = None,
                keep: Keep | None = None) -> Iterator[RunRow]:
    """The row of every run, in order: stored rows where still valid, the others built by ``jobs`` worker
    processes (forked; ``build`` and ``keep`` must pickle: module-level functions or plain objects), or here when few,
    when one process would do (``worker_count``; off the main thread a process of its own unless ``jobs`` is 1) or
    when forking is not possible (``build_and_store``: ``keep`` of the rows stored)."""
    roots = [Path(r).absolute() for r in roots]
    hits: dict[int, RunRow] = {}
    if disk is not None:
        for i, root in enumerate(roots):
            real = real_path(root)  # once: whether the cache may serve the run, and its ``r`` dependency
            if disk.usable_for(root, real) and (row := stored_row(disk, root, real)) is not None:
                hits[i] = row
    misses = [root for i, root in enumerate(roots) if i not in hits]
    processes = worker_count(jobs)
    make = partial(build_and_store, build=build, disk=disk, keep=keep)
    # Called off the main thread (the UI's runs table), even one worker is a process: the rows are then built beside
    # the caller's other threads, not by turns with them under one interpreter lock (unless ``jobs`` said 1).
    pooled = processes > 1 or (jobs is None and _off_main_thread())
    built = _built_in_workers(misses, make, processes) if pooled and len(misses) >= POOL_MIN_RUNS else None
    serial = (make(root) for root in misses)
    fresh = built if built is not None else serial
    for i in range(len(roots)):
        yield hits[i] if i in hits else next(fresh)


def _worker_signals() -> None:
    """Ctrl-C ends a worker at once and silently (the default action): the command reports the interrupt once;
    Python's handler would print a traceback from every worker waiting for work."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # forked with Ctrl-C held back (see _built_in_workers): deliver it now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _built_in_workers(misses: list[Path], make: Callable[[Path], RunRow], jobs: int) -> Iterator[RunRow] | None:
    """Rows of ``misses`` built by a pool of forked processes, in order (the rest here if a worker dies)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    import signal
    import threading
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    can_hold = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()

    def rows() -> Iterator[RunRow]:
        done = 0
        try:
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                     initializer=_worker_signals) as pool:
                # Ctrl-C is held back while the workers are forked (map submits all, which forks them here): a
                # worker interrupted before its initializer ran would run the command's handler and print
                # "Process ForkProcess-1:" after the one line the interrupt prints. The parent gets it right after.
                held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if can_hold else None
                try:
                    results = pool.map(make, misses, chunksize=4)
                finally:
                    if held is not None:
                        signal.pthread_sigmask(signal.SIG_SETMASK, held)
                for row in results:
                    done += 1
                    yield row
        except BrokenProcessPool:  # a worker died (killed, out of memory): finish here, one run at a time
            for root in misses[done:]:
                yield make(root)

    return rows()
