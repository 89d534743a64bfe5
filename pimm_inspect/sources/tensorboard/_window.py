"""Decode one window of framed event records: bucket by length, check CRCs, decode, restore file order.

Records of equal length are gathered into one (N, L + 16) block per length across the whole
window (not only runs of neighbours), their CRC-32C checked for the block at once, and the
block decoded by layout (``_tb_fast``); the rest goes to protobuf (``_tb_slow``). Points are
put back in file order by scattering each record's points to its place (no sort), then grouped
per tag and appended to an ``Accumulator`` that spans all windows of a file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ...arrays import unique_sorted
from .._limits import TagCap
from ._fast import Known, Piece, decode_bucket
from ._slow import SlowResult, decode_slow
from ._tfrecord import Buf, crc32c, group_crc32c, masked, varying_columns

_Block = tuple[np.ndarray, "int | np.ndarray", "np.ndarray | tuple[np.ndarray, np.ndarray]", np.ndarray, np.ndarray, np.ndarray, "bool | np.ndarray",
               "int | np.ndarray"]
"""(records, rank, tag ids, steps, values, walls, is_tensor, position) of decoded points: rank, is_tensor and
position are one value per slot (fast path) or a column per point (slow path); tag ids are a column per point (slow
path) or (the id of each tag name of the slot, the name's index per row) (fast path)."""
_FastBlock = tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray, np.ndarray, bool, int]
"""A ``_Block`` of the fast path (layout-decoded records): one rank, is_tensor and position per slot."""

MIN_BUCKET_ROWS = 4
"""Smaller buckets go straight to protobuf (parsing a layout costs more than it saves)."""
MAX_FAST_LENGTH = 4096
"""Longer records (images, big histograms) are checked one by one and decoded by protobuf."""
_KEY = 4096  # point order key: record index * _KEY + value position (layouts keep positions below it)


@dataclass(frozen=True, slots=True)
class Marker:
    """A file_version or session_log record (global record index)."""

    kind: str
    step: int
    wall_time_s: float
    detail: str
    record_index: int


GROW_AT = 16384
"""A tag with this many points so far is copied, window by window, into arrays of its own (``_Grown``) sized for
the whole file, so its final arrays are not a second copy of every window's part: the memory of a big file is its
points once, plus one window."""


class _Grown:
    """One tag's steps, values and wall times in arrays with room to grow (capacity beyond the points is allocated
    but never touched, so it costs no memory)."""

    __slots__ = ("columns", "size")

    def __init__(self) -> None:
        self.columns: tuple[np.ndarray, np.ndarray, np.ndarray] = (
            np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))
        self.size = 0

    def add(self, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], expected: int) -> None:
        """Append ``parts``; ``expected`` is the tag's estimated final size (room is made for it at once)."""
        need = self.size + sum(part[0].shape[0] for part in parts)
        if need > self.columns[0].shape[0]:
            room = max(need, expected, self.columns[0].shape[0] * 3 // 2)
            grown = tuple(np.empty(room, dtype=column.dtype) for column in self.columns)
            for old, new in zip(self.columns, grown):
                new[: self.size] = old[: self.size]
            self.columns = grown  # type: ignore[assignment]
        for part in parts:
            end = self.size + part[0].shape[0]
            for column, values in zip(self.columns, part):
                column[self.size : end] = values
            self.size = end

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.columns[0][: self.size], self.columns[1][: self.size], self.columns[2][: self.size]


@dataclass(slots=True)
class Accumulator:
    """Everything decoded so far from one file, window after window (file order)."""

    tag_ids: dict[str, int] = field(default_factory=dict)
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(default_factory=list)
    """Per tag id: (steps, values, wall times) per window, in file order."""
    first_seen: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Tag id -> (window number, position of its first point in the window) for tag order."""
    sightings: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Tag -> (order key, plugin name) of its first value carrying plugin metadata."""
    markers: list[Marker] = field(default_factory=list)
    first_wall: tuple[int, float] | None = None
    last_wall: tuple[int, float] | None = None
    record_count: int = 0
    other_count: int = 0
    undecodable: int = 0
    windows: int = 0
    cap: TagCap = field(default_factory=TagCap)
    """The file's distinct tags past ``MAX_TAGS_PER_FILE`` get no id (their points are dropped and counted)."""
    grown: dict[int, _Grown] = field(default_factory=dict)
    """Tag id -> its points so far, for tags past ``GROW_AT`` points (their ``parts`` hold only the newest ones)."""
    size_hint: int = 0
    """Bytes the read covers (to size a growing tag's arrays for the whole file)."""
    layouts: dict[int, Known] = field(default_factory=dict)
    """Record length -> layouts parsed in earlier windows (``_fast.decode_bucket`` tries them before parsing)."""

    def settle(self, bytes_done: int) -> None:
        """After a window: move the parts of big tags into their own arrays (see ``GROW_AT``)."""
        scale = self.size_hint / bytes_done if bytes_done > 0 else 1.0
        for tag_id, parts in enumerate(self.parts):
            if not parts:
                continue
            grown = self.grown.get(tag_id)
            pending = sum(part[0].shape[0] for part in parts)
            if grown is None:
                if pending < GROW_AT:
                    continue
                grown = self.grown[tag_id] = _Grown()
            total = grown.size + pending
            grown.add(parts, int(total * scale * 1.02) + 1024)
            self.parts[tag_id] = []

    def columns(self, tag_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A tag's steps, values and wall times, file order (its parts released)."""
        parts, self.parts[tag_id] = self.parts[tag_id], []
        grown = self.grown.pop(tag_id, None)
        if grown is not None:
            if parts:
                grown.add(parts, 0)
            return grown.arrays()
        if len(parts) == 1:
            return parts[0]
        steps, values, walls = (np.concatenate(column) for column in zip(*parts))
        return steps, values, walls

    def tag_id(self, tag: str) -> int:
        """The id of a tag, assigned on first use; -1 for a tag past the cap."""
        found = self.tag_ids.get(tag)
        if found is None:
            if self.cap.admit(tag) is None:
                return -1
            found = self.tag_ids[tag] = len(self.tag_ids)
            self.parts.append([])
        return found

    def see_wall(self, record: int, wall: float) -> None:
        """Track the wall times of the first and last decodable records."""
        if self.first_wall is None or record < self.first_wall[0]:
            self.first_wall = (record, wall)
        if self.last_wall is None or record > self.last_wall[0]:
            self.last_wall = (record, wall)


def _buckets(lengths: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(length, record indices ascending) for every distinct record length."""
    if lengths.shape[0] == 0:
        return []
    if int(lengths.max()) >= 65536:
        order = np.argsort(lengths, kind="stable")
        bounds = (np.flatnonzero(np.diff(lengths[order])) + 1).tolist()
        return [(int(lengths[chunk[0]]), chunk) for chunk in np.split(order, bounds)]
    keys = lengths.astype(np.uint16)
    order = np.argsort(keys, kind="stable")  # a radix sort on 16-bit keys
    counts = np.bincount(keys)  # the sorted keys' runs, without reading them back
    present = np.flatnonzero(counts)
    ends = np.cumsum(counts[present]).tolist()
    return [(length, order[start:end]) for length, start, end in zip(present.tolist(), [0, *ends], ends)]


def _gather(flat: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The (N, width) block of the bytes at ``starts``: one copy per row as a whole (a void item), not byte by byte."""
    rows = np.ndarray((flat.shape[0] - width + 1,), dtype=np.dtype(f"V{width}"), buffer=flat, strides=(1,))
    block: np.ndarray = rows[starts].view(np.uint8).reshape(starts.shape[0], width)
    return block


def _bad_rows(block: np.ndarray, length: int, varying: np.ndarray, check_crc: bool) -> np.ndarray:
    """bool per row of an (N, L + 16) record block: header CRC (always) or payload CRC (if asked) wrong."""
    bad: np.ndarray
    if varying[8:12].any():
        header = np.ascontiguousarray(block[:, 8:12]).view("<u4").ravel()
        bad = header != masked(crc32c(struct.pack("<Q", length)))
    else:  # the same four bytes in every row: one comparison
        bad = np.full(block.shape[0], block[0, 8:12].view("<u4")[0] != masked(crc32c(struct.pack("<Q", length))))
    if check_crc:
        stored = np.ascontiguousarray(block[:, 12 + length : 16 + length]).view("<u4").ravel()
        bad |= stored != masked(group_crc32c(block[:, 12 : 12 + length], varying[12 : 12 + length]))
    return bad


def _bad_long(buf: Buf, offset: int, length: int, check_crc: bool) -> bool:
    """Whether one long record's header or payload CRC is wrong."""
    header: int
    header, = struct.unpack_from("<I", buf, offset + 8)
    if header != masked(crc32c(struct.pack("<Q", length))):
        return True
    if not check_crc:
        return False
    stored: int
    stored, = struct.unpack_from("<I", buf, offset + 12 + length)
    return stored != masked(crc32c(memoryview(buf)[offset + 12 : offset + 12 + length]))


def decode_window(buf: Buf, offsets: np.ndarray, lengths: np.ndarray, base: int, check_crc: bool,
                  acc: Accumulator) -> int | None:
    """Decode the framed records of one window into ``acc``; returns the first bad record (local) or None."""
    flat = np.frombuffer(buf, dtype=np.uint8)
    first_bad: int | None = None
    found: list[tuple[np.ndarray, Piece]] = []  # (record indices of the bucket, piece)
    slow_parts: list[np.ndarray] = []
    for length, records in _buckets(lengths):
        if length > MAX_FAST_LENGTH:
            bad = np.array([_bad_long(buf, o, length, check_crc) for o in offsets[records].tolist()], dtype=bool)
            slow_parts.append(records)
        else:
            block = _gather(flat, offsets[records], length + 16)
            varying = varying_columns(block)
            bad = _bad_rows(block, length, varying, check_crc)
            if records.shape[0] < MIN_BUCKET_ROWS:
                slow_parts.append(records)
            else:
                pieces, slow_rows = decode_bucket(block[:, 12 : 12 + length], varying[12 : 12 + length],
                                                  acc.layouts.setdefault(length, []))
                found += [(records, piece) for piece in pieces]
                slow_parts.append(records[slow_rows])
        if bad.any():
            candidate = int(records[bad].min())
            first_bad = candidate if first_bad is None else min(first_bad, candidate)
    count = lengths.shape[0] if first_bad is None else first_bad
    slow_records = np.sort(np.concatenate(slow_parts)) if slow_parts else np.zeros(0, dtype=np.int64)
    slow_records = slow_records[slow_records < count]
    slow = decode_slow(buf, offsets[slow_records], lengths[slow_records], slow_records)
    _assemble(found, slow, count, base, acc)
    return first_bad


def _assemble(found: list[tuple[np.ndarray, Piece]], slow: SlowResult, count: int, base: int,
              acc: Accumulator) -> None:
    """Put the window's points in file order, apply plugin sightings, group per tag into ``acc``."""
    window = acc.windows
    acc.windows += 1
    acc.record_count += count
    acc.undecodable += slow.undecodable
    for kind, step, wall, detail, record in slow.markers:
        acc.markers.append(Marker(kind, step, wall, detail, base + record))
    for record, wall in slow.walls:
        acc.see_wall(base + record, wall)
    scalar_records: list[tuple[np.ndarray, int]] = []  # (records of a piece, scalar values per record)
    # rank, is_tensor and position are one value per slot (fast path) or a column per point (slow path)
    blocks: list[_Block] = []
    window_sightings: list[tuple[int, str, str]] = [(((base + r) * _KEY) + min(p, _KEY - 1), t, plugin)
                                                    for r, p, t, plugin in slow.sightings]
    for bucket_records, piece in found:
        records = bucket_records[piece.rows]
        keep = records < count
        if not keep.any():
            continue
        rows = np.flatnonzero(keep) if not keep.all() else None
        if rows is not None:
            records = records[rows]
        walls = piece.wall_times_s if rows is None else piece.wall_times_s[rows]
        steps = piece.steps if rows is None else piece.steps[rows]
        acc.see_wall(base + int(records[0]), float(walls[0]))
        acc.see_wall(base + int(records[-1]), float(walls[-1]))
        scalar_records.append((records, piece.scalar_count))
        rank = 0
        for slot in piece.slots:
            tag_index = slot.tag_index if rows is None else slot.tag_index[rows]
            if slot.plugin and (slot.is_tensor or slot.values is None):  # simple_value metadata never counts
                all_records = bucket_records[piece.rows]
                for name, first in zip(slot.tag_names, slot.first_rows.tolist()):
                    if all_records[first] < count:
                        window_sightings.append(((base + int(all_records[first])) * _KEY + slot.position,
                                                 name, slot.plugin))
            if slot.values is None:
                continue
            values = slot.values if rows is None else slot.values[rows]
            blocks.append((records, rank, (np.array([acc.tag_id(name) for name in slot.tag_names], dtype=np.int64),
                                           tag_index), steps, values, walls, slot.is_tensor, slot.position))
            rank += 1
    points_per_record: np.ndarray | None = None
    if slow.points:
        records = np.array([p[0] for p in slow.points], dtype=np.int64)
        points_per_record = np.zeros(count, dtype=np.int64)
        np.add.at(points_per_record, records, 1)
        run_start = np.flatnonzero(np.diff(records, prepend=-1))
        ranks = np.arange(records.shape[0]) - np.repeat(run_start, np.diff(np.append(run_start, records.shape[0])))
        blocks.append((records, ranks, np.array([acc.tag_id(p[2]) for p in slow.points], dtype=np.int64), np.array([p[3] for p in slow.points], dtype=np.int64),
                       np.array([p[4] for p in slow.points], dtype=np.float64),
                       np.array([p[5] for p in slow.points], dtype=np.float64),
                       np.array([p[6] for p in slow.points], dtype=bool),
                       np.array([min(p[1], _KEY - 1) for p in slow.points], dtype=np.int64)))
    for key, tag, plugin in sorted(window_sightings):
        if tag in acc.sightings or len(acc.sightings) < acc.cap.limit:  # bounded like the tags themselves
            acc.sightings.setdefault(tag, (key, plugin))
    marker_records = len(slow.markers)
    if not slow.points and not (any(b[6] for b in blocks)
                                and any(plugin != "scalars" for _, plugin in acc.sightings.values())):
        # Only layout-decoded points, none a tensor a plugin filter could drop: straight into per-tag parts. (A
        # record is in one piece at most: buckets split the window, pieces their bucket.)
        acc.other_count += count - marker_records - sum(records.shape[0] for records, n in scalar_records if n)
        _group_blocks(cast("list[_FastBlock]", blocks), window, acc)  # no slow points: fast-path blocks only
        return
    if points_per_record is None:
        points_per_record = np.zeros(count, dtype=np.int64)
    for records, scalars in scalar_records:
        points_per_record[records] = scalars
    total = int(points_per_record.sum())
    starts = np.cumsum(points_per_record) - points_per_record
    tag_col = np.empty(total, dtype=np.int64)
    step_col = np.empty(total, dtype=np.int64)
    value_col = np.empty(total, dtype=np.float64)
    wall_col = np.empty(total, dtype=np.float64)
    tensor_keys: list[tuple[np.ndarray, np.ndarray]] = []  # (output positions, order keys) of tensor points
    for records, block_rank, ids, steps, values, walls, is_tensor, position in blocks:
        at = starts[records] + block_rank
        if isinstance(ids, tuple):  # a fast-path block: each tag name's id, the name per row
            ids = ids[0][ids[1]]
        tag_col[at], step_col[at], value_col[at], wall_col[at] = ids, steps, values, walls
        if isinstance(is_tensor, np.ndarray):  # a slow-path block: position is a column too
            if is_tensor.any():
                tensor_keys.append((at[is_tensor], (base + records[is_tensor]) * _KEY
                                    + cast(np.ndarray, position)[is_tensor]))
        elif is_tensor:
            tensor_keys.append((at, (base + records) * _KEY + position))
    keep = _plugin_filter(tensor_keys, tag_col, total, acc)
    with_points = int(np.count_nonzero(points_per_record))
    if keep is not None:
        owner = np.repeat(np.arange(count, dtype=np.int64), points_per_record)
        with_points = int(unique_sorted(owner[keep]).shape[0])
        tag_col, step_col, value_col, wall_col = tag_col[keep], step_col[keep], value_col[keep], wall_col[keep]
    acc.other_count += count - marker_records - with_points
    _group(tag_col, step_col, value_col, wall_col, window, acc)


def _group_blocks(blocks: list[_FastBlock], window: int, acc: Accumulator) -> None:
    """Append the points of layout-decoded blocks to their tags' parts, in file order, without putting the whole
    window in file order first: a block's rows are in file order already, and a tag most often comes from one
    block (a tag's records share a length); a tag from several blocks is ordered by (record, value position)."""
    per_tag: dict[int, list[tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]]] = {}
    for records, rank, (name_ids, tag_index), steps, values, walls, _tensor, _position in blocks:
        groups: list[tuple[int, np.ndarray | None]]
        if name_ids.shape[0] == 1:
            groups = [(int(name_ids[0]), None)]
        elif name_ids.shape[0] <= 8:  # several tags of one length: split the block by tag, keeping file order
            groups = [(tag_id, np.flatnonzero(tag_index == number)) for number, tag_id in enumerate(name_ids.tolist())]
        else:
            ids = name_ids[tag_index]
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
            cuts = (np.flatnonzero(np.diff(sorted_ids)) + 1).tolist()
            groups = [(int(sorted_ids[a]), order[a:b]) for a, b in zip([0, *cuts], [*cuts, ids.shape[0]])]
        for tag_id, rows in groups:
            if tag_id < 0:  # a tag past the cap: counted, not kept
                acc.cap.dropped_points += records.shape[0] if rows is None else rows.shape[0]
                continue
            if rows is not None and rows.shape[0] == 0:
                continue
            part = (records, rank, steps, values, walls) if rows is None else (
                records[rows], rank, steps[rows], values[rows], walls[rows])
            per_tag.setdefault(tag_id, []).append(part)
    for tag_id, parts in per_tag.items():
        if len(parts) == 1:
            records, rank, steps, values, walls = parts[0]
            first_key = int(records[0]) * _KEY + rank
        else:
            keys = np.concatenate([p[0] * _KEY + p[1] for p in parts])
            order = np.argsort(keys, kind="stable")
            first_key = int(keys[order[0]])
            steps, values, walls = (np.concatenate([p[i] for p in parts])[order] for i in (2, 3, 4))
        acc.parts[tag_id].append((steps, values, walls))
        acc.first_seen.setdefault(tag_id, (window, first_key))


def _plugin_filter(tensor_keys: list[tuple[np.ndarray, np.ndarray]], tag_col: np.ndarray, total: int, acc: Accumulator) -> np.ndarray | None:
    """Mask of points to keep: tensors count only before their tag's first non-scalars plugin metadata."""
    if not tensor_keys or not any(plugin != "scalars" for _, plugin in acc.sightings.values()):
        return None
    names = {tag_id: tag for tag, tag_id in acc.tag_ids.items()}
    limit = np.full(len(acc.tag_ids) + 1, np.iinfo(np.int64).max, dtype=np.int64)  # [-1]: a tag past the cap
    for tag_id, tag in names.items():
        sighting = acc.sightings.get(tag)
        if sighting is not None and sighting[1] != "scalars":
            limit[tag_id] = sighting[0]
    keep = np.ones(total, dtype=bool)
    for at, keys in tensor_keys:
        keep[at] = keys < limit[tag_col[at]]
    return None if keep.all() else keep


def _group(tag_col: np.ndarray, step_col: np.ndarray, value_col: np.ndarray, wall_col: np.ndarray, window: int, acc: Accumulator) -> None:
    """Split the window's points (file order) per tag and append them to ``acc``."""
    admitted = tag_col >= 0
    if not admitted.all():  # points of tags past the cap: counted, not kept
        acc.cap.dropped_points += int(admitted.shape[0] - np.count_nonzero(admitted))
        tag_col, step_col, value_col, wall_col = tag_col[admitted], step_col[admitted], value_col[admitted], wall_col[admitted]
    if tag_col.shape[0] == 0:
        return
    tag_count = len(acc.tag_ids)
    small = tag_col.astype(np.uint16) if tag_count < 65536 else tag_col
    order = np.argsort(small, kind="stable")  # radix sort; stable keeps file order within a tag
    bounds = np.cumsum(np.bincount(tag_col, minlength=tag_count)).tolist()
    steps, values, walls = step_col[order], value_col[order], wall_col[order]
    start = 0
    for tag_id, stop in enumerate(bounds):
        if stop > start:
            acc.parts[tag_id].append((steps[start:stop], values[start:stop], walls[start:stop]))
            acc.first_seen.setdefault(tag_id, (window, int(order[start])))
        start = stop
