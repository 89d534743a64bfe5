"""A run prefetched in a child process carries everything analysis set, not only its findings (issue 22)."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import pytest

from pimm_inspect.model import ReplayedRange
from pimm_inspect.session import staged as loader_module
from pimm_inspect.session.staged import CachingLoader

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_the_prefetched_run_keeps_every_field_analysis_set(monkeypatch):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader falls back to a thread, by design")
    analyze = loader_module.analyze
    marked = (ReplayedRange(51, 75, 3, (1, 2, 3)), ReplayedRange(76, 90, 2, (2, 3)))
    # Analysis sets Run.replayed (and may set more): the child's analysed run must reach the parent whole.
    monkeypatch.setattr(loader_module, "analyze", lambda run: dataclasses.replace(analyze(run), replayed=marked))
    loader = CachingLoader()
    loader.prefetch(RUNS / "e2_rollback")
    monkeypatch.setattr(loader_module, "load_reusable", lambda *a, **k: pytest.fail("the parent read the run"))
    run = loader(RUNS / "e2_rollback")
    assert run.replayed == marked
    assert run.series and run.findings and run.summary is not None
