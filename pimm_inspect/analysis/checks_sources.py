"""Cross-source check: the same metric from two writers (train.log, TensorBoard, W&B, Trainer) must agree."""

from __future__ import annotations

import math

import numpy as np

from ..model import Finding, Run, ScalarSeries, Severity
from . import _facts
from .curves import merge, newest_points

_LOG_DECIMALS = {"params/lr": 5}
"""pimm prints Train: terms with %.4f and Lr with %.5f; the metric writers keep float32."""
_LABEL = {"train_log": "train.log", "tb_events": "TensorBoard", "wandb": "W&B history", "hf_trainer": "trainer_state.json",
          "lightning_csv": "metrics.csv"}


def _tolerance(tag: str, kinds: tuple[str, str], values: np.ndarray) -> np.ndarray:
    rel: np.ndarray = 2e-6 * np.abs(values)  # float32 storage in event files and W&B
    if "train_log" in kinds:
        return rel + 0.51 * 10.0 ** -_LOG_DECIMALS.get(tag, 4)
    return rel + 1e-9


def _newest(series: list[ScalarSeries]) -> ScalarSeries:
    return merge(series, "newest")[0]


def _agree(tag: str, kinds: tuple[str, str], left: dict[int, float], right: dict[int, float]) -> bool:
    """True when ``_compare`` of two sources' newest points (``curves.newest_points``) finds nothing, in Python with
    the same float arithmetic: at each common step both values are finite and within ``_tolerance``, or both not."""
    extra = 0.51 * 10.0 ** -_LOG_DECIMALS.get(tag, 4) if "train_log" in kinds else 1e-9
    for step in left.keys() & right.keys():
        lv, rv = left[step], right[step]
        finite = math.isfinite(lv)
        if finite != math.isfinite(rv) or (finite and abs(lv - rv) > 2e-6 * abs(lv) + extra):
            return False
    return True


def check_source_mismatch(run: Run) -> list[Finding]:
    """``metrics.source-mismatch``: a tag logged by two sources whose values disagree at common steps."""
    groups: dict[str, dict[str, list[ScalarSeries]]] = {}
    for s in run.series:
        if len(s):
            groups.setdefault(s.tag, {}).setdefault(s.source_kind or _facts.source_kind(run, s), []).append(s)
    findings = []
    for tag in sorted(tag for tag, by_kind in groups.items() if len(by_kind) > 1):  # a tag of one source: no pair
        kinds = sorted(groups[tag])
        for i, a in enumerate(kinds):
            for b in kinds[i + 1:]:
                few = [newest_points(groups[tag][k]) for k in (a, b)]
                if few[0] is not None and few[1] is not None and _agree(tag, (a, b), few[0], few[1]):
                    continue  # a few points that agree (the usual case): nothing to report, no arrays built
                finding = _compare(tag, (a, b), _newest(groups[tag][a]), _newest(groups[tag][b]), groups[tag])
                if finding:
                    findings.append(finding)
    return findings


def _compare(tag: str, kinds: tuple[str, str], left: ScalarSeries, right: ScalarSeries,
             by_kind: dict[str, list[ScalarSeries]]) -> Finding | None:
    common, li, ri = np.intersect1d(left.steps, right.steps, return_indices=True)
    if common.size == 0:
        return None
    lv, rv = left.values[li], right.values[ri]
    both_finite = np.isfinite(lv) & np.isfinite(rv)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_finite, np.abs(lv - rv), 0.0)
    bad = (diff > _tolerance(tag, kinds, np.where(both_finite, lv, 0.0))) | (np.isfinite(lv) != np.isfinite(rv))
    if not bad.any():
        return None
    worst = int(np.argmax(np.where(bad, diff, -1.0)))
    paths = tuple(sorted({s.source for k in kinds for s in by_kind[k]}))
    la, lb = _LABEL.get(kinds[0], kinds[0]), _LABEL.get(kinds[1], kinds[1])
    return Finding(
        "metrics.source-mismatch", Severity.WARNING,
        f"{tag}: {la} and {lb} disagree at {int(bad.sum())} of {common.size} common steps "
        f"(largest difference {diff[worst]:.6g} at step {int(common[worst])})",
        paths, (int(common[bad].min()), int(common[bad].max())),
        f"At step {int(common[worst])}, {la} has {lv[worst]:.6g} and {lb} has {rv[worst]:.6g} (newest copy per step "
        "in each source). Sources of one run should carry the same values; a difference means one of them holds "
        "another attempt's copy (an unpurged replay, a W&B history that kept the first copy), a stale file, or "
        "a different reduction of the metric.")
