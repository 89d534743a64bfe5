"""Each scalar tag of a run in brief (last step and value, smallest and largest value): the ``MetricSummary`` a
``RunRow`` keeps, so ``ls --columns last:TAG`` and ``--sort best:TAG`` need no series once the row is cached.

One rule, here: the tag's preferred source kind (``scalar_rows``), each step's newest copy (a replayed step counts
as the attempt that wrote it last), stale event files left out (as for the row's last step). "Best" of a tag is
its minimum when its name says lower is better (``lower_is_better``), else its maximum.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..evidence import MetricSummary
from ..model import Run, ScalarSeries
from ._facts import stale_event_files
from .curves import newest_points
from .distinct import strictly_increasing
from .scalar_rows import select_rows, tag_groups

HIGHER_IS_BETTER = re.compile(r"(acc|iou|f1|precision|recall|auc|score|(?:^|[^a-z])map(?:[^a-z]|$)|bleu|rouge"
                              r"|reward|dice)", re.IGNORECASE)
"""A tag whose last part (after the last ``/``) contains one of these is better when higher, whatever its group."""
LOWER_IS_BETTER = re.compile(r"(loss|err|wer|cer|mse|mae|nll|perplexity|ppl|time|latency|_s$)", re.IGNORECASE)
"""Else a tag containing one of these anywhere (``train/loss``, ``time/batch_s``) is better when lower."""


def metric_summaries(run: Run) -> tuple[MetricSummary, ...]:
    """Every scalar tag of the run in brief, sorted by tag; tags without a point are left out."""
    out: list[MetricSummary] = []
    for tag, kind, group in tag_groups(run, (), False, frozenset(stale_event_files(run))):
        ordered = [s for s in group if len(s)]
        if not ordered:
            continue
        few = _few(ordered)
        if few is not None:
            out.append(MetricSummary(tag, *few))
            continue
        if len(ordered) == 1 and strictly_increasing(ordered[0].steps):  # the usual case: its points as they are
            steps, values = ordered[0].steps, ordered[0].values
        else:
            rows = select_rows(tag, kind, group, "newest")
            steps, values = rows.steps, rows.values
        finite = np.isfinite(values)
        some = bool(finite.any())
        low = float(np.min(values, where=finite, initial=np.inf)) if some else None
        high = float(np.max(values, where=finite, initial=-np.inf)) if some else None
        out.append(MetricSummary(tag, int(steps[-1]), float(values[-1]), low, high))
    return tuple(out)


def _few(series: list[ScalarSeries]) -> tuple[int, float, float | None, float | None] | None:
    """(last step, its value, smallest and largest finite value) of a tag's newest points, worked out in Python for
    a few points (``curves.newest_points``: what ``select_rows(..., "newest")`` keeps); None when numpy should, or
    when 0.0 is the smallest or largest value (which of 0.0 and -0.0 numpy's min and max return is theirs)."""
    newest = newest_points(series)
    if not newest:
        return None
    last = max(newest)
    finite = [v for v in newest.values() if math.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (None, None)
    if low == 0.0 or high == 0.0:
        return None
    return last, newest[last], low, high


def lower_is_better(tag: str) -> bool:
    """True when the tag's name says smaller values are better (a loss, an error rate, a time), unless its last
    part names a score (``val/mAcc``, ``loss_group/acc``)."""
    if HIGHER_IS_BETTER.search(tag.rsplit("/", 1)[-1]):
        return False
    return LOWER_IS_BETTER.search(tag) is not None


def best_value(metric: MetricSummary) -> float | None:
    """The tag's best value: its minimum when lower is better, else its maximum; None when no value is finite."""
    return metric.min if lower_is_better(metric.tag) else metric.max
