"""The quick stage (load/quick.py) and the full read's progress and cancellation (load/progress.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pimm_inspect.analysis.summary import summary_of
from pimm_inspect.load.assemble import load_run
from pimm_inspect.load.discover import discover
from pimm_inspect.load.progress import LoadCancelled, ReadProgress, ReadTracker
from pimm_inspect.load.quick import glance
from pimm_inspect.load.safe import load_safely
from tests.train_log_support import write_big_log

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FIXED_NOW = 4102444800.0
EVERY_RUN = discover(RUNS)


@pytest.mark.parametrize("path", EVERY_RUN, ids=[p.relative_to(RUNS).as_posix() for p in EVERY_RUN])
def test_glance_never_contradicts_the_full_read(path):
    quick = glance(path, now=FIXED_NOW)
    full = load_run(path, now=FIXED_NOW)
    assert quick.kind == full.kind and quick.root == full.root
    assert quick.status in (None, full.status)
    if quick.attempts_exact:
        assert quick.attempts == len(full.attempts)
    elif quick.attempts is not None:
        assert quick.attempts <= len(full.attempts)
    if quick.last_step is not None:
        assert quick.last_step <= (summary_of(full).last_step or 0)
    assert quick.provenance in (None, full.provenance)
    assert full.configs[:len(quick.configs)] == quick.configs  # the top documents come first in the full read


def test_glance_tells_most_fixtures_at_once():
    """Not a vacuous agreement: the quick stage does know the status of the pimm and TensorBoard runs."""
    glances = [glance(p, now=FIXED_NOW) for p in EVERY_RUN]
    known = [g for g in glances if g.status is not None]
    assert len(known) >= 0.6 * len(glances)
    assert {g.status for g in known} >= {"finished", "crashed", "stopped"}
    assert sum(g.attempts_exact for g in glances) >= 10


def test_glance_of_a_rollback_run():
    quick = glance(RUNS / "e2_rollback", now=FIXED_NOW)
    assert (quick.kind, quick.status, quick.last_step, quick.attempts, quick.attempts_exact) == \
        ("pimm", "finished", 100, 1, False)
    assert quick.provenance is not None and quick.provenance.source == "run_metadata.json"
    assert {f.kind for f in quick.files} >= {"train_log", "tb_events", "json", "checkpoint"}
    assert quick.bytes_total == sum(f.size_bytes for f in quick.files) > 0


def test_glance_reads_only_the_tail_of_a_big_log(tmp_path, monkeypatch):
    run = tmp_path / "big"
    run.mkdir()
    facts = write_big_log(run / "train.log", 8 << 20)
    from pimm_inspect.sources.train_log import reader as train_log

    starts: list[int] = []
    real = train_log.read_train_log

    def spy(path, rel_path, start_offset=0, *args, **kwargs):
        starts.append(start_offset)
        return real(path, rel_path, start_offset, *args, **kwargs)

    monkeypatch.setattr(train_log, "read_train_log", spy)
    quick = glance(run, now=FIXED_NOW)
    size = (run / "train.log").stat().st_size
    assert starts and min(starts) >= size - (256 << 10)  # the reader saw the last 256 KiB only
    assert quick.last_step == facts["steps"] and quick.status == "stopped"


def test_every_listed_file_is_reported_read():
    """The listing follows collect's rules: the tracker sees each listed file read, and the bytes add up."""
    for path in EVERY_RUN:
        quick = glance(path, now=FIXED_NOW)
        seen: list[ReadProgress] = []
        tracker = ReadTracker(quick.files, seen.append)
        load_run(path, now=FIXED_NOW, progress=tracker)
        assert tracker.sizes == {}, (path, tracker.sizes)
        assert seen[-1].stage == "assembling" and seen[-1].bytes_done == seen[-1].bytes_total == quick.bytes_total


def test_progress_counts_event_files_as_they_are_read():
    quick = glance(RUNS / "e2_rollback", now=FIXED_NOW)
    seen: list[ReadProgress] = []
    load_run(RUNS / "e2_rollback", now=FIXED_NOW, progress=ReadTracker(quick.files, seen.append))
    events = [p for p in seen if p.stage == "event files"]
    assert [p.files_done for p in events] == [0, 1, 1, 2]  # before and after each of the two files
    assert all(p.files_total == 2 for p in events)
    assert [p.bytes_done for p in seen] == sorted(p.bytes_done for p in seen)


@pytest.mark.parametrize("stop_after", [1, 3])
def test_a_cancelled_read_stops_between_files(stop_after):
    quick = glance(RUNS / "e2_rollback", now=FIXED_NOW)
    tracker = ReadTracker(quick.files, cancelled=lambda: tracker.files_read >= stop_after)
    with pytest.raises(LoadCancelled):
        load_safely(RUNS / "e2_rollback", progress=tracker)  # never turned into a load-failed finding
    assert tracker.files_read == stop_after


def test_cancelled_before_reading_reads_nothing():
    tracker = ReadTracker((), cancelled=lambda: True)
    with pytest.raises(LoadCancelled):
        load_run(RUNS / "e2_rollback", progress=tracker)
    assert tracker.files_read == 0


def test_a_live_tail_is_running_and_an_old_cut_tail_is_left_open(tmp_path):
    run = tmp_path / "live"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    log = run / "train.log"
    text = log.read_bytes()
    cut = text[:text.rindex(b"Train: [")] + b"Train: [2/5"  # a line being written
    log.write_bytes(cut)
    mtime = log.stat().st_mtime
    assert glance(run, now=mtime + 60).status == load_run(run, now=mtime + 60).status == "running"
    # An hour later: a dead writer for the default window, but the full read's step cadence decides.
    assert glance(run, now=mtime + 3600).status is None
    os.utime(log, (mtime, mtime))
