"""Reader for pimm's rank-0 ``train.log`` (all eras; spec section 3).

The file is read in blocks that end at a newline. Each block is scanned with a
few compiled byte patterns (Train: lines, interesting INFO records, WARNING+
records, E0 PIDs) instead of a per-line Python loop; only matched lines are
parsed further and numbers become numpy arrays per chunk.

Wall times come from the log's own timestamps, which are node-local time
without a zone: they are parsed as if they were UTC, so they order points and
measure gaps correctly but are not true unix seconds.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import numpy as np

from ...model import Finding, LogEvent, ScalarSeries, Severity
from . import _patterns as P
from .._common import UnreadableFile, file_finding, open_regular
from ._blocks import BLOCK_BYTES, MAX_LINE_BYTES, LineStats, blocks
from ._fast import FastRows
from ._findings import long_lines_finding, merge_refresh_fields, non_finite_findings
from ._index import BlockContext, IndexBuilder
from ._segments import SegmentState, finalize_segment
from ._tail import TrainLogTail, read_train_log_tail
from ._types import LogSegment, TrainLogIndex, TrainLogResult, ValTable, ValTableRow

MAX_MESSAGE_BYTES = 256 * 1024
"""Event messages longer than this keep their head and the last 4 KiB."""
_FLUSH_ROWS = 100_000


class _Reader:
    """Mutable state carried from block to block."""

    def __init__(self, rel_path: str, first_attempt: int, first_line_no: int) -> None:
        self.rel_path = rel_path
        self.next_index = first_attempt
        self.line_no = first_line_no
        self.segments: list[SegmentState] = []
        self.cur: SegmentState | None = None
        self.events: list[dict] = []
        self.open_rec: dict | None = None
        self.tables: list[dict] = []
        self.table: dict | None = None
        self.best: list[tuple[str, float, int | None]] = []
        self.era: str | None = None
        self.pids: list[int] = []
        self.last_pid: int | None = None
        self.corrupt_at: int | None = None
        self.ctx: BlockContext | None = None
        self.index = IndexBuilder()
        self.long_lines: tuple[tuple[int, int], ...] = ()

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

    # -- Train: lines -----------------------------------------------------
    def flush(self, seg: SegmentState) -> None:
        """Convert the segment's pending template rows into numpy chunks."""
        if not seg.pending:
            return
        assert seg.template is not None  # pending rows are only queued through the template
        rows, seg.pending = seg.pending, []
        cols = list(zip(*rows))
        walls = P.timestamps(cols[0])
        epochs, ipes = P.ints(cols[1]), P.ints(cols[4])
        steps = (epochs - 1) * ipes + P.ints(cols[3])
        for key, col in zip(seg.template[1], cols[5:]):
            seg.add_chunk(_tag(key), steps, P.floats(col), walls)
        seg.note_train(int(steps[0]), int(steps[-1]), len(rows), int(P.ints(cols[2][-1:])[0]), int(ipes[-1]))

    def train_range(self, block: bytes, lo: int, hi: int, delta: int, use_fast: bool = True) -> None:
        """Parse the Train: records between two interesting records of a block."""
        ctx = self.ctx
        assert ctx is not None  # set while block() reads a block
        count = ctx.count_hits(lo, hi)
        if count == 0:
            return
        seg = self.seg(self.line_no, delta + lo + 1)
        if seg.template is None and seg.template_tries < 3:
            seg.template_tries += 1
            m = P.GENERIC_TRAIN.search(block, lo, hi)
            if m is not None and not m.group(2):
                seg.template = P.build_template(m.group(7))
        if seg.template is not None:
            fast = ctx.fast_rows(seg.template) if use_fast else None
            if fast is not None:
                i, j, hits = fast.span(lo, hi)
                if j - i == count == hits:
                    self.flush(seg)
                    self.add_fast(seg, fast, i, j, delta)
                    return
                pieces = fast.pieces(lo, hi) if j > i else []
                if len(pieces) > 1:  # most lines are template lines: only the others take the regex paths
                    for piece_lo, piece_hi, accepted in pieces:
                        self.train_range(block, piece_lo, piece_hi, delta, use_fast=accepted)
                    return
            matches = list(seg.template[0].finditer(block, lo, hi))
            if matches and len(matches) == count:
                rows = [m.groups() for m in matches]
                seg.pending.extend(rows)
                last = rows[-1]
                seg.set_last(int(last[1]), int(last[3]), int(last[4]))
                self.index.add_rows(seg.index, [((int(r[1]) - 1) * int(r[4]) + int(r[3])) for r in rows],
                                    [m.start() + 1 for m in matches], ctx, delta)
                if len(seg.pending) >= _FLUSH_ROWS:
                    self.flush(seg)
                return
        self.flush(seg)
        self.generic_range(block, lo, hi, seg, delta)

    def add_fast(self, seg: SegmentState, fast: FastRows, i: int, j: int, delta: int) -> None:
        """Rows ``i:j`` of the block's template lines, as numpy chunks of the segment's series."""
        assert seg.template is not None and self.ctx is not None  # only called from train_range, which checked
        steps, walls = fast.steps[i:j], fast.walls[i:j]
        for key, col in zip(seg.template[1], fast.values):
            seg.add_chunk(_tag(key), steps, col[i:j], walls)
        last = j - 1
        seg.note_train(int(steps[0]), int(steps[-1]), j - i, int(fast.max_epochs[last]), int(fast.ipes[last]))
        seg.set_last(int(fast.epochs[last]), int(fast.iters[last]), int(fast.ipes[last]))
        self.index.add_chunk(seg.index, steps, self.ctx.line_numbers(fast.starts[i:j]), fast.starts[i:j] + delta)

    def generic_range(self, block: bytes, lo: int, hi: int, seg: SegmentState, delta: int) -> None:
        """Slow path for Train: lines of other shapes (fragments, varying keys)."""
        points: dict[str, tuple[list[int], list[float], list[int]]] = {}
        stamps: list[bytes] = []
        steps: list[int] = []
        starts: list[int] = []
        last = None
        for m in P.GENERIC_TRAIN.finditer(block, lo, hi):
            ts, pre, ep, max_ep, it, ipe, tail = m.groups()
            step = (int(ep) - 1) * int(ipe) + int(it)
            row = len(stamps)
            stamps.append(ts)
            steps.append(step)
            starts.append(m.start() + 1)
            for key, value in P.parse_tail(pre) + P.parse_tail(tail):
                lists = points.setdefault(_tag(key), ([], [], []))
                lists[0].append(step)
                lists[1].append(P.to_float(value))
                lists[2].append(row)
            last = (int(ep), int(it), int(ipe), int(max_ep))
        if last is None:
            return
        assert self.ctx is not None  # set while block() reads a block
        walls = P.timestamps(tuple(stamps))
        all_steps = np.asarray(steps, np.int64)
        every_row = np.arange(len(steps))
        for tag, (s, v, rows) in points.items():
            row_array = np.asarray(rows, np.int64)
            if row_array.size == every_row.size and np.array_equal(row_array, every_row):
                # a term of every line: share the range's steps and times, so the joined series share them too
                seg.add_chunk(tag, all_steps, np.asarray(v, np.float64), walls)
            else:
                seg.add_chunk(tag, np.asarray(s, np.int64), np.asarray(v, np.float64), walls[row_array])
        seg.note_train(steps[0], steps[-1], len(steps), last[3], last[2])
        seg.set_last(last[0], last[1], last[2])
        self.index.add_rows(seg.index, steps, starts, self.ctx, delta)

    # -- blocks -----------------------------------------------------------
    def block(self, block: bytes, offset: int) -> int:
        """Process ``\\n`` + complete lines starting at file offset ``offset``; returns the line count."""
        if self.corrupt_at is None and not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.corrupt_at = offset + exc.start - 1
        delta = offset - 1  # absolute offset of block[i] is delta + i
        self.ctx = BlockContext(block, self.line_no)
        self.index.scan_submitit(self.ctx, delta)
        counter = _LineCounter(self.ctx, self.line_no)
        self.continue_record(block)
        first = P.RECORD_START.search(block)
        first_pm = P.PREFIX.match(block, first.end()) if first else None
        if self.era is None and first_pm is not None:
            self.era = "E0" if first_pm.group(3) else "E1+"
        if self.cur is None and not (first is not None and first_pm is not None and first.start() == 0
                                     and block.startswith(b"=> Loading config", first_pm.end())):
            self.seg(self.line_no, offset)
        if self.cur is not None and self.cur.started_at is None and first_pm is not None:
            self.cur.started_at = first_pm.group(1).decode()
        markers = P.find_markers(block)
        if self.era == "E0":
            self.pid_markers(block, markers)
        cursor = 0
        for ls in sorted(markers):
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
                self.record(block, ls, line_end, mark, line_no, delta)
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
        return newline_count

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

    # -- records ----------------------------------------------------------
    def record(self, block: bytes, ls: int, line_end: int, pm: re.Match, line_no: int, delta: int) -> None:
        """Interpret one interesting record (first line in ``block[pm.end():line_end]``)."""
        ts = pm.group(1).decode()
        level = pm.group(2).decode()
        first = block[pm.end():min(line_end, pm.end() + MAX_MESSAGE_BYTES)]
        text = first.decode("utf-8", "replace")
        if text.startswith("=> Loading config"):
            self.boundary(block, ls, delta, line_no, ts, header=True)
        seg = self.seg(line_no, delta + ls)
        if seg.started_at is None:
            seg.started_at = ts
        kind = seg.interpret(text, first, ts, line_no, self)
        if level in ("WARNING", "ERROR", "CRITICAL"):
            if level == "WARNING":
                seg.warnings += 1
            nxt = P.RECORD_START.search(block, line_end)
            end = nxt.start() if nxt is not None else len(block) - 1
            rec = self.new_event("warning" if level == "WARNING" else "error", level, ts, line_no, seg)
            _append(rec, block[pm.end():end])
            if nxt is None:
                self.open_rec = rec
            else:
                self.finish_record(rec)
        elif kind is not None:
            rec = self.new_event(kind, level, ts, line_no, seg)
            _append(rec, first)
            self.finish_record(rec)

    def new_event(self, kind: str, level: str, ts: str, line_no: int, seg: SegmentState) -> dict:
        """A mutable event record, kept in file order."""
        rec = {"kind": kind, "level": level, "ts": ts, "line": line_no, "seg": seg,
               "step": seg.last_g, "head": bytearray(), "tail": b"", "size": 0}
        self.events.append(rec)
        return rec

    def continue_record(self, block: bytes) -> None:
        """Append this block's leading continuation lines to a record left open by the last block."""
        if self.open_rec is None:
            return
        nxt = P.RECORD_START.search(block)
        end = nxt.start() if nxt is not None else len(block) - 1
        _append(self.open_rec, block[:end])
        if nxt is not None:
            self.finish_record(self.open_rec)

    def finish_record(self, rec: dict) -> None:
        """Complete a WARNING/ERROR record: classify tracebacks and mark the crash."""
        if rec is self.open_rec:
            self.open_rec = None
        text = _record_text(rec)
        rec["message"] = text
        if rec["level"] in ("ERROR", "CRITICAL") and "Traceback (most recent call last)" in text:
            rec["kind"] = "traceback"
            lines = [ln for ln in rec["tail"].decode("utf-8", "replace").splitlines() if ln.strip()]
            rec["seg"].mark_end("crashed", lines[-1].strip() if lines else None)

    def result(self, rel_path: str, end_offset: int, line_count: int, findings: list[Finding]) -> TrainLogResult:
        """Freeze everything read so far."""
        if self.open_rec is not None:
            self.finish_record(self.open_rec)
        if self.cur is not None:
            self.close_segment(self.line_no - 1, end_offset)
        series: list[ScalarSeries] = []
        segments: list[LogSegment] = []
        prev_ipe = None
        for seg in self.segments:
            frozen, seg_series = finalize_segment(seg, rel_path, prev_ipe)
            prev_ipe = frozen.iters_per_epoch or prev_ipe
            segments.append(frozen)
            series.extend(seg_series)
        events = tuple(LogEvent(kind=r["kind"], message=r.get("message") or _record_text(r), source=rel_path,
                                line_no=r["line"], level=r["level"], timestamp=r["ts"],
                                attempt=r["seg"].index, step=r["step"]) for r in self.events)
        tables = tuple(ValTable(t["step"], t["attempt"], t["line"], t["final"], tuple(t["metrics"]),
                                tuple(t["rows"])) for t in self.tables)
        findings = findings + non_finite_findings(series, rel_path)
        if self.corrupt_at is not None:
            findings.insert(0, file_finding(
                "file.corrupt", rel_path, f"{rel_path} is not valid UTF-8 (first bad byte at offset "
                f"{self.corrupt_at}); bad bytes were replaced", severity=Severity.INFO))
        segments_t = tuple(segments)
        return TrainLogResult(tuple(series), segments_t, events, tables, tuple(self.best), self.era,
                              tuple(self.pids), end_offset, line_count, tuple(findings),
                              index=self.index.freeze(segments_t), long_lines=self.long_lines)


class _LineCounter:
    """Line numbers of positions in a block, from the block's newline positions (found once, with numpy)."""

    def __init__(self, ctx: BlockContext, first_line_no: int) -> None:
        self.newlines, self.base = ctx.newlines, first_line_no - 1

    def line_of(self, pos: int) -> int:
        """Line number of the line starting at ``pos`` (``block[pos-1]`` is a newline)."""
        return self.base + int(np.searchsorted(self.newlines, pos))


def _tag(key: bytes) -> str:
    """Writer tag of a Train: term (spec 4.2)."""
    if key == b"Lr":
        return "params/lr"
    if key == b"Data":
        return "time/data_s"
    if key == b"Batch":
        return "time/batch_s"
    return "train_batch/" + key.decode("utf-8", "replace")


def _append(rec: dict, chunk: bytes) -> None:
    """Add text to a record, keeping at most MAX_MESSAGE_BYTES of head and 4 KiB of tail."""
    room = MAX_MESSAGE_BYTES - len(rec["head"])
    if room > 0:
        rec["head"] += chunk[:room]
    rec["tail"] = (rec["tail"] + chunk[-4096:])[-4096:]
    rec["size"] += len(chunk)


def _record_text(rec: dict) -> str:
    """The record's message, with an omission note when it was too long to keep."""
    head = bytes(rec["head"])
    if rec["size"] > len(head):
        head += b"\n... [%d bytes omitted] ...\n" % (rec["size"] - len(head) - len(rec["tail"])) + rec["tail"]
    return head.decode("utf-8", "replace").rstrip("\n")


def read_train_log(path: Path, rel_path: str, start_offset: int = 0, first_attempt: int = 1,
                   first_line_no: int = 1) -> TrainLogResult:
    """Read a pimm train.log from ``start_offset`` (a line start) to its last complete line.

    To refresh, pass the last segment's ``start_offset``, ``index`` and ``start_line``
    and replace that segment (and its series) with what comes back.
    """
    reader = _Reader(rel_path, first_attempt, first_line_no)
    findings: list[Finding] = []
    try:
        fh = open_regular(path, rel_path)
    except UnreadableFile as exc:
        return reader.result(rel_path, start_offset, 0, [exc.finding])
    end = start_offset
    lines = 0
    stats = LineStats()
    with fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size == 0 and start_offset == 0:
                findings.append(file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO))
            elif start_offset > size:
                findings.append(file_finding(
                    "file.truncated", rel_path, f"{rel_path} is shorter than the offset read before; "
                    "it was probably rewritten by a fresh launch: read it again from the start",
                    severity=Severity.INFO))
                return reader.result(rel_path, 0, 0, findings)
            for block, offset, real_end in blocks(fh, start_offset, size, stats, BLOCK_BYTES, MAX_LINE_BYTES):
                lines += reader.block(block, offset)
                end = real_end
        except OSError as exc:
            findings.append(file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})"))
            stats.partial_bytes = 0
    if stats.partial_bytes:
        findings.append(file_finding(
            "file.truncated", rel_path, f"{rel_path}: the last line has no newline ({stats.partial_bytes} bytes); "
            "it may still be being written and was not read", severity=Severity.INFO))
    if stats.long_line_count:
        findings.append(long_lines_finding(rel_path, stats.long_line_count, stats.skipped_bytes))
    reader.long_lines = tuple(stats.long_lines)
    return reader.result(rel_path, end, lines, findings)


__all__ = ["LogSegment", "TrainLogIndex", "TrainLogResult", "TrainLogTail", "ValTable", "ValTableRow",
           "long_lines_finding", "merge_refresh_fields", "non_finite_findings", "read_train_log",
           "read_train_log_tail"]
