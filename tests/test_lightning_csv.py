"""Lightning's CSVLogger folders (``metrics.csv`` + ``hparams.yaml``, no event file) are runs, read from the files the
real pytorch-lightning wrote (``fixtures/gen_lightning.py``, scenario ``lightning_csv``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect import load_run
from pimm_inspect.cli.main import cli as main
from pimm_inspect.load.discover import classify_dir, discover
from pimm_inspect.sources.lightning import csv_metrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
CSV_RUN = FIXTURES / "lightning_csv"
V0 = CSV_RUN / "lightning_logs" / "version_0"
V1 = CSV_RUN / "lightning_logs" / "version_1"
BOTH = CSV_RUN / "both_loggers" / "version_0"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_csvlogger_folder_is_a_run_of_kind_lightning() -> None:
    runs = [p.relative_to(CSV_RUN).as_posix() for p in discover(CSV_RUN)]
    assert runs == ["both_loggers/version_0", "lightning_logs/version_0", "lightning_logs/version_1"]
    assert classify_dir(V0) == "lightning" and classify_dir(V1) == "lightning"
    assert classify_dir(BOTH) == "tensorboard"  # the event file beside it holds the same points


def test_metrics_csv_is_read_as_scalars_at_their_steps() -> None:
    run = load_run(V0)
    by_tag = {s.tag: s for s in run.series}
    assert set(by_tag) == {"epoch", "train_loss", "val_loss"}
    rows = _rows(V0 / "metrics.csv")
    for tag, s in by_tag.items():
        written = [(int(r["step"]), float(r[tag])) for r in rows if r[tag]]
        assert [(int(a), float(b)) for a, b in zip(s.steps, s.values)] == written
        assert s.source == "metrics.csv" and s.source_kind == "lightning_csv" and s.attempt == 1
        assert all(math.isnan(t) for t in s.wall_times_s)  # CSVLogger keeps no clock
    assert list(by_tag["train_loss"].steps) == [0, 1, 2, 3, 4, 5] and list(by_tag["val_loss"].steps) == [1, 3, 5]
    assert [a.origin for a in run.attempts] == ["fresh"] and (run.attempts[0].first_step, run.attempts[0].last_step) == (0, 5)
    assert run.config("lightning_hparams") is not None and run.config("lightning_hparams").data == {"lr": 0.05}
    assert [c.path for c in run.checkpoints][-1] == "checkpoints/last.ckpt"


def test_a_version_resumed_with_ckpt_path_is_a_resume() -> None:
    """version_1's first row is epoch 3: Lightning restored the epoch from version_0's last.ckpt (step 6)."""
    first = _rows(V1 / "metrics.csv")[0]
    assert (first["epoch"], first["step"]) == ("3", "6")
    att = load_run(V1).attempts
    assert [(a.origin, a.first_step, a.last_step, a.restore_step) for a in att] == [("resume", 6, 9, 5)]
    assert [a.origin for a in load_run(V0).attempts] == ["fresh"]


def test_tensorboard_logger_resumed_with_ckpt_path_is_a_resume() -> None:
    """The same rule for TensorBoardLogger's folder (hparams.yaml beside the event file): epoch 3 first."""
    resumable = FIXTURES / "lightning_resumable" / "lightning_logs"
    # The hp_metric placeholder TensorBoardLogger writes at step 0 is no trained step: the restore point is 5.
    assert [(a.origin, a.restore_step) for a in load_run(resumable / "version_1").attempts] == [("resume", 5)]
    assert [a.origin for a in load_run(resumable / "version_0").attempts] == ["fresh"]


def test_both_loggers_in_one_folder_count_each_point_once() -> None:
    """Both files are read: what both hold is drawn from the event file, never counted as a second copy."""
    from pimm_inspect.analysis.replays import drawn_series

    run = load_run(BOTH)
    assert {s.source_kind for s in run.series} == {"tb_events", "lightning_csv"}
    assert not run.replayed and not [f for f in run.findings if f.code in ("steps.replayed", "metrics.source-mismatch")]
    drawn = {s.tag: s for s in drawn_series(run)}
    assert {tag: s.source_kind for tag, s in drawn.items()} == {
        "epoch": "tb_events", "hp_metric": "tb_events", "train_loss": "tb_events", "val_loss": "tb_events"}
    written = [(int(r["step"]), float(r["train_loss"])) for r in _rows(BOTH / "metrics.csv") if r["train_loss"]]
    assert [(int(a), float(b)) for a, b in zip(drawn["train_loss"].steps, drawn["train_loss"].values)] == written


def test_metrics_only_the_csv_holds_are_read_beside_an_event_file(tmp_path: Path) -> None:
    """A public run's version folder held an event file of hp_metric alone and a metrics.csv of every training curve.
    Here: Lightning's evaluation-only event file (val_loss_*) beside version_0's CSVLogger files (train_loss): the
    folder is a TensorBoard run whose train_loss comes from metrics.csv (it was read from nothing before)."""
    import shutil

    folder = tmp_path / "version_0"
    folder.mkdir()
    for name in ("metrics.csv", "hparams.yaml"):
        shutil.copy(V0 / name, folder / name)
    evaluation = FIXTURES / "lightning_eval_passes" / "lightning_logs" / "version_0"
    shutil.copy(evaluation / "events.out.tfevents.1760102000.fixture-host.5353.0", folder)
    run = load_run(folder)
    assert run.kind == "tensorboard"
    kinds = {s.tag: s.source_kind for s in run.series}
    assert kinds["train_loss"] == "lightning_csv" and kinds["val_loss_step"] == "tb_events"
    (train,) = [s for s in run.series if s.tag == "train_loss"]
    assert list(train.steps) == [0, 1, 2, 3, 4, 5] and train.attempt == 1


def test_show_ls_and_check_agree_on_a_csv_run() -> None:
    runner = CliRunner()
    shown = json.loads(runner.invoke(main, ["show", "--json", str(V1)]).output)["runs"][0]
    listed = json.loads(runner.invoke(main, ["ls", "--json", str(CSV_RUN)]).output)
    row = next(r for r in listed["runs"] if r["path"].endswith("lightning_logs/version_1"))
    assert shown["kind"] == row["kind"] == "lightning"
    assert len(shown["attempts"]) == row["attempts"] == 1
    assert shown["attempts"][0]["origin"] == "resume"
    assert set(shown["scalars"]) == {"epoch", "train_loss", "val_loss"}
    checked = runner.invoke(main, ["check", "--json", str(V1)])
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize("text, points, codes", [
    ("epoch,loss\n0,1.0\n", 0, ["file.unsupported"]),  # no step column: named, nothing read
    ("step,loss,created_at\n0,1.0,2020-02-05 14:48\n1,nan,2020-02-05 14:49\n2,0.5", 2, ["file.corrupt"]),
    ("step,loss\n0,1.0\nx,2.0\n1,inf\n", 2, ["file.corrupt"]),
    ("step,loss\n1e30,0.5\n99999999999999999999999,0.4\n3,0.3\n", 1, ["file.corrupt"]),  # steps past int64
])
def test_damaged_metrics_csv_gives_what_could_be_read(tmp_path: Path, text: str, points: int, codes: list[str]) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(text)
    result = csv_metrics.read(path, "metrics.csv")
    assert [f.code for f in result.findings] == codes
    assert all(f.paths == ("metrics.csv",) for f in result.findings)
    got = sum(len(s) for s in result.value.series.values()) if result.value is not None else 0
    assert got == points


def test_a_row_still_being_written_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_bytes(b"step,loss\n0,1.0\n1,0.9\n2,0.")
    result = csv_metrics.read(path, "metrics.csv")
    assert result.value is not None and list(result.value.series["loss"].steps) == [0, 1]
    assert result.bytes_read == len(b"step,loss\n0,1.0\n1,0.9\n")


def test_the_csvs_epoch_says_resume_when_the_event_file_beside_it_holds_none(tmp_path: Path) -> None:
    """A public version folder: TensorBoardLogger's event file held hp_metric alone (``log_hyperparams`` writes -1 at
    step 0), metrics.csv every curve. version_1's CSV starts at epoch 3 (restored from version_0's last.ckpt, step 5):
    the resume rule reads the CSV's epoch when the event file has none (it said 'fresh' before)."""
    import shutil

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder = tmp_path / "version_1"
    folder.mkdir()
    for name in ("metrics.csv", "hparams.yaml"):
        shutil.copy(V1 / name, folder / name)
    writer = EventFileWriter(str(folder))
    writer.add_event(event_pb2.Event(wall_time=1_760_103_000.0, step=0, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="hp_metric", simple_value=-1.0)])))
    writer.close()
    run = load_run(folder)
    assert run.kind == "tensorboard" and {s.tag for s in run.series if s.source_kind == "tb_events"} == {"hp_metric"}
    assert [(a.origin, a.restore_step, a.last_step) for a in run.attempts] == [("resume", 5, 9)]
