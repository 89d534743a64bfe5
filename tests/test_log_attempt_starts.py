"""The Log tab's attempt starts are the model's attempts, whatever line began each (a Pointcept-style train.log
has no ``=> Loading config``: its attempts start with ``=> Launching training`` and a new pid)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.tui.widgets.log_pane import attempt_starts

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_pointcept_log_has_two_attempts_and_the_log_tab_shows_both():
    run = pimm_inspect.load_run(RUNS / "rw_pointcept_log")
    assert [(a.first_step, a.last_step, a.restore_step) for a in run.attempts] == [(1, 75, None), (51, 100, 50)]
    assert [a.origin for a in run.attempts] == ["fresh", "rollback"]  # the first process trained from step 1
    lines = (RUNS / "rw_pointcept_log" / "train.log").read_text().splitlines()
    starts = attempt_starts(run, "train.log")
    assert [n for n, _line in starts] == [a.index for a in run.attempts]
    assert "=> Launching training" in lines[starts[1][1] - 1] and "start iter 51" in lines[starts[1][1] - 1]
    assert not any("=> Loading config" in line for line in lines)


@pytest.mark.parametrize("name", ["e2_rollback", "e2_requeued_twice", "rw_pimm_tester_config", "e1_legacy_cursor"])
def test_log_tab_attempt_starts_equal_the_model_attempts(name):
    run = pimm_inspect.load_run(RUNS / name)
    assert [n for n, _line in attempt_starts(run, "train.log")] == [a.index for a in run.attempts]
