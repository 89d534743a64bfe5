"""The one stale rule: an event file written before its run was created belongs to an earlier run in the folder.

``EventFileFacts.stale`` (``load.evidence``) and the attempt matching of ``load.attempts`` both ask ``is_stale``;
analysis (``artifacts.stale``, the row facts) and every front end read ``EventFileFacts.stale``, never re-judge it.
"""

from __future__ import annotations

STALE_MARGIN_S = 300.0
"""An event file whose first record is this much older than the run's creation belongs to an earlier run (clocks of
two machines, and the time between a launch and its first record, differ by less)."""


def is_stale(first_wall_time_s: float | None, created_s: float | None) -> bool:
    """True when a file whose first record is at ``first_wall_time_s`` predates the run created at ``created_s`` by
    more than ``STALE_MARGIN_S`` (False when either is unknown)."""
    return created_s is not None and first_wall_time_s is not None and first_wall_time_s < created_s - STALE_MARGIN_S
