"""The Run screen: six tabs (Overview, Curves, Config, Checkpoints, Findings, Log) about one run."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane

from ...model import Run
from ...report.safe_text import clean_name, data_text
from ..facts import relative_name
from ..wandb_keys import copy_wandb, open_wandb
from ...session.staged import Loader, StagedLoader
from ..stages import CHECKING_NOTE, run_title
from ..widgets.config_tree import ConfigPane
from ..widgets.curve_spec import replayed_ranges, stale_sources
from ..widgets.curves import CurvesPane
from ..widgets.log_pane import LogPane
from ..widgets.log_view import LogView
from ..widgets.overview import Overview
from ..widgets.tables import CheckpointsPane, FindingsTable
from .config_diff import ConfigDiffScreen
from .finding import FindingScreen
from .run_loading import RunLoading

TABS = ("overview", "curves", "config", "checkpoints", "findings", "log")
TAB_ACTIONS = {
    "policy": ("curves",), "smooth": ("curves",), "x_axis": ("curves",), "log_y": ("curves",),
    "search": ("curves", "config", "log"), "log_top": ("log",), "log_end": ("log",), "log_next": ("log",),
    "log_prev": ("log",), "attempt": ("log",), "wrap": ("log",), "open_finding": ("findings",), "zoom": ("curves",),
    "cursor": ("curves",), "cursor_log": ("curves",),
    "cursor_end": ("curves",), "cursor_replay": ("curves",), "stale": ("curves",), "config_diff": ("config",),
}
"""Actions that only make sense on some tabs (hidden from the footer elsewhere)."""


class RunScreen(RunLoading):
    """Everything about one run; the screen loads it in stages (again, on live follow) with the app's loader."""

    BINDINGS = [
        Binding("1", "tab('overview')", "Overview", show=False),
        Binding("2", "tab('curves')", "Curves", show=False),
        Binding("3", "tab('config')", "Config", show=False),
        Binding("4", "tab('checkpoints')", "Checkpoints", show=False),
        Binding("5", "tab('findings')", "Findings", show=False),
        Binding("6", "tab('log')", "Log", show=False),
        Binding("escape", "back", "Back"),
        Binding("down", "nav(1)", "Down", show=False),
        Binding("up", "nav(-1)", "Up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("p", "policy", "Policy", tooltip="Overlap policy: all attempts / newest / oldest per step"),
        Binding("plus,equals_sign", "smooth(1)", "Smoother", key_display="+"),
        Binding("minus", "smooth(-1)", "Less smooth", key_display="-"),
        Binding("x", "x_axis", "X axis", tooltip="x axis: step / relative time / wall time"),
        Binding("L", "log_y", "Log y"),
        Binding("z", "zoom", "Zoom", tooltip="zoom to every replayed range, then to each rolled-back or unlogged one, then out"),
        Binding("comma", "cursor(-1)", "Cursor ←", key_display=",", show=False),
        Binding("full_stop", "cursor(1)", "Cursor →", key_display="."),
        Binding("home", "cursor_end(0)", "Cursor first", show=False),
        Binding("end", "cursor_end(1)", "Cursor last", show=False),
        Binding("j", "cursor_replay", "Jump to replay", tooltip="cursor to the start of the next replayed range"),
        Binding("s", "stale", "Stale files", tooltip="show/hide curves from stale event files (an earlier run's)"),
        Binding("l", "cursor_log", "Log line", tooltip="the train.log line of the step under the cursor"),
        Binding("d", "config_diff", "Diff", tooltip="keys that differ between this run's config documents"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("g", "log_top", "Top"),
        Binding("G", "log_end", "End"),
        Binding("n", "log_next", "Next match"),
        Binding("N", "log_prev", "Prev match", show=False),
        Binding("right_square_bracket", "attempt(1)", "Next attempt", key_display="]"),
        Binding("left_square_bracket", "attempt(0)", "Prev attempt", key_display="[", show=False),
        Binding("w", "wrap", "Wrap", tooltip="wrap long log lines, or cut them (left/right pan)"),
        Binding("enter", "open_finding", "Detail"),
        Binding("o", "open_wandb", "Open W&B"),
        Binding("y", "copy_wandb", "Copy W&B"),
        Binding("r", "reload", "Reload"),
    ]

    class Back(Message):
        """Ask the app to go back to the runs table (it knows whether there is one worth showing)."""

    def __init__(self, path: Path, base: Path, run: Run | None = None, follow_interval_s: float = 10.0,
                 loader: Loader | StagedLoader | None = None) -> None:
        super().__init__()
        self.path = path
        self.base = base
        self.run: Run | None = None
        self.analysed = False
        """True once the shown run's checks ran (its findings are complete)."""
        self.loader = loader
        """Where the screen reads its run (None: the app sets it)."""
        self._pending = run
        self._follow_interval_s = follow_interval_s
        self._follow_timer: Timer | None = None
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static(data_text(f"{relative_name(self.path, self.base)}  loading…", newlines=False), id="run-title")
        yield Static("", id="run-progress")
        with TabbedContent(initial="overview", id="run-tabs"):
            with TabPane("1 Overview", id="overview"):
                yield Overview(self.base)
            with TabPane("2 Curves", id="curves"):
                yield CurvesPane()
            with TabPane("3 Config", id="config"):
                yield ConfigPane()
            with TabPane("4 Checkpoints", id="checkpoints"):
                yield CheckpointsPane(id="checkpoints-pane")
            with TabPane("5 Findings", id="findings"):
                yield FindingsTable(id="findings-table")
            with TabPane("6 Log", id="log"):
                yield LogPane(id="log-pane")
        yield Footer()

    def on_mount(self) -> None:
        self._ready = True
        self.query_one("#run-progress", Static).display = False
        if self._pending is not None:
            self.set_run(self._pending)
        elif self.glance is not None:
            self.set_glance(self.glance)
        if self._pending is None and self.run is None:
            self.start_load()

    @property
    def active_tab(self) -> str:
        """Id of the shown tab."""
        return self.query_one("#run-tabs", TabbedContent).active

    def set_run(self, run: Run) -> None:
        """Show a (re)loaded, analysed run in every tab, keeping the tab, tag and options."""
        if not self._ready:
            self._pending = run  # arrived before the screen was mounted
            return
        self._pending = None
        self._show(run, analysed=True)

    def show_read(self, run: Run) -> None:
        """Show a run whose checks are still running: tags, curves, attempts now; findings when they are done."""
        if self._ready and (self.run is None or self.run.summary is None):  # a reload keeps the analysed run
            self._show(run, analysed=False)
            self.show_progress("running the checks…")

    def _show(self, run: Run, analysed: bool) -> None:
        self.run = run
        self.analysed = analysed
        self.query_one("#run-title", Static).update(data_text(run_title(run, self.base), newlines=False))
        self.query_one(Overview).set_run(run, analysed)
        self.query_one(CurvesPane).set_run(run, pending=None if analysed else CHECKING_NOTE)
        self.query_one(ConfigPane).set_run(run)
        self.query_one(CheckpointsPane).set_run(run)
        if analysed:
            self.query_one(FindingsTable).set_run(run)
        else:
            self.query_one(FindingsTable).show_pending("running the checks…")
        self.query_one(LogPane).set_run(run)
        if self.active_tab == "log" and not self.query_one(LogPane).opened:
            self.query_one(LogPane).open()
        if run.status == "running" and self._follow_timer is None and self._follow_interval_s > 0:
            # Live follow: reload a running run periodically (the readers are fast enough to re-read).
            self._follow_timer = self.set_interval(self._follow_interval_s, self._follow_tick)
        elif run.status != "running" and self._follow_timer is not None:
            self._follow_timer.stop()
            self._follow_timer = None
        self.refresh_bindings()

    @on(TabbedContent.TabActivated, "#run-tabs")
    def _tab_changed(self) -> None:
        if self.active_tab == "log" and not self.query_one(LogPane).opened:
            self.query_one(LogPane).open()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide tab-specific actions on other tabs; W&B actions need a link or sync command."""
        if action in TAB_ACTIONS and self.active_tab not in TAB_ACTIONS[action]:
            return False
        if action == "stale":
            return self.run is not None and bool(stale_sources(self.run))
        if action == "cursor_replay":
            return self.run is not None and bool(replayed_ranges(self.run))
        if action in TAB_ACTIONS:
            return True
        return True  # o/y stay enabled without a link: pressing them says why there is none

    # -- actions -----------------------------------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        """Switch tab (keys 1-6) and focus its main widget, never a search box (keys would type into it)."""
        self.query_one("#run-tabs", TabbedContent).active = tab
        # Focus nothing: a focused widget in a pane makes TabbedContent re-activate that pane when its
        # focus message arrives, which races with the next key. up/down/enter focus the tab's main widget.
        self.set_focus(None)
        self.refresh_bindings()

    def _main_widget(self) -> Widget | None:
        """The widget arrow keys drive on the current tab."""
        selector = {"overview": "Overview", "curves": "#tag-list", "config": "#config-tree", "checkpoints": "#checkpoint-table",
                    "findings": "#findings-table", "log": "#log-view"}.get(self.active_tab)
        return self.query_one(selector) if selector and self.query(selector) else None

    def action_nav(self, delta: int) -> None:
        """Arrow keys with nothing focused: focus the tab's main widget and move in it."""
        widget = self._main_widget()
        if widget is None:
            return
        widget.focus()
        action = getattr(widget, "action_cursor_down" if delta > 0 else "action_cursor_up", None)
        if action is not None:
            action()
        else:  # the Overview has no cursor: arrows scroll it at once, no Tab needed
            widget.scroll_relative(y=delta, animate=False)

    def action_page(self, delta: int) -> None:
        """Page up/down in the tab's main widget (the Overview scrolls without being focused first)."""
        widget = self._main_widget()
        if widget is None:
            return
        widget.focus()
        page = getattr(widget, "action_page_down" if delta > 0 else "action_page_up", None)
        if page is not None:
            page()

    def action_back(self) -> None:
        """Cancel a log search under way, else leave a search box, else go back to the runs table."""
        if self.active_tab == "log" and self.query_one(LogPane).searching:
            self.query_one(LogPane).cancel_search()
            return
        if isinstance(self.focused, Input):
            if self.focused.id == "log-search":
                self.query_one(LogView).focus()
            else:
                self.focused.blur()
            return
        self.post_message(self.Back())

    def action_policy(self) -> None:
        """Cycle the overlap policy."""
        self.query_one(CurvesPane).cycle_policy()

    def action_smooth(self, delta: int) -> None:
        """More or less EMA smoothing."""
        self.query_one(CurvesPane).change_smoothing(delta)

    def action_x_axis(self) -> None:
        """Cycle the x axis."""
        self.query_one(CurvesPane).cycle_x_axis()

    def action_log_y(self) -> None:
        """Toggle a logarithmic y axis."""
        self.query_one(CurvesPane).toggle_log_y()

    def action_config_diff(self) -> None:
        """Show the keys that differ between the run's config documents (resolved vs W&B, ...)."""
        if self.run is None:
            return
        chosen = [d for d in self.run.configs if isinstance(d.data, dict) and d.kind != "model_config"]
        kinds = [d.kind.replace("_config", "") for d in chosen]
        labels = [f"{k} #{kinds[:i + 1].count(k)}" if kinds.count(k) > 1 else k for i, k in enumerate(kinds)]
        docs = [(label, dict(d.data or {})) for label, d in zip(labels, chosen)]  # chosen: data is a dict
        legend = "   ".join(f"{label} = {clean_name(d.path)}" for label, d in zip(labels, chosen))
        if len(docs) < 2:
            shown = len(self.run.configs)
            comparable = f": {clean_name(chosen[0].path)}" if chosen else ""
            self.notify(f"the Config tab shows {shown} document(s); d compares run settings documents (resolved "
                        f"config, W&B config, Trainer args) and this run has {len(chosen)}{comparable}. To compare "
                        "runs: mark them on the runs table, press c, then d", severity="warning", timeout=10)
            return
        self.app.push_screen(ConfigDiffScreen(f"{self.run.name}: config documents", docs, legend))

    def action_zoom(self) -> None:
        """Zoom the curve to the interesting step range, or back out."""
        self.query_one(CurvesPane).toggle_zoom()

    def action_cursor(self, delta: int) -> None:
        """Move the curve cursor and show the values under it."""
        self.query_one(CurvesPane).move_cursor(delta)

    def action_cursor_end(self, last: int) -> None:
        """Cursor to the first (Home) or last (End) drawn point."""
        self.query_one(CurvesPane).cursor_to_end(bool(last))

    def action_cursor_replay(self) -> None:
        """Cursor to the start of the next replayed step range."""
        self.query_one(CurvesPane).cursor_to_replay()

    def action_stale(self) -> None:
        """Show or hide curves from stale event files."""
        self.query_one(CurvesPane).toggle_stale()

    def action_cursor_log(self) -> None:
        """Open the log at the Train: line of the step (and attempt) under the curve cursor."""
        point = self.query_one(CurvesPane).cursor_point()
        if point is None:
            self.notify("move the cursor with , and . first (step axis)", severity="warning")
            return
        self.show_log_step(*point)

    def show_log_step(self, step: int, attempt: int | None = None) -> None:
        """Switch to the Log tab at the first Train: line at or after ``step`` (in ``attempt``)."""
        self.action_tab("log")
        pane = self.query_one(LogPane)
        if not pane.opened:
            pane.open()
        pane.show_step(step, attempt)

    def show_curve_steps(self, first: int, last: int) -> None:
        """Switch to the Curves tab zoomed on a step range."""
        self.action_tab("curves")
        self.query_one(CurvesPane).focus_steps(first, last)

    def action_search(self) -> None:
        """Focus the search box of the current tab."""
        tab = self.active_tab
        if tab == "curves":
            self.query_one(CurvesPane).focus_filter()
        elif tab == "config":
            self.query_one(ConfigPane).focus_search()
        elif tab == "log":
            self.query_one("#log-search", Input).focus()

    def action_log_top(self) -> None:
        """First line of the log."""
        self.query_one(LogView).go_top()

    def action_log_end(self) -> None:
        """Last line of the log."""
        self.query_one(LogView).go_end()

    def action_log_next(self) -> None:
        """Next search match."""
        self._search(True)

    def action_log_prev(self) -> None:
        """Previous search match."""
        self._search(False)

    def action_attempt(self, forward: int) -> None:
        """Jump to the next (``]``) or previous (``[``) attempt start: the attempts the Overview lists."""
        self.query_one(LogPane).step_attempt(bool(forward))

    def action_wrap(self) -> None:
        """Wrap long log lines, or cut them and pan with left/right."""
        self.query_one(LogPane).toggle_wrap()

    def _search(self, forward: bool) -> None:
        if self.query_one(LogPane).search(forward) is None:
            self.action_search()

    @on(DataTable.RowSelected, "#findings-table")
    def _finding_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_finding()

    def action_open_finding(self) -> None:
        """Show the highlighted finding's explanation and evidence."""
        if self.run is None or not self.analysed or not self.run.findings:
            return
        table = self.query_one("#findings-table", DataTable)
        index = min(max(table.cursor_row, 0), len(self.run.findings) - 1)
        finding = self.run.findings[index]

        def jump(target: str | None) -> None:
            if target == "curves" and finding.steps:
                self.show_curve_steps(*finding.steps)
            elif target == "log" and finding.steps:
                attempt = next((a.index for a in (self.run.attempts if self.run else ())
                                if a.first_step is not None and a.last_step is not None
                                and a.first_step <= finding.steps[0] <= a.last_step), None)
                self.show_log_step(finding.steps[0], attempt)

        self.app.push_screen(FindingScreen(finding), jump)

    def action_open_wandb(self) -> None:
        """Open the W&B run in a browser when one is available, else say how to get there."""
        if self.run is not None:
            open_wandb(self.app, self.run)

    def action_copy_wandb(self) -> None:
        """Copy the W&B link (or the ``wandb sync`` command) via the terminal clipboard (OSC 52)."""
        if self.run is not None:
            copy_wandb(self.app, self.run)

    def _follow_tick(self) -> None:
        """Live follow: read the run again, unless a read is still under way (cancelling it on every tick would
        never let a read slower than the interval finish, nor the cheap appended-bytes read that follows one)."""
        if any(w.node is self and w.group == "run-load" and not w.is_finished for w in self.app.workers):
            return
        self.start_load()

    def action_reload(self) -> None:
        """Load the run again (also what live follow does); a load still under way is cancelled first."""
        self.start_load()
