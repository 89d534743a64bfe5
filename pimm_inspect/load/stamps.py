"""Node-local time stamps as seconds: ``datetime.strptime(text, fmt).timestamp()``, the usual shapes parsed directly.

``strptime`` builds its regular expression and locale tables on every call (several microseconds); a stamp of
exactly the shape a writer prints (``2026-07-01 12:00:03``, ``20260701-120003``) is read by one fixed pattern here,
and anything else goes through ``strptime`` itself, so every text gives what ``strptime`` gives.
"""

from __future__ import annotations

import re
from datetime import datetime

_SHAPES = {
    "%Y-%m-%d %H:%M:%S": re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)", re.ASCII),
    "%Y%m%d-%H%M%S": re.compile(r"(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)", re.ASCII),
}


def stamp_seconds(text: str | None, fmt: str) -> float | None:
    """``text`` read with ``fmt`` (a naive time: the machine's local zone, as every node-local time here) as unix
    seconds; None for no text or a text ``strptime`` refuses."""
    if not text:
        return None
    shape = _SHAPES.get(fmt)
    match = shape.fullmatch(text) if shape is not None else None
    try:
        if match is not None:  # two digits a field: what strptime reads the same (a field out of range: refused)
            year, month, day, hour, minute, second = map(int, match.groups())
            return datetime(year, month, day, hour, minute, second).timestamp()
        return datetime.strptime(text, fmt).timestamp()
    except ValueError:
        return None
