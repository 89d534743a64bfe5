"""Readable plot axes: integer step ticks, relative time in sensible units, wall-clock ticks with their zone."""

from __future__ import annotations

import math
from datetime import datetime

WALL_INTERVALS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
                    172800, 604800)
"""Tick spacings a clock reader expects (seconds up to a week)."""
RELATIVE_UNITS = ((120.0, 1.0, "seconds"), (7200.0, 60.0, "minutes"), (172800.0, 3600.0, "hours"),
                  (math.inf, 86400.0, "days"))
"""(span below, seconds per unit, unit name): the largest unit that still gives a readable span."""


def nice_step(span: float, target: int) -> float:
    """A 1/2/5 x 10^k spacing giving about ``target`` ticks over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def _ticks(lo: float, hi: float, step: float) -> list[float]:
    first = math.ceil(lo / step) * step
    count = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [first + i * step for i in range(max(count, 0))][:50]


def step_ticks(lo: float, hi: float, target: int = 6) -> tuple[list[float], list[str]]:
    """Integer step ticks (never ``38.2``) between lo and hi."""
    step = max(1.0, round(nice_step(hi - lo, target)))
    ticks = _ticks(lo, hi, step) or [float(round(lo))]
    return ticks, [str(int(round(t))) for t in ticks]


def value_ticks(lo: float, hi: float, target: int = 6) -> tuple[list[float], list[str]]:
    """Ticks in a unit already chosen (relative time): short labels without float noise."""
    step = nice_step(hi - lo, target)
    ticks = _ticks(lo, hi, step) or [lo]
    decimals = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    return ticks, [f"{t:.{decimals}f}" for t in ticks]


def relative_unit(span_s: float) -> tuple[float, str]:
    """(seconds per unit, unit name) for a relative time axis spanning ``span_s`` seconds."""
    for below, seconds, name in RELATIVE_UNITS:
        if span_s < below:
            return seconds, name
    return 86400.0, "days"


def local(seconds: float) -> datetime:
    """A unix time in the viewer's local zone (the zone is always printed next to it)."""
    return datetime.fromtimestamp(seconds).astimezone()


def zone_name(seconds: float) -> str:
    """The local zone's name at that time, e.g. ``UTC`` or ``CET``."""
    return local(seconds).tzname() or local(seconds).strftime("%z")


def fmt_wall(seconds: float) -> str:
    """``2026-07-16 14:30:12 UTC``: a unix time as local date and time with its zone."""
    when = local(seconds)
    return when.strftime("%Y-%m-%d %H:%M:%S ") + (when.tzname() or when.strftime("%z"))


def wall_ticks(lo: float, hi: float, target: int = 5) -> tuple[list[float], list[str], str]:
    """Clock-aligned ticks for a wall-time axis, their labels, and the axis label (zone, date when one day)."""
    span = max(hi - lo, 1.0)
    interval = next((i for i in WALL_INTERVALS_S if span / i <= target), WALL_INTERVALS_S[-1])
    offset = local(lo).utcoffset()
    shift = offset.total_seconds() if offset is not None else 0.0
    # Align to the local clock (a 1 h tick on the hour in the viewer's zone, not in UTC).
    first = math.ceil((lo + shift) / interval) * interval - shift
    ticks: list[float] = []
    t = first
    while t <= hi and len(ticks) < 50:
        ticks.append(t)
        t += interval
    one_day = local(lo).date() == local(hi).date()
    fmt = "%H:%M:%S" if interval < 60 else ("%H:%M" if one_day else "%m-%d %H:%M")
    labels = [local(t).strftime(fmt) for t in ticks]
    title = f"wall time ({zone_name(lo)}" + (f", {local(lo).strftime('%Y-%m-%d')})" if one_day else ")")
    return ticks, labels, title
