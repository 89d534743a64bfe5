"""The scenario table: every fixture run gives exactly the expected finding codes (mirrors fixtures/README.md)."""

from pathlib import Path

import pytest

import pimm_inspect

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

EXPECTED = {
    "e0_legacy": {"provenance.no-git"},
    "e1_legacy_cursor": {"resume.inexact", "resume.rollback", "steps.replayed", "wandb.no-cursor"},
    "e2_clean": set(),
    "e2_crashed": {"run.crashed"},
    "e2_dangling_model_link": {"checkpoint.incomplete", "provenance.no-git"},
    "e2_exact_resume": set(),
    "e2_incomplete_checkpoint": {"checkpoint.incomplete"},
    "e2_rollback": {"resume.rollback", "steps.replayed"},
    "e2_requeue_failed": {"slurm.attempts-mismatch"},
    "e2_requeued_twice": {"resume.rollback", "steps.replayed"},
    "e2_secret_in_config": {"provenance.git-dirty", "provenance.secret"},
    "e2_wandb": set(),
    "e2_tb_gap": {"steps.gap"},
    "e2_cursor_mismatch": {"wandb.cursor-mismatch"},
    "e2_nan_loss": {"metrics.non-finite"},
    "e2_stale_reuse": {"artifacts.stale"},
    "e2_unsafe_checkpoint": {"checkpoint.unsafe"},
    "e2_config_drift": {"provenance.config-drift", "resume.rollback", "steps.replayed", "wandb.run-split"},
    "e3a_running": {"file.truncated"},
    "e3a_hung_rank": {"run.ranks-diverged"},
    "e3a_resubmitted": {"resume.rollback", "steps.replayed"},
    "hf_clean": set(),
    "hf_killed": {"provenance.secret"},
    "hf_resumed": {"resume.rollback", "steps.replayed"},
    "hf_resumed_wandb": {"resume.rollback", "steps.replayed", "wandb.run-split"},
    "hf_two_trainings": {"hf.new-training"},
    "hf_same_seed_trainings": {"hf.new-training"},  # three trainings of one seed, three attempts
    "hf_tb_then_none": set(),  # two attempts: the second known from checkpoint-20's state (no TB folder)
    "tb_plain/runs/baseline": set(),
    "tb_plain/runs/lr-0.1": set(),
    "wandb_backwards_step": {"wandb.step-dropped"},
    "wandb_clean": set(),
    "wandb_crashed": {"run.crashed"},
    "wandb_exit_code": {"run.crashed"},  # the exit record is the only evidence, named as such
    "wandb_offline_entity": set(),
    "wandb_online": {"provenance.secret"},  # the fake key W&B recorded in the launch args
    "wandb_online_killed": set(),
    "wandb_rejected": set(),
    "wandb_repeated_step": {"wandb.few-rows"},
    "wandb_resumed_offline": {"resume.rollback", "steps.replayed", "wandb.run-split"},
    # Layouts of public runs nobody here wrote (fixtures/gen_realworld.py)
    "rw_e0_epoch_skip": {"provenance.no-git", "resume.rollback", "steps.gap"},
    "rw_hf_post_eval/logs": set(),
    "rw_keras_layout/hparam_tuning/run-0": set(),
    "rw_keras_layout/hparam_tuning/run-0/train": set(),
    "rw_keras_layout/hparam_tuning/run-0/validation": set(),
    "rw_keras_layout/tuner/trial_0/execution0/train": set(),
    "rw_keras_layout/tuner/trial_0/execution0/validation": set(),
    "rw_launch_cwd_wandb": {"resume.rollback", "steps.replayed", "wandb.run-split"},
    "rw_launch_cwd_wandb/exp/panda/semseg/semseg-drift": {"provenance.config-drift", "resume.rollback",
                                                         "steps.replayed", "wandb.outside-run", "wandb.run-split"},
    "lightning_tensor_hparams/lightning_logs/version_0": set(),  # fixtures/gen_lightning.py: no false secret
    "lightning_resumable/lightning_logs/version_0": set(),  # checkpoints read, ckpt_path= printed
    "lightning_resumable/lightning_logs/version_1": set(),
    "lightning_csv/lightning_logs/version_0": set(),  # CSVLogger alone: metrics.csv read as scalars
    "lightning_csv/lightning_logs/version_1": set(),
    "lightning_csv/both_loggers/version_0": set(),  # the event file is read, metrics.csv beside it is not
    "lightning_eval_passes/lightning_logs/version_0": set(),  # evaluation passes: one attempt, no replay
    "rw_lightning/lightning_logs/version_0": set(),
    "rw_lightning/lightning_logs/version_1": set(),
    "rw_pimm_tester_config": set(),
    "rw_notebook_restart/output": {"steps.replayed"},
    "rw_pointcept_log": {"provenance.no-git", "resume.rollback", "steps.replayed"},
    "rw_renamed_tfevents/copied_run": set(),
    "rw_tb_restart/runs/baseline": {"steps.replayed"},
    "rw_tb_two_at_once/runs/exp": {"steps.replayed"},  # two launches at once: neither killed the other
    "rw_tbx_add_scalars/runs/exp1": set(),
    "rw_tbx_add_scalars/runs/exp1/loss/train": set(),
    "rw_tbx_add_scalars/runs/exp1/loss/val": set(),
    "rw_torch_hparams/lr_0.01": set(),
    "rw_torch_hparams/lr_0.01/hp": set(),
}
NESTED_WANDB = "rw_wandb_nested/proj/wandb/wandb/"
"""W&B names its folders by the time they were made: the two nested runs are matched by prefix."""


@pytest.fixture(scope="module")
def loaded():
    return {d.relative_to(RUNS).as_posix(): pimm_inspect.load_run(d) for d in pimm_inspect.discover(RUNS)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_gives_exactly_the_expected_codes(loaded, name):
    codes = {f.code for f in loaded[name].findings}
    assert codes == EXPECTED[name]


def test_every_discovered_run_is_in_the_table(loaded):
    step_metric = {n for n in loaded if n.startswith("wandb_step_metric/")}
    assert len(step_metric) == 2
    nested = {n for n in loaded if n.startswith(NESTED_WANDB)}
    assert len(nested) == 2 and all(not loaded[n].findings for n in nested)
    missing = set(loaded) - set(EXPECTED) - step_metric - nested
    assert not missing, f"add these fixture runs to EXPECTED and fixtures/README.md: {sorted(missing)}"


def test_rollback_story_in_detail(loaded):
    run = loaded["e2_rollback"]
    assert run.status == "finished" and run.era == "E2"
    (a1, a2) = run.attempts
    assert (a1.first_step, a1.last_step, a1.ended, a1.lost_steps, a1.saved_steps) == (1, 75, "killed", (51, 75), (50,))
    assert (a2.first_step, a2.last_step, a2.origin, a2.resume_step, a2.ended) == (51, 100, "rollback", 50, "completed")
    replayed = next(f for f in run.findings if f.code == "steps.replayed")
    assert replayed.steps == (51, 75)
    assert "newest copy" in replayed.explanation and "zig-zag" in replayed.explanation
    rollback = next(f for f in run.findings if f.code == "resume.rollback")
    assert rollback.steps == (51, 75) and "rolled back 25 steps" in rollback.message


def test_slurm_log_is_reconciled_with_the_attempts(loaded):
    rollback = loaded["e2_rollback"].attempts[0]
    assert rollback.ended == "killed" and "slurm-41877302.out" in rollback.sources
    assert rollback.end_detail.startswith("Slurm signalled submitit attempt 1/2") and "requeued" in rollback.end_detail
    failed = loaded["e2_requeue_failed"]
    (only,) = failed.attempts
    assert (only.first_step, only.last_step, only.ended, only.lost_steps) == (1, 40, "killed", (1, 40))
    mismatch = next(f for f in failed.findings if f.code == "slurm.attempts-mismatch")
    assert mismatch.paths == ("slurm-41903318.out",)
    assert "attempt(s) 2 of 3" in mismatch.message and "only 1 attempt(s)" in mismatch.message
    assert "no complete checkpoint found" in mismatch.explanation
    # The OOM is in both train.log (traceback) and the Slurm log: train.log's traceback stays the evidence.
    crashed = loaded["e2_crashed"]
    assert crashed.attempts[0].ended == "crashed" and "OutOfMemoryError" in crashed.attempts[0].end_detail
    assert next(f for f in crashed.findings if f.code == "run.crashed").paths == ("train.log",)


def test_attempt_origins(loaded):
    assert [a.origin for a in loaded["e2_exact_resume"].attempts] == ["fresh", "resume"]
    assert loaded["e2_exact_resume"].attempts[0].lost_steps is None
    assert [a.origin for a in loaded["e1_legacy_cursor"].attempts] == ["fresh", "rollback"]
    assert [a.ended for a in loaded["e1_legacy_cursor"].attempts] == ["killed", "stopped"]
    assert loaded["e2_crashed"].attempts[0].lost_steps == (26, 40)


def test_gap_and_unsafe_details(loaded):
    (gap,) = [f for f in loaded["e2_tb_gap"].findings if f.code == "steps.gap"]
    assert gap.steps == (21, 40)
    (unsafe,) = [f for f in loaded["e2_unsafe_checkpoint"].findings if f.code == "checkpoint.unsafe"]
    assert unsafe.severity.label == "error" and "system" in unsafe.message
    assert not Path("/tmp/pimm_pwned_marker").exists()
    drift = next(f for f in loaded["e2_config_drift"].findings if f.code == "provenance.config-drift")
    assert "optimizer.lr" in drift.message and "batch_size" in drift.message


def test_every_check_fires_on_some_fixture(loaded):
    from pimm_inspect.analysis import CHECKS

    fired = {f.code for run in loaded.values() for f in run.findings}
    not_on_fixtures = {"run.stalled", "run.ranks-diverged", "metrics.source-mismatch",
                       "wandb.no-local-run",  # unit-tested in test_checks
                       "wandb.link-refused"}  # hostile settings beside real W&B folders: test_wandb_link_rules
    for name, _check in CHECKS:
        if name == "provenance.git":
            assert {"provenance.git-dirty", "provenance.no-git"} <= fired
        elif name not in not_on_fixtures:
            assert name in fired, name


def test_crash_names_the_exception(loaded):
    (finding,) = [f for f in loaded["e2_crashed"].findings if f.code == "run.crashed"]
    assert "OutOfMemoryError" in finding.message and finding.steps == (40, 40)


def test_secret_never_in_messages(loaded):
    run = loaded["e2_secret_in_config"]
    raw = (RUNS / "e2_secret_in_config" / "resolved_config.json").read_text()
    import re

    key = re.search(r"[0-9a-f]{40}", raw).group(0)
    for f in run.findings:
        assert key not in f.message and key not in f.explanation


def test_scalars_dataframe(loaded):
    frame = loaded["e2_rollback"].scalars()
    assert list(frame.columns) == ["tag", "step", "value", "wall_time", "attempt", "source", "seq"]
    loss = frame[(frame["tag"] == "train_batch/loss") & frame["source"].str.startswith("events")]
    assert len(loss) == 125
    assert sorted(loss["attempt"].unique().tolist()) == [1, 2]


def test_fixture_readme_table_matches_the_expectations():
    import re

    readme = (RUNS.parent / "README.md").read_text()
    table: dict[str, set[str]] = {}
    for line in readme.splitlines():
        match = re.match(r"^\| `([^`]+)` \|", line)
        if match:
            table[match.group(1)] = set(re.findall(r"`([a-z]+\.[a-z-]+)`", line.rsplit(" | ", 1)[-1]))
    for name, codes in EXPECTED.items():
        key = "tb_plain" if name.startswith("tb_plain/") else name
        assert table.get(key) == codes, name


def test_crash_known_only_from_the_slurm_log(tmp_path):
    """Another rank died of OOM: rank 0's train.log just stops, the Slurm log has the error."""
    import shutil

    run_dir = tmp_path / "e2_crashed"
    shutil.copytree(RUNS / "e2_crashed", run_dir, symlinks=True)
    log = run_dir / "train.log"
    text = log.read_bytes()
    log.write_bytes(text[: text.index(b"Traceback (most recent call last)")].rsplit(b"\n[", 1)[0] + b"\n")
    run = pimm_inspect.load_run(run_dir)
    (attempt,) = run.attempts
    assert attempt.ended == "crashed" and attempt.end_detail.startswith("[rank0]: torch.OutOfMemoryError")
    assert attempt.end_detail.endswith("(slurm-41877302.out)")
    crashed = next(f for f in run.findings if f.code == "run.crashed")
    assert crashed.paths == ("slurm-41877302.out",) and "The error is in slurm-41877302.out" in crashed.explanation


def test_hang_story(loaded):
    """Rank 1 hangs fetching step 6's batch; rank 0 waits in backward; the walltime ends the job."""
    run = loaded["e3a_hung_rank"]
    (attempt,) = run.attempts
    assert (attempt.last_step, attempt.ended) == (5, "killed")
    assert attempt.end_detail.startswith("JOB 41911207 ON sdfampere012 CANCELLED AT 2026-07-26T11:00:24 DUE TO TIME LIMIT")
    diverged = next(f for f in run.findings if f.code == "run.ranks-diverged")
    assert diverged.message == "the ranks ended inside step 6 in different phases: rank 0 in backward, rank 1 in data_fetch"
    assert diverged.steps == (6, 6) and len(diverged.paths) == 2
    # The live run's ranks are in different phases too, but it is still running: no finding there.
    assert "run.ranks-diverged" not in {f.code for f in loaded["e3a_running"].findings}


def _move_slurm_log_to_repo(tmp_path, name, job):
    """The run as pimm leaves it on a cluster: its Slurm log under <repo>/slurm_logs, a snapshot marker in code/."""
    import shutil

    repo = tmp_path / "repo"
    run_dir = repo / "exp" / name
    shutil.copytree(RUNS / name, run_dir, symlinks=True)
    (repo / "slurm_logs").mkdir()
    shutil.move(str(run_dir / f"slurm-{job}.out"), repo / "slurm_logs" / f"slurm-{job}.out")
    (run_dir / "code").mkdir()
    (run_dir / "code" / f".pimm_snapshot_complete_{job}").write_text("")
    return repo, run_dir


def test_slurm_log_found_where_launch_sbatch_put_it(tmp_path):
    repo, run_dir = _move_slurm_log_to_repo(tmp_path, "e2_rollback", "41877302")
    sbatch = run_dir / "launch.sbatch"
    text = sbatch.read_text().replace("/sdf/group/neutrino/user/pimm/particle-imaging-models", str(repo))
    sbatch.write_text(text)
    log = (repo / "slurm_logs" / "slurm-41877302.out").as_posix()
    run = pimm_inspect.load_run(run_dir)
    first = run.attempts[0]
    assert first.ended == "killed" and log in first.sources and first.end_detail.endswith(f"({log})")


def test_slurm_log_found_under_the_launch_cwd(tmp_path):
    import json

    repo, run_dir = _move_slurm_log_to_repo(tmp_path, "e2_requeue_failed", "41903318")
    (run_dir / "launch.sbatch").unlink()  # no --output to follow: pimm's default under the launch cwd
    meta = json.loads((run_dir / "run_metadata.json").read_text())
    meta["cwd"] = str(repo)
    (run_dir / "run_metadata.json").write_text(json.dumps(meta))
    run = pimm_inspect.load_run(run_dir)
    mismatch = next(f for f in run.findings if f.code == "slurm.attempts-mismatch")
    assert mismatch.paths == ((repo / "slurm_logs" / "slurm-41903318.out").as_posix(),)
    # Without the marker the job id is unknown and nothing outside the run is read.
    (run_dir / "code" / ".pimm_snapshot_complete_41903318").unlink()
    assert "slurm.attempts-mismatch" not in {f.code for f in pimm_inspect.load_run(run_dir).findings}
