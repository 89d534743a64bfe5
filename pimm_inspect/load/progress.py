"""How far the full read of one run has got, and a way to stop it between files.

``collect`` tells a :class:`ReadTracker` before and after every file it reads; the tracker reports a
:class:`ReadProgress` to whoever asked (the UI's progress line) and raises :class:`LoadCancelled`
when the caller no longer wants the run (a closed screen, a newer reload), so superseded work stops
at the next file instead of finishing in the background.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..model import ScalarSeries
from ..sources.read_progress import SoFar

SO_FAR_EVERY_S = 1.0
"""How often, by default, a big file's series read so far are handed on (the first time after its first block)."""
STAGES = {"train_log": "train.log", "tb_events": "event files", "wandb": "W&B logs", "checkpoint": "checkpoints",
          "structured_log": "rank logs", "hf_trainer": "Trainer state", "lightning_csv": "metrics.csv"}
"""What the progress line calls the files of a source kind; every other kind is a side file."""
SIDE_FILES = "side files"


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A file (or W&B folder) the full read will read, as the quick listing found it."""

    path: str
    """Relative to the run (a W&B folder: the folder, as the full read names it)."""
    kind: str
    """The source kind the full read gives it (``train_log``, ``tb_events``, ``wandb``, ``json`` ...)."""
    size_bytes: int
    """Bytes to read (a W&B folder: its ``run-*.wandb`` logs; a checkpoint folder: 0)."""
    mtime_s: float
    """Modification time, as the full read's source list records it (a W&B folder: the folder's)."""


class LoadCancelled(BaseException):
    """The caller gave up on this load; raised between files.

    A BaseException (as ``asyncio.CancelledError`` is) so that the readers' ``except Exception`` guards,
    which turn a reader bug into a finding, never swallow it.
    """


@dataclass(frozen=True, slots=True)
class ReadProgress:
    """A snapshot of one run's full read: which kind of file is being read and how much is done."""

    stage: str
    """What is being read or done: ``train.log``, ``event files``, ``W&B logs``, ..., ``assembling``, ``analysing``."""
    files_done: int
    """Files of this stage read so far."""
    files_total: int
    """Files of this stage the listing found (0 for the assembling and analysing stages)."""
    bytes_done: int
    """Bytes of the listed files read so far, over every stage."""
    bytes_total: int
    """Bytes of every listed file (what the whole read will cover)."""


def stage_of(kind: str) -> str:
    """The progress-line stage of a source kind."""
    return STAGES.get(kind, SIDE_FILES)


class ReadTracker:
    """Counts files and bytes against a listing; reports snapshots; raises LoadCancelled when asked to stop."""

    def __init__(self, listing: Iterable[ListedFile], report: Callable[[ReadProgress], None] | None = None,
                 cancelled: Callable[[], bool] | None = None,
                 so_far: Callable[[tuple[ScalarSeries, ...]], None] | None = None,
                 so_far_every_s: float = SO_FAR_EVERY_S, block_bytes: int | None = None) -> None:
        listed = tuple(listing)
        self.sizes = {f.path: f.size_bytes for f in listed}
        self.stage_totals: dict[str, int] = {}
        for f in listed:
            self.stage_totals[stage_of(f.kind)] = self.stage_totals.get(stage_of(f.kind), 0) + 1
        self.bytes_total = sum(self.sizes.values())
        self.bytes_done = 0
        self.files_read = 0
        """Every file reported read (listed or not): what a test of cancellation counts."""
        self._stage_done: dict[str, int] = {}
        self._report = report
        self._cancelled = cancelled
        self._stage = ""
        self._within = 0
        """Bytes of the file being read that its reader has got through (``within``)."""
        self._within_sent = 0
        self._so_far = so_far
        """Told the series a big file's reader has read so far (at most every ``so_far_every_s``)."""
        self._so_far_at = -math.inf
        self._so_far_every_s = so_far_every_s
        self.block_bytes = block_bytes
        """Bytes a streaming reader reads per block (None: its own default); smaller blocks report more often."""

    def check(self) -> None:
        """Raise LoadCancelled when the caller no longer wants the run."""
        if self._cancelled is not None and self._cancelled():
            raise LoadCancelled()

    def reading(self, kind: str) -> None:
        """A file of ``kind`` is about to be read (stop here when cancelled)."""
        self.check()
        self._within = self._within_sent = 0
        self._send(stage_of(kind))

    def within(self, rel_path: str, offset: int, so_far: SoFar | None = None) -> None:
        """The reader of ``rel_path`` has read it up to byte ``offset``: report it (at most every 1% of the
        total, or 4 MiB), and now and then what it read so far (``so_far``); stop here when cancelled, mid-file."""
        self.check()
        size = self.sizes.get(rel_path)
        if size is None:
            return  # not in the listing: its bytes are not in the total either
        if so_far is not None and self._so_far is not None and offset < size \
                and time.monotonic() - self._so_far_at >= self._so_far_every_s:  # only while the file has more to read
            self._so_far(so_far())
            self._so_far_at = time.monotonic()
        self._within = min(offset, size)
        if self._within - self._within_sent >= min(4 << 20, max(1, self.bytes_total // 100)):
            self._within_sent = self._within
            self._send(self._stage)

    def read(self, kind: str, path: Path, rel_path: str) -> None:
        """A file (or folder) of ``kind`` was read."""
        stage = stage_of(kind)
        self.files_read += 1
        self._stage_done[stage] = self._stage_done.get(stage, 0) + 1
        self._within = self._within_sent = 0
        size = self.sizes.pop(rel_path, None)
        if size is None and os.path.isfile(path):
            size = 0  # not in the listing: count the file, not its bytes (the total did not include them)
        self.bytes_done += size or 0
        self._send(stage)
        self.check()

    def stage(self, name: str) -> None:
        """A step that reads no file (assembling, analysing) begins."""
        self.check()
        self._send(name)

    def _send(self, stage: str) -> None:
        self._stage = stage
        if self._report is not None:
            self._report(ReadProgress(stage, self._stage_done.get(stage, 0), self.stage_totals.get(stage, 0),
                                      self.bytes_done + self._within, self.bytes_total))
