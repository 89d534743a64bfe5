"""A plotext plot of already-downsampled lines, drawn only through its own ``plt``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from ...report.safe_text import clean

PALETTE = ("cyan", "orange", "green", "magenta", "blue", "red", "yellow", "white")
"""Line colours by index (plotext names, mapped to the terminal's palette), stable across redraws."""
MARKERS = ("braille", "•", "x", "+", "o", "*")
"""Line markers by index: each attempt (or run) also differs in shape, so lines stay apart without colour."""
MARKER_GLYPHS = {"braille": "⣿"}
"""How a marker looks in the legend line."""


@dataclass(frozen=True, slots=True)
class PlotLine:
    """One line to draw: label, x/y arrays (already downsampled) and a colour index."""

    label: str
    x: np.ndarray
    y: np.ndarray
    color_index: int
    marker_index: int = -1
    """Index into MARKERS; -1 uses color_index."""

    @property
    def marker(self) -> str:
        """The plotext marker of this line."""
        index = self.color_index if self.marker_index < 0 else self.marker_index
        return MARKERS[index % len(MARKERS)]

    @property
    def glyph(self) -> str:
        """The character the legend shows for this line."""
        return MARKER_GLYPHS.get(self.marker, self.marker)


@dataclass(frozen=True, slots=True)
class PlotSpec:
    """Everything a plot shows; replaced as a whole so drawing never sees half an update."""

    lines: tuple[PlotLine, ...] = ()
    seams: tuple[float, ...] = ()
    """x positions of resume seams, drawn as vertical lines."""
    x_label: str = "global step"
    title: str = ""
    log_y: bool = False
    empty_text: str = "no data"
    replays: tuple[tuple[float, float], ...] = ()
    """Inclusive x ranges written by more than one attempt, marked by a pair of vertical lines."""
    cursor: float | None = None
    """x of the cursor line (None: no cursor)."""
    x_ticks: tuple[tuple[float, ...], tuple[str, ...]] | None = None
    """Tick positions and labels for the x axis (None: plotext's own)."""
    seam_labels: tuple[str, ...] = ()
    """A label per seam (``#2``), written at the top of its line."""


class CurvePlot(PlotextPlot):
    """Draws a PlotSpec; never loops over more points than the lines it is given."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.spec = PlotSpec()

    def show(self, spec: PlotSpec) -> None:
        """Replace what the plot shows."""
        self.spec = spec
        self.refresh()

    def render(self) -> RenderResult:
        """Draw the spec with plotext; a drawing error becomes a one-line message, not a traceback."""
        spec = self.spec
        plt = self.plt
        plt.clear_figure()
        drawn = 0
        try:
            for line in spec.lines:
                x, y = line.x, line.y
                if spec.log_y:
                    keep = y > 0
                    x, y = x[keep], y[keep]
                if not x.size:
                    continue
                # No plotext legend: it covers data; the pane prints its own legend line above the plot.
                plt.plot(x.tolist(), y.tolist(), marker=line.marker, color=PALETTE[line.color_index % len(PALETTE)])
                drawn += 1
            if not drawn:
                return Text(clean(spec.empty_text), justify="center")
            for first, last in spec.replays:
                plt.vline(first, "yellow")
                plt.vline(last, "yellow")
            top = max(float(np.nanmax(line.y)) for line in spec.lines if line.y.size)
            for i, seam in enumerate(spec.seams):
                plt.vline(seam, "red")
                if i < len(spec.seam_labels):
                    plt.text(clean(spec.seam_labels[i], newlines=False), x=seam, y=top, color="red")
            if spec.x_ticks is not None and spec.x_ticks[0]:
                plt.xticks(list(spec.x_ticks[0]), list(spec.x_ticks[1]))
            if spec.cursor is not None:
                plt.vline(spec.cursor, "white")
            if spec.log_y:
                plt.yscale("log")
            plt.xlabel(spec.x_label)
            plt.title(clean(spec.title, newlines=False))
            return super().render()
        except Exception as exc:  # plotext edge cases (e.g. one point, constant log axis) must not crash the UI
            return Text(clean(f"cannot draw this plot: {type(exc).__name__}: {exc}"), justify="center")
