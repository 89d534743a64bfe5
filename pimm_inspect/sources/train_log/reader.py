"""Reader for pimm's rank-0 ``train.log`` (all eras; spec section 3).

The file is read in blocks that end at a newline. Each block is scanned with a
few compiled byte patterns (Train: lines, interesting INFO records, WARNING+
records, E0 PIDs) instead of a per-line Python loop; only matched lines are
parsed further and numbers become numpy arrays per chunk.

A result keeps the reader's state at its last complete line (``_resume``), so a
grown file is extended by decoding only the appended bytes (``previous=``).

Wall times come from the log's own timestamps, which are node-local time
without a zone: they are parsed as if they were UTC, so they order points and
measure gaps correctly but are not true unix seconds.
"""

from __future__ import annotations

import io
import itertools
from bisect import bisect_left
import os
import re
from contextlib import closing
from pathlib import Path
from typing import Any, BinaryIO

from ...arrays import release_freed_memory
from ...model import Finding, LogEvent, ScalarSeries, Severity, make_series
from . import _patterns as P
from .._common import UnreadableFile, file_finding, open_regular
from .. import read_progress
from .._limits import TagCap
from ._arena import Arenas, no_rows
from ._ahead import AheadFailed, Prescan, scanned_blocks
from ._blocks import BLOCK_BYTES, MAX_LINE_BYTES, LineStats
from ._findings import long_lines_finding, non_finite_findings
from ._handoff import HANDOFF_BYTES, leave
from ._index import BlockContext, IndexBuilder
from ._preview import ThinnedPoints
from ._records import MAX_MESSAGE_BYTES, continue_record, finish_record, record, record_text
from ._resume import TAIL_CHECK_BYTES, TrainLogResume, can_extend, completed, restore, snapshot
from ._segments import SegmentState, finalize_segment
from ._tail import TrainLogTail, read_train_log_tail
from ._train_lines import TrainLines, small_block_hits, thinned
from ._types import LogSegment, TrainLogIndex, TrainLogResult, ValTable, ValTableRow

_TRIM_BLOCKS = 16
"""Every so many blocks the heap's freed memory is given back (``arrays.release_freed_memory``): each block's bytes and
arrays come and go, and the holes they left held 20-40 MB more at the end of a 1 GB log's read, its memory peak."""


class _Reader(TrainLines):
    """Mutable state carried from block to block."""

    def __init__(self, rel_path: str, first_attempt: int, first_line_no: int) -> None:
        self.rel_path = rel_path
        self.next_index = first_attempt
        self.line_no = first_line_no
        self.segments: list[SegmentState] = []
        self.cur: SegmentState | None = None
        self.events: list[dict[str, Any]] = []
        self.open_rec: dict[str, Any] | None = None
        self.tables: list[dict[str, Any]] = []
        self.table: dict[str, Any] | None = None
        self.best: list[tuple[str, float, int | None]] = []
        self.era: str | None = None
        self.pids: list[int] = []
        self.last_pid: int | None = None
        self.corrupt_at: int | None = None
        self.ctx: BlockContext | None = None
        self.small = False
        self.block_hits = -1
        """``Train: [`` in the current block when it is small (``small_block_hits``), else -1."""
        self.index = IndexBuilder()
        self.long_lines: tuple[tuple[int, int], ...] = ()
        self.long_line_count = self.skipped_bytes = 0  # of the whole file, for an extension's state
        # what an extended result keeps from the one before (``_resume.restore``): closed attempts, done records
        self.prefix_series: tuple[ScalarSeries, ...] = ()
        self.prefix_segments: tuple[LogSegment, ...] = ()
        self.prefix_events: tuple[LogEvent, ...] = ()
        self.prefix_tables: tuple[ValTable, ...] = ()
        self.cap = TagCap()
        """Distinct tags of the file (``MAX_TAGS_PER_FILE``), shared by its attempts."""
        self.previews: dict[tuple[int, str], ThinnedPoints] = {}
        """Per (attempt, tag): its points read so far, thinned (``so_far``; only made when a preview is asked for)."""
        self.arenas = Arenas()
        """The template lines' columns and the line index's offsets, written in file order (``_arena``)."""
        self.index.arenas = self.arenas
        self.size = self.bytes_left = 0
        """The file's size, and its bytes from the current block on (what the column buffers are sized from)."""

    def rows_left(self) -> int:
        """Train: lines expected from the current block to the end of the file, at this block's density."""
        ctx = self.ctx
        if ctx is None or len(ctx.block) <= 1:
            return 0
        hits = self.block_hits if self.block_hits >= 0 else int(ctx.hits.size)
        return -(-hits * self.bytes_left // len(ctx.block))

    # -- segments ---------------------------------------------------------
    def seg(self, start_line: int, start_offset: int) -> SegmentState:
        """The current segment, creating the headless one for text before any header."""
        if self.cur is None:
            return self.open_segment(start_line, start_offset, None, header=False)
        return self.cur

    def open_segment(self, start_line: int, start_offset: int, ts: str | None, header: bool) -> SegmentState:
        """Close the current segment and start the next attempt (returned)."""
        if self.cur is not None:
            self.close_segment(start_line - 1, start_offset)
        self.table = None
        self.cur = SegmentState(self.next_index, start_line, start_offset, header, ts)
        self.cur.cap = self.cap
        self.cur.arenas = self.arenas
        self.next_index += 1
        self.segments.append(self.cur)
        return self.cur

    def boundary(self, block: bytes, ls: int, delta: int, line_no: int, ts: str, header: bool) -> None:
        """A new attempt starts at ``block[ls]``; the current one ends at its last record before it."""
        if self.cur is not None:
            last_ts = P.last_record_ts(block, max(0, self.cur.start_offset - delta), ls)
            if last_ts is not None:
                self.cur.ended_at = last_ts
        self.open_segment(line_no, delta + ls, ts, header)

    def close_segment(self, end_line: int, end_offset: int) -> None:
        """Flush a segment's pending rows and fix its end."""
        cur = self.cur
        assert cur is not None  # callers close only an open segment
        self.flush(cur)
        cur.end_line = end_line
        cur.end_offset = end_offset

    # -- blocks -----------------------------------------------------------
    def block(self, block: bytes, offset: int, prescan: Prescan | None = None) -> int:
        """Process ``\\n`` + complete lines starting at file offset ``offset``; returns the line count. ``prescan``:
        the block's arrays and template scan made by a scanning child (``_ahead``)."""
        if self.corrupt_at is None and not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.corrupt_at = offset + exc.start - 1
        delta = offset - 1  # absolute offset of block[i] is delta + i
        self.ctx = BlockContext(block, self.line_no)
        if prescan is not None:
            prescan.fill(self.ctx)
        self.block_hits = small_block_hits(block) if prescan is None else -1
        self.small = self.block_hits >= 0
        self.bytes_left = max(0, self.size - offset)
        self.arenas.rows_left = self.rows_left  # only while the block is read (no cycle through the reader after)
        self.index.scan_submitit(self.ctx, delta)
        counter = _LineCounter(self.ctx, self.line_no, self.small)
        continue_record(self, block)
        first = P.RECORD_START.search(block)
        first_pm = P.PREFIX.match(block, first.end()) if first else None
        if self.era is None and first_pm is not None:
            self.era = "E0" if first_pm.group(3) else "E1+"
        if self.cur is None and not (first is not None and first_pm is not None and first.start() == 0
                                     and block.startswith(b"=> Loading config", first_pm.end())):
            self.seg(self.line_no, offset)
        if self.cur is not None and self.cur.started_at is None and first_pm is not None:
            self.cur.started_at = first_pm.group(1).decode()
        template = self.cur.template if self.cur is not None else None
        fast = self.ctx.fast_rows(template) if template is not None and not self.small else None
        markers = P.find_markers(block, fast.quiet_lines(self.ctx.buf) if fast is not None else None)
        if self.era == "E0":
            self.pid_markers(block, markers)
        cursor = 0
        for ls in sorted(markers):
            if ls - cursor > 8:  # else too short to hold a Train: line (most records follow another)
                self.train_range(block, cursor, ls, delta)
            line_end = block.find(b"\n", ls)
            line_no = counter.line_of(ls)
            self.line_no = line_no
            mark = markers[ls]
            if isinstance(mark, int):
                pm = P.PREFIX.match(block, ls)
                assert pm is not None  # a PID-change marker is put only on a prefixed line
                self.boundary(block, ls, delta, line_no, pm.group(1).decode(), header=False)
                cursor = ls - 1  # the new process's first line may itself be a Train: line
            else:
                record(self, block, ls, line_end, mark, line_no, delta)
                cursor = line_end
        self.train_range(block, cursor, len(block), delta)
        if self.cur is not None:
            lo = max(0, self.cur.start_offset - delta)
            ts = P.last_record_ts(block, lo, len(block))
            if ts is not None:
                self.cur.ended_at = ts
        self.line_no = counter.line_of(len(block))
        newline_count = self.ctx.newlines.size - 1  # not the leading one added above
        self.ctx = None
        self.arenas.rows_left = no_rows
        return newline_count

    def so_far(self, rel_path: str) -> tuple[ScalarSeries, ...]:
        """The series read so far, each thinned to ``SO_FAR_POINTS`` to twice that (every k-th point; ``_preview``,
        kept between calls so each looks only at what was read since): what the UI shows while a big log is still
        being read. Rows not flushed into chunks yet are left out."""
        out = [thinned(s.tag, [(s.steps, s.values, s.wall_times_s)], rel_path, s.attempt, SO_FAR_POINTS)
               for s in self.prefix_series]
        for seg in self.segments:
            for tag, parts in list(seg.sync_chunks().items()):
                thinned = self.previews.setdefault((seg.index, tag), ThinnedPoints(SO_FAR_POINTS))
                out.append(make_series(tag, *thinned.update(parts), rel_path, seg.index))
            for tag, (steps, values, walls) in list(seg.points.items()):
                out.append(make_series(tag, steps, values, walls, rel_path, seg.index))
        return tuple(s for s in out if len(s))

    def pid_markers(self, block: bytes, markers: dict[int, re.Match[bytes] | int]) -> None:
        """E0: a PID change without a ``=> Loading config`` line right after it starts a segment."""
        headers = sorted(ls for ls, pm in markers.items()
                         if not isinstance(pm, int) and block.startswith(b"=> Loading config", pm.end()))
        search_from = 0
        for key, _ in itertools.groupby(P.PID_LINE.findall(block)):
            pid = int(key)
            if pid not in self.pids:
                self.pids.append(pid)
            if self.last_pid is not None and pid != self.last_pid:
                pat = re.compile(rb"\n\[" + P.TS + rb" [A-Z]+ \S+ line \d+ " + key + rb"\] ")
                m = pat.search(block, search_from)
                if m is not None:
                    ls = m.start() + 1
                    search_from = ls
                    nxt = next((h for h in headers if h >= ls), None)
                    if nxt is None or block.find(b"Train: [", ls, nxt) >= 0:
                        markers.setdefault(ls, pid)
            self.last_pid = pid

    def result(self, rel_path: str, end_offset: int, line_count: int, findings: list[Finding],
               identity: tuple[int, bytes] | None = None, read_from: int = 0) -> TrainLogResult:
        """Freeze everything read so far; with ``identity`` (inode, last bytes) also the state to extend it."""
        if self.cur is not None:
            self.flush(self.cur)
        state = snapshot(self, end_offset, identity) if identity is not None else None
        if self.open_rec is not None:
            finish_record(self, self.open_rec)
        if self.cur is not None:
            self.close_segment(self.line_no - 1, end_offset)
        series: list[ScalarSeries] = list(self.prefix_series)
        segments: list[LogSegment] = list(self.prefix_segments)
        prev_ipe = None
        for done in segments:
            prev_ipe = done.iters_per_epoch or prev_ipe
        live: tuple[int, int] = (0, 0)
        for seg in self.segments:
            chunk_tags = len(seg.chunks)
            frozen, seg_series = finalize_segment(seg, rel_path, prev_ipe, self.index.rebase_steps)
            prev_ipe = frozen.iters_per_epoch or prev_ipe
            segments.append(frozen)
            series.extend(seg_series)
            live = (len(seg_series), chunk_tags)
        events = self.prefix_events + tuple(LogEvent(
            kind=r["kind"], message=r["message"] if "message" in r else record_text(r), source=rel_path, line_no=r["line"],
            level=r["level"], timestamp=r["ts"], attempt=r["seg"].index, step=r["step"]) for r in self.events)
        tables = self.prefix_tables + tuple(ValTable(t["step"], t["attempt"], t["line"], t["final"],
                                                     tuple(t["metrics"]), tuple(t["rows"])) for t in self.tables)
        findings = findings + non_finite_findings(series, rel_path)
        too_many = self.cap.finding(rel_path, "metric names")
        if too_many is not None:
            findings.append(too_many)
        if self.corrupt_at is not None:
            findings.insert(0, file_finding(
                "file.corrupt", rel_path, f"{rel_path} is not valid UTF-8 (first bad byte at offset "
                f"{self.corrupt_at}); bad bytes were replaced", severity=Severity.INFO))
        segments_t = tuple(segments)
        return TrainLogResult(tuple(series), segments_t, events, tables, tuple(self.best), self.era,
                              tuple(self.pids), end_offset, line_count, tuple(findings),
                              index=self.index.freeze(segments_t, series), long_lines=self.long_lines,
                              read_from_offset=read_from,
                              resume=None if state is None else completed(
                                  state, *live, self.long_line_count, self.skipped_bytes))


class _LineCounter:
    """Line numbers of positions in a block, from the block's newline positions (found once, with numpy; a small
    block's as a list, searched with ``bisect``, cheaper than a numpy call per record)."""

    def __init__(self, ctx: BlockContext, first_line_no: int, small: bool) -> None:
        self.newlines, self.base = ctx.newlines, first_line_no - 1
        self.listed: list[int] | None = self.newlines.tolist() if small else None

    def line_of(self, pos: int) -> int:
        """Line number of the line starting at ``pos`` (``block[pos-1]`` is a newline)."""
        if self.listed is not None:
            return self.base + bisect_left(self.listed, pos)
        return self.base + int(self.newlines.searchsorted(pos))


SO_FAR_POINTS = 20_000
"""Points per tag in a preview of what was read so far (``_Reader.so_far``)."""


def read_train_log(path: Path, rel_path: str, start_offset: int = 0, first_attempt: int = 1,
                   first_line_no: int = 1, previous: TrainLogResult | None = None) -> TrainLogResult:
    """Read a pimm train.log from ``start_offset`` (a line start) to its last complete line.

    With ``previous`` (an earlier result of the same file), only the bytes after its ``end_offset``
    are decoded, from the reader state it kept, and the result is the whole grown file's (equal to
    a full read). When the file cannot be such a continuation (another inode, shorter, its bytes
    before ``end_offset`` changed, or ``previous`` kept no state), it is read whole from the start.
    """
    try:
        return _read(path, rel_path, start_offset, first_attempt, first_line_no, previous, ahead=True)
    except AheadFailed:  # the scanning child failed midway: read again, alone
        return _read(path, rel_path, start_offset, first_attempt, first_line_no, previous, ahead=False)


def _read(path: Path, rel_path: str, start_offset: int, first_attempt: int, first_line_no: int,
          previous: TrainLogResult | None, ahead: bool) -> TrainLogResult:
    """``read_train_log``; ``ahead``: with a scanning child when the file is big enough (``_ahead``)."""
    reader = _Reader(rel_path, first_attempt, first_line_no)
    findings: list[Finding] = []
    try:
        fh = open_regular(path, rel_path)
    except UnreadableFile as exc:
        return reader.result(rel_path, start_offset, 0, [exc.finding], read_from=start_offset)
    lines = 0
    stats = LineStats()
    identity: tuple[int, bytes] | None = None
    whole: bytes | None = None
    end = start_offset
    with fh:
        try:
            st = os.fstat(fh.fileno())
            size = reader.size = st.st_size
            if previous is not None:
                # A file that brought too many names is read whole again: what it dropped was not kept.
                capped = any(f.code == "file.too-many-tags" for f in previous.findings)
                if previous.resume is not None and not capped and can_extend(fh, st, previous.resume):
                    restore(reader, previous, stats)
                    reader.cap = TagCap(s.tag for s in previous.series)
                    for seg in reader.segments:
                        seg.cap = reader.cap
                    start_offset, lines = previous.end_offset, previous.line_count
                else:
                    start_offset = 0
            end = start_offset
            if size == 0 and start_offset == 0:
                findings.append(file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO))
            elif start_offset > size:
                findings.append(file_finding(
                    "file.truncated", rel_path, f"{rel_path} is shorter than the offset read before; "
                    "it was probably rewritten by a fresh launch: read it again from the start",
                    severity=Severity.INFO))
                return reader.result(rel_path, 0, 0, findings, read_from=start_offset)
            block_bytes = read_progress.block_bytes(BLOCK_BYTES)  # the loader's, when it wants smaller steps
            source: BinaryIO = fh
            if start_offset == 0 and 0 < size <= min(block_bytes, HANDOFF_BYTES):
                # A small log in one read: its bytes go to the Config: dump reader too (``_handoff``).
                fh.seek(0)  # ``can_extend`` may have read elsewhere
                whole = fh.read(size)
                source = io.BytesIO(whole)
            with closing(scanned_blocks(source, start_offset, size, stats, block_bytes, MAX_LINE_BYTES,
                                        ahead)) as scanned:
                for count, (block, offset, real_end, prescan) in enumerate(scanned, 1):
                    lines += reader.block(block, offset, prescan)
                    end = real_end
                    read_progress.advanced(end, lambda: reader.so_far(rel_path))
                    if count % _TRIM_BLOCKS == 0:
                        release_freed_memory()
            if whole is not None:
                identity = (st.st_ino, whole[max(0, end - TAIL_CHECK_BYTES) : end])
            else:
                fh.seek(max(0, end - TAIL_CHECK_BYTES))
                identity = (st.st_ino, fh.read(end - max(0, end - TAIL_CHECK_BYTES)))
        except OSError as exc:
            findings.append(file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})"))
            stats.partial_bytes = 0
            identity = None  # the state is not known to be at a line end: never extend this result
    if stats.partial_bytes:
        findings.append(file_finding(
            "file.truncated", rel_path, f"{rel_path}: the last line has no newline ({stats.partial_bytes} bytes); "
            "it may still be being written and was not read", severity=Severity.INFO))
    if stats.long_line_count:
        findings.append(long_lines_finding(rel_path, stats.long_line_count, stats.skipped_bytes))
    reader.long_lines = tuple(stats.long_lines)
    reader.long_line_count, reader.skipped_bytes = stats.long_line_count, stats.skipped_bytes
    result = reader.result(rel_path, end, lines, findings, identity, read_from=start_offset)
    if whole is not None and identity is not None:
        leave(result.segments, path, whole)
    return result


__all__ = ["MAX_MESSAGE_BYTES", "LogSegment", "TrainLogIndex", "TrainLogResult", "TrainLogResume", "TrainLogTail",
           "ValTable", "ValTableRow", "long_lines_finding", "non_finite_findings", "read_train_log",
           "read_train_log_tail"]
