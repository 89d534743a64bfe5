"""A plotext plot of already-downsampled lines, drawn only through its own ``plt``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from plotext._dict import color_codes as COLOR_CODES
from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from ...report.safe_text import clean

PALETTE = ("cyan", "orange", "green", "magenta", "blue", "red", "orange+", "white")
"""Line colours by index (plotext names, mapped to the terminal's palette), stable across redraws."""
MARKERS = ("braille", "•", "x", "+", "o", "*")
"""Line markers by index: each attempt (or run) also differs in shape, so lines stay apart without colour."""
MARKER_GLYPHS = {"braille": "⣿"}
"""How a marker looks in the legend line."""
SEAM = ("│", "red+")
"""(glyph, plotext colour) of a resume seam: where a later attempt's steps begin."""
REPLAY_END = ("┆", "orange+")
"""(glyph, colour) of either end of a range of steps held more than once."""
CURSOR = ("┃", "white")
"""(glyph, colour) of the cursor line: unlike seams and range ends, so the three never look alike."""


def legend_style(color: str) -> Style:
    """The Rich style of a plotext colour name: the terminal colour the plot draws it in."""
    return Style(color=Color.from_ansi(COLOR_CODES.get(color, 15)))


def join_wrapped(entries: list[Text], width: int, separator: str = "   ") -> Text:
    """Legend entries joined into lines of at most ``width`` cells, broken between entries (a longer entry
    wraps by itself)."""
    out = Text()
    used = 0
    for item in entries:
        if used and used + len(separator) + item.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(separator)
            used += len(separator)
        out.append_text(item)
        used += item.cell_len
        if used > width:  # the entry wrapped by itself: its last line is what is used
            used %= width
    return out


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

    @property
    def color(self) -> str:
        """The plotext colour of this line."""
        return PALETTE[self.color_index % len(PALETTE)]


@dataclass(frozen=True, slots=True)
class PlotSpec:
    """Everything a plot shows; replaced as a whole so drawing never sees half an update."""

    lines: tuple[PlotLine, ...] = ()
    seams: tuple[float, ...] = ()
    """x positions of resume seams, drawn as vertical lines of ``SEAM``."""
    x_label: str = "global step"
    title: str = ""
    log_y: bool = False
    empty_text: str = "no data"
    replays: tuple[tuple[int, int], ...] = ()
    """The true inclusive step ranges held more than once (whatever part of them is in view)."""
    replay_ends: tuple[float, ...] = ()
    """x positions of the ends of those ranges that lie in view, drawn as vertical lines of ``REPLAY_END``."""
    cursor: float | None = None
    """x of the cursor line (None: no cursor), drawn with ``CURSOR``."""
    x_ticks: tuple[tuple[float, ...], tuple[str, ...]] | None = None
    """Tick positions and labels for the x axis (None: plotext's own)."""
    seam_labels: tuple[tuple[float, str], ...] = ()
    """(x, text) of the labels at the top of the seams (``#2 #3`` where seams share a place), never overlapping."""


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
        try:
            shown = []
            for line in spec.lines:
                x, y = line.x, line.y
                if spec.log_y:
                    keep = y > 0
                    x, y = x[keep], y[keep]
                if x.size:
                    shown.append((line, x, y))
            if not shown:
                return Text(clean(spec.empty_text), justify="center")
            finite = [y[np.isfinite(y)] for _line, _x, y in shown]
            finite = [y for y in finite if y.size]
            if finite:
                # Vertical marks are lines of their own glyph (plotext's vline has one glyph for all), drawn
                # under the curves; the cursor goes on top.
                lo, hi = min(float(y.min()) for y in finite), max(float(y.max()) for y in finite)
                for mark in spec.replay_ends:
                    plt.plot([mark, mark], [lo, hi], marker=REPLAY_END[0], color=REPLAY_END[1])
                for mark in spec.seams:
                    plt.plot([mark, mark], [lo, hi], marker=SEAM[0], color=SEAM[1])
            for line, x, y in shown:
                # No plotext legend: it covers data; the pane prints its own legend line above the plot.
                plt.plot(x.tolist(), y.tolist(), marker=line.marker, color=line.color)
            if finite:
                for mark, label in spec.seam_labels:
                    plt.text(clean(label, newlines=False), x=mark, y=hi, color=SEAM[1], alignment="left")
                if spec.cursor is not None:
                    plt.plot([spec.cursor, spec.cursor], [lo, hi], marker=CURSOR[0], color=CURSOR[1])
            if spec.x_ticks is not None and spec.x_ticks[0]:
                plt.xticks(list(spec.x_ticks[0]), list(spec.x_ticks[1]))
            if spec.log_y:
                plt.yscale("log")
            plt.xlabel(spec.x_label)
            plt.title(clean(spec.title, newlines=False))
            return super().render()
        except Exception as exc:  # plotext edge cases (e.g. one point, constant log axis) must not crash the UI
            return Text(clean(f"cannot draw this plot: {type(exc).__name__}: {exc}"), justify="center")
