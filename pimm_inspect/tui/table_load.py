"""One pass of the runs table's load worker: find the runs, read them, never wait on one huge run.

The first screenful of runs is read as soon as each is found, so rows show facts within a second or two
on a tree of a thousand runs; the others are found (their rows appear at once, as names) and then read in
order. A run whose files add up to more than ``BIG_RUN_BYTES`` is not read in passing: its row shows what
its quick stage says (status, attempts and step from the tail) and it is read after every other run, with
its progress on the status line. Everything is posted as messages; the pass stops between two runs (and
between two files of a run) once ``cancelled()`` holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.message import Message

from ..load.discover import classify_dir, iter_runs
from ..load.progress import LoadCancelled
from ..load.quick import listing
from .facts import relative_name
from ..session.staged import Loader, Reading, Stage, StagedLoader, glance_with, load_in_stages
from .messages import DiscoveryDone, LoadFailed, LoadFinished, LoadProgress, RunGlanced, RunLoaded, RunsFound
from .stages import progress_text

BIG_RUN_BYTES = 64 << 20
"""A run whose files add up to more than this is read after every other run (its row shows its tail at once)."""
FIRST_ROWS = 30
"""Runs read as soon as they are found, before the search goes on: about a screenful of rows."""
FOUND_BATCH_S = 0.05
"""Discovery posts the runs it found at most this often."""


class TablePass:
    """Discover and read every run under ``root`` for the runs table, posting what it finds."""

    def __init__(self, root: Path, shown_as: Path, loader: Loader | StagedLoader, post: Callable[[Message], object],
                 cancelled: Callable[[], bool], owned: Callable[[str], bool]) -> None:
        self.root = root
        self.shown_as = shown_as
        """The path as the user gave it (names on the status line are relative to it)."""
        self.loader = loader
        self.post = post
        self.cancelled = cancelled
        self.owned = owned
        """True for a run an open run screen reads itself (the table gets its copy from there)."""
        self.paths: list[Path] = []
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
            for path in self.paths[FIRST_ROWS:]:
                self._read(path)
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
            for path in iter_runs(self.root, on_error=lambda p, reason: errors.append((p, reason))):
                if self.cancelled():
                    return None
                self.paths.append(path)
                batch.append(path)
                early = len(self.paths) <= FIRST_ROWS
                if early or time.monotonic() - sent > FOUND_BATCH_S:  # one message per batch on a big tree
                    self.post(RunsFound(batch))
                    batch, sent = [], time.monotonic()
                if early:
                    self._read(path, count=False)
        except LoadCancelled:
            raise
        except Exception as exc:  # discovery must end in a message, never a traceback
            self.post(LoadFailed(f"searching {self.shown_as.as_posix()} failed: {type(exc).__name__}: {exc}"))
            return None
        if batch:
            self.post(RunsFound(batch))
        return errors

    def _read(self, path: Path, count: bool = True) -> None:  # count False: found during the search
        """Read one run for the table, unless a run screen does, or it is big (then: its quick stage, and later)."""
        if not self.owned(path.as_posix()):
            if sum(f.size_bytes for f in listing(path)) > BIG_RUN_BYTES:
                quick = glance_with(self.loader, path)
                if quick is not None:
                    self.post(RunGlanced(path, quick))
                self.big.append(path)
                return
            self.post(RunLoaded(path, load_in_stages(self.loader, path, cancelled=self.cancelled)))
        self.done += 1
        # While the search goes on, N is what was found so far: the line says the search is not done.
        self.post(LoadProgress(self.done, len(self.paths), None if count else "searching for more runs…"))

    def _read_big(self, path: Path) -> None:
        """Read a big run, unless (or until) the user opens it: its run screen then reads it instead."""
        key = path.as_posix()
        if self.owned(key):
            return
        try:
            run = load_in_stages(self.loader, path, self._reporter(relative_name(path, self.shown_as)),
                                 lambda: self.cancelled() or self.owned(key))
        except LoadCancelled:
            if self.cancelled():
                raise
            return  # opened meanwhile: one read of a huge run at a time
        self.post(RunLoaded(path, run))

    def _count(self) -> None:
        self.done += 1
        self.post(LoadProgress(self.done, len(self.paths)))

    def _reporter(self, name: str) -> Callable[[Stage], None]:
        """Progress of one big run's read, on the status line."""
        def report(stage: Stage) -> None:
            if isinstance(stage, Reading):
                self.post(LoadProgress(self.done, len(self.paths), f"{name}: {progress_text(stage.progress)}"))
        return report
