"""A modal table of the config keys that differ between documents (runs, or a run's own configs)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ...analysis.secrets import mask_value
from ...report.safe_text import SHOWN_LINE_CHARS, clean, data_text, elide
from ..facts import flat_config

ABSENT = "—"
MAX_CELL = 240
"""A longer value is cut (with …); shorter ones wrap within their column."""


def config_differences(columns: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, list[str]]]:
    """(dotted key, one text per column) for every key whose value is not the same in all columns."""
    flats = [flat_config(mask_value(data)) for _label, data in columns]
    keys = sorted(set().union(*flats)) if flats else []
    rows = []
    for key in keys:
        values = [flat.get(key, ABSENT) for flat in flats]
        if any(v != values[0] for v in values[1:]):
            rows.append((key, [_cell(v) for v in values]))
    return rows


def _cell(value: Any) -> str:
    text = ABSENT if value is ABSENT else ("null" if value is None else str(value))
    text = clean(text, newlines=False)
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


class ConfigDiffScreen(ModalScreen[None]):
    """Keys that differ between several config documents, one column each."""

    BINDINGS = [Binding("escape,q,d", "dismiss", "Close")]

    def __init__(self, title: str, columns: list[tuple[str, dict[str, Any]]], legend: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.legend = legend
        self.columns = columns
        self.rows = config_differences(columns)

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-dialog"):
            yield Static(clean(f"{self.title_text}: {self._headline()}", newlines=False), id="diff-title", markup=False)
            if self.legend:
                yield Static(clean(self.legend), id="diff-legend", markup=False)
            yield DataTable(id="diff-table", cursor_type="row", zebra_stripes=True)
            yield Static("escape close   (secrets masked; — means absent)", id="diff-keys")

    def _headline(self) -> str:
        """How many keys differ, or why nothing can: documents missing are said, never shown as 'no differences'."""
        missing = [label for label, data in self.columns if not data]
        if len(missing) == len(self.columns):
            return "none of them has a config document"
        if missing:
            return f"{len(self.rows)} differing key(s); no config document: {', '.join(missing)}"
        return f"{len(self.rows)} differing key(s)"

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # Every document's column on screen: the width is shared out and long values wrap, never pushed off-screen.
        width = min(int(self.app.size.width * 0.9), 110) - 6
        key_width = min(max([3] + [len(clean(key, newlines=False)) for key, _ in self.rows]), 30)
        value_width = max((width - key_width - 2 * (len(self.columns) + 1)) // max(len(self.columns), 1), 8)
        table.add_column("key", width=key_width)
        for label, _data in self.columns:
            table.add_column(data_text(label, newlines=False), width=value_width)
        for key, values in self.rows:
            table.add_row(data_text(elide(key), newlines=False), *(data_text(elide(v, SHOWN_LINE_CHARS)) for v in values),
                          height=None)
        if not self.rows:
            table.add_row("(no differences)" if all(data for _l, data in self.columns) else "(nothing to compare)",
                          *[""] * len(self.columns))
        table.focus()
