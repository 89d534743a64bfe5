"""The runs table: one row per run, filled in as runs are read, laid out again at most a few times a second.

Rows stream in: a discovered run shows its name at once, a big run what its quick stage says (status,
attempts and step from the tail), a read run all its facts. Cells change in place; when a value needs a
wider column, or a row must move or hide, the whole table is laid out again, but never more often than
every ``RELAYOUT_S``, so a tree of a thousand runs costs a few layouts, not one per run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer

from ...analysis.names import name_text
from ...analysis.run_filter import row_text
from ...evidence import RunRow
from ...report.safe_text import clean
from ..facts import compile_run_filter, filter_error, relative_name
from .bulk_table import BulkTable
from .run_names import distinguishing
from .runs_cells import Cell, CellMaker, CellStyles, RowCells
from .runs_columns import (ARROWS, MARK, MIN_NAME, NARROW_COLUMNS, PREVIEW_AT, PREVIEW_WIDTH, RELAYOUT_S,
                           RENDER_ROW_S, SCROLLBAR, STREAMING_WIDTHS, TOP_FINDING, TOP_FINDING_AT, TOP_FINDING_MAX,
                           TOP_FINDING_MIN, WIDE_AT, WIDE_COLUMNS, Column, sort_value)

if TYPE_CHECKING:
    from ...load.quick import RunGlance  # a type only: the quick stage's module imports the loaders

__all__ = ["ARROWS", "MARK", "PREVIEW_AT", "RunsTable"]


class RunsTable(BulkTable):
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
        self._under: str | None = None
        """The base's absolute path and a slash: a path starting so is a run below it."""
        self._name_room: tuple[int, int] | None = None
        """(terminal width, cells) the names had room for at the last layout (the columns as measured)."""
        self._shown: dict[str, str] = {}
        """The names as the table shows them (``distinguishing``, cleaned), worked out again when runs were found."""
        self._raw_shown: dict[str, str] = {}
        """``distinguishing``'s names before cleaning (a name is cleaned again only when it changed)."""
        self._shown_due = False
        """True when runs were found since ``_shown`` was worked out (it is, at the next layout: not per batch)."""
        self._longest = 0
        self._predicate: tuple[str, Callable[[str, RunRow | None], bool]] | None = None
        self._cells = RowCells(self.runs, self.glances, self.marked, self._shown)
        """Each run's row, made when it changes (not per layout)."""
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
            self._names[key] = self._relative(key, path)
            added = True
        if added:
            self._shown_due = True
            self._layout_due = True
            self._soon()

    def _relative(self, key: str, path: Path) -> str:
        """``relative_name(path, base)``; at once for a path found under the base (10,000 runs: no relpath each)."""
        if self._under is None:
            self._under = os.path.abspath(self.base).rstrip("/") + "/"
        if key.startswith(self._under) and "/." not in key and "//" not in key:
            return name_text(key[len(self._under):])  # what relpath gives for a normal path below the base
        return relative_name(path, self.base)

    def set_glance(self, path: Path, quick: RunGlance) -> None:
        """A big run's quick stage: its row shows that until the run is read."""
        key = path.as_posix()
        self.add_paths([path])
        if key not in self.runs:
            self.glances[key] = quick
            self._changed(key)
            self._soon()

    def set_run(self, path: Path, run: RunRow) -> None:
        """A run was read (or read again)."""
        self.set_runs([(path, run)])

    def set_runs(self, rows: Iterable[tuple[Path, RunRow]]) -> None:
        """Runs were read (a warm tree's stored rows arrive thousands at a time)."""
        rows = list(rows)
        self.add_paths([path for path, _row in rows if path.as_posix() not in self.paths])
        for path, run in rows:
            key = path.as_posix()
            self.runs[key] = run
            self.glances.pop(key, None)
            self._changed(key)
        if rows:
            self._soon()

    def _changed(self, key: str) -> None:
        self._cells.drop(key)
        self._dirty.add(key)

    def set_filter(self, text: str) -> None:
        """The filter box changed."""
        self.filter_text = text
        self.relayout()

    def toggle_mark(self, key: str) -> None:
        """Mark or unmark one run."""
        self.marked.symmetric_difference_update({key})  # in place: the row cells read this set
        self._cells.drop(key, values=False)
        if key in self.rows:
            self.update_cell(key, "mark", self._prepare().mark(key in self.marked))

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
        self._prepare()
        # Many changed rows (a warm tree's stored rows arrive in batches of thousands): one layout costs less than
        # updating their cells one by one.
        if self._layout_due or 4 * len(self._dirty) > self.row_count or any(self._moves(key) for key in self._dirty):
            self.relayout()
        else:
            columns = self.columns_shown()
            name_width = self._name_width()
            for key in self._dirty:
                if key not in self.rows:
                    continue  # filtered out (and staying so): its run is stored, nothing of it is on screen
                for column, value in zip(columns, self._laid_row(key, columns, name_width)[0]):
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
        columns = self.columns_shown()
        name_width = self._name_width()
        return any(need > column.width for need, column in
                   zip(self._laid_row(key, columns, name_width)[1][1:], self.ordered_columns[1:]))

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
        self._prepare()
        if self.sort_key not in {c.key for c in self.sortable()}:
            self.sort_key = "run"  # the sort column went off screen (narrower terminal): sort by what is shown
        current = self.cursor_key()
        columns = self.columns_shown()
        wanted = [c.key for c in columns]
        labels = [self.header(c) for c in columns]
        keys = self.ordered_keys()
        name_width = self._name_width()
        # Each column's widest cell (the cells were made as their rows arrived: only their widths are gathered).
        laid = [self._laid_row(key, columns, name_width) for key in keys]
        needs = [max(column) for column in zip([0] * len(columns), *(widths for _cells, widths in laid))]
        if not fresh and [column.key.value for column in self.ordered_columns] == wanted and \
                [str(column.label) for column in self.ordered_columns] == labels and \
                all(need <= c.width for need, c in zip(needs[1:], self.ordered_columns[1:])):
            self.clear_rows()  # keep the columns and their measured widths: only the rows are re-laid
        else:
            self.clear(columns=True)
            measured, widths = [], []
            for column, label, need in zip(columns, labels, needs):
                # Widths from every row at once, so the layout never depends on the order runs arrived in, and not
                # below the reserved width (a finished read must not make the other columns jump) where there is room.
                measured.append(1 if column.key == "mark" else max(cell_len(label), need))
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
                if self._name_width() != name_width:
                    name_width = self._name_width()
                    laid = [self._laid_row(key, columns, name_width) for key in keys]  # the names cut anew
                widths[at] = max([cell_len(labels[at])] + [widths[at] for _cells, widths in laid])
            for column, label, width in zip(columns, labels, widths):
                self.add_column(label, key=column.key, width=width)
        self.put_rows(keys, [cells for cells, _widths in laid])
        if current in keys:
            self.move_cursor(row=keys.index(current))

    def ordered_keys(self) -> list[str]:
        """Keys of the rows the filter lets through, in sort order."""
        if self.sort_key == "run" and self._predicate_now() is None:
            return sorted(self.paths, key=self._names.__getitem__)  # the order _sort_value gives, found faster
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

    def _predicate_now(self) -> Callable[[str, RunRow | None], bool] | None:
        """The filter as a predicate, or None when it lets every run through."""
        text = "" if filter_error(self.filter_text) else self.filter_text  # an invalid regex filters nothing
        if not text.strip() or text.strip() == "!":
            return None  # no filter: no row's findings or config is looked at (a cached row's stay encoded)
        if self._predicate is None or self._predicate[0] != text:
            self._predicate = (text, compile_run_filter(text))
        return self._predicate[1]

    def _visible(self, key: str) -> bool:
        predicate = self._predicate_now()
        return predicate is None or predicate(self._haystack(key), self.runs.get(key))

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

    def _shown_names(self) -> dict[str, str]:
        """The names as shown (their distinguishing parts, cleaned), worked out again if runs were found since."""
        if self._shown_due:
            self._shown_due = False
            raw, cleaned = self._raw_shown, self._shown
            shown = distinguishing(self._names)
            for key in [k for k, name in shown.items() if raw.get(k) != name]:
                cleaned[key] = clean(shown[key], newlines=False)
                self._cells.drop(key, values=False)
            self._raw_shown = shown
            self._longest = max((len(name) for name in self._shown.values()), default=0)
        return self._shown

    def _name_width(self) -> int:
        """Cells left for the run name (the top finding column, when shown, gets what the names leave)."""
        if self._name_room is not None and self._name_room[0] == self._width() and self._width() < TOP_FINDING_AT:
            return self._name_room[1]  # measured at the last layout
        # The name's own padding and the vertical scrollbar take cells too: a table wider than the screen would
        # scroll sideways and a horizontal scrollbar would take a row.
        others = sum(c.width for c in self.columns_shown()) + 2 + SCROLLBAR
        if self._width() >= TOP_FINDING_AT:
            self._shown_names()
            return max(min(self._longest or MIN_NAME, self._table_width() - others - TOP_FINDING_MIN), MIN_NAME)
        return max(self._table_width() - others, MIN_NAME)

    def _top_room(self, columns: tuple[Column, ...], name_width: int) -> int:
        """Cells the top finding gets (wide terminals: what the other columns and the names leave, within bounds)."""
        room = self._table_width() - sum(c.width for c in columns) - name_width - 4 - SCROLLBAR
        return max(min(room, TOP_FINDING_MAX), 10)

    def _laid_row(self, key: str, columns: tuple[Column, ...], name_width: int) -> tuple[tuple[Cell, ...], list[int]]:
        return self._cells.row(key, tuple(c.key for c in columns), name_width, self._top_room(columns, name_width))

    def cells(self, key: str) -> tuple[Any, ...]:
        """The row of one run, as shown now."""
        self._prepare()
        columns = self.columns_shown()
        return self._laid_row(key, columns, self._name_width())[0]

    def _prepare(self) -> CellMaker:
        """The styles and the shown names as they are now (before cells are gathered); the cell maker."""
        self._shown_names()
        return self._cells.use_styles(CellStyles(self.style_of("runs--error"), self.style_of("runs--warning"),
                                                 self.style_of("runs--loading"), self.style_of("runs--mark")))

    def _sort_value(self, key: str) -> tuple[int, Any, str]:
        return sort_value(self.sort_key, self.runs.get(key), self._names[key])
