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

BLOCK_BYTES = 4 * 1024 * 1024
"""Bytes read per block (a block is extended to the next newline). The per-block numpy temporaries are a few times
this: 16 MB blocks peaked ~40 MB higher on a 1 GB log and took ~10% more CPU (less of each block stayed in cache)."""
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


def _cut_long_lines(block: bytes, offset: int, stats: LineStats, cap: int) -> Iterator[tuple[bytes, int, int]]:
    """Split a block (``\\n`` + complete lines at file ``offset``) at its over-long lines, keeping ``cap`` bytes of each.

    Looks for a newline in every ``cap + 1`` bytes after a line start (``rfind`` jumps to
    the last newline of each window), so the check costs about ``len(block) / cap`` calls.
    """
    piece = pos = 1
    end = len(block)
    while pos < end:
        last = block.rfind(b"\n", pos, pos + cap + 1)
        if last >= 0:
            pos = last + 1
            continue
        line_end = block.find(b"\n", pos + cap)
        stats.long(offset + pos - 1, line_end - pos - cap)
        yield b"\n" + block[piece:pos + cap] + b"\n", offset + piece - 1, offset + line_end
        piece = pos = line_end + 1
    if piece == 1:
        yield block, offset, offset + end - 1
    elif piece < end:
        yield b"\n" + block[piece:], offset + piece - 1, offset + end - 1


def blocks(fh: BinaryIO, start_offset: int, size: int, stats: LineStats, block_bytes: int = BLOCK_BYTES,
           cap: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes, int, int]]:
    """``(block, offset, real_end)``: ``b"\\n"`` + complete lines that start at file ``offset``; ``real_end``
    is where they end in the file.

    The added newline lets every pattern find the first line like the others. A
    half-written last line is not yielded (``stats.partial_bytes`` says how long it is).
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
        skip = 0
        if carry_len > cap:  # inside a long line: skip to its newline
            nl = data.find(b"\n")
            if nl < 0:
                carry_len += len(data)
                continue
            stats.long(carry_off, carry_len + nl - cap)
            yield b"\n" + carry + b"\n", carry_off, data_off + nl + 1
            carry, carry_len, skip = b"", 0, nl + 1
        cut = data.rfind(b"\n", skip)
        if cut >= 0:
            block_off = carry_off if carry_len else data_off + skip
            block = b"".join((b"\n", carry, memoryview(data)[skip:cut + 1]))  # the one copy of the block
            yield from _cut_long_lines(block, block_off, stats, cap)
            carry, carry_off, carry_len = data[cut + 1:cut + 1 + cap], data_off + cut + 1, len(data) - cut - 1
        else:
            if not carry_len:
                carry_off = data_off + skip
            carry = carry + data[skip:skip + max(0, cap - len(carry))]
            carry_len += len(data) - skip
    stats.partial_bytes = carry_len
