"""How far a reader has got inside one big file, told to whoever is loading (the UI's progress line).

The loader sets a callback for the file it hands a reader (``reporting``); a streaming reader calls ``advanced`` with
the file offset it has read up to after each block, and a way to get the series it has read so far (``SoFar``: built
only when the loader asks, to show tags and curves before a big read ends). The callback may raise (the load was
cancelled): the reader then stops at once, mid-file. Without a callback, ``advanced`` costs one context-variable
lookup per block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..model import ScalarSeries

SoFar = Callable[[], tuple[ScalarSeries, ...]]
"""The series a reader has read so far (thinned: for a preview), computed when called."""
Callback = Callable[[int, "SoFar | None"], None]
_CALLBACK: ContextVar[Callback | None] = ContextVar("pimm_inspect_read_progress", default=None)
_BLOCK_BYTES: ContextVar[int | None] = ContextVar("pimm_inspect_read_block_bytes", default=None)


@contextmanager
def reporting(callback: Callback | None, block_bytes: int | None = None) -> Iterator[None]:
    """While the block runs, readers tell ``callback`` the file offset they have read up to (and how to get what they
    read so far), after blocks of ``block_bytes`` when given (smaller blocks: progress and previews more often)."""
    token = _CALLBACK.set(callback)
    size = _BLOCK_BYTES.set(block_bytes)
    try:
        yield
    finally:
        _BLOCK_BYTES.reset(size)
        _CALLBACK.reset(token)


def block_bytes(default: int) -> int:
    """Bytes a streaming reader should read per block: what the caller of ``reporting`` asked for, else ``default``."""
    asked = _BLOCK_BYTES.get()
    return asked if asked is not None and asked > 0 else default


def advanced(offset: int, so_far: SoFar | None = None) -> None:
    """The reader has read the file up to ``offset`` (a block boundary); ``so_far`` gives the series read until there."""
    callback = _CALLBACK.get()
    if callback is not None:
        callback(offset, so_far)
