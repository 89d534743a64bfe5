"""Bulk framing of W&B transaction logs: whole segments of 32 KiB blocks walked at once with numpy.

Chunks never cross a block, so the chunk chain of every block in a segment can be followed in
lock-step (one numpy step per chunk position, over all blocks). Clean blocks become record
batches; at the first sign of anything unusual (bad CRC, unknown chunk type, a chunk longer than
its block, a broken FIRST..LAST sequence, the file's last block) the exact chunk loop of
``_framing`` takes over from the last record end, so findings are the same as its own.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import numpy as np

from . import _framing as framing
from ._framing import BLOCK_LEN, FIRST, FULL, HEADER_LEN, LAST, MIDDLE, FramingState

SEGMENT_BLOCKS = 256
"""Blocks read and framed at once (8 MiB): bounds memory on logs of any size."""
TAIL_BATCH = 4096
"""Records per batch handed on from the exact chunk loop."""
_U8, _U16, _U32 = np.uint64(0xFF), np.uint64(0xFFFF), np.uint64(0xFFFFFFFF)
_S32, _S48 = np.uint64(32), np.uint64(48)
_LOW56 = np.uint64((1 << 56) - 1)
"""A chunk header (CRC, length, type) of zero bytes: padding to the block end."""


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
    buf = np.frombuffer(data + bytes(8), dtype=np.uint8)
    words = np.ndarray((len(buf) - 7,), dtype=np.uint64, buffer=buf, strides=(1,))
    bad_block = np.zeros(n_blocks, dtype=bool)
    # Chunk headers in lock-step over the blocks: one word gather per chunk position, no sort.
    block = np.arange(n_blocks, dtype=np.int64)
    at = block * BLOCK_LEN
    at[0] += first_pos
    limit = block * BLOCK_LEN + BLOCK_LEN
    keep = at + HEADER_LEN <= limit
    block, at, limit = block[keep], at[keep], limit[keep]
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while len(block):
        word = words[at]
        length = ((word >> _S32) & _U16).astype(np.int64)
        kind = (word >> _S48) & _U8
        end = at + HEADER_LEN + length
        padding = (word & _LOW56) == 0
        wrong = ~padding & ((end > limit) | (kind < FULL) | (kind > LAST))
        if wrong.any():
            bad_block[block[wrong]] = True
        good = ~(padding | wrong)
        steps.append((block[good], at[good], word[good]))
        more = good & (end + HEADER_LEN <= limit)
        block, at, limit = block[more], end[more], limit[more]
    counts = np.zeros(n_blocks, dtype=np.int64)
    for owner, _at, _word in steps:
        counts[owner] += 1
    offset = np.cumsum(counts) - counts
    total = int(counts.sum())
    blocks = np.empty(total, dtype=np.int64)
    chunk_at = np.empty(total, dtype=np.int64)
    header = np.empty(total, dtype=np.uint64)
    for k, (owner, where, word) in enumerate(steps):
        place = offset[owner] + k
        blocks[place], chunk_at[place], header[place] = owner, where, word
    lengths = ((header >> _S32) & _U16).astype(np.int64)
    kinds = ((header >> _S48) & _U8).astype(np.int64)
    # CRC-32 of type byte + payload (contiguous in the file), one zlib call per chunk (C speed).
    view = memoryview(data)
    computed = np.fromiter(map(zlib.crc32, map(view.__getitem__, map(slice, (chunk_at + 6).tolist(),
                                                                      (chunk_at + HEADER_LEN + lengths).tolist()))),
                           dtype=np.uint32, count=total)
    mismatch = computed != (header & _U32).astype(np.uint32)
    if mismatch.any():
        bad_block[blocks[mismatch]] = True
    first_bad = int(np.argmax(bad_block)) if bad_block.any() else n_blocks
    usable = blocks < first_bad
    return _records(data, chunk_at[usable] + HEADER_LEN, lengths[usable], kinds[usable])


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
