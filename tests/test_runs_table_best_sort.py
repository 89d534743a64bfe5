"""The runs table's ``best`` column sorts by the number, not by the text of the cell (``mIoU 9.5`` is less than
``mIoU 10.2``; sorted as text it came first under a descending sort)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.style import Style

import pimm_inspect
from pimm_inspect.analysis.summary import run_row
from pimm_inspect.tui.widgets.runs_table import RunsTable

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_clean"


def test_best_sorts_by_its_number_biggest_first_and_unknown_last():
    base = run_row(pimm_inspect.load_run(RUN))
    table = RunsTable(RUN.parent, lambda _name: Style())
    table.sort_key = "best"
    for name, value in (("nine", 9.5), ("ten", 10.2), ("hundred", 100.0), ("none", None), ("two", 2.25)):
        summary = dataclasses.replace(base.summary, best_metric_name="mIoU", best_metric_value=value,
                                      best_metric="-" if value is None else f"mIoU {value}")
        table.paths[name] = RUN.parent / name
        table._names[name] = name
        table.runs[name] = dataclasses.replace(base, summary=summary)
    assert sorted(table.paths, key=table._sort_value) == ["hundred", "ten", "nine", "two", "none"]
