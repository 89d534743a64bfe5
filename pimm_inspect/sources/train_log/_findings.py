"""Findings of the train.log reader (re-exported by ``reader``)."""

from __future__ import annotations

import math

import numpy as np

from ...model import Finding, ScalarSeries, Severity
from .._common import file_finding
from ._blocks import MAX_LINE_BYTES


def long_lines_finding(rel_path: str, count: int, skipped: int) -> Finding:
    """``file.long-lines``: lines past ``MAX_LINE_BYTES`` were cut (pimm never writes such lines)."""
    return file_finding(
        "file.long-lines", rel_path,
        f"{rel_path}: {count} line(s) longer than {MAX_LINE_BYTES} bytes; {skipped} bytes past the first "
        f"{MAX_LINE_BYTES} of each were skipped, not read",
        explanation="pimm writes lines of a few hundred bytes; a longer line is damage or something else "
                    "writing into the log. Only the first MiB of each is parsed, so memory and time stay bounded.")


_ADD = np.add.reduce
_JOINED_CHECK_POINTS = 1 << 16
"""Up to this many points in all, the values are checked joined (one copy of them: a big log's would be its size)."""


def non_finite_findings(series: list[ScalarSeries], rel_path: str) -> list[Finding]:
    """One ``metrics.non-finite`` finding per tag whose logged values hit NaN or inf."""
    ranges: dict[str, list[int]] = {}
    if not series:
        return []
    if sum(s.values.shape[0] for s in series) <= _JOINED_CHECK_POINTS and bool(
            np.isfinite(np.concatenate([s.values for s in series])).all()):
        return []  # a small log's usual case, in one check of every value instead of one sum per series
    with np.errstate(over="ignore", invalid="ignore"):  # the sums may overflow, or add inf to -inf
        sums = [_ADD(s.values) for s in series]
    for s, total in zip(series, sums):
        if math.isfinite(total):  # a nan or inf anywhere makes the sum non-finite (one pass, no mask)
            continue
        bad = s.steps[~np.isfinite(s.values)]
        if bad.size:
            lo, hi, n = int(bad.min()), int(bad.max()), int(bad.size)
            cur = ranges.setdefault(s.tag, [lo, hi, 0])
            cur[0], cur[1], cur[2] = min(cur[0], lo), max(cur[1], hi), cur[2] + n
    return [Finding("metrics.non-finite", Severity.WARNING,
                    f"{tag} is nan/inf at {n} logged step(s) in {rel_path}, steps {lo}-{hi}",
                    paths=(rel_path,), steps=(lo, hi),
                    explanation="The model produced non-finite values; check the learning rate, AMP "
                                "loss scaling and the input data around these steps.")
            for tag, (lo, hi, n) in ranges.items()]
