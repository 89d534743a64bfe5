"""The Checkpoints and Findings tabs: DataTables filled from the run."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ...analysis.secrets import mask_text
from ...analysis.summary import expected_cursor
from ...model import CheckpointInfo, Run
from ...report.safe_text import clean, data_text
from ..facts import fmt_step, human_bytes


CHECKPOINT_COLUMNS = (("path", 0), ("step", 0), ("complete", 1), ("resume", 2), ("size", 3), ("cursor", 4),
                      ("expected", 5), ("role", 6), ("epoch", 7), ("W&B id", 8), ("format", 9))
"""(column, drop rank): narrow terminals drop the highest ranks first (format, W&B id, epoch ... never path/step)."""
CHECKPOINT_WIDTHS = {"path": 24, "step": 6, "complete": 10, "resume": 10, "size": 10, "cursor": 8, "expected": 10,
                     "role": 8, "epoch": 7, "W&B id": 12, "format": 8}
"""Cells each column needs with padding (path: its share when short)."""


def checkpoint_columns(width: int, path_width: int) -> list[str]:
    """The columns that fit ``width``, dropping the least useful first, in display order."""
    kept = [name for name, _rank in CHECKPOINT_COLUMNS]
    by_drop = sorted(CHECKPOINT_COLUMNS, key=lambda c: -c[1])
    need = lambda names: sum(path_width if n == "path" else CHECKPOINT_WIDTHS[n] for n in names)  # noqa: E731
    for name, rank in by_drop:
        if need(kept) <= width or rank == 0:
            break
        kept.remove(name)
    order = ("path", "format", "role", "complete", "step", "epoch", "W&B id", "cursor", "expected", "size", "resume")
    return [n for n in order if n in kept]


def checkpoint_sort_key(ck: CheckpointInfo) -> tuple:
    """Checkpoints by step as a number (iter_25 before iter_100), unknown steps last, then by path."""
    return (ck.global_step is None, ck.global_step or 0, ck.path)


class CheckpointTable(DataTable):
    """One row per checkpoint by step: what it holds and whether resume would pick it."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"checkpoints--bad"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: Run | None = None
        self._laid_out_for: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def on_resize(self) -> None:
        """Columns come and go with the width."""
        if self.run is not None and tuple(self._columns(self.run)) != self._laid_out_for:
            self.set_run(self.run)

    def _columns(self, run: Run) -> list[str]:
        width = self.size.width or self.app.size.width
        longest = max((len(clean(ck.path, newlines=False)) for ck in run.checkpoints), default=16)
        return checkpoint_columns(width - 2, min(longest, 40) + 2)

    def set_run(self, run: Run) -> None:
        """Fill the table."""
        self.run = run
        columns = self._columns(run)
        self._laid_out_for = tuple(columns)
        self.clear(columns=True)
        self.add_columns(*columns)
        if not run.checkpoints:
            self.add_row("(no checkpoints)", *[""] * (len(columns) - 1))
            return
        bad = self.get_component_rich_style("checkpoints--bad")
        for ck in sorted(run.checkpoints, key=checkpoint_sort_key):
            expected = expected_cursor(ck)
            mismatch = expected is not None and ck.wandb_cursor is not None and expected != ck.wandb_cursor
            cells = {
                "path": data_text(ck.path, newlines=False), "format": data_text(ck.format), "role": data_text(ck.role),
                "complete": "yes" if ck.complete else Text("NO", bad), "step": fmt_step(ck.global_step),
                "epoch": fmt_step(ck.epoch), "W&B id": data_text(ck.wandb_run_id or "-", newlines=False),
                "cursor": Text(fmt_step(ck.wandb_cursor) + (" ≠" if mismatch else ""), bad if mismatch else ""),
                "expected": fmt_step(expected), "size": human_bytes(ck.size_bytes) if ck.size_bytes else "-",
                "resume": "◀ picked" if ck.resume_candidate else "",
            }
            self.add_row(*(cells[c] for c in columns), key=ck.path)


class FindingsTable(DataTable):
    """One row per finding, worst first; enter opens the explanation."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"findings--error", "findings--warning", "findings--info"}

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def show_pending(self, text: str) -> None:
        """No findings yet: say why (the checks are still running)."""
        self.clear(columns=True)
        self.add_columns("severity", "code", "steps", "message")
        self.add_row("", "", "", text)

    def set_run(self, run: Run) -> None:
        """Fill the table; row keys are finding indexes."""
        self.clear(columns=True)
        self.add_columns("severity", "code", "steps", "message")
        if not run.findings:
            self.add_row("", "", "", "no findings")
            return
        for index, f in enumerate(run.findings):
            style = self.get_component_rich_style(f"findings--{f.severity.label}")
            steps = f"{f.steps[0]}-{f.steps[1]}" if f.steps else ""
            self.add_row(Text(f.severity.label, style), data_text(f.code), steps,
                         data_text(mask_text(f.message), newlines=False), key=str(index))
