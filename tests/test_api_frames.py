"""``pimm_inspect.scalars/attempts/findings/checkpoints`` (issue 24 item 2): the Parquet dataset's tables as
DataFrames of many runs, through the session, on the fixtures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli
from pimm_inspect.report.dataset import schema

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
TWO = [RUNS / "e2_rollback", RUNS / "hf_resumed"]


def test_scalars_of_many_runs_are_each_runs_rows_with_its_run_id() -> None:
    frame = pimm_inspect.scalars(TWO, policy="newest")
    assert list(frame.columns) == schema("scalars").names
    for path in TWO:
        mine = frame[frame.run_id == Path(os.path.relpath(path)).as_posix()]  # relative to the working directory
        own = pimm_inspect.load_run(path).scalars(policy="newest")
        assert len(mine) == len(own) > 0
        keys = ["tag", "step", "attempt", "seq"]
        got = mine[[*keys, "value"]].astype({"step": "int64", "seq": "int64"}).reset_index(drop=True)
        want = own[[*keys, "value"]].astype({"step": "int64", "seq": "int64"}).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
    rollback = frame[frame.run_id.str.endswith("e2_rollback") & (frame.tag == "val/mIoU")]
    assert rollback.value.max() == pytest.approx(0.7646, abs=1e-4)
    assert set(rollback.attempt.dropna()) == {1, 2}  # the run's two attempts, by the attempt column


def test_scalars_of_a_root_are_keyed_by_the_path_under_it_and_filtered_by_tag() -> None:
    frame = pimm_inspect.scalars(RUNS / "tb_plain", tags=("loss",))
    assert set(frame.tag) == {"loss"}
    assert set(frame.run_id) == {"runs/baseline", "runs/lr-0.1"}  # the dataset's run ids: relative to the root
    own = pimm_inspect.load_run(RUNS / "tb_plain/runs/baseline").scalars(tags=("loss",))
    baseline = frame[frame.run_id == "runs/baseline"]
    assert list(baseline.step) == list(own.step) and list(baseline.attempt) == list(own.attempt)
    assert str(frame.step.dtype) == "Int64" and str(frame.attempt.dtype) == "Int32"
    with pytest.raises(ValueError, match="unknown policy"):
        pimm_inspect.scalars(RUNS / "tb_plain", policy="latest")


def test_attempts_findings_and_checkpoints_are_the_dataset_tables() -> None:
    run = pimm_inspect.load_run(RUNS / "e2_requeued_twice")
    attempts = pimm_inspect.attempts(RUNS / "e2_requeued_twice")
    assert list(attempts.columns) == schema("attempts").names
    assert list(attempts.attempt) == [a.index for a in run.attempts] and set(attempts.run_id) == {"."}
    assert list(attempts.origin) == [a.origin for a in run.attempts]
    assert list(attempts.last_step) == [a.last_step for a in run.attempts]
    findings = pimm_inspect.findings([run])  # a Run object works as well as its path
    assert list(findings.columns) == schema("findings").names
    assert list(findings.code) == [f.code for f in run.findings] and len(findings) >= 2
    checkpoints = pimm_inspect.checkpoints(RUNS / "e2_requeued_twice")
    assert list(checkpoints.columns) == schema("checkpoints").names
    assert list(checkpoints.path) == [ck.path for ck in run.checkpoints]
    assert list(checkpoints.global_step) == [ck.global_step for ck in run.checkpoints]
    by_path = {ck["path"]: ck for ck in json.loads(CliRunner().invoke(
        cli, ["show", "--json", str(RUNS / "e2_requeued_twice")]).stdout)["runs"][0]["checkpoints"]}
    assert [None if pd.isna(a) else int(a) for a in checkpoints.saved_by_attempt] == \
        [by_path[p]["saved_by_attempt"] for p in checkpoints.path]
    assert checkpoints.saved_by_attempt.notna().any()  # the fixture's files say who wrote some of them
    shown = json.loads(CliRunner().invoke(cli, ["show", "--json", str(RUNS / "e2_requeued_twice")]).stdout)
    restored = {ck["path"]: [r["attempt"] for r in ck["restored_by"]] for ck in shown["runs"][0]["checkpoints"]}
    assert {p: list(r) for p, r in zip(checkpoints.path, checkpoints.restored_by)} == restored
    assert any(restored.values())  # the fixture restarts from a checkpoint: the column is not trivially empty
    assert checkpoints.resume_candidate.sum() == sum(ck.resume_candidate for ck in run.checkpoints) == 1


def test_the_exported_dataset_holds_the_same_checkpoints_table(tmp_path: Path) -> None:
    """One definition of the columns: the Parquet dataset's ``checkpoints`` partition is the API's frame."""
    out = tmp_path / "ds"
    result = CliRunner().invoke(cli, ["export", str(RUNS / "e2_requeued_twice"), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    (part,) = (out / "checkpoints").glob("*/part-0.parquet")
    written = pq.read_table(part)
    assert written.schema.names == schema("checkpoints").names
    api = pimm_inspect.checkpoints(RUNS / "e2_requeued_twice")
    assert written.column("path").to_pylist() == list(api.path)
    assert written.column("restored_by").to_pylist() == [list(r) for r in api.restored_by]


def test_missing_paths_and_folders_that_are_no_run_raise(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        pimm_inspect.attempts(tmp_path / "typo")
    (tmp_path / "empty").mkdir()
    with pytest.raises(pimm_inspect.NotARunError):
        pimm_inspect.findings(tmp_path / "empty")
    assert list(pimm_inspect.checkpoints([]).columns) == schema("checkpoints").names  # no run: the empty table


def test_importing_the_api_imports_no_pandas() -> None:
    code = "import sys, pimm_inspect; pimm_inspect.scalars; print('pandas' in sys.modules, 'pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]
