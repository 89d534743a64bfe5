"""Issue 19 round four: ``wandb.init(resume="allow")`` on a run's first folder resumed nothing.

W&B's run record carries the setting (``resume``) beside what happened (``resumed``, set when the server found the
run, and ``starting_step``). ``fixtures/runs/rw_launch_cwd_wandb`` was written by wandb offline with
``resume="allow"`` in both of its folders of run ``d3f6h9kq``: the first started the run, the second resumed it.
"""

from __future__ import annotations

from pathlib import Path

import pimm_inspect
from pimm_inspect.sources.wandb.reader import read_wandb_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "rw_launch_cwd_wandb"


def test_the_first_folder_of_a_resume_allow_run_is_fresh() -> None:
    run = pimm_inspect.load_run(RUN)
    assert [(a.index, a.origin, a.sources) for a in run.attempts] == [
        (1, "fresh", ("wandb/offline-run-20261201_081401-d3f6h9kq",)),  # was "resume"
        (2, "rollback", ("wandb/offline-run-20261201_081404-d3f6h9kq",))]


def test_the_reader_keeps_the_setting_apart_from_what_happened() -> None:
    first, second = sorted((RUN / "wandb").iterdir())
    for folder in (first, second):
        result = read_wandb_run(folder, f"wandb/{folder.name}")
        assert result.resume_requested and not result.resumed, folder.name  # offline: the server never answered
