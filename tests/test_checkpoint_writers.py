"""Which attempt wrote each checkpoint, from the files; a complete checkpoint keeps its writer's step.

``e2_requeued_twice`` (pimm simulator): attempts 2 and 3 both trained step 80 and both logged a new best there
(``Best validation mIoU updated to: 0.6695``, then ``0.6719``). ``model/model_best.pth.prev`` at step 80 stores best
value 0.67189: attempt 3's, so attempt 2's best was rotated away and its lost 51-90 stands, while attempt 3 saved 80.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import pimm_inspect
from pimm_inspect.analysis.summary import best_metric
from pimm_inspect.load.checkpoint_writers import writer_of
from pimm_inspect.model import Attempt, CheckpointInfo, make_series

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_the_best_checkpoint_at_80_is_the_attempt_whose_value_it_holds() -> None:
    run = pimm_inspect.load_run(RUNS / "e2_requeued_twice")
    writers = {c.path: (c.global_step, c.saved_by_attempt) for c in run.checkpoints}
    assert writers["model/model_best.pth.prev"] == (80, 3)
    assert [(a.index, a.saved_steps, a.lost_steps) for a in run.attempts] == [
        (1, (50,), (51, 75)), (2, (), (51, 90)), (3, (80, 100), None)]


def _ck(step: int, best: float | None) -> CheckpointInfo:
    return CheckpointInfo("model/model_best.pth", "legacy", "best", True, global_step=step, best_metric_value=best)


def test_writer_rules_in_order() -> None:
    attempts = [Attempt(1, first_step=1, last_step=90), Attempt(2, first_step=51, last_step=100, resume_step=50,
                                                                saved_steps=(100,))]
    series = [make_series("val/mIoU", [80], [0.6695], None, "ev.1", 1),
              make_series("val/mIoU", [80], np.float32([0.67189]), None, "ev.2", 2)]
    assert writer_of(_ck(80, 0.6718896), attempts, series) == 2  # rule 1: the value it holds
    assert writer_of(_ck(80, 0.6695), attempts, series) == 1
    assert writer_of(_ck(100, None), attempts, series) == 2  # rule 2: the last that logged a save there
    assert writer_of(_ck(20, None), attempts, series) == 1  # rule 3: the only attempt that trained 20
    assert writer_of(_ck(80, None), attempts, series) is None  # both trained 80, nothing says which


def test_hf_best_names_its_metric() -> None:
    """Issue 22: the Trainer's best_metric is of ``metric_for_best_model`` (training_args.bin of hf_resumed)."""
    run = pimm_inspect.load_run(RUNS / "hf_resumed")
    assert run.hf is not None and run.hf.best_metric_name == "eval_loss"
    assert best_metric(run) == "eval_loss 2.431"  # was "2.431"
    assert {c.best_metric_name for c in run.checkpoints if c.best_metric_value is not None} == {"eval_loss"}


def test_metric_for_best_model_as_the_trainer_compares_it() -> None:
    from pimm_inspect.sources.hf.reader import best_metric_name

    assert best_metric_name({}, {"metric_for_best_model": "accuracy"}) == "eval_accuracy"
    assert best_metric_name({"metric_for_best_model": "eval_f1"}, {"metric_for_best_model": "loss"}) == "eval_f1"
    assert best_metric_name({}, {"metric_for_best_model": None}) is None


def test_each_series_span_is_taken_once_per_run_not_once_per_checkpoint(monkeypatch) -> None:
    """A run of 6 checkpoints and 40 candidate series asked each series its first and last step per checkpoint (a
    min and a max over its steps each time: a tenth of a cold row of a 1,000-copy tree); the spans come once now,
    with the same writers."""
    from pimm_inspect import arrays
    from pimm_inspect.load import checkpoint_writers as cw

    attempts = [Attempt(1, first_step=1, last_step=90), Attempt(2, first_step=51, last_step=100, resume_step=50)]
    series = [make_series(f"val/m{i}", [10, 40, 80], [0.1, 0.2, 0.3 + i], None, f"ev.{i}", 1 + i % 2)
              for i in range(40)]
    checkpoints = [_ck(80, 0.3 + i) for i in range(6)]
    calls = []
    real = arrays.value_range
    monkeypatch.setattr(arrays, "value_range", lambda *a, **k: calls.append(a) or real(*a, **k))
    out, _attempts = cw.checkpoint_writers(checkpoints, attempts, series)
    assert [c.saved_by_attempt for c in out] == [1, 2, 1, 2, 1, 2]  # rule 1: whose value each holds
    assert calls == []
