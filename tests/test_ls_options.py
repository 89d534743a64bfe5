"""``ls --filter/--sort/--reverse/--columns`` (issue 24 item 2), through click's runner on the fixtures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
NAMES = ("e2_rollback", "e2_clean", "e2_exact_resume", "e2_nan_loss", "e2_config_drift", "e3a_running", "e3a_hung_rank",
         "e0_legacy", "hf_clean", "hf_resumed", "hf_killed", "wandb_online", "tb_plain")
PATHS = tuple(str(RUNS / name) for name in NAMES)
"""A dozen fixture runs of every kind (``ls`` over all of them stays fast); JSON paths are relative to the cwd, so
tests name runs by ``name``."""
COLUMNS = ("path,status,cfg.batch_size,best_metric,last_logged_at,last:train/loss,best:val/mIoU,min:val/loss,"
           "max:val/loss")


def ls(*args: str) -> Any:
    result = CliRunner().invoke(cli, ["ls", *args])
    assert result.exit_code == 0, result.output
    return result


def ls_json(*args: str) -> list[dict[str, Any]]:
    return json.loads(ls("--json", *args).stdout)["runs"]


@pytest.fixture(scope="module")
def every_run() -> dict[str, dict[str, Any]]:
    """The ``ls --json`` object of each run of ``PATHS``, with the columns above, by name."""
    return {run["name"]: run for run in ls_json(*PATHS, "--columns", COLUMNS)}


def test_metric_columns_are_the_tags_values_under_the_newest_policy(every_run: dict[str, dict[str, Any]]) -> None:
    """``last:``/``best:``/``min:``/``max:`` give the tag's values as ``Run.scalars(policy='newest')`` holds them."""
    columns = every_run["e2_rollback"]["columns"]
    frame = pimm_inspect.load_run(RUNS / "e2_rollback").scalars(policy="newest")
    loss = frame[frame.tag == "train/loss"].sort_values("step")
    miou = frame[frame.tag == "val/mIoU"]
    val_loss = frame[frame.tag == "val/loss"]
    assert columns["last:train/loss"] == pytest.approx(float(loss.value.iloc[-1]))
    assert columns["best:val/mIoU"] == pytest.approx(float(miou.value.max())) == pytest.approx(0.7646, abs=1e-4)
    assert columns["min:val/loss"] == pytest.approx(float(val_loss.value.min()))  # a loss: best is the smallest
    assert columns["max:val/loss"] == pytest.approx(float(val_loss.value.max()))
    assert columns["max:val/loss"] > columns["min:val/loss"]
    assert columns["cfg.batch_size"] == 4 and columns["status"] == "finished"
    assert columns["path"] == every_run["e2_rollback"]["path"]
    assert columns["best_metric"] == {"name": "mIoU", "value": pytest.approx(0.7646, abs=1e-4)}
    assert columns["last_logged_at"] == every_run["e2_rollback"]["last_logged_at"]
    assert columns["last_logged_at"].startswith("2026-07-16T15:02")
    assert every_run["e2_nan_loss"]["columns"]["last:train/loss"] is None  # the run has no such tag


def test_filter_on_the_config_keeps_exactly_the_matching_runs(every_run: dict[str, dict[str, Any]]) -> None:
    wanted = {path for path, run in every_run.items() if run["columns"]["cfg.batch_size"] == 8}
    assert "e3a_running" in wanted and "e2_clean" not in wanted
    kept = {run["name"] for run in ls_json(*PATHS, "--filter", "cfg.batch_size=8")}
    assert kept == wanted
    both = {run["name"] for run in ls_json(*PATHS, "--filter", "cfg.batch_size=8", "--filter", "!e3a_")}
    assert both == {name for name in wanted if not name.startswith("e3a_")} and "wandb_online" in both
    regex = {run["name"] for run in ls_json(*PATHS, "--filter", "/runs/hf_/")}
    assert regex == {"hf_clean", "hf_resumed", "hf_killed"}  # the name as ls prints it: here a path under the cwd
    negated = {run["name"] for run in ls_json(*PATHS, "--filter", "!/runs/hf_/")}
    assert negated == set(every_run) - regex


def test_sort_by_a_metric_descending_puts_runs_without_it_last(every_run: dict[str, dict[str, Any]]) -> None:
    runs = ls_json(*PATHS, "--sort", "-best:val/mIoU,path", "--columns", "best:val/mIoU")
    values = [run["columns"]["best:val/mIoU"] for run in runs]
    present = [v for v in values if v is not None]
    assert values[:len(present)] == present and len(present) >= 6  # missing values come after every present one
    assert present == sorted(present, reverse=True)
    missing = [run["path"] for run in runs[len(present):]]
    assert missing == sorted(missing)  # ties (no value) broken by the second key
    flipped = ls_json(*PATHS, "--sort", "-best:val/mIoU,path", "--reverse", "--columns", "best:val/mIoU")
    flipped_values = [run["columns"]["best:val/mIoU"] for run in flipped]
    assert flipped_values[:len(present)] == sorted(present)  # every direction turned, still missing last
    assert [run["path"] for run in flipped[len(present):]] == sorted(missing, reverse=True)


def test_sort_on_fixed_fields_and_the_best_metric() -> None:
    plain = [run["path"] for run in ls_json(*PATHS)]
    assert [run["path"] for run in ls_json(*PATHS, "--reverse")] == plain[::-1] and len(plain) == len(PATHS) + 1
    runs = ls_json(*PATHS, "--sort", "-attempts,path")
    keys = [(-run["attempts"], run["path"]) for run in runs]
    assert keys == sorted(keys)
    by_best = [run["best_metric"]["value"] for run in ls_json(*PATHS, "--sort", "best_metric")
               if run["best_metric"] is not None]
    assert by_best == sorted(by_best) and len(by_best) >= 6
    logged = [run["last_logged_at"] for run in ls_json(*PATHS, "--sort", "-last_logged_at")]
    present = [t for t in logged if t is not None]
    assert present == sorted(present, reverse=True)  # the ISO text sorts as the time (fixed width, UTC)


def test_text_table_shows_the_columns_asked_for() -> None:
    out = ls(str(RUNS / "e2_rollback"), "--columns", "path,cfg.batch_size,best_metric,last_logged_at,"
             "last:train/loss,cfg.no_such_key").stdout.splitlines()
    assert out[0].split() == ["run", "cfg.batch_size", "best", "last", "log", "last:train/loss", "cfg.no_such_key"]
    assert out[1].split() == ["e2_rollback", "4", "mIoU", "0.7646", "2026-07-16", "15:02", "UTC", "0.470895", "-"]


def test_a_key_no_run_has_gets_a_note_naming_the_closest() -> None:
    one = str(RUNS / "e2_rollback")
    result = CliRunner().invoke(cli, ["ls", one, "--columns", "path,cfg.batch_sise,last:val/mIou"])
    assert result.exit_code == 0
    assert "no run has the config key batch_sise (closest: batch_size" in result.stderr
    assert "no run has the scalar tag val/mIou (closest: val/mIoU" in result.stderr
    typo = CliRunner().invoke(cli, ["ls", one, "--filter", "!cfg.batch_sise=4", "--sort", "min:val/los"])
    assert typo.exit_code == 0 and "e2_rollback" in typo.stdout  # a negated filter on a missing key keeps the run
    assert "no run has the config key batch_sise (closest: batch_size" in typo.stderr
    assert "no run has the scalar tag val/los (closest: val/loss" in typo.stderr
    fine = CliRunner().invoke(cli, ["ls", str(RUNS / "e2_rollback"), "--filter", "cfg.batch_size=4",
                                    "--columns", "path,last:val/loss"])
    assert fine.exit_code == 0 and "note" not in fine.stderr


@pytest.mark.parametrize(("option", "value", "named"), [
    ("--columns", "path,statuss", "unknown column 'statuss'"),
    ("--sort", "-nope", "unknown sort key 'nope'"),
    ("--columns", "last:", "unknown column 'last:'"),
    ("--sort", "cfg.", "unknown sort key 'cfg.'"),
])
def test_an_unknown_key_exits_2_naming_the_valid_ones(option: str, value: str, named: str) -> None:
    result = CliRunner().invoke(cli, ["ls", str(RUNS / "no_such_dir"), option, value])
    assert result.exit_code == 2  # checked before any path is looked at
    assert named in result.stderr
    assert "valid: path, name, kind, era, status, attempts, last_step" in result.stderr
    assert "cfg.<key>, last:<tag>, best:<tag>, min:<tag>, max:<tag>" in result.stderr


def test_an_invalid_regex_filter_exits_2_and_no_match_is_said_on_stderr() -> None:
    bad = CliRunner().invoke(cli, ["ls", *PATHS, "--filter", "/[unclosed/"])
    assert bad.exit_code == 2 and "invalid regex" in bad.stderr
    none = CliRunner().invoke(cli, ["ls", *PATHS, "--filter", "cfg.batch_size > 100000"])
    assert none.exit_code == 0 and none.stdout == "" and "no run matches the filter" in none.stderr
    assert ls_json(*PATHS, "--filter", "cfg.batch_size > 100000") == []


def test_metric_best_direction_follows_the_tag_name() -> None:
    from pimm_inspect.analysis.metric_summary import lower_is_better

    assert lower_is_better("train/loss") and lower_is_better("val/WER") and lower_is_better("time/batch_s")
    assert not lower_is_better("val/mIoU") and not lower_is_better("val/allAcc") and not lower_is_better("val/mAP_50")
    assert lower_is_better("train/heatmap_loss")
    assert not lower_is_better("loss_group/acc") and not lower_is_better("val/error_free_score")  # a score wins


def test_metric_summary_takes_each_steps_newest_copy_and_keeps_a_nan_last_value() -> None:
    """Attempt 2 replays steps 5-10 and ends on NaN: ``last:`` is NaN (``nan`` in the table, null in JSON, sorted
    with the runs without a value), min/max are over each step's newest copy, finite values only."""
    import numpy as np

    from pimm_inspect.analysis.summary import run_row
    from pimm_inspect.model import Run, ScalarSeries, SourceFile
    from pimm_inspect.report.ls_columns import column, json_columns, sort_rows

    def series(steps: list[int], values: list[float], attempt: int) -> ScalarSeries:
        return ScalarSeries("train/loss", np.array(steps, dtype=np.int64), np.array(values, dtype=np.float64),
                            1.7e9 + np.array(steps, dtype=np.float64), "train.log", attempt, "train_log")

    first = series(list(range(11)), [10.0 - s for s in range(11)], 1)  # 10 .. 0 (the replayed 0.0 at step 10)
    second = series(list(range(5, 13)), [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, float("nan")], 2)
    run = Run(root=Path("/nowhere/run"), kind="pimm", era="E2", status="finished", name="run", series=(first, second),
              sources=(SourceFile("train.log", "train_log", 1, 0.0),))
    row = run_row(run)
    (metric,) = row.metrics
    assert (metric.tag, metric.last_step, math.isnan(metric.last)) == ("train/loss", 12, True)
    assert (metric.min, metric.max) == (0.5, 10.0)  # attempt 1's 0.0 at step 10 was replayed: not a newest copy
    base = Path("/nowhere")
    columns = [column(c) for c in ("last:train/loss", "best:train/loss", "max:train/loss")]
    assert [c.cell(row, base) for c in columns if c.cell] == ["nan", "0.5", "10"]
    assert json_columns(row, columns, base) == {"last:train/loss": None, "best:train/loss": 0.5,
                                                "max:train/loss": 10.0}
    other = run_row(Run(root=Path("/nowhere/b"), kind="pimm", era="E2", status="finished", name="b",
                        series=(series([0, 1], [3.0, 2.0], 1),),
                        sources=(SourceFile("train.log", "train_log", 1, 0.0),)))
    ordered = sort_rows([row, other], [column_key("-last:train/loss")], base)
    assert [r.name for r in ordered] == ["b", "run"]  # a NaN is no value: last in either direction


def column_key(spec: str) -> Any:
    from pimm_inspect.report.ls_columns import parse_sort

    return parse_sort([spec])[0]


def test_column_and_sort_keys_complete_in_the_shell() -> None:
    """click's completion (a real process, as the shell runs it) offers the keys after the last comma."""
    import os
    import subprocess
    import sys

    def complete(words: str, cword: int) -> list[str]:
        env = dict(os.environ, PYTHONPATH=str(RUNS.parents[1]), _PIMM_INSPECT_COMPLETE="bash_complete",
                   COMP_WORDS=words, COMP_CWORD=str(cword))
        proc = subprocess.run([sys.executable, "-P", "-m", "pimm_inspect"], capture_output=True, text=True,
                              timeout=60, env=env, check=True)
        return proc.stdout.splitlines()

    assert complete("pimm-inspect ls --columns path,be", 3) == ["plain,path,best_metric", "plain,path,best:"]
    assert complete("pimm-inspect ls --sort errors,-last", 3) == [
        "plain,errors,-last_step", "plain,errors,-last_logged_at", "plain,errors,-last:"]
