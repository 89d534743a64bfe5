"""Passes over a run's series scan each step and time column once (``load.column_ranges``): a writable column (which
``arrays.value_range`` does not remember) shared by many tags, as a train.log's are, was scanned twice per tag (once
for ``first_step``, once for ``last_step``). The answers stay what ``first_step``/``last_step`` give."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pimm_inspect import arrays, load_run
from pimm_inspect.analysis import summary
from pimm_inspect.analysis.checks_replayed import _context
from pimm_inspect.load import column_ranges
from pimm_inspect.load.attempts import _reconcile_spans
from pimm_inspect.load.column_ranges import ColumnRanges
from pimm_inspect.model import Attempt, ScalarSeries

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_clean"


def _shared(tags: int = 6) -> tuple[np.ndarray, np.ndarray, list[ScalarSeries]]:
    steps = np.array([5, 3, 9, 7], dtype=np.int64)  # writable, not in order: min and max are not the ends
    walls = np.array([100.0, np.nan, 130.0, 120.0])
    series = [ScalarSeries(tag=f"t{i}", steps=steps, values=np.arange(4.0), wall_times_s=walls, source="train.log",
                           attempt=1, source_kind="train_log") for i in range(tags)]
    return steps, walls, series


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Counts ``value_range`` calls per array (by id), wherever they are made from."""
    counted: Counter[int] = Counter()
    real = arrays.value_range

    def counting(values: np.ndarray, finite_only: bool = False) -> Any:
        counted[id(values)] += 1
        return real(values, finite_only)

    monkeypatch.setattr(arrays, "value_range", counting)
    monkeypatch.setattr(column_ranges, "value_range", counting)
    monkeypatch.setattr(summary, "value_range", counting)  # last_logged_s's numpy answer (a column with a NaN)
    return counted


def test_column_ranges_gives_what_the_series_properties_give() -> None:
    steps, walls, series = _shared(2)
    ranges = ColumnRanges()
    assert ranges.steps(series[0]) == (series[0].first_step, series[0].last_step) == (3, 9)
    assert ranges.of(walls, finite_only=True) == (100.0, 130.0)
    empty = dataclasses.replace(series[0], steps=np.array([], dtype=np.int64), values=np.array([]),
                                wall_times_s=np.array([]))
    assert ranges.steps(empty) is None and empty.first_step is None
    assert ranges.of(walls) is not None and np.isnan(ranges.of(walls)[0])  # NaN kept without finite_only


def test_reconcile_spans_scans_a_shared_column_once(scans: Counter[int]) -> None:
    steps, walls, series = _shared()
    out = _reconcile_spans([Attempt(index=1, first_step=4, last_step=8)], series)
    assert (out[0].first_step, out[0].last_step) == (3, 9)
    assert out[0].started_at == "1970-01-01 00:01:40"  # the first finite wall time (100 s)
    assert scans[id(steps)] == 1 and scans[id(walls)] == 1


def test_summary_and_replay_context_scan_a_shared_column_once(scans: Counter[int]) -> None:
    steps, walls, series = _shared()
    run = dataclasses.replace(load_run(RUN), series=tuple(series), attempts=())
    scans.clear()
    assert summary.last_step(run) == 9 and summary.last_logged_s(run) == 130.0
    assert scans[id(steps)] == 1 and scans[id(walls)] == 1
    scans.clear()
    assert _context(run).spans == {"train.log": (3, 9)}
    assert scans[id(steps)] == 1
