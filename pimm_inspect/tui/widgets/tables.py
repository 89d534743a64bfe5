"""The Checkpoints and Findings tabs: DataTables filled from the run."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ...analysis.secrets import mask_text
from ...model import Run
from ...report.safe_text import data_text
from ..facts import expected_cursor, fmt_step, human_bytes


class CheckpointTable(DataTable):
    """One row per checkpoint: what it holds and whether resume would pick it."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"checkpoints--bad"}

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

    def set_run(self, run: Run) -> None:
        """Fill the table."""
        self.clear(columns=True)
        self.add_columns("path", "format", "role", "complete", "step", "epoch", "W&B id", "cursor", "expected",
                         "size", "resume")
        if not run.checkpoints:
            self.add_row("(no checkpoints)", *[""] * 10)
            return
        bad = self.get_component_rich_style("checkpoints--bad")
        for ck in run.checkpoints:
            expected = expected_cursor(ck)
            mismatch = expected is not None and ck.wandb_cursor is not None and expected != ck.wandb_cursor
            cursor = Text(fmt_step(ck.wandb_cursor) + (" ≠" if mismatch else ""), bad if mismatch else "")
            self.add_row(
                data_text(ck.path, newlines=False), data_text(ck.format), data_text(ck.role),
                "yes" if ck.complete else Text("NO", bad),
                fmt_step(ck.global_step), fmt_step(ck.epoch), data_text(ck.wandb_run_id or "-", newlines=False), cursor,
                fmt_step(expected), human_bytes(ck.size_bytes) if ck.size_bytes else "-",
                "◀ picked" if ck.resume_candidate else "", key=ck.path)


class FindingsTable(DataTable):
    """One row per finding, worst first; enter opens the explanation."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"findings--error", "findings--warning", "findings--info"}

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True

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
