"""Each fact decided once (issue 20): the stale rule, the config document, where a path belongs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pimm_inspect
from pimm_inspect.load.stale import STALE_MARGIN_S, is_stale
from pimm_inspect.tui.widgets.curve_spec import stale_sources

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_is_stale_is_the_margin_rule():
    assert is_stale(1000.0 - STALE_MARGIN_S - 1, 1000.0)
    assert not is_stale(1000.0 - STALE_MARGIN_S, 1000.0)
    assert not is_stale(None, 1000.0) and not is_stale(0.0, None)


def test_the_ui_reads_the_stale_fact_not_the_finding_codes():
    run = pimm_inspect.load_run(RUNS / "e2_stale_reuse")
    stale = {f.path for f in run.event_files if f.stale}
    assert stale and stale_sources(run) == stale
    # Without the artifacts.stale finding (a filtered or re-sorted finding list), the UI still knows the files.
    quiet = dataclasses.replace(run, findings=tuple(f for f in run.findings if f.code != "artifacts.stale"))
    assert stale_sources(quiet) == stale


def test_eval_metrics_reach_the_run_and_show():
    """``eval/<stamp>/test_metrics.json`` was read and then dropped before the Run; now it is a fact ``show`` prints."""
    import json

    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    run = pimm_inspect.load_run(RUNS / "e2_clean")
    (result,) = run.eval_results
    assert result.path == "eval/20260715T090135Z/test_metrics.json" and result.checkpoint == "model_best"
    assert dict(result.metrics)["mIoU"] == 0.72295
    shown = json.loads(CliRunner().invoke(cli, ["show", "--json", str(RUNS / "e2_clean")]).stdout)
    assert shown["runs"][0]["eval"][0]["metrics"]["mIoU"] == 0.72295
    text = CliRunner().invoke(cli, ["show", str(RUNS / "e2_clean")]).stdout
    assert "eval 20260715T090135Z (test, model_best): mIoU 0.7229  mAcc 0.805" in text
    assert pimm_inspect.load_run(RUNS / "hf_clean").eval_results == ()
