"""One rule per derived row fact: ``ls`` and the UI's runs table agree on every fixture (issue 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.analysis.summary import summarize
from pimm_inspect.report.text import runs_table_row
from pimm_inspect.tui import facts as tui_facts

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_ls_and_runs_table_show_the_same_last_step(path: Path) -> None:
    run = pimm_inspect.load_run(path)
    cell = runs_table_row(run, RUNS)[5]
    ls_cell = getattr(cell, "plain", cell)
    light = tui_facts.light_run(run)
    assert light.series == () and tui_facts.is_light(light)
    for shown in (run, light):  # the full run and the runs table's light copy
        step = tui_facts.last_step(shown)
        assert ls_cell == ("-" if step is None else str(step))
        assert tui_facts.best_metric(shown) == run.summary.best_metric


def test_a_stale_event_file_never_counts_toward_the_last_step() -> None:
    run = pimm_inspect.load_run(RUNS / "e2_stale_reuse")
    stale = [f.path for f in run.event_files if f.stale]
    assert stale, "the fixture keeps an event file of an earlier run"
    stale_steps = max(s.last_step for s in run.series if s.source in stale)
    assert stale_steps == 25
    assert run.summary.last_step == 8 == summarize(run).last_step
