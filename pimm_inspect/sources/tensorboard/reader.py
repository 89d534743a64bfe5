"""Reader for TensorBoard event files (TFRecord-framed ``Event`` protos): scalars and markers.

The file is read in windows of ``WINDOW_BYTES``. In each window the records are framed
(``_tfrecord``), grouped by length across the whole window, CRC-checked a group at a time and
decoded by byte layout with numpy (``_tb_window``, ``_tb_fast``, ``_tb_layout``); records off
the known layouts go to protobuf (``_tb_slow``). The first damaged record ends the read, as in
TensorBoard's own loader.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ...model import Finding, ScalarSeries, Severity, make_series
from .._common import UnreadableFile, file_finding, open_regular
from .._limits import MAX_TAGS_PER_FILE as MAX_TAGS_PER_FILE  # noqa: PLC0414 - re-exported: the cap a reader of appended records must keep too
from ._window import Accumulator, decode_window
from ._tfrecord import MAX_RECORD_BYTES, Buf, frame_records, header_ok

_NAME_RE = re.compile(r"^events\.out\.tfevents\.(\d{10})\.(.+)$")
_PID_RE = re.compile(r"^(.+?)\.(\d+)\.(\d+)((?:[.\-_].*)?)$")
WINDOW_BYTES = 8 * 1024 * 1024
"""Bytes read and decoded at a time: memory is bounded by this plus the decoded columns, not the file size."""


@dataclass(frozen=True, slots=True)
class EventFileName:
    """The parts of an event file name: ``events.out.tfevents.<time>.<host>[.<pid>.<counter>][suffix]``."""

    timestamp_s: int
    host: str
    pid: int | None
    """None for tensorboardX names, which stop at the host."""
    counter: int | None
    suffix: str = ""
    """Whatever follows the counter (e.g. ``.v2``); empty when absent."""


@dataclass(frozen=True, slots=True, eq=False)
class EventMarker:
    """A ``file_version`` or ``session_log`` record (resume/purge semantics depend on them)."""

    kind: str
    """file_version or session_log."""
    step: int
    wall_time_s: float
    detail: str
    """The file_version string, or the session_log status name (START, STOP, CHECKPOINT)."""
    record_index: int
    """0-based index of the record among those read in this call."""


@dataclass(frozen=True, slots=True, eq=False)
class EventFileResult:
    """Everything read from one event file (or from its appended part)."""

    series: dict[str, ScalarSeries]
    """Tag -> points in file order (not sorted or deduplicated); source is the rel_path."""
    markers: tuple[EventMarker, ...]
    file_version: str | None
    """The first file_version string read; None when no such record was read."""
    first_wall_time_s: float | None
    """Wall time of the first record read; None when nothing was read."""
    last_wall_time_s: float | None
    record_count: int
    """Whole, valid records read (before any damage)."""
    scalar_count: int
    other_count: int
    """Records carrying neither a scalar nor a marker (histograms, images, text, graphs, undecodable)."""
    end_offset: int
    """Absolute offset just after the last whole, valid record (resume point for a refresh)."""
    findings: tuple[Finding, ...]


def parse_event_file_name(name: str) -> EventFileName | None:
    """Split an event file name into its parts, or None when it is not one."""
    match = _NAME_RE.match(name)
    if match is None:
        return None
    rest = match.group(2)
    with_pid = _PID_RE.match(rest)
    if with_pid is not None:
        return EventFileName(int(match.group(1)), with_pid.group(1), int(with_pid.group(2)),
                             int(with_pid.group(3)), with_pid.group(4))
    return EventFileName(int(match.group(1)), rest, None, None, "")


def _empty_result(offset: int, findings: list[Finding]) -> EventFileResult:
    """A result with no records."""
    return EventFileResult({}, (), None, None, None, 0, 0, 0, offset, tuple(findings))


def read_event_file(path: Path, rel_path: str, start_offset: int = 0, check_crc: bool = True) -> EventFileResult:
    """Read scalars and markers of an event file from ``start_offset``; damage becomes findings.

    The file is read in windows of ``WINDOW_BYTES``. ``check_crc=False`` skips the payload
    CRCs only: a length field's CRC is always checked, since a wrong length loses the framing.
    """
    try:
        handle = open_regular(Path(path), rel_path)
    except UnreadableFile as exc:
        return _empty_result(start_offset, [exc.finding])
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            return _empty_result(start_offset, [file_finding("file.unreadable", rel_path,
                                                             f"{rel_path}: cannot read ({exc})")])
        if size == 0:
            return _empty_result(0, [file_finding("file.empty", rel_path, f"{rel_path} is empty",
                                                  "The writer created the file but no record reached disk.",
                                                  Severity.INFO)])
        if start_offset >= size:
            return _empty_result(start_offset, [])

        def read_at(offset: int, count: int) -> bytes:
            # read(), not mmap: a file truncated while mapped kills the process with SIGBUS.
            handle.seek(offset)
            return handle.read(count)

        try:
            return _read_windows(read_at, size, max(0, start_offset), rel_path, check_crc)
        except (OSError, ValueError) as exc:
            return _empty_result(start_offset, [file_finding("file.unreadable", rel_path,
                                                             f"{rel_path}: cannot read ({exc})")])


def _read_windows(read_at: Callable[[int, int], bytes | memoryview], size: int, start: int, rel_path: str,
                  check_crc: bool) -> EventFileResult:
    """Frame, check and decode ``[start, size)`` window by window; the first damage ends the read."""
    acc = Accumulator(size_hint=size - start)
    findings: list[Finding] = []
    pos, want = start, WINDOW_BYTES
    while pos < size:
        data = read_at(pos, min(size - pos, want))
        at_eof = len(data) < min(size - pos, want) or pos + len(data) >= size
        framing = frame_records(data, 0, len(data))
        offsets = framing.offsets
        first_bad = decode_window(data, offsets, framing.lengths(), acc.record_count, check_crc, acc)
        acc.settle(pos + len(data) - start)
        if first_bad is not None:
            findings.append(_damage(data, int(offsets[first_bad]), pos, rel_path,
                                    f"CRC mismatch in record {acc.record_count}", acc.record_count))
            pos += int(offsets[first_bad])
            break
        end = framing.end_offset
        if framing.stop == "too-long":
            findings.append(file_finding(
                "file.corrupt", rel_path,
                f"{rel_path}: record at byte {pos + end} claims {framing.stop_length} bytes "
                f"(over the {MAX_RECORD_BYTES // (1024 * 1024)} MiB cap); the rest of the file was ignored",
                "The length field is corrupt. TensorBoard's own loader stops at the first CRC error as well; "
                "earlier records are intact."))
        elif framing.stop == "bad-header" or (framing.stop == "truncated" and len(data) - end >= 12
                                              and not header_ok(data, end, framing.stop_length)):
            findings.append(_damage(data, end, pos, rel_path, "CRC mismatch in the length of the record",
                                    acc.record_count))
        elif framing.stop == "truncated" and not at_eof:
            # The window ends inside a record: the next window starts at it (and holds it whole).
            want = WINDOW_BYTES if offsets.shape[0] else max(WINDOW_BYTES, framing.stop_length + 16)
            if offsets.shape[0] or want > len(data):
                pos += end
                continue
        elif framing.stop == "truncated":
            findings.append(file_finding(
                "file.truncated", rel_path,
                f"{rel_path}: incomplete record at byte {pos + end} ({len(data) - end} bytes); "
                "every record before it was read",
                "The file may still be being written (a running run, or a writer killed before it flushed); "
                "a later refresh reads the rest once it is complete.", Severity.INFO))
        elif not at_eof:
            pos, want = pos + end, WINDOW_BYTES
            continue
        pos += end
        break
    too_many = acc.cap.finding(rel_path)
    if too_many is not None:
        findings.append(too_many)
    if acc.undecodable:
        findings.append(file_finding(
            "file.corrupt", rel_path,
            f"{rel_path}: {acc.undecodable} record(s) with a valid CRC could not be decoded as Event and were skipped",
            "The records are not TensorBoard events (or were written by an incompatible writer)."))
    return _result(acc, rel_path, pos, findings)


def _damage(data: Buf, offset: int, window_start: int, rel_path: str, what: str, records_before: int) -> Finding:
    """A ``file.corrupt`` finding for a CRC mismatch at ``window_start + offset`` (zero fill named)."""
    at = window_start + offset
    tail = np.frombuffer(data, dtype=np.uint8)[offset:]
    zero_run = int(np.argmax(tail != 0)) if (tail != 0).any() else tail.shape[0]
    if zero_run >= 16:
        more = "" if zero_run < tail.shape[0] else " or more"
        cause = (f"; the file holds {zero_run}{more} zero bytes from there (a hole: the data never reached disk, "
                 "e.g. after a crash or power loss, or a sparse file)")
    else:
        cause = ""
    return file_finding(
        "file.corrupt", rel_path,
        f"{rel_path}: {what} at byte {at}{cause}; {records_before} records before it were read, the rest ignored",
        "The file is damaged at that point. TensorBoard's own loader stops at the first CRC error as well, "
        "so it shows no data after it either; earlier points are intact.")


def _result(acc: Accumulator, rel_path: str, end_offset: int, findings: list[Finding]) -> EventFileResult:
    """Concatenate each tag's window parts (file order) and build the result."""
    series: dict[str, ScalarSeries] = {}
    scalar_count = 0
    names = {tag_id: tag for tag, tag_id in acc.tag_ids.items()}
    # Tags in order of their first point in the file, whatever path decoded them.
    for tag_id in sorted(acc.first_seen, key=acc.first_seen.__getitem__):
        steps, values, walls = acc.columns(tag_id)  # each window's parts let go once copied
        series[names[tag_id]] = make_series(names[tag_id], steps, values, walls, rel_path)
        scalar_count += int(steps.shape[0])
    markers = tuple(EventMarker(m.kind, m.step, m.wall_time_s, m.detail, m.record_index)
                    for m in sorted(acc.markers, key=lambda m: m.record_index))
    versions = [m.detail for m in markers if m.kind == "file_version"]
    return EventFileResult(
        series=series,
        markers=markers,
        file_version=versions[0] if versions else None,
        first_wall_time_s=acc.first_wall[1] if acc.first_wall else None,
        last_wall_time_s=acc.last_wall[1] if acc.last_wall else None,
        record_count=acc.record_count,
        scalar_count=scalar_count,
        other_count=acc.other_count,
        end_offset=end_offset,
        findings=tuple(findings),
    )
