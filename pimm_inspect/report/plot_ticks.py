"""Tick marks of the ``curves`` x axis: whole steps on the step axis, UTC clock times on the wall-clock axis.

plotext spaces its ticks evenly over the data range, so a step axis gets ``11.2`` or ``17.5`` and a wall-clock axis
``1784212230.0``; these ticks sit at round values instead and read as what they are.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

_NICE = (1, 2, 5)
_CLOCK_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
                  86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 365 * 86400)
"""Intervals between wall-clock ticks: round seconds, minutes, hours, days, weeks."""


def _nice_interval(span: float, count: int) -> int:
    """The smallest whole 1/2/5 x 10^k at least ``span / count`` (at least 1)."""
    raw = max(span / max(count, 1), 1.0)
    power = 10 ** int(math.floor(math.log10(raw)))
    for factor in _NICE + (10,):
        if factor * power >= raw:
            return int(factor * power)
    return int(10 * power)


def step_ticks(lo: float, hi: float, count: int) -> tuple[list[float], list[str]]:
    """Up to about ``count`` ticks at round whole steps within ``lo``..``hi``, labelled as integers."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [], []
    if hi - lo < 1:  # one step (steps are whole numbers)
        return [float(round(lo))], [str(int(round(lo)))]
    interval = _nice_interval(hi - lo, count)
    first = math.ceil(lo / interval) * interval
    ticks = [float(v) for v in range(int(first), int(math.floor(hi)) + 1, interval)]
    return ticks, [str(int(v)) for v in ticks]


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def wall_ticks(lo: float, hi: float, count: int) -> tuple[list[float], list[str], str]:
    """Ticks at round UTC clock times within ``lo``..``hi`` (unix seconds), their labels, and the axis title.

    Within one UTC day the labels are ``HH:MM`` (``HH:MM:SS`` under a minute apart) and the title names the day;
    across days ``MM-DD HH:MM`` (``YYYY-MM-DD`` a day or more apart) and the title names the first and last day.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [], [], "wall clock (UTC)"
    span = max(hi - lo, 0.0)
    interval = next((s for s in _CLOCK_STEPS_S if s >= span / max(count, 1)), _CLOCK_STEPS_S[-1])
    first = math.ceil(lo / interval) * interval
    ticks: list[float] = []
    at = float(first)
    while at <= hi and len(ticks) < 4 * max(count, 1):
        ticks.append(at)
        at += interval
    if not ticks:
        ticks = [lo]
    start, end = _utc(lo), _utc(hi)
    if start.date() == end.date():
        fmt = "%H:%M:%S" if interval < 60 or any(_utc(t).second for t in ticks) else "%H:%M"
        title = f"wall clock (UTC, {start.date().isoformat()})"
    else:
        fmt = "%Y-%m-%d" if interval >= 86400 else "%m-%d %H:%M"
        title = f"wall clock (UTC, {start.date().isoformat()} to {end.date().isoformat()})"
    return ticks, [_utc(t).strftime(fmt) for t in ticks], title
