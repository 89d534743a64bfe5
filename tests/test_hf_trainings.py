"""Issue 19: two trainings in one HF output dir are two trainings, not one fresh attempt.

``fixtures/runs/hf_two_trainings`` was written by two real ``Trainer`` runs into one output dir (max_steps 8 then 40,
batch 4 then 8): the second is an attempt with origin ``restart`` that saved its own checkpoints, and
``hf.new-training`` names the checkpoints of each training.
"""

from __future__ import annotations

from pathlib import Path

import pimm_inspect
from pimm_inspect.sources.hf.state import StateDoc
from pimm_inspect.sources.hf.trainings import attempt_trainings, checkpoint_owners, trainings

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_a_second_training_in_one_output_dir_is_a_restart() -> None:
    run = pimm_inspect.load_run(RUNS / "hf_two_trainings")
    got = [(a.origin, a.ended, a.first_step, a.last_step, a.saved_steps, a.lost_steps) for a in run.attempts]
    assert got == [("fresh", "completed", 2, 8, (8,), None), ("restart", "stopped", 5, 20, (10, 20), None)]
    (finding,) = [f for f in run.findings if f.code == "hf.new-training"]
    assert finding.paths == ("checkpoint-8", "checkpoint-10", "checkpoint-20")
    assert "checkpoint-8 (max_steps 8, train_batch_size 4); then checkpoint-10, checkpoint-20 (max_steps 40, " \
           "train_batch_size 8)" in finding.message
    # Another training's steps are no copies of these: no replay is claimed.
    assert "steps.replayed" not in {f.code for f in run.findings}


def test_one_training_resumed_is_still_one_training() -> None:
    for name in ("hf_clean", "hf_killed", "hf_resumed"):
        run = pimm_inspect.load_run(RUNS / name)
        assert "hf.new-training" not in {f.code for f in run.findings}, name
        assert "restart" not in {a.origin for a in run.attempts}, name


def _state(path: str, **fields: int) -> StateDoc:
    return StateDoc(path, dict(fields), [])


def test_trainings_are_ordered_and_the_top_level_state_ends_the_last() -> None:
    old = _state("checkpoint-225/trainer_state.json", max_steps=225, train_batch_size=32, global_step=225)
    new = [_state(f"checkpoint-{n}/trainer_state.json", max_steps=22486, train_batch_size=64, global_step=n)
           for n in (500, 1000)]
    top = _state("trainer_state.json", max_steps=22486, train_batch_size=64, global_step=1200)
    found = trainings([(225, 10.0, old), (500, 20.0, new[0]), (1000, 30.0, new[1])], top)
    assert [(t.key, t.checkpoint_steps) for t in found] == [((225, 32), (225,)), ((22486, 64), (500, 1000))]
    assert found[-1].newest is top
    assert len(trainings([(500, 20.0, new[0]), (1000, 30.0, new[1])], top)) == 1


def test_attempts_map_to_trainings_only_when_the_starts_add_up() -> None:
    assert attempt_trainings([None, 10, None], 2) == [0, 0, 1]  # fresh, resume, restart
    assert attempt_trainings([None, None, None], 2) == [None, None, None]  # three starts, two trainings: unknown
    assert attempt_trainings([None, None], 1) == [None, None]


def test_a_checkpoint_belongs_to_the_last_attempt_of_its_training_that_reached_it() -> None:
    # (restored step, last step, training) per attempt; (step, training) per checkpoint
    spans = [(None, 20, None), (10, 20, None)]
    assert checkpoint_owners(spans, [(10, None), (20, None)]) == {10: 0, 20: 1}
    spans = [(None, 8, 0), (None, 20, 1)]
    assert checkpoint_owners(spans, [(8, 0), (10, 1), (20, 1)]) == {8: 0, 10: 1, 20: 1}
    assert checkpoint_owners([(None, 5, None)], [(8, None)]) == {8: 0}  # saved after its last logged step
