"""Bulk framing of W&B transaction logs: whole segments of 32 KiB blocks walked at once with numpy.

Chunks never cross a block, so the chunk chain of every block in a segment can be followed in
lock-step (one numpy step per chunk position, over all blocks). Clean blocks become record
batches; at the first sign of anything unusual (bad CRC, unknown chunk type, a chunk longer than
its block, a broken FIRST..LAST sequence, the file's last block) the exact chunk loop of
``_wandb_framing`` takes over from the last record end, so findings are the same as its own.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import numpy as np

from . import _framing as framing
from ._framing import BLOCK_LEN, FIRST, FULL, HEADER_LEN, LAST, MIDDLE, FramingState

SEGMENT_BLOCKS = 64
"""Blocks read and framed at once (2 MiB): bounds memory on logs of any size (as fast as 8 MiB)."""
TAIL_BATCH = 4096
"""Records per batch handed on from the exact chunk loop."""
_TYPE_CRC = {kind: zlib.crc32(bytes((kind,))) for kind in (FULL, FIRST, MIDDLE, LAST)}


@dataclass(slots=True)
class RecordBatch:
    """Records in file order: record ``i`` is ``data[starts[i]:ends[i]]``."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray


def frame_batches(fh: BinaryIO, state: FramingState, start: int = 0) -> Iterator[RecordBatch]:
    """Every intact record from ``start`` (0, or a record end of an earlier read), in batches."""
    if start <= HEADER_LEN:
        if framing.read_header(fh, state) is None:
            return
        start = HEADER_LEN
    state.header_ok = True
    state.bytes_read = start
    offset = start
    while True:
        block_start = offset - offset % BLOCK_LEN
        fh.seek(block_start)
        want = SEGMENT_BLOCKS * BLOCK_LEN
        data = fh.read(want)
        at_eof = len(data) < want
        batch, end = _segment(data, offset - block_start, at_eof)
        if batch is not None:
            state.bytes_read = block_start + end
            yield batch
        if batch is None or at_eof or end <= offset - block_start:
            break
        offset = block_start + end
    # The exact loop reads the rest: the file's last block, or damage, with its own findings.
    yield from _tail(fh, state, state.bytes_read)


def _tail(fh: BinaryIO, state: FramingState, start: int) -> Iterator[RecordBatch]:
    """Records from the exact chunk loop, batched."""
    payloads: list[bytes] = []
    for _offset, payload in framing._iter_blocks(fh, state, start):
        payloads.append(payload)
        if len(payloads) >= TAIL_BATCH:
            yield _batch_of(payloads)
            payloads = []
    if payloads:
        yield _batch_of(payloads)


def _batch_of(payloads: list[bytes]) -> RecordBatch:
    lengths = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=len(payloads))
    ends = np.cumsum(lengths)
    return RecordBatch(b"".join(payloads), ends - lengths, ends)


def _segment(data: bytes, first_pos: int, at_eof: bool) -> tuple[RecordBatch | None, int]:
    """Records of the clean blocks of ``data`` and the segment offset just past the last of them.

    Blocks from the first unusual one on (and the file's last block) are left to the exact loop.
    """
    n_blocks = -(-len(data) // BLOCK_LEN)
    if at_eof:
        n_blocks -= 1  # the file's last block (full or short) goes to the exact loop
    if n_blocks <= 0:
        return None, first_pos
    buf = np.frombuffer(data, dtype=np.uint8)
    block_base = np.arange(n_blocks, dtype=np.int64) * BLOCK_LEN
    pos = np.zeros(n_blocks, dtype=np.int64)
    pos[0] = first_pos
    bad_block = np.zeros(n_blocks, dtype=bool)
    chunk_block, chunk_pos, chunk_len, chunk_kind, chunk_crc = [], [], [], [], []
    active = np.flatnonzero(pos + HEADER_LEN <= BLOCK_LEN)
    while len(active):
        at = block_base[active] + pos[active]
        crc = (buf[at].astype(np.uint32) | buf[at + 1].astype(np.uint32) << 8
               | buf[at + 2].astype(np.uint32) << 16 | buf[at + 3].astype(np.uint32) << 24)
        length = buf[at + 4].astype(np.int64) | buf[at + 5].astype(np.int64) << 8
        kind = buf[at + 6]
        padding = (crc == 0) & (length == 0) & (kind == 0)
        end = pos[active] + HEADER_LEN + length
        wrong = ~padding & ((end > BLOCK_LEN) | (kind < FULL) | (kind > LAST))
        bad_block[active[wrong]] = True
        good = ~padding & ~wrong
        chunk_block.append(active[good])
        chunk_pos.append(pos[active[good]])
        chunk_len.append(length[good])
        chunk_kind.append(kind[good])
        chunk_crc.append(crc[good])
        pos[active[good]] = end[good]
        keep = good & (end + HEADER_LEN <= BLOCK_LEN)
        active = active[keep]
    blocks = np.concatenate(chunk_block)
    order = np.lexsort((np.concatenate(chunk_pos), blocks))
    blocks = blocks[order]
    starts = (block_base[blocks] + np.concatenate(chunk_pos)[order] + HEADER_LEN)
    lengths = np.concatenate(chunk_len)[order]
    kinds = np.concatenate(chunk_kind)[order]
    crcs = np.concatenate(chunk_crc)[order]
    # CRC-32 of type byte + payload, one zlib call per chunk (C speed; the loop is the cost).
    view = memoryview(data)
    crc32 = zlib.crc32
    type_crc = _TYPE_CRC
    mismatch = [i for i, (s, n, k, c) in enumerate(zip(starts.tolist(), lengths.tolist(), kinds.tolist(),
                                                         crcs.tolist()))
                if crc32(view[s:s + n], type_crc[k]) != c]
    if mismatch:
        bad_block[blocks[mismatch]] = True
    first_bad = int(np.argmax(bad_block)) if bad_block.any() else n_blocks
    usable = blocks < first_bad
    starts, lengths, kinds = starts[usable], lengths[usable], kinds[usable]
    return _records(data, starts, lengths, kinds)


def _records(data: bytes, starts: np.ndarray, lengths: np.ndarray, kinds: np.ndarray
             ) -> tuple[RecordBatch | None, int]:
    """Whole records from clean chunks in order; stops before a broken FIRST..LAST sequence."""
    n = len(kinds)
    if n == 0:
        return None, 0
    multi = np.flatnonzero(kinds != FULL)
    cut = n  # chunks from here on are not used
    joined: list[bytes] = []
    joined_at: list[int] = []
    i = 0
    multi_list = multi.tolist()
    kinds_list = kinds.tolist() if len(multi_list) else []
    while i < len(multi_list):
        first = multi_list[i]
        if kinds_list[first] != FIRST:
            cut = first
            break
        j = i
        size = int(lengths[first])
        while j + 1 < len(multi_list) and multi_list[j + 1] == multi_list[j] + 1 and kinds_list[multi_list[j + 1]] == MIDDLE:
            j += 1
            size += int(lengths[multi_list[j]])
        last = multi_list[j] + 1
        if j + 1 >= len(multi_list) or multi_list[j + 1] != last or kinds_list[last] != LAST:
            cut = first  # a record whose end is not here (segment end, or a broken sequence)
            break
        size += int(lengths[last])
        if size > framing.MAX_RECORD_BYTES:
            cut = first
            break
        joined.append(b"".join(data[s:s + ln] for s, ln in zip(starts[first:last + 1].tolist(),
                                                               lengths[first:last + 1].tolist())))
        joined_at.append(first)
        i = j + 2
    if cut == 0:
        return None, 0
    starts, lengths, kinds = starts[:cut], lengths[:cut], kinds[:cut]
    end = int(starts[-1] + lengths[-1])
    full = kinds == FULL
    rec_starts = starts[full]
    rec_ends = rec_starts + lengths[full]
    if not joined:
        return RecordBatch(data, rec_starts, rec_ends), end
    # Multi-chunk records are appended after the segment; their spans point there, in file order.
    extra_lengths = np.array([len(b) for b in joined], dtype=np.int64)
    extra_starts = len(data) + np.cumsum(extra_lengths) - extra_lengths
    order_key = np.concatenate([np.flatnonzero(full), np.array(joined_at, dtype=np.int64)])
    all_starts = np.concatenate([rec_starts, extra_starts])
    all_ends = np.concatenate([rec_ends, extra_starts + extra_lengths])
    order = np.argsort(order_key, kind="stable")
    return RecordBatch(data + b"".join(joined), all_starts[order], all_ends[order]), end
