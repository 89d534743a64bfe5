"""Where a crash's traceback is, said so a user can find it: a W&B folder without files/output.log has its console
only in the binary ``.wandb`` log, whose "line 2" is a console line, not a line of the file (claims round five,
seen on public W&B 0.15 folders: "The traceback starts at run-0elbgqo6.wandb:2").

Fixture: fixtures/runs/wandb_crashed (the real wandb client), its output.log removed from a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pimm_inspect

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "wandb_crashed"


def test_a_traceback_only_in_the_wandb_log_is_named_as_a_console_line(tmp_path):
    copy = tmp_path / "wandb_crashed"
    shutil.copytree(RUN, copy)
    (output,) = copy.rglob("files/output.log")
    output.unlink()
    run = pimm_inspect.load_run(copy)
    (crashed,) = [f for f in run.findings if f.code == "run.crashed"]
    (log,) = [p for p in crashed.paths]
    assert log.endswith(".wandb")
    assert crashed.explanation.startswith(f"The traceback starts at console line 2 of the output captured in {log}.")
