"""Derived row facts every front end shows (``ls``, ``show``, the runs table): one rule each, computed once.

``analyze`` stores them on ``Run.summary``; the runs table keeps that summary when it drops a run's series.
"""

from __future__ import annotations

import math

import numpy as np

from ..arrays import value_range
from ..evidence import RunRow, RunSummary
from ..load.column_ranges import ColumnRanges
from ..model import CheckpointInfo, Run, Severity
from ._facts import stale_event_files
from .configs import flatten_config, query_config
from .curves import SMALL_POINTS
from .lost_compute import lost_totals
from .metric_summary import metric_summaries
from .secrets import mask_text, mask_value


def last_step(run: Run) -> int | None:
    """Largest step the run reached: over its attempts, else over its series; a stale file never counts."""
    steps = [a.last_step for a in run.attempts if a.last_step is not None]
    if steps:
        return max(steps)
    stale = stale_event_files(run)
    ranges = ColumnRanges()  # each step column scanned once (the tags of a train.log share theirs)
    return max((span[1] for s in run.series if s.source not in stale and (span := ranges.steps(s)) is not None),
               default=None)


def last_logged_s(run: Run) -> float | None:
    """Unix time of the newest point any series logged (the run's own clock, not file mtimes)."""
    stale = stale_event_files(run)
    latest = None
    seen: set[int] = set()  # each time column scanned once (the tags of a train.log share theirs)
    for s in run.series:
        walls = s.wall_times_s
        if len(s) and s.source not in stale and id(walls) not in seen:  # the run holds every column: ids stay
            seen.add(id(walls))
            top = _finite_max(walls)
            if top is not None:
                latest = top if latest is None else max(latest, top)
    return latest


def _finite_max(values: np.ndarray) -> float | None:
    """The largest finite value (None without one), as numpy finds it: a few values in Python when every one is
    finite (their sum is) and the largest is not zero (which of 0.0 and -0.0 numpy returns is numpy's)."""
    if values.ndim == 1 and 0 < values.shape[0] <= SMALL_POINTS:
        items = values.tolist()
        total = sum(items)
        if total - total == 0:
            top = max(items)
            if top != 0:
                return float(top)
    finite = value_range(values, finite_only=True)
    return None if finite is None else float(finite[1])


def best_metric_fact(run: Run) -> tuple[str | None, float | None]:
    """(name, value) of the best selection metric the run reached: train.log's last ``Best validation`` record,
    else the Trainer state's ``best_metric`` (named by ``metric_for_best_model``), else the highest finite one a checkpoint stores; (None, None) when
    unknown."""
    if run.train_log is not None and run.train_log.best:
        best = run.train_log.best[-1]
        return best.name, best.value
    if run.hf is not None and run.hf.best_metric is not None:
        return run.hf.best_metric_name, run.hf.best_metric
    values = [ck.best_metric_value for ck in run.checkpoints
              if ck.best_metric_value is not None and math.isfinite(ck.best_metric_value)]
    return (None, max(values)) if values else (None, None)


def best_metric(run: Run) -> str:
    """The best selection metric the run reached, e.g. ``mIoU 0.6123`` ('-' when unknown)."""
    name, value = best_metric_fact(run)
    if value is None:
        return "-"
    return f"{name} {value:.4g}" if name is not None else f"{value:.4g}"


def summarize(run: Run) -> RunSummary:
    """The run's derived row facts."""
    name, value = best_metric_fact(run)
    lost = lost_totals(run)
    return RunSummary(last_step=last_step(run), last_logged_s=last_logged_s(run), best_metric=best_metric(run),
                      best_metric_name=name, best_metric_value=value, lost_steps=lost.steps, lost_wall_s=lost.wall_s,
                      lost_gpu_hours=lost.gpu_hours, failed_requeues=lost.failed_requeues)


def run_row(run: Run) -> RunRow:
    """The run's ``ls`` line: identity, status, counts and summary of the analysed run."""
    counts = {severity: 0 for severity in Severity}
    for f in run.findings:
        counts[f.severity] += 1
    top = ""
    if run.findings:
        worst = max(f.severity for f in run.findings)
        top = mask_text(next(f for f in run.findings if f.severity == worst).message)
    command = run.provenance.launch_command or run.provenance.command
    config = query_config(run)
    return RunRow(root=run.root, name=run.name, kind=run.kind, era=run.era, status=run.status,
                  attempts=len(run.attempts), wandb_run_ids=tuple(run.wandb.run_ids), errors=counts[Severity.ERROR],
                  warnings=counts[Severity.WARNING], infos=counts[Severity.INFO], summary=summary_of(run),
                  top_finding=top, findings=tuple(run.findings), attempt_facts=tuple(run.attempts),
                  command=mask_text(command) if command else None,
                  config=tuple(flatten_config(mask_value(config.data)).items()) if config is not None else (),
                  metrics=metric_summaries(run))


def summary_of(run: Run) -> RunSummary:
    """The summary ``analyze`` stored, or one computed now for a run that was not analysed."""
    return run.summary if run.summary is not None else summarize(run)


def expected_cursor(ck: CheckpointInfo) -> int | None:
    """The W&B ``resume_step`` an E2 checkpoint should carry (global step + step offset + 1), or None."""
    if ck.wandb_cursor_key != "resume_step":
        return None
    step = ck.wandb_checkpoint_global_step if ck.wandb_checkpoint_global_step is not None else ck.global_step
    return None if step is None else step + (ck.wandb_step_offset or 0) + 1


POLICY_HERE = {
    "all": "every copy is drawn, the later attempt on top",
    "newest": "showing the newest copy",
    "oldest": "showing the oldest copy",
}
"""What the view itself shows for a replayed step under each overlap policy."""

NOTE_RANGES = 6
"""Replayed ranges the note names one by one; the rest are counted."""


def policy_note(run: Run, policy: str = "all") -> str:
    """One plain sentence per view: which steps exist more than once (per range: how many copies, which attempts),
    what this view shows of them, and what TensorBoard and W&B show.

    Rendered from ``Run.replayed`` and the ``steps.replayed`` findings' structured ``views``, never from prose.
    """
    from .replays import describe

    if not run.replayed:
        return "No step was written twice: every policy shows the same curve."
    ranges = "; ".join(describe(r) for r in run.replayed[:NOTE_RANGES])
    if len(run.replayed) > NOTE_RANGES:
        ranges += f"; and {len(run.replayed) - NOTE_RANGES} more ranges"
    parts = [f"Steps written more than once: {ranges}; {POLICY_HERE.get(policy, POLICY_HERE['all'])}."]
    seen: dict[str, str] = {}
    for finding in run.findings:
        if finding.code == "steps.replayed":
            for viewer, shows in finding.views:
                seen.setdefault(viewer, shows)
    parts += [f"{viewer}: {shows}." for viewer, shows in seen.items()]
    return mask_text(" ".join(parts))


def restored_by(run: Run) -> dict[str, tuple[tuple[int, int | None], ...]]:
    """Per checkpoint path: the (attempt, restore step) of every attempt that restarted from it, oldest first."""
    out: dict[str, list[tuple[int, int | None]]] = {}
    for a in run.attempts:
        if a.restored_checkpoint:
            out.setdefault(a.restored_checkpoint, []).append((a.index, a.restore_step))
    return {path: tuple(items) for path, items in out.items()}


def restored_text(items: tuple[tuple[int, int | None], ...]) -> str:
    """``#2 #3 @50`` (one restore step for all), else ``#2 @50, #3 @60``; empty without restores."""
    steps = {step for _a, step in items}
    if len(steps) == 1:
        (step,) = steps
        return " ".join(f"#{a}" for a, _s in items) + (f" @{step}" if step is not None else "")
    return ", ".join(f"#{a}" + (f" @{step}" if step is not None else "") for a, step in items)
