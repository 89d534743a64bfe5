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


SHARED = Path(__file__).resolve().parents[1] / "fixtures" / "lightning_shapes" / "shared_dirpath" / "lightning_logs"


def test_a_checkpoint_another_training_saved_into_the_folder_is_stale():
    """fixtures/lightning_shapes/shared_dirpath (the real pytorch-lightning): version_1 (8 steps per epoch) saved into
    version_0's checkpoints/ (2 steps per epoch) through ModelCheckpoint(dirpath=...). The public CAMELS-CH
    version_102 held epoch=6-step=59577.ckpt beside a metrics.csv of 250 steps per epoch up to step 1553: nothing
    was said."""
    run = pimm_inspect.load_run(SHARED / "version_0")
    stale = [f for f in run.findings if f.code == "artifacts.stale"]
    assert [f.paths for f in stale] == [("checkpoints/wide-epoch=0-step=8.ckpt", "metrics.csv"),
                                        ("checkpoints/wide-epoch=1-step=16.ckpt", "metrics.csv")]
    assert "epoch 1, step 16: the training metrics.csv records took 2 steps per epoch (epoch 1 ends by step 4)" in \
        stale[1].message
    assert "8 steps per epoch" in stale[1].explanation
    assert not [f for f in pimm_inspect.load_run(SHARED / "version_1").findings if f.code == "artifacts.stale"]


def test_a_checkpoint_of_two_optimizers_stepped_by_hand_is_its_own_trainings():
    """version_2 steps two optimizers per batch: global_step (4, 8, 12) is twice the step its CSVLogger writes; the
    fit loop's batches stepped (2, 4, 6), which the checkpoint records, is the loggers' axis (the public genrisk GAN
    folders: global_step 400 beside a metrics.csv ending at step 79)."""
    run = pimm_inspect.load_run(SHARED / "version_2")
    assert [(ck.global_step, ck.logged_step, ck.epoch) for ck in run.checkpoints] == [(4, 2, 0), (8, 4, 1), (12, 6, 2)]
    assert not [f for f in run.findings if f.code == "artifacts.stale"]
