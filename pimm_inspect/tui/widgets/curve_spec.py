"""What the Curves tab draws for one tag: lines, markers, seams, ticks, the legend and the cursor readout."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...model import Run
from ...analysis.curves import preferred_series
from ...report.plot import lines_for
from ...report.safe_text import clean
from ..facts import attempt_marks
from ..axes import fmt_wall, relative_unit, step_ticks, value_ticks, wall_ticks
from .plot import PlotLine, PlotSpec

SMOOTHING_STEPS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
"""EMA weights ``+``/``-`` step through (TensorBoard's slider range)."""
STALE_COLOR = 7
"""Palette index of lines from stale event files (drawn apart from the run's own attempts)."""


@dataclass(frozen=True, slots=True)
class CurveOptions:
    """How the current tag is drawn."""

    policy: str = "all"
    smooth_index: int = 0
    x_axis: str = "step"
    log_y: bool = False
    x_range: tuple[float, float] | None = None
    """Zoomed step window (step axis only); None shows everything."""
    show_stale: bool = False
    """Draw series from stale event files (an earlier run's leftovers), apart and labelled."""

    @property
    def smooth(self) -> float:
        """EMA weight."""
        return SMOOTHING_STEPS[self.smooth_index]


@dataclass(frozen=True, slots=True)
class Point:
    """One logged point under the cursor."""

    step: int
    value: float
    wall_time_s: float
    attempt: int | None
    source: str


def stale_sources(run: Run) -> set[str]:
    """Event files left by an earlier run in this folder (``EventFileFacts.stale``, the one stale rule)."""
    return {f.path for f in run.event_files if f.stale}


def without(run: Run, sources: set[str]) -> Run:
    """The run without the series of ``sources``."""
    if not sources:
        return run
    return dataclasses.replace(run, series=tuple(s for s in run.series if s.source not in sources))


def only(run: Run, sources: set[str]) -> Run:
    """The run with only the series of ``sources``."""
    return dataclasses.replace(run, series=tuple(s for s in run.series if s.source in sources))


def replayed_ranges(run: Run) -> list[tuple[int, int]]:
    """Every step range held more than once (``Run.replayed``, set by analysis), in step order."""
    return sorted((r.first_step, r.last_step) for r in run.replayed)


def zoom_targets(run: Run) -> list[tuple[int, int, str]]:
    """What ``z`` zooms to, in turn: every replayed range at once (their union), then each rolled-back,
    unlogged or non-finite range a finding names; (first, last, what)."""
    targets = []
    if run.replayed:
        targets.append((min(r.first_step for r in run.replayed), max(r.last_step for r in run.replayed), "replayed"))
    what = {"resume.rollback": "rolled back", "steps.gap": "not logged", "metrics.non-finite": "non-finite"}
    for f in run.findings:
        if f.steps and f.code in what:
            target = (int(f.steps[0]), int(f.steps[1]), what[f.code])
            if target[:2] not in [t[:2] for t in targets]:  # one stop per range, whatever else it is
                targets.append(target)
    return targets


def seam_label_places(seams: list[tuple[float, int]], lo: float, hi: float,
                      cells: int) -> tuple[tuple[float, str], ...]:
    """(x, text) of the seam labels: seams closer than their label's width share one (``#2 #3``), and a label
    never runs past either end of the axis."""
    per_cell = max(hi - lo, 1e-9) / max(cells, 1)
    groups: list[tuple[float, list[int]]] = []
    for x, index in sorted(seams):
        if groups and (x - groups[-1][0]) / per_cell < len(attempt_marks(groups[-1][1])) + 1:
            groups[-1][1].append(index)
        else:
            groups.append((x, [index]))
    places = []
    for x, members in groups:
        text = attempt_marks(members)
        places.append((max(min(x, hi - len(text) * per_cell), lo), text))
    return tuple(places)


def build_spec(run: Run, tag: str, options: CurveOptions, width: int) -> PlotSpec:
    """Lines, seams, ticks and labels for one tag (called in a worker; downsampling happens in the core)."""
    stale = stale_sources(run)
    own = without(run, stale)
    x_range = options.x_range if options.x_axis == "step" else None
    max_points = max(200, 2 * width)
    lines = lines_for(own, tag, options.policy, options.smooth, options.x_axis, max_points=max_points,
                      x_range=x_range)
    plot_lines = [PlotLine(clean(_attempt_label(line.label, line.attempt), newlines=False), line.x, line.y,
                           (line.attempt - 1) if line.attempt else 0) for line in lines]
    if options.show_stale and stale:
        for index, line in enumerate(lines_for(only(run, stale), tag, "all", options.smooth, options.x_axis,
                                               max_points=max_points, x_range=x_range)):
            plot_lines.append(PlotLine("stale file (earlier run)", line.x, line.y, STALE_COLOR, 5 - index % 2))
    lo_view, hi_view = x_range if x_range is not None else (-np.inf, np.inf)
    seams: list[tuple[float, int]] = []
    if options.x_axis == "step" and options.policy == "all":
        seams = [(float(a.first_step), a.index) for a in run.attempts[1:]
                 if a.first_step is not None and lo_view <= a.first_step <= hi_view]
    replays: tuple[tuple[int, int], ...] = ()
    ends: tuple[float, ...] = ()
    if options.x_axis == "step":
        replays = tuple(replayed_ranges(run))
        ends = tuple(sorted({float(x) for r in replays for x in r if lo_view <= x <= hi_view}))
    x_label, ticks, plot_lines = axis_for(options.x_axis, plot_lines, width)
    xs = [float(v) for line in plot_lines if line.x.size for v in (line.x.min(), line.x.max())]
    xs += [x for x, _ in seams]
    labels = seam_label_places(seams, min(xs), max(xs), max(width - 10, 10)) if seams and xs else ()
    title = ""  # the status line above the plot names tag, policy, smoothing and zoom
    empty = f"no finite points for {tag}"
    if options.x_axis != "step" and not any(np.isfinite(s.wall_times_s).any() for s in preferred_series(own, tag)):
        empty = f"{tag}: the run records no wall times for its points, so only the step axis can draw it (x)"
    return PlotSpec(tuple(plot_lines), tuple(x for x, _ in seams), x_label, title, options.log_y,
                    empty_text=clean(empty, newlines=False), replays=replays,
                    replay_ends=ends, x_ticks=ticks, seam_labels=labels)


def _attempt_label(label: str, attempt: int | None) -> str:
    return f"attempt {attempt}" if attempt is not None and "(attempt" in label else label


def axis_for(x_axis: str, lines: list[PlotLine],
          width: int) -> tuple[str, tuple[tuple[float, ...], tuple[str, ...]] | None, list[PlotLine]]:
    """(x label, ticks, lines) for the axis: integer steps, relative time in a readable unit, local clock."""
    xs = [line.x for line in lines if line.x.size]
    if not xs:
        return {"step": "global step", "relative": "time since start", "wall": "wall time"}[x_axis], None, lines
    lo, hi = min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)
    target = max(3, min(8, width // 14))
    if x_axis == "step":
        ticks, labels = step_ticks(lo, hi, target)
        return "global step", (tuple(ticks), tuple(labels)), lines
    if x_axis == "wall":
        ticks, labels, label = wall_ticks(lo, hi, target)
        return label, (tuple(ticks), tuple(labels)), lines
    # Relative: lines_for gives hours; rescale to the unit that suits the span.
    seconds, unit = relative_unit((hi - lo) * 3600.0)
    factor = 3600.0 / seconds
    scaled = [dataclasses.replace(line, x=line.x * factor) for line in lines]
    ticks, labels = value_ticks(lo * factor, hi * factor, target)
    return f"{unit} since start", (tuple(ticks), tuple(labels)), scaled


def points_at(run: Run, tag: str, step: int, show_stale: bool) -> list[Point]:
    """Raw points of the tag at exactly ``step``, from its preferred source (every attempt's copy)."""
    stale = stale_sources(run)
    source_run = run if show_stale else without(run, stale)
    found = []
    for series in preferred_series(source_run, tag):
        for i in np.flatnonzero(series.steps == int(step)):
            found.append(Point(int(series.steps[i]), float(series.values[i]), float(series.wall_times_s[i]),
                               series.attempt, series.source))
    return found


def readout_fields(spec: PlotSpec, cursor: float, x_axis: str, smooth: float, points: list[Point],
                   wide: bool) -> list[str]:
    """The cursor readout, one field per drawn series that has a point at the cursor (never a neighbour's)."""
    if x_axis == "step":
        fields = [f"step {int(cursor)}"]
        day = ""
        for p in points:
            who = f"#{p.attempt}" if p.attempt is not None else "value"
            when = fmt_wall(p.wall_time_s) if np.isfinite(p.wall_time_s) else "-"
            if not wide and when != "-":
                # Narrow: the date once, then the time of day (always with its zone) while the date stays.
                when, day = (when[11:] if when[:10] == day else when), when[:10]
            field = f"{who} {p.value:.6g} {when}"
            if wide:
                field += f" [{p.source}]"
            fields.append(field)
        if smooth:
            for line in spec.lines:
                hit = np.flatnonzero(line.x == cursor)
                if hit.size:
                    fields.append(f"{line.label} smoothed {line.y[hit[0]]:.6g}")
        if len(fields) == 1:
            fields.append("no point at this step")
        return fields
    fields = [f"x {cursor:g}"]
    for line in spec.lines:
        if line.x.size and line.x.min() <= cursor <= line.x.max():
            j = int(np.argmin(np.abs(line.x - cursor)))
            fields.append(f"{line.label} {line.y[j]:.6g}")
    return fields


def wrap_fields(fields: list[str], width: int, separator: str = "  │ ") -> str:
    """Join fields into lines of at most ``width`` cells, breaking only between fields."""
    lines: list[str] = []
    current = ""
    for field in fields:
        candidate = field if not current else current + separator + field
        if current and len(candidate) > width:
            lines.append(current)
            current = field
        else:
            current = candidate
    if current:
        lines.append(current)
    return "\n".join(lines)
