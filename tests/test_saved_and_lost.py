"""Issue 19: lost and saved steps follow from the checkpoints, on every writer.

A step kept by a complete checkpoint is never lost: no attempt's ``lost_steps`` holds a step it saved, and the
checkpoint a resume picks is inside no attempt's lost range unless a later attempt saved that step again (the
earlier attempt's copy was then redone). HF attempts get ``saved_steps`` from the checkpoint-N folders they wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pimm_inspect
from tests.hostile_support import run_cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FIXTURE_RUNS = sorted(str(p.relative_to(RUNS)) for p in pimm_inspect.discover(RUNS))


def test_a_killed_hf_run_lost_only_what_came_after_its_checkpoint() -> None:
    doc = json.loads(run_cli("show", "--json", str(RUNS / "hf_killed")).stdout)["runs"][0]
    (attempt,) = doc["attempts"]
    assert attempt["saved_steps"] == [8] and attempt["lost_steps"] == [9, 10]
    assert [c["path"] for c in doc["checkpoints"] if c["resume_candidate"]] == ["checkpoint-8"]


def test_hf_attempts_save_what_their_checkpoints_hold() -> None:
    run = pimm_inspect.load_run(RUNS / "hf_resumed")
    # checkpoint-10 by attempt 1; checkpoint-20 by attempt 2, which resumed from checkpoint-10 and overwrote it.
    assert [(a.saved_steps, a.lost_steps) for a in run.attempts] == [((10,), (11, 20)), ((20,), None)]


def test_a_save_after_the_next_restore_point_is_not_lost() -> None:
    """e1_legacy_cursor: attempt 1 saved g 60; attempt 2 restored it but rewound to the epoch start (g 50)."""
    run = pimm_inspect.load_run(RUNS / "e1_legacy_cursor")
    first = run.attempts[0]
    assert 60 in first.saved_steps and first.lost_steps == (61, 70)


def test_a_save_cut_short_is_no_save() -> None:
    """e2_incomplete_checkpoint: the log says g 75 was being saved, but model/last (g 75) never got its .complete;
    a resume picks last.prev (g 50), so 51-75 are lost."""
    run = pimm_inspect.load_run(RUNS / "e2_incomplete_checkpoint")
    (attempt,) = run.attempts
    assert attempt.saved_steps == (25, 50) and attempt.lost_steps == (51, 75)
    assert [(c.path, c.global_step) for c in run.checkpoints if c.resume_candidate] == [("model/last.prev", 50)]


@pytest.mark.parametrize("name", FIXTURE_RUNS)
def test_no_checkpointed_step_is_lost(name: str) -> None:
    run = pimm_inspect.load_run(RUNS / name)
    for att in run.attempts:
        if att.lost_steps is None:
            continue
        lo, hi = att.lost_steps
        assert not [s for s in att.saved_steps if lo <= s <= hi], (att.index, att.saved_steps, att.lost_steps)
    for picked in (c for c in run.checkpoints if c.resume_candidate and c.complete and c.global_step is not None):
        step = picked.global_step
        for i, att in enumerate(run.attempts):
            redone = any(step in later.saved_steps for later in run.attempts[i + 1:])
            assert redone or att.lost_steps is None or not att.lost_steps[0] <= step <= att.lost_steps[1], (
                picked.path, step, att.index, att.lost_steps)
