"""The Runs screen: every run under the path as it is discovered and read, filterable and sortable.

The table itself (rows, columns, layout) is ``widgets.runs_table``, the status line ``widgets.runs_status``
and the highlighted run's summary ``widgets.run_preview``; this screen wires them to the app's messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from ...evidence import RunRow
from ...report.safe_text import data_text
from ..facts import filter_error
from ..widgets.keys_footer import KeysFooter
from ..widgets.run_preview import RunPreview
from ..widgets.runs_status import RunsStatus, TableState
from ..widgets.run_names import shorten, shorten_end
from ..widgets.runs_table import ARROWS, MARK, PREVIEW_AT, RunsTable

if TYPE_CHECKING:
    from ...load.quick import RunGlance  # a type only: the quick stage's module imports the loaders

__all__ = ["MARK", "RunsScreen", "shorten", "shorten_end"]


class RunsScreen(Screen[None]):
    """A table of runs; the app adds paths and read runs, the screen asks the app to open, compare or refresh."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("s", "sort", "Sort", tooltip="sort by the next column on screen (the header shows ▲/▼)"),
        Binding("space", "mark", "Mark", tooltip="mark runs to compare (● in the first column)"),
        Binding("c", "compare", "Compare", tooltip="overlay the marked runs' curves"),
        Binding("r", "refresh", "Refresh", tooltip="look for new runs and read what every run appended"),
        Binding("o", "wandb('open')", "Open W&B", show=False, tooltip="open the cursor row's W&B run in a browser"),
        Binding("y", "wandb('copy')", "Copy W&B", show=False, tooltip="copy the cursor row's W&B link or wandb sync command"),
        Binding("enter", "open", "Open", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    COMPONENT_CLASSES = {"runs--error", "runs--warning", "runs--loading", "runs--mark"}
    AUTO_FOCUS = "#runs-table"
    """The table has the keys from the start (not the filter box first, then the table: bindings and styles once)."""

    class Open(Message):
        """The user wants to open one run."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class Compare(Message):
        """The user wants to compare the marked runs."""

        def __init__(self, paths: list[Path]) -> None:
            super().__init__()
            self.paths = paths

    class Wandb(Message):
        """The user wants the cursor row's W&B link opened (``open``) or copied (``copy``)."""

        def __init__(self, path: Path, what: str) -> None:
            super().__init__()
            self.path = path
            self.what = what

    class Refresh(Message):
        """The user wants every run read again (new runs found, appended bytes read)."""

    def __init__(self, base: Path, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.base = base
        self.clock = clock
        self.problem: str | None = None
        self.table = RunsTable(base, self.get_component_rich_style, id="runs-table")
        self.status = RunsStatus(self.get_component_rich_style, clock, id="runs-status")

    @property
    def paths(self) -> dict[str, Path]:
        """Every discovered run by key (its path as posix text)."""
        return self.table.paths

    @property
    def runs(self) -> dict[str, RunRow]:
        """The runs read so far (light copies)."""
        return self.table.runs

    @property
    def marked(self) -> set[str]:
        """Keys of the marked runs."""
        return self.table.marked

    @property
    def sort_key(self) -> str:
        """The column the table is sorted by."""
        return self.table.sort_key

    def compose(self) -> ComposeResult:
        yield Static(data_text(f"runs under {self.base.as_posix()}"), id="runs-title")
        yield Input(placeholder="/ filter: text, !text, /regex/, cfg.optimizer.lr>0.001 (? for more)",
                    id="runs-filter")
        yield Static("", id="runs-nomatch", markup=False)
        with Horizontal(id="runs-body"):
            yield self.table
            yield RunPreview(id="runs-preview")
        yield Static("", id="runs-problem")
        yield self.status
        yield KeysFooter()

    def on_resize(self) -> None:
        """Names are shortened to the width and columns come and go with it: lay the table out again."""
        if self.is_mounted:
            self._relayout(fresh=False)

    def on_mount(self) -> None:
        self.query_one("#runs-problem", Static).display = False
        self.query_one("#runs-nomatch", Static).display = False
        self._relayout(fresh=False)
        self.table.focus()

    # -- data from the app (attributes down) ---------------------------------------------------------------

    def add_paths(self, paths: list[Path]) -> None:
        """Run directories were discovered."""
        self.table.add_paths(paths)

    def set_glance(self, path: Path, quick: RunGlance) -> None:
        """A big run's quick stage (its full read comes later)."""
        self.table.set_glance(path, quick)

    def set_run(self, path: Path, run: RunRow) -> None:
        """A run finished loading (or was reloaded)."""
        self.table.set_run(path, run)
        self.status.loaded()

    def set_runs(self, rows: list[tuple[Path, RunRow]]) -> None:
        """Many runs were read (a warm tree's stored rows)."""
        self.table.set_runs(rows)
        if rows:
            self.status.loaded()

    def on_runs_table_flushed(self) -> None:
        """The table shows new rows or facts: so do the preview and the status line."""
        self._preview()
        self._status()

    def set_progress(self, done: int, total: int, current: str | None = None) -> None:
        """Loading progress for the status line."""
        self.status.set_progress(done, total, current)

    def resort(self) -> None:
        """Every run is loaded: the rows in sort order (``RunsTable.settle``), the preview and status line with them."""
        self.table.settle()
        self.query_one(RunPreview).display = self.app.size.width >= PREVIEW_AT
        self._preview()
        self._status()

    def show_problem(self, text: str) -> None:
        """The load-error state: nothing to show, and why."""
        self.problem = text
        widget = self.query_one("#runs-problem", Static)
        widget.update(data_text(text))
        widget.display = True
        self.query_one("#runs-body").display = False
        self._status()

    def live_keys(self) -> list[str]:
        """Runs whose last reading said they are still running."""
        return [k for k, run in self.table.runs.items() if run.status == "running"]

    # -- rendering ------------------------------------------------------------------------------------------

    def _relayout(self, fresh: bool) -> None:
        self.table.relayout(fresh)
        self.query_one(RunPreview).display = self.app.size.width >= PREVIEW_AT
        self._preview()
        self._status()

    def _preview(self) -> None:
        preview = self.query_one(RunPreview)
        key = self.table.cursor_key()
        if not preview.display:
            return
        if key is None:
            preview.update("")
            return
        preview.show_run(self.table.name_of(key), self.table.runs.get(key))

    @on(DataTable.RowHighlighted, "#runs-table")
    def _row_highlighted(self) -> None:
        self._preview()
        self._status()  # the cursor row's full path

    def _status(self) -> None:
        table = self.table
        text = self.query_one("#runs-filter", Input).value.strip()
        nomatch = self.query_one("#runs-nomatch", Static)
        nomatch.display = bool(text) and not table.row_count and bool(table.paths)
        if nomatch.display:  # a blank table would look like nothing was found at all
            nomatch.update(data_text(f'no run matches "{text}" (esc clears)', newlines=False))
        sort = next((c for c in table.columns_shown() if c.key == table.sort_key), None)
        arrow = f" {ARROWS[sort.sort]}" if sort is not None and sort.sort else ""
        key = table.cursor_key()
        self.status.show(TableState(len(table.paths), table.row_count, f"{table.sort_key}{arrow}", len(table.marked),
                                    len(self.live_keys()), filter_error(self.query_one("#runs-filter", Input).value),
                                    table.name_of(key) if key is not None else ""))

    # -- actions --------------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        """Show and focus the filter box."""
        self.query_one("#runs-filter", Input).focus()

    def action_clear_filter(self) -> None:
        """Leave the filter box (escape), clearing it when already out of it."""
        box = self.query_one("#runs-filter", Input)
        if self.focused is box:
            self.table.focus()
            return
        box.value = ""

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.table.set_filter(event.value)
        self._preview()
        self._status()

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self) -> None:
        self.table.focus()

    def action_sort(self) -> None:
        """Sort by the next sortable column on screen."""
        self.table.next_sort()
        self._preview()
        self._status()

    def action_mark(self) -> None:
        """Mark or unmark the run under the cursor, then move down."""
        key = self.table.cursor_key()
        if key is None:
            return
        self.table.toggle_mark(key)
        self.table.action_cursor_down()
        self._status()

    def action_compare(self) -> None:
        """Compare the marked runs (at least two)."""
        keys = [k for k in self.table.paths if k in self.table.marked]
        if len(keys) < 2:
            self.notify("mark at least two runs with space, then press c", severity="warning")
            return
        self.post_message(self.Compare([self.table.paths[k] for k in keys]))

    def action_refresh(self) -> None:
        """Look for new runs and read every run again (a live run reads only what it appended)."""
        self.status.progress = "refreshing…"
        self.status.refreshed = True
        self._status()
        self.post_message(self.Refresh())

    def action_wandb(self, what: str) -> None:
        """``o``/``y`` on the cursor row: the app reads the run's W&B facts and opens or copies its link."""
        key = self.table.cursor_key()
        if key is None:
            self.notify("no run under the cursor", severity="warning")
            return
        self.post_message(self.Wandb(self.table.paths[key], what))

    def action_open(self) -> None:
        """Open the run under the cursor."""
        key = self.table.cursor_key()
        if key is not None:
            self.post_message(self.Open(self.table.paths[key]))

    @on(DataTable.RowSelected, "#runs-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(self.Open(self.table.paths[event.row_key.value]))
