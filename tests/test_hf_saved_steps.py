"""Issue 19 on the corpus (odudler/dl2023): an HF checkpoint whose save finished keeps its step.

The Trainer writes ``trainer_state.json`` after the weights and optimizer (``Trainer._save_checkpoint``), so a
checkpoint-N that holds an intact one was saved, even when the weights were deleted or never copied since (a git
repository that ignores ``*.safetensors``). The attempt that wrote it saved that step, and lost only what came after.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pimm_inspect

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _copy_without_weights(tmp_path: Path, drop: tuple[str, ...]) -> Path:
    run = tmp_path / "hf_killed"
    shutil.copytree(RUNS / "hf_killed", run)
    for name in drop:
        (run / "checkpoint-8" / name).unlink()
    return run


def test_a_finished_save_whose_weights_were_deleted_keeps_its_step(tmp_path: Path) -> None:
    run = pimm_inspect.load_run(_copy_without_weights(tmp_path, ("model.safetensors", "optimizer.pt")))
    ((saved, lost),) = [(a.saved_steps, a.lost_steps) for a in run.attempts]
    assert (saved, lost) == ((8,), (9, 10))  # was ((), (2, 10)): the save at 8 counted for nothing
    (finding,) = [f for f in run.findings if f.message.startswith("checkpoint-8 is incomplete")]
    assert "missing model.safetensors, optimizer.pt" in finding.message
    assert "the save finished and these files were deleted or not copied since" in finding.message


def test_a_save_without_its_trainer_state_did_not_finish(tmp_path: Path) -> None:
    run = pimm_inspect.load_run(_copy_without_weights(tmp_path, ("trainer_state.json",)))
    ((saved, lost),) = [(a.saved_steps, a.lost_steps) for a in run.attempts]
    assert saved == () and lost == (2, 10)
    (finding,) = [f for f in run.findings if f.message.startswith("checkpoint-8 is incomplete")]
    assert "the save finished" not in finding.message
