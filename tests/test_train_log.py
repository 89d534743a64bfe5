"""Tests for the pimm train.log reader, with logs written by stdlib logging in pimm's format."""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimm_inspect.sources.train_log.reader import read_train_log

E1_FORMAT = "[%(asctime)s %(levelname)s %(filename)s line %(lineno)d] %(message)s"
E0_FORMAT = "[%(asctime)s %(levelname)s %(filename)s line %(lineno)d %(process)d] %(message)s"
T0 = 1784039405.0  # 2026-07-14 14:30:05 UTC
_counter = 0


class PimmLog:
    """Writes records exactly like pimm's file handler, with a fake clock and PID."""

    def __init__(self, path: Path, e0: bool = False, start: float = T0, pid: int = 48213) -> None:
        global _counter
        _counter += 1
        self.clock, self.pid = start, pid
        self.logger = logging.getLogger(f"pimm_test_{_counter}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        handler = logging.FileHandler(path, mode="a", encoding="utf-8")
        formatter = logging.Formatter(E0_FORMAT if e0 else E1_FORMAT)
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
        handler.addFilter(self._stamp)
        self.logger.addHandler(handler)
        self.handler = handler

    def _stamp(self, record: logging.LogRecord) -> bool:
        self.clock += 1.25
        record.created, record.msecs, record.process = self.clock, (self.clock % 1) * 1000, self.pid
        return True

    def info(self, msg: str) -> None:
        self.logger.info(msg)

    def warning(self, msg: str) -> None:
        self.logger.warning(msg)

    def error(self, msg: str) -> None:
        self.logger.error(msg)

    def close(self) -> None:
        self.handler.close()
        self.logger.removeHandler(self.handler)


def train_line(epoch: int, max_epoch: int, it: int, ipe: int, loss: float | str, lr: float = 0.0002) -> str:
    """InformationWriter + IterationTimer line (spec 3.4 D)."""
    loss_text = loss if isinstance(loss, str) else f"{loss:.4f}"
    return (f"Train: [{epoch}/{max_epoch}][{it}/{ipe}] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 00:01:00 "
            f"loss: {loss_text} avg_pts: 48211.5000 Lr: {lr:.5f}")


def startup(log: PimmLog, save_path: str, writer: str = "tb") -> None:
    """Trainer constructor lines (spec 3.4 A)."""
    log.info("=> Loading config ...")
    log.info(f"Save path: {save_path}")
    log.info("Config:\nweight = None\nresume = False\nepoch = 2\n[not a record] Train: [9/9][9/9] x")
    log.info("=> Building model ...")
    log.info("Num params: 46,212,805")
    log.info("Parallel strategy: ddp, device: cuda:0")
    log.info("=> Building writer ...")
    if writer == "tb":
        log.info(f"Tensorboard writer logging dir: {save_path}")
    else:
        log.info("Weights & Biases writer initialized with project: pimm")
    log.info("=> Loading checkpoint & weight ...")


def write_fresh_run(path: Path) -> None:
    """A complete E2 run: 2 epochs x 4 iters, log_frequency=2, eval per epoch, final test."""
    log = PimmLog(path)
    startup(log, "exp/panda/semseg/run-a")
    log.info("No weight found at: None")
    log.info(">>>>>>>>>>>>>>>> Start Training >>>>>>>>>>>>>>>>")
    for epoch in (1, 2):
        for it in (2, 4):
            g = (epoch - 1) * 4 + it
            log.info(train_line(epoch, 2, it, 4, 1.0 / g, lr=0.0001 * g))
        log.info(f"Train result: loss: {0.5 / epoch:.4f} avg_pts: 48000.0000 ")
        log.info(">>>>>>>>>>>>>>>> Start Evaluation >>>>>>>>>>>>>>>>")
        log.info("Test: [1/2] Loss 0.5123 ")
        log.info(f"Val result: mIoU/mAcc/allAcc/mPrec/mRec/mF1 0.{epoch}123/0.7012/0.9123/0.6543/0.7012/0.6700.")
        log.info("Per-class metrics:")
        log.info("| Class ID | Class Name | IoU | Accuracy | Precision | Recall | F1 |")
        log.info("|----------|------------|--------|----------|-----------|--------|------|")
        log.info(f"|        0 | shower     | 0.8123 | 0.9001 | 0.8812 | 0.9001 | 0.890{epoch} |")
        log.info("|        1 | wall      * | nan | 0.5000 | 0.4000 | 0.3000 | 0.2000 |")
        log.info("<<<<<<<<<<<<<<<<< End Evaluation <<<<<<<<<<<<<<<<<")
        log.info(f"Best validation mIoU updated to: 0.{epoch}123")
        log.info(f"Currently Best mIoU: 0.{epoch}123")
        log.info(f"Saving checkpoint at global step {epoch * 4}")
        log.info("Saving checkpoint to: exp/panda/semseg/run-a/model/last (weights.pth + trainer/ DCP)")
    log.info("Saving final checkpoint")
    log.info(">>>>>>>>>>>>>>>> Start Final Evaluation >>>>>>>>>>>>>>>>")
    log.info("=> Testing on model_best ...")
    log.info("Test result: mIoU/mAcc/allAcc/mPrec/mRec/mF1 0.6000/0.7000/0.9000/0.6500/0.7000/0.6600.")
    log.info("|        0 | shower     | 0.8000 | 0.9000 | 0.8800 | 0.9000 | 0.8900 |")
    log.info("Wrote eval artifacts: exp/panda/semseg/run-a/eval/20260714T143500Z")
    log.close()


def series(result, tag: str, attempt: int | None = None):
    found = [s for s in result.series if s.tag == tag and (attempt is None or s.attempt == attempt)]
    assert len(found) == 1, (tag, attempt, [(s.tag, s.attempt) for s in result.series])
    return found[0]


def test_fresh_e2_run(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_fresh_run(path)
    r = read_train_log(path, "train.log")
    assert r.era_hint == "E1+" and r.pids == () and r.findings == ()
    assert r.end_offset == path.stat().st_size
    assert r.line_count == path.read_bytes().count(b"\n")
    loss = series(r, "train_batch/loss", 1)
    assert loss.steps.tolist() == [2, 4, 6, 8]
    assert loss.values.tolist() == [0.5, 0.25, float(f"{1/6:.4f}"), 0.125]
    assert loss.steps.dtype == np.int64 and loss.values.dtype == np.float64
    assert series(r, "params/lr").values.tolist() == [0.0002, 0.0004, 0.0006, 0.0008]
    assert series(r, "time/data_s").values.tolist() == [0.004] * 4
    assert series(r, "time/batch_s").values.tolist() == [0.412] * 4
    assert series(r, "train_batch/avg_pts").values.tolist() == [48211.5] * 4
    train = series(r, "train/loss")
    assert train.steps.tolist() == [4, 8] and train.values.tolist() == [0.5, 0.25]
    miou = series(r, "val/mIoU")
    assert miou.steps.tolist() == [4, 8] and miou.values.tolist() == [0.1123, 0.2123]
    assert series(r, "val/mPrecision").values.tolist() == [0.6543, 0.6543]
    assert series(r, "val/mF1").values.tolist() == [0.67, 0.67]
    assert not [s for s in r.series if s.tag.startswith("test/")]
    # wall times: the log's own (here UTC) timestamps, read as UTC seconds
    assert loss.wall_times_s[0] == pytest.approx(T0 + 1.25 * 12, abs=1e-3)

    (seg,) = r.segments
    assert (seg.index, seg.start_line, seg.end_line, seg.has_header) == (1, 1, r.line_count, True)
    assert seg.started_at == "2026-07-14 14:30:06,250"
    assert seg.save_path == "exp/panda/semseg/run-a"
    assert (seg.first_step, seg.last_step, seg.train_lines) == (2, 8, 4)
    assert (seg.max_epoch, seg.iters_per_epoch) == (2, 4)
    assert (seg.origin, seg.is_resume, seg.resume_step, seg.weight) == ("fresh", False, None, None)
    assert (seg.ended, seg.end_detail) == ("completed", None)
    assert seg.saved_steps == (4, 8)
    assert (seg.writer, seg.parallel, seg.num_params, seg.warnings) == ("tensorboard", "ddp", 46212805, 0)

    assert r.best == (("mIoU", 0.1123, 4), ("mIoU", 0.2123, 8))
    val, val2, test = r.val_tables
    assert (val.step, val.final, val.attempt) == (4, False, 1)
    assert val.rows[0].name == "shower" and val.rows[0].f1 == 0.8901 and not val.rows[0].ignored
    assert val.rows[1].name == "wall" and val.rows[1].ignored and math.isnan(val.rows[1].iou)
    assert val.rows[1].class_id == 1 and val.rows[1].rec == 0.3
    assert dict(val.metrics)["mIoU"] == 0.1123
    assert test.final and test.step == 8 and [row.iou for row in test.rows] == [0.8]
    kinds = [e.kind for e in r.events]
    assert kinds[0] == "start" and kinds.count("save") == 5 and kinds.count("best") == 4
    assert kinds.count("eval") == 2 and kinds.count("final") == 4 and kinds.count("load") == 1
    final = [e for e in r.events if e.kind == "final"]
    assert final[-1].message == "Wrote eval artifacts: exp/panda/semseg/run-a/eval/20260714T143500Z"
    assert final[-1].step == 8 and final[-1].attempt == 1 and final[-1].source == "train.log"


def write_requeued_run(path: Path) -> None:
    """Attempt 1 saves at 50 and crashes at 75; attempt 2 resumes from 50 (spec section 9)."""
    log = PimmLog(path)
    startup(log, "exp/panda/semseg/run-b", writer="wandb")
    log.info(">>>>>>>>>>>>>>>> Start Training >>>>>>>>>>>>>>>>")
    for g in range(1, 76):
        log.info(train_line((g - 1) // 25 + 1, 4, (g - 1) % 25 + 1, 25, 2.0 - g / 100))
        if g == 50:
            log.info("Saving checkpoint at global step 50")
            log.info("Saving checkpoint to: exp/panda/semseg/run-b/model/last (weights.pth + trainer/ DCP)")
    log.error("Traceback (most recent call last):\n  File \"pimm/engines/train.py\", line 200, in train\n"
              "    self.run_step()\nRuntimeError: CUDA out of memory\n")
    log.close()
    log = PimmLog(path, start=T0 + 3600)
    startup(log, "exp/panda/semseg/run-b", writer="wandb")
    log.info("Loading weight at: exp/panda/semseg/run-b/model/last")
    log.warning("Checkpoint has no W&B rewind state; falling back to configured W&B resume behavior. "
                "Optimizer steps replayed after rollback may appear more than once.")
    log.warning("Skipping dataloader-cursor restore (world_size 8->4); restarting the resumed epoch from its "
                "first batch.")
    log.info("Resuming train from structured state: epoch=2, iter=0, global_step=50")
    log.info("Resuming from iteration 50")
    log.info(">>>>>>>>>>>>>>>> Start Training >>>>>>>>>>>>>>>>")
    for g in range(51, 101):
        log.info(train_line((g - 1) // 25 + 1, 4, (g - 1) % 25 + 1, 25, 2.0 - g / 100))
    log.info("Saving final checkpoint")
    log.info("Saving checkpoint to: exp/panda/semseg/run-b/model/last (weights.pth + trainer/ DCP)")
    log.close()


def test_requeued_run_with_crash_and_rollback(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_requeued_run(path)
    r = read_train_log(path, "run-b/train.log")
    first, second = r.segments
    assert (first.index, first.first_step, first.last_step, first.train_lines) == (1, 1, 75, 75)
    assert (first.ended, first.end_detail) == ("crashed", "RuntimeError: CUDA out of memory")
    assert first.saved_steps == (50,) and first.origin == "fresh" and first.writer == "wandb"
    assert second.start_line == first.end_line + 1 and second.start_offset == first.end_offset
    assert (second.index, second.first_step, second.last_step) == (2, 51, 100)
    assert (second.is_resume, second.origin, second.resume_step) == (True, "resume", 50)
    assert second.resumed_from == "exp/panda/semseg/run-b/model/last" and second.weight is None
    assert (second.ended, second.saved_steps, second.warnings, second.world_size) == ("completed", (100,), 2, 4)
    assert second.started_at == "2026-07-14 15:30:06,250"
    loss1, loss2 = series(r, "train_batch/loss", 1), series(r, "train_batch/loss", 2)
    assert loss1.steps.tolist() == list(range(1, 76)) and loss2.steps.tolist() == list(range(51, 101))
    assert loss2.values[0] == pytest.approx(1.49) and loss1.source == "run-b/train.log"
    (tb,) = [e for e in r.events if e.kind == "traceback"]
    assert tb.message.startswith("Traceback (most recent call last):\n  File")
    assert tb.message.endswith("RuntimeError: CUDA out of memory") and tb.step == 75 and tb.level == "ERROR"
    warnings = [e for e in r.events if e.kind == "warning"]
    assert [w.message.split(";")[0] for w in warnings] == [
        "Checkpoint has no W&B rewind state", "Skipping dataloader-cursor restore (world_size 8->4)"]
    assert all(w.attempt == 2 and w.step is None for w in warnings)
    resumes = [e.message for e in r.events if e.kind == "resume"]
    assert resumes == ["Resuming train from structured state: epoch=2, iter=0, global_step=50",
                       "Resuming from iteration 50"]
    assert [e.step for e in r.events if e.kind == "save"] == [50, 50, 100, 100]


def test_refresh_from_last_segment_equals_full_read(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_requeued_run(path)
    full = read_train_log(path, "train.log")
    second = full.segments[1]
    head_bytes = path.read_bytes()[:second.start_offset]
    head_path = tmp_path / "head.log"
    head_path.write_bytes(head_bytes + b"[2026-07-14 15:30:06,2")  # the new attempt is being written
    head = read_train_log(head_path, "train.log")
    assert head.end_offset == second.start_offset and [f.code for f in head.findings] == ["file.truncated"]
    last = head.segments[-1]
    again = read_train_log(path, "train.log", start_offset=last.start_offset, first_attempt=last.index,
                           first_line_no=last.start_line)
    assert again.segments == full.segments
    assert again.events == full.events and again.end_offset == full.end_offset
    assert len(again.series) == len(full.series)
    for a, b in zip(again.series, full.series):
        assert (a.tag, a.attempt) == (b.tag, b.attempt)
        assert np.array_equal(a.steps, b.steps) and np.array_equal(a.values, b.values)
        assert np.array_equal(a.wall_times_s, b.wall_times_s)
    # refreshing from the second attempt's start gives that attempt alone, numbered 2
    tail = read_train_log(path, "train.log", start_offset=second.start_offset, first_attempt=2,
                          first_line_no=second.start_line)
    assert tail.segments == (second,)


def test_e0_two_pids_and_pid_fallback(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    log = PimmLog(path, e0=True, pid=48213)
    log.info("=> Loading config ...")
    log.info("Save path: exp/panda/pretrain/run-a")
    for it in range(1, 11):
        log.info(train_line(1, 100, it, 10, 5.0))
    log.info("Saving checkpoint to: exp/panda/pretrain/run-a/model/model_last.pth")
    log.close()
    log = PimmLog(path, e0=True, pid=51190, start=T0 + 1000)
    log.info("=> Loading config ...")
    log.info("Loading weight at: exp/panda/pretrain/run-a/model/model_last.pth")
    log.info("Resuming train at eval epoch: 1")
    log.info("Resuming train at iteration: 10")
    for it in range(1, 4):
        log.info(train_line(2, 100, it, 10, 4.0))
    log.close()
    log = PimmLog(path, e0=True, pid=60001, start=T0 + 2000)  # no "=> Loading config" line
    log.info(train_line(2, 100, 1, 10, 3.0))
    log.close()
    r = read_train_log(path, "train.log")
    assert r.era_hint == "E0" and r.pids == (48213, 51190, 60001)
    a, b, c = r.segments
    assert (a.first_step, a.last_step, a.saved_steps, a.origin) == (1, 10, (10,), "fresh")
    assert (b.resume_step, b.origin, b.first_step, b.last_step) == (10, "resume", 11, 13)
    assert b.resumed_from == "exp/panda/pretrain/run-a/model/model_last.pth"
    assert (c.has_header, c.origin, c.first_step, c.start_line) == (False, "unknown", 11, b.end_line + 1)
    assert series(r, "train_batch/loss", 3).values.tolist() == [3.0]


def test_e0_epoch_only_resume_and_legacy_resume(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    log = PimmLog(path, e0=True)
    log.info("=> Loading config ...")
    log.info("Resuming train at eval epoch: 3")
    log.info(train_line(4, 10, 1, 20, 1.0))
    log.close()
    assert read_train_log(path, "train.log").segments[0].resume_step == 60
    legacy = tmp_path / "legacy.log"
    log = PimmLog(legacy)
    log.info("=> Loading config ...")
    log.info("Resuming train at saved epoch: 5, saved iteration: 300")
    log.warning("Legacy checkpoint is mid-epoch and has no dataloader state; resuming from the beginning of "
                "the saved epoch and replaying already-completed batches.")
    log.info("Resuming train at epoch index: 4, iteration: 0")
    log.info(train_line(5, 50, 1, 625, 1.0))
    log.close()
    seg = read_train_log(legacy, "train.log").segments[0]
    assert (seg.resume_step, seg.first_step, seg.warnings, seg.is_resume) == (2500, 2501, 1, True)


def test_non_finite_mae_and_instance_lines(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    log = PimmLog(path)
    log.info("=> Loading config ...")
    log.info("Loading weight at: hf://org/sonata/model.pth")
    for it, loss in zip(range(1, 7), ["1.0000", "nan", "0.5000", "inf", "-inf", "0.2500"]):
        log.info(train_line(1, 1, it, 6, loss))
    log.info(">>>>>>>>>>>>>>>> Start MAE Validation >>>>>>>>>>>>>>>>")
    log.info("Val: [1/2] Loss: 0.5 Coord: 0.3 Feat: 0.2 MaskRatio: 0.6")
    log.info("Val Result: Loss: 0.5000 Coord: 0.3000 Feat: 0.2000 MaskRatio: 0.6000 (2/2 valid batches)")
    log.info("<<<<<<<<<<<<<<<<< End MAE Validation <<<<<<<<<<<<<<<<<")
    log.info("[track] Detection P=0.9000 R=0.8000 F1=0.8471 IoU=0.7000")
    log.info("[track] Counts GT=10 Pred=9 TP=8 FP=1 FN=2 (FP/GT=0.1 FN/GT=0.2)")
    log.info("Val result: mIoU/mAcc/allAcc 0.5000/0.6000/0.7000.")
    log.close()
    r = read_train_log(path, "train.log")
    (finding,) = [f for f in r.findings if f.code == "metrics.non-finite"]
    assert finding.steps == (2, 5) and "train_batch/loss" in finding.message and finding.paths == ("train.log",)
    assert finding.severity.label == "warning"
    loss = series(r, "train_batch/loss").values
    assert math.isnan(loss[1]) and loss[3] == math.inf and loss[4] == -math.inf
    assert series(r, "val/loss").values.tolist() == [0.5] and series(r, "val/loss").steps.tolist() == [6]
    assert series(r, "val/mask_ratio").values.tolist() == [0.6]
    assert series(r, "val/track/ins_det_f1").values.tolist() == [0.8471]
    assert series(r, "val/track/ins_det_iou").steps.tolist() == [6]
    assert series(r, "val/allAcc").values.tolist() == [0.7]
    seg = r.segments[0]
    assert (seg.origin, seg.weight, seg.ended) == ("warm-start", "hf://org/sonata/model.pth", None)


def test_half_written_line_corrupt_bytes_and_text_before_first_header(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"leftover text\n")
    log = PimmLog(path)
    log.info("=> Loading config ...")
    log.info(train_line(1, 1, 1, 2, 1.0))
    log.close()
    good_size = path.stat().st_size
    bad_line = b"[2026-07-14 14:31:00,000 INFO logging.py line 332] caf\xe9 \xff\xfe\n"
    with path.open("ab") as fh:
        fh.write(bad_line)
        fh.write(b"[2026-07-14 14:31:01,000 INFO logging.py line 332] Train: [1/1][2/2] Data 0.0")
    r = read_train_log(path, "train.log")
    codes = [f.code for f in r.findings]
    assert codes == ["file.corrupt", "file.truncated"]
    assert r.findings[0].severity.label == "info" and f"offset {good_size + bad_line.index(0xE9)})" in r.findings[0].message
    assert r.end_offset == path.stat().st_size - len(b"[2026-07-14 14:31:01,000 INFO logging.py line 332] "
                                                     b"Train: [1/1][2/2] Data 0.0")
    headless, seg = r.segments
    assert (headless.index, headless.origin, headless.end_line, headless.train_lines) == (1, "unknown", 1, 0)
    assert (seg.index, seg.start_line, seg.last_step) == (2, 2, 1)
    assert seg.ended_at == "2026-07-14 14:31:00,000"


def test_empty_missing_and_fifo(tmp_path: Path) -> None:
    empty = tmp_path / "train.log"
    empty.write_bytes(b"")
    r = read_train_log(empty, "train.log")
    assert [f.code for f in r.findings] == ["file.empty"] and r.segments == () and r.end_offset == 0
    assert r.era_hint is None
    r = read_train_log(tmp_path / "missing.log", "missing.log")
    assert [f.code for f in r.findings] == ["file.unreadable"]
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    start = time.monotonic()
    r = read_train_log(fifo, "fifo.log")
    assert [f.code for f in r.findings] == ["file.unreadable"] and time.monotonic() - start < 60  # hang guard


def test_shrunk_file_and_hostile_long_line(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_fresh_run(path)
    r = read_train_log(path, "train.log", start_offset=path.stat().st_size + 10)
    assert [f.code for f in r.findings] == ["file.truncated"] and r.end_offset == 0
    hostile = tmp_path / "hostile.log"
    prefix = b"[2026-07-14 14:30:05,101 WARNING train.py line 1] "
    hostile.write_bytes(prefix + b"Train: [1/2][3/4] " + b"] Saving x: 1 Train: [ " * 400_000 + b"\n"
                        + prefix + b"Saving final checkpoint\n")
    start = time.monotonic()
    r = read_train_log(hostile, "hostile.log")
    assert time.monotonic() - start < 120  # a hang guard (quadratic work on a long line), not a speed target
    assert r.line_count == 2 and len(r.events[0].message) < 300_000 and "omitted" in r.events[0].message


def _valid_log(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("valid") / "train.log"
    write_requeued_run(path)
    with path.open("a") as fh:
        fh.write("|        0 | shower     | 0.8 | 0.9 | 0.8 | 0.9 | 0.8 |\n")
    return path.read_bytes()[:20000] + path.read_bytes()[-6000:]


@pytest.fixture(scope="module")
def valid_bytes(tmp_path_factory) -> bytes:
    return _valid_log(tmp_path_factory)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_logs_never_raise(tmp_path: Path, valid_bytes: bytes, data) -> None:
    cut = data.draw(st.integers(0, len(valid_bytes)))
    blob = bytearray(valid_bytes[:cut])
    for _ in range(data.draw(st.integers(0, 8))):
        if not blob:
            break
        pos = data.draw(st.integers(0, len(blob) - 1))
        blob[pos:pos + 1] = data.draw(st.binary(min_size=0, max_size=6))
    path = tmp_path / "mutated.log"
    path.write_bytes(bytes(blob))
    r = read_train_log(path, "mutated.log")
    assert 0 <= r.end_offset <= len(blob)
    offset = data.draw(st.integers(0, len(blob)))
    read_train_log(path, "mutated.log", start_offset=offset)
