"""Loading that never raises: a reader bug becomes a finding on a minimal Run."""

from __future__ import annotations

import traceback
from pathlib import Path

from ..model import Finding, Run, Severity
from .assemble import load_run, load_run_and_liveness
from .collected import FileCache
from .progress import ReadTracker


def load_safely(path: Path, cache: FileCache | None = None, now: float | None = None,
                progress: ReadTracker | None = None) -> Run:
    """``load_run`` that turns an unexpected exception into an ``internal.load-failed`` finding.

    ``cache`` (the session's ReadCache, kept between calls) makes a reload read only what was appended; ``progress``
    (a ReadTracker) follows the read, and its ``LoadCancelled`` (a BaseException) passes through.
    """
    try:
        return load_run(path, now=now, cache=cache, progress=progress)
    except Exception as exc:  # the inspector must never show a traceback for bad input
        return failed_run(path, exc)


def load_reusable(path: Path, cache: FileCache | None = None, now: float | None = None,
                  progress: ReadTracker | None = None) -> tuple[Run, bool]:
    """``load_safely`` plus whether the result may be reused while the files it was read from stay the same
    (``read_record``): False for a live run (the clock alone changes its status) and a failed load. What ``ls`` rows,
    the Parquet export and the runs table's rows of big runs (read in stages, with ``progress``) are made from."""
    try:
        run, live = load_run_and_liveness(path, now=now, cache=cache, progress=progress)
    except Exception as exc:  # as load_safely: a bug becomes an internal.load-failed finding, never a traceback
        return failed_run(path, exc), False
    return run, not live


def failed_run(path: Path, exc: BaseException) -> Run:
    """A minimal Run for ``path`` whose only finding, ``internal.load-failed``, names ``exc`` and where it arose."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return Run(root=Path(path).absolute(), kind="unknown", era=None, status="unknown", name=Path(path).name,
               findings=(Finding("internal.load-failed", Severity.ERROR,
                                 f"could not load this run: {type(exc).__name__}: {exc}", (),
                                 None, f"Please report this bug{where}."),))

