"""The runs table's columns (which ones at which terminal width) and the numbers its layout goes by."""

from __future__ import annotations

from dataclasses import dataclass


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
