"""The train.log reader's state at the last complete line, so appended bytes extend a result.

A full read keeps, next to what it returns, everything the reader would carry into its next
block: the open attempt (counters, restored position, template, last step), a WARNING/ERROR
record whose continuation lines may still come, the Val table still collecting rows, PIDs,
era, damage counters, and where the bytes ended (with the last bytes read, to notice a file
rewritten in place). Extending starts a reader from that state at ``end_offset``: a block
boundary there, which the reader's results never depend on, so the result equals a full read
of the grown file. Plain frozen dataclasses of ints, strings, bytes and tuples: the disk cache
stores them as it stores the result.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from . import _patterns as P
from ._types import ValTableRow

if TYPE_CHECKING:
    from ._blocks import LineStats
    from ._segments import SegmentState
    from ._types import TrainLogResult
    from .reader import _Reader

TAIL_CHECK_BYTES = 64
"""Bytes before ``end_offset`` kept to tell an appended file from one rewritten in place."""


@dataclass(frozen=True, slots=True)
class SegmentResume:
    """The open attempt's counters (``SegmentState`` fields of the same names)."""

    index: int
    start_line: int
    start_offset: int
    end_line: int
    end_offset: int
    has_header: bool
    started_at: str | None
    ended_at: str | None
    save_path: str | None
    first_step: int | None
    last_step: int | None
    train_lines: int
    max_epoch: int | None
    ipe: int | None
    iterable_ipe: int | None
    last_g: int | None
    last_epoch: int | None
    last_ipe: int | None
    is_resume: bool
    resume: tuple[tuple[str, tuple[int, ...]], ...]
    weight_path: str | None
    ended: str | None
    end_detail: str | None
    saved: tuple[int, ...]
    save_pending: bool
    writer: str | None
    world_size: int | None
    parallel: str | None
    num_params: int | None
    warnings: int
    template_tail: bytes | None
    """The Train: tail the attempt's template was built from (rebuilt, never stored compiled)."""
    template_tries: int


@dataclass(frozen=True, slots=True)
class OpenRecord:
    """A WARNING/ERROR record that reached the end of what was read (continuation lines may follow)."""

    kind: str
    level: str
    ts: str
    line: int
    step: int | None
    head: bytes
    tail: bytes
    size: int


@dataclass(frozen=True, slots=True)
class PendingTable:
    """The per-class table of the last ``Val result:``/``Test result:`` line, still taking rows."""

    step: int | None
    attempt: int
    line: int
    final: bool
    metrics: tuple[tuple[str, float], ...]
    rows: tuple[ValTableRow, ...]


@dataclass(frozen=True, slots=True)
class TrainLogResume:
    """Everything a reader needs to go on from ``end_offset`` as if it had never stopped."""

    end_offset: int
    inode: int
    tail_check: bytes
    """The ``TAIL_CHECK_BYTES`` before ``end_offset``: they must be unchanged to extend."""
    line_no: int
    next_index: int
    era: str | None
    pids: tuple[int, ...]
    last_pid: int | None
    corrupt_at: int | None
    long_line_count: int
    skipped_bytes: int
    segment: SegmentResume | None
    """The open (last) attempt; None when nothing was read."""
    live_series: int
    """How many of the result's last series belong to the open attempt (they are extended)."""
    live_chunk_series: int
    """How many of those come from Train: lines (the rest from evaluation/summary records, in that order)."""
    open_record: OpenRecord | None
    """When set, it is the result's last event (its message may still grow)."""
    table: PendingTable | None
    """When set, it is the result's last per-class table."""


def snapshot_segment(seg: SegmentState) -> SegmentResume:
    """A frozen copy of a ``SegmentState``'s counters (its pending rows must be flushed first)."""
    assert not seg.pending  # flushed by the caller: rows in flight are not part of the state
    values: dict[str, Any] = {}
    for f in fields(SegmentResume):
        value = getattr(seg, f.name)
        if f.name == "resume":
            value = tuple(value.items())
        elif f.name == "saved":
            value = tuple(value)
        values[f.name] = value
    return SegmentResume(**values)


def restore_segment(seg: SegmentState, state: SegmentResume,
                    build_template: Callable[[bytes], P.Template | None]) -> None:
    """Set a fresh ``SegmentState``'s counters from ``state``."""
    for f in fields(SegmentResume):
        value = getattr(state, f.name)
        if f.name == "resume":
            value = dict(value)
        elif f.name == "saved":
            value = list(value)
        setattr(seg, f.name, value)
    if state.template_tail is not None:
        seg.template = build_template(state.template_tail)


def snapshot(reader: _Reader, end_offset: int, identity: tuple[int, bytes]) -> TrainLogResume:
    """The reader's state before ``result`` finishes records and closes the attempt (series counts still 0)."""
    cur = reader.cur
    rec = reader.open_rec
    table = reader.table
    return TrainLogResume(
        end_offset=end_offset, inode=identity[0], tail_check=identity[1], line_no=reader.line_no,
        next_index=reader.next_index, era=reader.era, pids=tuple(reader.pids), last_pid=reader.last_pid,
        corrupt_at=reader.corrupt_at, long_line_count=0, skipped_bytes=0,
        segment=snapshot_segment(cur) if cur is not None else None, live_series=0, live_chunk_series=0,
        open_record=None if rec is None else OpenRecord(rec["kind"], rec["level"], rec["ts"], rec["line"],
                                                        rec["step"], bytes(rec["head"]), rec["tail"], rec["size"]),
        table=None if table is None else PendingTable(table["step"], table["attempt"], table["line"], table["final"],
                                                      tuple(table["metrics"]), tuple(table["rows"])))


def completed(state: TrainLogResume, live_series: int, live_chunk_series: int, long_line_count: int,
              skipped_bytes: int) -> TrainLogResume:
    """``state`` with what is known once the result is built."""
    return replace(state, live_series=live_series, live_chunk_series=live_chunk_series,
                   long_line_count=long_line_count, skipped_bytes=skipped_bytes)


def can_extend(fh: BinaryIO, st: os.stat_result, state: TrainLogResume) -> bool:
    """True when the open file is the one ``state`` was read from, grown by appending only."""
    if st.st_ino != state.inode or st.st_size < state.end_offset:
        return False
    begin = state.end_offset - len(state.tail_check)
    fh.seek(begin)
    return fh.read(len(state.tail_check)) == state.tail_check


def restore(reader: _Reader, previous: TrainLogResult, stats: LineStats) -> None:
    """Set a fresh reader (and the line stats) to where ``previous`` stopped."""
    from ._segments import SegmentState

    state = cast(TrainLogResume, previous.resume)  # the caller checked it is set (``can_extend``)
    n_live = state.live_series
    cut = len(previous.series) - n_live
    reader.prefix_series = previous.series[:cut]
    reader.prefix_segments = previous.segments[:-1] if state.segment is not None else previous.segments
    reader.prefix_events = previous.events[:-1] if state.open_record is not None else previous.events
    reader.prefix_tables = previous.val_tables[:-1] if state.table is not None else previous.val_tables
    reader.line_no, reader.next_index, reader.era = state.line_no, state.next_index, state.era
    reader.pids, reader.last_pid, reader.corrupt_at = list(state.pids), state.last_pid, state.corrupt_at
    reader.best = list(previous.best)
    reader.index.extend_from(previous.index)
    stats.long_lines = list(previous.long_lines)
    stats.long_line_count, stats.skipped_bytes = state.long_line_count, state.skipped_bytes
    if state.segment is not None:
        s = state.segment
        seg = SegmentState(s.index, s.start_line, s.start_offset, s.has_header, s.started_at)
        restore_segment(seg, s, P.build_template)
        live = previous.series[cut:]
        for series in live[:state.live_chunk_series]:
            seg.seed_chunk(series.tag, series.steps, series.values, series.wall_times_s)
        for series in live[state.live_chunk_series:]:
            seg.points[series.tag] = (series.steps.tolist(), series.values.tolist(), series.wall_times_s.tolist())
        reader.segments, reader.cur = [seg], seg
    if state.table is not None:
        t = state.table
        reader.table = {"step": t.step, "attempt": t.attempt, "line": t.line, "final": t.final,
                        "metrics": list(t.metrics), "rows": list(t.rows)}
        reader.tables = [reader.table]
    if state.open_record is not None:
        r = state.open_record
        reader.open_rec = {"kind": r.kind, "level": r.level, "ts": r.ts, "line": r.line, "seg": reader.cur,
                           "step": r.step, "head": bytearray(r.head), "tail": r.tail, "size": r.size}
        reader.events = [reader.open_rec]
