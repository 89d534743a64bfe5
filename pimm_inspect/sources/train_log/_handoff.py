"""The bytes of a small train.log just read, handed to the ``Config:`` dump reader so the log is opened once.

``reader._read`` reads a small log (one block) whole with one read, parses those bytes, and leaves them here with
the result's ``segments``; ``config_dump.read_config_dumps``, called next with those very segments (the loader
does so at once), takes them instead of opening the file again. The dumps then come from the bytes the segments
were found in, checked by ``open_regular`` when the log was opened. One slot, taken once, matched by the identity of
the segments tuple and the path: a dump reader given other segments (a cached result, another file, another
thread's read) finds nothing and opens the file as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

HANDOFF_BYTES = 1024 * 1024
"""Logs up to this size (read in one block) are kept for the dump reader."""

_slot: tuple[Any, str, bytes] | None = None


def leave(segments: Any, path: Path, data: bytes) -> None:
    """Keep ``data`` (the whole file at ``path``) for the dump reader of ``segments``."""
    global _slot
    _slot = (segments, os.fspath(path), data)


def take(segments: Any, path: Path) -> bytes | None:
    """The bytes left for exactly these ``segments`` of this ``path`` (then no longer kept), else None."""
    global _slot
    slot = _slot
    if slot is None or slot[0] is not segments or slot[1] != os.fspath(path):
        return None
    _slot = None
    return slot[2]
