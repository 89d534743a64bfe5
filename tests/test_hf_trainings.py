"""Issue 19: two trainings in one HF output dir are two trainings, not one fresh attempt.

``fixtures/runs/hf_two_trainings`` was written by two real ``Trainer`` runs into one output dir (max_steps 8 then 40,
batch 4 then 8): the second is an attempt with origin ``restart`` that saved its own checkpoints, and
``hf.new-training`` names the checkpoints of each training.
"""

from __future__ import annotations

from pathlib import Path

import pimm_inspect
from pimm_inspect.sources.hf.state import StateDoc
from pimm_inspect.sources.hf.trainings import attempt_trainings, checkpoint_owners, trainings

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_a_second_training_in_one_output_dir_is_a_restart() -> None:
    run = pimm_inspect.load_run(RUNS / "hf_two_trainings")
    got = [(a.origin, a.ended, a.first_step, a.last_step, a.saved_steps, a.lost_steps) for a in run.attempts]
    assert got == [("fresh", "completed", 2, 8, (8,), None), ("restart", "stopped", 5, 20, (10, 20), None)]
    (finding,) = [f for f in run.findings if f.code == "hf.new-training"]
    assert finding.paths == ("checkpoint-8", "checkpoint-10", "checkpoint-20")
    assert "checkpoint-8 (max_steps 8, train_batch_size 4); checkpoint-10, checkpoint-20 (max_steps 40, " \
           "train_batch_size 8)" in finding.message
    # Another training's steps are no copies of these: no replay is claimed.
    assert "steps.replayed" not in {f.code for f in run.findings}


def test_one_training_resumed_is_still_one_training() -> None:
    for name in ("hf_clean", "hf_killed", "hf_resumed"):
        run = pimm_inspect.load_run(RUNS / name)
        assert "hf.new-training" not in {f.code for f in run.findings}, name
        assert "restart" not in {a.origin for a in run.attempts}, name


def _state(path: str, **fields: int) -> StateDoc:
    return StateDoc(path, dict(fields), [])


def test_trainings_are_ordered_and_the_top_level_state_ends_the_last() -> None:
    old = _state("checkpoint-225/trainer_state.json", max_steps=225, train_batch_size=32, global_step=225)
    new = [_state(f"checkpoint-{n}/trainer_state.json", max_steps=22486, train_batch_size=64, global_step=n)
           for n in (500, 1000)]
    top = _state("trainer_state.json", max_steps=22486, train_batch_size=64, global_step=1200)
    found = trainings([(225, 10.0, old), (500, 20.0, new[0]), (1000, 30.0, new[1])], top)
    assert [(t.key, t.checkpoint_steps) for t in found] == [((225, 32), (225,)), ((22486, 64), (500, 1000))]
    assert found[-1].newest is top
    assert len(trainings([(500, 20.0, new[0]), (1000, 30.0, new[1])], top)) == 1


def test_attempts_map_to_trainings_only_when_the_starts_add_up() -> None:
    assert attempt_trainings([None, 10, None], 2) == [0, 0, 1]  # fresh, resume, restart
    assert attempt_trainings([None, None, None], 2) == [None, None, None]  # three starts, two trainings: unknown
    assert attempt_trainings([None, None], 1) == [None, None]


def test_a_checkpoint_belongs_to_the_last_attempt_of_its_training_that_reached_it() -> None:
    # (restored step, last step, training) per attempt; (step, training) per checkpoint
    spans = [(None, 20, None), (10, 20, None)]
    assert checkpoint_owners(spans, [(10, None), (20, None)]) == {10: 0, 20: 1}
    spans = [(None, 8, 0), (None, 20, 1)]
    assert checkpoint_owners(spans, [(8, 0), (10, 1), (20, 1)]) == {8: 0, 10: 1, 20: 1}
    assert checkpoint_owners([(None, 5, None)], [(8, None)]) == {8: 0}  # saved after its last logged step


def test_a_resume_with_other_settings_is_the_same_training() -> None:
    """Resumed with a larger max_steps (or batch size), the checkpoints disagree on them but the history goes on."""
    rows = [{"step": 5, "loss": 2.5}, {"step": 10, "loss": 2.25}]
    first = StateDoc("checkpoint-10/trainer_state.json", {"max_steps": 20, "train_batch_size": 4}, rows)
    resumed = StateDoc("checkpoint-30/trainer_state.json", {"max_steps": 40, "train_batch_size": 4},
                       rows + [{"step": 15, "loss": 2.0}, {"step": 30, "loss": 1.5}])
    restarted = StateDoc("checkpoint-30/trainer_state.json", {"max_steps": 40, "train_batch_size": 4},
                         [{"step": 5, "loss": 2.75}, {"step": 30, "loss": 1.5}])
    (one,) = trainings([(10, 1.0, first), (30, 2.0, resumed)], None)
    assert one.checkpoint_steps == (10, 30) and one.key == (40, 4)
    assert len(trainings([(10, 1.0, first), (30, 2.0, restarted)], None)) == 2


def _tb_folder(folder: Path, stamp: int, steps: range) -> None:
    from tests.many_names import _frame, _scalar_event

    folder.mkdir(parents=True)
    records = [_frame(_scalar_event(float(stamp + s), s, b"train/loss", 2.0 - s / 100)) for s in steps]
    (folder / f"events.out.tfevents.{stamp}.node01.77.0").write_bytes(b"".join(records))


def test_two_trainings_with_tensorboard_folders(tmp_path: Path) -> None:
    """With one runs/ folder per process start (HF's TensorBoard callback), the second start is the restart."""
    import shutil

    run = tmp_path / "hf_two_trainings"
    shutil.copytree(RUNS / "hf_two_trainings", run)
    _tb_folder(run / "runs" / "Jan01_10-00-00_node01", 1_760_000_000, range(2, 9, 2))
    _tb_folder(run / "runs" / "Jan08_10-00-00_node01", 1_760_600_000, range(5, 21, 5))
    loaded = pimm_inspect.load_run(run)
    got = [(a.origin, a.sources, a.saved_steps) for a in loaded.attempts]
    assert got == [("fresh", ("runs/Jan01_10-00-00_node01",), (8,)),
                   ("restart", ("runs/Jan08_10-00-00_node01",), (10, 20))]
    assert "hf.new-training" in {f.code for f in loaded.findings}


def test_a_rerun_with_the_same_settings_is_told_apart_by_its_history() -> None:
    """Run A reached checkpoint-60; rerun B (same settings, another seed) overwrote checkpoint-10..50 and died:
    checkpoint-60 (A's) disagrees with checkpoint-50 (B's) at the same steps, so they are two trainings."""
    a_rows = [{"step": s, "loss": 3.0 - s / 100} for s in range(10, 61, 10)]
    b_rows = [{"step": s, "loss": 3.5 - s / 100} for s in range(10, 51, 10)]
    fields = {"max_steps": 100, "train_batch_size": 8}
    states = [(s, 20.0, StateDoc(f"checkpoint-{s}/trainer_state.json", dict(fields, global_step=s),
                                 [r for r in b_rows if r["step"] <= s])) for s in range(10, 51, 10)]
    states.append((60, 10.0, StateDoc("checkpoint-60/trainer_state.json", dict(fields, global_step=60), a_rows)))
    found = trainings(states, None)
    assert [t.checkpoint_steps for t in found] == [(60,), (10, 20, 30, 40, 50)]  # A first: written earlier


def test_a_rollback_resume_that_logged_other_values_is_the_same_training() -> None:
    """Attempt 1 reached checkpoint-30; attempt 2 resumed from checkpoint-10, logged 15-20 anew and saved
    checkpoint-20: the histories differ at 15 and 20 but share their beginning, so it is one training."""
    fields = {"max_steps": 40, "train_batch_size": 8}
    first = [{"step": s, "loss": 3.0 - s / 100} for s in range(5, 31, 5)]
    second = first[:2] + [{"step": s, "loss": 3.01 - s / 100} for s in (15, 20)]
    states = [(10, 1.0, StateDoc("checkpoint-10/trainer_state.json", dict(fields, global_step=10), first[:2])),
              (20, 3.0, StateDoc("checkpoint-20/trainer_state.json", dict(fields, global_step=20), second)),
              (30, 2.0, StateDoc("checkpoint-30/trainer_state.json", dict(fields, global_step=30), first))]
    assert [t.checkpoint_steps for t in trainings(states, None)] == [(10, 20, 30)]


def test_each_training_has_its_own_training_args() -> None:
    run = pimm_inspect.load_run(RUNS / "hf_two_trainings")
    args = {d.attempt: d for d in run.configs if d.kind == "hf_training_args" and d.attempt is not None}
    assert args[1].path == "checkpoint-8/training_args.bin" and args[2].path == "checkpoint-20/training_args.bin"
    assert (args[1].data["max_steps"], args[1].data["seed"]) == (8, 42)
    assert (args[2].data["max_steps"], args[2].data["seed"]) == (40, 7)


def test_trainings_of_a_checkout_go_by_their_steps_and_of_a_disk_by_their_times(tmp_path: Path) -> None:
    """A git checkout stamps every file at once (in any order): the times then order nothing; on a real disk
    the first checkpoint's write time orders the trainings."""
    import os
    import shutil

    run = tmp_path / "out"
    shutil.copytree(RUNS / "hf_two_trainings", run)
    for offset, name in enumerate(("checkpoint-20", "checkpoint-10", "checkpoint-8")):  # a checkout's order
        for path in [run / name, *(run / name).iterdir()]:
            os.utime(path, (1_800_000_000 + offset * 0.01, 1_800_000_000 + offset * 0.01))
    origins = [(a.origin, a.first_step) for a in pimm_inspect.load_run(run).attempts]
    assert origins == [("fresh", 2), ("restart", 5)]
    for stamp, name in ((1_800_000_000, "checkpoint-10"), (1_800_000_600, "checkpoint-20"),
                        (1_800_001_200, "checkpoint-8")):  # the 40-step training really ran first
        for path in [run / name, *(run / name).iterdir()]:
            os.utime(path, (stamp, stamp))
    assert [a.origin for a in pimm_inspect.load_run(run).attempts] == ["fresh", "restart"]
    assert pimm_inspect.load_run(run).attempts[0].first_step == 5


def test_trainings_of_one_seed_are_told_apart_by_their_whole_history(tmp_path: Path) -> None:
    """``hf_same_seed_trainings``: one script run with max_steps 20, then 14, then 3 (real Trainers, same seed and
    warmup). Their first rows are identical, so agreeing there is no resume: each is its own training, the max_steps 20
    one keeps its steps 2-20 and checkpoints 10 and 20, and the smoke test that saved before any log row is an attempt
    too. Checked out, the files carry one time: the trainings go by their checkpoints' steps."""
    import os
    import shutil

    run_dir = tmp_path / "hf_same_seed_trainings"
    shutil.copytree(RUNS / "hf_same_seed_trainings", run_dir)
    for path in run_dir.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    run = pimm_inspect.load_run(run_dir)
    got = [(a.origin, a.ended, a.first_step, a.last_step, a.saved_steps) for a in run.attempts]
    assert got == [("fresh", "completed", None, None, (3,)), ("restart", "completed", 2, 20, (10, 20)),
                   ("restart", "completed", 2, 14, (14,))]
    (finding,) = [f for f in run.findings if f.code == "hf.new-training"]
    # One time stamp on every file, no checkpoint written over: the order is the folders' steps, and says so.
    assert finding.message == ("3 trainings wrote into this output dir (their order is not recorded): checkpoint-3 "
                               "(max_steps 3, train_batch_size 4); checkpoint-10, checkpoint-20 (max_steps 20, "
                               "train_batch_size 4); checkpoint-14 (max_steps 14, train_batch_size 4)")
    assert "their order is not recorded: they are listed, and numbered as attempts, by their checkpoints' steps" in \
        finding.explanation
    assert {c.path: c.saved_by_attempt for c in run.checkpoints} == {
        "checkpoint-3": 1, "checkpoint-10": 2, "checkpoint-14": 3, "checkpoint-20": 2}


def test_a_history_that_holds_only_the_first_rows_does_not_continue() -> None:
    from pimm_inspect.sources.hf.trainings import continues

    earlier = StateDoc("a", {}, [{"step": 2, "loss": 3.0}, {"step": 4, "loss": 2.5}, {"step": 6, "loss": 2.0}])
    same_start = StateDoc("b", {}, [{"step": 2, "loss": 3.0}, {"step": 4, "loss": 2.5}, {"step": 6, "loss": 2.1}])
    resumed = StateDoc("c", {}, earlier.history + [{"step": 8, "loss": 1.9}])
    assert not continues(same_start, earlier)
    assert continues(resumed, earlier)


def test_a_shorter_later_training_that_wrote_over_a_lower_checkpoint_comes_second(tmp_path: Path) -> None:
    """fixtures/hf_shapes/hf_overwritten_lower (two real Trainers, save_steps 10): max_steps 20 saved checkpoint-10 and
    -20, then max_steps 12 saved checkpoint-10 over it (and -12). Copied with one mtime for every file, as a git
    checkout leaves it, the folders' steps put the max_steps 12 training first; checkpoint-10 holding its state below
    the other's checkpoint-20 says it came second (the public SecurityLab-UCD/UniTSyn results/: checkpoint-500 of a
    555-step training beside checkpoint-1000..3500 of a 176,652-step one, whose git history shows 500 rewritten a
    day later)."""
    import os
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "hf_shapes" / "hf_overwritten_lower", copy)
    for path in [copy, *copy.rglob("*")]:
        os.utime(path, (1_760_000_000, 1_760_000_000))
    run = pimm_inspect.load_run(copy)
    (finding,) = [f for f in run.findings if f.code == "hf.new-training"]
    assert "checkpoint-20 (max_steps 20, train_batch_size 4); then checkpoint-10, checkpoint-12 (max_steps 12, " \
           "train_batch_size 4)" in finding.message
    assert "checkpoint-10 holds the state of the training with max_steps 12, train_batch_size 4, though the one with " \
           "max_steps 20, train_batch_size 4, saving every 10 steps, went on to step 20" in finding.explanation
    assert [(a.origin, a.last_step) for a in run.attempts] == [("fresh", 20), ("restart", 10)]


def test_the_curves_say_which_trainings_history_they_are() -> None:
    """The curves of an output dir of several trainings are the newest one's log_history alone: show's notes say so
    and name the other's state file (the public UniTSyn results/ listed 50 points of its 555-step training and said
    nothing of the 350 rows of the 176,652-step one in checkpoint-3500)."""
    run = pimm_inspect.load_run(RUNS / "hf_two_trainings")
    assert {s.source for s in run.series if s.source_kind == "hf_trainer"} == {"checkpoint-20/trainer_state.json"}
    assert run.hf is not None and ("2 trainings wrote into this output dir: the curves are the log_history of one, "
            "checkpoint-20/trainer_state.json (the last in hf.new-training's order); the other one's "
            "(checkpoint-8/trainer_state.json, steps 2-8) is not drawn.") in run.hf.schedule_notes
    clean = pimm_inspect.load_run(RUNS / "hf_clean").hf
    assert clean is not None and not [n for n in clean.schedule_notes if "trainings wrote" in n]
