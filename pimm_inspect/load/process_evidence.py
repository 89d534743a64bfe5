"""What says a process started: train.log segments that really trained, event files grouped by writer process,
Lightning logger folders (a CSVLogger file is one process; a first epoch above 0 is a restored checkpoint).

An attempt is a training process start. A ``=> Loading config ...`` line starts one only when training
follows it (pimm's final tester logs its own config line inside a finishing attempt), and two event
files written by the same process (same host and pid in their names: HF Trainer's post-training
evaluation opens a second one) belong to one attempt.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..model import Attempt, ScalarSeries


def _trained(seg: Any) -> bool:
    """True when a train.log segment shows a training process: Train lines, or a resume/restore."""
    return bool(seg.train_lines) or seg.is_resume or seg.resume_step is not None


def fold_evaluator_segments(train_log: Any) -> Any:
    """train.log with every segment that only evaluates, inside an attempt's final evaluation, folded into it.

    Attempt numbers of later segments, their events, series and tables shift down accordingly.
    """
    if train_log is None or len(train_log.segments) < 2:
        return train_log
    final_in = {e.attempt for e in train_log.events if e.kind == "final" and e.attempt is not None}
    renumber: dict[int, int] = {}
    merged: list[Any] = []
    originals: list[set[int]] = []
    for seg in train_log.segments:
        if merged and not _trained(seg) and originals[-1] & final_in:
            prev = merged[-1]
            renumber[seg.index] = prev.index
            originals[-1].add(seg.index)
            merged[-1] = dataclasses.replace(
                prev, end_line=seg.end_line, end_offset=seg.end_offset, ended_at=seg.ended_at or prev.ended_at,
                ended=seg.ended or prev.ended, end_detail=seg.end_detail or prev.end_detail,
                saved_steps=prev.saved_steps + tuple(s for s in seg.saved_steps if s not in prev.saved_steps),
                warnings=prev.warnings + seg.warnings)
            continue
        new_index = (merged[-1].index + 1) if merged else seg.index
        renumber[seg.index] = new_index
        merged.append(dataclasses.replace(seg, index=new_index) if new_index != seg.index else seg)
        originals.append({seg.index})
    if all(k == v for k, v in renumber.items()):
        return train_log

    def move(attempt: int | None) -> int | None:
        return renumber.get(attempt, attempt) if attempt is not None else None

    events = tuple(dataclasses.replace(e, attempt=move(e.attempt)) if e.attempt is not None else e
                   for e in train_log.events)
    series = _merge_series([dataclasses.replace(s, attempt=move(s.attempt)) for s in train_log.series])
    tables = tuple(dataclasses.replace(t, attempt=move(t.attempt)) for t in train_log.val_tables)
    return dataclasses.replace(train_log, segments=tuple(merged), events=events, series=series, val_tables=tables)


def _merge_series(series: list[ScalarSeries]) -> tuple[ScalarSeries, ...]:
    """One series per (tag, attempt) again after two segments became one attempt."""
    import numpy as np

    out: dict[tuple[str, int | None, str], ScalarSeries] = {}
    for s in series:
        key = (s.tag, s.attempt, s.source)
        old = out.get(key)
        if old is None:
            out[key] = s
        else:
            out[key] = dataclasses.replace(old, steps=np.concatenate([old.steps, s.steps]),
                                           values=np.concatenate([old.values, s.values]),
                                           wall_times_s=np.concatenate([old.wall_times_s, s.wall_times_s]))
    return tuple(out.values())


def group_by_process(tb_files: list[tuple[str, Any, Any]]) -> list[list[tuple[str, Any, Any]]]:
    """Event files in process-start order, those of one writer process (host and pid in the name) together.

    Files without a pid in their name (tensorboardX, renamed copies) are each their own process.
    """
    groups: list[list[tuple[str, Any, Any]]] = []
    by_process: dict[tuple[str, int], int] = {}
    for item in tb_files:
        parsed = item[1]
        key = (parsed.host, parsed.pid) if parsed is not None and parsed.pid is not None else None
        if key is not None and key in by_process:
            groups[by_process[key]].append(item)
            continue
        if key is not None:
            by_process[key] = len(groups)
        groups.append([item])
    return groups


def epoch_axis_tags(train_log: Any, series: list[ScalarSeries]) -> set[str]:
    """pimm ``train/*`` tags logged at an epoch number (E0, and E1 before 2026-06), not at a global step.

    Such a tag's steps never exceed the number of epochs while the run's global steps do; they must not
    define where an attempt started or stopped.
    """
    if train_log is None or not train_log.segments:
        return set()
    epochs = max((seg.max_epoch or 0) for seg in train_log.segments)
    last_g = max((seg.last_step or 0) for seg in train_log.segments)
    if not epochs or last_g <= epochs:
        return set()
    tags: dict[str, bool] = {}
    for s in series:
        if not s.tag.startswith("train/") or not len(s) or s.source == "train.log":
            continue
        last = s.last_step
        assert last is not None  # the series is not empty
        tags[s.tag] = tags.get(s.tag, True) and last <= epochs
    return {tag for tag, on_epochs in tags.items() if on_epochs}


def lightning_restore_step(series: list[ScalarSeries], sources: set[str]) -> int | None:
    """The last step a Lightning logger's Trainer restored from a checkpoint, or None when it started at epoch 0.

    Lightning counts epochs from 0 and logs ``epoch`` beside every metric row; a Trainer starts at a later epoch only
    when ``fit(ckpt_path=...)`` restored one. Its first ``epoch`` point (lowest step, in ``sources``) is then the
    first step it trained: the one before it is the restore point (TensorBoardLogger's ``hp_metric`` placeholder at
    step 0 says nothing). Only for a Lightning logger's files (its folder holds ``hparams.yaml``): other writers may
    count epochs from 1.
    """
    for s in series:
        if s.tag == "epoch" and s.source in sources and len(s):
            first = int(s.steps.argmin())  # the lowest step; the first such row in file order
            return int(s.steps[first]) - 1 if s.values[first] > 0 else None
    return None


def csv_attempts(csv_metrics: list[tuple[str, Any]]) -> list[Attempt]:
    """A CSVLogger folder is one logger version: one ``Trainer`` (one process start) wrote its ``metrics.csv``,
    resumed when its first ``epoch`` is above 0. The file has no clock, so the attempt has no start time."""
    rel_path, result = csv_metrics[0]
    steps = [s for s in result.series.values() if len(s)]
    firsts = [s.first_step for s in steps if s.first_step is not None]
    lasts = [s.last_step for s in steps if s.last_step is not None]
    restored = lightning_restore_step(steps, {rel_path})
    return [Attempt(index=1, started_at=None, first_step=min(firsts, default=None), last_step=max(lasts, default=None),
                    origin="fresh" if restored is None else "resume", restore_step=restored, sources=(rel_path,))]


RAN_AT_ONCE_S = 60.0
"""How much longer than the next attempt's first record an attempt must have written for the two to have run at once
(a margin over clock skew between the hosts of a requeue)."""


def ran_alongside(att: Attempt, later: int) -> Attempt:
    """``att`` wrote its files after attempt ``later`` began (its writer's clock says so): the two ran at once (two
    launches into one folder), so the later one did not end it. It stopped without an end marker, not killed."""
    return dataclasses.replace(att, ended="stopped", end_detail=(
        f"log stops without an end marker; it was still writing after attempt {later} started (the two ran at once)"))
