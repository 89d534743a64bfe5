"""A traceback in a W&B folder's captured console that does not start its line (claims round eight, corpus7).

A public W&B 0.24 folder (an HF/TRL fine-tune killed by CUDA OOM under torchrun) was said to hold "no traceback was
captured" while its files/output.log held two: one run on from a tqdm bar drawn with ``\\r`` and no newline, one with
every line prefixed ``[rank0]: `` by torch's distributed excepthook. Fixtures: fixtures/gen_wandb_console.py (the real
wandb, tqdm and torch.distributed writers, offline).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pimm_inspect

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "wandb_console"


@pytest.mark.parametrize("shape, first_line", [
    ("tqdm_bar", "0/61683 [00:00<?, ?it/s]Traceback (most recent call last):"),
    ("rank_prefix", "[rank0]: Traceback (most recent call last):"),
])
def test_a_traceback_after_a_bar_or_a_rank_prefix_is_found_and_named(shape, first_line):
    run = pimm_inspect.load_run(SHAPES / shape)
    (output,) = sorted((SHAPES / shape).rglob("files/output.log"))
    rel = output.relative_to(SHAPES / shape).as_posix()
    text = output.read_text().splitlines()
    assert first_line in text[0]  # the writer's shape: the traceback starts line 1, not at its first column
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    assert crashed.paths == (rel,)
    assert crashed.explanation == f"The traceback starts at {rel}:1. The run did not recover."
    assert "no traceback" not in crashed.explanation
    (event,) = [e for e in run.events if e.kind == "traceback"]
    # The exception line, read past the prefix torch puts before every line.
    assert event.message == "RuntimeError: CUDA out of memory. Tried to allocate 1.25 GiB (simulated)"
    assert event.attempt == 1


def test_a_traceback_only_in_the_wandb_log_after_a_rank_prefix_is_a_console_line(tmp_path):
    import shutil

    copy = tmp_path / "rank_prefix"
    shutil.copytree(SHAPES / "rank_prefix", copy)
    (output,) = copy.rglob("files/output.log")
    output.unlink()  # the console only in the transaction log's output records
    run = pimm_inspect.load_run(copy)
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    (log,) = crashed.paths
    assert log.endswith("/run-rankoom1.wandb")
    assert crashed.explanation.startswith(f"The traceback starts at console line 1 of the output captured in {log}.")
    (event,) = [e for e in run.events if e.kind == "traceback"]
    assert event.message == "RuntimeError: CUDA out of memory. Tried to allocate 1.25 GiB (simulated)"
