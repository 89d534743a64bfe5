"""Curve maths: overlap policies, replay detection, EMA smoothing, min/max downsampling."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import unique_sorted
from ..model import Run, ScalarSeries, make_series
from .distinct import strictly_increasing

SOURCE_PRIORITY = ("tb_events", "wandb", "hf_trainer", "lightning_csv", "train_log")
"""Preferred origin of a tag's points: the metric writer first, the text log last."""


def source_kind(run: Run, series: ScalarSeries) -> str:
    """The reader kind that produced a series (set by the loader; else from the run's sources)."""
    if series.source_kind:
        return series.source_kind
    return next((src.kind for src in run.sources if src.path == series.source), "train_log")


def preferred_series(run: Run, tag: str) -> list[ScalarSeries]:
    """A tag's series from its preferred source kind (metric writer before train.log)."""
    by_kind: dict[str, list[ScalarSeries]] = {}
    for s in run.series_for(tag):
        by_kind.setdefault(source_kind(run, s), []).append(s)
    for kind in SOURCE_PRIORITY:
        if kind in by_kind:
            return by_kind[kind]
    return next(iter(by_kind.values()), [])

POLICIES = ("all", "newest", "oldest")
"""all: every point, attempts as separate segments; newest: per step the latest writer wins; oldest: the first."""


def _order_key(s: ScalarSeries, index: int) -> tuple[int, int]:
    """Writer order: attempt first (None sorts by position), then position in the run."""
    return (s.attempt if s.attempt is not None else index, index)


def merge(series: list[ScalarSeries], policy: str = "all") -> list[ScalarSeries]:
    """Apply an overlap policy to one tag's series (from one source kind), ordered by writer.

    ``all`` returns the inputs unchanged (each a segment). ``newest``/``oldest`` return one
    series sorted by step in which each step appears once, taken from the latest/earliest
    writer; within one writer the last point logged for a step wins, as TensorBoard's fast
    loader does.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if policy == "all" or not series:
        return list(series)
    ordered = [s for _, s in sorted(((_order_key(s, i), s) for i, s in enumerate(series)), key=lambda t: t[0])]
    rank = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(ordered)])
    steps = np.concatenate([s.steps for s in ordered])
    values = np.concatenate([s.values for s in ordered])
    walls = np.concatenate([s.wall_times_s for s in ordered])
    position = np.arange(steps.shape[0], dtype=np.int64)
    # Sort by step, then by writer rank and position so the winner is last (newest) or first (oldest).
    order = np.lexsort((position, rank, steps))
    steps_sorted = steps[order]
    if policy == "newest":
        keep = np.ones(steps_sorted.shape[0], dtype=bool)
        keep[:-1] = steps_sorted[1:] != steps_sorted[:-1]
    else:
        keep = np.ones(steps_sorted.shape[0], dtype=bool)
        keep[1:] = steps_sorted[1:] != steps_sorted[:-1]
    chosen = order[keep]
    first = ordered[0]
    return [make_series(first.tag, steps[chosen], values[chosen], walls[chosen], first.source, None)]


SMALL_POINTS = 256
"""A tag whose series hold at most this many points together is merged in Python (``newest_points``): a handful of
numpy calls per tag cost more than looping over a few points (most tags of a run hold a few dozen)."""


def newest_points(series: list[ScalarSeries]) -> dict[int, float] | None:
    """``merge(series, "newest")`` of a few points as {step: value} (its steps are the sorted keys), in Python; None
    when numpy should do it: more than ``SMALL_POINTS`` points, steps that are not integers or values not floats."""
    if len(series) == 1:  # one writer (the usual case): its points in the order logged, the last copy winning
        (only,) = series
        if len(only) > SMALL_POINTS or only.steps.dtype.kind != "i" or only.values.dtype.kind != "f":
            return None
        return dict(zip(only.steps.tolist(), only.values.tolist()))
    if sum(len(s) for s in series) > SMALL_POINTS or any(
            s.steps.dtype.kind != "i" or s.values.dtype.kind != "f" for s in series):
        return None
    ordered = [s for _, s in sorted(((_order_key(s, i), s) for i, s in enumerate(series)), key=lambda t: t[0])]
    newest: dict[int, float] = {}
    for s in ordered:  # writer order, each in the order logged: the last copy of a step is the one merge keeps
        newest.update(zip(s.steps.tolist(), s.values.tolist()))
    return newest


@dataclass(frozen=True, slots=True)
class Overlap:
    """Steps written by two writers (files or attempts) of one tag."""

    tag: str
    first_step: int
    last_step: int
    count: int
    """Number of distinct overlapping steps."""
    older: str
    newer: str
    older_attempt: int | None
    newer_attempt: int | None
    max_abs_diff: float
    """Largest |newer - older| over the overlapping steps (NaN if no finite pair)."""


def overlaps(series: list[ScalarSeries]) -> list[Overlap]:
    """Pairwise step overlaps between the writers of one tag, in writer order."""
    ordered = [s for _, s in sorted(((_order_key(s, i), s) for i, s in enumerate(series)), key=lambda t: t[0])]
    increasing = [strictly_increasing(s.steps) for s in ordered]
    found: list[Overlap] = []
    for i, older in enumerate(ordered):
        if not len(older):
            continue
        for j, newer in enumerate(ordered[i + 1:], i + 1):
            if not len(newer):
                continue
            if increasing[i] and increasing[j]:  # each step once per writer (the usual case): no sort at all
                common, old_at, new_at = _common_steps(older.steps, newer.steps)
                if common.size == 0:
                    continue
                old_last, new_last = older.values[old_at], newer.values[new_at]
            else:
                common = np.intersect1d(older.steps, newer.steps, assume_unique=False, return_indices=True)[0]
                if common.size == 0:
                    continue
                # intersect1d gives the first occurrence; compare the last value each writer logged.
                old_last = _last_value_per_step(older, common)
                new_last = _last_value_per_step(newer, common)
            with np.errstate(invalid="ignore"):
                diff = np.abs(new_last - old_last)
            finite = diff[np.isfinite(diff)]
            found.append(Overlap(older.tag, int(common.min()), int(common.max()), int(common.size),
                                 older.source, newer.source, older.attempt, newer.attempt,
                                 float(finite.max()) if finite.size else float("nan")))
    return found


def _common_steps(older: np.ndarray, newer: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The steps in both strictly increasing arrays, and where each holds them: only the part of ``newer``
    inside ``older``'s range is looked up (a resume overlaps its predecessor by a few steps, not all of them)."""
    lo, hi = int(np.searchsorted(newer, older[0], side="left")), int(np.searchsorted(newer, older[-1], side="right"))
    candidates = newer[lo:hi]
    at = np.searchsorted(older, candidates)  # every candidate is <= older[-1]: a valid index
    hit = older[at] == candidates
    return candidates[hit], at[hit], lo + np.flatnonzero(hit)


def _last_value_per_step(s: ScalarSeries, steps: np.ndarray) -> np.ndarray:
    order = np.argsort(s.steps, kind="stable")
    sorted_steps = s.steps[order]
    idx = np.searchsorted(sorted_steps, steps, side="right") - 1
    return s.values[order][idx]


def within_duplicates(s: ScalarSeries, differing_only: bool = False) -> tuple[int, int, int] | None:
    """(first, last, count) of steps logged more than once inside one series, or None.

    With ``differing_only`` a step counts only when its copies disagree: a writer that logs the
    same value twice at one step (HF logs ``epoch`` with both train and eval rows) replays nothing.
    """
    if len(s) < 2 or strictly_increasing(s.steps):
        return None  # strictly increasing (the usual case): no step twice, and no sort needed to know it
    uniq, counts = np.unique(s.steps, return_counts=True)
    dup = uniq[counts > 1]
    if differing_only and dup.size:
        order = np.lexsort((s.values, s.steps))
        steps_sorted, values_sorted = s.steps[order], s.values[order]
        same_step = steps_sorted[1:] == steps_sorted[:-1]
        differs = same_step & ~((values_sorted[1:] == values_sorted[:-1]) |
                                (np.isnan(values_sorted[1:]) & np.isnan(values_sorted[:-1])))
        dup = unique_sorted(steps_sorted[1:][differs])
    if dup.size == 0:
        return None
    return int(dup.min()), int(dup.max()), int(dup.size)


def ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's debiased exponential moving average (weight in [0, 1)); NaN/inf are passed through.

    Non-finite points neither update the average nor count for the debiasing, as in TensorBoard.
    Vectorised in blocks: within a block the recurrence is a weighted cumulative sum, and the block
    length keeps ``weight ** -k`` far from overflow.
    """
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    if weight <= 0 or values.size == 0:
        return out
    weight = min(weight, 0.999)
    finite = np.isfinite(values)
    x = values[finite]
    if x.size == 0:
        return out
    block = int(max(1, min(1024, 12.0 / -np.log10(weight))))
    rows = -(-x.size // block)
    padded = np.zeros(rows * block)
    padded[:x.size] = x
    powers = weight ** np.arange(1, block + 1, dtype=np.float64)          # w^1 .. w^B
    inverse = weight ** -np.arange(0, block, dtype=np.float64)            # w^-0 .. w^-(B-1)
    # Each block from a zero state: L[b, i] = (1 - w) * sum_{k<=i} w^(i-k) x_k.
    local = np.cumsum(padded.reshape(rows, block) * inverse, axis=1) * (powers / weight) * (1 - weight)
    # The state entering each block is a short scalar recurrence over blocks.
    carry = np.empty(rows)
    state = 0.0
    decay = weight ** block
    ends = local[:, -1]
    for b in range(rows):
        carry[b] = state
        state = decay * state + ends[b]
    smoothed = (local + carry[:, None] * powers).reshape(-1)[:x.size]
    debias = 1 - weight ** np.arange(1, x.size + 1, dtype=np.float64)
    out[finite] = smoothed / debias
    return out


def downsample_minmax(steps: np.ndarray, values: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the min and max of each of ``buckets`` equal-count buckets (spikes survive), in step order."""
    n = steps.shape[0]
    if buckets <= 0 or n <= 2 * buckets:
        return steps, values
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    picks = []
    first = 0
    while first < buckets:  # whole buckets, about _CHUNK points at a time: a few MB of scratch, not 6 copies
        last = min(buckets, max(first + 1, int(np.searchsorted(edges, edges[first] + _CHUNK, side="right")) - 1))
        base = int(edges[first])
        picks.append(_bucket_extremes(values[base:edges[last]], edges[first:last] - base) + base)
        first = last
    keep = unique_sorted(np.concatenate(picks))
    return steps[keep], values[keep]


_CHUNK = 1 << 16
"""Points per pass of ``downsample_minmax``: its scratch arrays stay a few MB for a curve of any length."""


def _bucket_extremes(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per bucket (starting at ``starts``, the last one ending with ``values``): the index of its first minimum,
    then of its first maximum, non-finite values never chosen over finite ones."""
    safe = np.where(np.isfinite(values), values, np.nan)
    filled_min = np.where(np.isnan(safe), np.inf, safe)
    filled_max = np.where(np.isnan(safe), -np.inf, safe)
    return np.concatenate([_segment_arg(filled_min, starts, np.minimum), _segment_arg(filled_max, starts, np.maximum)])


def _segment_arg(values: np.ndarray, starts: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    """Index of the extreme value within each segment starting at ``starts``."""
    extreme = ufunc.reduceat(values, starts)
    seg_id = np.repeat(np.arange(starts.shape[0]), np.diff(np.append(starts, values.shape[0])))
    hit = values == extreme[seg_id]
    # First hit per segment: positions where hit, take the minimum position per segment.
    positions = np.where(hit, np.arange(values.shape[0]), values.shape[0])
    return np.minimum.reduceat(positions, starts)
