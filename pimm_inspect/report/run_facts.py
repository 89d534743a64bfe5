"""Small facts about a run that more than one output shows (``ls`` text and JSON, ``show``), computed in one place."""

from __future__ import annotations

import re

from ..analysis.summary import summary_of
from ..model import Attempt, Run

_LOG_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[,.](\d{1,6}))?$")
"""train.log's ``2026-07-19 15:00:09,501`` (and the UTC ``2026-07-19 15:00:09`` built from wall times)."""


def last_step(run: Run) -> int | None:
    """The run's last step, by the one rule of ``analysis.summary`` (also the UI's runs table)."""
    return summary_of(run).last_step


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
