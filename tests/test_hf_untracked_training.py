"""An HF output dir whose last training reported to no TensorBoard folder (claims round five, from a public run:
five TB folders to step 400, then a training to 2760 known only from its checkpoints' trainer_state.json, was shown
as five attempts, last step 400, the earlier ones "killed" with every step lost although each TB folder holds the
summary ``train()`` logs as it returns).

Fixture: fixtures/runs/hf_tb_then_none (the real HF Trainer, fixtures/gen_hf.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "hf_tb_then_none"


def test_a_training_without_a_tb_folder_is_an_attempt_from_its_checkpoint_state():
    run = pimm_inspect.load_run(RUN)
    # Before: one attempt, steps 2-8, last step 8 beside checkpoint-20.
    assert [(a.first_step, a.last_step, a.origin) for a in run.attempts] == [(2, 8, "fresh"), (5, 20, "restart")]
    assert run.attempts[1].sources == ("checkpoint-20/trainer_state.json",)
    listed = json.loads(CliRunner().invoke(cli, ["ls", "--json", str(RUN)]).stdout)["runs"][0]
    assert listed["attempts"] == 2 and listed["last_step"] == 20


def test_a_tb_folder_holding_the_end_of_train_summary_completed():
    run = pimm_inspect.load_run(RUN)
    # Attempt 1's TB folder holds train/train_runtime at step 8: it ran to its end (before: "killed"). train()
    # returning saves nothing, and training 1 saved no checkpoint and no final model: its steps were lost all the
    # same. Training 2's checkpoint-20 at its max_steps kept everything it trained.
    assert [(a.ended, a.lost_steps) for a in run.attempts] == [("completed", (2, 8)), ("completed", None)]
    assert run.status == "finished"
