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
from ._tfrecord import Buf, crc32c_each, group_crc32c, header_crc, masked, varying_columns

_Block = tuple[np.ndarray, "int | np.ndarray", "np.ndarray | tuple[np.ndarray, np.ndarray]", np.ndarray, np.ndarray, np.ndarray, "bool | np.ndarray",
               "int | np.ndarray"]
"""(records, rank, tag ids, steps, values, walls, is_tensor, position) of decoded points: rank, is_tensor and
position are one value per slot (fast path) or a column per point (slow path); tag ids are a column per point (slow
path) or (the id of each tag name of the slot, the name's index per row) (fast path)."""
_FastBlock = tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray, np.ndarray, bool, int]
"""A ``_Block`` of the fast path (layout-decoded records): one rank, is_tensor and position per slot."""

MIN_BUCKET_ROWS = 4
"""Smaller buckets always go to protobuf (parsing a layout costs more than it saves)."""
PROTOBUF_ROWS = 64
"""Smaller buckets go to protobuf first: 2-3 us a simple_value record (5-10 us a TF2 tensor), against some 150 us of
fixed numpy work for a bucket decoded by a layout, so protobuf is as fast up to about 100 simple_value records (50
tensors) of a length: the many small event files of a tree, and the odd lengths of a big one. See ``decode_window``."""
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
        bad = header != header_crc(length)
    else:  # the same four bytes in every row: one comparison
        bad = np.full(block.shape[0], block[0, 8:12].view("<u4")[0] != header_crc(length))
    if check_crc:
        stored = np.ascontiguousarray(block[:, 12 + length : 16 + length]).view("<u4").ravel()
        bad |= stored != masked(group_crc32c(block[:, 12 : 12 + length], varying[12 : 12 + length]))
    return bad


def _u32_at(flat: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each byte position ``at`` of ``flat``."""
    return np.ascontiguousarray(flat[at[:, None] + np.arange(4)]).view("<u4").ravel()


def _bad_each(buf: Buf, flat: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, check_crc: bool) -> np.ndarray:
    """bool per record at ``offsets`` (of ``lengths`` payload bytes), each checked alone: header or payload CRC
    wrong."""
    sizes = lengths.tolist()
    bad: np.ndarray = _u32_at(flat, offsets + 8) != np.array([header_crc(n) for n in sizes], dtype=np.uint32)
    if check_crc:
        crcs = np.array(crc32c_each(buf, (offsets + 12).tolist(), sizes), dtype=np.uint32)
        bad |= _u32_at(flat, offsets + 12 + lengths) != masked(crcs)
    return bad


def decode_window(buf: Buf, offsets: np.ndarray, lengths: np.ndarray, base: int, check_crc: bool,
                  acc: Accumulator, few_first: bool = True) -> int | None:
    """Decode the framed records of one window into ``acc``; returns the first bad record (local) or None.

    ``few_first``: buckets of fewer than ``PROTOBUF_ROWS`` records go to protobuf; when protobuf refuses one of
    their records, or the window may bring the file past its tag cap, the window is decoded again without it.
    """
    flat = np.frombuffer(buf, dtype=np.uint8)
    first_bad: int | None = None
    found: list[tuple[np.ndarray, Piece]] = []  # (record indices of the bucket, piece)
    slow_parts: list[np.ndarray] = []  # records whose CRCs are checked one by one, all decoded by protobuf
    slow_later: list[np.ndarray] = []  # records of layout buckets the layouts left to protobuf
    handed: list[np.ndarray] = []  # buckets a layout would have decoded, given to protobuf (``few_first``)
    for length, records in _buckets(lengths):
        rows = records.shape[0]
        if length > MAX_FAST_LENGTH or rows < MIN_BUCKET_ROWS or (few_first and rows < PROTOBUF_ROWS):
            slow_parts.append(records)  # CRCs checked below, record by record
            if length <= MAX_FAST_LENGTH and rows >= MIN_BUCKET_ROWS:
                handed.append(records)
            continue
        block = _gather(flat, offsets[records], length + 16)
        varying = varying_columns(block)
        bad = _bad_rows(block, length, varying, check_crc)
        pieces, slow_rows = decode_bucket(block[:, 12 : 12 + length], varying[12 : 12 + length],
                                          acc.layouts.setdefault(length, []))
        found += [(records, piece) for piece in pieces]
        slow_later.append(records[slow_rows])
        if bad.any():
            candidate = int(records[bad].min())
            first_bad = candidate if first_bad is None else min(first_bad, candidate)
    alone = np.sort(np.concatenate(slow_parts)) if slow_parts else np.zeros(0, dtype=np.int64)
    if alone.shape[0]:
        bad = _bad_each(buf, flat, offsets[alone], lengths[alone], check_crc)
        if bad.any():
            candidate = int(alone[bad].min())
            first_bad = candidate if first_bad is None else min(first_bad, candidate)
    # The records checked one by one, plus those the layouts left to protobuf.
    count = lengths.shape[0] if first_bad is None else first_bad
    slow_records = np.sort(np.concatenate([alone, *slow_later])) if slow_later else alone
    slow_records = slow_records[slow_records < count]
    slow = decode_slow(buf, offsets[slow_records], lengths[slow_records], slow_records)
    if handed and (_refused(slow, handed) or _may_pass_cap(found, slow, acc)):
        # What a layout decodes and protobuf refuses (damage inside an opaque payload) counts as another record,
        # and which tags a capped file keeps follows the order names are met: decode as the layouts would.
        return decode_window(buf, offsets, lengths, base, check_crc, acc, few_first=False)
    _assemble(found, slow, count, base, acc)
    return first_bad


def _refused(slow: SlowResult, handed: list[np.ndarray]) -> bool:
    """Whether protobuf refused a record of the buckets handed to it."""
    return bool(slow.refused) and bool(np.isin(np.array(slow.refused, dtype=np.int64), np.concatenate(handed)).any())


def _may_pass_cap(found: list[tuple[np.ndarray, Piece]], slow: SlowResult, acc: Accumulator) -> bool:
    """Whether the window's scalar tags may not all be admitted (then the order they are met decides which are)."""
    known = acc.cap.known
    room = acc.cap.limit - len(known)
    if room >= len(slow.points) + sum(len(slot.tag_names) for _, piece in found for slot in piece.slots):
        return False  # fewer names than room, however many are new
    new = {point[2] for point in slow.points if point[2] not in known}
    new.update(name for _, piece in found for slot in piece.slots if slot.values is not None
               for name in slot.tag_names if name not in known)
    return len(new) > room


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
        point_records, positions, tags, point_steps, point_values, point_walls, tensors = zip(*slow.points)
        records = np.array(point_records, dtype=np.int64)
        point_ids = np.array(_tag_ids(tags, acc), dtype=np.int64)
        steps, values, walls = (np.array(point_steps, dtype=np.int64), np.array(point_values, dtype=np.float64),
                                np.array(point_walls, dtype=np.float64))
        point_tensor = np.array(tensors, dtype=bool)
        point_position = np.minimum(np.array(positions, dtype=np.int64), _KEY - 1)
        if not blocks:  # protobuf's points only: in file order already
            _apply_sightings(window_sightings, acc)
            _slow_only(records, point_ids, steps, values, walls, point_tensor, point_position, count, base, window,
                       len(slow.markers), acc)
            return
        points_per_record = np.zeros(count, dtype=np.int64)
        np.add.at(points_per_record, records, 1)
        run_start = np.flatnonzero(np.diff(records, prepend=-1))
        ranks = np.arange(records.shape[0]) - np.repeat(run_start, np.diff(np.append(run_start, records.shape[0])))
        blocks.append((records, ranks, point_ids, steps, values, walls, point_tensor, point_position))
    _apply_sightings(window_sightings, acc)
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


def _tag_ids(tags: tuple[str, ...], acc: Accumulator) -> list[int]:
    """The id of each tag (``Accumulator.tag_id``, asked once per name, in the order names are met)."""
    known = acc.tag_ids
    out = []
    for tag in tags:
        found = known.get(tag)
        out.append(acc.tag_id(tag) if found is None else found)
    return out


def _apply_sightings(window_sightings: list[tuple[int, str, str]], acc: Accumulator) -> None:
    """Keep each tag's first plugin sighting (by file order key)."""
    for key, tag, plugin in sorted(window_sightings):
        if tag in acc.sightings or len(acc.sightings) < acc.cap.limit:  # bounded like the tags themselves
            acc.sightings.setdefault(tag, (key, plugin))


def _slow_only(records: np.ndarray, ids: np.ndarray, steps: np.ndarray, values: np.ndarray, walls: np.ndarray,
               is_tensor: np.ndarray, position: np.ndarray, count: int, base: int, window: int, marker_records: int,
               acc: Accumulator) -> None:
    """``_assemble``'s end for a window whose points all came from protobuf (file order: no scattering)."""
    tensor_keys: list[tuple[np.ndarray, np.ndarray]] = []
    if is_tensor.any():
        at = np.flatnonzero(is_tensor)
        tensor_keys.append((at, (base + records[at]) * _KEY + position[at]))
    keep = _plugin_filter(tensor_keys, ids, ids.shape[0], acc)
    if keep is not None:
        records, ids, steps, values, walls = records[keep], ids[keep], steps[keep], values[keep], walls[keep]
    with_points = int(np.count_nonzero(np.diff(records))) + 1 if records.shape[0] else 0  # records ascending
    acc.other_count += count - marker_records - with_points
    _group(ids, steps, values, walls, window, acc)


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
