"""Lightning checkpoints in a logger version folder: read (no torch, nothing called), Lightning's ``ckpt_path="last"``
pick marked, and ``show`` prints the exact ``ckpt_path=`` like the other writers' resume options (claims round five:
no Lightning checkpoint was read, so nothing was said).

Fixture: fixtures/runs/lightning_resumable (the real pytorch-lightning, fixtures/gen_lightning.py): version_0 trains
3 epochs with ``ModelCheckpoint(save_last=True)``, version_1 resumes from version_0's last.ckpt with ``ckpt_path=``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.cli.main import cli

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "lightning_resumable" / "lightning_logs"


def test_checkpoints_are_read_and_last_ckpt_is_the_pick():
    run = pimm_inspect.load_run(RUNS / "version_0")
    got = {ck.path: (ck.format, ck.global_step, ck.epoch, ck.complete, ck.resume_candidate) for ck in run.checkpoints}
    assert got == {
        "checkpoints/epoch=0-step=2.ckpt": ("lightning", 2, 0, True, False),
        "checkpoints/epoch=1-step=4.ckpt": ("lightning", 4, 1, True, False),
        "checkpoints/epoch=2-step=6.ckpt": ("lightning", 6, 2, True, False),
        "checkpoints/last.ckpt": ("lightning", 6, 2, True, True),
    }
    assert {ck.saved_dir for ck in run.checkpoints} == {"lightning_resumable/lightning_logs/version_0/checkpoints"}


def test_show_prints_the_exact_ckpt_path_and_what_it_is_relative_to():
    done = CliRunner().invoke(cli, ["show", "--json", str(RUNS / "version_1")])
    (doc,) = json.loads(done.stdout)["runs"]
    assert doc["resume"] == {
        "checkpoint": "checkpoints/last.ckpt", "step": 10, "tool": "lightning",
        "option": "ckpt_path=lightning_resumable/lightning_logs/version_1/checkpoints/last.ckpt",
        "path_base": "the training script's working directory (ModelCheckpoint dirpath recorded in "
                     "checkpoints/last.ckpt)", "newer_incomplete": []}
    text = CliRunner().invoke(cli, ["show", str(RUNS / "version_1")]).stdout
    assert "resume with: ckpt_path=lightning_resumable/lightning_logs/version_1/checkpoints/last.ckpt" in text


def test_no_lost_steps_from_a_step_counter_one_past_the_logged_axis():
    # Lightning logs 0-based (steps 0-5) and stores global_step 6 after 6 batches: version_0 lost nothing.
    run = pimm_inspect.load_run(RUNS / "version_0")
    assert [(a.first_step, a.last_step, a.lost_steps) for a in run.attempts] == [(0, 5, None)]


def test_without_a_last_ckpt_nothing_is_picked_and_nothing_printed(tmp_path):
    copy = tmp_path / "version_0"
    shutil.copytree(RUNS / "version_0", copy)
    os.remove(copy / "checkpoints" / "last.ckpt")
    run = pimm_inspect.load_run(copy)
    assert len(run.checkpoints) == 3 and not any(ck.resume_candidate for ck in run.checkpoints)
    assert run.resume is None
    assert "resume with" not in CliRunner().invoke(cli, ["show", str(copy)]).stdout


def test_a_cut_last_ckpt_is_not_picked_and_its_damage_is_named(tmp_path):
    # A hand-damaged last.ckpt: the zip cut short, so nothing of it is known (not complete), and the older files stay.
    copy = tmp_path / "version_0"
    shutil.copytree(RUNS / "version_0", copy)
    data = (copy / "checkpoints" / "last.ckpt").read_bytes()
    (copy / "checkpoints" / "last.ckpt").write_bytes(data[: len(data) // 3])
    run = pimm_inspect.load_run(copy)
    last = next(ck for ck in run.checkpoints if ck.path == "checkpoints/last.ckpt")
    assert not last.complete and not last.resume_candidate and run.resume is None
    assert any(f.paths == ("checkpoints/last.ckpt",) for f in run.findings)
