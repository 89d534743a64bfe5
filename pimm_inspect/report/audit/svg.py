"""A small SVG writer for the report's charts and attempt timelines: static markup, no script needed to read it.

Lines are told apart by dash pattern, start marker and label as well as colour (Okabe-Ito, safe for colour
blindness), so a grey print or a colour-blind reader still sees which attempt is which. Only numbers and this
module's own labels go into the SVG; anything else is escaped with ``escape``.
"""

from __future__ import annotations

import html
import math

import numpy as np

from .charts import PLOT_COLUMNS, Chart, ChartLine
from .facts import RunFacts

COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C6D1F")
DASHES = ("", "7 4", "2 3", "9 3 2 3", "4 4", "12 4", "1 5", "6 2 2 2")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "plus", "bar", "star")
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 32
WIDTH = LEFT + PLOT_COLUMNS + RIGHT
HEIGHT = 250


def escape(text: str) -> str:
    """Text for an SVG text node or attribute."""
    return html.escape(text, quote=True)


def style_of(style: int) -> tuple[str, str, str]:
    """(colour, dash pattern, marker) of a line style; patterns repeat only after 64 styles."""
    return (COLOURS[style % len(COLOURS)], DASHES[(style // len(COLOURS) + style) % len(DASHES)],
            MARKERS[style % len(MARKERS)])


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"


def nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5, 5 times a power of ten; whole numbers for steps)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    factors = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in factors if m * power >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step) * step
    ticks: list[float] = []
    value = first
    while value <= hi + step * 1e-9 and len(ticks) < 50:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def tick_label(value: float) -> str:
    """A short tick label: ``1.2e+06``, ``25000``, ``0.031``."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.2g}"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4g}"


def marker(kind: str, x: float, y: float, colour: str, size: float = 4.0) -> str:
    """A small marker shape centred on (x, y)."""
    s = size
    if kind == "circle":
        return f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(s)}" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{_num(x - s)}" y="{_num(y - s)}" width="{_num(2 * s)}" height="{_num(2 * s)}" fill="{colour}"/>'
    points = {
        "triangle": [(0, -s * 1.2), (s * 1.1, s), (-s * 1.1, s)],
        "diamond": [(0, -s * 1.3), (s * 1.1, 0), (0, s * 1.3), (-s * 1.1, 0)],
        "star": [(0, -s * 1.4), (s * 0.4, -s * 0.4), (s * 1.4, 0), (s * 0.4, s * 0.4), (0, s * 1.4),
                 (-s * 0.4, s * 0.4), (-s * 1.4, 0), (-s * 0.4, -s * 0.4)],
    }.get(kind)
    if points is not None:
        text = " ".join(f"{_num(x + dx)},{_num(y + dy)}" for dx, dy in points)
        return f'<polygon points="{text}" fill="{colour}"/>'
    if kind == "bar":
        return f'<rect x="{_num(x - s / 2)}" y="{_num(y - s * 1.4)}" width="{_num(s)}" height="{_num(2.8 * s)}" fill="{colour}"/>'
    d = (f"M{_num(x - s)} {_num(y - s)}L{_num(x + s)} {_num(y + s)}M{_num(x - s)} {_num(y + s)}L{_num(x + s)} {_num(y - s)}"
         if kind == "cross" else f"M{_num(x - s)} {_num(y)}L{_num(x + s)} {_num(y)}M{_num(x)} {_num(y - s)}L{_num(x)} {_num(y + s)}")
    return f'<path d="{d}" stroke="{colour}" stroke-width="2" fill="none"/>'


def path_data(px: np.ndarray, py: np.ndarray) -> str:
    """SVG path data through the points, broken where a coordinate is not finite (a NaN value)."""
    finite = np.isfinite(px) & np.isfinite(py)
    if not finite.any():
        return ""
    xs = np.round(px, 1).tolist()
    ys = np.round(py, 1).tolist()
    parts: list[str] = []
    pen_down = False
    for ok, x, y in zip(finite.tolist(), xs, ys):
        if not ok:
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{x:g} {y:g}")
        pen_down = True
    return "".join(parts)


def swatch(style: int, width: int = 34) -> str:
    """A legend swatch: the line's colour, dash pattern and marker."""
    colour, dash, kind = style_of(style)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<svg class="swatch" viewBox="0 0 {width} 12" width="{width}" height="12" aria-hidden="true">'
            f'<line x1="0" y1="6" x2="{width}" y2="6" stroke="{colour}" stroke-width="2"{dash_attr}/>'
            f'{marker(kind, 6, 6, colour, 3.2)}</svg>')


class Scale:
    """Step/value to pixel coordinates of a plot area."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], width: int = WIDTH,
                 height: int = HEIGHT) -> None:
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        if self.x1 <= self.x0:
            self.x0, self.x1 = self.x0 - 0.5, self.x1 + 0.5
        if self.y1 <= self.y0:
            self.y0, self.y1 = self.y0 - 0.5, self.y1 + 0.5
        self.width, self.height = width - LEFT - RIGHT, height - TOP - BOTTOM

    def x(self, step: float | np.ndarray) -> float | np.ndarray:
        return LEFT + (step - self.x0) * (self.width / (self.x1 - self.x0))

    def y(self, value: float | np.ndarray) -> float | np.ndarray:
        return TOP + (self.y1 - value) * (self.height / (self.y1 - self.y0))


def _axes(scale: Scale, height: int) -> list[str]:
    out = [f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{scale.width}" height="{scale.height}" fill="#fff" '
           'stroke="#888" stroke-width="0.6"/>']
    for value in nice_ticks(scale.y0, scale.y1, 4):
        y = float(scale.y(value))
        out.append(f'<line x1="{LEFT}" y1="{_num(y)}" x2="{LEFT + scale.width}" y2="{_num(y)}" stroke="#e4e4e4"/>'
                   f'<text x="{LEFT - 5}" y="{_num(y + 4.5)}" text-anchor="end" class="tick">{escape(tick_label(value))}</text>')
    base = TOP + scale.height
    for value in nice_ticks(scale.x0, scale.x1, 6, integer=True):
        x = float(scale.x(value))
        out.append(f'<line x1="{_num(x)}" y1="{base}" x2="{_num(x)}" y2="{base + 4}" stroke="#888"/>'
                   f'<text x="{_num(x)}" y="{base + 17}" text-anchor="middle" class="tick">{escape(tick_label(value))}</text>')
    out.append(f'<text x="{LEFT}" y="{height - 2}" class="axis">step</text>')
    return out


def _line(line: ChartLine, scale: Scale, starts: dict[tuple[int, int], int]) -> str:
    colour, dash, kind = style_of(line.style)
    d = path_data(np.asarray(scale.x(line.x)), np.asarray(scale.y(line.y)))
    if not d:
        return ""
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    who = escape(line.label)
    out = [f'<path class="series" data-series="{who}" d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"'
           f'{dash_attr} stroke-linejoin="round"/>']
    finite = np.flatnonzero(np.isfinite(line.y))
    if finite.size:
        first = int(finite[0])
        x, y = float(scale.x(line.x[first])), float(scale.y(line.y[first]))
        out.append(marker(kind, x, y, colour))
        tag = f"#{line.attempt}" if line.attempt is not None else f"w{line.style + 1}"
        spot = (round(x / 8), round(y / 8))  # lines that start at one point get their labels stacked, not overlaid
        below = starts.get(spot, 0)
        starts[spot] = below + 1
        out.append(f'<text x="{_num(x + 6)}" y="{_num(y - 6 - 13 * below)}" class="mark" fill="{colour}">'
                   f'{escape(tag)}</text>')
    return "".join(out)


def chart_svg(chart: Chart, chart_id: str, height: int = HEIGHT) -> str:
    """One tag's chart: replayed ranges hatched, resume seams as red dashed lines, one styled line per writer."""
    scale = Scale(chart.x_range, chart.y_range, WIDTH, height)
    pattern = f"hatch-{escape(chart_id)}"
    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="chart" '
           f'data-x0="{scale.x0!r}" data-x1="{scale.x1!r}" data-y0="{scale.y0!r}" data-y1="{scale.y1!r}" '
           f'data-left="{LEFT}" data-top="{TOP}" data-pw="{scale.width}" data-ph="{scale.height}">',
           f'<defs><pattern id="{pattern}" width="6" height="6" patternUnits="userSpaceOnUse" '
           f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff3c4"/>'
           f'<line x1="0" y1="0" x2="0" y2="6" stroke="#d9b44a" stroke-width="2"/></pattern></defs>']
    out += _axes(scale, height)
    for first, last, copies in chart.bands:
        x_a = float(scale.x(max(first - 0.5, scale.x0)))
        x_b = float(scale.x(min(last + 0.5, scale.x1)))
        label = f"replayed {first}-{last} ×{copies}" if x_b - x_a > 150 else f"×{copies}"
        out.append(f'<rect class="band" data-first="{first}" data-last="{last}" data-copies="{copies}" '
                   f'x="{_num(x_a)}" y="{TOP}" width="{_num(max(x_b - x_a, 1.0))}" height="{scale.height}" '
                   f'fill="url(#{pattern})" opacity="0.75" stroke="#c9a227" stroke-width="0.8"/>'
                   f'<text x="{_num((x_a + x_b) / 2)}" y="{TOP + 12}" text-anchor="middle" class="bandlabel">'
                   f'{escape(label)}</text>')
    seams: dict[int, list[int]] = {}
    for step, attempt in chart.seams:
        seams.setdefault(step, []).append(attempt)
    for step, attempts in seams.items():
        x = float(scale.x(step))
        who = " ".join(f"#{a}" for a in attempts)
        out.append(f'<line class="seam" data-step="{step}" x1="{_num(x)}" y1="{TOP}" x2="{_num(x)}" '
                   f'y2="{TOP + scale.height}" stroke="#c00" stroke-width="1" stroke-dasharray="3 2"/>'
                   f'<text x="{_num(x + 3)}" y="{TOP + scale.height - 4}" class="seamlabel">resume {who}</text>')
    starts: dict[tuple[int, int], int] = {}
    out += [_line(line, scale, starts) for line in chart.lines]
    out.append("</svg>")
    return "".join(out)


ROW = 24
"""Height of one timeline row."""
TIMELINE_ATTEMPTS = 40
"""Attempts drawn on a timeline; the attempts table lists every one."""


def timeline_svg(facts: RunFacts) -> str:
    """The attempt timeline: per attempt its logged steps (bar), lost steps (red hatch), saved steps (ticks) and
    restore point (triangle); below, the replayed ranges with their copy counts and the gaps."""
    if facts.step_range is None:
        return ""
    lo, hi = facts.step_range
    for first, last in [*((b.first_step, b.last_step) for b in facts.bands), *facts.gaps]:
        lo, hi = min(lo, first), max(hi, last)
    attempts = facts.attempts[:TIMELINE_ATTEMPTS]
    rows = len(attempts) + (1 if facts.bands else 0) + (1 if facts.gaps else 0)
    height = TOP + rows * ROW + BOTTOM
    scale = Scale((lo - 0.5, hi + 0.5), (0.0, 1.0), WIDTH, height)
    hatch = f"lost-{escape(facts.anchor)}"
    out = [f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="attempt timeline">',
           f'<defs><pattern id="{hatch}" width="5" height="5" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="5" height="5" fill="#fde0dc"/>'
           '<line x1="0" y1="0" x2="0" y2="5" stroke="#c0392b" stroke-width="2"/></pattern></defs>']

    def span(first: int, last: int) -> tuple[float, float]:
        a, b = float(scale.x(first - 0.5)), float(scale.x(last + 0.5))
        return a, max(b - a, 1.5)

    for row, attempt in enumerate(attempts):
        y = TOP + row * ROW
        colour, dash, kind = style_of(attempt.index - 1)
        out.append(f'<text x="{LEFT - 6}" y="{y + 15}" text-anchor="end" class="tick">#{attempt.index}</text>')
        if attempt.first_step is not None and attempt.last_step is not None:
            x, w = span(attempt.first_step, attempt.last_step)
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<rect class="logged" data-attempt="{attempt.index}" data-first="{attempt.first_step}" '
                       f'data-last="{attempt.last_step}" x="{_num(x)}" y="{y + 5}" width="{_num(w)}" height="13" '
                       f'fill="{colour}" fill-opacity="0.35" stroke="{colour}" stroke-width="1.5"{dash_attr}/>')
            out.append(marker(kind, x, y + 11.5, colour, 3.5))
        if attempt.lost is not None:
            x, w = span(*attempt.lost)
            out.append(f'<rect class="lost" data-first="{attempt.lost[0]}" data-last="{attempt.lost[1]}" '
                       f'x="{_num(x)}" y="{y + 8}" width="{_num(w)}" height="7" fill="url(#{hatch})"/>')
        for step in attempt.saved_steps:
            if lo <= step <= hi:
                x = float(scale.x(step))
                out.append(f'<line class="saved" data-step="{step}" x1="{_num(x)}" y1="{y + 2}" x2="{_num(x)}" '
                           f'y2="{y + 21}" stroke="#222" stroke-width="2"/>')
        if attempt.restore_step is not None and lo - 1 <= attempt.restore_step <= hi:
            x = float(scale.x(attempt.restore_step + 0.5))
            out.append(f'<polygon class="restore" data-step="{attempt.restore_step}" points="{_num(x)},{y + 4} '
                       f'{_num(x - 5)},{y - 3} {_num(x + 5)},{y - 3}" fill="#c00"/>')
    row = len(attempts)
    if facts.bands:
        y = TOP + row * ROW
        out.append(f'<text x="{LEFT - 6}" y="{y + 15}" text-anchor="end" class="tick">replayed</text>')
        for band in facts.bands:
            x, w = span(band.first_step, band.last_step)
            out.append(f'<rect class="tl-band" data-first="{band.first_step}" data-last="{band.last_step}" '
                       f'x="{_num(x)}" y="{y + 5}" width="{_num(w)}" height="13" fill="#fff3c4" stroke="#d9b44a"/>'
                       f'<text x="{_num(x + w / 2)}" y="{y + 15}" text-anchor="middle" class="bandlabel">×{band.copies}</text>')
        row += 1
    if facts.gaps:
        y = TOP + row * ROW
        out.append(f'<text x="{LEFT - 6}" y="{y + 15}" text-anchor="end" class="tick">gaps</text>')
        for first, last in facts.gaps:
            x, w = span(first, last)
            out.append(f'<rect class="gap" data-first="{first}" data-last="{last}" x="{_num(x)}" y="{y + 5}" '
                       f'width="{_num(w)}" height="13" fill="none" stroke="#c00" stroke-dasharray="3 2"/>')
    base = TOP + rows * ROW
    for value in nice_ticks(lo, hi, 6, integer=True):
        x = float(scale.x(value))
        out.append(f'<line x1="{_num(x)}" y1="{base}" x2="{_num(x)}" y2="{base + 4}" stroke="#888"/>'
                   f'<text x="{_num(x)}" y="{base + 15}" text-anchor="middle" class="tick">{escape(tick_label(value))}</text>')
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + scale.width}" y2="{base}" stroke="#888"/></svg>')
    return "".join(out)
