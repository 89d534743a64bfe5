"""Result types of the train.log reader (re-exported by ``train_log``)."""

from __future__ import annotations

from dataclasses import dataclass

from pimm_inspect.model import Finding, LogEvent, ScalarSeries


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
