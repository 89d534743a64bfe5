"""Tests for the HF Trainer output-dir reader on fixtures made by real transformers.Trainer runs."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import pimm_inspect
from pimm_inspect.model import Severity, make_series
from pimm_inspect.report.json_doc import run_notes
from pimm_inspect.sources.hf.reader import hf_tag, is_hf_trainer_dir, read_hf_trainer_dir
from tests.import_probe import modules_after

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
CLEAN, RESUMED, RESUMED_WANDB = RUNS / "hf_clean", RUNS / "hf_resumed", RUNS / "hf_resumed_wandb"
CORE_FILES = ("config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "rng_state.pth",
              "scheduler.pt", "trainer_state.json", "training_args.bin")


def simple_tb_reader(path: Path, rel_path: str) -> SimpleNamespace:
    """A minimal event-file reader for tests (framing + tensorboard's Event proto, simple_value only)."""
    from tensorboard.compat.proto import event_pb2

    data, pos, points = path.read_bytes(), 0, {}
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += 16 + length
        for value in event.summary.value:
            if value.HasField("simple_value"):
                points.setdefault(value.tag, []).append((event.step, value.simple_value, event.wall_time))
    series = {tag: make_series(tag, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts], rel_path)
              for tag, pts in points.items()}
    return SimpleNamespace(series=series, findings=())


def load_state(path: Path) -> dict:
    """The fixture's own trainer_state.json, parsed independently of the reader."""
    return json.loads(path.read_text())


def by_tag(result) -> dict:
    """Series of a result keyed by tag."""
    return {s.tag: s for s in result.series}


def codes(result) -> set[tuple[str, tuple[str, ...]]]:
    """(code, paths) pairs of a result's findings."""
    return {(f.code, f.paths) for f in result.findings}


@pytest.fixture
def clean_copy(tmp_path: Path) -> Path:
    """A writable copy of hf_clean without its TB folder (damage cases edit it)."""
    target = tmp_path / "hf_clean"
    shutil.copytree(CLEAN, target, ignore=shutil.ignore_patterns("runs"))
    return target


# ---------------------------------------------------------------- detection

def test_is_hf_trainer_dir(tmp_path: Path) -> None:
    assert is_hf_trainer_dir(CLEAN) and is_hf_trainer_dir(RESUMED) and is_hf_trainer_dir(RESUMED_WANDB)
    assert not is_hf_trainer_dir(tmp_path)
    assert not is_hf_trainer_dir(tmp_path / "missing")
    (tmp_path / "checkpoint-5").mkdir()
    assert not is_hf_trainer_dir(tmp_path)
    (tmp_path / "checkpoint-5" / "trainer_state.json").write_text("{}")
    assert is_hf_trainer_dir(tmp_path)


def test_hf_tag_matches_hf_callbacks() -> None:
    assert [hf_tag(k) for k in ("loss", "learning_rate", "grad_norm", "epoch", "eval_loss", "test_acc")] == [
        "train/loss", "train/learning_rate", "train/grad_norm", "train/epoch", "eval/loss", "test/acc"]


# ---------------------------------------------------------------- clean run

def test_clean_series_match_trainer_state_exactly() -> None:
    state = load_state(CLEAN / "trainer_state.json")
    result = read_hf_trainer_dir(CLEAN, CLEAN, tb_reader=None)
    series = by_tag(result)
    assert result.state_path == "trainer_state.json"
    assert set(series) == {"train/loss", "train/learning_rate", "train/grad_norm", "train/epoch", "eval/loss",
                           "eval/runtime", "eval/samples_per_second", "eval/steps_per_second"}
    rows = [r for r in state["log_history"] if "loss" in r]
    assert [r["step"] for r in rows] == [5, 10, 15, 20, 25, 30]
    for key in ("loss", "learning_rate", "grad_norm", "epoch"):
        s = series[f"train/{key}"]
        assert s.steps.dtype == np.int64 and s.values.dtype == np.float64
        assert s.steps.tolist() == [5, 10, 15, 20, 25, 30]
        assert s.values.tolist() == [r[key] for r in rows]
        assert np.isnan(s.wall_times_s).all() and s.source == "trainer_state.json"
    evals = [r for r in state["log_history"] if "eval_loss" in r]
    assert series["eval/loss"].steps.tolist() == [10, 20, 30]
    assert series["eval/loss"].values.tolist() == [r["eval_loss"] for r in evals]
    # The summary row is kept apart, not as curve points.
    assert "train/train_runtime" not in series and "train/total_flos" not in series
    assert result.summary == {k: float(v) for k, v in state["log_history"][-1].items()}
    assert result.summary["step"] == 30 and result.summary["train_loss"] == state["log_history"][-1]["train_loss"]


def test_clean_state_fields() -> None:
    state = load_state(CLEAN / "trainer_state.json")
    result = read_hf_trainer_dir(CLEAN, CLEAN, tb_reader=None)
    assert (result.logging_steps, result.eval_steps, result.save_steps) == (5, 10, 10)
    assert (result.global_step, result.max_steps, result.num_train_epochs, result.train_batch_size) == (30, 30, 3.0, 4)
    assert result.best_metric == state["best_metric"] and result.best_global_step == state["best_global_step"]
    assert state["best_model_checkpoint"] == "hf_clean/checkpoint-10"  # as HF wrote it (relative to the cwd)
    assert result.best_model_checkpoint == "checkpoint-10"
    nested = read_hf_trainer_dir(CLEAN, RUNS, tb_reader=None)
    assert nested.best_model_checkpoint == "hf_clean/checkpoint-10"
    assert nested.checkpoints[0].info.path == "hf_clean/checkpoint-10"
    assert result.inferred_intervals == {"logging": 5, "eval": 10, "save": 10}
    assert result.findings == ()


def safetensors_header(path: Path) -> dict:
    """Independent parse of a safetensors header for comparison."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    return {"count": len(header), "bytes": len(data) - 8 - length,
            "dtypes": tuple(sorted({v["dtype"] for v in header.values()}))}


def test_clean_checkpoints() -> None:
    result = read_hf_trainer_dir(CLEAN, CLEAN, tb_reader=None)
    assert [c.info.path for c in result.checkpoints] == ["checkpoint-10", "checkpoint-20", "checkpoint-30"]
    for checkpoint, step in zip(result.checkpoints, (10, 20, 30)):
        info = checkpoint.info
        assert (info.format, info.role, info.complete, info.global_step) == ("hf", "checkpoint", True, step)
        assert checkpoint.dir_step == step and checkpoint.state_step == step
        assert checkpoint.files == CORE_FILES and checkpoint.missing == ()
        header = safetensors_header(CLEAN / info.path / "model.safetensors")
        assert header["count"] == 28 and header["dtypes"] == ("F32",)
        assert (info.tensor_count, info.tensor_bytes, checkpoint.weight_dtypes) == (
            header["count"], header["bytes"], header["dtypes"])
        assert info.size_bytes == sum((CLEAN / info.path / n).stat().st_size for n in CORE_FILES)
        assert info.best_metric_value == load_state(CLEAN / info.path / "trainer_state.json")["best_metric"]
        assert info.resume_candidate == (step == 30)
    final = result.final_model
    assert (final.path, final.role, final.complete, final.global_step, final.tensor_count) == (
        "model.safetensors", "other", True, 30, 28)


def test_clean_schedule_notes_and_single_attempt() -> None:
    result = read_hf_trainer_dir(CLEAN, CLEAN, tb_reader=simple_tb_reader)
    notes = result.schedule_notes
    assert any(n.startswith("loss is logged every 5 steps (logging_steps=5), so 30 steps give 6 points") for n in notes)
    assert any("computed every 10 steps (eval_steps=10), giving 3 points" in n for n in notes)
    assert any(n.startswith("checkpoints on disk: checkpoint-10, checkpoint-20, checkpoint-30; they are 10 steps "
                            "apart (save_steps=10)") for n in notes)
    assert any("end-of-training summary logged at step 30" in n for n in notes)
    assert not any("process starts" in n for n in notes)
    assert [(a.index, a.tb_dir, a.first_step, a.last_step, a.resumed_from_checkpoint) for a in result.attempts] == [
        (1, "runs/Jan01_10-00-00_node01", 5, 30, None)]
    assert result.history_conflicts == ()
    tb_loss = [s for s in result.tb_series if s.tag == "train/loss"]
    assert len(tb_loss) == 1 and tb_loss[0].attempt == 1 and tb_loss[0].steps.tolist() == [5, 10, 15, 20, 25, 30]
    # TensorBoard stores float32: equal to the JSON float64 values at float32 precision.
    assert np.allclose(tb_loss[0].values, by_tag(result)["train/loss"].values, rtol=1e-6, atol=0)


# ---------------------------------------------------------------- resumed runs

@pytest.mark.parametrize("run", [RESUMED, RESUMED_WANDB], ids=["hf_resumed", "hf_resumed_wandb"])
def test_resumed_attempts_and_replay(run: Path) -> None:
    result = read_hf_trainer_dir(run, run, tb_reader=simple_tb_reader)
    assert [d.path for d in result.tb_dirs] == ["runs/Jan01_10-00-00_node01", "runs/Jan01_10-05-00_node01"]
    assert all(len(d.event_files) == 1 and d.event_files[0].startswith(d.path + "/events.out.tfevents.")
               for d in result.tb_dirs)
    assert [(a.index, a.tb_dir, a.first_step, a.last_step, a.resumed_from_checkpoint) for a in result.attempts] == [
        (1, "runs/Jan01_10-00-00_node01", 5, 20, None), (2, "runs/Jan01_10-05-00_node01", 15, 20, 10)]
    assert result.history_conflicts == ()  # checkpoint-10's rows are the newest state's: no conflict
    tb_loss = sorted((s.attempt, s.steps.tolist()) for s in result.tb_series if s.tag == "train/loss")
    assert tb_loss == [(1, [5, 10, 15, 20]), (2, [15, 20])]
    # Resuming restores model, optimizer, scheduler and RNG state, so the replayed losses are identical.
    first, second = sorted((s for s in result.tb_series if s.tag == "train/loss"), key=lambda s: s.attempt)
    assert first.values[2:].tolist() == second.values.tolist()
    # trainer_state.json keeps one copy: HF restored log_history from checkpoint-10.
    assert by_tag(result)["train/loss"].steps.tolist() == [5, 10, 15, 20]
    state = load_state(run / "trainer_state.json")
    assert by_tag(result)["train/loss"].values.tolist() == [r["loss"] for r in state["log_history"] if "loss" in r]
    assert [c.info.path for c in result.checkpoints] == ["checkpoint-10", "checkpoint-20"]
    assert all(c.info.complete for c in result.checkpoints)
    joined = " ".join(result.schedule_notes)
    assert "2 process starts (attempt 2 resumed from checkpoint-10)" in joined
    assert "logged again" not in joined  # the reader reports facts; which steps were replayed is analysis's
    run = pimm_inspect.load_run(run)
    assert [(r.first_step, r.last_step, r.attempts) for r in run.replayed] == [(11, 20, (1, 2))]
    assert any(n.startswith("Steps 11-20 were logged again") for n in run_notes(run))
    assert result.findings == ()


def test_resumed_without_tb_reader_counts_folders_only() -> None:
    result = read_hf_trainer_dir(RESUMED, RESUMED, tb_reader=None)
    assert [(a.index, a.first_step, a.last_step, a.resumed_from_checkpoint) for a in result.attempts] == [
        (1, None, None, None), (2, None, None, None)]
    assert result.history_conflicts == () and result.tb_series == ()
    assert sorted(s.path for s in result.sources if s.kind == "tb_events") == [
        f for d in result.tb_dirs for f in d.event_files]


def test_resumed_with_shared_tb_reader() -> None:
    pytest.importorskip("pimm_inspect.sources.tensorboard.reader")
    result = read_hf_trainer_dir(RESUMED, RESUMED)
    assert [(a.first_step, a.last_step, a.resumed_from_checkpoint) for a in result.attempts] == [
        (5, 20, None), (15, 20, 10)]
    assert [(r.first_step, r.last_step) for r in pimm_inspect.load_run(RESUMED).replayed] == [(11, 20)]


def test_replay_inside_log_history(clean_copy: Path) -> None:
    """A history whose steps go backwards (two attempts appended) yields two attempts without TB."""
    path = clean_copy / "trainer_state.json"
    state = load_state(path)
    rows = [r for r in state["log_history"] if "train_runtime" not in r]
    replay = [dict(r, loss=r.get("loss", 0) + 1) for r in rows if 10 < r["step"] <= 20]
    state["log_history"] = rows[:4] + replay + rows[3:]
    path.write_text(json.dumps(state, indent=2))
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert [(a.first_step, a.last_step, a.resumed_from_checkpoint) for a in result.attempts] == [
        (5, 20, None), (15, 30, 10)]
    assert [(r.first_step, r.last_step) for r in pimm_inspect.load_run(clean_copy).replayed] == [(11, 20)]


def test_checkpoint_history_conflict_is_a_replay(clean_copy: Path) -> None:
    """A checkpoint written by another attempt holds other values for the same steps."""
    path = clean_copy / "checkpoint-20" / "trainer_state.json"
    state = load_state(path)
    for row in state["log_history"]:
        if row["step"] == 15 and "loss" in row:
            row["loss"] += 0.5
    path.write_text(json.dumps(state, indent=2))
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert result.history_conflicts == ((15, 15),)  # the raw fact; analysis makes it a replayed range
    assert [(r.first_step, r.last_step) for r in pimm_inspect.load_run(clean_copy).replayed] == [(15, 15)]


# ---------------------------------------------------------------- damage

def test_invalid_json_falls_back_to_newest_checkpoint(clean_copy: Path) -> None:
    (clean_copy / "trainer_state.json").write_text('{"global_step": 30, "log_history": [}}}')
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert ("file.invalid-json", ("trainer_state.json",)) in codes(result)
    assert result.state_path == "checkpoint-30/trainer_state.json"
    assert by_tag(result)["train/loss"].steps.tolist() == [5, 10, 15, 20, 25, 30]
    assert by_tag(result)["train/loss"].source == "checkpoint-30/trainer_state.json"


def test_truncated_state_is_salvaged(clean_copy: Path) -> None:
    text = (clean_copy / "trainer_state.json").read_text()
    cut = text.index('"step": 20') + 4  # inside the 5th row: rows 5, 10, eval 10 and 15 are whole
    (clean_copy / "trainer_state.json").write_text(text[:cut])
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    found = codes(result)
    assert ("file.truncated", ("trainer_state.json",)) in found
    assert ("file.invalid-json", ("trainer_state.json",)) not in found
    assert result.state_path == "checkpoint-30/trainer_state.json"  # the whole copy wins over the salvaged one
    # With no checkpoints left, the salvaged rows are what we get.
    for checkpoint in clean_copy.glob("checkpoint-*"):
        shutil.rmtree(checkpoint)
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert result.state_path == "trainer_state.json"
    assert by_tag(result)["train/loss"].steps.tolist() == [5, 10, 15]
    assert by_tag(result)["eval/loss"].steps.tolist() == [10]
    assert result.global_step == 30 and result.best_metric == load_state(CLEAN / "trainer_state.json")["best_metric"]
    assert any("4 complete log_history rows recovered" in f.message for f in result.findings)


def test_missing_log_history_and_wrong_types(clean_copy: Path) -> None:
    (clean_copy / "trainer_state.json").write_text(json.dumps({"global_step": 40, "logging_steps": 5}))
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert ("file.corrupt", ("trainer_state.json",)) in codes(result)
    assert result.state_path == "trainer_state.json" and result.series == () and result.global_step == 40
    (clean_copy / "trainer_state.json").write_text('[1, 2, 3]')
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    assert ("file.corrupt", ("trainer_state.json",)) in codes(result)
    assert result.state_path == "checkpoint-30/trainer_state.json"


def test_empty_and_unreadable_state(clean_copy: Path) -> None:
    (clean_copy / "trainer_state.json").write_bytes(b"")
    (clean_copy / "checkpoint-20" / "trainer_state.json").unlink()
    os.mkfifo(clean_copy / "checkpoint-20" / "trainer_state.json")  # opening it would block
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    found = codes(result)
    assert ("file.empty", ("trainer_state.json",)) in found
    assert ("file.unreadable", ("checkpoint-20/trainer_state.json",)) in found
    assert ("checkpoint.incomplete", ("checkpoint-20",)) in found
    assert [c.info.complete for c in result.checkpoints] == [True, False, True]
    assert result.state_path == "checkpoint-30/trainer_state.json"


def test_checkpoint_missing_files(clean_copy: Path) -> None:
    (clean_copy / "checkpoint-20" / "optimizer.pt").unlink()
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):  # the save_only_model=True layout
        (clean_copy / "checkpoint-10" / name).unlink()
    (clean_copy / "checkpoint-30" / "model.safetensors").unlink()
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    info = {c.info.path: c for c in result.checkpoints}
    assert info["checkpoint-20"].missing == ("optimizer.pt",) and not info["checkpoint-20"].info.complete
    assert info["checkpoint-10"].missing == ("optimizer.pt", "scheduler.pt", "rng_state.pth")
    assert info["checkpoint-30"].missing == ("model.safetensors",) and info["checkpoint-30"].info.tensor_count == 0
    incomplete = {f.paths[0]: f for f in result.findings if f.code == "checkpoint.incomplete"}
    assert set(incomplete) == {"checkpoint-10", "checkpoint-20", "checkpoint-30"}
    assert incomplete["checkpoint-10"].severity == Severity.INFO
    assert incomplete["checkpoint-20"].severity == Severity.WARNING and incomplete["checkpoint-20"].steps == (20, 20)
    assert "missing optimizer.pt" in incomplete["checkpoint-20"].message
    # HF's get_last_checkpoint would still pick checkpoint-30.
    assert info["checkpoint-30"].info.resume_candidate


def test_damaged_safetensors(clean_copy: Path) -> None:
    path = clean_copy / "checkpoint-10" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    (clean_copy / "checkpoint-20" / "model.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    (clean_copy / "checkpoint-30" / "model.safetensors").write_bytes(struct.pack("<Q", 4) + b"nope")
    (clean_copy / "model.safetensors").write_bytes(b"\x01\x02")
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    found = codes(result)
    assert ("file.truncated", ("checkpoint-10/model.safetensors",)) in found
    assert ("file.truncated", ("checkpoint-20/model.safetensors",)) in found
    assert ("file.corrupt", ("checkpoint-30/model.safetensors",)) in found
    assert ("file.truncated", ("model.safetensors",)) in found
    assert [c.info.complete for c in result.checkpoints] == [False, False, False]
    assert not result.final_model.complete and result.final_model.size_bytes == 2
    assert result.checkpoints[0].info.tensor_count == 28  # the header itself was whole


def test_tmp_checkpoint_and_step_mismatch(clean_copy: Path) -> None:
    shutil.copytree(clean_copy / "checkpoint-30", clean_copy / "tmp-checkpoint-40")
    shutil.copytree(clean_copy / "checkpoint-20", clean_copy / "checkpoint-25")
    result = read_hf_trainer_dir(clean_copy, clean_copy, tb_reader=None)
    roles = {c.info.path: (c.info.role, c.info.complete) for c in result.checkpoints}
    assert roles["tmp-checkpoint-40"] == ("tmp", False) and roles["checkpoint-25"] == ("checkpoint", True)
    assert ("hf.checkpoint-step-mismatch", ("checkpoint-25",)) in codes(result)
    assert [c.info.path for c in result.checkpoints if c.info.resume_candidate] == ["checkpoint-30"]


@pytest.mark.parametrize("payload", [b"\x00" * 50, b"\xff\xfe garbage", b"{" * 500, b'{"log_history": 5}',
                                     b'{"log_history": [1, "x", {"step": "a"}, {"step": 3, "loss": "NaN"}]}',
                                     b'{"global_step": 10, "log_history": [{"step": 5, "loss": NaN}]}'])
def test_never_raises_on_garbage(tmp_path: Path, payload: bytes) -> None:
    (tmp_path / "trainer_state.json").write_bytes(payload)
    (tmp_path / "checkpoint-7").mkdir()
    (tmp_path / "checkpoint-7" / "trainer_state.json").write_bytes(payload[: len(payload) // 2])
    (tmp_path / "checkpoint-7" / "model.safetensors").write_bytes(payload)
    (tmp_path / "runs" / "x").mkdir(parents=True)
    (tmp_path / "runs" / "x" / "events.out.tfevents.1.host").write_bytes(payload)
    result = read_hf_trainer_dir(tmp_path, tmp_path, tb_reader=simple_tb_reader if payload[:1] == b"{" else None)
    assert result.findings
    if b"NaN}" in payload:
        assert math.isnan(by_tag(result)["train/loss"].values[0])


def test_tb_reader_failure_becomes_finding() -> None:
    def broken(path: Path, rel_path: str):
        raise RuntimeError("boom")

    result = read_hf_trainer_dir(RESUMED, RESUMED, tb_reader=broken)
    assert {f.code for f in result.findings} == {"file.unreadable"}
    assert len(result.attempts) == 2


# ---------------------------------------------------------------- hygiene

def test_reader_writes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "hf_resumed"
    shutil.copytree(RESUMED, run)
    before = sorted((p.relative_to(run).as_posix(), p.stat().st_mtime_ns) for p in run.rglob("*"))
    read_hf_trainer_dir(run, run, tb_reader=simple_tb_reader)
    assert sorted((p.relative_to(run).as_posix(), p.stat().st_mtime_ns) for p in run.rglob("*")) == before


def test_fixtures_hold_no_machine_paths() -> None:
    for run in (CLEAN, RESUMED, RESUMED_WANDB):
        for path in run.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not any(p in data for p in (b"/work/", b"/root/", b"/home/")), path


def test_reader_imports_no_heavy_modules() -> None:
    code = ("from pathlib import Path; from pimm_inspect.sources.hf.reader import read_hf_trainer_dir; "
            f"read_hf_trainer_dir(Path({str(CLEAN)!r}), Path({str(CLEAN)!r}), tb_reader=None)")
    heavy = {"torch", "transformers", "wandb", "pandas", "textual", "rich", "safetensors"}
    assert not modules_after(code) & heavy
