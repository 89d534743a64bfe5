"""The UI's loader: prefetching a run in a child process while the UI imports (no textual needed here)."""

import threading
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
