"""The Checkpoints and Findings tabs: DataTables filled from the run (and the Checkpoints tab's restart line)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ...analysis.secrets import mask_text
from ...analysis.summary import expected_cursor, restored_by, restored_text
from ...model import CheckpointInfo, Run
from ...report.safe_text import clean_name, data_text, finding_text
from ..facts import attempt_marks, fmt_range, fmt_step, human_bytes


CHECKPOINT_COLUMNS = (("path", 0), ("restored by", 0), ("step", 0), ("complete", 1), ("resume", 2), ("size", 3),
                      ("cursor", 4), ("expected", 5), ("role", 6), ("epoch", 7), ("W&B id", 8), ("format", 9))
"""(column, drop rank): narrow terminals drop the highest ranks first (format, W&B id, epoch ... never path,
step, or which attempts restarted from the checkpoint)."""
CHECKPOINT_WIDTHS = {"path": 24, "restored by": 13, "step": 6, "complete": 10, "resume": 10, "size": 10, "cursor": 8,
                     "expected": 10, "role": 8, "epoch": 7, "W&B id": 12, "format": 8}
"""Cells each column needs with padding (path: its share when short)."""
PATH_MIN = 16
"""The path column is never narrower than this; longer paths wrap onto more lines of their row."""


def checkpoint_columns(width: int, path_width: int, restores: bool = True) -> list[str]:
    """The columns that fit ``width``, dropping the least useful first, in display order (``restored by`` only
    when some attempt restarted from a checkpoint)."""
    kept = [name for name, _rank in CHECKPOINT_COLUMNS if restores or name != "restored by"]
    by_drop = sorted(CHECKPOINT_COLUMNS, key=lambda c: -c[1])
    need: Callable[[list[str]], int] = lambda names: sum(path_width if n == "path" else CHECKPOINT_WIDTHS[n] for n in names)  # noqa: E731
    for name, rank in by_drop:
        if need(kept) <= width or rank == 0:
            break
        if name in kept:
            kept.remove(name)
    order = ("path", "restored by", "format", "role", "complete", "step", "epoch", "W&B id", "cursor", "expected",
             "size", "resume")
    return [n for n in order if n in kept]


def checkpoint_sort_key(ck: CheckpointInfo) -> tuple[bool, int, str]:
    """Checkpoints by step as a number (iter_25 before iter_100), unknown steps last, then by path."""
    return (ck.global_step is None, ck.global_step or 0, ck.path)


def restores_text(run: Run) -> str:
    """Which attempts restarted from which checkpoint, at which step, from ``Attempt.restored_checkpoint`` and
    ``restore_step``: ``#2 #3 restarted from model/model_last.pth at step 50 (it holds step 100 now)``."""
    held = {ck.path: ck.global_step for ck in run.checkpoints}
    parts = []
    for path, items in restored_by(run).items():
        steps = {step for _a, step in items}
        if len(steps) == 1:
            (step,) = steps
            text = f"{attempt_marks([a for a, _s in items])} restarted from {path}" + \
                (f" at step {step}" if step is not None else "")
        else:
            text = ", ".join(f"#{a} (step {fmt_step(s)})" for a, s in items) + f" restarted from {path}"
        if path not in held:
            text += " (not in this run's folder)"
        elif held[path] is not None and held[path] not in steps:
            text += f" (it holds step {held[path]} now)"
        parts.append(text)
    return "; ".join(parts)


class CheckpointsPane(Vertical):
    """The Checkpoints tab: which checkpoint each attempt restarted from, above one row per checkpoint."""

    def compose(self) -> ComposeResult:
        yield Static("", id="checkpoint-restores", markup=False)
        yield CheckpointTable(id="checkpoint-table")

    def set_run(self, run: Run) -> None:
        """Fill the line and the table."""
        text = restores_text(run)
        line = self.query_one("#checkpoint-restores", Static)
        line.update(data_text(mask_text(text)))
        line.display = bool(text)
        self.query_one(CheckpointTable).set_run(run)

    def show_pending(self, text: str) -> None:
        """No checkpoints yet: say why (the run is still being read), never an empty table."""
        line = self.query_one("#checkpoint-restores", Static)
        line.update(text)
        line.display = True
        table = self.query_one(CheckpointTable)
        table.run = None
        table.clear()


class CheckpointTable(DataTable[str | Text]):
    """One row per checkpoint by step: what it holds, which attempts restarted from it, whether resume picks it."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"checkpoints--bad"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: Run | None = None
        self._laid_out_for: tuple[tuple[str, ...], int] = ((), 0)

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def on_resize(self) -> None:
        """Columns come and go with the width, and the path column wraps to it."""
        if self.run is not None and self._layout(self.run) != self._laid_out_for:
            self.set_run(self.run)

    def _layout(self, run: Run) -> tuple[tuple[str, ...], int]:
        """(columns, path column width) for the current width."""
        width = (self.size.width or self.app.size.width) - 2
        longest = max((len(clean_name(ck.path)) for ck in run.checkpoints), default=PATH_MIN)
        wanted = min(longest, 40) + 2
        columns = checkpoint_columns(width, wanted, bool(restored_by(run)))
        others = sum(CHECKPOINT_WIDTHS[c] for c in columns if c != "path")
        # The path gets what the other columns leave (up to its length); a longer path wraps, never cut.
        path_width = max(min(longest, width - others - 2), PATH_MIN)
        return tuple(columns), path_width

    def set_run(self, run: Run) -> None:
        """Fill the table."""
        self.run = run
        layout = self._layout(run)
        self._laid_out_for = layout
        columns, path_width = layout
        self.clear(columns=True)
        for column in columns:
            self.add_column(column, key=column, width=path_width if column == "path" else None)
        if not run.checkpoints:
            self.add_row("(no checkpoints)", *[""] * (len(columns) - 1))
            return
        bad = self.get_component_rich_style("checkpoints--bad")
        restores = restored_by(run)
        for ck in sorted(run.checkpoints, key=checkpoint_sort_key):
            expected = expected_cursor(ck)
            mismatch = expected is not None and ck.wandb_cursor is not None and expected != ck.wandb_cursor
            cells: dict[str, str | Text] = {
                "path": Text(clean_name(ck.path)), "format": data_text(ck.format), "role": data_text(ck.role),
                "restored by": restored_text(restores[ck.path]) if ck.path in restores else "",
                "complete": "yes" if ck.complete else Text("NO", bad), "step": fmt_step(ck.global_step),
                "epoch": fmt_step(ck.epoch), "W&B id": data_text(ck.wandb_run_id or "-", newlines=False),
                "cursor": Text(fmt_step(ck.wandb_cursor) + (" ≠" if mismatch else ""), bad if mismatch else ""),
                "expected": fmt_step(expected), "size": human_bytes(ck.size_bytes) if ck.size_bytes else "-",
                "resume": "◀ picked" if ck.resume_candidate else "",
            }
            # height None: a path longer than its column wraps onto more lines of its row.
            self.add_row(*(cells[c] for c in columns), key=ck.path, height=None)


FINDING_COLUMNS = ("severity", "code", "attempts", "steps", "message")
MESSAGE_MIN = 24
"""The message column is never narrower than this; a longer message wraps onto more lines of its row."""


class FindingsTable(DataTable[str | Text]):
    """One row per finding, worst first, its message wrapped to the screen; enter opens the explanation."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"findings--error", "findings--warning", "findings--info"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: Run | None = None
        self._message_width = 0

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def on_resize(self) -> None:
        """The message column takes what the others leave, so the table never scrolls sideways."""
        if self.run is not None and self._width_for(self._cells(self.run)) != self._message_width:
            self.set_run(self.run)

    def show_pending(self, text: str) -> None:
        """No findings yet: say why (the checks are still running)."""
        self.run = None
        self.clear(columns=True)
        self.add_columns(*FINDING_COLUMNS)
        self.add_row("", "", "", "", text)

    def _cells(self, run: Run) -> list[tuple[Text, Text, str, str, Text]]:
        rows = []
        for f in run.findings:
            style = self.get_component_rich_style(f"findings--{f.severity.label}")
            # Which attempts, before the message: two findings about different attempts never look alike.
            rows.append((Text(f.severity.label, style), data_text(f.code), "→".join(f"#{a}" for a in f.attempts),
                         fmt_range(*f.steps) if f.steps else "", data_text(mask_text(finding_text(f.message, f.paths)), newlines=False)))
        return rows

    def _width_for(self, rows: list[tuple[Text, Text, str, str, Text]]) -> int:
        """Cells left for the message column at the current width."""
        width = (self.size.width or self.app.size.width) - 2  # the vertical scrollbar
        padding = 2 * self.cell_padding
        others = sum(max([len(FINDING_COLUMNS[i])] + [Text(str(r[i])).cell_len for r in rows]) + padding
                     for i in range(4))
        return max(width - others - padding, MESSAGE_MIN)

    def set_run(self, run: Run) -> None:
        """Fill the table; row keys are finding indexes."""
        self.run = run
        rows = self._cells(run)
        self._message_width = self._width_for(rows)
        self.clear(columns=True)
        for column in FINDING_COLUMNS:
            self.add_column(column, key=column, width=self._message_width if column == "message" else None)
        if not run.findings:
            self.add_row("", "", "", "", "no findings")
            return
        for index, row in enumerate(rows):
            self.add_row(*row, key=str(index), height=None)
