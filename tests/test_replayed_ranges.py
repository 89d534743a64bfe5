"""Replayed steps are counted per range (how many copies, which attempts wrote them), once, in analysis: one
``steps.replayed`` finding per range, never one per pair of writers, and in O(n log n) for many event files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import pimm_inspect
from pimm_inspect.analysis import analyze
from pimm_inspect.analysis.replays import compute_replayed, describe
from pimm_inspect.analysis.summary import policy_note
from pimm_inspect.model import Attempt, ReplayedRange, Run, SourceFile, make_series

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
ROOT = Path(__file__).resolve().parent.parent


def _replays(run: Run) -> list:
    return [f for f in run.findings if f.code == "steps.replayed"]


def test_requeued_twice_counts_copies_per_range():
    run = pimm_inspect.load_run(RUNS / "e2_requeued_twice")
    assert [(a.first_step, a.last_step, a.restore_step) for a in run.attempts] == [(1, 75, None), (51, 90, 50),
                                                                                   (51, 100, 50)]
    first, second = run.replayed
    assert (first.first_step, first.last_step, first.copies, first.attempts) == (51, 75, 3, (1, 2, 3))
    assert (second.first_step, second.last_step, second.copies, second.attempts) == (76, 90, 2, (2, 3))
    assert len([p for p in first.paths if p.startswith("events.out")]) == 3
    assert [describe(r) for r in run.replayed] == ["51-75: 3 copies (#1 #2 #3)", "76-90: 2 copies (#2 #3)"]
    # One finding per range, saying who wrote it; no pairs.
    found = _replays(run)
    assert [(f.steps, f.attempts) for f in found] == [((51, 75), (1, 2, 3)), ((76, 90), (2, 3))]
    assert "3 times" in found[0].message and "#1 #2 #3" in found[0].message
    note = policy_note(run, "all")
    assert "51-75: 3 copies (#1 #2 #3); 76-90: 2 copies (#2 #3)" in note and "twice" not in note.split(".")[0]


def test_replay_check_compares_per_step_tags_not_epoch_means():
    """After a mid-epoch resume the epoch mean (train/loss) covers other batches: it differs by ~0.06 where no
    step differed by more than ~0.006; the figure comes from the per-step tag and says which tag it is."""
    run = pimm_inspect.load_run(RUNS / "e2_requeued_twice")
    for finding in _replays(run):
        check = next(s for s in finding.explanation.split(". ") if s.startswith("Replay check"))
        assert "train_batch/loss" in check and "per-step tag" in check, check
        figure = float(check.split("up to ")[1].split(" ")[0])
        assert figure < 0.01
    rollback = next(f for f in _replays(pimm_inspect.load_run(RUNS / "e2_rollback")))
    assert "in train_batch/loss (train_batch/loss is a per-step tag" in rollback.explanation


def test_a_tag_on_another_axis_never_meets_per_step_tags():
    """Attempt 2 logs an epoch mean at epoch number 4; attempt 1 logged step 4 of a per-step tag: no copy."""
    series = (make_series("train_batch/loss", np.arange(1, 26), np.ones(25), None, "ev.1", 1),
              make_series("train_batch/loss", np.arange(31, 51), np.ones(20), None, "ev.2", 2),
              make_series("train/loss", [4, 5], np.ones(2), None, "ev.2", 2))
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series,
              attempts=(Attempt(1, first_step=1, last_step=25), Attempt(2, first_step=31, last_step=50)))
    assert compute_replayed(run) == ()


def test_ranges_are_cut_where_the_writers_change_or_a_single_copy_lies_between():
    series = (make_series("a", [1, 2, 3, 10, 11], np.ones(5), None, "f1", 1),
              make_series("a", [2, 3, 4, 10, 11, 12], np.ones(6), None, "f2", 2),
              make_series("a", [11, 12], np.ones(2), None, "f3", 3))
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series,
              sources=tuple(SourceFile(p, "tb_events", 1, 0.0) for p in ("f1", "f2", "f3")))
    assert [(r.first_step, r.last_step, r.copies, r.attempts) for r in compute_replayed(run)] == [
        (2, 3, 2, (1, 2)), (10, 10, 2, (1, 2)), (11, 11, 3, (1, 2, 3)), (12, 12, 2, (2, 3))]
    analysed = analyze(run)
    assert analysed.replayed == compute_replayed(run)
    assert [f.steps for f in _replays(analysed)] == [(2, 3), (10, 10), (11, 11), (12, 12)]


def test_files_that_name_no_attempt_are_the_writers():
    series = tuple(make_series("loss", [0, 1], np.ones(2) * i, None, f"w{i}.csv") for i in range(4))
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series)
    (only,) = compute_replayed(run)
    assert only == ReplayedRange(0, 1, 4, (), ("w0.csv", "w1.csv", "w2.csv", "w3.csv"))
    (finding,) = _replays(analyze(run))
    assert "4 times" in finding.message and finding.paths == only.paths and "differ by up to 3" in finding.explanation


_CHILD = textwrap.dedent("""
    import json, sys, tracemalloc
    tracemalloc.start()
    import pimm_inspect
    from pimm_inspect.analysis.summary import policy_note
    run = pimm_inspect.load_run(sys.argv[1])
    note = policy_note(run)
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"attempts": len(run.attempts), "ranges": [(r.first_step, r.last_step, r.copies, len(r.attempts),
                      len(r.paths)) for r in run.replayed], "findings": [f.code for f in run.findings],
                      "peak": peak, "note": note[:200]}))
""")


def _one_point_files(folder: Path, count: int) -> None:
    """``count`` one-point event files of one tag at step 0: TensorBoard's own writer makes one, the rest are its
    bytes under tensorboardX-style names (no pid: each file is its own writer process)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    made = folder / "made"
    writer = EventFileWriter(str(made))
    writer.add_event(Event(wall_time=1_700_000_000.0, step=0,
                           summary=Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])))
    writer.close()
    (original,) = made.iterdir()
    data = original.read_bytes()
    run = folder / "run"
    run.mkdir()
    for i in range(count):
        (run / f"events.out.tfevents.{1_700_000_000 + i}.node{i:04d}").write_bytes(data)


def test_a_thousand_one_point_event_files_are_one_range(tmp_path):
    """Issue 21: 1,000 one-point files took 83-99 s and 1.6 GB (every pair compared and reported)."""
    _one_point_files(tmp_path, 1000)
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "run")], capture_output=True, text=True,
                          env=env, timeout=300)  # a hang guard, not a timing
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["attempts"] == 1000
    assert out["ranges"] == [[0, 0, 1000, 1000, 1000]]
    assert out["findings"].count("steps.replayed") == 1
    assert out["note"].startswith("Steps written more than once: 0: 1000 copies (#1 #2 #3 #4 #5 #6 ... #1000);")
    assert out["peak"] < 300 << 20, f"traced peak {out['peak'] / 1e6:.0f} MB"


def test_training_restarted_inside_one_process_is_found(tmp_path):
    """detectron2 in a notebook: one pid, eight SummaryWriter files, each starting again at iteration 9 or 19."""
    from click.testing import CliRunner

    from pimm_inspect.cli.main import cli

    run = pimm_inspect.load_run(RUNS / "rw_notebook_restart" / "output")
    assert len({Path(p).name.rsplit(".", 2)[1] for a in run.attempts for p in a.sources}) == 1  # one pid
    assert [a.origin for a in run.attempts] == ["fresh"] + ["restart"] * 7
    assert [(a.first_step, a.last_step) for a in run.attempts][:3] == [(9, 59), (9, 29), (19, 79)]
    found = _replays(run)
    assert found and {f.steps for f in found} >= {(9, 9), (19, 19)}
    at_19 = next(r for r in run.replayed if r.first_step == 19)
    assert (at_19.copies, at_19.attempts) == (8, (1, 2, 3, 4, 5, 6, 7, 8))
    note = policy_note(run)
    assert "No step was written twice" not in note and "19: 8 copies" in note
    total = sum(len(s) for s in run.series)
    out = tmp_path / "rows.csv"
    done = CliRunner().invoke(cli, ["export", str(RUNS / "rw_notebook_restart" / "output"), "--all-sources",
                                    "--policy", "all", "--format", "csv", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert len(out.read_text().splitlines()) - 1 == total == 135


def test_findings_are_capped_one_per_range_plus_one_for_the_rest():
    """200 writers over sliding windows: every step has another set of writers, so ~200 ranges; 50 findings name
    their ranges and one more sums up the rest (with every file), where pairs gave ~1,000 findings."""
    import dataclasses

    series = tuple(dataclasses.replace(make_series("loss", np.arange(i, i + 6), np.full(6, float(i)), None, f"ev.{i}",
                                                   i + 1), source_kind="tb_events") for i in range(200))
    attempts = tuple(Attempt(i + 1, first_step=i, last_step=i + 5, origin="restart" if i else "fresh")
                     for i in range(200))
    run = analyze(Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series,
                      attempts=attempts))
    assert len(run.replayed) == 204 - 1  # steps 1..203 each held by 2-6 writers, every one a new set
    assert all(r.copies == len(r.attempts) >= 2 for r in run.replayed)
    found = _replays(run)
    assert len(found) == 51
    rest = found[-1]
    assert rest.message.startswith(f"{len(run.replayed) - 50} more replayed step ranges")
    assert set(rest.paths) == {p for r in run.replayed[50:] for p in r.paths}


def _event_file(folder: Path, start: float, steps: range, offset: float) -> bytes:
    """The bytes TensorBoard's own writer makes for one session writing ``loss`` at ``steps``."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True)
    writer = EventFileWriter(str(folder))
    for step in steps:
        writer.add_event(Event(wall_time=start + step, step=step,
                               summary=Summary(value=[Summary.Value(tag="loss", simple_value=1.0 / (step + 1) + offset)])))
    writer.close()
    (made,) = folder.iterdir()
    return made.read_bytes()


def test_a_restart_inside_one_file_is_a_new_attempt(tmp_path):
    """Two writer sessions in one file (joined end to end, as ``cat`` or an object store's compose leaves them):
    the second starts with its own file_version record and goes back to step 0: a restart, and a replay."""
    first = _event_file(tmp_path / "a", 1_700_000_000.0, range(0, 10), 0.0)
    second = _event_file(tmp_path / "b", 1_700_003_600.0, range(0, 5), 0.05)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "events.out.tfevents.1700000000.node1").write_bytes(first + second)
    run = pimm_inspect.load_run(run_dir)
    assert [(a.origin, a.first_step, a.last_step) for a in run.attempts] == [("fresh", 0, 9), ("restart", 0, 4)]
    (only,) = run.replayed
    assert (only.first_step, only.last_step, only.copies, only.attempts) == (0, 4, 2, (1, 2))
    (found,) = _replays(run)
    assert "restarted from scratch" in found.message and "0.05" in found.explanation
    # One session that merely continues in the same file (no step going back) stays one attempt.
    calm = tmp_path / "calm"
    calm.mkdir()
    (calm / "events.out.tfevents.1700000000.node1").write_bytes(
        first + _event_file(tmp_path / "c", 1_700_003_600.0, range(10, 15), 0.0))
    assert len(pimm_inspect.load_run(calm).attempts) == 1


def test_hf_replay_check_uses_the_logged_loss_not_the_end_of_training_mean():
    """HF logs ``train/train_loss`` once per training (the mean over its own steps: 1-20 vs 11-20) and
    ``train/loss`` every logging step; the figure comes from train/loss, whose replayed copies are identical."""
    run = pimm_inspect.load_run(RUNS / "hf_resumed")
    (found,) = _replays(run)
    check = next(s for s in found.explanation.split(". ") if s.startswith("Replay check"))
    assert "up to 0 in train/loss" in check and "deterministic" in check and "train_loss" not in check


def _alternating(writer: str, attempt: int | None, first: int, last: int, shift: int) -> list:
    """One process's W&B rows over ``first``..``last``: each tag on every third ``_step``, the tags taking turns (the
    shape of ToberoCat/TicTacToe's keras-rl callbacks, W&B 0.12.11)."""
    steps = np.arange(first, last + 1)
    phase = (steps + shift) % 3
    rows = {"wins": phase == 0, "loss": phase == 1, "episode_reward": phase != 0}  # as keras-rl's callbacks log them
    return [make_series(tag, steps[on], np.full(int(on.sum()), 0.5 + shift), None, writer, attempt)
            for tag, on in rows.items()]


def test_tags_on_alternating_rows_are_one_range_per_replay():
    """Corpus ToberoCat/TicTacToe h465zmzw: attempts 4 and 5 both wrote every step of 2797-2974, each its tags on
    alternating rows and the other way round, so one tag meets its twin only every third step: one range (was 60
    one-step ranges, each its own finding)."""
    series = (*_alternating("run-4.wandb", 4, 1983, 2974, 0), *_alternating("run-5.wandb", 5, 2797, 3100, 1))
    run = Run(root=Path("/nowhere"), kind="wandb", era=None, status="unknown", series=tuple(series),
              attempts=(Attempt(4, first_step=1983, last_step=2974), Attempt(5, first_step=2797, last_step=3100)))
    assert [(r.first_step, r.last_step, r.copies, r.attempts) for r in compute_replayed(run)] == [
        (2797, 2974, 2, (4, 5))]
    assert [f.steps for f in _replays(analyze(run))] == [(2797, 2974)]


def test_files_naming_no_attempt_are_not_bridged_by_other_tags():
    """tensorboardX's add_scalars writes each tag to its own file at the same steps: steps the two files share
    under other tags are no copies (only the files' common tag is)."""
    series = (*_alternating("a.tfevents", None, 0, 30, 0), *_alternating("b.tfevents", None, 0, 30, 1))
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=tuple(series))
    assert len(compute_replayed(run)) > 1 and all(r.first_step == r.last_step for r in compute_replayed(run))


def test_pair_keys_are_the_sorted_distinct_pairs_whatever_the_step_span():
    """Each tag's (step, writer) pairs at steps two or more of its writers logged, once each over all tags, as
    sorted keys of the step's index among the logged steps: steps near the int64 ends fit as well as small ones."""
    from collections import defaultdict

    from pimm_inspect.analysis.distinct import distinct_sorted
    from pimm_inspect.analysis.replay_pairs import pair_keys

    rng = np.random.default_rng(3)
    shared = [np.unique(rng.integers(0, 50, 40)) for _ in range(4)]  # several tags holding the same steps
    for low in (0, -(1 << 62), 1 << 61):
        series = [make_series(tag, steps + low, np.zeros(steps.shape[0]), None, f"w{w}", w)
                  for tag in ("a", "b", "c") for w, steps in enumerate(shared)]
        for w in range(3):  # a tag of its own steps
            steps = np.unique(rng.integers(0, 50, 30)) + low
            series.append(make_series("d", steps, np.zeros(steps.shape[0]), None, f"w{w}", w))
        series += [make_series("e", [low, low + 7 if low == 0 else (1 << 62) + 1], [0.0, 0.0], None, f"w{w}", w)
                   for w in (0, 3)]
        by_tag: dict = defaultdict(lambda: defaultdict(list))
        for s in series:
            by_tag[s.tag][s.attempt].append(s)
        logged = distinct_sorted([s.steps for s in series])
        keys = pair_keys(by_tag, {w: w for w in range(4)}, logged)
        expected = set()
        for groups in by_tag.values():
            owners: dict = defaultdict(set)
            for w, group in groups.items():
                for step in np.concatenate([s.steps for s in group]).tolist():
                    owners[step].add(w)
            expected |= {(step, w) for step, ws in owners.items() if len(ws) > 1 for w in ws}
        assert len(expected) > 100
        assert [(int(logged[k // 4]), k % 4) for k in keys.tolist()] == sorted(expected)
