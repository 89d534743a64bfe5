"""Claims round six: contradictions found by reading public runs nobody here wrote, each on a fixture from the real
writer (``fixtures/gen_realworld.py``)."""

from __future__ import annotations

from pathlib import Path

import pimm_inspect

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_two_launches_at_once_do_not_kill_each_other() -> None:
    """``rw_tb_two_at_once``: two processes (pids 2613, 2620) write one folder at the same time, steps 0-9 each. The
    first wrote its last record after the second began: the second did not end it (it was called ``killed``)."""
    run = pimm_inspect.load_run(RUNS / "rw_tb_two_at_once" / "runs" / "exp")
    first, second = run.attempts
    assert (first.ended, second.ended) == ("stopped", "stopped")
    assert first.end_detail == ("log stops without an end marker; it was still writing after attempt 2 started "
                                "(the two ran at once)")
    assert second.origin == "restart" and (second.first_step, second.last_step) == (0, 9)
    assert [f.code for f in run.findings if f.code == "steps.replayed"] == ["steps.replayed"]  # both wrote 0-9


def test_a_restart_after_the_first_ended_still_kills_it() -> None:
    """``rw_tb_restart``: the second process starts an hour after the first wrote its last record."""
    first, _second = pimm_inspect.load_run(RUNS / "rw_tb_restart" / "runs" / "baseline").attempts
    assert first.ended == "killed"
