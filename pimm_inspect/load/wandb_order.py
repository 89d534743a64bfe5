"""The order of a run's W&B folders (its attempts), by the best start evidence each folder holds.

A folder's start is its run record's ``start_time`` (UTC seconds), else its ``files/wandb-metadata.json``
``startedAt`` (UTC, written by the same ``wandb.init``), else the zoned time of wandb-core's first line in
``logs/debug-internal.log`` (the stream it started for this folder, within a second of ``wandb.init``). A folder with neither (a process killed right after
``wandb.init``) still has its name's time stamp, ``run-YYYYMMDD_HHMMSS-``, written from the same start time in the
writer's local time: its UTC offset is learned from the folders that have both, so every folder gets a start on one
clock (an estimate: the offset of folders written across a daylight-saving change differs by an hour). A folder
with no evidence at all goes last.
"""

from __future__ import annotations

import calendar
import time
from datetime import datetime, timezone
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from .discover import WANDB_RUN_DIR

if TYPE_CHECKING:
    from ..sources.wandb.reader import WandbRunResult

_OFFSET_GRAIN_S = 900
"""Time zone offsets are whole quarter hours."""


def folder_stamp_s(rel_path: str) -> float | None:
    """The folder name's time stamp read as if it were UTC (None when the name has none)."""
    match = WANDB_RUN_DIR.match(PurePosixPath(rel_path).name)
    if match is None:
        return None
    try:
        return float(calendar.timegm(time.strptime(match["stamp"], "%Y%m%d_%H%M%S")))
    except (ValueError, OverflowError):
        return None


def start_estimates(runs: Sequence[WandbRunResult]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """Folder -> its start in seconds for ordering (run record, ``startedAt`` or wandb-core's first line, else the
    name's stamp on the learned clock, or as if UTC when no offset could be learned); and folder -> its start in UTC
    seconds where the files ground one (the same, without a stamp read on an unlearned clock)."""
    stamps = {r.rel_path: folder_stamp_s(r.rel_path) for r in runs}
    known = {r.rel_path: r.start_time_s or _metadata_start_s(r) or r.core_start_s for r in runs}
    diffs = [start - stamp for r in runs
             if (start := known[r.rel_path]) and (stamp := stamps[r.rel_path]) is not None]
    learned = bool(diffs)
    offset = 0.0
    if diffs:  # only W&B folders get here: statistics (fractions, decimal, random) stays off other start-ups
        import statistics

        offset = round(statistics.median(diffs) / _OFFSET_GRAIN_S) * _OFFSET_GRAIN_S
    out: dict[str, float | None] = {}
    utc: dict[str, float | None] = {}
    for r in runs:
        stamp = stamps[r.rel_path]
        out[r.rel_path] = known[r.rel_path] or (stamp + offset if stamp is not None else None)
        utc[r.rel_path] = out[r.rel_path] if known[r.rel_path] or learned else None
    return out, utc


def _metadata_start_s(run: WandbRunResult) -> float | None:
    """``startedAt`` of the folder's files/wandb-metadata.json in UTC seconds (W&B writes it in UTC, with a ``Z``
    from 0.17 on and without one before), or None."""
    text = run.provenance.created_at if run.provenance is not None else None
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def process_folders(runs: Sequence[WandbRunResult]) -> list[WandbRunResult]:
    """The folders that are process starts, in start order: a folder a second ``wandb.init`` left while the
    process's run was still active (``reinit_of_active``: W&B returned that run) is no start of its own."""
    return [r for r in ordered_folders(runs) if r.reinit_of_active is None]


def ordered_folders(runs: Sequence[WandbRunResult]) -> list[WandbRunResult]:
    """The folders in start order: attempt 1 first (ties by folder name, which W&B suffixes ``-1``, ``-2``)."""
    starts, _ = start_estimates(runs)
    return sorted(runs, key=lambda r: (starts[r.rel_path] is None, starts[r.rel_path] or 0.0,
                                       PurePosixPath(r.rel_path).name, r.rel_path))
