"""A Lightning CSVLogger folder of a module without hyperparameters has no ``hparams.yaml`` (pytorch-lightning 2.6
writes one only after ``save_hyperparameters``): its ``metrics.csv`` header's ``step`` column makes it a run. Read
from the files the real pytorch-lightning wrote (``fixtures/gen_lightning_bare.py``); the CSVs that are no run are
built here."""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect import load_run
from pimm_inspect.cli.main import cli as main
from pimm_inspect.load.discover import classify_dir, discover, run_containing

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
BARE = ROOT / "lightning_shapes" / "bare_csv"
V0 = BARE / "lightning_logs" / "version_0"
V1 = BARE / "lightning_logs" / "version_1"
BOTH = ROOT / "runs" / "lightning_csv" / "both_loggers" / "version_0"
discover_mod = importlib.import_module("pimm_inspect.load.discover")


def _json(*args: str) -> object:
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_fixture_has_no_hparams_yaml() -> None:
    assert not (V0 / "hparams.yaml").exists() and not (V1 / "hparams.yaml").exists()
    assert (V0 / "metrics.csv").read_text().splitlines()[0] == "epoch,step,train_loss,val_loss"


def test_a_csvlogger_folder_without_hparams_is_a_lightning_run() -> None:
    assert [p.relative_to(BARE).as_posix() for p in discover(BARE)] == ["lightning_logs/version_0",
                                                                        "lightning_logs/version_1"]
    assert classify_dir(V0) == "lightning" and classify_dir(str(V1)) == "lightning"
    assert run_containing(V0 / "metrics.csv") == V0.absolute()
    assert run_containing(V0 / "checkpoints") == V0.absolute()


def test_load_reads_its_metrics_checkpoints_and_resume() -> None:
    run = load_run(V0)
    by_tag = {s.tag: s for s in run.series}
    assert set(by_tag) == {"epoch", "train_loss", "val_loss"}
    assert list(by_tag["train_loss"].steps) == [0, 1, 2, 3] and list(by_tag["val_loss"].steps) == [1, 3]
    assert by_tag["train_loss"].source_kind == "lightning_csv"
    assert [c.path for c in run.checkpoints] == ["checkpoints/epoch=0-step=2.ckpt", "checkpoints/epoch=1-step=4.ckpt",
                                                 "checkpoints/last.ckpt"]
    assert [(a.origin, a.first_step, a.last_step) for a in run.attempts] == [("fresh", 0, 3)]
    resumed = load_run(V1).attempts  # version_1's first row is epoch 2: restored from version_0's last.ckpt
    assert [(a.origin, a.first_step, a.last_step, a.restore_step) for a in resumed] == [("resume", 4, 7, 3)]


def test_ls_show_and_check_on_it() -> None:
    listed = _json("ls", str(BARE))
    assert isinstance(listed, dict)
    assert [(r["path"], r["kind"], r["last_step"]) for r in listed["runs"]] == [
        ("lightning_logs/version_0", "lightning", 3), ("lightning_logs/version_1", "lightning", 7)]
    shown = _json("show", str(V1))
    assert isinstance(shown, dict)
    run = shown["runs"][0]
    assert run["kind"] == "lightning"
    assert {tag: (s["first_step"], s["last_step"], s["source"]) for tag, s in run["scalars"].items()} == {
        "epoch": (4, 7, "lightning_csv"), "train_loss": (4, 7, "lightning_csv"), "val_loss": (5, 7, "lightning_csv")}
    assert [c["path"] for c in run["checkpoints"]][-1] == "checkpoints/last.ckpt"
    checked = _json("check", str(V1), "--fail-on", "never")
    assert isinstance(checked, dict) and checked["runs"] == [{"path": ".", "findings": []}]


def test_a_metrics_csv_without_a_step_column_is_no_run(tmp_path: Path) -> None:
    data = tmp_path / "data" / "split_a"
    data.mkdir(parents=True)
    (data / "metrics.csv").write_text("epoch,loss,accuracy\n0,1.5,0.2\n1,0.9,0.6\n")
    quoted = tmp_path / "data" / "quoted"
    quoted.mkdir()
    (quoted / "metrics.csv").write_text('name,"step size",stepping\nx,1,2\n')  # no column named exactly step
    assert classify_dir(data) is None and classify_dir(quoted) is None
    assert discover(tmp_path) == []


def test_step_only_in_a_later_row_is_no_run(tmp_path: Path) -> None:
    (tmp_path / "metrics.csv").write_text("epoch,loss\nstep,1\n")
    assert classify_dir(tmp_path) is None


def test_a_metrics_csv_that_is_no_regular_file_is_no_run(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    (folder / "metrics.csv").mkdir(parents=True)
    assert classify_dir(folder) is None
    if hasattr(os, "mkfifo"):  # a FIFO is opened without blocking and refused
        fifo = tmp_path / "b"
        fifo.mkdir()
        os.mkfifo(fifo / "metrics.csv")
        assert classify_dir(fifo) is None
    if os.path.exists("/dev/zero"):  # a link to a device is no file to read (never read without end)
        device = tmp_path / "d"
        device.mkdir()
        (device / "metrics.csv").symlink_to("/dev/zero")
        assert classify_dir(device) is None
    dangling = tmp_path / "c"
    dangling.mkdir()
    (dangling / "metrics.csv").symlink_to(tmp_path / "missing.csv")
    assert classify_dir(dangling) is None
    assert discover(tmp_path) == []


def test_the_header_read_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover_mod, "HEADER_BYTES", 64)
    far = tmp_path / "far"
    far.mkdir()
    (far / "metrics.csv").write_text(",".join(f"metric_{i:03d}" for i in range(20)) + ",step\n0,1\n")
    assert classify_dir(far) is None  # the step column lies past the bytes read
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "metrics.csv").write_text("a" * 58 + ",step,tail\n")  # the 64 bytes read hold "step" whole, then a comma
    assert classify_dir(cut) == "lightning"
    near = tmp_path / "near"
    near.mkdir()
    (near / "metrics.csv").write_text("epoch,step,train_loss\r\n0,0,1.0\r\n")
    assert classify_dir(near) == "lightning"
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "metrics.csv").write_text("a" * 59 + ",stepping\n")  # the 64 bytes read end in ",step" of "stepping"
    assert classify_dir(prefix) is None


def test_a_step_csv_beside_other_run_markers_is_one_run(tmp_path: Path) -> None:
    """metrics.csv with a step column beside an event file (TensorBoardLogger + CSVLogger, no hparams.yaml) or a
    train.log is one run of the folder's other kind, never a second one."""
    tb = tmp_path / "tb"
    shutil.copytree(BOTH, tb)
    (tb / "hparams.yaml").unlink()
    pimm = tmp_path / "pimm"
    pimm.mkdir()
    shutil.copy(V0 / "metrics.csv", pimm / "metrics.csv")
    (pimm / "train.log").write_text("")
    assert classify_dir(tb) == "tensorboard" and classify_dir(pimm) == "pimm"
    assert discover(tmp_path) == [pimm, tb]


def test_a_bare_version_inside_a_tensorboard_run_is_found_once(tmp_path: Path) -> None:
    """A TensorBoard run's subfolders are searched: a CSVLogger version below it is its own run, listed once."""
    shutil.copytree(BOTH, tmp_path / "tb")
    shutil.copytree(V0, tmp_path / "tb" / "csv" / "version_0")
    found = discover(tmp_path)
    assert found == [tmp_path / "tb", tmp_path / "tb" / "csv" / "version_0"]
    assert len(set(found)) == len(found)
