"""Words for a run that is still being read: its title from the quick stage, the progress line (no Textual).

Only presentation: every fact comes from ``load.quick.RunGlance`` and ``load.progress.ReadProgress``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..model import Run
from .facts import fmt_step, human_bytes, kind_label, relative_name

if TYPE_CHECKING:
    from ..load.progress import ReadProgress
    from ..load.quick import RunGlance  # types only: the quick stage's module imports the loaders

WAITING = "…"
"""Shown where the quick stage cannot tell yet."""
SO_FAR_NOTE = "Read so far, thinned; more as the read goes on. Replayed steps and findings once all is read."
"""The Curves note while only part of a big file is read: nothing about replays is claimed from part of a file."""
CHECKING_NOTE = "Every file is read; the checks (replayed steps, findings) are still running."
"""The Curves note while the read run's checks run (which steps were written twice is one of them)."""


def run_title(run: Run, base: Path) -> str:
    """The run screen's title once the run is read."""
    return f"{relative_name(run.root, base)}  {kind_label(run)}  {run.status}  {len(run.attempts)} attempt(s)"


def attempts_seen(quick: RunGlance) -> str:
    """``2`` (exact), ``≥1`` (at least, from a tail) or the waiting mark."""
    if quick.attempts is None:
        return WAITING
    return str(quick.attempts) if quick.attempts_exact else f"≥{quick.attempts}"


def last_step_seen(quick: RunGlance) -> str:
    """``≥5041041`` (the tail's last Train: step, a lower bound) or the waiting mark."""
    return WAITING if quick.last_step is None else f"≥{fmt_step(quick.last_step)}"


def glance_title(quick: RunGlance, base: Path) -> str:
    """The run screen's title from the quick stage: what the listing and the tail say."""
    parts = [relative_name(quick.root, base), quick.kind, quick.status or WAITING,
             f"{attempts_seen(quick)} attempt(s)"]
    if quick.last_step is not None:
        parts.append(f"step {last_step_seen(quick)}")
    return "  ".join(parts)


def progress_text(progress: ReadProgress) -> str:
    """``reading event files 3/5, 412.0 MB of 1.0 GB``, ``reading train.log: 230.0 MB of 1.0 GB`` (one file: no count)
    and the like."""
    if progress.stage == "assembling":
        return "putting attempts and curves together…"
    if progress.stage == "analysing":
        return "running the checks…"
    if progress.bytes_total and progress.bytes_done >= progress.bytes_total and progress.files_total == 1:
        # Every byte is read; the reader still puts its series together (and the cache keeps them): not stuck.
        return f"{progress.stage} read ({human_bytes(progress.bytes_total)}); putting its series together…"
    files = f" {progress.files_done}/{progress.files_total}" if progress.files_total > 1 else ""
    size = f"{', ' if files else ': '}{human_bytes(progress.bytes_done)} of {human_bytes(progress.bytes_total)}" \
        if progress.bytes_total else ""
    return f"reading {progress.stage}{files}{size}…"
