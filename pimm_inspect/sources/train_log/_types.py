"""Result types of the train.log reader (re-exported by ``train_log``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...model import Finding, LogEvent, ScalarSeries

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._resume import TrainLogResume


@dataclass(frozen=True, slots=True)
class LogSegment:
    """One attempt (process start) of a train.log, delimited by ``=> Loading config ...``."""

    index: int
    """1-based attempt number (counting from ``first_attempt``)."""
    start_line: int
    end_line: int
    start_offset: int
    """Byte offset of the segment's first line: re-read from here to refresh it."""
    end_offset: int
    has_header: bool
    """True when the segment starts with ``=> Loading config ...`` (False: text before it, or an E0 PID change)."""
    started_at: str | None
    ended_at: str | None
    save_path: str | None
    first_step: int | None
    last_step: int | None
    train_lines: int
    resume_step: int | None
    """Global step restored from the checkpoint; None when not resumed or not derivable."""
    resumed_from: str | None
    weight: str | None
    """Weight path of a warm start (``weight=`` without resume)."""
    is_resume: bool
    origin: str
    """fresh, resume, warm-start, or unknown (segment without a ``=> Loading config`` line)."""
    max_epoch: int | None
    iters_per_epoch: int | None
    ended: str | None
    """completed, crashed, or None (stopped, killed or still running)."""
    end_detail: str | None
    saved_steps: tuple[int, ...]
    writer: str | None
    world_size: int | None
    parallel: str | None
    num_params: int | None
    warnings: int


@dataclass(frozen=True, slots=True)
class ValTableRow:
    """One class row of a per-class metrics table (NaN where the table has no column)."""

    class_id: int
    name: str
    ignored: bool
    iou: float
    acc: float
    prec: float
    rec: float
    f1: float


@dataclass(frozen=True, slots=True)
class ValTable:
    """The per-class table printed after a ``Val result:``/``Test result:`` line."""

    step: int | None
    attempt: int
    line_no: int
    final: bool
    """True for the final ``Test result:`` table."""
    metrics: tuple[tuple[str, float], ...]
    rows: tuple[ValTableRow, ...]


def _empty(dtype: DTypeLike = np.int64) -> np.ndarray:
    arr = np.zeros(0, dtype=dtype)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class TrainLogIndex:
    """Where things are in a train.log, so a viewer can jump without parsing it again.

    Line numbers are 1-based (as in ``LogSegment.start_line``); offsets are bytes from
    the start of the file, pointing at the first byte of the line. Arrays are read-only.
    """

    start_line_nos: np.ndarray = field(default_factory=_empty)
    """int64 line of each attempt start, in file order: ``=> Loading config`` lines, E0 PID
    changes without one, and submitit attempt markers."""
    start_offsets: np.ndarray = field(default_factory=_empty)
    """int64 byte offset of each attempt start line."""
    start_kinds: tuple[str, ...] = ()
    """``config`` (a ``=> Loading config`` line), ``pid`` (E0 process change) or ``submitit``."""
    start_trains: np.ndarray = field(default_factory=lambda: _empty(np.bool_))
    """bool: the attempt this line starts has at least one Train: line (always False for submitit markers)."""
    start_attempts: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    """int32 ``LogSegment.index`` the line starts (0 for submitit markers)."""
    step_steps: np.ndarray = field(default_factory=_empty)
    """int64 global step of every parsed Train: line, in file order (often the very array of the series' steps:
    every term of the usual Train: line has a point on each)."""
    step_line_runs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    """The line number of each of those Train: lines, as runs: int64 (row, base) pairs, rows increasing; row r's line
    is r + the base of the last run starting at or before it (a run is a stretch of Train: lines with no other line
    between them). ``step_line_nos`` gives every line number; ``line_no`` one."""
    step_offsets: np.ndarray = field(default_factory=_empty)
    """Byte offset of each of those Train: lines: uint32 while they fit (a log under 4 GiB), else int64."""
    step_attempts: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    """Attempt (``LogSegment.index``) of each of those Train: lines, in the narrowest of uint8, uint16 and int32
    that holds them."""

    @property
    def step_line_nos(self) -> np.ndarray:
        """int64 line number of each Train: line of ``step_steps`` (made from ``step_line_runs`` on each call)."""
        runs, n = self.step_line_runs, int(self.step_offsets.shape[0])
        if not runs.shape[0]:
            return _empty()
        lengths = np.diff(np.append(runs[:, 0], n))
        out = np.repeat(runs[:, 1], lengths) + np.arange(n, dtype=np.int64)
        out.flags.writeable = False
        return out

    def line_no(self, row: int) -> int:
        """Line number of the Train: line at ``row`` of ``step_steps``."""
        runs = self.step_line_runs
        return row + int(runs[int(np.searchsorted(runs[:, 0], row, side="right")) - 1, 1])

    def line_of_step(self, step: int, attempt: int | None = None) -> tuple[int, int] | None:
        """(line number, byte offset) of the first Train: line at or after ``step`` (in ``attempt``)."""
        rows = np.flatnonzero(self.step_steps >= step) if attempt is None else \
            np.flatnonzero((self.step_steps >= step) & (self.step_attempts == attempt))
        if not rows.size:
            return None
        return self.line_no(int(rows[0])), int(self.step_offsets[rows[0]])


@dataclass(frozen=True, slots=True, eq=False)
class TrainLogResult:
    """Everything read from one train.log (or from the part after ``start_offset``)."""

    series: tuple[ScalarSeries, ...]
    segments: tuple[LogSegment, ...]
    events: tuple[LogEvent, ...]
    val_tables: tuple[ValTable, ...]
    best: tuple[tuple[str, float, int | None], ...]
    era_hint: str | None
    """E0 when the first record's prefix has a PID, E1+ without, None if no prefixed line."""
    pids: tuple[int, ...]
    end_offset: int
    """Byte offset after the last complete line (a half-written last line is left for the next read)."""
    line_count: int
    findings: tuple[Finding, ...]
    index: TrainLogIndex = field(default_factory=TrainLogIndex)
    """Attempt starts and the line of every Train: step (issue 9: the UI's Log tab reads this)."""
    long_lines: tuple[tuple[int, int], ...] = ()
    """(byte offset, bytes skipped) of lines longer than ``MAX_LINE_BYTES`` (the first 1,000;
    the ``file.long-lines`` finding counts all): their bytes past the cap were skipped, not parsed."""
    read_from_offset: int = 0
    """Byte offset this read began decoding at: the earlier result's ``end_offset`` when it extended one
    (``read_train_log(previous=...)``), else ``start_offset``."""
    resume: TrainLogResume | None = None
    """The reader's state at ``end_offset``, to extend this result with appended bytes only (None when
    the read failed midway)."""
