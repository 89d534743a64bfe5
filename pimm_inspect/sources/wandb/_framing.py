"""LevelDB-log framing of W&B ``.wandb`` transaction logs, tolerant of damage.

Layout (wandb-core's transaction log): a 7-byte file header (``:W&B``, magic
0xBEE1 little-endian, version 0), then 32 KiB blocks of chunks. Each chunk has a
7-byte header: CRC-32 (zlib) of type byte + payload, little-endian uint32;
payload length, uint16; type FULL=1, FIRST=2, MIDDLE=3, LAST=4. A block tail
shorter than a chunk header is zero padding. Records larger than a block are
split into FIRST, MIDDLE..., LAST chunks.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from ...model import Finding, Severity
from .._common import file_finding

FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
HEADER_LEN = 7
BLOCK_LEN = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A reassembled record larger than this is dropped as corrupt (bounds memory)."""

_CHUNK_HEADER = struct.Struct("<IHB")


@dataclass(slots=True)
class FramingState:
    """What the framing loop learned besides the records (filled while iterating)."""

    rel_path: str
    findings: list[Finding] = field(default_factory=list)
    bytes_read: int = 0
    """Offset just past the last chunk that completed a record."""
    corrupt_regions: int = 0
    truncated: bool = False
    header_ok: bool = False

    def corrupt(self, offset: int, what: str) -> None:
        """Note one damaged region (one finding per file, counting the rest)."""
        self.corrupt_regions += 1
        if self.corrupt_regions == 1:
            self.findings.append(file_finding(
                "file.corrupt", self.rel_path,
                f"{self.rel_path}: {what} at byte {offset}; skipped to the next 32 KiB block",
                "The W&B transaction log is damaged there. Records before it (and intact blocks "
                "after it) were read; the damaged records are lost.",
                severity=Severity.ERROR))

    def finish(self) -> None:
        """Turn the count of extra damaged regions into the finding's message."""
        if self.corrupt_regions > 1:
            first = self.findings.index(next(f for f in self.findings if f.code == "file.corrupt"))
            old = self.findings[first]
            self.findings[first] = Finding(old.code, old.severity,
                                           old.message + f" ({self.corrupt_regions} damaged regions in all)",
                                           old.paths, old.steps, old.explanation)


def iter_records(fh: BinaryIO, state: FramingState, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` for every intact record; damage goes into ``state``.

    ``start`` > 0 continues after a record end found by an earlier read (its ``bytes_read``): the file
    header was checked then, and no record is pending at a record end, so framing resumes mid-block.
    """
    if start > HEADER_LEN:
        yield from _iter_blocks(fh, state, start)
        return
    header = read_header(fh, state)
    if header is not None:
        yield from _iter_blocks(fh, state, HEADER_LEN, header)


def read_header(fh: BinaryIO, state: FramingState) -> bytes | None:
    """The file header when it is W&B's (file at offset 0); else None with a finding in ``state``."""
    rel_path = state.rel_path
    header = fh.read(HEADER_LEN)
    if not header:
        state.findings.append(file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO))
        return None
    if len(header) < HEADER_LEN or header[:4] != FILE_HEADER[:4]:
        state.findings.append(file_finding(
            "file.corrupt", rel_path, f"{rel_path}: not a W&B transaction log (bad file header)",
            severity=Severity.ERROR))
        return None
    if header != FILE_HEADER:
        magic, version = struct.unpack_from("<HB", header, 4)
        state.findings.append(file_finding(
            "file.corrupt", rel_path,
            f"{rel_path}: unexpected W&B log magic 0x{magic:04X} / version {version}; not read",
            severity=Severity.ERROR))
        return None
    return header


def _iter_blocks(fh: BinaryIO, state: FramingState, start: int, header: bytes = b"") -> Iterator[tuple[int, bytes]]:
    """The chunk loop from byte ``start`` (a record end, or just after the file header read as ``header``)."""
    rel_path = state.rel_path
    state.header_ok = True
    state.bytes_read = start
    # Block offsets stay absolute: the file header occupies the start of block 0.
    block_start = start - start % BLOCK_LEN
    if header:
        block = header + fh.read(BLOCK_LEN - HEADER_LEN)
    else:
        fh.seek(block_start)
        block = fh.read(BLOCK_LEN)
    pos = start - block_start
    pending: list[bytes] | None = None
    pending_size = 0
    pending_offset = 0
    while True:
        if pos + HEADER_LEN > len(block):
            if len(block) < BLOCK_LEN:
                # Short final block: a partial chunk header or nothing at all.
                if pos < len(block) and any(block[pos:]) or pending is not None:
                    state.truncated = True
                break
            block_start += BLOCK_LEN
            block = fh.read(BLOCK_LEN)
            pos = 0
            if not block:
                if pending is not None:
                    state.truncated = True
                break
            continue
        crc, length, kind = _CHUNK_HEADER.unpack_from(block, pos)
        if crc == 0 and length == 0 and kind == 0:
            pos = len(block)  # zero padding (or preallocated space) to the block end
            continue
        end = pos + HEADER_LEN + length
        if end > len(block):
            if len(block) < BLOCK_LEN and end <= BLOCK_LEN:
                state.truncated = True  # the writer stopped mid-chunk (crash or still writing)
                break
            state.corrupt(block_start + pos, "chunk longer than its block")
            pending = None
            pos = len(block)
            continue
        payload = block[pos + HEADER_LEN:end]
        if zlib.crc32(payload, zlib.crc32(bytes((kind,)))) != crc or kind not in (FULL, FIRST, MIDDLE, LAST):
            if len(block) < BLOCK_LEN and not any(block[pos:]):
                break  # zeros at the very end of a file still being written
            state.corrupt(block_start + pos, "bad chunk checksum" if kind in (1, 2, 3, 4) else f"unknown chunk type {kind}")
            pending = None
            pos = len(block)
            continue
        offset = block_start + pos
        pos = end
        if kind == FULL:
            if pending is not None:
                state.corrupt(pending_offset, "record missing its last chunk")
                pending = None
            state.bytes_read = block_start + pos
            yield offset, payload
        elif kind == FIRST:
            if pending is not None:
                state.corrupt(pending_offset, "record missing its last chunk")
            pending, pending_size, pending_offset = [payload], len(payload), offset
        elif pending is None:
            # MIDDLE/LAST without FIRST: the start was in a damaged block.
            continue
        else:
            pending_size += len(payload)
            if pending_size > MAX_RECORD_BYTES:
                state.corrupt(pending_offset, f"record larger than {MAX_RECORD_BYTES // (1024 * 1024)} MiB")
                pending = None
                continue
            pending.append(payload)
            if kind == LAST:
                record = b"".join(pending)
                pending = None
                state.bytes_read = block_start + pos
                yield pending_offset, record
    if state.truncated:
        state.findings.append(file_finding(
            "file.truncated", rel_path,
            f"{rel_path} ends inside a record (after byte {state.bytes_read}); the partial record was ignored",
            "Normal while the run is still writing; otherwise the process was killed mid-write "
            "or the file was cut off. Everything before that point was read.",
            severity=Severity.WARNING))
    state.finish()
