"""Reading a possibly multi-GB log in line-aligned chunks, for the Log tab's search and step jumps."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ...sources import UnreadableFile, open_regular

CHUNK_BYTES = 8 << 20


def scan(path: Path, pattern: re.Pattern[bytes], start: int, end: int,
         cancelled: Callable[[], bool] = lambda: False) -> Iterator[tuple[int, re.Match[bytes]]]:
    """Yield (absolute offset, match) of ``pattern`` in ``path[start:end]``, read in line-aligned chunks.

    Reads with read(), never mmap: pimm truncates train.log on a fresh relaunch, and a mapped file
    that shrinks kills the process (SIGBUS). A line longer than a chunk is searched whole.
    """
    try:
        with open_regular(path, path.name) as fh:
            fh.seek(start)
            position, carry = start, b""
            while position < end and not cancelled():
                chunk = fh.read(min(CHUNK_BYTES, end - position))
                if not chunk:
                    break
                position += len(chunk)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1 if position < end else len(data)
                if cut == 0:
                    carry = data
                    continue
                base = position - len(data)
                for match in pattern.finditer(data, 0, cut):
                    yield base + match.start(), match
                carry = data[cut:]
            if carry:
                base = position - len(carry)
                for match in pattern.finditer(carry):
                    yield base + match.start(), match
    except (UnreadableFile, OSError, ValueError):
        return
