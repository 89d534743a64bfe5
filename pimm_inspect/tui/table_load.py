"""One pass of the runs table's load worker: find the runs, give each its row, never wait on one huge run.

Rows are the session's cached ``RunRow``s, the very rows ``ls`` prints (``Session.rows``): a run unchanged since it
was last listed costs a few ``stat`` calls, not a read. The first screenful of runs gets its row as soon as it is
found (the stored ones of a batch found together in one message, each other one as soon as it is read), so rows show
facts within a second or two on a tree of a thousand runs; the others are found (their rows appear at once, as names)
and then get theirs in order, posted in batches (``RowBatches``: a row read after a quiet spell at once, the others
together at most ``ROWS_BATCH_S`` apart), since a message per row cost the UI's process milliseconds each. A run with no valid stored row whose files add up to more than ``BIG_RUN_BYTES`` is not
read in passing: its row shows what its quick stage says (status, attempts and step from the tail) and it is read
after every other run, with its progress on the status line. Everything is posted as messages; the pass stops between
two runs (and between two files of a big run) once ``cancelled()`` holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from ..evidence import RunRow
from ..load.discover import classify_dir, iter_runs
from ..load.progress import LoadCancelled
from ..session import Session
from .facts import relative_name
from .messages import (DiscoveryDone, LoadFailed, LoadFinished, LoadProgress, RowLoaded, RowsLoaded, RunGlanced,
                       RunsFound)
from .stages import progress_text

if TYPE_CHECKING:
    from ..session.staged import Loader, Stage, StagedLoader

# The staged loader, analysis and the quick listing (the readers, numpy) are imported where a run is read: a pass
# served by stored rows never needs them.

BIG_RUN_BYTES = 64 << 20
"""A run whose files add up to more than this is read after every other run (its row shows its tail at once)."""
FIRST_ROWS = 30
"""Runs read as soon as they are found, before the search goes on: about a screenful of rows."""
FOUND_BATCH_S = 0.05
"""Discovery posts the runs it found at most this often."""
ROWS_BATCH_S = 0.2
"""Rows read after the search are posted together at most this far apart (``RowBatches``)."""


class RowSource(Protocol):
    """Where the runs table's rows come from."""

    def discover(self, root: Path, on_error: Callable[[Path, str], None]) -> Iterator[list[Path]]:
        """Run directories under ``root`` as they are found: each batch as soon as it is (one run, or all those a
        prefetch found together)."""
        ...

    def stored(self, paths: list[Path]) -> dict[Path, RunRow]:
        """The rows still valid in the cache (no read at all), by path."""
        ...

    def build(self, paths: list[Path], cancelled: Callable[[], bool], under: Path | None = None) -> Iterator[RunRow]:
        """The rows of ``paths``, in order, read now (and stored, where the source has a cache). ``under``: the
        folder the pass searched, when ``paths`` are its runs (the source's row index of that folder is written, as
        ``ls`` of that folder writes it)."""
        ...

    def build_big(self, path: Path, on_stage: Callable[[Stage], None], cancelled: Callable[[], bool]) -> RunRow:
        """The row of one big run, read now in stages (progress to ``on_stage``), stored where the source has a
        cache; LoadCancelled once ``cancelled()`` holds."""
        ...


class SessionRows:
    """The session's rows: the cached ``RunRow``s of ``ls`` (what the app uses unless a test hands in a loader)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.root: Path | None = None
        """The folder searched: its row index (written by ``ls`` of that folder) serves the stored rows."""

    def discover(self, root: Path, on_error: Callable[[Path, str], None]) -> Iterator[list[Path]]:
        self.root = root
        return ([path] for path in self.session.iter_runs(root, on_error))

    def stored(self, paths: list[Path]) -> dict[Path, RunRow]:
        return self.session.stored_rows(paths, self.root)

    def build(self, paths: list[Path], cancelled: Callable[[], bool], under: Path | None = None) -> Iterator[RunRow]:
        return self.session.rows(paths, under)  # as ``ls`` of that folder reads them: a warm start reads its index

    def build_big(self, path: Path, on_stage: Callable[[Stage], None], cancelled: Callable[[], bool]) -> RunRow:
        return self.session.row_in_stages(path, on_stage, cancelled)


class LoaderRows:
    """Rows made from a loader's analysed runs (tests hand in loaders with fixed clocks and gates); nothing stored."""

    def __init__(self, loader: Loader | StagedLoader) -> None:
        self.loader = loader

    def discover(self, root: Path, on_error: Callable[[Path, str], None]) -> Iterator[list[Path]]:
        return ([path] for path in iter_runs(root, on_error=on_error))

    def stored(self, paths: list[Path]) -> dict[Path, RunRow]:
        return {}

    def build(self, paths: list[Path], cancelled: Callable[[], bool], under: Path | None = None) -> Iterator[RunRow]:
        from ..analysis.summary import run_row
        from ..session.staged import load_in_stages

        for path in paths:
            yield run_row(load_in_stages(self.loader, path, cancelled=cancelled))

    def build_big(self, path: Path, on_stage: Callable[[Stage], None], cancelled: Callable[[], bool]) -> RunRow:
        from ..analysis.summary import run_row
        from ..session.staged import load_in_stages

        return run_row(load_in_stages(self.loader, path, on_stage, cancelled))


class RowBatches:
    """Rows read one by one, posted together (``post``) at most every ``every`` seconds: a row made after a quiet
    spell at once, one made sooner after the last batch when that batch is ``every`` old (a timer thread posts it
    then, also while the next read is slow). A tree of three runs shows each row as it is read; a cold tree of
    thousands sends a few batches a second, not a message per row."""

    def __init__(self, post: Callable[[list[tuple[Path, RunRow]]], None], every: float | None = None) -> None:
        self._post = post
        self._every = ROWS_BATCH_S if every is None else every
        self._lock = threading.Lock()
        self._rows: list[tuple[Path, RunRow]] = []
        self._last = float("-inf")
        self._timer: threading.Timer | None = None
        self._closed = False

    def add(self, path: Path, row: RunRow) -> None:
        with self._lock:
            if self._closed:
                return
            self._rows.append((path, row))
            wait = self._last + self._every - time.monotonic()
            if wait <= 0:
                self._send()
            elif self._timer is None:
                self._timer = threading.Timer(wait, self._due)
                self._timer.daemon = True
                self._timer.start()

    def _due(self) -> None:
        with self._lock:
            if not self._closed:
                self._send()

    def _send(self) -> None:
        """Post what waits (the lock held)."""
        if self._timer is not None:
            self._timer.cancel()  # (harmless from the timer's own thread)
            self._timer = None
        if self._rows:
            rows, self._rows = self._rows, []
            self._last = time.monotonic()
            self._post(rows)

    def close(self, post: bool) -> None:
        """No more rows: post those waiting (``post``), or drop them (the pass was cancelled)."""
        with self._lock:
            if post:
                self._send()
            elif self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._rows = []
            self._closed = True


class TablePass:
    """Discover every run under ``root`` and give each its row for the runs table, posting what it finds."""

    def __init__(self, root: Path, shown_as: Path, loader: Callable[[], Loader | StagedLoader],
                 post: Callable[[Message], object], cancelled: Callable[[], bool], owned: Callable[[str], bool],
                 rows: RowSource | None = None) -> None:
        self.root = root
        self.shown_as = shown_as
        """The path as the user gave it (names on the status line are relative to it)."""
        self.loader = loader
        """Gives the loader that takes a big run's quick stage (the run screen's staged loader), asked only then."""
        self.rows: RowSource = rows if rows is not None else LoaderRows(loader())
        self.post = post
        self.cancelled = cancelled
        self.owned = owned
        """True for a run an open run screen reads itself (the table gets its copy from there)."""
        self.paths: list[Path] = []
        self.early_rows: dict[Path, RunRow] = {}
        """Rows posted while the search went on (stored rows, found with their runs)."""
        self.big: list[Path] = []
        self.done = 0

    def run(self) -> None:
        """The whole pass; returns early (quietly) once cancelled."""
        if not self.root.exists():
            self.post(LoadFailed(f"cannot open {self.shown_as.as_posix()}: no such file or directory"))
            return
        if not self.root.is_dir():
            self.post(LoadFailed(f"{self.shown_as.as_posix()} is not a directory: give a run directory or a "
                                 "folder of runs"))
            return
        self.post(LoadProgress(0, 0, "searching for runs…"))
        try:
            errors = self._discover()
            if errors is None:
                return
            self.post(DiscoveryDone(self.paths, errors, classify_dir(self.root) is not None))
            self.post(LoadProgress(self.done, len(self.paths)))  # the search is over: n of N from here
            self._read_rest(self.paths[FIRST_ROWS:])
            for path in self.big:
                self._read_big(path)
                self._count()
        except LoadCancelled:
            return  # a refresh (or quitting) superseded this pass
        self.post(LoadFinished(len(self.paths)))

    def _discover(self) -> list[tuple[Path, str]] | None:
        """Find every run (reading the first screenful at once); the folders not searched, or None if cancelled."""
        errors: list[tuple[Path, str]] = []
        batch: list[Path] = []
        sent = time.monotonic()
        try:
            for found in self.rows.discover(self.root, lambda p, reason: errors.append((p, reason))):
                if self.cancelled():
                    return None
                early = found[:max(0, FIRST_ROWS - len(self.paths))]
                self.paths.extend(found)
                batch.extend(found[len(early):])
                if early:
                    self._early(early)
                # One message per batch on a big tree, less often the more runs the table holds (every batch costs
                # the table a pass over all names: 10,000 runs arrive in tens of batches, not hundreds).
                if batch and time.monotonic() - sent > FOUND_BATCH_S * max(1.0, len(self.paths) / 1000):
                    self._found(batch)
                    batch, sent = [], time.monotonic()
        except LoadCancelled:
            raise
        except Exception as exc:  # discovery must end in a message, never a traceback
            self.post(LoadFailed(f"searching {self.shown_as.as_posix()} failed: {type(exc).__name__}: {exc}"))
            return None
        if batch:
            self._found(batch)
        return errors

    def _early(self, found: list[Path]) -> None:
        """Runs of the first screenful, found together: their names, the rows the cache holds (in one message: a
        prefetch finds a screenful at once), then the others read in one request (by the session's worker processes
        when there are enough of them) and each row posted as soon as it is read."""
        self.post(RunsFound(found))
        mine = [p for p in found if not self.owned(p.as_posix())]
        stored = self.rows.stored(mine) if mine else {}
        if stored:
            self.post(RowsLoaded([(path, stored[path]) for path in mine if path in stored]))
        counted = len(found) - len(mine) + len(stored)  # a run a run screen reads counts as done
        if counted:
            self.done += counted
            # While the search goes on, N is what was found so far: the line says the search is not done.
            self.post(LoadProgress(self.done, len(self.paths), "searching for more runs…"))
        if self.cancelled():
            raise LoadCancelled()
        # Read together (the session's worker processes when there are enough of them, as for the rest), each row
        # shown as soon as it comes: read one by one here they took turns with the UI's drawing under one lock.
        misses = [path for path in mine if path not in stored and not self._defer_big(path)]
        if misses:
            for path, row in zip(misses, self.rows.build(misses, self.cancelled)):
                if self.cancelled():
                    raise LoadCancelled()
                self.post(RowLoaded(path, row))
                self.done += 1
                self.post(LoadProgress(self.done, len(self.paths), "searching for more runs…"))

    def _found(self, batch: list[Path]) -> None:
        """Runs found past the first screenful: their names, and the rows the cache still holds, in the same breath,
        so a warm tree's rows arrive with its names and the table is laid out once per batch."""
        self.post(RunsFound(batch))
        stored = self.rows.stored([p for p in batch if not self.owned(p.as_posix())])
        if stored:
            self.post(RowsLoaded(list(stored.items())))
            self.done += len(stored)
            self.early_rows.update(stored)

    def _defer_big(self, path: Path) -> bool:
        """True (after posting its quick stage) when ``path`` is too big to read in passing: it is read last."""
        from ..load.quick import listing
        from ..session.staged import glance_with

        if sum(f.size_bytes for f in listing(path)) <= BIG_RUN_BYTES:
            return False
        quick = glance_with(self.loader(), path)
        if quick is not None:
            self.post(RunGlanced(path, quick))
        self.big.append(path)
        return True

    def _read_rest(self, paths: list[Path]) -> None:
        """The rows of the runs found after the first screenful: stored ones at once, then the others read (by the
        session's worker processes when many), big ones deferred."""
        paths = [p for p in paths if p not in self.early_rows]  # posted during the search already
        mine = [p for p in paths if not self.owned(p.as_posix())]
        stored = self.rows.stored(mine)
        misses = [p for p in mine if p not in stored and not self._defer_big(p)]
        if self.cancelled():
            raise LoadCancelled()
        # Every stored row at once: one message, so the table lays a warm tree out once, not per row.
        if stored:
            self.post(RowsLoaded([(path, stored[path]) for path in paths if path in stored]))
        self.done += len(paths) - len(misses) - sum(1 for p in paths if p in self.big)
        self.post(LoadProgress(self.done, len(self.paths)))
        if not misses:
            return
        # Rows read now come in batches (``RowBatches``): the table and the count show a row within ROWS_BATCH_S of
        # its read, also while the next run's read is slow, and the UI handles a few messages a second, not hundreds.
        # Read as ``ls`` of the folder reads them, so the session writes the folder's row index for the next start.
        batches = RowBatches(self._post_rows)
        try:
            for path, row in zip(misses, self.rows.build(misses, self.cancelled, under=self.root)):
                if self.cancelled():
                    raise LoadCancelled()
                batches.add(path, row)
        except BaseException:
            batches.close(post=False)  # a superseded pass posts nothing more
            raise
        batches.close(post=True)

    def _post_rows(self, rows: list[tuple[Path, RunRow]]) -> None:
        """One batch of rows read (``RowBatches``: any thread, one batch at a time), then the count."""
        self.post(RowsLoaded(rows))
        self.done += len(rows)
        self.post(LoadProgress(self.done, len(self.paths)))

    def _read_big(self, path: Path) -> None:
        """Read a big run, unless (or until) the user opens it: its run screen then reads it instead."""
        key = path.as_posix()
        if self.owned(key):
            return
        try:
            row = self.rows.build_big(path, self._reporter(relative_name(path, self.shown_as)),
                                      lambda: self.cancelled() or self.owned(key))
        except LoadCancelled:
            if self.cancelled():
                raise
            return  # opened meanwhile: one read of a huge run at a time
        self.post(RowLoaded(path, row))  # stored in the row cache too: the next pass serves it from there

    def _count(self) -> None:
        self.done += 1
        self.post(LoadProgress(self.done, len(self.paths)))

    def _reporter(self, name: str) -> Callable[[Stage], None]:
        """Progress of one big run's read, on the status line."""
        from ..session.staged import Reading

        def report(stage: Stage) -> None:
            if isinstance(stage, Reading):
                self.post(LoadProgress(self.done, len(self.paths), f"{name}: {progress_text(stage.progress)}"))
        return report
