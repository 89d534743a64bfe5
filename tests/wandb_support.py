"""A test-side writer for W&B transaction logs (hand-built damage cases and the fuzzer's re-framing)."""

from __future__ import annotations

import struct
import zlib

from pimm_inspect.sources.wandb._framing import BLOCK_LEN, FILE_HEADER


def frame_records(records: list[bytes]) -> bytes:
    """Frame records as wandb-core does: file header, 32 KiB blocks, FULL/FIRST/MIDDLE/LAST chunks with CRCs."""
    out = bytearray(FILE_HEADER)
    for record in records:
        data, first = record, True
        while True:
            left = BLOCK_LEN - len(out) % BLOCK_LEN
            if left < 7:
                out += b"\0" * left
                continue
            fragment, data = data[:left - 7], data[left - 7:]
            last = not data
            kind = 1 if first and last else 2 if first else 4 if last else 3
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + fragment), len(fragment), kind) + fragment
            first = False
            if last:
                break
    return bytes(out)
