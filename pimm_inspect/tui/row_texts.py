"""The runs table's cell texts of one run's row, without Rich or Textual (``widgets.runs_cells`` makes the cells).

The prefetch child works them out for every stored row it sends (``prefetch.SentRow.cell_texts``), on the other core,
while the UI starts: the table then only wraps them (a row's texts cost about 20 µs, a 1,000-run tree's 20 ms, on
the UI's side otherwise). Any other row (read now, reloaded, a test's) gets them here, by the same function.
"""

from __future__ import annotations

from ..evidence import RunRow
from ..report.safe_text import clean
from .facts import best_metric, findings_cell, fmt_step, kind_label, last_logged_cell, last_step

COLUMNS = ("kind", "status", "att", "step", "best", "last log", "wandb", "findings")
"""The columns ``row_texts`` gives a text for, in its order; after them comes the findings' worst severity."""
ERROR = "error"
WARNING = "warning"


def clean_cell(text: str) -> str:
    """``clean(text, newlines=False)``, at once for the usual name or status (printable ASCII: nothing to escape)."""
    return text if text.isascii() and text.isprintable() else clean(text, newlines=False)


def row_texts(run: RunRow) -> tuple[str, ...]:
    """The texts of ``COLUMNS`` for a run's row (each clean: file-derived text never reads as markup or escapes), then
    its worst finding's severity (``ERROR``, ``WARNING`` or '')."""
    return (clean_cell(kind_label(run)), clean_cell(run.status), str(run.attempts), fmt_step(last_step(run)),
            clean_cell(best_metric(run)), last_logged_cell(run), clean_cell(", ".join(run.wandb_run_ids) or "-"),
            findings_cell(run), ERROR if run.errors else WARNING if run.warnings else "")


def texts_of(run: RunRow) -> tuple[str, ...]:
    """``row_texts(run)``: as the prefetch child worked them out for a row it sent, else now."""
    made: tuple[str, ...] | None = getattr(run, "cell_texts", None)
    return made if made is not None else row_texts(run)
