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


def startup_lines(clock: _Clock, save_path: str, resume_step: int | None = None) -> list[str]:
    """The trainer's constructor records (spec 3.4 A/B/C)."""
    p = lambda line, f="train", lv="INFO": clock.prefix(lv, _FILES[f], line, 0.05)  # noqa: E731
    out = [p(251) + "=> Loading config ...", p(253) + f"Save path: {save_path}",
           p(433) + "Num params: 46,212,805", p(435) + "Parallel strategy: ddp, device: cuda:0",
           p(469) + f"Tensorboard writer logging dir: {save_path}",
           p(899, "ckpts") + "=> Loading checkpoint & weight ..."]
    if not resume_step:
        out.append(p(914, "ckpts") + "No weight found at: None")
    else:
        out.append(p(914, "ckpts") + f"Loading weight at: {save_path}/model/last")
        out.append(p(1112, "ckpts") + f"Resuming from iteration {resume_step}")
    out.append(p(295) + ">>>>>>>>>>>>>>>> Start Training >>>>>>>>>>>>>>>>")
    return out


def write_big_log(path: Path, target_bytes: int, iters_per_epoch: int = 5000, epochs: int | None = None,
                  attempts: int = 1, append: bool = False) -> dict:
    """Write a pimm log of about ``target_bytes`` (one Train: line per step); returns its facts.

    With ``attempts > 1`` the steps are split into that many attempts, each resuming
    from the last save of the one before (a requeued chain).
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
            lines = startup_lines(clock, save_path, resume_at)
            first = (resume_at or 0) + 1
            last = min(total_steps, first - 1 + per_attempt) if attempt < attempts - 1 else total_steps
            last_save = first - 1
            for g in range(first, last + 1):
                epoch, it = (g - 1) // iters_per_epoch + 1, (g - 1) % iters_per_epoch + 1
                loss = 2.0 * math.exp(-g / 400000.0) + 0.05 * math.sin(g * 0.37)
                batch = 0.4 + 0.013 * ((g * 7919) % 97) / 97
                remain = (total_steps - g) * 0.4
                lines.append(
                    clock.prefix("INFO", "logging.py", 332)
                    + f"Train: [{epoch}/{epochs}][{it}/{iters_per_epoch}] "
                    f"Data {0.002 + (g % 13) / 1000:.3f} ({0.004 + (g % 7) / 1000:.3f}) "
                    f"Batch {batch:.3f} ({0.405 + (g % 5) / 1000:.3f}) "
                    f"Remain {int(remain // 3600):02d}:{int(remain // 60 % 60):02d}:{int(remain % 60):02d} "
                    f"loss: {loss:.4f} seg_loss: {loss * 0.8:.4f} aux_loss: {loss * 0.2:.4f} "
                    f"avg_pts: {48000 + (g * 31) % 997:.4f} Lr: {0.002 * min(1.0, g / 2000.0):.5f}")
                if it == iters_per_epoch:
                    lines.append(clock.prefix("INFO", "logging.py", 350, 0.001)
                                 + f"Train result: loss: {loss:.4f} seg_loss: {loss * 0.8:.4f} ")
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
