"""Which attempt wrote each checkpoint on disk, from the files: a complete checkpoint keeps its writer's step.

Three rules, the first that names exactly one attempt wins:

1. The checkpoint's best metric value (pimm stores it in every payload) equals the value one attempt logged at the
   checkpoint's step: ``model_best.pth.prev`` at step 80 holding 0.67189 is the attempt whose val/mIoU at 80 was
   0.6719, not the earlier one that logged 0.6695 there (its best was rotated away).
2. The last attempt that says it saved at that step (``Saving checkpoint at global step N``; for HF the attempt the
   reader found saved ``checkpoint-N``): the file on disk is the newest write.
3. The only attempt that trained that step.

Otherwise the writer is unknown (None).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from ..arrays import non_decreasing
from ..model import Attempt, CheckpointInfo, ScalarSeries

LOGGED_DIGITS = 5e-5
"""train.log prints metrics with 4 decimals: a value within this of the stored one is the same value."""
MAX_SERIES_PER_CHECKPOINT = 2000
"""Series looked into for rule 1 (the best metric's tags first): a run with 10k tags costs no more than this."""


def _span(att: Attempt) -> tuple[int, int] | None:
    """The steps an attempt trained: after its restore point (else from its first step) to its last."""
    if att.first_step is None or att.last_step is None:
        return None
    start = att.first_step if att.resume_step is None else min(att.first_step, att.resume_step + 1)
    return start, att.last_step


def _value_at(s: ScalarSeries, step: int) -> float | None:
    at = int(np.searchsorted(s.steps, step))
    if at < len(s) and int(s.steps[at]) == step:
        return float(s.values[at])
    return None


def _same(stored: float, logged: float) -> bool:
    return math.isclose(stored, logged, rel_tol=1e-6, abs_tol=1e-12) or abs(stored - logged) <= LOGGED_DIGITS


Candidate = tuple[ScalarSeries, int, int]
"""A series rule 1 looks into, with its first and last step (taken once per run, not once per checkpoint)."""


def _candidates(series: Sequence[ScalarSeries], names: frozenset[str]) -> list[Candidate]:
    """The series rule 1 looks into, once per run: attempts' series with sorted steps, the best metric's tags first."""
    ranked = sorted((s for s in series if s.attempt is not None and len(s)),
                    key=lambda s: s.tag.rsplit("/", 1)[-1] not in names)[:MAX_SERIES_PER_CHECKPOINT]
    # Sorted and not empty: the first step is the smallest, the last the largest.
    return [(s, int(s.steps[0]), int(s.steps[-1])) for s in ranked if non_decreasing(s.steps)]


def _by_value(ck: CheckpointInfo, candidates: Sequence[Candidate]) -> set[int]:
    """Attempts that logged the checkpoint's best metric value at its step (rule 1)."""
    value, step = ck.best_metric_value, ck.global_step
    if value is None or step is None or not math.isfinite(value):
        return set()
    found: set[int] = set()
    for s, first, last in candidates:
        assert s.attempt is not None
        if s.attempt in found or not first <= step <= last:
            continue
        got = _value_at(s, step)
        if got is not None and _same(value, got):
            found.add(s.attempt)
    return found


def writer_of(ck: CheckpointInfo, attempts: Sequence[Attempt], series: Sequence[ScalarSeries],
              best_names: frozenset[str] = frozenset(), candidates: Sequence[Candidate] | None = None
              ) -> int | None:
    """The attempt that wrote ``ck`` (the three rules above), or None when the files do not say.

    ``candidates``: ``_candidates(series, best_names)`` when the caller asks about many checkpoints of one run.
    """
    step = ck.global_step
    if step is None or not attempts:
        return None
    trained = [a.index for a in attempts if (span := _span(a)) is not None and span[0] <= step <= span[1]]
    if candidates is None:
        candidates = _candidates(series, best_names) if ck.best_metric_value is not None else []
    by_value = _by_value(ck, candidates) & set(trained or [a.index for a in attempts])
    if len(by_value) == 1:
        return by_value.pop()
    saved = [a.index for a in attempts if step in a.saved_steps]
    if saved:
        return saved[-1]
    return trained[0] if len(trained) == 1 else None


def checkpoint_writers(checkpoints: Sequence[CheckpointInfo], attempts: Sequence[Attempt],
                       series: Sequence[ScalarSeries], best_names: frozenset[str] = frozenset()
                       ) -> tuple[list[CheckpointInfo], list[Attempt]]:
    """Each checkpoint with ``saved_by_attempt`` set, and each attempt's ``saved_steps`` holding the steps of the
    complete checkpoints it wrote (a complete checkpoint keeps its step: it is never lost)."""
    out: list[CheckpointInfo] = []
    kept: dict[int, set[int]] = {}
    valued = any(ck.best_metric_value is not None for ck in checkpoints)
    candidates = _candidates(series, best_names) if valued and attempts else []
    for ck in checkpoints:
        # A Lightning checkpoint's global_step counts optimizer steps done, one past the step its loggers wrote last
        # (they log 0-based, before the count moves): its step is on no logged axis, so it names no writer here.
        mapped = ck.role != "tmp" and ck.format != "lightning"
        writer = writer_of(ck, attempts, series, best_names, candidates) if mapped else None
        out.append(dataclasses.replace(ck, saved_by_attempt=writer) if writer is not None else ck)
        if writer is not None and ck.complete and ck.global_step is not None:
            kept.setdefault(writer, set()).add(ck.global_step)
    done = [dataclasses.replace(a, saved_steps=tuple(sorted(set(a.saved_steps) | kept[a.index])))
            if kept.get(a.index, set()) - set(a.saved_steps) else a for a in attempts]
    return out, done
