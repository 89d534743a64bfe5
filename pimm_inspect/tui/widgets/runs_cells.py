"""The runs table's cells: each run's values made once, when its row (or quick stage) arrives, with their widths.

A layout of thousands of rows then only gathers values already made: no per-cell text cleaning, no ``Text`` per
cell. A cell of data is a ``DataCell`` (DataTable draws it as a plain ``Text`` of the cleaned string, never reading
it as markup, and only for the rows on screen); the few styled cells (mark, loading, findings) are ``Text`` shared by
every row showing the same text in the same style.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from ...evidence import RunRow
from ..row_texts import COLUMNS, ERROR, WARNING, texts_of
from ..row_texts import clean_cell as _clean
from ..stages import WAITING, attempts_seen, last_step_seen
from .run_names import shorten, shorten_end
from .run_preview import top_finding

if TYPE_CHECKING:
    from ...load.quick import RunGlance  # a type only: the quick stage's module imports the loaders


class DataCell:
    """One cell of file-derived text, cleaned once: DataTable draws it as a plain ``Text`` (a ``str`` cell would be
    read as markup). ``str()`` and ``.plain`` give the text, as a ``Text`` cell's would."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"DataCell({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataCell) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def plain(self) -> str:
        return self.text


Cell = DataCell | Text
"""What a runs-table cell holds."""


@dataclass(frozen=True, slots=True)
class CellStyles:
    """The screen's component styles the cells use (read once per layout: a theme change makes new ones)."""

    error: Style
    warning: Style
    loading: Style
    mark: Style


@dataclass(frozen=True, slots=True)
class RowValues:
    """A run's cells by column key (all but the mark and the name, which the layout adds) and each one's width."""

    cells: dict[str, Cell]
    widths: dict[str, int]
    style: Style | str
    """The findings' style (error, warning or none): the top finding column's too."""


class CellMaker:
    """Makes ``RowValues``; styled texts are shared (a table of 10,000 runs holds a handful of them)."""

    def __init__(self, styles: CellStyles) -> None:
        self.styles = styles
        self._styled: dict[tuple[str, Style | str], Text] = {}
        self._marks = (Text(" ", styles.mark), Text("●", styles.mark))

    def styled(self, text: str, style: Style | str) -> Text:
        """One shared ``Text`` per (text, style): ``text`` must be clean already."""
        key = (text, style)
        found = self._styled.get(key)
        if found is None:
            found = self._styled[key] = Text(text, style)
        return found

    def mark(self, marked: bool) -> Text:
        """The first column: ● on a marked run."""
        return self._marks[marked]

    def row(self, run: RunRow | None, quick: RunGlance | None) -> RowValues:
        """The cells of a run read (``run``), of a big run known by its quick stage only, or of one still loading."""
        if run is None:
            if quick is None:
                cells: dict[str, Cell] = {"status": self.styled("loading…", self.styles.loading)}
            else:
                cells = {"kind": DataCell(_clean(quick.kind)),
                         "status": DataCell(_clean(quick.status or WAITING)),
                         "att": DataCell(_clean(attempts_seen(quick))),
                         "step": DataCell(_clean(last_step_seen(quick))),
                         "findings": self.styled("reading…", self.styles.loading)}
            return RowValues(cells, {k: cell_len(str(v)) for k, v in cells.items()}, "")
        *texts, worst = texts_of(run)  # worked out by the prefetch child for a row it sent (``row_texts``)
        style: Style | str = self.styles.error if worst == ERROR else self.styles.warning if worst == WARNING else ""
        cells = dict(zip(COLUMNS, map(DataCell, texts)))
        cells["findings"] = self.styled(texts[-1], style)
        return RowValues(cells, dict(zip(COLUMNS, map(cell_len, texts))), style)


def top_finding_text(run: RunRow | None) -> str:
    """The worst finding's message for the top finding column ('' while loading; decodes the row's findings)."""
    return top_finding(run) if run is not None else ""


EMPTY = DataCell("")


class RowCells:
    """Every run's row as the table lays it out (its cells and their widths), made when the run changes, not per
    layout. Reads the table's own maps of runs, glances, marks and shown names (their owner drops what changed)."""

    def __init__(self, runs: dict[str, RunRow], glances: dict[str, RunGlance], marked: set[str],
                 shown: dict[str, str]) -> None:
        self.runs = runs
        self.glances = glances
        self.marked = marked
        self.shown = shown
        """The names as shown (distinguishing parts, cleaned), not yet cut to the width."""
        self.maker: CellMaker | None = None
        self._values: dict[str, RowValues] = {}
        self._top: dict[str, tuple[int, Text]] = {}
        self._laid: dict[str, tuple[tuple[Cell, ...], list[int]]] = {}
        self._laid_for: tuple[tuple[str, ...], int, int] | None = None
        """The columns, name width and top finding room the rows in ``_laid`` were made for."""

    def use_styles(self, styles: CellStyles) -> CellMaker:
        """The maker for the screen's styles now (new styles: every row is made again)."""
        if self.maker is None or self.maker.styles != styles:
            self.maker = CellMaker(styles)
            self._values.clear()
            self._top.clear()
            self._laid.clear()
        return self.maker

    def drop(self, key: str, values: bool = True) -> None:
        """``key``'s run (``values``) or only its mark or name changed: its row is made again when next asked."""
        if values:
            self._values.pop(key, None)
            self._top.pop(key, None)
        self._laid.pop(key, None)

    def row(self, key: str, columns: tuple[str, ...], name_width: int, top_room: int
            ) -> tuple[tuple[Cell, ...], list[int]]:
        """A run's cells for ``columns`` (keys), the name cut to ``name_width`` and the top finding to ``top_room``,
        and the cells each one takes."""
        if self._laid_for != (columns, name_width, top_room):
            self._laid_for = (columns, name_width, top_room)
            self._laid.clear()
        found = self._laid.get(key)
        if found is not None:
            return found
        maker = self.maker
        assert maker is not None, "use_styles first"
        values = self._values.get(key)
        if values is None:
            values = self._values[key] = maker.row(self.runs.get(key), self.glances.get(key))
        cells: list[Cell] = []
        widths: list[int] = []
        for column in columns:
            if column == "mark":
                cells.append(maker.mark(key in self.marked))
                widths.append(1)
            elif column == "run":
                name = shorten(self.shown[key], name_width)
                cells.append(DataCell(name))
                widths.append(cell_len(name))
            elif column == "top finding":
                top = self._top_cell(key, top_room, values.style) if key in self.runs else EMPTY
                cells.append(top)
                widths.append(cell_len(top.plain))
            else:
                cells.append(values.cells.get(column, EMPTY))
                widths.append(values.widths.get(column, 0))
        found = self._laid[key] = (tuple(cells), widths)
        return found

    def _top_cell(self, key: str, room: int, style: Style | str) -> Text:
        found = self._top.get(key)
        if found is None or found[0] != room:
            found = self._top[key] = (room, Text(shorten_end(top_finding_text(self.runs.get(key)), room), style))
        return found[1]
