"""The CLI end to end on the committed fixtures: content, exit codes, stdout vs stderr."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"


def run_cli(*args: str):
    runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_show_json_rollback_content():
    result = run_cli("show", RUNS / "e2_rollback", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    (run,) = doc["runs"]
    assert (run["path"], run["kind"], run["era"], run["status"]) == (".", "pimm", "E2", "finished")
    attempts = [(a["index"], a["first_step"], a["last_step"], a["origin"], a["ended"]) for a in run["attempts"]]
    assert attempts == [(1, 1, 75, "fresh", "killed"), (2, 51, 100, "rollback", "completed")]
    assert run["attempts"][1]["resume_step"] == 50
    loss = run["scalars"]["train_batch/loss"]
    assert (loss["first_step"], loss["last_step"], loss["source"]) == (1, 100, "tb_events")
    assert loss["points"] == 75 + 50  # both copies of 51-75 are kept
    last = [c for c in run["checkpoints"] if c["path"] == "model/last"]
    assert last and last[0]["global_step"] == 100 and last[0]["complete"] and last[0]["resume_candidate"]
    assert run["provenance"]["git_commit"] and run["provenance"]["git_dirty"] is False


def test_check_json_contract_and_exit_code():
    result = run_cli("check", RUNS / "e2_rollback", "--json")
    assert result.exit_code == 1  # warnings present, default --fail-on warning
    doc = json.loads(result.stdout)
    findings = doc["runs"][0]["findings"]
    by_code = {f["code"]: f for f in findings}
    assert by_code["steps.replayed"]["steps"] == [51, 75]
    assert by_code["resume.rollback"]["steps"] == [51, 75]
    assert set(by_code["steps.replayed"]) == {"code", "severity", "message", "steps", "paths", "explanation", "attempts", "views"}
    assert by_code["steps.replayed"]["views"]["TensorBoard"].startswith("its default (Rust) loader shows the newest")
    assert any(p.startswith("events.out.tfevents.") for p in by_code["steps.replayed"]["paths"])
    assert run_cli("check", RUNS / "e2_rollback", "--fail-on", "error").exit_code == 0
    assert run_cli("check", RUNS / "e2_clean").exit_code == 0


def test_check_tree_paths_are_relative_and_sorted():
    result = run_cli("check", RUNS, "--json", "--fail-on", "never")
    assert result.exit_code == 0
    paths = [r["path"] for r in json.loads(result.stdout)["runs"]]
    assert "e2_rollback" in paths and "hf_resumed" in paths and "wandb_clean" in paths
    assert paths == sorted(paths)
    assert not any(p.startswith("/") for p in paths)


def test_check_text_is_readable():
    result = run_cli("check", RUNS / "e2_rollback")
    assert "resume.rollback" in result.stdout and "attempt 2 resumed from step 50" in result.stdout
    assert "TensorBoard" in result.stdout


def test_ls_lists_every_fixture_run(tmp_path):
    result = run_cli("ls", RUNS, "--json")
    runs = {r["path"]: r for r in json.loads(result.stdout)["runs"]}
    assert runs["e2_crashed"]["status"] == "crashed"
    # A tail cut mid-write is a live writer only while its files are fresh (a checkout's mtimes age).
    import shutil

    fresh = tmp_path / "e3a_running"
    shutil.copytree(RUNS / "e3a_running", fresh, symlinks=True, copy_function=shutil.copyfile)
    assert json.loads(run_cli("ls", fresh, "--json").stdout)["runs"][0]["status"] == "running"
    assert runs["e0_legacy"]["era"] == "E0"
    assert runs["hf_clean"]["kind"] == "hf-trainer" and runs["wandb_clean"]["kind"] == "wandb"
    text = run_cli("ls", RUNS).stdout
    assert re.search(r"e2_rollback\s+pimm\s+E2\s+finished\s+2\s+100", text)


def test_curves_plot_and_json():
    result = run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--width", "80", "--height", "20")
    assert result.exit_code == 0
    assert "policy=all" in result.stdout and len(result.stdout.splitlines()) >= 18
    doc = json.loads(run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--json",
                             "--policy", "newest").stdout)
    (line,) = doc["lines"]
    assert line["x"][0] == 1 and line["x"][-1] == 100 and len(line["x"]) == 100
    both = json.loads(run_cli("curves", RUNS / "e2_rollback", "--tag", "train_batch/loss", "--json").stdout)
    assert [l["attempt"] for l in both["lines"]] == [1, 2]
    assert run_cli("curves", RUNS / "e2_rollback", "--tag", "nope/*").exit_code == 2


def test_config_flat_masks_secrets_and_diff():
    result = run_cli("config", RUNS / "e2_secret_in_config", "--flat")
    assert result.exit_code == 0
    assert "****" in result.stdout
    raw = (RUNS / "e2_secret_in_config" / "resolved_config.json").read_text()
    key = re.search(r"[0-9a-f]{40}", raw)
    assert key and key.group(0) not in result.stdout
    diff = run_cli("config", RUNS / "e2_clean", "--diff", RUNS / "e2_rollback", "--json")
    differences = json.loads(diff.stdout)["differences"]
    assert "save_path" in differences


def test_export_csv_and_parquet(tmp_path):
    out = tmp_path / "loss.csv"
    result = run_cli("export", RUNS / "e2_rollback", "--format", "csv", "-o", out, "--tag", "train_batch/loss")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert all(r["source"].startswith("events") for r in rows) and len(rows) == 125  # the preferred source only
    assert run_cli("export", RUNS / "e2_rollback", "--format", "csv", "-o", out, "--tag", "train_batch/loss",
                   "--all-sources").exit_code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["source"] for r in rows} >= {"train.log"}
    tb_rows = [r for r in rows if r["source"].startswith("events")]
    assert len(tb_rows) == 125
    newest = tmp_path / "newest.parquet"
    assert run_cli("export", RUNS / "e2_rollback", "--format", "parquet", "-o", newest, "--tag", "train_batch/loss",
                   "--policy", "newest").exit_code == 0
    import pandas as pd

    frame = pd.read_parquet(newest)
    tb = frame[frame["source"].str.startswith("events")]
    assert tb["step"].is_unique and tb["step"].max() == 100


def test_url_for_wandb_runs():
    result = run_cli("url", RUNS / "wandb_clean")
    assert result.exit_code == 0 and result.stdout.startswith("wandb sync ")
    assert run_cli("url", RUNS / "e2_rollback").exit_code == 1
    doc = json.loads(run_cli("url", RUNS / "e2_wandb", "--json").stdout)
    assert doc["run_ids"] == ["p7k2m9xq"]


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("show", tmp_path / "missing").exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("check", empty)
    assert result.exit_code == 2 and "no run found" in result.stderr


def test_default_command_without_tty_prints_runs_table():
    result = run_cli(RUNS)
    assert result.exit_code == 0 and "e2_rollback" in result.stdout


@pytest.mark.parametrize("name", ["ls", "show", "check", "curves", "compare", "config", "export", "url", "cache"])
def test_every_command_is_documented(name):
    readme = (ROOT / "README.md").read_text()
    assert f"pimm-inspect {name}" in readme
    help_text = run_cli(name, "--help").stdout
    assert "Example:" in help_text


@pytest.mark.parametrize("command", [["check", "--json"], ["check"], ["show", "--json"], ["ls"]])
def test_tree_commands_hold_one_run_at_a_time(command, tmp_path, monkeypatch):
    """A tree of many big runs is processed run by run: memory stays flat (tracemalloc sees numpy buffers)."""
    import tracemalloc

    import numpy as np

    import pimm_inspect.analysis
    import pimm_inspect.session.rows
    import pimm_inspect.session.staged  # these two bind their own loader and analysis: imported before the patches
    from pimm_inspect.load import safe
    from pimm_inspect.model import Attempt, Run, make_series

    for i in range(40):
        (tmp_path / f"run{i:02d}").mkdir()
        (tmp_path / f"run{i:02d}" / "train.log").write_text("")

    def big_run(path, cache=None, now=None, progress=None):
        steps = np.arange(1_000_000)  # 8 MB of steps + 8 MB of values + 8 MB of wall times
        series = (make_series("loss", steps, steps * 0.5, steps * 1.0, "train.log", 1),)
        return Run(root=Path(path).absolute(), kind="pimm", era="E2", status="finished", name=Path(path).name,
                   attempts=(Attempt(1, first_step=0, last_step=999_999, ended="completed"),), series=series)

    monkeypatch.setattr(safe, "load_safely", big_run)
    monkeypatch.setattr(safe, "load_reusable", lambda path, cache=None, **_: (big_run(path), True))  # show --json, ls
    monkeypatch.setattr(pimm_inspect.analysis, "analyze", lambda run: run)  # memory, not check speed, is under test
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, [*command, str(tmp_path)], catch_exceptions=False)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code in (0, 1) and "run39" in result.stdout
    assert peak < 200 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB: runs were kept in memory (all: ~960 MiB)"
