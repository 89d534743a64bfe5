"""The Runs screen: every run under the path as it is discovered and loaded, filterable and sortable."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from ...model import Run, Severity
from ...report.safe_text import clean, data_text
from ..facts import (SORT_COLUMNS, best_metric, compile_run_filter, findings_cell, fmt_step, fmt_time, kind_label,
                     last_logged, last_step, relative_name, severity_counts)

COLUMNS = ("", "run", "kind", "status", "att", "step", "W&B id", "findings")
WIDE_COLUMNS = ("", "run", "kind", "status", "att", "step", "best", "last log", "W&B id", "findings")
"""At 120 columns and more the table also shows the best metric and when the run last logged."""
OTHER_COLUMNS_WIDTH = 62
WIDE_OTHER_COLUMNS_WIDTH = 94
"""Cells the columns other than the run name need (with padding); the name gets the rest."""
WIDE_AT = 120


def shorten(name: str, width: int) -> str:
    """Cut the middle of a long relative path so both its top folder and the run's own name stay visible."""
    if len(name) <= width:
        return name
    head = max((width - 1) // 3, 1)
    return name[:head] + "…" + name[-(width - 1 - head):]
MARK = "●"


class RunsScreen(Screen):
    """A table of runs; the app adds paths and loaded runs, the screen asks the app to open or compare."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("s", "sort", "Sort", tooltip="cycle the sort column"),
        Binding("space", "mark", "Mark", tooltip="mark runs to compare"),
        Binding("c", "compare", "Compare", tooltip="overlay the marked runs' curves"),
        Binding("enter", "open", "Open", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    COMPONENT_CLASSES = {"runs--error", "runs--warning", "runs--loading", "runs--mark"}

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

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.base = base
        self.paths: dict[str, Path] = {}
        self.runs: dict[str, Run] = {}
        self.marked: set[str] = set()
        self.sort_index = 0
        self.progress = ""
        self.problem: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(data_text(f"runs under {self.base.as_posix()}"), id="runs-title")
        yield Input(placeholder="/ filter: text, !text, /regex/, cfg.<key> op value (e.g. cfg.optimizer.lr>0.001)",
                    id="runs-filter")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="runs-problem")
        yield Static("", id="runs-status")
        yield Footer()

    def on_resize(self) -> None:
        """Names are shortened to the width: lay the table out again."""
        if self.query("#runs-table"):
            self._rebuild()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self.query_one("#runs-problem", Static).display = False
        self._rebuild()
        table.focus()

    # -- data from the app (attributes down) ---------------------------------------------------------------

    def add_path(self, path: Path) -> None:
        """A run directory was discovered."""
        key = path.as_posix()
        if key in self.paths:
            return
        self.paths[key] = path
        if self._visible(key):
            self.query_one(DataTable).add_row(*self._cells(key), key=key)
        self._status()

    def set_run(self, path: Path, run: Run) -> None:
        """A run finished loading (or was reloaded)."""
        key = path.as_posix()
        self.paths.setdefault(key, path)
        self.runs[key] = run
        table = self.query_one(DataTable)
        if key in table.rows:
            for column, value in zip(self._columns(), self._cells(key)):
                table.update_cell(key, column or "mark", value, update_width=True)
            if not self._visible(key):
                self._rebuild()
        elif self._visible(key):
            self._rebuild()
        self._status()

    def set_progress(self, done: int, total: int) -> None:
        """Loading progress for the status line."""
        self.progress = "" if done >= total else f"loading {done}/{total}…"
        self._status()

    def resort(self) -> None:
        """Lay the rows out again in sort order (rows are appended as runs are found, then filled in)."""
        table = self.query_one(DataTable)
        shown = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
        wanted = sorted((k for k in self.paths if self._visible(k)), key=self._sort_key)
        if shown != wanted:
            self._rebuild()

    def show_problem(self, text: str) -> None:
        """The load-error state: nothing to show, and why."""
        self.problem = text
        widget = self.query_one("#runs-problem", Static)
        widget.update(data_text(text))
        widget.display = True
        self.query_one(DataTable).display = False
        self._status()

    # -- rendering ------------------------------------------------------------------------------------------

    def _haystack(self, key: str) -> str:
        run = self.runs.get(key)
        name = relative_name(self.paths[key], self.base)
        if run is None:
            return name
        return " ".join([name, kind_label(run), run.status, *run.wandb.run_ids, *(f.code for f in run.findings)])

    def _visible(self, key: str) -> bool:
        predicate = compile_run_filter(self.query_one("#runs-filter", Input).value)
        return predicate(self._haystack(key), self.runs.get(key))

    def _wide(self) -> bool:
        return self.app.size.width >= WIDE_AT

    def _columns(self) -> tuple[str, ...]:
        return WIDE_COLUMNS if self._wide() else COLUMNS

    def _cells(self, key: str) -> tuple:
        others = WIDE_OTHER_COLUMNS_WIDTH if self._wide() else OTHER_COLUMNS_WIDTH
        name = data_text(shorten(clean(relative_name(self.paths[key], self.base), newlines=False),
                                 max(self.app.size.width - others, 14)))
        mark = Text(MARK, self.get_component_rich_style("runs--mark")) if key in self.marked else ""
        run = self.runs.get(key)
        if run is None:
            loading = Text("loading…", self.get_component_rich_style("runs--loading"))
            return (mark, name, "", loading) + ("",) * (len(self._columns()) - 4)
        worst = max((f.severity for f in run.findings), default=None)
        style = {Severity.ERROR: "runs--error", Severity.WARNING: "runs--warning"}.get(worst) if worst is not None \
            else None
        findings = Text(findings_cell(run), self.get_component_rich_style(style) if style else "")
        extra = (data_text(best_metric(run), newlines=False), fmt_time(last_logged(run))) if self._wide() else ()
        return (mark, name, data_text(kind_label(run), newlines=False), data_text(run.status, newlines=False),
                str(len(run.attempts)), fmt_step(last_step(run)), *extra,
                data_text(", ".join(run.wandb.run_ids) or "-", newlines=False), findings)

    def _sort_key(self, key: str):
        column = SORT_COLUMNS[self.sort_index]
        run = self.runs.get(key)
        name = relative_name(self.paths[key], self.base)
        if run is None:
            return (1, "", name)
        value = {
            "name": "",
            "kind": kind_label(run),
            "status": run.status,
            "attempts": -len(run.attempts),
            "last step": -(last_step(run) or 0),
            "best": best_metric(run),
            "last log": -(last_logged(run) or 0.0),
            "findings": tuple(-severity_counts(run)[s] for s in sorted(Severity, reverse=True)),
        }[column]
        return (0, value, name)

    def _rebuild(self) -> None:
        table = self.query_one(DataTable)
        current = self._cursor_key()
        wanted = [name or "mark" for name in self._columns()]
        if [column.key.value for column in table.ordered_columns] == wanted:
            table.clear()  # keep the columns and their measured widths: only the rows are re-laid
        else:
            table.clear(columns=True)
            for name in self._columns():
                table.add_column(name, key=name or "mark")
        keys = sorted((k for k in self.paths if self._visible(k)), key=self._sort_key)
        for key in keys:
            table.add_row(*self._cells(key), key=key)
        if current in keys:
            table.move_cursor(row=keys.index(current))
        self._status()

    def _cursor_key(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # cursor outside the table after a clear
            return None

    def _status(self) -> None:
        table = self.query_one(DataTable)
        parts = [f"{len(self.paths)} run(s)", f"{table.row_count} shown", f"sort: {SORT_COLUMNS[self.sort_index]}"]
        if self.marked:
            parts.append(f"{len(self.marked)} marked")
        if self.progress:
            parts.append(self.progress)
        self.query_one("#runs-status", Static).update("   ".join(parts))

    # -- actions --------------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        """Show and focus the filter box."""
        self.query_one("#runs-filter", Input).focus()

    def action_clear_filter(self) -> None:
        """Leave the filter box (escape), clearing it when already out of it."""
        box = self.query_one("#runs-filter", Input)
        if self.focused is box:
            self.query_one(DataTable).focus()
            return
        box.value = ""

    @on(Input.Changed, "#runs-filter")
    def _filter_changed(self) -> None:
        self._rebuild()

    @on(Input.Submitted, "#runs-filter")
    def _filter_submitted(self) -> None:
        self.query_one(DataTable).focus()

    def action_sort(self) -> None:
        """Cycle the sort column."""
        self.sort_index = (self.sort_index + 1) % len(SORT_COLUMNS)
        self._rebuild()

    def action_mark(self) -> None:
        """Mark or unmark the run under the cursor, then move down."""
        key = self._cursor_key()
        if key is None:
            return
        self.marked ^= {key}
        table = self.query_one(DataTable)
        table.update_cell(key, "mark", self._cells(key)[0])
        table.action_cursor_down()
        self._status()

    def action_compare(self) -> None:
        """Compare the marked runs (at least two)."""
        keys = [k for k in self.paths if k in self.marked]
        if len(keys) < 2:
            self.notify("mark at least two runs with space, then press c", severity="warning")
            return
        self.post_message(self.Compare([self.paths[k] for k in keys]))

    def action_open(self) -> None:
        """Open the run under the cursor."""
        key = self._cursor_key()
        if key is not None:
            self.post_message(self.Open(self.paths[key]))

    @on(DataTable.RowSelected, "#runs-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(self.Open(self.paths[event.row_key.value]))
