"""Reader for TensorBoard event files (TFRecord-framed ``Event`` protos): scalars and markers."""

from __future__ import annotations

import dataclasses

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import Finding, ScalarSeries, Severity, make_series
from ._common import UnreadableFile, file_finding, open_regular
from ._tb_fast import decode_scalar_group
from ._tfrecord import MAX_RECORD_BYTES, frame_records, group_crc32c, header_ok, masked, crc32c

_NAME_RE = re.compile(r"^events\.out\.tfevents\.(\d{10})\.(.+)$")
_PID_RE = re.compile(r"^(.+?)\.(\d+)\.(\d+)((?:[.\-_].*)?)$")
_GATHER_BYTES = 1 << 24  # cap on the index array built when gathering scattered records

# TensorFlow DataType enum values of numeric scalar tensors -> (numpy dtype, repeated field).
_TENSOR_DTYPES: dict[int, tuple[str, str]] = {
    1: ("<f4", "float_val"), 2: ("<f8", "double_val"), 19: ("<f2", "half_val"), 14: ("bf16", "half_val"),
    3: ("<i4", "int_val"), 4: ("u1", "int_val"), 5: ("<i2", "int_val"), 6: ("i1", "int_val"),
    17: ("<u2", "int_val"), 9: ("<i8", "int64_val"), 22: ("<u4", "uint32_val"), 23: ("<u8", "uint64_val"),
}


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
    """Read scalars and markers of an event file from ``start_offset``; damage becomes findings."""
    try:
        handle = open_regular(Path(path), rel_path)
    except UnreadableFile as exc:
        return _empty_result(start_offset, [exc.finding])
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return _empty_result(0, [file_finding("file.empty", rel_path, f"{rel_path} is empty",
                                                      "The writer created the file but no record reached disk.",
                                                      Severity.INFO)])
            if start_offset >= size:
                return _empty_result(start_offset, [])
            # Read, not mmap: a file truncated while mapped kills the process with SIGBUS.
            start = max(0, start_offset)
            handle.seek(start)
            data = handle.read(size - start)
        except (OSError, ValueError) as exc:
            return _empty_result(start_offset, [file_finding("file.unreadable", rel_path,
                                                             f"{rel_path}: cannot read ({exc})")])
    result = _read_buffer(data, len(data), 0, rel_path, check_crc)
    if start:
        # Offsets inside the appended part are relative to ``start``; the resume point must be absolute.
        result = dataclasses.replace(result, end_offset=result.end_offset + start)
    return result


@dataclass(slots=True)
class _Group:
    """Equal-length records: their record indices, offsets and an (N, L + 16) byte block."""

    indices: np.ndarray
    offsets: np.ndarray
    length: int
    block: np.ndarray


def _groups(buf, framing) -> list[_Group]:
    """Byte blocks for the framed records: strided views for runs, gathers for the rest."""
    groups: list[_Group] = []
    for first, base, block_bytes, blocks, rel, pattern in framing.runs:
        period = len(pattern)
        steps = np.arange(blocks, dtype=np.int64)
        for j, (offset, length) in enumerate(zip(rel, pattern)):
            view = np.ndarray((blocks, length + 16), dtype=np.uint8, buffer=buf, offset=base + offset,
                              strides=(block_bytes, 1))
            groups.append(_Group(first + j + steps * period, base + offset + steps * block_bytes, length, view))
    if framing.single_offset:
        indices = framing.single_indices()
        offsets = np.array(framing.single_offset, dtype=np.int64)
        lengths = framing.single_lengths(buf)
        order = np.argsort(lengths, kind="stable")
        bounds = np.flatnonzero(np.diff(lengths[order])) + 1
        flat = np.frombuffer(buf, dtype=np.uint8)
        for chunk in np.split(order, bounds):
            length = int(lengths[chunk[0]])
            width = length + 16
            rows_per_gather = max(1, _GATHER_BYTES // width)
            for start in range(0, len(chunk), rows_per_gather):
                part = chunk[start : start + rows_per_gather]
                if width > 4096:
                    block = np.stack([flat[o : o + width] for o in offsets[part].tolist()])
                else:
                    block = flat[offsets[part][:, None] + np.arange(width, dtype=np.int64)]
                groups.append(_Group(indices[part], offsets[part], length, block))
    return groups


def _first_bad_record(groups: list[_Group]) -> int | None:
    """Index of the first record whose header or payload CRC does not match."""
    first_bad: int | None = None
    for group in groups:
        length = group.length
        header = np.ascontiguousarray(group.block[:, 8:12]).view("<u4").ravel()
        bad = header != masked(crc32c(struct.pack("<Q", length)))
        stored = np.ascontiguousarray(group.block[:, 12 + length : 16 + length]).view("<u4").ravel()
        bad |= stored != masked(group_crc32c(group.block[:, 12 : 12 + length]))
        if bad.any():
            candidate = int(group.indices[bad].min())
            first_bad = candidate if first_bad is None else min(first_bad, candidate)
    return first_bad


class _Collector:
    """Accumulates per-tag pieces, markers and counts from both decode paths."""

    def __init__(self) -> None:
        self.pieces: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.markers: list[EventMarker] = []
        self.file_version: tuple[int, str] | None = None
        self.first: tuple[int, float] | None = None
        self.last: tuple[int, float] | None = None
        self.other = 0
        self.undecodable = 0
        self.tag_plugins: dict[str, str] = {}
        self.slow: dict[str, list[tuple[int, int, float, float]]] = {}
        self.queue: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        """Records for protobuf: decoded after all groups, in file order (plugin metadata comes first)."""

    def see_wall(self, index: int, wall: float) -> None:
        """Track the wall times of the first and last records."""
        if self.first is None or index < self.first[0]:
            self.first = (index, wall)
        if self.last is None or index > self.last[0]:
            self.last = (index, wall)

    def add(self, tag: str, indices, steps, values, walls) -> None:
        """Add points of one tag."""
        self.pieces.setdefault(tag, []).append((indices, steps, values, walls))


def _tensor_scalar(tensor) -> float | None:
    """The value of a one-element numeric tensor, or None."""
    try:
        return _tensor_value(tensor)
    except (ValueError, OverflowError, TypeError):
        return None  # content of the wrong size, or a value outside its dtype


def _tensor_value(tensor) -> float | None:
    """The value of a one-element numeric tensor, or None (may raise on malformed content)."""
    if any(dim.size != 1 for dim in tensor.tensor_shape.dim):
        return None
    spec = _TENSOR_DTYPES.get(tensor.dtype)
    if spec is None:
        return None
    dtype, field_name = spec
    if tensor.tensor_content:
        raw = np.frombuffer(tensor.tensor_content, dtype="<u2" if dtype == "bf16" else dtype)
        if raw.shape[0] != 1:
            return None
    else:
        values = getattr(tensor, field_name)
        if len(values) != 1:
            return None
        raw = np.array(values[:1], dtype=np.int64 if field_name == "half_val" else dtype)
        if field_name == "half_val":
            raw = raw.astype("<u2")
            if dtype == "<f2":
                raw = raw.view("<f2")
    if dtype == "bf16":
        return float((raw.astype(np.uint32) << np.uint32(16)).view(np.float32)[0])
    return float(raw[0])


def _decode_slow(buf, offsets: np.ndarray, lengths: np.ndarray, indices: np.ndarray, out: _Collector) -> None:
    """Decode records one by one with protobuf (markers, tensors, anything off the fast layout)."""
    # Imported here: ~0.05 s, and only needed for records off the fast path.
    from tensorboard.compat.proto import event_pb2
    from google.protobuf.message import DecodeError

    status_name = event_pb2.SessionLog.SessionStatus.Name
    for offset, length, index in zip(offsets.tolist(), lengths.tolist(), indices.tolist()):
        try:
            event = event_pb2.Event.FromString(buf[offset + 12 : offset + 12 + length])
        except (DecodeError, Exception):  # any parse failure is damage, never a crash
            out.undecodable += 1
            out.other += 1
            continue
        out.see_wall(index, event.wall_time)
        kind = event.WhichOneof("what")
        if kind == "file_version":
            out.markers.append(EventMarker("file_version", event.step, event.wall_time, event.file_version, index))
            if out.file_version is None or index < out.file_version[0]:
                out.file_version = (index, event.file_version)
            continue
        if kind == "session_log":
            try:
                status = status_name(event.session_log.status)
            except ValueError:
                status = str(event.session_log.status)
            out.markers.append(EventMarker("session_log", event.step, event.wall_time, status, index))
            continue
        found = False
        if kind == "summary":
            for value in event.summary.value:
                scalar = _value_scalar(value, out.tag_plugins)
                if scalar is not None:
                    out.slow.setdefault(value.tag, []).append((index, event.step, scalar, event.wall_time))
                    found = True
        if not found:
            out.other += 1


def _value_scalar(value, tag_plugins: dict[str, str]) -> float | None:
    """A scalar from a ``Summary.Value``: simple_value, or a scalar tensor of the scalars plugin."""
    which = value.WhichOneof("value")
    if which == "simple_value":
        return float(value.simple_value)
    plugin = value.metadata.plugin_data.plugin_name if value.HasField("metadata") else ""
    if plugin:
        tag_plugins.setdefault(value.tag, plugin)  # TF writes metadata only with a tag's first value
    if which != "tensor" or tag_plugins.get(value.tag, "scalars") != "scalars":
        return None
    return _tensor_scalar(value.tensor)


def _read_buffer(buf, size: int, start: int, rel_path: str, check_crc: bool) -> EventFileResult:
    """Frame, check, decode and assemble the records of ``buf[start:size]``."""
    findings: list[Finding] = []
    framing = frame_records(buf, start, size)
    groups = _groups(buf, framing)
    record_count = framing.record_count
    end_offset = framing.end_offset
    first_bad = _first_bad_record(groups) if check_crc else None
    if first_bad is not None:
        offset = min(int(g.offsets[g.indices == first_bad][0]) for g in groups if (g.indices == first_bad).any())
        record_count, end_offset = first_bad, offset
        findings.append(file_finding(
            "file.corrupt", rel_path,
            f"{rel_path}: CRC mismatch in record {first_bad} at byte {offset}; "
            f"{first_bad} records before it were read, the rest ignored",
            "The file is damaged at that point. TensorBoard's own loader stops at the first CRC error as well, "
            "so it shows no data after it either; earlier points are intact."))
    elif framing.stop == "too-long":
        findings.append(file_finding(
            "file.corrupt", rel_path,
            f"{rel_path}: record at byte {end_offset} claims {framing.stop_length} bytes "
            f"(over the {MAX_RECORD_BYTES // (1024 * 1024)} MiB cap); the rest of the file was ignored",
            "The length field is corrupt. TensorBoard's own loader stops at the first CRC error as well; "
            "earlier records are intact."))
    elif framing.stop == "truncated":
        if check_crc and size - end_offset >= 12 and not header_ok(buf, end_offset, framing.stop_length):
            findings.append(file_finding(
                "file.corrupt", rel_path,
                f"{rel_path}: CRC mismatch in the length of the record at byte {end_offset}; the rest was ignored",
                "The file is damaged at that point. TensorBoard's own loader stops at the first CRC error as well; "
                "earlier records are intact."))
        else:
            findings.append(file_finding(
                "file.truncated", rel_path,
                f"{rel_path}: incomplete record at byte {end_offset} ({size - end_offset} bytes); "
                "every record before it was read",
                "The file may still be being written (a running run, or a writer killed before it flushed); "
                "a later refresh reads the rest once it is complete.", Severity.INFO))
    out = _Collector()
    for group in groups:
        _decode_group(buf, group, first_bad, out)
    if out.queue:
        indices, offsets, lengths = (np.concatenate(parts) for parts in zip(*out.queue))
        order = np.argsort(indices, kind="stable")
        _decode_slow(buf, offsets[order], lengths[order], indices[order], out)
    if out.undecodable:
        findings.append(file_finding(
            "file.corrupt", rel_path,
            f"{rel_path}: {out.undecodable} record(s) with a valid CRC could not be decoded as Event and were skipped",
            "The records are not TensorBoard events (or were written by an incompatible writer)."))
    return _assemble(out, rel_path, record_count, end_offset, findings)


def _decode_group(buf, group: _Group, first_bad: int | None, out: _Collector) -> None:
    """Decode one group: the fast layout where it matches, protobuf for the rest."""
    indices, offsets, block = group.indices, group.offsets, group.block
    if first_bad is not None:
        keep = indices < first_bad
        if not keep.all():
            indices, offsets, block = indices[keep], offsets[keep], block[keep]
    if indices.shape[0] == 0:
        return
    slow = np.ones(indices.shape[0], dtype=bool)
    for piece in decode_scalar_group(block[:, 12 : 12 + group.length]):
        slow[piece.rows] = False
        piece_indices = indices[piece.rows]
        out.see_wall(int(piece_indices[0]), float(piece.wall_times_s[0]))
        out.see_wall(int(piece_indices[-1]), float(piece.wall_times_s[-1]))
        if len(piece.tag_names) == 1:
            out.add(piece.tag_names[0], piece_indices, piece.steps, piece.values, piece.wall_times_s)
            continue
        # One stable sort by tag (radix on small ints) keeps file order within each tag.
        small = piece.tag_index.astype(np.uint16) if len(piece.tag_names) < 65536 else piece.tag_index
        order = np.argsort(small, kind="stable")
        bounds = np.cumsum(np.bincount(piece.tag_index, minlength=len(piece.tag_names)))
        start = 0
        for tag, stop in zip(piece.tag_names, bounds.tolist()):
            if stop > start:  # a tag dropped for not being UTF-8 has no rows
                rows = order[start:stop]
                out.add(tag, piece_indices[rows], piece.steps[rows], piece.values[rows], piece.wall_times_s[rows])
            start = stop
    if slow.any():
        out.queue.append((indices[slow], offsets[slow], np.full(int(slow.sum()), group.length, dtype=np.int64)))


def _assemble(out: _Collector, rel_path: str, record_count: int, end_offset: int,
              findings: list[Finding]) -> EventFileResult:
    """Merge pieces per tag into file order and build the result."""
    for tag, points in out.slow.items():
        arr = np.array([p[0] for p in points], dtype=np.int64)
        out.add(tag, arr, np.array([p[1] for p in points], dtype=np.int64),
                np.array([p[2] for p in points], dtype=np.float64), np.array([p[3] for p in points], dtype=np.float64))
    series: dict[str, ScalarSeries] = {}
    scalar_count = 0
    # Tags in order of their first point in the file, whatever path decoded them.
    ordered = sorted(out.pieces.items(), key=lambda item: min(int(p[0][0]) for p in item[1] if p[0].shape[0]))
    for tag, pieces in ordered:
        indices = np.concatenate([p[0] for p in pieces])
        steps = np.concatenate([p[1] for p in pieces])
        values = np.concatenate([p[2] for p in pieces])
        walls = np.concatenate([p[3] for p in pieces])
        if indices.shape[0] > 1 and not (np.diff(indices) >= 0).all():
            order = np.argsort(indices, kind="stable")
            steps, values, walls = steps[order], values[order], walls[order]
        series[tag] = make_series(tag, steps, values, walls, rel_path)
        scalar_count += int(steps.shape[0])
    markers = tuple(sorted(out.markers, key=lambda m: m.record_index))
    return EventFileResult(
        series=series,
        markers=markers,
        file_version=out.file_version[1] if out.file_version else None,
        first_wall_time_s=out.first[1] if out.first else None,
        last_wall_time_s=out.last[1] if out.last else None,
        record_count=record_count,
        scalar_count=scalar_count,
        other_count=out.other,
        end_offset=end_offset,
        findings=tuple(findings),
    )
