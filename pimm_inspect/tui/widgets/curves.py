"""The Curves tab: a filterable tag list and one plot with policy, smoothing and axis toggles."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ...analysis.curves import POLICIES
from ...model import Run
from ...report.safe_text import clean, data_text
from ...report.plot import lines_for, preferred_series
from ..facts import compile_filter, fmt_time, policy_note
from .plot import CurvePlot, PlotLine, PlotSpec

@dataclass(frozen=True, slots=True)
class _Point:
    """One logged point under the cursor."""

    step: int
    value: float
    wall_time_s: float
    attempt: int | None
    source: str


SMOOTHING_STEPS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
"""EMA weights ``+``/``-`` step through (TensorBoard's slider range)."""

X_LABELS = {"step": "global step", "relative": "hours since start", "wall": "unix time (s)"}


@dataclass(frozen=True, slots=True)
class CurveOptions:
    """How the current tag is drawn."""

    policy: str = "all"
    smooth_index: int = 0
    x_axis: str = "step"
    log_y: bool = False
    x_range: tuple[float, float] | None = None
    """Zoomed step window (step axis only); None shows everything."""

    @property
    def smooth(self) -> float:
        """EMA weight."""
        return SMOOTHING_STEPS[self.smooth_index]


def default_tag(tags: list[str]) -> str | None:
    """The tag to show first: a training loss if there is one."""
    # The per-step loss shows a replay plainly; train/loss (epoch means) has a handful of points.
    for wanted in ("train_batch/loss", "train/loss", "loss"):
        if wanted in tags:
            return wanted
    return next((t for t in tags if "loss" in t), tags[0] if tags else None)


def build_spec(run: Run, tag: str, options: CurveOptions, width: int) -> PlotSpec:
    """Lines, seams and labels for one tag (called in a worker; downsampling happens in the core)."""
    x_range = options.x_range if options.x_axis == "step" else None
    lines = lines_for(run, tag, options.policy, options.smooth, options.x_axis, max_points=max(200, 2 * width),
                      x_range=x_range)
    plot_lines = tuple(
        PlotLine(clean(line.label, newlines=False), line.x, line.y, (line.attempt - 1) if line.attempt else 0) for line in lines)
    seams: tuple[float, ...] = ()
    if options.x_axis == "step" and options.policy == "all":
        seams = tuple(float(a.first_step) for a in run.attempts[1:] if a.first_step is not None)
    replays: tuple[tuple[float, float], ...] = ()
    if options.x_axis == "step":
        replays = tuple((float(f.steps[0]), float(f.steps[1])) for f in run.findings
                        if f.code == "steps.replayed" and f.steps)
    if x_range is not None:
        seams = tuple(x for x in seams if x_range[0] <= x <= x_range[1])
        replays = tuple((max(a, x_range[0]), min(b, x_range[1]))
                        for a, b in replays if b >= x_range[0] and a <= x_range[1])
    title = f"{tag}  policy={options.policy}" + (f"  smooth={options.smooth:g}" if options.smooth else "")
    if x_range is not None:
        title += f"  zoom {int(x_range[0])}-{int(x_range[1])}"
    if replays:
        title += "  replayed " + ", ".join(f"{int(a)}-{int(b)}" for a, b in replays)
    return PlotSpec(plot_lines, seams, X_LABELS[options.x_axis], clean(title, newlines=False), options.log_y,
                    empty_text=clean(f"no finite points for {tag}", newlines=False), replays=replays)


class CurvesPane(Vertical):
    """Tag list on the left, plot on the right; the screen sets the run and the options."""

    class Drawn(Message):
        """A worker finished computing the lines for a tag."""

        def __init__(self, spec: PlotSpec, generation: int) -> None:
            super().__init__()
            self.spec = spec
            self.generation = generation

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: Run | None = None
        self.options = CurveOptions()
        self.tag: str | None = None
        self._generation = 0
        self.cursor_x: float | None = None
        """Step (or x) under the cursor, moved with , and . along the drawn points."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="tag-column"):
                yield Input(placeholder="/ filter tags", id="tag-filter")
                yield OptionList(id="tag-list")
            with Vertical(id="plot-column"):
                yield Static("", id="curve-status", markup=False)
                yield Static("", id="policy-note", markup=False)
                yield CurvePlot(id="curve-plot")
                yield Static("", id="curve-cursor", markup=False)

    def set_run(self, run: Run) -> None:
        """Show a run's tags and draw its default tag."""
        self.run = run
        tags = run.tags()
        if self.tag not in tags:
            self.tag = default_tag(tags)
        self._fill_tags()
        self.redraw()

    def set_options(self, options: CurveOptions) -> None:
        """Change how the tag is drawn and redraw."""
        self.options = options
        self.redraw()

    def toggle_zoom(self) -> None:
        """Zoom to the first replayed, rolled-back or missing step range, or back out."""
        if self.options.x_range is not None:
            self.set_options(replace(self.options, x_range=None))
            return
        spans = [f.steps for f in (self.run.findings if self.run else ())
                 if f.steps and f.code in ("steps.replayed", "resume.rollback", "steps.gap", "metrics.non-finite")]
        if not spans:
            self.app.notify("nothing to zoom to: no replayed or missing step range", severity="warning")
            return
        self.focus_steps(*spans[0])

    def focus_steps(self, first: int, last: int) -> None:
        """Show a step range with some context on both sides (used by findings too)."""
        margin = max((last - first) // 2, 5)
        self.set_options(replace(self.options, x_axis="step", x_range=(float(max(first - margin, 0)),
                                                                         float(last + margin))))
        self.cursor_x = float(first)

    def move_cursor(self, delta: int) -> None:
        """Move the cursor to the next/previous drawn x position and describe the points there."""
        spec = self.query_one(CurvePlot).spec
        xs = np.unique(np.concatenate([line.x for line in spec.lines])) if spec.lines else np.zeros(0)
        if not xs.size:
            return
        if self.cursor_x is None:
            index = 0 if delta > 0 else xs.size - 1
        elif delta > 0:
            index = int(np.searchsorted(xs, self.cursor_x, side="right"))  # first x after the cursor
        else:
            index = int(np.searchsorted(xs, self.cursor_x, side="left")) - 1  # last x before it
        index = min(max(index, 0), xs.size - 1)
        self.cursor_x = float(xs[index])
        self._show_cursor()

    def cursor_point(self) -> tuple[int, int | None] | None:
        """(step, attempt) under the cursor, for jumping to the log."""
        if self.cursor_x is None or self.options.x_axis != "step":
            return None
        attempts = [p.attempt for p in self._points_at(self.cursor_x)]
        return int(self.cursor_x), (attempts[-1] if attempts else None)

    def _points_at(self, step: float):
        """Raw points of the tag at a step, from its preferred source (every attempt's copy)."""
        if self.run is None or self.tag is None or self.options.x_axis != "step":
            return []
        found = []
        for series in preferred_series(self.run, self.tag):
            hits = np.flatnonzero(series.steps == int(step))
            for i in hits:
                found.append(_Point(int(series.steps[i]), float(series.values[i]), float(series.wall_times_s[i]),
                                    series.attempt, series.source))
        return found

    def _show_cursor(self) -> None:
        plot = self.query_one(CurvePlot)
        plot.show(replace(plot.spec, cursor=self.cursor_x))
        readout = self.query_one("#curve-cursor", Static)
        if self.cursor_x is None:
            readout.update("")
            return
        parts = [f"x {self.cursor_x:g}"]
        for line in plot.spec.lines:
            if line.x.size:
                j = int(np.argmin(np.abs(line.x - self.cursor_x)))
                parts.append(f"{line.label}: {line.y[j]:.6g}" + (" (smoothed)" if self.options.smooth else ""))
        for p in self._points_at(self.cursor_x):
            when = fmt_time(p.wall_time_s) if np.isfinite(p.wall_time_s) else "-"
            who = f"attempt {p.attempt}" if p.attempt is not None else "-"
            parts.append(f"raw {p.value:.6g} @ {when} {who} [{p.source}]")
        readout.update(clean("  ".join(parts) + "   (l: log line)"))

    def _update_note(self) -> None:
        if self.run is not None:
            self.query_one("#policy-note", Static).update(clean(policy_note(self.run, self.options.policy)))

    def cycle_policy(self) -> None:
        """all -> newest -> oldest -> all."""
        nxt = POLICIES[(POLICIES.index(self.options.policy) + 1) % len(POLICIES)]
        self.set_options(replace(self.options, policy=nxt))

    def change_smoothing(self, delta: int) -> None:
        """Step the EMA weight up or down."""
        index = min(max(self.options.smooth_index + delta, 0), len(SMOOTHING_STEPS) - 1)
        self.set_options(replace(self.options, smooth_index=index))

    def cycle_x_axis(self) -> None:
        """step -> relative -> wall -> step."""
        order = ("step", "relative", "wall")
        self.set_options(replace(self.options, x_axis=order[(order.index(self.options.x_axis) + 1) % len(order)]))

    def toggle_log_y(self) -> None:
        """Linear or logarithmic y axis."""
        self.set_options(replace(self.options, log_y=not self.options.log_y))

    def focus_filter(self) -> None:
        """Put the cursor in the tag filter."""
        self.query_one("#tag-filter", Input).focus()

    def _fill_tags(self) -> None:
        tags = self.run.tags() if self.run else []
        keep = compile_filter(self.query_one("#tag-filter", Input).value)
        shown = [t for t in tags if keep(t)]
        option_list = self.query_one("#tag-list", OptionList)
        option_list.clear_options()
        option_list.add_options([Option(data_text(t, newlines=False), id=t) for t in shown])
        if self.tag in shown:
            option_list.highlighted = shown.index(self.tag)

    @on(Input.Changed, "#tag-filter")
    def _filter_changed(self) -> None:
        self._fill_tags()

    @on(Input.Submitted, "#tag-filter")
    def _filter_submitted(self) -> None:
        self.query_one("#tag-list", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#tag-list")
    @on(OptionList.OptionSelected, "#tag-list")
    def _tag_chosen(self, event: OptionList.OptionHighlighted | OptionList.OptionSelected) -> None:
        tag = event.option.id
        if tag and tag != self.tag:
            self.tag = tag
            self.redraw()

    def redraw(self) -> None:
        """Recompute the lines for the current tag in a worker."""
        self._generation += 1
        status = self.query_one("#curve-status", Static)
        opts = self.options
        status.update(clean(
            f"{self.tag or '(no scalar tags)'}  policy {opts.policy} · smooth {opts.smooth:g} · x {opts.x_axis}"
            + (" · log y" if opts.log_y else ""), newlines=False))
        self._update_note()
        if self.run is None or self.tag is None:
            self.query_one(CurvePlot).show(PlotSpec(empty_text="this run has no scalar curves"))
            return
        width = self.query_one(CurvePlot).size.width or 100
        self._compute(self.run, self.tag, opts, width, self._generation)

    @work(thread=True, exclusive=True, group="curves")
    def _compute(self, run: Run, tag: str, options: CurveOptions, width: int, generation: int) -> None:
        try:
            spec = build_spec(run, tag, options, width)
        except Exception as exc:  # a bad series must show as a message, not a traceback
            spec = PlotSpec(empty_text=clean(f"cannot draw {tag}: {type(exc).__name__}: {exc}"))
        self.post_message(self.Drawn(spec, generation))

    def on_curves_pane_drawn(self, message: Drawn) -> None:
        """Show the newest computed spec (older ones are dropped)."""
        message.stop()
        if message.generation == self._generation:
            self.query_one(CurvePlot).show(message.spec)
            if self.cursor_x is not None:
                self._show_cursor()
