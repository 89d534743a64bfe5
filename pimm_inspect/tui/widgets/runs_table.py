"""The runs table: one row per run, filled in as runs are read, laid out again at most a few times a second.

Rows stream in: a discovered run shows its name at once, a big run what its quick stage says (status,
attempts and step from the tail), a read run all its facts. Cells change in place; when a value needs a
wider column, or a row must move or hide, the whole table is laid out again, but never more often than
every ``RELAYOUT_S``, so a tree of a thousand runs costs a few layouts, not one per run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable

from ...analysis.run_filter import row_text
from ...evidence import RunRow
from ...load.quick import RunGlance
from ...model import Severity
from ...report.safe_text import clean, data_text
from ..facts import (best_metric, compile_run_filter, filter_error, findings_cell, fmt_step, kind_label,
                     last_logged, last_logged_cell, last_step, relative_name, severity_counts)
from ..stages import WAITING, attempts_seen, last_step_seen
from .run_names import distinguishing, shorten, shorten_end
from .run_preview import top_finding


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
                  Column("status", "status", 11, "asc"), Column("att", "att", 6, "desc"),
                  Column("step", "step", 8, "desc"), Column("wandb", "W&B id", 12, None),
                  Column("findings", "findings", 13, "desc"))
WIDE_COLUMNS = NARROW_COLUMNS[:6] + (Column("best", "best", 14, "desc"), Column("last log", "last log", 22, "desc"),
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
SCROLLBAR = 2
"""Cells of the table's vertical scrollbar."""
TOP_FINDING_MAX = 70
TOP_FINDING_MIN = 22
"""Cells the top finding column keeps at least when names are long (the names get the rest)."""
ARROWS = {"asc": "▲", "desc": "▼"}
MARK = "●"
STREAMING_WIDTHS = {"kind": 11, "status": 8, "att": 3, "step": 7, "best": 11, "last log": 20, "wandb": 8,
                    "findings": 8}
"""The least width of each column: room for the usual values (``tensorboard``, ``finished``, ``mIoU 0.7458``), kept
while runs are read and after, so arriving rows seldom need a new layout and no column jumps when the last (big)
run's row arrives and the final layout measures every row (a column only ever widens for a longer value)."""
RELAYOUT_S = 0.25
"""Rows arriving faster than this share one flush (a big table waits longer: four times its flush and redraw)."""
RENDER_ROW_S = 0.002
"""What drawing one row on screen costs after a flush (about; 10 cells): every change redraws the visible rows."""


class RunsTable(DataTable[str | Text]):
    """The table of runs; the screen hands it paths, glances, runs, the filter text and the sort column."""

    BINDINGS = [
        Binding("home,g", "first_row", "First run", show=False),
        Binding("end,G", "last_row", "Last run", show=False),
    ]

    def __init__(self, base: Path, style_of: Callable[[str], Style], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.base = base
        self.style_of = style_of
        """The screen's styles (``runs--error``, ``runs--warning``, ``runs--loading``, ``runs--mark``) by name."""
        self.paths: dict[str, Path] = {}
        self.runs: dict[str, RunRow] = {}
        """The row of every run read (the cached ``RunRow`` that ``ls`` prints)."""
        self.glances: dict[str, RunGlance] = {}
        """Big runs not read yet: what their quick stage said."""
        self.marked: set[str] = set()
        self.sort_key = "run"
        self.filter_text = ""
        self._names: dict[str, str] = {}
        self._name_room: tuple[int, int] | None = None
        """(terminal width, cells) the names had room for at the last layout (the columns as measured)."""
        self._shown: dict[str, str] = {}
        """The names as the table shows them (``distinguishing``), worked out again when runs are found."""
        self._longest = 0
        self._predicate: tuple[str, Callable[[str, RunRow | None], bool]] | None = None
        self._timer: Timer | None = None
        self._dirty: set[str] = set()
        """Rows whose run changed since the last flush."""
        self._layout_due = False
        """True when rows were added since the last layout."""
        self._last_flush = 0.0
        self._interval = RELAYOUT_S

    class Flushed(Message):
        """Rows changed on screen (the screen updates its status line and preview)."""

    # -- data (attributes down) ------------------------------------------------------------------------------

    def add_paths(self, paths: Iterable[Path]) -> None:
        """Discovered runs: a row each, at the next flush."""
        added = False
        for path in paths:
            key = path.as_posix()
            if key in self.paths:
                continue
            self.paths[key] = path
            self._names[key] = relative_name(path, self.base)
            added = True
        if added:
            self._shown = distinguishing(self._names)
            self._longest = max((len(clean(name, newlines=False)) for name in self._shown.values()), default=0)
            self._layout_due = True
            self._soon()

    def set_glance(self, path: Path, quick: RunGlance) -> None:
        """A big run's quick stage: its row shows that until the run is read."""
        key = path.as_posix()
        self.add_paths([path])
        if key not in self.runs:
            self.glances[key] = quick
            self._dirty.add(key)
            self._soon()

    def set_run(self, path: Path, run: RunRow) -> None:
        """A run was read (or read again)."""
        key = path.as_posix()
        self.add_paths([path])
        self.runs[key] = run
        self.glances.pop(key, None)
        self._dirty.add(key)
        self._soon()

    def set_filter(self, text: str) -> None:
        """The filter box changed."""
        self.filter_text = text
        self.relayout()

    def toggle_mark(self, key: str) -> None:
        """Mark or unmark one run."""
        self.marked ^= {key}
        if key in self.rows:
            self.update_cell(key, "mark", self.cells(key)[0])

    # -- layout ----------------------------------------------------------------------------------------------

    @property
    def flush_pending(self) -> bool:
        """True while changes wait for the next flush (tests wait for it)."""
        return self._timer is not None or bool(self._dirty) or self._layout_due

    def _soon(self) -> None:
        """Show the changes now if the last flush was long enough ago, else at the end of the wait."""
        if not self.is_mounted or self._timer is not None:
            return
        wait = self._last_flush + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
        else:
            self._timer = self.set_timer(wait, self.flush)

    def flush(self) -> None:
        """Put every waiting change on screen: cells in place, or a new layout when rows move or widen."""
        started = time.monotonic()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        # Many changed rows (a warm tree's stored rows arrive in batches of thousands): one layout costs less than
        # updating their cells one by one.
        if self._layout_due or 4 * len(self._dirty) > self.row_count or any(self._moves(key) for key in self._dirty):
            self.relayout()
        else:
            for key in self._dirty:
                if key not in self.rows:
                    continue  # filtered out (and staying so): its run is stored, nothing of it is on screen
                for column, value in zip(self.columns_shown(), self.cells(key)):
                    self.update_cell(key, column.key, value)
        self._dirty.clear()
        self._last_flush = time.monotonic()
        # A big table takes longer to lay out: flush it less often, so the rows never hog the UI. The screen redraws
        # the visible rows afterwards (when idle), outside this flush's own time: counted per row on screen.
        shown = min(self.row_count, max(self.size.height, 1))
        self._interval = max(RELAYOUT_S, 4 * (self._last_flush - started + shown * RENDER_ROW_S))
        self.post_message(self.Flushed())

    def _moves(self, key: str) -> bool:
        """True when a changed row must be laid out afresh: it appears, hides, or a value needs a wider column."""
        if key not in self.rows:
            return self._visible(key)
        if not self._visible(key):
            return True
        widths = [c.width for c in self.ordered_columns]
        return any(cell_len(str(v)) > w for v, w in zip(self.cells(key)[1:], widths[1:]))

    def settle(self) -> None:
        """Every run is read: show what waits, then put the rows in sort order. Sorted by name (known from discovery)
        they are in order already, so a tree of 10,000 runs is not laid out once more; widths stay (they only ever
        grow for a longer value, ``STREAMING_WIDTHS``)."""
        if self.flush_pending:
            self.flush()
        if self.sort_key != "run":
            self.relayout()

    def relayout(self, fresh: bool = False) -> None:
        """Lay the rows out now, in sort order; ``fresh``: columns too, widths measured from every row."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._dirty.clear()
        self._layout_due = False
        if self.sort_key not in {c.key for c in self.sortable()}:
            self.sort_key = "run"  # the sort column went off screen (narrower terminal): sort by what is shown
        current = self.cursor_key()
        columns = self.columns_shown()
        wanted = [c.key for c in columns]
        labels = [self.header(c) for c in columns]
        keys = self.ordered_keys()
        rows = [self.cells(key) for key in keys]
        if not fresh and [column.key.value for column in self.ordered_columns] == wanted and \
                [str(column.label) for column in self.ordered_columns] == labels and \
                all(cell_len(str(v)) <= c.width for row in rows for v, c in zip(row[1:], self.ordered_columns[1:])):
            self.clear()  # keep the columns and their measured widths: only the rows are re-laid
        else:
            self.clear(columns=True)
            measured, widths = [], []
            for i, (column, label) in enumerate(zip(columns, labels)):
                # Widths from every row at once, so the layout never depends on the order runs arrived in, and not
                # below the reserved width (a finished read must not make the other columns jump) where there is room.
                measured.append(1 if column is MARK_COLUMN else
                                max([cell_len(label)] + [cell_len(str(r[i])) for r in rows]))
                widths.append(max(measured[-1], STREAMING_WIDTHS.get(column.key, 0)))
            if "top finding" not in wanted and "run" in wanted:
                # The names get exactly what the other columns, as measured, leave: never a sideways scroll.
                at = wanted.index("run")
                room = self._table_width() - sum(w + 2 for i, w in enumerate(widths) if i != at) - 2 - SCROLLBAR
                for i in reversed(range(len(widths))):  # a narrow terminal: the names' least room before reserves
                    back = min(widths[i] - measured[i], max(0, MIN_NAME - room)) if i != at else 0
                    widths[i] -= back
                    room += back
                self._name_room = (self._width(), max(room, MIN_NAME))
                rows = [row[:at] + (self._name_cell(key),) + row[at + 1:] for key, row in zip(keys, rows)]
                widths[at] = max([cell_len(labels[at])] + [cell_len(str(r[at])) for r in rows])
            for column, label, width in zip(columns, labels, widths):
                self.add_column(label, key=column.key, width=width)
        for key, row in zip(keys, rows):
            self.add_row(*row, key=key)
        if current in keys:
            self.move_cursor(row=keys.index(current))

    def _update_dimensions(self, new_rows: Iterable[Any]) -> None:
        """Textual measures every cell of every row added (for columns that size themselves), seconds for 10,000
        rows after each layout; here every column has the width ``relayout`` measured and every row is one line, so
        only the scrollable size is set. (Textual 8.2's own method, pinned in pyproject, does the same when it finds
        nothing to measure.)"""
        if any(column.auto_width for column in self.columns.values()) or any(
                row.auto_height or row.label is not None for row in self.rows.values()):
            super()._update_dimensions(new_rows)
            return
        width = sum(column.get_render_width(self) for column in self.columns.values()) + self._row_label_column_width
        self.virtual_size = Size(width, self._total_row_height + (self.header_height if self.show_header else 0))

    def ordered_keys(self) -> list[str]:
        """Keys of the rows the filter lets through, in sort order."""
        return sorted((k for k in self.paths if self._visible(k)), key=self._sort_value)

    def name_of(self, key: str) -> str:
        """A run's path relative to the path the user gave."""
        return self._names[key]

    def cursor_key(self) -> str | None:
        """The run under the cursor."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # cursor outside the table after a clear
            return None

    def next_sort(self) -> None:
        """Sort by the next sortable column on screen."""
        keys = [c.key for c in self.sortable()]
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)] if self.sort_key in keys else keys[0]
        self.relayout()

    # -- cells -----------------------------------------------------------------------------------------------

    def _haystack(self, key: str) -> str:
        return row_text(self._names[key], self.runs.get(key))

    def _visible(self, key: str) -> bool:
        text = "" if filter_error(self.filter_text) else self.filter_text  # an invalid regex filters nothing
        if not text.strip() or text.strip() == "!":
            return True  # no filter: no row's findings or config is looked at (a cached row's stay encoded)
        if self._predicate is None or self._predicate[0] != text:
            self._predicate = (text, compile_run_filter(text))
        return self._predicate[1](self._haystack(key), self.runs.get(key))

    def _width(self) -> int:
        return self.app.size.width

    def columns_shown(self) -> tuple[Column, ...]:
        """The columns the terminal's width has room for."""
        width = self._width()
        columns = WIDE_COLUMNS if width >= WIDE_AT else NARROW_COLUMNS
        return columns + ((TOP_FINDING,) if width >= TOP_FINDING_AT else ())

    def sortable(self) -> list[Column]:
        """Columns on screen that ``s`` sorts by."""
        return [c for c in self.columns_shown() if c.sort]

    def header(self, column: Column) -> str:
        """A column's header, with the sort arrow on the sort column; every sortable column keeps room for the arrow,
        so sorting never widens a column (nor scrolls the table sideways)."""
        if column.key == self.sort_key and column.sort:
            return f"{column.label}{ARROWS[column.sort]}"
        return f"{column.label} " if column.sort else column.label

    def action_first_row(self) -> None:
        """g / Home: the first run (as on the Log tab, in lazygit and k9s)."""
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        """G / End: the last run."""
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def _table_width(self) -> int:
        return self._width() - (PREVIEW_WIDTH if self._width() >= PREVIEW_AT else 0)

    def _name_cell(self, key: str) -> Text:
        """The run's name as the table shows it: its distinguishing parts, cut in the middle to the room left."""
        return data_text(shorten(clean(self._shown.get(key, self._names[key]), newlines=False), self._name_width()))

    def _name_width(self) -> int:
        """Cells left for the run name (the top finding column, when shown, gets what the names leave)."""
        if self._name_room is not None and self._name_room[0] == self._width() and self._width() < TOP_FINDING_AT:
            return self._name_room[1]  # measured at the last layout
        # The name's own padding and the vertical scrollbar take cells too: a table wider than the screen would
        # scroll sideways and a horizontal scrollbar would take a row.
        others = sum(c.width for c in self.columns_shown()) + 2 + SCROLLBAR
        if self._width() >= TOP_FINDING_AT:
            return max(min(self._longest or MIN_NAME, self._table_width() - others - TOP_FINDING_MIN), MIN_NAME)
        return max(self._table_width() - others, MIN_NAME)

    def cells(self, key: str) -> tuple[Any, ...]:
        """The row of one run, as shown now."""
        name = self._name_cell(key)
        mark = Text(MARK if key in self.marked else " ", self.style_of("runs--mark"))
        run = self.runs.get(key)
        columns = self.columns_shown()
        if run is None:
            loading = Text("loading…", self.style_of("runs--loading"))
            quick = self.glances.get(key)
            if quick is None:
                return (mark, name, "", loading) + ("",) * (len(columns) - 4)
            reading = Text("reading…", self.style_of("runs--loading"))
            known = {"mark": mark, "run": name, "kind": data_text(quick.kind, newlines=False),
                     "status": data_text(quick.status or WAITING, newlines=False), "att": attempts_seen(quick),
                     "step": last_step_seen(quick), "findings": reading}
            return tuple(known.get(c.key, "") for c in columns)
        counts = severity_counts(run)
        worst = max((s for s, n in counts.items() if n), default=None)
        style = {Severity.ERROR: "runs--error", Severity.WARNING: "runs--warning"}.get(worst) if worst is not None \
            else None
        rich_style = self.style_of(style) if style else ""
        findings = Text(findings_cell(run), rich_style)
        values = {
            "mark": mark, "run": name, "kind": data_text(kind_label(run), newlines=False),
            "status": data_text(run.status, newlines=False), "att": str(run.attempts),
            "step": fmt_step(last_step(run)), "best": data_text(best_metric(run), newlines=False),
            "last log": last_logged_cell(run),
            "wandb": data_text(", ".join(run.wandb_run_ids) or "-", newlines=False), "findings": findings,
        }
        if self._width() >= TOP_FINDING_AT:
            room = self._table_width() - sum(c.width for c in columns) - self._name_width() - 4 - SCROLLBAR
            values["top finding"] = Text(shorten_end(top_finding(run), max(min(room, TOP_FINDING_MAX), 10)), rich_style)
        return tuple(values[c.key] for c in columns)

    def _sort_value(self, key: str) -> tuple[int, Any, str]:
        column = self.sort_key
        run = self.runs.get(key)
        name = self._names[key]
        if column == "run":
            return (0, "", name)  # the name is known from discovery: a row never moves when its run arrives
        if run is None:
            return (1, "", name)
        value = {
            "run": "",
            "kind": kind_label(run),
            "status": run.status,
            "att": -run.attempts,
            "step": -(last_step(run) or 0),
            "best": _best_number(run),
            "last log": -(last_logged(run) or 0.0),
            "findings": tuple(-severity_counts(run)[s] for s in sorted(Severity, reverse=True)),
        }[column]
        return (0, value, name)


def _best_number(row: RunRow) -> tuple[int, float]:
    """The best column sorts by the number (biggest first; runs without one last), never by the cell's text, in
    which ``mIoU 9.5`` would come before ``mIoU 10.2`` (claims4)."""
    best = row.best_metric
    value = best.value if best is not None else float("nan")
    return (0, -value) if value == value else (1, 0.0)
