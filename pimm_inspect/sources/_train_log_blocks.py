"""Blocks of complete train.log lines, each line cut to ``MAX_LINE_BYTES``.

A line longer than the cap keeps its first ``MAX_LINE_BYTES``; the rest is skipped
(read past, never copied or parsed) and counted. Offsets stay those of the file, so
segment starts and the line index point at the real bytes. Memory is one block plus
at most one capped line; time is linear in the file size (a long line is never
re-copied block after block).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

BLOCK_BYTES = 16 * 1024 * 1024
"""Bytes read per block (a block is extended to the next newline)."""
MAX_LINE_BYTES = 1024 * 1024
"""Longest line kept whole; pimm writes lines of a few hundred bytes."""
MAX_LONG_LINES_KEPT = 1000
"""Long lines listed one by one in ``LineStats.long_lines`` (all are counted)."""


@dataclass
class LineStats:
    """Long lines met while reading, and the unfinished last line."""

    long_lines: list[tuple[int, int]] = field(default_factory=list)
    """(byte offset, bytes skipped) of the first ``MAX_LONG_LINES_KEPT`` long lines."""
    long_line_count: int = 0
    skipped_bytes: int = 0
    partial_bytes: int = 0
    """Length of the last line when it has no newline (not read)."""

    def long(self, offset: int, skipped: int) -> None:
        self.long_line_count += 1
        self.skipped_bytes += skipped
        if len(self.long_lines) < MAX_LONG_LINES_KEPT:
            self.long_lines.append((offset, skipped))


def _cut_long_lines(buf: bytes, offset: int, stats: LineStats, cap: int) -> Iterator[tuple[bytes, int, int]]:
    """Split a buffer of complete lines at its over-long lines, keeping ``cap`` bytes of each.

    Looks for a newline in every ``cap + 1`` bytes after a line start (``rfind`` jumps to
    the last newline of each window), so the check costs about ``len(buf) / cap`` calls.
    """
    piece = pos = 0
    end = len(buf)
    while pos < end:
        last = buf.rfind(b"\n", pos, pos + cap + 1)
        if last >= 0:
            pos = last + 1
            continue
        line_end = buf.find(b"\n", pos + cap)
        stats.long(offset + pos, line_end - pos - cap)
        yield buf[piece:pos + cap] + b"\n", offset + piece, offset + line_end + 1
        piece = pos = line_end + 1
    if piece == 0:
        yield buf, offset, offset + end
    elif piece < end:
        yield buf[piece:], offset + piece, offset + end


def blocks(fh: BinaryIO, start_offset: int, size: int, stats: LineStats, block_bytes: int = BLOCK_BYTES,
           cap: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes, int, int]]:
    """``(data, offset, real_end)``: complete lines from ``start_offset``; ``real_end`` is where they end in the file.

    A half-written last line is not yielded (``stats.partial_bytes`` says how long it is).
    """
    fh.seek(start_offset)
    remaining = size - start_offset
    pos = start_offset  # file offset of the next byte read
    carry = b""  # the start of an unfinished line (at most ``cap`` bytes)
    carry_off = start_offset
    carry_len = 0  # its real length so far (more than len(carry) once it is being skipped)
    while remaining > 0:
        data = fh.read(min(block_bytes, remaining))
        if not data:
            break
        remaining -= len(data)
        data_off, pos = pos, pos + len(data)
        if carry_len > cap:  # inside a long line: skip to its newline
            nl = data.find(b"\n")
            if nl < 0:
                carry_len += len(data)
                continue
            stats.long(carry_off, carry_len + nl - cap)
            yield carry + b"\n", carry_off, data_off + nl + 1
            carry, carry_len = b"", 0
            data, data_off = data[nl + 1:], data_off + nl + 1
        buf = carry + data if carry else data
        buf_off = carry_off if carry else data_off
        cut = buf.rfind(b"\n")
        if cut >= 0:
            yield from _cut_long_lines(buf[:cut + 1] if cut + 1 < len(buf) else buf, buf_off, stats, cap)
            buf, buf_off = buf[cut + 1:], buf_off + cut + 1
        carry, carry_off, carry_len = buf[:cap], buf_off, len(buf)
    stats.partial_bytes = carry_len
