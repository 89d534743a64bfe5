"""Each check fires on a run built for it and stays quiet on its clean twin (pure functions of the model)."""

import dataclasses
import time
from pathlib import Path

import numpy as np

from pimm_inspect.analysis import (analyze, checks_checkpoint, checks_provenance, checks_run, checks_steps, checks_wandb,
                                   run_checks)
from pimm_inspect.analysis.replays import compute_replayed
from pimm_inspect.evidence import EventFileFacts, EventMarker, ModelDirFacts, RankLogFacts, TrainLogFacts
from pimm_inspect.model import (Attempt, CheckpointInfo, ConfigDoc, LogEvent, Provenance, Run, SourceFile,
                                make_series)


def run_of(**kw) -> Run:
    base = dict(root=Path("/nowhere/run"), kind="pimm", era="E2", status="finished", name="run")
    base.update(kw)
    return Run(**base)


def event_file(path: str, markers: tuple = (), stale: bool = False) -> EventFileFacts:
    return EventFileFacts(path, None, None, None, 1_784_064_700.0, 1_784_064_800.0, 10, 10, markers, stale)


def tb_source(path: str) -> SourceFile:
    return SourceFile(path, "tb_events", 100, 0.0)


def with_replayed(run: Run) -> Run:
    """The run with its replayed ranges set, as ``analyze`` sets them before the checks run."""
    return dataclasses.replace(run, replayed=compute_replayed(run))


def test_replayed_fires_on_overlap_and_is_info_with_purge_marker():
    s1 = make_series("loss", np.arange(1, 76), np.ones(75), None, "ev.1", 1)
    s2 = make_series("loss", np.arange(51, 101), np.ones(50) * 1.5, None, "ev.2", 2)
    run = run_of(series=(s1, s2), sources=(tb_source("ev.1"), tb_source("ev.2")))
    assert checks_steps.check_replayed(run) == []  # the check reads the ranges analysis found: none yet
    (f,) = checks_steps.check_replayed(with_replayed(run))
    assert (f.code, f.steps, f.severity.label) == ("steps.replayed", (51, 75), "warning")
    assert "0.5" in f.explanation
    marker = EventMarker(kind="session_log", step=51, wall_time_s=0.0, detail="START")
    purged = dataclasses.replace(run, event_files=(event_file("ev.1"), event_file("ev.2", markers=(marker,))))
    (f,) = checks_steps.check_replayed(with_replayed(purged))
    assert f.severity.label == "info" and "purge marker" in f.explanation
    quiet = run_of(series=(s1, make_series("loss", np.arange(76, 101), np.ones(25), None, "ev.2", 2)),
                   sources=(tb_source("ev.1"), tb_source("ev.2")))
    assert checks_steps.check_replayed(with_replayed(quiet)) == []
    (f,) = [f for f in run_checks(run) if f.code == "steps.replayed"]  # run_checks works the ranges out itself
    assert f.steps == (51, 75)


def test_gap_fires_only_when_every_source_shows_it():
    a1, a2 = Attempt(1, first_step=1, last_step=20), Attempt(2, first_step=41, last_step=80)
    tb = (make_series("loss", np.arange(1, 21), np.ones(20), None, "ev.1", 1),
          make_series("loss", np.arange(41, 81), np.ones(40), None, "ev.2", 2))
    run = run_of(attempts=(a1, a2), series=tb, sources=(tb_source("ev.1"), tb_source("ev.2")))
    (f,) = checks_steps.check_gaps(run)
    assert f.steps == (21, 40)
    log = (make_series("train_batch/loss", [5, 10, 15, 20, 25, 30, 35, 40], np.ones(8), None, "train.log", 1),
           make_series("train_batch/loss", [45, 50], np.ones(2), None, "train.log", 2))
    covered = dataclasses.replace(run, series=tb + log,
                                  sources=run.sources + (SourceFile("train.log", "train_log", 1, 0.0),))
    assert checks_steps.check_gaps(covered) == []


def test_rollback_and_exact_resume():
    attempts = (Attempt(1, first_step=1, last_step=75, ended="killed"),
                Attempt(2, first_step=51, last_step=100, origin="resume", resume_step=50))
    (f,) = checks_steps.check_rollback(run_of(attempts=attempts))
    assert f.steps == (51, 75) and "rolled back 25 steps" in f.message
    exact = (Attempt(1, first_step=1, last_step=50), Attempt(2, first_step=51, last_step=100, origin="resume",
                                                              resume_step=50))
    assert checks_steps.check_rollback(run_of(attempts=exact)) == []


def test_gap_and_rollback_list_the_run_checkpoint_they_name():
    """The restore point the text names is listed when it is a checkpoint of this run (so the one name escape writes
    it); a path the log names elsewhere on disk is not (it is no file of the run)."""
    ck = CheckpointInfo(path="checkpoint-10", format="hf", role="other", complete=True)
    back = (Attempt(1, first_step=1, last_step=20, ended="killed", sources=("ev.1",)),
            Attempt(2, first_step=11, last_step=30, origin="rollback", resume_step=10, resumed_from="checkpoint-10",
                    sources=("ev.2",)))
    (f,) = checks_steps.check_rollback(run_of(attempts=back, checkpoints=(ck,)))
    assert "restarted from checkpoint-10" in f.explanation and f.paths == ("ev.1", "ev.2", "checkpoint-10")
    elsewhere = tuple(dataclasses.replace(a, resumed_from="/scratch/other/model_last.pth") for a in back)
    (f,) = checks_steps.check_rollback(run_of(attempts=elsewhere, checkpoints=(ck,)))
    assert f.paths == ("ev.1", "ev.2")
    skip = (Attempt(1, first_step=1, last_step=20, sources=("ev.1",)),
            Attempt(2, first_step=41, last_step=80, origin="resume", resume_step=20, resumed_from="checkpoint-10",
                    sources=("ev.2",)))
    tb = (make_series("loss", np.arange(1, 21), np.ones(20), None, "ev.1", 1),
          make_series("loss", np.arange(41, 81), np.ones(40), None, "ev.2", 2))
    (f,) = checks_steps.check_gaps(run_of(attempts=skip, series=tb, checkpoints=(ck,), era="E0",
                                          sources=(tb_source("ev.1"), tb_source("ev.2"))))
    assert "(checkpoint-10)" in f.explanation and f.paths == ("ev.2", "checkpoint-10")


def test_run_file_words_in_finding_text_stay_on_one_line():
    """A pickle global, a W&B id and a rank's phase are no files (not in ``paths``): quoted by the one name escape
    with line breaks as ``\\n``, a newline in one cannot start a forged line of ``check``."""
    evil = _ckpt(unsafe_globals=("posix.system\nFORGED",))
    (f,) = checks_checkpoint.check_unsafe(run_of(checkpoints=(evil,)))
    assert "\n" not in f.message and "posix.system\\nFORGED" in f.message
    ids = (_ckpt(path="model/iter_50.pth", global_step=50, wandb_run_id="aaa\nFORGED"), _ckpt(wandb_run_id="b\\b"))
    (f,) = checks_wandb.check_run_split(run_of(checkpoints=ids))
    assert f.message.endswith("W&B runs: b\\\\b, aaa\\nFORGED")
    logs = tuple(RankLogFacts(f"structured_logs/r{r}.jsonl", r, None, step, "step_end\nFORGED", None, ("fwd\tx",))
                 for r, step in ((0, 10), (1, 12)))
    (f,) = checks_run.check_ranks_diverged(run_of(status="crashed", rank_logs=logs))
    assert "\n" not in f.explanation and "last event step_end\\nFORGED, open fwd\\tx" in f.explanation


def test_inexact_from_pimm_warning():
    warn = LogEvent("warning", "Skipping dataloader-cursor restore (world_size 8->4); restarting the resumed epoch "
                    "from its first batch.", "train.log", 120, "WARNING", attempt=2)
    (f,) = checks_steps.check_inexact(run_of(events=(warn,)))
    assert f.code == "resume.inexact" and "world_size 8->4" in f.message and "train.log:120" in f.explanation
    other = LogEvent("warning", "psutil not available - CPU metrics will not be logged", "train.log", 3, "WARNING")
    assert checks_steps.check_inexact(run_of(events=(other,))) == []


def _ckpt(**kw) -> CheckpointInfo:
    base = dict(path="model/model_last.pth", format="legacy", role="last", complete=True)
    base.update(kw)
    return CheckpointInfo(**base)


def test_no_cursor_from_checkpoint_state_and_quiet_with_cursor():
    attempts = (Attempt(1), Attempt(2, origin="resume"))
    cfg = ConfigDoc("resolved_config.json", "resolved_config", {"use_wandb": True})
    legacy = _ckpt(wandb_state={"run_id": "abc", "step_offset": 0}, wandb_run_id="abc")
    (f,) = checks_wandb.check_no_cursor(run_of(attempts=attempts, checkpoints=(legacy,), configs=(cfg,)))
    assert f.code == "wandb.no-cursor" and f.paths == ("model/model_last.pth",)
    good = _ckpt(wandb_state={"run_id": "abc", "resume_step": 51}, wandb_run_id="abc", wandb_cursor=51,
                 wandb_cursor_key="resume_step")
    assert checks_wandb.check_no_cursor(run_of(attempts=attempts, checkpoints=(good,), configs=(cfg,))) == []


def test_cursor_mismatch():
    bad = _ckpt(global_step=40, wandb_cursor=45, wandb_cursor_key="resume_step", wandb_step_offset=0)
    (f,) = checks_wandb.check_cursor_mismatch(run_of(checkpoints=(bad,)))
    assert "expected 41" in f.message and "4 extra" in f.explanation
    offset = _ckpt(global_step=40, wandb_cursor=141, wandb_cursor_key="resume_step", wandb_step_offset=100)
    assert checks_wandb.check_cursor_mismatch(run_of(checkpoints=(offset,))) == []


def test_run_split_by_checkpoint_ids():
    c1 = _ckpt(path="model/iter_50.pth", global_step=50, wandb_run_id="aaa")
    c2 = _ckpt(global_step=100, wandb_run_id="bbb")
    (f,) = checks_wandb.check_run_split(run_of(checkpoints=(c1, c2)))
    assert "aaa, bbb" in f.message and f.severity.label == "warning"
    assert checks_wandb.check_run_split(run_of(checkpoints=(c1, dataclasses.replace(c2, wandb_run_id="aaa")))) == []


def test_incomplete_and_unsafe_checkpoints():
    model_dir = ModelDirFacts(link_target=None, link_dangling=False, leftovers=("model/last.tmp",))
    last = _ckpt(path="model/last", format="standard", complete=False)
    prev = _ckpt(path="model/last.prev", format="standard", role="last.prev", resume_candidate=True, global_step=50)
    (f,) = checks_checkpoint.check_incomplete(run_of(checkpoints=(last, prev), model_dir=model_dir))
    assert "model/last.prev (global step 50)" in f.explanation
    assert set(f.paths) == {"model/last", "model/last.tmp", "model/last.prev"}  # the leftovers and the pick
    assert checks_checkpoint.check_incomplete(run_of(checkpoints=(prev,))) == []
    evil = _ckpt(unsafe_globals=("posix.system",))
    (f,) = checks_checkpoint.check_unsafe(run_of(checkpoints=(evil,)))
    assert f.severity.label == "error" and "posix.system" in f.message
    hf = _ckpt(path="checkpoint-10/training_args.bin", format="hf", unsafe_globals=("transformers.training_args.TrainingArguments",))
    (f,) = checks_checkpoint.check_unsafe(run_of(checkpoints=(hf,)))
    assert f.severity.label == "info"
    assert checks_checkpoint.check_unsafe(run_of(checkpoints=(_ckpt(),))) == []


def test_git_checks():
    meta = {"git": {}}
    (f,) = checks_provenance.check_git(run_of(provenance=Provenance(source="run_metadata.json"),
                                              run_metadata=meta))
    assert f.code == "provenance.no-git"
    (f,) = checks_provenance.check_git(run_of(provenance=Provenance(git_commit="abc", git_dirty=True, source="m")))
    assert f.code == "provenance.git-dirty"
    assert checks_provenance.check_git(run_of(provenance=Provenance(git_commit="abc", git_dirty=False, source="m"),
                                              run_metadata={"git": {"commit": "abc"}})) == []


def test_config_drift_ignores_derived_keys():
    resolved = ConfigDoc("resolved_config.json", "resolved_config", {"optimizer": {"lr": 0.001}, "batch_size": 16,
                                                                     "batch_size_per_gpu": 4})
    wandb = ConfigDoc("wandb/run-x", "wandb_config", {"optimizer": {"lr": 0.002}, "batch_size": 16,
                                                      "batch_size_per_gpu": 8})
    (f,) = checks_provenance.check_config_drift(run_of(configs=(resolved, wandb)))
    assert "optimizer.lr" in f.message and "batch_size_per_gpu" not in f.message
    same = dataclasses.replace(wandb, data={"optimizer": {"lr": 0.001}, "batch_size": 16, "batch_size_per_gpu": 8})
    assert checks_provenance.check_config_drift(run_of(configs=(resolved, same))) == []


def test_secret_check_masks():
    key = "0123456789abcdef" * 2 + "01234567"
    doc = ConfigDoc("resolved_config.json", "resolved_config", {"wandb_api_key": key, "lr": 0.1})
    (f,) = checks_provenance.check_secrets(run_of(configs=(doc,)))
    assert key not in f.message + f.explanation and "wandb_api_key" in f.explanation
    clean = ConfigDoc("resolved_config.json", "resolved_config", {"lr": 0.1, "git": {"commit": key}})
    assert checks_provenance.check_secrets(run_of(configs=(clean,))) == []


def test_crashed_only_for_crashed_attempts():
    attempts = (Attempt(1, last_step=40, ended="crashed", end_detail="RuntimeError: boom"),)
    (f,) = checks_run.check_crashed(run_of(attempts=attempts))
    assert f.severity.label == "error" and "RuntimeError: boom" in f.message
    recovered = attempts + (Attempt(2, last_step=80, ended="completed"),)
    (f,) = checks_run.check_crashed(run_of(attempts=recovered))
    assert f.severity.label == "warning"
    assert checks_run.check_crashed(run_of(attempts=(Attempt(1, ended="completed"),))) == []


def test_stalled_needs_recent_activity_inside_the_files():
    now = time.time()
    walls = now - 3600 + np.arange(10) * 10.0  # steps stopped ~58 min ago
    series = (make_series("loss", np.arange(10), np.ones(10), walls, "ev", 1),)
    alive = RankLogFacts("structured_logs/r0.jsonl", 0, None, 9, "step_end", now - 30, ())
    run = run_of(status="running", series=series, rank_logs=(alive,))
    (f,) = checks_run.check_stalled(run, now=now)
    assert f.code == "run.stalled"
    assert checks_run.check_stalled(dataclasses.replace(run, rank_logs=()), now=now) == []
    assert checks_run.check_stalled(dataclasses.replace(run, status="finished"), now=now) == []


def test_non_finite_in_metric_writer_series():
    s = make_series("loss", [1, 2, 3, 4], [1.0, np.nan, np.inf, 2.0], None, "ev", None)
    (f,) = checks_run.check_non_finite(run_of(series=(s,), sources=(tb_source("ev"),)))
    assert f.steps == (2, 3)
    ok = make_series("loss", [1, 2], [1.0, 2.0], None, "ev", None)
    assert checks_run.check_non_finite(run_of(series=(ok,), sources=(tb_source("ev"),))) == []


def test_stale_event_file_and_checkpoint():
    prov = Provenance(created_at="2026-07-14T21:30:00+00:00", source="run_metadata.json")
    log = TrainLogFacts("train.log", (), (), last_step=100, line_count=10, end_offset=100)
    run = run_of(provenance=prov, checkpoints=(_ckpt(path="model/iter_500.pth", global_step=500),),
                 event_files=(event_file("events.old", stale=True),), train_log=log)
    codes = [f.message for f in checks_run.check_stale(run)]
    assert len(codes) == 2 and "events.old" in codes[0] and "iter_500" in codes[1]
    quiet = run_of(provenance=prov, checkpoints=(_ckpt(global_step=100),),
                   event_files=(event_file("events.new"),), train_log=log)
    assert checks_run.check_stale(quiet) == []


def test_analyze_orders_worst_first_and_survives_a_broken_check(monkeypatch):
    attempts = (Attempt(1, last_step=40, ended="crashed"),)
    run = analyze(run_of(attempts=attempts, provenance=Provenance(git_commit="a", git_dirty=True, source="m")))
    assert [f.severity.label for f in run.findings] == ["error", "warning"]
    from pimm_inspect.analysis import pipeline  # the home of CHECKS (the package hands it out by name)

    def boom(run):
        raise RuntimeError("bug")

    monkeypatch.setattr(pipeline, "CHECKS", pipeline.CHECKS + (("boom", boom),))
    codes = [f.code for f in analyze(run_of()).findings]
    assert "internal.check-failed" in codes


def test_source_mismatch_between_train_log_and_tensorboard():
    from pimm_inspect.analysis import checks_sources

    steps = np.arange(5, 101, 5)
    tb_values = np.linspace(2.0, 0.5, 100).astype(np.float32).astype(np.float64)
    tb = make_series("train_batch/loss", np.arange(1, 101), tb_values, None, "events.1", 1)
    log_values = np.round(tb_values[steps - 1], 4)
    log = make_series("train_batch/loss", steps, log_values, None, "train.log", 1)
    sources = (tb_source("events.1"), SourceFile("train.log", "train_log", 1, 0.0))
    assert checks_sources.check_source_mismatch(run_of(series=(tb, log), sources=sources)) == []
    shifted = log_values.copy()
    shifted[10:] += 0.01  # another attempt's copy in the log
    bad = make_series("train_batch/loss", steps, shifted, None, "train.log", 1)
    (f,) = checks_sources.check_source_mismatch(run_of(series=(tb, bad), sources=sources))
    assert f.code == "metrics.source-mismatch" and f.steps == (55, 100) and "10 of 20" in f.message


def test_ranks_diverged_from_structured_logs():
    def rank(r, step, event, spans=("step",), started="20260725-160005-000000"):
        return RankLogFacts(path=f"structured_logs/training.global_rank_{r}.{started}-AAAAAA.jsonl", rank=r,
                            started=started, last_step=step, last_event=event, last_time_s=None, open_spans=spans)

    logs = (rank(0, 9, "optimizer_end"), rank(1, 7, "data_fetch_start", ("step", "data_fetch")),
            rank(1, 12, "step_end", (), started="20260701-000000-000000"))  # an older attempt's file
    (f,) = checks_run.check_ranks_diverged(run_of(rank_logs=logs))
    assert f.steps == (7, 9) and "rank 1 stopped at step 7" in f.message and "open step, data_fetch" in f.explanation
    same = (rank(0, 7, "data_fetch_end"), rank(1, 7, "step_start"))
    assert checks_run.check_ranks_diverged(run_of(rank_logs=same)) == []
