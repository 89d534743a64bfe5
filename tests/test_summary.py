"""One rule per derived row fact: ``ls`` and the UI's runs table agree on every fixture (issue 9)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.analysis.summary import summarize
from pimm_inspect.report.text import runs_table_row
from pimm_inspect.tui import facts as tui_facts

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_ls_and_runs_table_show_the_same_row_facts(path: Path) -> None:
    """``ls`` (text and JSON) and the runs table (the row it holds, read back from the session's cache) agree, and
    both equal the facts computed afresh from the run's files (not the summary the run already carries)."""
    import json

    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli
    from pimm_inspect.session import Session

    listed = json.loads(CliRunner().invoke(cli, ["ls", "--json", str(path)]).stdout)["runs"][0]
    row = Session().stored_rows([path]).get(path) or Session().row(path)  # what the table holds
    fresh = summarize(pimm_inspect.load_run(path))  # recomputed from the Run, never read from a stored summary
    ls_cell = runs_table_row(row, RUNS)[5]
    assert getattr(ls_cell, "plain", ls_cell) == ("-" if fresh.last_step is None else str(fresh.last_step))
    assert tui_facts.last_step(row) == listed["last_step"] == fresh.last_step
    assert tui_facts.best_metric(row) == fresh.best_metric
    assert tui_facts.last_logged(row) == fresh.last_logged_s
    # ls --json's best_metric / last_logged_at are the row's fields, the UI's cells read the same ones
    best = listed["best_metric"]
    assert (best is None) == (fresh.best_metric_value is None) == (fresh.best_metric == "-")
    if best is not None:
        assert (best["name"], best["value"]) == (fresh.best_metric_name, fresh.best_metric_value)
        assert fresh.best_metric.endswith(f"{best['value']:.4g}")
    at = listed["last_logged_at"]
    assert (at is None) == (fresh.last_logged_s is None) and at == row.last_logged_at
    if at is not None:
        assert datetime.fromisoformat(at).timestamp() == pytest.approx(fresh.last_logged_s, abs=1e-3)
        assert tui_facts.last_logged_cell(row) == datetime.fromtimestamp(
            fresh.last_logged_s, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    else:
        assert tui_facts.last_logged_cell(row) == "-"
    assert (row.status, row.attempts, list(row.wandb_run_ids)) == (listed["status"], listed["attempts"],
                                                                   listed["wandb_run_ids"])


def test_a_stale_event_file_never_counts_toward_the_last_step() -> None:
    run = pimm_inspect.load_run(RUNS / "e2_stale_reuse")
    stale = [f.path for f in run.event_files if f.stale]
    assert stale, "the fixture keeps an event file of an earlier run"
    stale_steps = max(s.last_step for s in run.series if s.source in stale)
    assert stale_steps == 25
    assert run.summary.last_step == 8 == summarize(run).last_step
