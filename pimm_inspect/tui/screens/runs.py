"""The Runs screen: every run under the path as it is discovered and loaded, filterable and sortable."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Static

from ...model import Run, Severity
from ...report.safe_text import clean, data_text
from ..facts import (best_metric, compile_run_filter, filter_error, findings_cell, fmt_step, fmt_time, kind_label,
                     last_logged, last_step, relative_name, severity_counts)
from ..widgets.run_preview import RunPreview, top_finding

@dataclass(frozen=True, slots=True)
class Column:
    """A runs-table column: header, the width it costs (with padding), and how ``s`` sorts by it."""

    key: str
    label: str
    width: int
    sort: str | None = None
    """None: not sortable; "asc" or "desc": the direction ``s`` sorts it in (numbers biggest first)."""


MARK_COLUMN = Column("mark", " ", 3)
NARROW_COLUMNS = (MARK_COLUMN, Column("run", "run", 0, "asc"), Column("kind", "kind", 10, "asc"),
                  Column("status", "status", 11, "asc"), Column("att", "att", 5, "desc"),
                  Column("step", "step", 8, "desc"), Column("wandb", "W&B id", 12, None),
                  Column("findings", "findings", 13, "desc"))
WIDE_COLUMNS = NARROW_COLUMNS[:6] + (Column("best", "best", 14, "desc"), Column("last log", "last log", 18, "desc"),
                                    ) + NARROW_COLUMNS[6:]
TOP_FINDING = Column("top finding", "top finding", 0, None)
WIDE_AT = 120
"""At 120 columns and more the table also shows the best metric and when the run last logged."""
TOP_FINDING_AT = 150
"""From here the worst finding's message gets its own column (not only its code count)."""
PREVIEW_AT = 180
"""From here (room for both) a preview pane of the highlighted run sits right of the table."""
PREVIEW_WIDTH = 40
"""As in the .tcss (#runs-preview)."""
MIN_NAME = 14
TOP_FINDING_MAX = 70
ARROWS = {"asc": "▲", "desc": "▼"}


def shorten(name: str, width: int) -> str:
    """Cut the middle of a long relative path so both its top folder and the run's own name stay visible."""
    if len(name) <= width:
        return name
    head = max((width - 1) // 3, 1)
    return name[:head] + "…" + name[-(width - 1 - head):]


MARK = "●"


class RunsScreen(Screen):
    """A table of runs; the app adds paths and loaded runs, the screen asks the app to open, compare or refresh."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("s", "sort", "Sort", tooltip="sort by the next column on screen (the header shows ▲/▼)"),
        Binding("space", "mark", "Mark", tooltip="mark runs to compare (● in the first column)"),
        Binding("c", "compare", "Compare", tooltip="overlay the marked runs' curves"),
        Binding("r", "refresh", "Refresh", tooltip="look for new runs and read what every run appended"),
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

    class Refresh(Message):
        """The user wants every run read again (new runs found, appended bytes read)."""

    def __init__(self, base: Path, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.base = base
        self.paths: dict[str, Path] = {}
        self.runs: dict[str, Run] = {}
        self.marked: set[str] = set()
        self.sort_key = "run"
        self.progress = ""
        self.problem: str | None = None
        self.clock = clock
        self.updated_at: float | None = None
        """Clock time of the last (re)load of any run; shown as "updated Ns ago" while runs are live."""
        self.refreshed = False
        """True once the user pressed ``r`` (from then on the status says how fresh the table is)."""

    def compose(self) -> ComposeResult:
        yield Static(data_text(f"runs under {self.base.as_posix()}"), id="runs-title")
        yield Input(placeholder="/ filter: text, !text, /regex/, cfg.<key> op value (e.g. cfg.optimizer.lr>0.001)",
                    id="runs-filter")
        with Horizontal(id="runs-body"):
            yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
            yield RunPreview(id="runs-preview")
        yield Static("", id="runs-problem")
        yield Static("", id="runs-status")
        yield Footer()

    def on_resize(self) -> None:
        """Names are shortened to the width and columns come and go with it: lay the table out again."""
        if self.query("#runs-table"):
            self._rebuild()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self.query_one("#runs-problem", Static).display = False
        self._rebuild()
        table.focus()
        self.set_interval(1.0, self._status)  # "updated Ns ago" keeps counting

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
        self.updated_at = self.clock()
        table = self.query_one(DataTable)
        if key in table.rows:
            cells = self._cells(key)
            for column, value in zip(self._columns(), cells):
                table.update_cell(key, column.key, value)
            widths = [c.width for c in table.ordered_columns]
            if not self._visible(key) or any(cell_len(str(v)) > w for v, w in zip(cells[1:], widths[1:])):
                self._rebuild()  # a wider value (or a row the filter now hides): lay the columns out again
        elif self._visible(key):
            self._rebuild()
        if key == self._cursor_key():
            self._preview()
        self._status()

    def set_progress(self, done: int, total: int) -> None:
        """Loading progress for the status line."""
        self.progress = "" if done >= total else f"loading {done}/{total}…"
        self._status()

    def resort(self) -> None:
        """Every run is loaded: lay the table out afresh, in sort order, with column widths measured from all rows.

        (Widths grown cell by cell while runs arrived depend on arrival order; a fresh layout does not.)
        """
        self._rebuild(fresh=True)

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
        return [k for k, run in self.runs.items() if run.status == "running"]

    # -- rendering ------------------------------------------------------------------------------------------

    def _haystack(self, key: str) -> str:
        run = self.runs.get(key)
        name = relative_name(self.paths[key], self.base)
        if run is None:
            return name
        return " ".join([name, kind_label(run), run.status, *run.wandb.run_ids, *(f.code for f in run.findings)])

    def _filter_text(self) -> str:
        text = self.query_one("#runs-filter", Input).value
        return "" if filter_error(text) else text  # an invalid regex filters nothing (the status says why)

    def _visible(self, key: str) -> bool:
        predicate = compile_run_filter(self._filter_text())
        return predicate(self._haystack(key), self.runs.get(key))

    def _width(self) -> int:
        return self.app.size.width

    def _columns(self) -> tuple[Column, ...]:
        width = self._width()
        columns = WIDE_COLUMNS if width >= WIDE_AT else NARROW_COLUMNS
        return columns + ((TOP_FINDING,) if width >= TOP_FINDING_AT else ())

    def _name_width(self) -> int:
        """Cells left for the run name (the top finding column, when shown, gets what the names leave)."""
        table_width = self._width() - (PREVIEW_WIDTH if self._width() >= PREVIEW_AT else 0)
        others = sum(c.width for c in self._columns())
        if self._width() >= TOP_FINDING_AT:
            longest = max((len(clean(relative_name(p, self.base), newlines=False)) for p in self.paths.values()),
                          default=MIN_NAME)
            return max(min(longest, table_width - others - 30), MIN_NAME)
        return max(table_width - others, MIN_NAME)

    def _cells(self, key: str) -> tuple:
        name = data_text(shorten(clean(relative_name(self.paths[key], self.base), newlines=False), self._name_width()))
        mark = Text(MARK if key in self.marked else " ", self.get_component_rich_style("runs--mark"))
        run = self.runs.get(key)
        if run is None:
            loading = Text("loading…", self.get_component_rich_style("runs--loading"))
            return (mark, name, "", loading) + ("",) * (len(self._columns()) - 4)
        worst = max((f.severity for f in run.findings), default=None)
        style = {Severity.ERROR: "runs--error", Severity.WARNING: "runs--warning"}.get(worst) if worst is not None \
            else None
        rich_style = self.get_component_rich_style(style) if style else ""
        findings = Text(findings_cell(run), rich_style)
        values = {
            "mark": mark, "run": name, "kind": data_text(kind_label(run), newlines=False),
            "status": data_text(run.status, newlines=False), "att": str(len(run.attempts)),
            "step": fmt_step(last_step(run)), "best": data_text(best_metric(run), newlines=False),
            "last log": fmt_time(last_logged(run)),
            "wandb": data_text(", ".join(run.wandb.run_ids) or "-", newlines=False), "findings": findings,
        }
        if self._width() >= TOP_FINDING_AT:
            room = self._width() - (PREVIEW_WIDTH if self._width() >= PREVIEW_AT else 0) \
                - sum(c.width for c in self._columns()) - self._name_width() - 3
            values["top finding"] = Text(shorten_end(top_finding(run), max(min(room, TOP_FINDING_MAX), 10)), rich_style)
        return tuple(values[c.key] for c in self._columns())

    def _sort_value(self, key: str):
        column = self.sort_key
        run = self.runs.get(key)
        name = relative_name(self.paths[key], self.base)
        if run is None:
            return (1, "", name)
        value = {
            "run": "",
            "kind": kind_label(run),
            "status": run.status,
            "att": -len(run.attempts),
            "step": -(last_step(run) or 0),
            "best": best_metric(run),
            "last log": -(last_logged(run) or 0.0),
            "findings": tuple(-severity_counts(run)[s] for s in sorted(Severity, reverse=True)),
        }[column]
        return (0, value, name)

    def _ordered_keys(self) -> list[str]:
        return sorted((k for k in self.paths if self._visible(k)), key=self._sort_value)

    def _sortable(self) -> list[Column]:
        return [c for c in self._columns() if c.sort]

    def _header(self, column: Column) -> str:
        if column.key == self.sort_key and column.sort:
            return f"{column.label} {ARROWS[column.sort]}"
        return column.label

    def _rebuild(self, fresh: bool = False) -> None:
        table = self.query_one(DataTable)
        if self.sort_key not in {c.key for c in self._sortable()}:
            self.sort_key = "run"  # the sort column went off screen (narrower terminal): sort by what is shown
        current = self._cursor_key()
        columns = self._columns()
        wanted = [c.key for c in columns]
        labels = [self._header(c) for c in columns]
        if not fresh and [column.key.value for column in table.ordered_columns] == wanted and \
                [str(column.label) for column in table.ordered_columns] == labels:
            table.clear()  # keep the columns and their measured widths: only the rows are re-laid
            keys = self._ordered_keys()
            rows = [self._cells(key) for key in keys]
        else:
            keys = self._ordered_keys()
            rows = [self._cells(key) for key in keys]
            table.clear(columns=True)
            for i, (column, label) in enumerate(zip(columns, labels)):
                # Widths from every row at once, so the layout never depends on the order runs arrived in.
                width = 1 if column is MARK_COLUMN else max([cell_len(label)] + [cell_len(str(r[i])) for r in rows])
                table.add_column(label, key=column.key, width=width)
        for key, row in zip(keys, rows):
            table.add_row(*row, key=key)
        if current in keys:
            table.move_cursor(row=keys.index(current))
        preview = self.query_one(RunPreview)
        preview.display = self._width() >= PREVIEW_AT
        self._preview()
        self._status()

    def _preview(self) -> None:
        preview = self.query_one(RunPreview)
        key = self._cursor_key()
        if not preview.display:
            return
        if key is None:
            preview.update("")
            return
        preview.show_run(relative_name(self.paths[key], self.base), self.runs.get(key))

    @on(DataTable.RowHighlighted, "#runs-table")
    def _row_highlighted(self) -> None:
        self._preview()

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
        sort = next((c for c in self._columns() if c.key == self.sort_key), None)
        arrow = f" {ARROWS[sort.sort]}" if sort is not None and sort.sort else ""
        status = Text("   ".join([f"{len(self.paths)} run(s)", f"{table.row_count} shown",
                                  f"sort: {self.sort_key}{arrow}"]))
        if self.marked:
            status.append(f"   {len(self.marked)} marked", self.get_component_rich_style("runs--mark"))
        if self.progress:
            status.append(f"   {self.progress}")
        live = self.live_keys()
        if self.updated_at is not None and (live or self.refreshed):
            ago = max(int(self.clock() - self.updated_at), 0)
            status.append(f"   {len(live)} live" if live else "")
            status.append(f"   updated {ago}s ago (r refresh)")
        error = filter_error(self.query_one("#runs-filter", Input).value)
        if error:
            status.append("   filter: " + clean(error, newlines=False), self.get_component_rich_style("runs--error"))
        self.query_one("#runs-status", Static).update(status)

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
        """Sort by the next sortable column on screen."""
        keys = [c.key for c in self._sortable()]
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)] if self.sort_key in keys else keys[0]
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

    def action_refresh(self) -> None:
        """Look for new runs and read every run again (a live run reads only what it appended)."""
        self.progress = "refreshing…"
        self.refreshed = True
        self._status()
        self.post_message(self.Refresh())

    def action_open(self) -> None:
        """Open the run under the cursor."""
        key = self._cursor_key()
        if key is not None:
            self.post_message(self.Open(self.paths[key]))

    @on(DataTable.RowSelected, "#runs-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.post_message(self.Open(self.paths[event.row_key.value]))


def shorten_end(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with an ellipsis at the end."""
    return text if len(text) <= width else text[:width - 1] + "…"
