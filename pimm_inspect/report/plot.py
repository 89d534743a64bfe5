"""Plot scalar curves as terminal text with plotext (used by ``curves``; the TUI has its own widget)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.compare import Side
from ..analysis.curves import downsample_minmax, ema, merge, preferred_series
from ..analysis.distinct import strictly_increasing
from ..model import Run
from .plot_ticks import step_ticks, wall_ticks
from .safe_text import clean, clean_name, name_text

X_AXES = ("step", "wall", "relative")


@dataclass(frozen=True, slots=True)
class Line:
    """One drawable line: a label and x/y arrays already downsampled."""

    label: str
    x: np.ndarray
    y: np.ndarray
    attempt: int | None


def select_tags(run: Run, patterns: tuple[str, ...]) -> list[str]:
    """Tags matching any glob (all tags when none given)."""
    tags = run.tags()
    if not patterns:
        return tags
    return [t for t in tags if any(fnmatch.fnmatchcase(t, p) for p in patterns)]


def lines_for(run: Run, tag: str, policy: str = "all", smooth: float = 0.0, x_axis: str = "step",
              max_points: int = 2000, x_range: tuple[float, float] | None = None,
              attempt: int | None = None) -> list[Line]:
    """Lines to draw for one tag under an overlap policy, smoothed and downsampled.

    With ``x_range`` (inclusive, in x-axis units) only that window is kept, before downsampling,
    so a zoom shows full detail; smoothing still runs over the whole series. With ``attempt`` only the points that
    attempt wrote are drawn (the label then leaves the attempt to whoever names the line).
    """
    if x_axis not in X_AXES:
        raise ValueError(f"x axis must be one of {', '.join(X_AXES)}")
    series = preferred_series(run, tag)
    if attempt is not None:
        series = [s for s in series if s.attempt == attempt]
    merged = merge(series, policy)
    t0 = min((float(np.nanmin(s.wall_times_s)) for s in merged if len(s) and np.isfinite(s.wall_times_s).any()),
             default=0.0)
    lines = []
    for s in merged:
        if not len(s):
            continue
        # Steps in order already (the usual case): the columns are read as they are, never copied whole.
        order = None if x_axis != "step" or strictly_increasing(s.steps) else np.argsort(s.steps, kind="stable")
        values = s.values if order is None else s.values[order]
        if smooth > 0:
            values = ema(values, smooth)
        x: np.ndarray
        if x_axis == "step":
            x = s.steps if order is None else s.steps[order]  # int64 until downsampled: the same floats after
        elif x_axis == "wall":
            x = s.wall_times_s
        else:
            x = (s.wall_times_s - t0) / 3600.0
        if x_range is not None:
            window = (x >= x_range[0]) & (x <= x_range[1])
            x, values = x[window], values[window]
        x, values = downsample_minmax(x, values, max_points // 2)
        x = x.astype(np.float64)
        finite = np.isfinite(values) & np.isfinite(x)
        label = f"{tag}" + (f" (attempt {s.attempt})" if s.attempt is not None and policy == "all"
                            and attempt is None else "")
        lines.append(Line(label, x[finite], values[finite], s.attempt))
    return lines


X_LABELS = {"step": "global step", "wall": "wall clock (UTC)", "relative": "hours since the first point"}
"""The x axis in words (the wall-clock axis names its UTC days under the chart, see ``plot_ticks.wall_ticks``)."""
LINE_COLORS = ("blue", "green", "magenta", "cyan", "yellow", "blue+", "green+", "magenta+", "cyan+", "yellow+")
"""Line colours in 16-colour terms; red is kept for the resume seams."""
PLAIN_MARKERS = "".join(dict.fromkeys("•+x*o#@%&=~^" + "abcdefghijklmnopqrstuvwxyz"))
"""Without colour every line gets its own character, named in the legend."""


def _styles(count: int, color: bool) -> list[tuple[str, str | None, str]]:
    """Per line: (plot marker, colour, legend swatch), all distinct up to far more lines than fit a plot."""
    styles: list[tuple[str, str | None, str]] = []
    for i in range(count):
        if color:
            shade = LINE_COLORS[i % len(LINE_COLORS)]
            cycle = i // len(LINE_COLORS)
            marker = "braille" if cycle == 0 else PLAIN_MARKERS[(cycle - 1) % len(PLAIN_MARKERS)]
            swatch = "──" if cycle == 0 else marker * 2
            styles.append((marker, shade, swatch))
        else:
            marker = PLAIN_MARKERS[i % len(PLAIN_MARKERS)]
            styles.append((marker, None, marker * 2))
    return styles


def chart_title(run: Run, policy: str, smooth: float, x_axis: str, log_y: bool) -> str:
    """What the chart shows: the run, the x axis, the y scale, the overlap policy and the smoothing."""
    return _title(clean_name(run.name), policy, smooth, x_axis, log_y)


def _title(what: str, policy: str, smooth: float, x_axis: str, log_y: bool) -> str:
    return (f"{what}  x: {X_LABELS[x_axis]}  y: {'log' if log_y else 'linear'}  "
            f"policy={policy}" + (f"  smooth={smooth}" if smooth else ""))


def overlay_title(sides: list[Side], policy: str, smooth: float, x_axis: str, log_y: bool, width: int) -> str:
    """The title of an overlay: the sides compared (or how many, when their names do not fit), axes, policy."""
    runs = list(dict.fromkeys(side.run_label for side in sides))
    if len(runs) == 1 and all(side.attempt is not None for side in sides):
        what = f"{runs[0]} attempts {', '.join(str(side.attempt) for side in sides)}"
    else:
        what = " vs ".join(side.label for side in sides)
    what = clean(what, newlines=False)
    if len(_title(what, policy, smooth, x_axis, log_y)) > width:
        what = f"{len(sides)} {'runs' if len(runs) == len(sides) else 'sides'} (named below)"
    return _title(what, policy, smooth, x_axis, log_y)


def side_lines(sides: list[Side], tags: list[str], policy: str = "all", smooth: float = 0.0, x_axis: str = "step",
               max_points: int = 2000) -> list[tuple[Side, Line, str]]:
    """Every line of every side, with its legend text (data: cleaned when printed); one side without an attempt
    keeps the single-run labels (``tag (attempt k)``), several sides are named ``side: tag``."""
    alone = len(sides) == 1 and sides[0].attempt is None
    out = []
    for side in sides:
        for tag in tags:
            for line in lines_for(side.run, tag, policy, smooth, x_axis, max_points=max_points, attempt=side.attempt):
                out.append((side, line, line.label if alone else f"{side.label}: {line.label}"))
    return out


def empty_sides(sides: list[Side], tags: list[str]) -> list[Side]:
    """The sides with no point of any of the tags to draw (an attempt whose files do not say which points it wrote)."""
    return [side for side in sides
            if not any(len(s) and (side.attempt is None or s.attempt == side.attempt)
                       for tag in tags for s in preferred_series(side.run, tag))]


def _x_ticks(plt: Any, drawn: list[Line], x_axis: str, width: int) -> str:
    """Round ticks on the step axis (whole steps) and the wall-clock axis (UTC times); returns the axis title."""
    if x_axis == "relative" or not drawn:
        return X_LABELS[x_axis]
    lo = min(float(line.x.min()) for line in drawn)
    hi = max(float(line.x.max()) for line in drawn)
    if x_axis == "step":
        ticks, labels = step_ticks(lo, hi, max(2, width // 12))
        title = X_LABELS[x_axis]
    else:
        ticks, labels, title = wall_ticks(lo, hi, max(2, width // 16))
    if ticks:
        plt.xticks(ticks, labels)
    return title


def render(run: Run, tags: list[str], policy: str = "all", smooth: float = 0.0, x_axis: str = "step",
           width: int = 100, height: int = 24, log_y: bool = False, color: bool = True) -> str:
    """A plotext chart of one run's tags as a string, with a legend below it naming every line."""
    side = Side(run, None, name_text(run.name))
    return render_sides([side], tags, policy, smooth, x_axis, width, height, log_y, color)


def render_sides(sides: list[Side], tags: list[str], policy: str = "all", smooth: float = 0.0, x_axis: str = "step",
                 width: int = 100, height: int = 24, log_y: bool = False, color: bool = True) -> str:
    """A plotext chart of the tags of every side (a run, or one attempt of it) overlaid, with a legend below it.

    The legend is ours, not plotext's (which drops it when the lines outnumber the rows, and would print
    tags raw): labels are file-derived, so they are cleaned of control characters.
    """
    import plotext as plt  # ~0.2 s: only the curves command draws

    plt.clear_figure()
    plt.limitsize(False, False)  # honour --width/--height when stdout is not a terminal
    plt.plotsize(width, height)
    if not color:
        plt.theme("clear")
    drawn = [(line, label) for _side, line, label in side_lines(sides, tags, policy, smooth, x_axis, 2 * width)
             if line.x.size]
    styles = _styles(len(drawn), color)
    for (line, _label), (marker, shade, _swatch) in zip(drawn, styles):
        plt.plot(line.x.tolist(), line.y.tolist(), marker=marker, color=shade)
    runs = list(dict.fromkeys(side.run.root for side in sides))
    seams = [a.first_step for a in sides[0].run.attempts[1:] if a.first_step is not None] if len(runs) == 1 else []
    if x_axis == "step":
        for seam in seams:
            plt.vline(seam, "red" if color else None)
    if log_y:
        plt.yscale("log")
    axis = _x_ticks(plt, [line for line, _label in drawn], x_axis, width)
    plt.xlabel(axis + ("  (| = resume seam)" if seams and x_axis == "step" else ""))
    if len(sides) == 1 and sides[0].attempt is None:
        plt.title(chart_title(sides[0].run, policy, smooth, x_axis, log_y))
    else:
        plt.title(overlay_title(sides, policy, smooth, x_axis, log_y, width))
    chart = str(plt.build()).rstrip("\n")
    if not color:
        chart = plt.uncolorize(chart)  # plotext ends lines with a reset sequence even in its clear theme
    legend = []
    for (_line, label), (_marker, shade, swatch) in zip(drawn, styles):
        mark = plt.colorize(swatch, shade) if shade else swatch
        legend.append(f"  {mark} {clean(label, newlines=False)}")
    return chart + ("\n\n" + "\n".join(legend) if legend else "")
