"""Big pimm train.logs generated at test/bench time, in the exact Pointcept/pimm line grammar.

The lines are those of spec 3.4/3.5 (E1+ prefix, one ``Train:`` line per step with the
IterationTimer block, model terms and ``Lr``), plus the startup, per-epoch result,
evaluation and save records of a real run, so the reader takes its normal paths.
Values vary from line to line (a decaying loss with noise, a jittering batch time), so
no converter gets an unrealistically repetitive column.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

T0 = 1784039405  # 2026-07-14 14:30:05 UTC
_FILES = {"train": "train.py", "log": "logging.py", "sem": "semantic_segmentation.py", "ckpt": "checkpoint.py",
          "ckpts": "checkpoints.py"}


class _Clock:
    """Prefix text of records at increasing times, formatting each second once."""

    def __init__(self, start: float) -> None:
        self.now = start
        self._sec = -1
        self._text = ""

    def prefix(self, level: str, file: str, line: int, step_s: float = 0.4) -> str:
        self.now += step_s
        sec = int(self.now)
        if sec != self._sec:
            self._sec, self._text = sec, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
        return f"[{self._text},{int((self.now - sec) * 1000):03d} {level} {file} line {line}] "


def startup_lines(clock: _Clock, save_path: str, resume_step: int | None = None, config: bool = False) -> list[str]:
    """The trainer's constructor records (spec 3.4 A/B/C), with the ``Config:`` dump when ``config``."""
    p = lambda line, f="train", lv="INFO": clock.prefix(lv, _FILES[f], line, 0.05)  # noqa: E731
    out = [p(251) + "=> Loading config ...", p(253) + f"Save path: {save_path}"]
    if config:
        out += [p(254) + "Config:"] + _config_lines(save_path)
    out += [p(433) + "Num params: 46,212,805", p(435) + "Parallel strategy: ddp, device: cuda:0",
           p(469) + f"Tensorboard writer logging dir: {save_path}",
           p(899, "ckpts") + "=> Loading checkpoint & weight ..."]
    if not resume_step:
        out.append(p(914, "ckpts") + "No weight found at: None")
    else:
        out.append(p(914, "ckpts") + f"Loading weight at: {save_path}/model/last")
        out.append(p(1112, "ckpts") + f"Resuming from iteration {resume_step}")
    out.append(p(295) + ">>>>>>>>>>>>>>>> Start Training >>>>>>>>>>>>>>>>")
    return out


_CLASSES = ("ceiling", "floor", "wall", "beam", "column", "window", "door", "table", "chair", "sofa",
            "bookcase", "board", "clutter")


def _config_lines(save_path: str) -> list[str]:
    """A ``Config:`` dump's continuation lines (no prefix), about as long as a real one."""
    out = [f"save_path = '{save_path}'", "seed = 38873367", "num_worker = 16", "batch_size = 12",
           "mix_prob = 0.8", "enable_amp = True", "model = dict(", "    type='DefaultSegmentorV2',"]
    out += [f"    backbone_{i}=dict(type='PT-v3m1', in_channels=6, depths=(2, 2, 2, 6, 2), drop_path={i / 10})"
            for i in range(60)]
    out += [")", "optimizer = dict(type='AdamW', lr=0.002, weight_decay=0.05)", "evaluate = True"]
    return out


def _val_block(clock: "_Clock", epoch: int, batches: int) -> list[str]:
    """A SemSegEvaluator block (spec 3.4 F): test batches, result, per-class table, best tracking."""
    p = lambda file, line, s=0.05: clock.prefix("INFO", _FILES[file], line, s)  # noqa: E731
    miou = 0.5 + (epoch % 400) / 1000
    out = [p("sem", 104) + ">>>>>>>>>>>>>>>> Start Evaluation >>>>>>>>>>>>>>>>"]
    out += [p("sem", 170, 0.3) + f"Test: [{i}/{batches}] Loss {0.9 - i / (batches * 3):.4f} "
            for i in range(1, batches + 1)]
    out += [p("sem", 205) + f"Val result: mIoU/mAcc/allAcc/mPrec/mRec/mF1 {miou:.4f}/0.7012/0.9123/0.6543/0.7012/0.6700.",
            p("sem", 210) + "Per-class metrics:",
            p("sem", 210) + "| Class ID | Class Name | IoU | Accuracy | Precision | Recall | F1 |",
            p("sem", 210) + "|----------|------------|--------|----------|-----------|--------|------|"]
    out += [p("sem", 214, 0.001) + f"| {i:8d} | {name:10s}{'*' if i == 12 else ''} | {miou - i / 100:.4f} | "
            f"{0.8 - i / 90:.4f} | {0.7 - i / 80:.4f} | {0.75 - i / 70:.4f} | {0.72 - i / 75:.4f} |"
            for i, name in enumerate(_CLASSES)]
    out += [p("sem", 226) + "<<<<<<<<<<<<<<<<< End Evaluation <<<<<<<<<<<<<<<<<"]
    if epoch % 3 != 2:
        out.append(p("log", 278) + f"Best validation mIoU updated to: {miou:.4f}")
    out.append(p("log", 283) + f"Currently Best mIoU: {miou:.4f}")
    return out


def _warning(clock: "_Clock", g: int) -> list[str]:
    """A multi-line WARNING record (a library warning whose source line continues it)."""
    return [clock.prefix("WARNING", "train.py", 388, 0.001) + "/usr/lib/python3.11/site-packages/torch/utils/"
            f"checkpoint.py:91: UserWarning: None of the inputs have requires_grad=True (step {g}).",
            "  warnings.warn("]


def write_big_log(path: Path, target_bytes: int, iters_per_epoch: int = 5000, epochs: int | None = None,
                  attempts: int = 1, append: bool = False, mixed: bool = False) -> dict:
    """Write a pimm log of about ``target_bytes`` (one Train: line per step); returns its facts.

    With ``attempts > 1`` the steps are split into that many attempts, each resuming
    from the last save of the one before (a requeued chain). With ``mixed`` the log also
    holds what a real run interleaves: the ``Config:`` dump, a Val block with its per-class
    table after every epoch, iteration saves, multi-line warnings, a few Train: lines with
    an extra term (a varying metric set) and a non-finite loss.
    """
    line_bytes = 213  # about one Train: line with this key set
    total_steps = max(1, target_bytes // line_bytes)
    if epochs is None:
        epochs = max(1, math.ceil(total_steps / iters_per_epoch))
    clock = _Clock(T0)
    save_path = "exp/panda/semseg/semseg-fft-2026-07-14_14-30-00"
    per_attempt = math.ceil(total_steps / attempts)
    written = 0
    steps_done = 0
    resume_at = None
    mode = "a" if append else "w"
    with path.open(mode, encoding="utf-8", newline="\n") as fh:
        for attempt in range(attempts):
            lines = startup_lines(clock, save_path, resume_at, config=mixed)
            first = (resume_at or 0) + 1
            last = min(total_steps, first - 1 + per_attempt) if attempt < attempts - 1 else total_steps
            last_save = first - 1
            for g in range(first, last + 1):
                epoch, it = (g - 1) // iters_per_epoch + 1, (g - 1) % iters_per_epoch + 1
                loss = 2.0 * math.exp(-g / 400000.0) + 0.05 * math.sin(g * 0.37)
                batch = 0.4 + 0.013 * ((g * 7919) % 97) / 97
                remain = (total_steps - g) * 0.4
                extra = f"grad_norm: {3.0 + (g % 11) / 7:.4f} " if mixed and g % 997 == 0 else ""
                loss_text = "nan" if mixed and g % 150_001 == 0 else f"{loss:.4f}"
                lines.append(
                    clock.prefix("INFO", "logging.py", 332)
                    + f"Train: [{epoch}/{epochs}][{it}/{iters_per_epoch}] "
                    f"Data {0.002 + (g % 13) / 1000:.3f} ({0.004 + (g % 7) / 1000:.3f}) "
                    f"Batch {batch:.3f} ({0.405 + (g % 5) / 1000:.3f}) "
                    f"Remain {int(remain // 3600):02d}:{int(remain // 60 % 60):02d}:{int(remain % 60):02d} "
                    f"loss: {loss_text} seg_loss: {loss * 0.8:.4f} aux_loss: {loss * 0.2:.4f} {extra}"
                    f"avg_pts: {48000 + (g * 31) % 997:.4f} Lr: {0.002 * min(1.0, g / 2000.0):.5f}")
                if mixed and g % 7919 == 0:
                    lines += _warning(clock, g)
                if mixed and g % 2000 == 0 and it != iters_per_epoch:
                    lines.append(clock.prefix("INFO", "checkpoint.py", 106, 0.001) + f"Saving checkpoint at global step {g}")
                    lines.append(clock.prefix("INFO", "checkpoints.py", 824, 0.001)
                                 + f"Saving checkpoint to: {save_path}/model/last (weights.pth + trainer/ DCP)")
                    last_save = g
                if it == iters_per_epoch:
                    lines.append(clock.prefix("INFO", "logging.py", 350, 0.001)
                                 + f"Train result: loss: {loss:.4f} seg_loss: {loss * 0.8:.4f} ")
                    if mixed:
                        lines += _val_block(clock, epoch, 40)
                    else:
                        lines.append(clock.prefix("INFO", "semantic_segmentation.py", 244, 0.5)
                                     + f"Val result: mIoU/mAcc/allAcc/mPrec/mRec/mF1 {0.5 + epoch / 1000:.4f}/"
                                       "0.7012/0.9123/0.6543/0.7012/0.6700.")
                    lines.append(clock.prefix("INFO", "checkpoint.py", 106, 0.001)
                                 + f"Saving checkpoint at global step {g}")
                    lines.append(clock.prefix("INFO", "checkpoints.py", 824, 0.001)
                                 + f"Saving checkpoint to: {save_path}/model/last (weights.pth + trainer/ DCP)")
                    last_save = g
                if len(lines) >= 20000:
                    text = "\n".join(lines) + "\n"
                    fh.write(text)
                    written += len(text)
                    lines = []
            if lines:
                text = "\n".join(lines) + "\n"
                fh.write(text)
                written += len(text)
            steps_done = last
            resume_at = last_save
    return {"steps": steps_done, "bytes": written, "epochs": epochs, "iters_per_epoch": iters_per_epoch}
