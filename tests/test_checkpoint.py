"""Checkpoint reader: real torch.save / DCP fixtures, hostile archives and damage, without torch."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

from pimm_inspect.sources.checkpoint.reader import read_checkpoint_file, read_model_dir
from pimm_inspect.sources.checkpoint.safe_pickle import to_plain
from tests.import_probe import modules_after

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoints"


def _read(name: str):
    return read_checkpoint_file(FIXTURES / name, f"model/{name}")


def test_e2_full_payload() -> None:
    read = _read("e2_model_last.pth")
    info = read.info
    assert read.findings == () and read.container == "zip" and read.byteorder == "little"
    assert (info.format, info.complete, info.schema, info.version) == ("legacy", True, "pimm.trainer_checkpoint", 3)
    assert (info.epoch, info.iter_in_epoch, info.global_step, info.best_metric_value) == (3, 0, 120, 0.625)
    assert (info.wandb_run_id, info.wandb_cursor_key, info.wandb_cursor) == ("k3x9q2ab", "resume_step", 121)
    assert (info.wandb_step_offset, info.wandb_checkpoint_global_step) == (0, 120)
    assert info.wandb_state["step_metric"] == "train/global_step"
    assert (info.world_size, info.num_workers, info.has_loader_state) == (2, 3, True)
    assert info.unsafe_globals == ()
    assert info.top_level_keys == ("schema", "version", "checkpoint_version", "model", "optimizer", "scheduler",
                                   "scaler", "dataloader", "rng", "trainer", "logger", "distributed")
    # Linear(3,2): weight 6 + bias 2 floats, AdamW step/exp_avg/exp_avg_sq per param, 2 ranks x torch RNG.
    assert info.tensor_count == 10
    assert read.payload["rng"]["state"]["states"][0]["numpy"][0] == "MT19937"
    assert read.source.kind == "checkpoint" and read.source.bytes_read > 0


def test_e3b_next_step_cursor() -> None:
    info = _read("e3b_model_last.pth").info
    assert (info.wandb_run_id, info.wandb_cursor_key, info.wandb_cursor) == ("z8w7v6u5", "next_step", 241)
    assert info.wandb_state["history"] == "new" and info.wandb_state["entity"] == "dlp"
    assert (info.global_step, info.epoch) == (240, 6)


def test_e1_has_no_cursor() -> None:
    info = _read("e1_model_last.pth").info
    assert (info.wandb_cursor_key, info.wandb_cursor, info.wandb_run_id) == (None, None, None)
    assert info.wandb_state["run_name"] == "sonata-v0-job0001"
    assert (info.global_step, info.epoch, info.iter_in_epoch) == (60, 1, 20)


def test_e0_flat_dict_zip_and_prezip() -> None:
    info = _read("e0_model_last.pth").info
    assert (info.format, info.epoch, info.iter_in_epoch, info.global_step, info.best_metric_value) == \
        ("legacy", 5, 40, None, 0.5)
    assert (info.wandb_run_id, info.wandb_cursor_key, info.wandb_cursor) == ("old0run1", "wandb_resume_step", 201)
    assert info.has_loader_state is False
    prezip = _read("e0_prezip.pth")
    assert prezip.container == "legacy" and prezip.findings == ()
    assert (prezip.info.epoch, prezip.info.iter_in_epoch, prezip.info.best_metric_value) == (2, 10, 0.25)
    assert prezip.info.tensor_count == 2 and prezip.info.tensor_bytes == 32


def test_weights_only_and_train_state_precedence() -> None:
    weights = _read("weights_only.pth")
    assert weights.info.format == "weights" and weights.info.top_level_keys == ("state_dict",)
    assert sorted(weights.payload["state_dict"]) == ["module.bias", "module.weight"]
    assert weights.payload["state_dict"]["module.weight"].shape == (2, 3)
    assert weights.info.has_loader_state is None
    info = _read("train_state.pth").info
    assert (info.epoch, info.iter_in_epoch, info.global_step, info.world_size, info.best_metric_value) == \
        (4, 7, 87, 4, 0.75)
    assert info.has_loader_state is False


def test_dcp_metadata_values_come_from_distcp() -> None:
    read = read_checkpoint_file(FIXTURES / "standard/model/last/trainer.dcp", "model/last/trainer.dcp")
    assert read.container == "dcp" and read.findings == ()
    assert "trainer.global_step" in read.dcp_keys and "logger.wandb.resume_step" in read.dcp_keys
    assert read.payload["trainer"] == {"epoch": 3, "iter_in_epoch": 0, "global_step": 120, "samples_seen": 480,
                                       "best_metric_value": 0.625}
    assert read.payload["distributed"]["rank_order"] == [0]
    meta = read_checkpoint_file(FIXTURES / "standard/model/last/trainer.dcp/.metadata",
                                "model/last/trainer.dcp/.metadata")
    assert meta.info.global_step == 120 and meta.info.format == "dcp"


def test_model_dir_standard_layout() -> None:
    result = read_model_dir(FIXTURES / "standard/model", FIXTURES / "standard")
    by_path = {c.path: c for c in result.checkpoints}
    assert sorted(by_path) == ["model/last", "model/model_best.pth"]
    last = by_path["model/last"]
    assert (last.format, last.role, last.complete, last.resume_candidate) == ("standard", "last", True, True)
    assert (last.global_step, last.wandb_cursor, last.world_size, last.num_workers) == (120, 121, 1, 3)
    assert "model" in last.top_level_keys and last.tensor_count == 2 + 7
    best = by_path["model/model_best.pth"]
    assert (best.format, best.role, best.resume_candidate) == ("weights", "best", False)
    assert result.findings == () and result.leftovers == () and result.model_link_target is None


def _copy_standard(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "standard", run)
    return run


def test_resume_candidate_and_leftovers(tmp_path: Path) -> None:
    run = _copy_standard(tmp_path)
    model = run / "model"
    shutil.copy(FIXTURES / "e2_model_last.pth", model / "model_last.pth")
    os.utime(model / "model_last.pth", (1_790_000_000, 1_790_000_000))
    os.utime(model / "last", (1_780_000_000, 1_780_000_000))  # a fresh checkout gives it "now": pin it older
    (model / "model_last.pth.tmp").write_bytes(b"PK\x03\x04")
    shutil.copytree(model / "last", model / "last.tmp")
    (model / "last.tmp" / ".complete").unlink()
    result = read_model_dir(model, run)
    by_path = {c.path: c for c in result.checkpoints}
    assert by_path["model/model_last.pth"].resume_candidate and not by_path["model/last"].resume_candidate
    assert by_path["model/last.tmp"].complete is False and by_path["model/last.tmp"].role == "last.tmp"
    assert by_path["model/model_last.pth.tmp"].role == "tmp"
    assert set(result.leftovers) == {"model/last.tmp", "model/model_last.pth.tmp"}
    # An unsealed last/ is not eligible: only model_last.pth remains.
    (model / "last" / ".complete").unlink()
    os.utime(model / "model_last.pth", (1_700_000_000, 1_700_000_000))
    result = read_model_dir(model, run)
    by_path = {c.path: c for c in result.checkpoints}
    assert not by_path["model/last"].complete and by_path["model/model_last.pth"].resume_candidate


def test_dangling_model_symlink(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "model").symlink_to("/scratch/user/models/gone/model")
    result = read_model_dir(run / "model", run)
    assert result.model_link_target == "/scratch/user/models/gone/model" and result.model_link_dangling
    assert result.checkpoints == ()


def test_truncated_distcp_is_a_finding(tmp_path: Path) -> None:
    run = _copy_standard(tmp_path)
    shard = run / "model/last/trainer.dcp/__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[:3000])
    result = read_model_dir(run / "model", run)
    last = result.checkpoints[0]
    assert last.complete is False and last.global_step is None
    assert [f.code for f in result.findings] == ["file.truncated"]
    assert result.findings[0].paths == ("model/last/trainer.dcp/__0_0.distcp",)


def _torch_zip(data_pkl: bytes, prefix: str = "archive") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{prefix}/data.pkl", data_pkl)
        archive.writestr(f"{prefix}/byteorder", "little")
        archive.writestr(f"{prefix}/version", "3\n")
    return buf.getvalue()


def test_malicious_archive_is_listed_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "model_last.pth"
    path.write_bytes(_torch_zip(pickle.dumps({"epoch": 2, "x": Evil()}, protocol=2)))
    read = read_checkpoint_file(path, "model/model_last.pth")
    assert not marker.exists()
    assert read.info.unsafe_globals == ("posix.system",) and read.info.epoch == 2
    assert read.findings == ()


def test_training_args_state_is_readable(tmp_path: Path) -> None:
    # Stands for transformers.TrainingArguments: a class we do not allow, with dataclass-style state.
    data = (b"\x80\x02ctransformers.training_args\nTrainingArguments\n)\x81}(X\n\x00\x00\x00output_dir"
            b"X\x11\x00\x00\x00/scratch/user/outX\r\x00\x00\x00logging_stepsK\x05X\t\x00\x00\x00report_to"
            b"]X\x05\x00\x00\x00wandbaub.")
    path = tmp_path / "training_args.bin"
    path.write_bytes(_torch_zip(data, prefix="training_args"))
    read = read_checkpoint_file(path, "checkpoint-5/training_args.bin")
    assert read.info.format == "hf"
    assert read.info.unsafe_globals == ("transformers.training_args.TrainingArguments",)
    assert to_plain(read.payload) == {"output_dir": "/scratch/user/out", "logging_steps": 5, "report_to": ["wandb"]}


@pytest.mark.parametrize("case, code", [
    ("empty", "file.empty"), ("text", "file.corrupt"), ("truncated_zip", "file.truncated"),
    ("no_data_pkl", "file.corrupt"), ("truncated_prezip", "file.truncated"), ("cut_prezip_pickle", "file.truncated"),
    ("directory", "file.unreadable"), ("fifo", "file.unreadable"), ("missing_storage", "file.corrupt"),
    ("zip_version", "file.corrupt"),
])
def test_damage_becomes_a_finding(tmp_path: Path, case: str, code: str) -> None:
    path = tmp_path / "model_last.pth"
    e2 = (FIXTURES / "e2_model_last.pth").read_bytes()
    prezip = (FIXTURES / "e0_prezip.pth").read_bytes()
    if case == "empty":
        path.write_bytes(b"")
    elif case == "text":
        path.write_text("not a checkpoint\n")
    elif case == "truncated_zip":
        path.write_bytes(e2[: len(e2) - 3000])  # central directory and last storages gone
    elif case == "no_data_pkl":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as archive:
            archive.writestr("archive/version", "3\n")
        path.write_bytes(buf.getvalue())
    elif case == "truncated_prezip":
        path.write_bytes(prezip[:-10])
    elif case == "cut_prezip_pickle":
        path.write_bytes(prezip[:200])
    elif case == "directory":
        path.mkdir()
    elif case == "fifo":
        os.mkfifo(path)
    elif case == "zip_version":  # a flipped byte: "needs zip version 20.3" (zipfile raised NotImplementedError)
        central = e2.index(b"PK\x01\x02")
        path.write_bytes(e2[: central + 6] + bytes([203]) + e2[central + 7:])
    elif case == "missing_storage":
        with zipfile.ZipFile(io.BytesIO(e2)) as src, zipfile.ZipFile(path, "w") as dst:
            for item in src.infolist():
                if item.filename != "e2_model_last/data/0":
                    dst.writestr(item, src.read(item))
    read = read_checkpoint_file(path, "model/model_last.pth")
    assert code in [f.code for f in read.findings]
    assert all(f.paths == ("model/model_last.pth",) for f in read.findings)
    assert read.info.path == "model/model_last.pth"
    if case == "truncated_zip":  # data.pkl comes first in the archive: its metadata survives
        assert read.info.global_step == 120 and read.info.wandb_cursor == 121 and not read.info.complete
    if case == "truncated_prezip":
        assert read.info.epoch == 2 and not read.info.complete
    if case in ("missing_storage", "zip_version"):
        assert read.info.global_step == 120


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "model_best.pth"
    shutil.copy(FIXTURES / "weights_only.pth", path)
    path.chmod(0)
    read = read_checkpoint_file(path, "model/model_best.pth")
    assert [f.code for f in read.findings] == ["file.unreadable"]
    assert read.info.size_bytes == path.stat().st_size


def test_reader_never_imports_torch() -> None:
    code = ("from pathlib import Path; from pimm_inspect.sources.checkpoint.reader import read_model_dir;"
            f"r = read_model_dir(Path({str(FIXTURES / 'standard/model')!r}), Path({str(FIXTURES / 'standard')!r}));"
            "assert r.checkpoints[0].global_step == 120")
    assert not modules_after(code) & {"torch", "pandas"}


def test_a_class_kept_as_a_value_is_named_not_called(tmp_path: Path) -> None:
    """A Lightning module's ``save_hyperparameters()`` of ``optimizer=torch.optim.Adam`` stores the class itself (the
    public DyeDye-diyung Lightning checkpoints: ``torch.optim.adam.Adam`` as an hparams value). Unpickling names it and
    calls nothing; checkpoint.unsafe said loading "would call these" (error). Written by pickle, as torch.save
    writes data.pkl; a class outside the allow-list that can be imported here stands in for the optimizer class."""
    import argparse

    from pimm_inspect.analysis import checks_checkpoint
    from tests.test_checks import run_of

    named, called = tmp_path / "named.ckpt", tmp_path / "called.ckpt"
    named.write_bytes(pickle.dumps({"epoch": 1, "hyper_parameters": {"optimizer": argparse.Namespace}}))
    called.write_bytes(pickle.dumps({"epoch": 1, "hyper_parameters": {"args": argparse.Namespace(lr=0.1)},
                                     "cls": argparse.Namespace}))
    infos = [read_checkpoint_file(p, p.name).info for p in (named, called)]
    assert [(i.unsafe_globals, i.unsafe_uncalled) for i in infos] == [
        (("argparse.Namespace",), ("argparse.Namespace",)), (("argparse.Namespace",), ())]
    (as_value,) = checks_checkpoint.check_unsafe(run_of(checkpoints=(infos[0],)))
    assert as_value.severity.label == "warning"
    assert as_value.message == ("named.ckpt names 1 global(s) outside the allow-list as values, calling none: "
                                "argparse.Namespace")
    assert "would call" not in as_value.explanation
    (calls,) = checks_checkpoint.check_unsafe(run_of(checkpoints=(infos[1],)))
    assert calls.severity.label == "error" and "would call these" in calls.explanation


def test_a_pickle_cut_short_proves_nothing_uncalled(tmp_path: Path) -> None:
    """The calls after a cut are unknown: a truncated pickle's globals are not said to be uncalled."""
    import argparse

    path = tmp_path / "cut.ckpt"
    data = pickle.dumps({"optimizer": argparse.Namespace, "later": [argparse.Namespace(lr=0.1)] * 3})
    path.write_bytes(data[:data.index(b"Namespace") + 20])
    info = read_checkpoint_file(path, path.name).info
    assert info.unsafe_globals == ("argparse.Namespace",) and info.unsafe_uncalled == ()
