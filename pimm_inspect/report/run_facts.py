"""Small facts about a run that more than one output shows (``ls`` text and JSON, ``show``), computed in one place.

The lead is moving these into ``analysis`` as typed derived facts; until then ``ls``'s table and ``ls --json``
both call these, so they cannot disagree.
"""

from __future__ import annotations

import re

from ..model import Attempt, Run

_LOG_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,6}))?$")
"""train.log's ``2026-07-19 15:00:09,501`` (and the UTC ``2026-07-19 15:00:09`` built from wall times)."""


def last_step(run: Run) -> int | None:
    """The run's last step: the attempts' last step, else the series' (None when nothing was logged)."""
    steps = [a.last_step for a in run.attempts if a.last_step is not None]
    if not steps:
        steps = [s.last_step for s in run.series if len(s)]
    return max(steps) if steps else None


def started_at_iso(attempt: Attempt) -> str | None:
    """The attempt's start as ISO 8601: with ``+00:00`` when it is UTC, without an offset when it is train.log's
    local clock (the log records no zone); None when unknown or not a recognisable time."""
    if not attempt.started_at:
        return None
    match = _LOG_TIME.match(attempt.started_at.strip())
    if match is None:
        return None
    day, clock, fraction = match.groups()
    text = f"{day}T{clock}" + (f".{fraction}" if fraction else "")
    return text + "+00:00" if attempt.started_at_utc else text
