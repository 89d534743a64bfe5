"""Layouts of public runs nobody here wrote (issue 11): discovery, attempts, ranges and alarms.

The fixtures come from fixtures/gen_realworld.py (real writers); each test names the shape it stands for.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import pimm_inspect
from pimm_inspect.load import load_run
from pimm_inspect.load.discover import discover

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _rel(paths, base: Path) -> list[str]:
    return [p.relative_to(base).as_posix() for p in paths]


def _run(rel: str):
    return pimm_inspect.load_run(RUNS / rel)  # read and analysed


def _codes(run) -> set[str]:
    return {f.code for f in run.findings}


# -- discovery -------------------------------------------------------------------------------------


def test_a_run_folder_with_run_subfolders_is_searched_further():
    base = RUNS / "rw_tbx_add_scalars"
    assert _rel(discover(base), base) == ["runs/exp1", "runs/exp1/loss/train", "runs/exp1/loss/val"]
    base = RUNS / "rw_keras_layout"
    assert _rel(discover(base), base) == [
        "hparam_tuning/run-0", "hparam_tuning/run-0/train", "hparam_tuning/run-0/validation",
        "tuner/trial_0/execution0/train", "tuner/trial_0/execution0/validation"]
    base = RUNS / "rw_torch_hparams"
    assert _rel(discover(base), base) == ["lr_0.01", "lr_0.01/hp"]


def test_keras_tensor_scalars_are_read_in_each_subfolder_run():
    train = _run("rw_keras_layout/hparam_tuning/run-0/train")
    assert train.tags() == ["epoch_accuracy", "epoch_loss"]
    (loss,) = train.series_for("epoch_loss")
    assert loss.steps.tolist() == [0, 1, 2] and loss.values[0] == pytest.approx(2.2, rel=1e-6)


def test_any_file_whose_name_contains_tfevents_is_an_event_file():
    base = RUNS / "rw_renamed_tfevents"
    assert _rel(discover(base), base) == ["copied_run"]
    run = _run("rw_renamed_tfevents/copied_run")
    (loss,) = run.series_for("loss")
    assert loss.steps.tolist() == list(range(10)) and loss.source == "run1.tfevents.bak"


def test_wandb_folders_one_level_deeper_are_found():
    base = RUNS / "rw_wandb_nested"
    found = _rel(discover(base), base)
    assert len(found) == 2 and all(p.startswith("proj/wandb/wandb/") for p in found)
    assert {p.rsplit("-", 1)[-1] for p in found} == {"nest0001", "nest0002"}


def test_lightning_hparams_yaml_is_the_config():
    run = _run("rw_lightning/lightning_logs/version_0")
    doc = run.config("lightning_hparams")
    assert doc is not None and doc.path == "hparams.yaml" and dict(doc.data) == {"hidden": 4, "lr": 0.05}


def test_hparams_yaml_python_tags_are_never_built_and_aliases_are_bounded(tmp_path):
    from pimm_inspect.sources.config.hparams_yaml import read_hparams_yaml

    path = tmp_path / "hparams.yaml"
    path.write_text("loss_fn: !!python/name:os.system ''\nlr: 0.1\n")
    doc = read_hparams_yaml(path, "hparams.yaml").value
    assert doc.data == {"loss_fn": "<!!python/name:os.system >", "lr": 0.1}
    # Lightning writes an alias when one object is two hyperparameters: read, each use counted.
    path.write_text("a: &x [1, 2]\nb: [*x, *x, *x]\n")
    assert read_hparams_yaml(path, "hparams.yaml").value.data == {"a": [1, 2], "b": [[1, 2]] * 3}
    # A billion laughs (10**6 nodes once expanded) is not expanded: shown as text.
    levels = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    path.write_text("\n".join(levels) + "\n")
    got = read_hparams_yaml(path, "hparams.yaml")
    doc, findings = got.value, got.findings
    assert doc.data is None and doc.text.startswith("a0: &a0") and [f.code for f in findings] == ["file.unsupported"]


def test_pimm_wandb_folders_under_the_launch_directory_are_found_by_run_id():
    run = _run("rw_launch_cwd_wandb/exp/panda/semseg/semseg-drift")
    launch = (RUNS / "rw_launch_cwd_wandb" / "wandb").absolute().as_posix()
    assert len(run.wandb.local_dirs) == 2 and all(d.startswith(launch + "/") for d in run.wandb.local_dirs)
    where = next(f for f in run.findings if f.code == "wandb.outside-run")
    assert launch in where.message and "d3f6h9kq" in where.message
    # The four warnings the same story gives with the folders inside the run (e2_config_drift):
    assert {"provenance.config-drift", "resume.rollback", "steps.replayed", "wandb.run-split"} <= _codes(run)
    # and the launch directory is still searched for the run beside its wandb/ folder
    base = RUNS / "rw_launch_cwd_wandb"
    assert _rel(discover(base), base)[-1] == "exp/panda/semseg/semseg-drift"


def test_a_link_out_of_the_root_is_not_followed_and_system_folders_are_never_entered(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(RUNS / "rw_renamed_tfevents", root)
    outside = tmp_path / "elsewhere"
    shutil.copytree(RUNS / "rw_tb_restart", outside)
    (root / "to_proc").symlink_to("/proc")
    (root / "to_usr").symlink_to("/usr")
    (root / "to_outside").symlink_to(outside)
    (root / "inside").symlink_to(root / "copied_run")
    skipped: list[tuple[Path, str]] = []
    started = time.monotonic()
    found = discover(root, on_error=lambda p, why: skipped.append((p.name, why)))
    assert time.monotonic() - started < 120  # a hang guard (a link loop followed forever), not a speed target
    assert _rel(found, root) == ["copied_run"]  # the inside link leads to the same folder (seen once)
    reasons = dict(skipped)
    assert "system folders are never searched" in reasons["to_proc"]
    assert "outside the searched folder" in reasons["to_usr"] and "--follow-links" in reasons["to_outside"]
    followed = discover(root, follow_links=True)
    assert "to_outside/runs/baseline" in _rel(followed, root) and not any("to_proc" in str(p) for p in followed)


def test_the_depth_limit_says_what_it_skipped(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    shutil.copytree(RUNS / "rw_renamed_tfevents" / "copied_run", deep / "run")
    skipped: list[str] = []
    assert discover(tmp_path, on_error=lambda p, why: skipped.append(why), max_depth=2) == []
    assert len(skipped) == 1 and "deeper than --max-depth 2" in skipped[0] and "c" in skipped[0]
    assert discover(tmp_path, max_depth=4) == [deep / "run"]


# -- attempts --------------------------------------------------------------------------------------


def test_the_testers_config_line_is_no_new_attempt():
    run = _run("rw_pimm_tester_config")
    (only,) = run.attempts
    assert (only.first_step, only.last_step, only.ended) == (1, 20, "completed") and run.status == "finished"
    assert any(e.kind == "final" and "Test result" in e.message and e.attempt == 1 for e in run.events)


def test_an_e0_resume_that_skips_an_epoch_is_a_gap_after_the_restore_point():
    run = _run("rw_e0_epoch_skip")
    a1, a2 = run.attempts
    assert (a1.first_step, a1.last_step) == (1, 25)
    assert (a2.first_step, a2.last_step, a2.restore_step) == (31, 50, 20)  # not 3-50: train/* is on epochs
    gap = next(f for f in run.findings if f.code == "steps.gap")
    assert gap.steps == (21, 30) and "E0 resume" in gap.explanation


def test_a_rerun_from_scratch_is_a_restart_not_a_resume_from_step_minus_one():
    run = _run("rw_tb_restart/runs/baseline")
    a1, a2 = run.attempts
    assert (a2.origin, a2.restore_step, a1.lost_steps, a2.lost_steps) == ("restart", None, None, None)
    assert "resume.rollback" not in _codes(run)
    (replayed,) = [f for f in run.findings if f.code == "steps.replayed"]
    assert "restarted from scratch" in replayed.message and "-1" not in replayed.message + replayed.explanation
    assert "overwrote nothing" in replayed.explanation and "pimm" not in replayed.explanation.replace("pimm-inspect", "")


def test_one_process_writing_two_event_files_is_one_attempt():
    run = _run("rw_hf_post_eval/logs")
    (only,) = run.attempts
    assert len(only.sources) == 2 and all(".262129." in s for s in only.sources)
    assert not _codes(run) & {"resume.rollback", "steps.replayed"}


# -- ranges and alarms -----------------------------------------------------------------------------


def test_the_replayed_range_starts_at_the_restore_point_plus_one():
    """e1_legacy_cursor: W&B mode, log_frequency 5, `Resuming from iteration 50`, first Train line 55."""
    run = _run("e1_legacy_cursor")
    replayed = next(f for f in run.findings if f.code == "steps.replayed")
    assert replayed.steps == (51, 55)
    assert "continued from step 50" in replayed.explanation and "step 55 has two written copies" in replayed.explanation


def test_a_pseudo_metric_repeated_inside_one_file_is_no_replay():
    run = _run("rw_lightning/lightning_logs/version_1")
    assert not _codes(run)
    (epoch,) = run.series_for("epoch")
    assert epoch.steps.tolist().count(3) == 2  # both points are kept


def test_a_real_metric_repeated_inside_one_file_is_classified_not_a_replay(tmp_path):
    # TensorBoard's own event writer (a dependency, so no torch is needed), with the records a
    # SummaryWriter.add_scalar call writes: one simple_value per event.
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for step, value in [(s, 1.0 / (s + 1)) for s in range(5)] + [(4, 9.0)]:
        summary = Summary(value=[Summary.Value(tag="loss", simple_value=value)])
        writer.add_event(Event(wall_time=1_700_000_000.0 + step, step=step, summary=summary))
    writer.close()
    run = pimm_inspect.load_run(tmp_path)
    assert "steps.replayed" not in _codes(run)
    (rep,) = [f for f in run.findings if f.code == "steps.repeated"]
    assert rep.severity.label == "info" and rep.steps == (4, 4) and "one writer session" in rep.explanation


def test_replay_advice_fits_the_case():
    restart = next(f for f in _run("rw_tb_restart/runs/baseline").findings if f.code == "steps.replayed")
    assert "pimm passes" not in restart.explanation and "on resume" not in restart.explanation
    assert "W&B: not used by this run." in restart.explanation
    pimm = next(f for f in _run("e2_rollback").findings if f.code == "steps.replayed")
    assert "pimm passes no purge_step" in pimm.explanation and "move the older file's steps 51-75 aside" in pimm.explanation
    wandb_only = next(f for f in _run("e1_legacy_cursor").findings if f.code == "steps.replayed")
    assert "older file" not in wandb_only.explanation and "TensorBoard:" not in wandb_only.explanation


def test_no_lost_steps_without_checkpoint_evidence():
    for rel in ("rw_tb_restart/runs/baseline", "wandb_resumed_offline"):
        run = _run(rel)
        assert all(a.lost_steps is None for a in run.attempts), rel
    rolled = _run("e2_rollback")
    assert rolled.attempts[0].lost_steps == (51, 75)  # pimm with checkpoints: still reported


def test_a_tail_cut_mid_write_long_ago_is_not_running(tmp_path):
    run_dir = tmp_path / "e3a_running"
    shutil.copytree(RUNS / "e3a_running", run_dir, symlinks=True, copy_function=shutil.copyfile)
    fresh = load_run(run_dir)
    assert fresh.status == "running"  # just written: a live writer
    days_ago = time.time() - 3 * 86400
    for path in run_dir.rglob("*"):
        os.utime(path, (days_ago, days_ago), follow_symlinks=False)
    dead = load_run(run_dir)
    assert dead.status == "stopped" and dead.attempts[-1].ended == "stopped"
    assert load_run(run_dir, now=days_ago + 60).status == "running"  # the same files, seen then


def test_cli_max_depth_and_follow_links(tmp_path):
    import json

    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    deep = tmp_path / "a" / "b"
    shutil.copytree(RUNS / "rw_renamed_tfevents" / "copied_run", deep / "run")
    outside = tmp_path / "outside"
    shutil.copytree(RUNS / "rw_tb_restart", outside)
    root = tmp_path / "a"
    (root / "link").symlink_to(outside)
    runner = CliRunner()
    shallow = runner.invoke(cli, ["ls", str(root), "--max-depth", "1", "--json"])
    assert shallow.exit_code == 2 and "deeper than --max-depth 1 not searched" in shallow.stderr
    assert "outside the searched folder" in shallow.stderr
    default = runner.invoke(cli, ["ls", str(root), "--json"])
    assert [r["path"] for r in json.loads(default.stdout)["runs"]] == ["b/run"]
    followed = runner.invoke(cli, ["check", str(root), "--follow-links", "--json", "--fail-on", "never"])
    assert followed.exit_code == 0 and "link/runs/baseline" in followed.stdout


def test_hparams_yaml_with_a_nul_character_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    """PyYAML refuses control characters when the loader is built; that is a corrupt file, named."""
    from pimm_inspect.sources.config.hparams_yaml import read_hparams_yaml

    path = tmp_path / "hparams.yaml"
    path.write_bytes(b"lr: 0.1\x00\nbatch_size: 8\n")
    got = read_hparams_yaml(path, "hparams.yaml")
    assert [f.code for f in got.findings] == ["file.corrupt"] and got.findings[0].paths == ("hparams.yaml",)
    assert got.value is not None and got.value.data is None and "batch_size" in (got.value.text or "")
