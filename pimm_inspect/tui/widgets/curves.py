"""The Curves tab: a filterable tag list and one plot with policy, smoothing and axis toggles."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ...analysis.curves import POLICIES
from ...model import Run
from ...analysis.curves import preferred_series
from ...report.safe_text import clean, data_text, elide
from ...analysis.summary import POLICY_HERE, policy_note
from ..facts import attempt_marks, compile_filter, fmt_range, replayed_text
from .curve_spec import (SMOOTHING_STEPS, CurveOptions, Point, build_spec, points_at, readout_fields, replayed_ranges,
                         stale_sources, wrap_fields, zoom_targets)
from .plot import CURSOR, REPLAY_END, SEAM, CurvePlot, PlotSpec, join_wrapped, legend_style

SHORT_SCREEN = 30
"""Below this many rows the policy note is cut to its first sentence (at a sentence end, never mid-word)."""
X_LABELS = {"step": "global step", "relative": "time since start", "wall": "wall time"}
__all__ = ["CurveOptions", "CurvesPane", "SMOOTHING_STEPS", "X_LABELS", "build_spec", "default_tag"]


def default_tag(tags: list[str]) -> str | None:
    """The tag to show first: a training loss if there is one."""
    # The per-step loss shows a replay plainly; train/loss (epoch means) has a handful of points.
    for wanted in ("train_batch/loss", "train/loss", "loss"):
        if wanted in tags:
            return wanted
    return next((t for t in tags if "loss" in t), tags[0] if tags else None)


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
        """Step (or x) under the cursor, moved with , and . by one plot column."""
        self.zoom_index = -1
        """Which of ``zoom_targets`` the zoom shows (-1: a zoom not chosen by ``z``, or none)."""
        self.no_tag_text = ""
        """What the plot says when the tag filter hides every tag."""
        self.pending: str | None = None
        """Set while the run shown is not read or checked in full (``set_run``): what the note says instead."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="tag-column"):
                yield Input(placeholder="/ filter tags", id="tag-filter")
                yield OptionList(id="tag-list")
            with Vertical(id="plot-column"):
                yield Static("", id="curve-status", markup=False)
                yield Static("", id="policy-note", markup=False)
                yield Static("", id="curve-legend", markup=False)
                yield CurvePlot(id="curve-plot")
                yield Static("", id="curve-cursor", markup=False)

    def on_resize(self) -> None:
        """The legend, note and readout wrap to the width (the tab may have been hidden, at width 0, when drawn)."""
        if self.run is not None:
            self._update_note()
            self._update_legend(self.query_one(CurvePlot).spec)
            if self.cursor_x is not None:
                self._show_cursor()

    def set_run(self, run: Run, pending: str | None = None) -> None:
        """Show a run's tags and draw its default tag. ``pending``: the run is not read or checked in full yet (a
        preview of what was read so far, or the checks still running); it is said in place of the policy note, and
        nothing about replayed ranges is claimed until a run without it comes."""
        self.run = run
        self.pending = pending
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
        """Zoom to every replayed range at once, then (repeated ``z``) to each other range a finding names, then out."""
        if self.pending is not None:
            self.app.notify("the run is still being read: the ranges to zoom to come once it is read and checked",
                            severity="information")
            return
        targets = zoom_targets(self.run) if self.run is not None else []
        if not targets:
            self.app.notify("nothing to zoom to: no replayed, rolled-back or unlogged step range", severity="warning")
            return
        index = self.zoom_index + 1 if self.options.x_range is not None else 0
        if index >= len(targets):
            self.zoom_index = -1
            self.set_options(replace(self.options, x_range=None))
            return
        self.zoom_index = index
        first, last, _what = targets[index]
        self.focus_steps(first, last, keep_zoom_index=True)

    def toggle_stale(self) -> None:
        """Show or hide the series of stale event files (an earlier run's leftovers in this folder)."""
        if self.run is None or not stale_sources(self.run):
            self.app.notify("no stale event file in this run", severity="information")
            return
        self.set_options(replace(self.options, show_stale=not self.options.show_stale))

    def focus_steps(self, first: int, last: int, keep_zoom_index: bool = False) -> None:
        """Show a step range with some context on both sides (used by findings too); the cursor on its first
        logged step."""
        if not keep_zoom_index:
            self.zoom_index = -1
        margin = max((last - first) // 2, 5)
        self.set_options(replace(self.options, x_axis="step", x_range=(float(max(first - margin, 0)),
                                                                         float(last + margin))))
        self.cursor_x = self._logged_step(first, last)

    def _logged_step(self, first: int, last: int) -> float:
        """The first step of [first, last] the tag has a point at (else the nearest one): the cursor never
        rests where nothing was logged."""
        steps = [s.steps for s in preferred_series(self.run, self.tag)] if self.run and self.tag else []
        steps = [x for x in steps if x.size]
        if not steps:
            return float(first)
        every = np.unique(np.concatenate(steps))
        inside = every[(every >= first) & (every <= last)]
        if inside.size:
            return float(inside[0])
        return float(every[int(np.argmin(np.abs(every - first)))])

    def _xs(self) -> np.ndarray:
        spec = self.query_one(CurvePlot).spec
        return np.unique(np.concatenate([line.x for line in spec.lines])) if spec.lines else np.zeros(0)

    def move_cursor(self, delta: int) -> None:
        """Move the cursor by one plot column (not one point: a long run has hundreds per column)."""
        xs = self._xs()
        if not xs.size:
            return
        if self.cursor_x is None:
            self.cursor_x = float(xs[0] if delta > 0 else xs[-1])
            self._show_cursor()
            return
        columns = max(self.query_one(CurvePlot).size.width - 10, 10)  # minus the y tick labels
        column = (float(xs[-1]) - float(xs[0])) / columns
        target = self.cursor_x + delta * column
        if delta > 0:
            index = int(np.searchsorted(xs, target, side="left"))
            index = max(index, int(np.searchsorted(xs, self.cursor_x, side="right")))  # at least the next point
        else:
            index = int(np.searchsorted(xs, target, side="right")) - 1
            index = min(index, int(np.searchsorted(xs, self.cursor_x, side="left")) - 1)
        self.cursor_x = float(xs[min(max(index, 0), xs.size - 1)])
        self._show_cursor()

    def cursor_to_end(self, last: bool) -> None:
        """Home/End: the first or last drawn point."""
        xs = self._xs()
        if not xs.size:
            return
        self.cursor_x = float(xs[-1] if last else xs[0])
        if self.options.x_axis == "step" and self.run is not None and self.tag is not None:
            # The drawn points are downsampled: Home/End go to the first/last step really logged (in the zoom).
            lo, hi = self.options.x_range or (-np.inf, np.inf)
            steps = [s.steps[(s.steps >= lo) & (s.steps <= hi)] for s in preferred_series(self.run, self.tag)]
            steps = [x for x in steps if x.size]
            if steps:
                self.cursor_x = float(max(x.max() for x in steps) if last else min(x.min() for x in steps))
        self._show_cursor()

    def cursor_to_replay(self) -> None:
        """Jump the cursor to the start of the next replayed range (wrapping), zooming out if it is off screen."""
        ranges = replayed_ranges(self.run) if self.run is not None else []
        if not ranges:
            self.app.notify("no replayed steps in this run", severity="information")
            return
        starts = [(self._logged_step(a, b), a, b) for a, b in ranges]
        after = [x for x in starts if self.cursor_x is None or x[0] > self.cursor_x]
        target, first, last = after[0] if after else starts[0]
        if self.options.x_axis != "step" or (self.options.x_range is not None
                                             and not self.options.x_range[0] <= target <= self.options.x_range[1]):
            self.zoom_index = -1
            self.set_options(replace(self.options, x_axis="step", x_range=None))
        self.cursor_x = target
        self._show_cursor()

    def cursor_point(self) -> tuple[int, int | None] | None:
        """(step, attempt) under the cursor, for jumping to the log."""
        if self.cursor_x is None or self.options.x_axis != "step":
            return None
        attempts = [p.attempt for p in self._points_at(self.cursor_x)]
        return int(self.cursor_x), (attempts[-1] if attempts else None)

    def _points_at(self, step: float) -> list[Point]:
        """Raw points of the tag at exactly this step (every attempt's copy; none from a neighbouring step)."""
        if self.run is None or self.tag is None or self.options.x_axis != "step":
            return []
        return points_at(self.run, self.tag, int(step), self.options.show_stale)

    def _show_cursor(self) -> None:
        plot = self.query_one(CurvePlot)
        plot.show(replace(plot.spec, cursor=self.cursor_x))
        self._update_legend(plot.spec)
        readout = self.query_one("#curve-cursor", Static)
        if self.cursor_x is None:
            readout.update("")
            return
        width = max(self.query_one("#plot-column").size.width - 2, 20)
        fields = readout_fields(plot.spec, self.cursor_x, self.options.x_axis, self.options.smooth,
                                self._points_at(self.cursor_x), wide=width >= 140)
        text = wrap_fields(fields, width)
        if self.options.x_axis == "step":
            with_hint = wrap_fields(fields + ["l: log line"], width)
            text = with_hint if with_hint.count("\n") == text.count("\n") else text  # the hint never costs a row
        readout.update(clean(text))

    def _update_note(self) -> None:
        if self.run is not None and not self.run.tags():
            self.query_one("#policy-note", Static).update("")  # no curves: nothing was written twice, or once
        elif self.run is not None and self.pending is not None:
            self.query_one("#policy-note", Static).update(clean(self.pending))  # no claim about replays yet
        elif self.run is not None:
            note = policy_note(self.run, self.options.policy)
            if self.app.size.height < SHORT_SCREEN and self.run.replayed:
                # A short terminal keeps its rows for the plot: the legend below names the ranges and their
                # copies, so the note says only what this view draws of them, and where the rest is.
                here = POLICY_HERE.get(self.options.policy, POLICY_HERE["all"])
                note = f"{here[:1].upper()}{here[1:]}."
                pointer = note[:-1] + " (what TensorBoard/W&B show: Findings tab)."
                note = pointer if len(pointer) <= self.query_one("#plot-column").size.width - 2 else note
            stale = stale_sources(self.run)
            if stale:
                shown = "drawn apart as 'stale file'" if self.options.show_stale else "hidden"
                note += f" {len(stale)} stale event file(s) from an earlier run: {shown} (s toggles)."
            self.query_one("#policy-note", Static).update(clean(note))

    def _update_legend(self, spec: PlotSpec) -> None:
        """One entry per thing drawn, its glyph in its colour: lines, resume seams, cursor, replayed-range ends."""
        def entry(glyph: str, color: str, label: str) -> Text:
            return Text.assemble((glyph, legend_style(color)), " " + clean(label))

        width = max(self.query_one("#plot-column").size.width - 2, 20)
        lines = [line for line in spec.lines if line.x.size]
        short = [entry(line.glyph, line.color, "#" + line.label.removeprefix("attempt ")
                       if line.label.startswith("attempt ") else line.label) for line in lines]
        rest: list[Text] = []
        if spec.seams and self.run is not None:
            at: dict[int, list[int]] = {}
            for a in self.run.attempts[1:]:
                if a.first_step is not None:
                    at.setdefault(a.first_step, []).append(a.index)
            rest.append(entry(SEAM[0], SEAM[1], "resumed " + ", ".join(f"{attempt_marks(who)} at {step}"
                                                                       for step, who in sorted(at.items()))))
        if spec.cursor is not None:
            rest.append(entry(CURSOR[0], CURSOR[1], "cursor"))
        if spec.replays and self.run is not None:
            rest.append(entry(REPLAY_END[0], REPLAY_END[1], "replayed " + replayed_text(self.run)))
        legend = join_wrapped([entry(line.glyph, line.color, line.label) for line in lines] + rest, width, "  ")
        narrow = join_wrapped(short + rest, width, "  ")
        # "attempt 2" where it costs no extra row, "#2" where it would.
        self.query_one("#curve-legend", Static).update(legend if legend.plain.count("\n") <= narrow.plain.count("\n")
                                                       else narrow)

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
        """The tags the filter lets through; the plot never stays on a tag the list hides."""
        tags = self.run.tags() if self.run else []
        text = self.query_one("#tag-filter", Input).value
        keep = compile_filter(text)
        shown = [t for t in tags if keep(t)]
        option_list = self.query_one("#tag-list", OptionList)
        option_list.clear_options()
        option_list.add_options([Option(data_text(t, newlines=False), id=t) for t in shown])
        if self.tag in shown:
            option_list.highlighted = shown.index(self.tag)
        elif shown:
            option_list.highlighted = 0  # the plot follows (OptionHighlighted)
            self.tag = shown[0]
            self.redraw()
        elif tags:
            self.tag = None
            self.no_tag_text = f'no tag matches "{text.strip()}" (esc, then / to change it)'
            self.redraw()

    @on(Input.Changed, "#tag-filter")
    def _filter_changed(self) -> None:
        self._fill_tags()

    @on(Input.Submitted, "#tag-filter")
    def _filter_submitted(self) -> None:
        self.query_one("#tag-list", OptionList).focus()

    def show_waiting(self, text: str) -> None:
        """No run yet: say so in place of the plot."""
        self.query_one(CurvePlot).show(PlotSpec(empty_text=text))

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
        zoom = f" · zoom {int(opts.x_range[0])}-{int(opts.x_range[1])}" if opts.x_range is not None else ""
        targets = zoom_targets(self.run) if self.run is not None and opts.x_range is not None else []
        if 0 <= self.zoom_index < len(targets):
            first, last, what = targets[self.zoom_index]
            zoom = f" · zoom: {what} {fmt_range(first, last)} (z: {'next' if self.zoom_index + 1 < len(targets) else 'out'})"
        # What differs from the defaults (smoothing off, step axis, linear y): the line stays short at 80 columns.
        status.update(clean(
            f"{elide(self.tag or '(no scalar tags)')}  {opts.policy}" + (f" · smooth {opts.smooth:g}" if opts.smooth else "")
            + (f" · x {opts.x_axis}" if opts.x_axis != "step" else "") + (" · log y" if opts.log_y else "") + zoom,
            newlines=False))
        self._update_note()
        if self.run is None or self.tag is None:
            empty = self.no_tag_text if self.run is not None and self.run.tags() else "this run has no scalar curves"
            self.query_one(CurvePlot).show(PlotSpec(empty_text=clean(empty, newlines=False)))
            self.query_one("#curve-legend", Static).update("")
            return
        width = self.query_one(CurvePlot).size.width or 100
        self._compute(self.run, self.tag, opts, width, self._generation)

    # A description of its own: Textual's default is the repr of every argument, on the UI thread, and the repr of a
    # big run (every series and log event; lazily cached columns decoded for it) took over a second on a 1 GB log.
    @work(thread=True, exclusive=True, group="curves", description="curves: the lines of one tag")
    def _compute(self, run: Run, tag: str, options: CurveOptions, width: int, generation: int) -> None:
        try:
            spec = build_spec(run, tag, options, width)
        except Exception as exc:  # a bad series must show as a message, not a traceback
            spec = PlotSpec(empty_text=clean(f"cannot draw {elide(tag)}: {type(exc).__name__}: {exc}"))
        self.post_message(self.Drawn(spec, generation))

    def on_curves_pane_drawn(self, message: Drawn) -> None:
        """Show the newest computed spec (older ones are dropped)."""
        message.stop()
        if message.generation == self._generation:
            self.query_one(CurvePlot).show(message.spec)
            self._update_legend(message.spec)
            if self.cursor_x is not None:
                self._show_cursor()
