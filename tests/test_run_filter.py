"""The runs filter (``analysis.run_filter``): one implementation below the front ends, evaluated on the row."""

from __future__ import annotations

from pathlib import Path

import pimm_inspect
from pimm_inspect.analysis.run_filter import compile_run_filter, row_text
from pimm_inspect.analysis.summary import run_row
from pimm_inspect.session import Session

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_cfg_filter_matches_an_e0_run_by_its_train_log_config_dump():
    """An E0 run's only config is train.log's ``Config:`` dump: the filter must see it (issue 22, N6)."""
    row = run_row(pimm_inspect.load_run(RUNS / "e0_legacy"))
    assert compile_run_filter("cfg.batch_size = 4")("", row)
    assert compile_run_filter("cfg.batch_size >= 3")("", row)
    assert not compile_run_filter("cfg.batch_size > 4")("", row)
    assert compile_run_filter("!cfg.batch_size = 8")("", row)
    assert not compile_run_filter("cfg.batch_size = 4")("", None)  # no row yet: never a config match


def test_the_cached_row_filters_as_the_fresh_one():
    """The UI's table filters the session's cached rows: a row read back from the disk cache keeps its config."""
    session = Session()
    fresh = session.row(RUNS / "e2_rollback")
    cached = Session().stored_rows([RUNS / "e2_rollback"])[RUNS / "e2_rollback"]
    assert cached == fresh and cached.config
    key, value = next((k, v) for k, v in cached.config if isinstance(v, (int, float)) and not isinstance(v, bool))
    assert compile_run_filter(f"cfg.{key} = {value}")("", cached)


def test_text_filter_searches_codes_status_and_ids():
    row = run_row(pimm_inspect.load_run(RUNS / "e2_rollback"))
    text = row_text("e2_rollback", row)
    assert row.status in text and all(f.code in text for f in row.findings)
    assert compile_run_filter(row.findings[0].code)(text, row)
