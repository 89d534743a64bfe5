"""What a report draws: per tag, one line per attempt (or writer), downsampled per pixel column, with the resume
seams and the replayed ranges, as plain numbers; ``svg`` and ``markdown`` turn them into pictures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...analysis.curves import downsample_minmax, merge, preferred_series
from ...analysis.distinct import strictly_increasing
from ...model import Run
from ..plot import select_tags

PLOT_COLUMNS = 640
"""Pixel columns of a chart's plot area: each line keeps its min and max per column it spans."""
MAX_CHARTS = 48
"""Charts drawn per run; the other tags are named in a note (choose them with ``--tag``)."""


@dataclass(frozen=True, slots=True, eq=False)
class ChartLine:
    """One writer's points of a tag, as drawn."""

    attempt: int | None
    """1-based attempt; None when the writer is not an attempt (then ``style`` tells lines apart)."""
    style: int
    """0-based style (dash pattern, marker, colour) of the line."""
    label: str
    x: np.ndarray
    """float64 steps, ascending."""
    y: np.ndarray
    """float64 values; NaN/inf break the line."""
    points: int
    """Points of the writer before downsampling."""


@dataclass(frozen=True, slots=True, eq=False)
class Chart:
    """One tag's chart."""

    tag: str
    lines: tuple[ChartLine, ...]
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    seams: tuple[tuple[int, int], ...]
    """(step, attempt) where each later attempt's curve starts."""
    bands: tuple[tuple[int, int, int], ...]
    """(first step, last step, copies) of each replayed range inside the chart."""
    policy: str

    @property
    def points(self) -> int:
        return sum(line.points for line in self.lines)

    @property
    def drawn(self) -> int:
        return sum(int(line.x.shape[0]) for line in self.lines)


@dataclass(frozen=True, slots=True)
class ChartGroup:
    """The charts of one tag group (``train/...``, ``val/...``)."""

    name: str
    charts: tuple[Chart, ...]


def group_of(tag: str) -> str:
    """A tag's group: the part before its first ``/`` (``train/loss`` -> ``train``)."""
    return tag.split("/", 1)[0] if "/" in tag.strip("/") else "other"


def _thin(steps: np.ndarray, values: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Min and max per column (``downsample_minmax``), the first and last point always kept (exact seams)."""
    x, y = downsample_minmax(steps, values, columns)
    if x.shape[0] < steps.shape[0]:
        if x[0] != steps[0] or not _same(y[0], values[0]):
            x, y = np.concatenate([steps[:1], x]), np.concatenate([values[:1], y])
        if x[-1] != steps[-1] or not _same(y[-1], values[-1]):
            x, y = np.concatenate([x, steps[-1:]]), np.concatenate([y, values[-1:]])
    return x.astype(np.float64), y.astype(np.float64)


def _same(a: float, b: float) -> bool:
    return bool(a == b or (math.isnan(a) and math.isnan(b)))


def _y_range(lines: list[ChartLine]) -> tuple[float, float]:
    finite = [line.y[np.isfinite(line.y)] for line in lines]
    finite = [f for f in finite if f.size]
    if not finite:
        return 0.0, 1.0
    lo = min(float(f.min()) for f in finite)
    hi = max(float(f.max()) for f in finite)
    if lo == hi:
        pad = abs(lo) * 0.05 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.04
    return lo - pad, hi + pad


def chart_for(run: Run, tag: str, policy: str, label: str, columns: int = PLOT_COLUMNS) -> Chart | None:
    """The chart of one tag under an overlap policy (``all``: every attempt's copy); None without points."""
    merged = [s for s in merge(preferred_series(run, tag), policy) if len(s)]
    if not merged:
        return None
    ordered = []
    for s in merged:
        if strictly_increasing(s.steps):
            ordered.append((s, s.steps, s.values))
        else:
            order = np.argsort(s.steps, kind="stable")
            ordered.append((s, s.steps[order], s.values[order]))
    x_lo = float(min(int(steps[0]) for _, steps, _ in ordered))
    x_hi = float(max(int(steps[-1]) for _, steps, _ in ordered))
    width = max(x_hi - x_lo, 1.0)
    lines = []
    for position, (s, steps, values) in enumerate(ordered):
        span = (float(steps[-1]) - float(steps[0])) / width
        x, y = _thin(steps, values, max(1, math.ceil(span * columns)))
        attempt = s.attempt if policy == "all" else None
        style = (attempt - 1) if attempt is not None else position
        name = f"attempt {attempt}" if attempt is not None else ("all attempts" if policy != "all" else f"writer {position + 1}")
        lines.append(ChartLine(attempt, style, name, x, y, len(s)))
    seams = tuple((a.first_step, a.index) for a in run.attempts[1:]
                  if a.first_step is not None and x_lo <= a.first_step <= x_hi)
    bands = tuple((r.first_step, r.last_step, r.copies) for r in run.replayed
                  if r.last_step >= x_lo and r.first_step <= x_hi)
    return Chart(label, tuple(lines), (x_lo, x_hi), _y_range(lines), seams, bands, policy)


def chart_groups(run: Run, patterns: tuple[str, ...], policy: str,
                 scrub: Callable[..., str]) -> tuple[list[ChartGroup], str]:
    """Charts of the run's tags (those matching ``patterns`` when given), grouped, and a note on what was left out."""
    tags = select_tags(run, patterns)
    drawn = tags[:MAX_CHARTS]
    groups: dict[str, list[Chart]] = {}
    for tag in drawn:
        chart = chart_for(run, tag, policy, scrub(tag))
        if chart is not None:
            groups.setdefault(scrub(group_of(tag)), []).append(chart)
    note = ""
    if len(tags) > MAX_CHARTS:
        note = (f"{len(tags) - MAX_CHARTS} more tags are not drawn (the first {MAX_CHARTS} by name are); "
                "choose tags with --tag GLOB.")
    elif patterns and not tags:
        note = "no tag matches --tag " + " ".join(scrub(p) for p in patterns) + "."
    return [ChartGroup(name, tuple(charts)) for name, charts in groups.items()], note


MAX_OVERLAY_RUNS = 24
"""Runs drawn on one overlay chart of a tree report; the others are named in a note."""
MAX_OVERLAY_TAGS = 6
"""Tags a tree report overlays (the first that match ``--tag``)."""


def overlay_line(run: Run, tag: str, style: int, label: str, columns: int = PLOT_COLUMNS) -> ChartLine | None:
    """One run's line of a tree's overlay chart: the newest copy per step (what TensorBoard's default loader
    shows), downsampled per column of the run's own span."""
    merged = [s for s in merge(preferred_series(run, tag), "newest") if len(s)]
    if not merged:
        return None
    s = merged[0]
    x, y = _thin(s.steps, s.values, columns)
    return ChartLine(None, style, label, x, y, len(s))


def overlay_chart(tag: str, lines: list[ChartLine]) -> Chart | None:
    """A tree's chart of one tag, one line per run on a shared step axis; None without lines."""
    if not lines:
        return None
    x_lo = min(float(line.x[0]) for line in lines)
    x_hi = max(float(line.x[-1]) for line in lines)
    return Chart(tag, tuple(lines), (x_lo, x_hi), _y_range(lines), (), (), "newest")
