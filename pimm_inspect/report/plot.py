"""Plot scalar curves as terminal text with plotext (used by ``curves``; the TUI has its own widget)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np

from ..analysis.curves import downsample_minmax, ema, merge, preferred_series
from ..model import Run

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
              max_points: int = 2000, x_range: tuple[float, float] | None = None) -> list[Line]:
    """Lines to draw for one tag under an overlap policy, smoothed and downsampled.

    With ``x_range`` (inclusive, in x-axis units) only that window is kept, before downsampling,
    so a zoom shows full detail; smoothing still runs over the whole series.
    """
    if x_axis not in X_AXES:
        raise ValueError(f"x axis must be one of {', '.join(X_AXES)}")
    merged = merge(preferred_series(run, tag), policy)
    t0 = min((float(np.nanmin(s.wall_times_s)) for s in merged if len(s) and np.isfinite(s.wall_times_s).any()),
             default=0.0)
    lines = []
    for s in merged:
        if not len(s):
            continue
        order = np.argsort(s.steps, kind="stable") if x_axis == "step" else np.arange(len(s))
        values = s.values[order]
        if smooth > 0:
            values = ema(values, smooth)
        if x_axis == "step":
            x = s.steps[order].astype(np.float64)
        elif x_axis == "wall":
            x = s.wall_times_s[order]
        else:
            x = (s.wall_times_s[order] - t0) / 3600.0
        if x_range is not None:
            window = (x >= x_range[0]) & (x <= x_range[1])
            x, values = x[window], values[window]
        x, values = downsample_minmax(x, values, max_points // 2)
        finite = np.isfinite(values) & np.isfinite(x)
        label = f"{tag}" + (f" (attempt {s.attempt})" if s.attempt is not None and policy == "all" else "")
        lines.append(Line(label, x[finite], values[finite], s.attempt))
    return lines


def render(run: Run, tags: list[str], policy: str = "all", smooth: float = 0.0, x_axis: str = "step",
           width: int = 100, height: int = 24, log_y: bool = False, color: bool = True) -> str:
    """A plotext chart of the tags as a string."""
    import plotext as plt  # ~0.2 s: only the curves command draws

    plt.clear_figure()
    plt.plotsize(width, height)
    if not color:
        plt.theme("clear")
    for tag in tags:
        for line in lines_for(run, tag, policy, smooth, x_axis, max_points=2 * width):
            if line.x.size:
                plt.plot(line.x.tolist(), line.y.tolist(), label=line.label, marker="braille")
    seams = [a.first_step for a in run.attempts[1:] if a.first_step is not None]
    if x_axis == "step":
        for seam in seams:
            plt.vline(seam, "red" if color else None)
    if log_y:
        plt.yscale("log")
    plt.xlabel({"step": "global step", "wall": "unix time (s)", "relative": "hours since start"}[x_axis])
    plt.title(f"{run.name}  policy={policy}" + (f"  smooth={smooth}" if smooth else ""))
    return plt.build()
