"""The runs table's status line: counts, sort, marks, loading progress and how fresh a refreshed table is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from ...report.safe_text import clean


@dataclass(frozen=True, slots=True)
class TableState:
    """What the status line reports about the table (the screen gathers it)."""

    runs: int
    shown: int
    sort: str
    marked: int
    live: int
    filter_error: str | None
    cursor: str = ""
    """The cursor row's full path (the table may show it cut to what tells the runs apart)."""


class RunsStatus(Static):
    """One line under the table; it keeps counting "updated Ns ago" by itself."""

    def __init__(self, style_of: Callable[[str], Style], clock: Callable[[], float] = time.monotonic, *,
                 id: str | None = None) -> None:
        super().__init__("", id=id)
        self.style_of = style_of
        """The screen's styles (``runs--mark``, ``runs--error``) by name."""
        self.clock = clock
        self.state: TableState | None = None
        self.progress = ""
        """Loading progress (``loading 3/1000…``, a big run's read), or '' when every run is read."""
        self.updated_at: float | None = None
        """Clock time of the last (re)load of any run; shown as "updated Ns ago" while runs are live."""
        self.refreshed = False
        """True once the user pressed ``r`` (from then on the line says how fresh the table is)."""

    def on_mount(self) -> None:
        self.set_interval(1.0, self.redraw)  # "updated Ns ago" keeps counting

    def show(self, state: TableState) -> None:
        """New table facts."""
        self.state = state
        self.redraw()

    def set_progress(self, done: int, total: int, current: str | None = None) -> None:
        """Loading progress: n of N runs, and what a long read is doing."""
        counted = f"loading {done}/{total}…" if done < total else ""
        self.progress = "  ".join(part for part in (counted, current or "") if part)
        self.redraw()

    def loaded(self) -> None:
        """A run was (re)loaded just now."""
        self.updated_at = self.clock()

    def redraw(self) -> None:
        """Render the line from the facts it holds."""
        state = self.state
        if state is None:
            return
        status = Text()
        if state.cursor:
            status.append(clean(state.cursor, newlines=False) + "\n", self.style_of("runs--loading"))
        status.append("   ".join([f"{state.runs} run(s)", f"{state.shown} shown", f"sort: {state.sort}"]))
        if state.marked:
            status.append(f"   {state.marked} marked", self.style_of("runs--mark"))
        if self.progress:
            status.append("   " + clean(self.progress, newlines=False))
        if self.updated_at is not None and (state.live or self.refreshed) and not self.progress:
            # Only once every run is read: "updated 0s ago" while still loading would claim a fresh table.
            ago = max(int(self.clock() - self.updated_at), 0)
            status.append(f"   {state.live} live" if state.live else "")
            status.append(f"   updated {ago}s ago (r refresh)")
        if state.filter_error:
            status.append("   filter: " + clean(state.filter_error, newlines=False),
                          self.style_of("runs--error"))
        self.update(status)
