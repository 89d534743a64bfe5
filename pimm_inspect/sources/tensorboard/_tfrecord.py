"""TFRecord framing and CRC-32C, vectorised over groups of equal-length records."""

from __future__ import annotations

import math
import struct
from array import array
from dataclasses import dataclass
from typing import Callable, overload

import numpy as np

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A record claiming more than this is treated as corruption, never allocated."""

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")

Buf = bytes | memoryview
"""What records are framed in: one window of an event file as read."""


def _make_table() -> np.ndarray:
    """The byte-at-a-time table of reflected CRC-32C."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _make_table()
_TABLE_LIST: list[int] = _TABLE.tolist()
_SHIFT_ROWS: list[np.ndarray] = [_TABLE]


def _shift_tables(max_distance: int) -> list[np.ndarray]:
    """Rows d = 0..max_distance: register contribution of byte v followed by d zero bytes."""
    # CRC is linear over GF(2), so a byte's effect on the final register depends only on
    # its value and its distance from the end; these rows are built once and cached.
    while len(_SHIFT_ROWS) <= max_distance:
        last = _SHIFT_ROWS[-1]
        _SHIFT_ROWS.append(_TABLE[last & 0xFF] ^ (last >> 8))
    return _SHIFT_ROWS


@overload
def masked(crc: int) -> int: ...
@overload
def masked(crc: np.ndarray) -> np.ndarray: ...
def masked(crc: int | np.ndarray) -> int | np.ndarray:
    """TFRecord's CRC mask (rotate right by 15 and add a constant)."""
    if isinstance(crc, np.ndarray):
        crc = crc.astype(np.uint32)
        return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(MASK_DELTA)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF


def _not_loaded(data: bytes | bytearray | memoryview) -> int:
    """``_native_crc32c`` before its first use (never called: scalar-only files never need the package)."""
    raise AssertionError("crc32c package not looked up yet")


_NOT_LOADED: Callable[..., int] = _not_loaded
_native_crc32c: Callable[..., int] | None = _NOT_LOADED
"""The optional C implementation (the test and bench extras install it): long records at memory speed; None
when absent (numpy rows below then take about 0.3 ms per 10 KB record)."""


def _native() -> Callable[..., int] | None:
    global _native_crc32c
    if _native_crc32c is _NOT_LOADED:
        try:  # imported on first use: importing the package reads its installed metadata (~30 ms at start-up)
            from crc32c import crc32c as native
        except ImportError:
            _native_crc32c = None
        else:
            _native_crc32c = native
    return _native_crc32c


_SHORT_BUDGET = 256 * 1024
"""Bytes of short buffers (under 256 bytes) checked in pure Python, about 20 ms of work, before the crc32c package is
looked up for them too (a tree's many small event files); a single small file never pays for its import."""
_short_bytes = 0


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of one buffer (pure Python for short ones, numpy rows or the crc32c package for long ones).

    Short buffers use the package once it is loaded (by a long one, or once ``_SHORT_BUDGET`` bytes were checked
    in pure Python in this process)."""
    global _short_bytes
    n = len(data)
    if n >= 256:
        native = _native()
    else:
        native = _native_crc32c
        if native is _NOT_LOADED:
            _short_bytes += n
            native = _native() if _short_bytes > _SHORT_BUDGET else None
    if native is not None:
        return native(data)
    return _crc32c_python(data)


def _crc32c_python(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C without the package: a table loop for short buffers, numpy rows for long ones."""
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


def crc32c_each(buf: Buf, starts: list[int], lengths: list[int]) -> list[int]:
    """CRC-32C of ``buf[start : start + length]`` for each pair (``crc32c``'s rules: the package when it is loaded,
    or once a buffer is long or the short ones pass the budget)."""
    global _short_bytes
    native = _native_crc32c
    if native is _NOT_LOADED:
        _short_bytes += sum(n for n in lengths if n < 256)
        native = _native() if _short_bytes > _SHORT_BUDGET or max(lengths, default=0) >= 256 else None
    view = memoryview(buf)
    if native is not None:
        return [native(view[start : start + n]) for start, n in zip(starts, lengths)]
    return [_crc32c_python(view[start : start + n]) for start, n in zip(starts, lengths)]


def varying_columns(block: np.ndarray) -> np.ndarray:
    """bool per column of an (N, W) uint8 block: True where some row differs from the first."""
    count, width = block.shape
    ref = block[0]
    varying = np.zeros(width, dtype=bool)
    wide_rows = count // 8
    if wide_rows and block.flags.c_contiguous:
        # Eight rows side by side: reductions along axis 0 loop per row, so wider rows cost less.
        wide = block[: wide_rows * 8].reshape(wide_rows, 8 * width)
        spread = (wide.max(axis=0) != np.tile(ref, 8)) | (wide.min(axis=0) != np.tile(ref, 8))
        varying |= spread.reshape(8, width).any(axis=0)
        rest = block[wide_rows * 8 :]
    else:
        rest = block
    for start in range(0, rest.shape[0], 65536):
        varying |= (rest[start : start + 65536] != ref).any(axis=0)
    return varying


_PAIR_TABLES: dict[int, np.ndarray] = {}
"""Distance d -> 64 Ki-entry table: the register contribution of the two bytes at distances d and d - 1 from the
end, indexed by their little-endian 16-bit value (built on first use; a file's records need a few dozen)."""


def _pair_table(distance: int) -> np.ndarray:
    table = _PAIR_TABLES.get(distance)
    if table is None:
        rows = _shift_tables(distance)
        table = _PAIR_TABLES[distance] = (rows[distance][None, :] ^ rows[distance - 1][:, None]).ravel()
    return table


def group_crc32c(payloads: np.ndarray, varying: np.ndarray | None = None) -> np.ndarray:
    """CRC-32C of every row of an (N, L) uint8 array of equal-length records.

    ``varying`` (from ``varying_columns``) marks the columns where rows may differ; computed if absent.
    """
    count, length = payloads.shape
    if count < 4 or length > 4096 or length < 4 or payloads.strides[1] != 1:
        return np.array([crc32c(row.tobytes()) for row in payloads], dtype=np.uint32)
    ref = payloads[0]
    if varying is None:
        varying = varying_columns(payloads)
    # CRC is linear over GF(2): crc(x) = crc(ref) ^ lin(ref) ^ lin(x), and lin is a XOR of one table lookup per
    # byte position that differs between rows; two neighbouring positions are looked up at once, as one 16-bit
    # value in a 64 Ki-entry table (half the lookups), a lone last byte in a 256-entry one.
    units: list[tuple[int, np.ndarray]] = []  # (first column, table): two columns, or the last column alone
    covered = -1
    for col in np.flatnonzero(varying).tolist():
        if col <= covered:
            continue
        if col + 1 < length:
            units.append((col, _pair_table(length - 1 - col)))
            covered = col + 1
        else:
            units.append((col, _TABLE))
            covered = col
    base = crc32c(ref.tobytes())
    pairs = [payloads[:, col : col + 2].view("<u2")[:, 0] if table.shape[0] > 256 else payloads[:, col]
             for col, table in units]
    for (col, table), column in zip(units, pairs):
        base ^= int(table[int(column[0])])
    acc = np.full(count, base, dtype=np.uint32)
    for start in range(0, count, 16384):
        # A cache-sized slice of rows; indices as intp: numpy's lookup with a native index is ~3x faster than with
        # a narrower one (which it converts on every lookup).
        out = acc[start : start + 16384]
        for (_, table), column in zip(units, pairs):
            out ^= table[column[start : start + 16384].astype(np.intp)]
    return acc


@dataclass(frozen=True, slots=True, eq=False)
class Framing:
    """Where the whole records of a byte range are, and why framing stopped."""

    offsets: np.ndarray
    """int64 start of every record (its length field), ascending, in ``buf`` coordinates."""
    end_offset: int
    """Offset just after the last whole record."""
    stop: str
    """end, truncated (partial header or payload), too-long (length over the cap), bad-header (see below)."""
    stop_length: int
    """The length field where framing stopped (0 when there was none)."""
    bulk_records: int
    """How many records were framed in bulk (periodic length patterns) rather than one by one."""

    def lengths(self) -> np.ndarray:
        """Payload length of every record (records are contiguous, so from the offsets)."""
        bounds = np.append(self.offsets, np.int64(self.end_offset))
        return np.diff(bounds) - 16


_MIN_BULK = 64
_FIRST_WALK = 256
"""Records walked one by one before the first look for a periodic pattern: a small file is framed by its walk alone
(a look costs as much as walking some hundred records)."""
"""Shorter periodic runs are walked one by one (a tiny piece costs more than it saves)."""
_ZERO_HEADER_CRC: int | None = None  # masked CRC of a zero length field, filled on first use


def _walk(buf: Buf, pos: int, end: int, count: int, append: Callable[[int], None]) -> tuple[int, str | None, int]:
    """Frame up to ``count`` records one by one; returns (position, stop reason or None, length)."""
    unpack = _U64.unpack_from
    last_header = end - 12
    for _ in range(count):
        if pos > last_header:
            return pos, ("end" if pos == end else "truncated"), 0
        length = unpack(buf, pos)[0]
        if length > MAX_RECORD_BYTES:
            return pos, "too-long", length
        after = pos + length + 16
        if after > end:
            return pos, "truncated", length
        if not length and not _zero_header_ok(buf, pos):
            # Zero-filled regions (sparse files, a crash before data reached disk) frame as endless
            # 16-byte "records"; their header CRC never matches, so stop here as TensorBoard does.
            return pos, "bad-header", 0
        append(pos)
        pos = after
    return pos, None, 0


def _zero_header_ok(buf: Buf, pos: int) -> bool:
    """Whether a zero length field carries its valid CRC (an empty Event, legal but rare)."""
    global _ZERO_HEADER_CRC
    if _ZERO_HEADER_CRC is None:
        _ZERO_HEADER_CRC = masked(crc32c(bytes(8)))
    stored: int = struct.unpack_from("<I", buf, pos + 8)[0]
    return stored == _ZERO_HEADER_CRC


def _find_period(lengths: np.ndarray) -> int:
    """The period of the longest periodic tail of ``lengths`` (two whole repeats at least), or 0."""
    count = lengths.shape[0]
    periods = np.arange(1, min(64, count // 2) + 1)
    if periods.shape[0] == 0:
        return 0
    # same[p - 1, i]: lengths[i] == lengths[i - p], read from the end backwards (i = count - 1 - k).
    back = count - 1 - np.arange(count)
    earlier = back[None, :] - periods[:, None]
    same = (earlier >= 0) & (lengths[back][None, :] == lengths[np.maximum(earlier, 0)])
    tails = np.where(same.all(axis=1), count, np.argmin(same, axis=1))
    # A short period can repeat locally inside a longer one (two equal neighbours), so the
    # period whose repetition reaches furthest back wins, the shortest among equals.
    extents = np.where(tails >= periods, tails + periods, 0)
    best = int(np.argmax(extents))
    return int(periods[best]) if extents[best] else 0


def _bulk_blocks(buf: Buf, pos: int, end: int, pattern: tuple[int, ...]) -> tuple[int, int, list[int]]:
    """How many whole repeats of ``pattern`` start at ``pos`` (confirmed on every length field)."""
    rel: list[int] = []
    block = 0
    for length in pattern:
        rel.append(block)
        block += length + 16
    max_blocks = (end - pos) // block
    if max_blocks < 2:
        return 0, block, rel
    unpack, at = _U64.unpack_from, pos
    for length in pattern + pattern:
        # Most tries fail on the first records: a plain walk over two repeats rejects them cheaply.
        if unpack(buf, at)[0] != length:
            return 0, block, rel
        at += length + 16
    done, window = 2, 16
    while done < max_blocks:
        count = min(window, max_blocks - done)
        ok = np.ones(count, dtype=bool)
        for offset, length in zip(rel, pattern):
            # Each view reads exactly the length fields the one-by-one walk would read.
            fields = np.ndarray((count,), dtype="<u8", buffer=buf, offset=pos + done * block + offset,
                                strides=(block,))
            ok &= fields == length
        if ok.all():
            done += count
            window *= 4
        else:
            done += int(np.argmin(ok))
            break
    return done, block, rel


def _resume(buf: Buf, pos: int, end: int, pattern: tuple[int, ...]
            ) -> tuple[int, int, list[int], int, tuple[int, ...]]:
    """Try every phase of ``pattern`` at ``pos``: (blocks, block bytes, offsets, period, phase pattern)."""
    if end - pos < 8:
        return 0, 0, [], 0, ()
    length = _U64.unpack_from(buf, pos)[0]
    for phase in range(len(pattern)):
        if pattern[phase] != length:
            continue
        rotated = pattern[phase:] + pattern[:phase]
        blocks, block, rel = _bulk_blocks(buf, pos, end, rotated)
        if blocks >= 2 and blocks * len(rotated) >= _MIN_BULK:
            return blocks, block, rel, len(rotated), rotated
    return 0, 0, [], 0, ()


def frame_records(buf: Buf, start: int, end: int) -> Framing:
    """Find the whole records in ``buf[start:end]``: in bulk where lengths repeat, else one by one."""
    pieces: list[np.ndarray] = []
    singles = array("q")
    pos, bulk = start, 0
    wait = _FIRST_WALK
    last_pattern: tuple[int, ...] = ()
    resume_tries = 0
    while True:
        pos, stop, stop_length = _walk(buf, pos, end, wait, singles.append)
        if stop is not None:
            break
        blocks = 0
        if resume_tries:
            # After an interruption (a histogram, a validation step) the previous pattern usually
            # resumes at some phase: try it a few records at a time before waiting for two new repeats.
            blocks, block, rel, period, pattern = _resume(buf, pos, end, last_pattern)
            if not blocks:
                resume_tries -= 1
                wait = 4
                continue
        else:
            recent = np.array(singles[max(0, len(singles) - 128):], dtype=np.int64)  # a copy: singles grows
            period = _find_period(np.diff(np.append(recent, pos)) - 16) if recent.shape[0] >= 4 else 0
            if period:
                tail = np.append(recent[-period:], pos)
                pattern = tuple((np.diff(tail) - 16).tolist())
                blocks, block, rel = _bulk_blocks(buf, pos, end, pattern)
        if blocks < 2 or blocks * period < _MIN_BULK:
            wait = min(wait * 2, 4096)  # not worth a piece: keep walking (the history keeps growing)
            continue
        last_pattern, resume_tries = pattern, 16
        pieces.append(np.array(singles, dtype=np.int64))
        singles = array("q")
        run = (np.arange(blocks, dtype=np.int64)[:, None] * block + np.array(rel, dtype=np.int64)).ravel() + pos
        pieces.append(run)
        bulk += run.shape[0]
        pos += blocks * block
        wait = 1
    pieces.append(np.array(singles, dtype=np.int64))
    offsets = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    return Framing(offsets, pos, stop, stop_length, bulk)


_HEADER_CRCS: dict[int, int] = {}


def header_crc(length: int) -> int:
    """The masked CRC a record of ``length`` payload bytes stores after its length field (remembered per length)."""
    found = _HEADER_CRCS.get(length)
    if found is None:
        if len(_HEADER_CRCS) >= 4096:
            _HEADER_CRCS.clear()
        found = _HEADER_CRCS[length] = masked(crc32c(_U64.pack(length)))
    return found


def header_ok(buf: Buf, offset: int, length: int) -> bool:
    """Whether the masked CRC of a record's length field matches."""
    stored: int = struct.unpack_from("<I", buf, offset + 8)[0]
    return stored == header_crc(length)
