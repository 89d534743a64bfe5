"""What discovery just found about each run folder (where it leads, its entries), kept a few seconds for the check
of its stored row right after. Its own module: every command's discovery notes listings here, and a command that
never reads rows (a warm ``show --json``) must not import the row index's machinery."""

from __future__ import annotations

import os
import time

FRESH_S = 5.0
"""What discovery found is used by a row check at most this long after (``Fresh``)."""
Found = tuple[str | None, list[os.DirEntry[str]] | None]
"""Where a run folder really leads and its entries, as found a moment ago (either None: not known)."""


class Fresh:
    """What discovery found about each run folder a moment ago (where it really leads, its entries), by absolute
    path, for the check of its stored row right after: each is taken once, and only within ``FRESH_S`` seconds
    (an old listing must never stand in for a check made now)."""

    def __init__(self) -> None:
        self.reals: dict[str, tuple[float, str]] = {}
        self.entries: dict[str, tuple[float, list[os.DirEntry[str]]]] = {}

    def note_real(self, path: str, real: str) -> None:
        self.reals[path] = (time.monotonic(), real)

    def note_entries(self, path: str, entries: list[os.DirEntry[str]]) -> None:
        self.entries[path] = (time.monotonic(), entries)

    def take(self, paths: list[str]) -> dict[str, Found]:
        """What is known of ``paths`` (taken out), the rest dropped once too old."""
        if not self.reals and not self.entries:
            return {}
        oldest = time.monotonic() - FRESH_S
        out: dict[str, Found] = {}
        for path in paths:
            real = self.reals.pop(path, None)
            entries = self.entries.pop(path, None)
            if real is not None or entries is not None:
                out[path] = (real[1] if real is not None and real[0] >= oldest else None,
                             entries[1] if entries is not None and entries[0] >= oldest else None)
        for kept in (self.reals, self.entries):
            for path in [p for p, (at, _v) in kept.items() if at < oldest]:
                del kept[path]
        return out
