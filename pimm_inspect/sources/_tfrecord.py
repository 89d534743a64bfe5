"""TFRecord framing and CRC-32C, vectorised over groups of equal-length records."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A record claiming more than this is treated as corruption, never allocated."""

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")


def _make_table() -> np.ndarray:
    """The byte-at-a-time table of reflected CRC-32C."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _make_table()
_TABLE_LIST: list[int] = _TABLE.tolist()
_SHIFT_ROWS: list[np.ndarray] = [_TABLE]


def _shift_tables(max_distance: int) -> np.ndarray:
    """Rows d = 0..max_distance: register contribution of byte v followed by d zero bytes."""
    # CRC is linear over GF(2), so a byte's effect on the final register depends only on
    # its value and its distance from the end; these rows are built once and cached.
    while len(_SHIFT_ROWS) <= max_distance:
        last = _SHIFT_ROWS[-1]
        _SHIFT_ROWS.append(_TABLE[last & 0xFF] ^ (last >> 8))
    return np.stack(_SHIFT_ROWS[: max_distance + 1])


def masked(crc: int | np.ndarray):
    """TFRecord's CRC mask (rotate right by 15 and add a constant)."""
    if isinstance(crc, np.ndarray):
        crc = crc.astype(np.uint32)
        return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of one buffer (pure Python for short ones, numpy rows for long ones)."""
    n = len(data)
    if n < 256:
        crc = 0xFFFFFFFF
        table = _TABLE_LIST
        for byte in bytes(data):
            crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF
    # Long buffer: XOR the initial register into the first 4 bytes (same result for a
    # reflected CRC), zero-pad at the front (no effect from a zero register), compute the
    # register of every row at once, then combine rows by shifting over C zero bytes.
    width = min(4096, max(64, math.isqrt(n)))
    rows_count = -(-n // width)
    pad = rows_count * width - n
    padded = np.zeros(rows_count * width, dtype=np.uint8)
    padded[pad:] = np.frombuffer(data, dtype=np.uint8)
    padded[pad : pad + 4] ^= 0xFF
    columns = padded.reshape(rows_count, width).T.copy()
    reg = np.zeros(rows_count, dtype=np.uint32)
    for col in columns:
        reg = _TABLE[(reg ^ col) & 0xFF] ^ (reg >> 8)
    shift = _shift_tables(width - 1)
    t0, t1, t2, t3 = (shift[width - 1 - j].tolist() for j in range(4))
    acc = 0
    for value in reg.tolist():
        acc = t0[acc & 0xFF] ^ t1[(acc >> 8) & 0xFF] ^ t2[(acc >> 16) & 0xFF] ^ t3[acc >> 24] ^ value
    return acc ^ 0xFFFFFFFF


def group_crc32c(payloads: np.ndarray) -> np.ndarray:
    """CRC-32C of every row of an (N, L) uint8 array of equal-length records."""
    count, length = payloads.shape
    if count < 4 or length > 4096 or length < 4:
        return np.array([crc32c(row.tobytes()) for row in payloads], dtype=np.uint32)
    ref = payloads[0]
    varying = np.zeros(length, dtype=bool)
    for start in range(0, count, 65536):
        varying |= (payloads[start : start + 65536] != ref).any(axis=0)
    columns = np.flatnonzero(varying)
    if len(columns) > length // 2:
        # Most bytes differ: one table step per byte position over the whole group.
        reg = np.full(count, 0xFFFFFFFF, dtype=np.uint32)
        for col in range(length):
            reg = _TABLE[(reg ^ payloads[:, col]) & 0xFF] ^ (reg >> 8)
        return reg ^ np.uint32(0xFFFFFFFF)
    # Few bytes differ (wall time, step, value): crc(x) = crc(ref) ^ lin(x ^ ref), and
    # lin is a XOR of per-position table lookups of the differing bytes only.
    shift = _shift_tables(length - 1)
    acc = np.full(count, crc32c(ref.tobytes()), dtype=np.uint32)
    for col in columns.tolist():
        acc ^= shift[length - 1 - col][payloads[:, col] ^ ref[col]]
    return acc


@dataclass(slots=True)
class Framing:
    """Where the records of a byte range are, as periodic runs plus single records."""

    runs: list[tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    """(first record index, base offset, block bytes, block count, offsets in block, lengths)."""
    single_offset: list[int] = field(default_factory=list)
    """Offsets of the records framed one by one, in file order."""
    record_count: int = 0
    end_offset: int = 0
    """Offset just after the last whole record."""
    stop: str = "end"
    """end, truncated (partial header or payload), too-long (length over the cap)."""
    stop_length: int = 0

    def single_indices(self) -> np.ndarray:
        """Record index of every single record (runs take the indices in between)."""
        offsets = np.array(self.single_offset, dtype=np.int64)
        bases = np.array([run[1] for run in self.runs], dtype=np.int64)
        before = np.concatenate([[0], np.cumsum([len(run[4]) * run[3] for run in self.runs])]).astype(np.int64)
        return np.arange(offsets.shape[0], dtype=np.int64) + before[np.searchsorted(bases, offsets)]

    def single_lengths(self, buf) -> np.ndarray:
        """Payload length of every single record, read from its length field."""
        offsets = np.array(self.single_offset, dtype=np.int64)
        flat = np.frombuffer(buf, dtype=np.uint8)
        return flat[offsets[:, None] + np.arange(8)].view("<u8").ravel().astype(np.int64)


def _try_bulk(buf, pos: int, end: int, recent: list[int]):
    """Accept as many whole repeats of a recent length pattern as the length fields confirm."""
    tried = 0
    for period in range(1, min(64, len(recent) // 2) + 1):
        if recent[-period:] != recent[-2 * period : -period]:
            continue
        tried += 1
        pattern = tuple(recent[-period:])
        rel = []
        block = 0
        for length in pattern:
            rel.append(block)
            block += length + 16
        max_blocks = (end - pos) // block
        if max_blocks < 2:
            return None
        done, window = 0, 16
        while done < max_blocks:
            count = min(window, max_blocks - done)
            ok = np.ones(count, dtype=bool)
            for offset, length in zip(rel, pattern):
                # Each view reads exactly the length fields the sequential loop would read.
                lengths = np.ndarray((count,), dtype="<u8", buffer=buf, offset=pos + done * block + offset,
                                     strides=(block,))
                ok &= lengths == length
            if ok.all():
                done += count
                window *= 4
            else:
                done += int(np.argmin(ok))
                break
        if done >= 2:
            return period, block, done, tuple(rel), pattern
        if tried >= 4:
            return None
    return None


def frame_records(buf, start: int, end: int) -> Framing:
    """Find the records in ``buf[start:end]``: bulk runs of repeating lengths, else one by one."""
    out = Framing(end_offset=start)
    unpack = _U64.unpack_from
    offsets = out.single_offset
    append = offsets.append
    pos, in_runs = start, 0
    since = 0  # len(offsets) when the last bulk run ended
    wait = next_try = 8
    while True:
        remaining = end - pos
        if remaining < 12:
            out.stop = "end" if remaining == 0 else "truncated"
            break
        length = unpack(buf, pos)[0]
        if length > MAX_RECORD_BYTES:
            out.stop, out.stop_length = "too-long", length
            break
        if length + 16 > remaining:
            out.stop, out.stop_length = "truncated", length
            break
        append(pos)
        pos += length + 16
        if len(offsets) - since >= next_try:
            # Lengths of the recent single records, from their offsets (cheaper than a list).
            tail = offsets[max(since, len(offsets) - 128):] + [pos]
            recent = [b - a - 16 for a, b in zip(tail, tail[1:])]
            bulk = _try_bulk(buf, pos, end, recent)
            if bulk is None:
                wait = min(wait * 2, 4096)
                next_try = len(offsets) - since + wait
            else:
                period, block, blocks, rel, pattern = bulk
                out.runs.append((len(offsets) + in_runs, pos, block, blocks, rel, pattern))
                in_runs += period * blocks
                pos += block * blocks
                since = len(offsets)
                wait = next_try = 8
    out.record_count = len(offsets) + in_runs
    out.end_offset = pos
    return out


def header_ok(buf, offset: int, length: int) -> bool:
    """Whether the masked CRC of a record's length field matches."""
    stored = struct.unpack_from("<I", buf, offset + 8)[0]
    return stored == masked(crc32c(_U64.pack(length)))
