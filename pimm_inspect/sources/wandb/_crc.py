"""CRC-32 checks of many W&B log chunks at once: one zlib pass over a segment instead of one call per chunk.

A chunk's CRC covers its type byte and payload, which are contiguous in the file (its region). The
CRC is linear: over a copy of the segment where every byte outside the regions is zero and the 4
bytes after each region hold what the region's raw CRC register must be if its stored CRC is right
(the stored CRC xor the CRC of as many zero bytes), the raw register of the whole copy is zero when
every chunk is intact: feeding a register's own value (little-endian) back into a reflected CRC
clears it, and zero bytes keep it clear. A damaged chunk leaves its error term, shifted by the bytes
after it, which is never zero alone; several damaged chunks of one segment could only cancel with
probability 2**-32, what CRC-32 itself misses. When the copy's register is not zero, every chunk is
checked on its own, so a damaged segment gives exactly the per-chunk result.
"""

from __future__ import annotations

import zlib

import numpy as np

from ._framing import BLOCK_LEN, HEADER_LEN
from ._scan import distinct as _distinct

_ZEROS_CRC = np.zeros(BLOCK_LEN + 1, dtype=np.uint32)
"""[n] = zlib.crc32 of n zero bytes, for the region lengths seen so far (``_ZEROS_KNOWN``)."""
_ZEROS_KNOWN = np.zeros(BLOCK_LEN + 1, dtype=bool)


def _zeros_crc(lengths: np.ndarray) -> np.ndarray:
    """zlib.crc32 of ``lengths[i]`` (<= BLOCK_LEN) zero bytes, per i."""
    for n in _distinct(lengths[~_ZEROS_KNOWN[lengths]]):
        _ZEROS_CRC[n] = zlib.crc32(bytes(n))
        _ZEROS_KNOWN[n] = True
    crcs: np.ndarray = _ZEROS_CRC[lengths]
    return crcs


def per_chunk_mismatch(data: np.ndarray, region_start: np.ndarray, region_end: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """True for each chunk whose region ``data[region_start:region_end]`` does not have CRC ``stored``."""
    view = data.data
    computed = np.fromiter(map(zlib.crc32, map(view.__getitem__, map(slice, region_start.tolist(), region_end.tolist()))),
                           dtype=np.uint32, count=len(region_start))
    mismatch: np.ndarray = computed != stored
    return mismatch


def mismatch(data: np.ndarray, chunk_at: np.ndarray, lengths: np.ndarray, stored: np.ndarray, blocks: np.ndarray
             ) -> np.ndarray:
    """True for each chunk (header at ``chunk_at``, payload ``lengths``, in block ``blocks``, in file order)
    whose stored CRC does not match its type byte and payload.

    ``data`` (a writable segment buffer, with at least 8 bytes behind the last region) is used as the
    scratch copy: chunk headers and block tails are overwritten, payloads never are.
    """
    n = len(chunk_at)
    if not n:
        return np.zeros(0, dtype=bool)
    region_start = chunk_at + HEADER_LEN - 1  # the type byte
    region_end = chunk_at + HEADER_LEN + lengths
    if n < 64:
        return per_chunk_mismatch(data, region_start, region_end, stored)
    covered = int(region_end[-1])
    copy = data[:covered + 8]
    copy[covered:] = 0  # room for the last region's register
    # Zero what no region covers: chunk headers, the part of each block before its first chunk
    # and after its last one (padding, tails), and blocks without chunks.
    # (unaligned 4- and 2-byte views: two writes per header, no index per byte)
    np.ndarray((covered - 3,), dtype=np.uint32, buffer=copy, strides=(1,))[chunk_at] = 0  # the CRC
    np.ndarray((covered - 1,), dtype=np.uint16, buffer=copy, strides=(1,))[chunk_at + 4] = 0  # the length
    first_block, last_block = int(blocks[0]), int(blocks[-1])
    copy[:first_block * BLOCK_LEN] = 0
    starts_of = np.full(last_block - first_block + 1, -1, dtype=np.int64)
    ends_of = np.full(last_block - first_block + 1, -1, dtype=np.int64)
    first = np.concatenate([[True], blocks[1:] != blocks[:-1]])
    last = np.concatenate([blocks[1:] != blocks[:-1], [True]])
    starts_of[blocks[first] - first_block] = chunk_at[first]
    ends_of[blocks[last] - first_block] = region_end[last]
    for k, (lo, hi) in enumerate(zip(starts_of.tolist(), ends_of.tolist())):
        block_start = (first_block + k) * BLOCK_LEN
        if lo < 0:
            copy[block_start:block_start + BLOCK_LEN] = 0
            continue
        copy[block_start:lo] = 0
        copy[hi:block_start + BLOCK_LEN] = 0
    expected = stored ^ _zeros_crc(lengths + 1)
    np.ndarray((covered + 5,), dtype="<u4", buffer=copy, strides=(1,))[region_end] = expected
    if zlib.crc32(copy.data, 0xFFFFFFFF) == 0xFFFFFFFF:  # raw register of the whole copy: zero
        return np.zeros(n, dtype=bool)
    return per_chunk_mismatch(data, region_start, region_end, stored)
