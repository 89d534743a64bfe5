"""How far a reader has got inside one big file, told to whoever is loading (the UI's progress line).

The loader sets a callback for the file it hands a reader (``reporting``); a streaming reader calls ``advanced`` with
the file offset it has read up to after each block. The callback may raise (the load was cancelled): the reader
then stops at once, mid-file. Without a callback, ``advanced`` costs one context-variable lookup per block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CALLBACK: ContextVar[Callable[[int], None] | None] = ContextVar("pimm_inspect_read_progress", default=None)


@contextmanager
def reporting(callback: Callable[[int], None] | None) -> Iterator[None]:
    """While the block runs, readers tell ``callback`` the file offset they have read up to."""
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)


def advanced(offset: int) -> None:
    """The reader has read the file up to ``offset`` (a block boundary)."""
    callback = _CALLBACK.get()
    if callback is not None:
        callback(offset)
