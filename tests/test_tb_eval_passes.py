"""Evaluation passes are no training restart: Lightning's ``validate()``/``test()`` reopen the version's writer, so
one process leaves several event files that start again at step 0 with evaluation tags only (claims round five, from
a public k-fold notebook: eleven files of one pid were eleven attempts, ten "restarted from scratch").

Fixture: fixtures/runs/lightning_eval_passes (the real pytorch-lightning, fixtures/gen_lightning.py).
"""

from __future__ import annotations

from pathlib import Path

import pimm_inspect

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "lightning_eval_passes" / "lightning_logs" / "version_0"


def test_one_process_with_evaluation_passes_is_one_attempt():
    run = pimm_inspect.load_run(RUN)
    assert len(list(RUN.glob("events.out.tfevents.*"))) == 5
    # Before: one attempt per file after the first evaluation pass, each "restart", and steps.replayed findings.
    assert [(a.index, a.origin) for a in run.attempts] == [(1, "fresh")]
    assert len(run.attempts[0].sources) == 5
    assert not [f for f in run.findings if f.code == "steps.replayed"]


def test_a_second_fit_in_the_same_process_is_still_a_restart(tmp_path):
    # The training file (train_loss) copied under a later writer number of the same pid: training went back to 0.
    import shutil

    copy = tmp_path / "version_0"
    shutil.copytree(RUN, copy)
    fit = next(p for p in sorted(copy.glob("events.out.tfevents.*")) if p.name.endswith(".2"))
    shutil.copyfile(fit, copy / "events.out.tfevents.1760102099.fixture-host.5353.5")
    run = pimm_inspect.load_run(copy)
    assert [a.origin for a in run.attempts] == ["fresh", "restart"]
