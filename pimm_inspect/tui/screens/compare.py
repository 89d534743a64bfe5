"""The Compare screen: one tag of several runs overlaid, one stable colour per run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from ...analysis.curves import POLICIES
from ...model import Run
from ...report.safe_text import clean, data_text, elide
from ...report.plot import lines_for
from ..facts import compile_filter, main_config, relative_name
from ..widgets.curve_spec import axis_for
from ..widgets.curves import default_tag
from ..widgets.plot import CurvePlot, PlotLine, PlotSpec, legend_style


class CompareScreen(Screen[None]):
    """Overlay of the marked runs' curves for a tag chosen from the tags they share."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash", "filter", "Filter tags", key_display="/"),
        Binding("p", "policy", "Policy"),
        Binding("x", "x_axis", "X axis"),
        Binding("L", "log_y", "Log y"),
        Binding("d", "config_diff", "Config diff", tooltip="config keys that differ between these runs"),
    ]

    def __init__(self, runs: list[Run], base: Path) -> None:
        super().__init__()
        self.runs = runs
        self.base = base
        counts = Counter(t for run in runs for t in run.tags())
        # Tags most runs have come first, so the default view compares like with like.
        self.tags = sorted(counts, key=lambda t: (-counts[t], t))
        shared = [t for t in self.tags if counts[t] == len(runs)]
        self.tag = default_tag(shared) or default_tag(self.tags)
        self.policy = "newest"
        self.x_axis = "step"
        self.log_y = False

    def action_config_diff(self) -> None:
        """The config keys that differ between the compared runs (secrets masked)."""
        from .config_diff import ConfigDiffScreen

        columns = [(relative_name(r.root, self.base), main_config(r)) for r in self.runs]
        self.app.push_screen(ConfigDiffScreen(f"compare {len(self.runs)} runs", columns))

    def compose(self) -> ComposeResult:
        names = [relative_name(r.root, self.base) for r in self.runs]
        yield Static(f"compare {len(self.runs)} runs", id="compare-title")
        with Horizontal():
            with Vertical(id="tag-column"):
                yield Input(placeholder="/ filter tags", id="compare-filter")
                yield OptionList(id="compare-tags")
            with Vertical(id="plot-column"):
                yield Static("", id="compare-status", markup=False)
                # Runs are told apart by marker as well as colour (NO_COLOR, 16 colours): the legend shows the marker.
                legend = [PlotLine(n, np.zeros(0), np.zeros(0), i) for i, n in enumerate(names)]
                yield Static(Text("   ").join(Text.assemble((line.glyph, legend_style(line.color)), " " + clean(line.label))
                                              for line in legend), id="compare-legend", markup=False)
                yield CurvePlot(id="compare-plot")
        yield Footer()

    def on_mount(self) -> None:
        self._fill_tags()
        self._draw()
        self.query_one("#compare-tags", OptionList).focus()

    def _fill_tags(self) -> None:
        keep = compile_filter(self.query_one("#compare-filter", Input).value)
        shown = [t for t in self.tags if keep(t)]
        option_list = self.query_one("#compare-tags", OptionList)
        option_list.clear_options()
        option_list.add_options([Option(data_text(t, newlines=False), id=t) for t in shown])
        if self.tag in shown:
            option_list.highlighted = shown.index(self.tag)

    def _draw(self) -> None:
        self.query_one("#compare-status", Static).update(clean(
            f"{elide(self.tag or '(no tags)')}  policy {self.policy} · x {self.x_axis}"
            + (" · log y" if self.log_y else ""), newlines=False))
        plot = self.query_one(CurvePlot)
        if self.tag is None:
            plot.show(PlotSpec(empty_text="these runs have no scalar curves"))
            return
        width = plot.size.width or 100
        lines: list[PlotLine] = []
        for index, run in enumerate(self.runs):
            name = relative_name(run.root, self.base)
            try:
                for line in lines_for(run, self.tag, self.policy, 0.0, self.x_axis, max_points=max(200, 2 * width)):
                    suffix = f" #{line.attempt}" if self.policy == "all" and line.attempt else ""
                    lines.append(PlotLine(clean(f"{name}{suffix}", newlines=False), line.x, line.y, index))
            except Exception as exc:  # one bad run must not hide the others
                self.notify(f"{name}: cannot draw {elide(self.tag)}: {exc}", severity="warning")
        x_label, ticks, lines = axis_for(self.x_axis, lines, width)  # integer step ticks, readable time units
        plot.show(PlotSpec(tuple(lines), (), x_label, clean(f"{elide(self.tag)}  policy={self.policy}", newlines=False),
                           self.log_y, empty_text=clean(f"no run has points for {elide(self.tag)}"), x_ticks=ticks))

    @on(Input.Changed, "#compare-filter")
    def _filter_changed(self) -> None:
        self._fill_tags()

    @on(Input.Submitted, "#compare-filter")
    def _filter_submitted(self) -> None:
        self.query_one("#compare-tags", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#compare-tags")
    def _tag_chosen(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self.tag:
            self.tag = event.option.id
            self._draw()

    def action_back(self) -> None:
        """Leave the filter box, else go back to the runs table."""
        if isinstance(self.focused, Input):
            self.query_one("#compare-tags", OptionList).focus()
        else:
            self.app.pop_screen()

    def action_filter(self) -> None:
        """Focus the tag filter."""
        self.query_one("#compare-filter", Input).focus()

    def action_policy(self) -> None:
        """Cycle the overlap policy."""
        self.policy = POLICIES[(POLICIES.index(self.policy) + 1) % len(POLICIES)]
        self._draw()

    def action_x_axis(self) -> None:
        """Cycle the x axis."""
        order = ("step", "relative", "wall")
        self.x_axis = order[(order.index(self.x_axis) + 1) % len(order)]
        self._draw()

    def action_log_y(self) -> None:
        """Toggle a logarithmic y axis."""
        self.log_y = not self.log_y
        self._draw()
