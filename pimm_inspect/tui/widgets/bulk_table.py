"""A DataTable that takes thousands of one-line rows at once: what ``add_row`` does per row, done once per batch.

``DataTable.add_row`` re-validates the cursor, lists the columns and asks for an idle pass for every row (about
50 µs each: half a second for 10,000 runs, on every layout), and measures every cell of every new row on the next
idle pass. Rows here are one line, unlabelled, and every column has a fixed width, so a batch only fills the table's
maps and the scrollable size is set once. Relies on DataTable's internals as of Textual 8.2.8 (pinned in
pyproject): ``_row_locations``, ``_data``, ``rows``, ``_new_rows``, ``_update_count``, ``_update_dimensions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.geometry import Size
from textual.widgets import DataTable
from textual.widgets._data_table import CursorType, Row, RowKey

from .runs_cells import Cell, DataCell

RENDERS_KEPT = 4096
"""Drawn cells kept across layouts (a screenful is a few hundred)."""


class BulkTable(DataTable[Cell]):
    """``put_rows``: many rows in one step; every column must have a fixed width (``add_column(width=...)``)."""

    def __init__(self, *, id: str | None = None, cursor_type: CursorType = "cell", zebra_stripes: bool = False) -> None:
        self._drawn: dict[tuple[object, ...], tuple[Cell, SegmentLines]] = {}
        """Cells drawn, by what they show and where: kept across ``clear_rows`` (DataTable's own cache is keyed by
        its update count, so every layout would draw the screenful again although the same rows sit there)."""
        self._keep_drawn = False
        super().__init__(id=id, cursor_type=cursor_type, zebra_stripes=zebra_stripes)

    def clear_rows(self, columns: bool = False) -> None:
        """``clear``, keeping the cells drawn (rows laid out again where they were cost no drawing)."""
        self._keep_drawn = not columns
        try:
            self.clear(columns=columns)
        finally:
            self._keep_drawn = False

    def _clear_caches(self) -> None:
        super()._clear_caches()
        if not self._keep_drawn:
            self._drawn.clear()  # styles, cursor or padding changed: every cell is drawn anew

    def notify_style_update(self) -> None:
        self._drawn.clear()
        super().notify_style_update()

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False,
                     hover: bool = False) -> SegmentLines:
        if row_index < -1 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        column_key = self._column_locations.get_key(column_index)
        if row_index == -1:  # the header: the column's label
            if column_key is None:
                return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            cell: Cell = self.columns[column_key].label
            height = self.header_height
        else:
            row_key = self._row_locations.get_key(row_index)
            if row_key is None or column_key is None:
                return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            cell = self._data[row_key][column_key]
            height = self.rows[row_key].height
        # The cell itself (a DataCell by its text, a shared Text by identity: the entry holds it, so that identity
        # is never another's) and everything DataTable draws it by, the row and column too (they are in the meta
        # a click reads).
        key = (row_index, column_index, cell if isinstance(cell, DataCell) else id(cell), width, base_style, cursor,
               hover, self._show_hover_cursor, self._pseudo_class_state)
        found = self._drawn.get(key)
        if found is not None:
            return found[1]
        lines = self._draw_plain(cell, height, row_index, column_index, base_style, width, cursor, hover)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if len(self._drawn) >= RENDERS_KEPT:
            self._drawn.clear()
        self._drawn[key] = (cell, lines)
        return lines

    def put_rows(self, keys: Sequence[str], rows: Iterable[Sequence[Cell]]) -> None:
        """Add one row per key at the bottom, in order (as ``add_row(*row, key=key)`` for each would)."""
        columns = [column.key for column in self.ordered_columns]
        start = self.row_count
        locations = self._row_locations
        data = self._data
        table_rows = self.rows
        new: list[RowKey] = []
        for index, (key, row) in enumerate(zip(keys, rows), start):
            row_key = RowKey(key)
            if row_key in locations:
                raise ValueError(f"row {key!r} is in the table already")
            if len(row) > len(columns):
                raise ValueError("More values provided than there are columns.")
            locations[row_key] = index
            data[row_key] = dict(zip(columns, row))
            table_rows[row_key] = Row(row_key, 1)
            new.append(row_key)
        if not new:
            return
        self._new_rows.update(new)
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate  # as add_row: clamped to the rows there now
        if start == 0 and columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()  # a cursor cell exists now: the highlighted message, as add_row posts it
        self._update_count += 1
        self.check_idle()

    def _update_dimensions(self, new_rows: Iterable[Any]) -> None:
        """Textual measures every cell of every row added (for columns that size themselves), seconds for 10,000
        rows after each layout; here every column has a fixed width and every row is one line, so only the
        scrollable size is set. (Textual 8.2's own method does the same when it finds nothing to measure.)"""
        if any(column.auto_width for column in self.columns.values()) or any(
                row.auto_height or row.label is not None for row in self.rows.values()):
            super()._update_dimensions(new_rows)
            return
        width = sum(column.get_render_width(self) for column in self.columns.values()) + self._row_label_column_width
        self.virtual_size = Size(width, self._total_row_height + (self.header_height if self.show_header else 0))

    def _draw_plain(self, cell: Cell, height: int, row_index: int, column_index: int, base_style: Style, width: int,
                    cursor: bool, hover: bool) -> SegmentLines | None:
        """A one-line cell (or header label) of printable text, one cell per character, that fits, drawn as
        DataTable draws it (``Styled(Padding(cell))`` through Rich: padding and text in the row's style with the
        cell's own style on the text, the cursor's after) without Rich's renderer; None for anything else (DataTable
        draws that)."""
        if isinstance(cell, DataCell):
            text, own = cell.text, None
        elif isinstance(cell, Text) and not cell.spans and cell.justify in (None, "default", "left") and (
                isinstance(cell.style, Style) or cell.style == ""):
            text, own = cell.plain, cell.style or None
        else:
            return None
        pad = self.cell_padding
        if len(text) > width - 2 * pad or not text.isprintable() or self.fixed_columns or self.fixed_rows \
                or height != 1 or not (text.isascii() or cell_len(text) == len(text)):
            return None
        component, post = self._get_styles_to_render_cell(
            row_index == -1, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
        around = pre + post if pre else post
        if own is None:
            return [[Segment(" " * pad + text + " " * (width - pad - len(text)), around)]]
        assert isinstance(own, Style)
        return [[Segment(" " * pad, around), Segment(text, pre + own + post), Segment(" " * (width - pad - len(text)),
                                                                                    around)]]

