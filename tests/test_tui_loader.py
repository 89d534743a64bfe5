"""The UI's loader: prefetching a run in a child process while the UI imports (no textual needed here)."""

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from pimm_inspect.load.assemble import load_run
from pimm_inspect.session import child as child_module
from pimm_inspect.session import staged as loader_module
from pimm_inspect.session.staged import CachingLoader

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

needs_fork = pytest.mark.skipif(not hasattr(child_module.os, "fork"), reason="no fork on this platform")


def _codes(run):
    return sorted(f.code for f in run.findings)


@needs_fork
def test_prefetched_run_comes_from_the_child(monkeypatch):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader falls back to a thread, by design")
    loader = CachingLoader()
    loader.prefetch(RUNS / "e2_rollback")

    def not_here(*args, **kwargs):
        raise AssertionError("the parent loaded the run itself")

    monkeypatch.setattr(loader_module, "load_reusable", not_here)  # after the fork: only the parent sees it
    run = loader(RUNS / "e2_rollback")
    direct = load_run(RUNS / "e2_rollback")
    assert [(a.first_step, a.last_step, a.origin) for a in run.attempts] == \
        [(a.first_step, a.last_step, a.origin) for a in direct.attempts]
    assert {s.tag: len(s) for s in run.series} == {s.tag: len(s) for s in direct.series}
    assert "steps.replayed" in _codes(run)
    with pytest.raises(AssertionError):  # a second call is a fresh load (the prefetch is used once)
        loader(RUNS / "e2_rollback")


@needs_fork
def test_a_live_prefetched_run_refreshes_incrementally(tmp_path):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader falls back to a thread, by design")
    from tests.test_refresh import _grow_copy

    log, log_tail, ev_tail, events, _ = _grow_copy(tmp_path)
    loader = CachingLoader()
    loader.prefetch(log.parent)
    first = loader(log.parent)
    assert first.status == "running"
    with open(log, "ab") as fh:
        fh.write(log_tail)
    with open(events, "ab") as fh:
        fh.write(ev_tail)
    second = loader(log.parent)
    assert second.status == "finished" and loader.incremental_reads >= 2  # the child's cache came back


@needs_fork
def test_child_that_sends_nothing_falls_back_to_loading_here(monkeypatch):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader falls back to a thread, by design")

    def broken(*args, **kwargs):
        raise RuntimeError("child cannot pickle")

    monkeypatch.setattr(child_module.pickle, "dumps", broken)  # inherited by the child
    loader = CachingLoader()
    loader.prefetch(RUNS / "e2_clean")
    run = loader(RUNS / "e2_clean")
    assert run.status == "finished" and len(run.series) > 0


@needs_fork
def test_a_run_whose_log_is_cached_already_is_not_prefetched(tmp_path):
    """Issue 23: on a warm cache the child decoded every cached column and sent them through the pipe (tags after
    10 s on a 1 GB log, 5 s when the UI reads the entry itself); a cold run is still prefetched."""
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader does not fork then, by design")
    from pimm_inspect.session import Session
    from pimm_inspect.session.settings import Settings
    from pimm_inspect.session.staged import log_cached

    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_clean", run)
    settings = Settings(cache_dir=tmp_path / "cache", cache_min_decode_s=0.0)  # even a small log is stored
    cold = Session(settings).staged
    assert not log_cached(cold.disk, run)
    pid = cold.prefetch(run)
    assert pid is not None  # cold: read in a child while the UI starts
    first = cold.load(run)
    assert log_cached(cold.disk, run)  # the child stored the log's entry
    warm = Session(settings).staged
    assert warm.prefetch(run) is None  # warm: the UI reads the entry itself
    again = warm.load(run)
    assert [(s.tag, len(s)) for s in again.series] == [(s.tag, len(s)) for s in first.series]
    later = time.time_ns() + 10**9  # the log changed after its entry was written: cold again
    os.utime(run / "train.log", ns=(later, later))
    assert not log_cached(warm.disk, run)
