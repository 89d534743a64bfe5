"""The one stale rule: an event file written before its run was created belongs to an earlier run in the folder.

``EventFileFacts.stale`` (``load.evidence``) and the attempt matching of ``load.attempts`` both ask ``is_stale``;
analysis (``artifacts.stale``, the row facts) and every front end read ``EventFileFacts.stale``, never re-judge it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import SourceFile

STALE_MARGIN_S = 300.0
"""An event file whose first record is this much older than the run's creation belongs to an earlier run (clocks of
two machines, and the time between a launch and its first record, differ by less)."""


def is_stale(first_wall_time_s: float | None, created_s: float | None) -> bool:
    """True when a file whose first record is at ``first_wall_time_s`` predates the run created at ``created_s`` by
    more than ``STALE_MARGIN_S`` (False when either is unknown)."""
    return created_s is not None and first_wall_time_s is not None and first_wall_time_s < created_s - STALE_MARGIN_S


WRITTEN_WHILE_TRAINING = ("train_log", "tb_events", "structured_log", "wandb", "slurm", "hf_trainer", "lightning_csv")
"""Source kinds a training process keeps appending to: their newest mtime is when the run last logged anything."""
QUIET_STATUSES = ("finished", "crashed")
"""A run that ended (with an end marker or a crash) is quiet, not stalled."""


def last_write_s(sources: Iterable[SourceFile]) -> float | None:
    """When the run last logged anything: the newest mtime of its files a training process appends to (None when it
    has none)."""
    return max((s.mtime_s for s in sources if s.kind in WRITTEN_WHILE_TRAINING and s.mtime_s > 0), default=None)


def silent_for_s(status: str, sources: Iterable[SourceFile], now: float) -> float | None:
    """How long a run that has not ended has logged nothing at ``now`` (``check --stalled-after``); None for a
    finished or crashed run and for a run with no log file. The one rule for "stalled for longer than D"."""
    if status in QUIET_STATUSES:
        return None
    last = last_write_s(sources)
    return None if last is None else max(0.0, now - last)
