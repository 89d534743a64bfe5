"""Numpy helpers shared by every layer (below ``model``: they import nothing of the package)."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any, Literal

import numpy as np


SMALL = 32
"""Arrays up to this many values are scanned in Python: two numpy reductions cost ~5 us each whatever the size, a
list of a few numbers a fraction of that (most series of a run hold a handful of points; a big one stays numpy's)."""


def non_decreasing(values: np.ndarray) -> bool:
    """True when each value is at least the one before it (fewer than two values: True); NaN anywhere: False."""
    if values.size <= SMALL and values.ndim == 1:
        items = values.tolist()  # a NaN compares False either way, as numpy's >= does
        return all(a <= b for a, b in zip(items, items[1:]))
    return values.size < 2 or bool(np.all(values[1:] >= values[:-1]))


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of ``values``, ascending, NaNs as one (what ``np.unique(values)`` returns), same dtype.

    Two reasons not to call ``np.unique``: plain ``np.unique`` asks ``np.ma.is_masked``, which imports numpy.ma (~40 ms
    of start-up) the first time; and its hash table takes seconds on 1M increasing integers (steps) where checking
    the order is linear (a stable sort, only when the values go back, merges increasing runs in one pass each).
    """
    flat = values.ravel()
    # Step and time columns are nearly always in order already: checking costs ~1 ms per million, sorting far more.
    ordered = flat if non_decreasing(flat) else np.sort(flat, kind="stable")
    keep = np.empty(ordered.shape, dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    if ordered.dtype.kind == "f" and ordered.size and np.isnan(ordered[-1]):
        nans = np.isnan(ordered)  # NaNs sort last and never equal each other: keep the first only
        keep[nans] = False
        keep[int(np.argmax(nans))] = True
    return ordered[keep]


def median(values: np.ndarray, overwrite: bool = False) -> np.floating:
    """``np.median(values)``, bit for bit; with ``overwrite`` the order of ``values`` (a temporary of the caller's) may
    change: it is partitioned in place instead of in a copy.

    For floats ``np.median`` asks ``np.ma.isMaskedArray`` while checking for NaN, which imports numpy.ma (~40 ms of
    start-up); for a non-empty 1-d array without NaN this partitions and averages the middle as numpy does.
    """
    n = values.shape[0] if values.ndim == 1 else 0
    if n == 0 or (values.dtype.kind in "fc" and np.isnan(values).any()):
        nan_median: np.floating = np.median(values)  # numpy's own NaN, warning and shape rules
        return nan_median
    half = n // 2
    middle = slice(half - 1, half + 1) if n % 2 == 0 else slice(half, half + 1)
    kth = [middle.start, middle.stop - 1]
    if overwrite and values.flags.writeable:
        values.partition(kth)
        mid: np.floating = np.mean(values[middle])
    else:
        mid = np.mean(np.partition(values, kth)[middle])
    return mid


_GAP_SLICE = 1 << 20
_GAP_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "int64")


def median_gap(values: np.ndarray) -> np.floating:
    """``np.median(np.diff(values))`` of a 1-d integer array (at least two values), bit for bit, with the differences
    held in the narrowest integer type that holds them, computed a slice at a time: a 5M-step column's int64
    differences were 40 MB more at the peak of an analysis."""
    if values.dtype.kind not in "iu" or values.dtype.itemsize > 8 or values.dtype == np.uint64:
        return median(np.diff(values), overwrite=True)
    if values.shape[0] <= SMALL and values.dtype == np.int64:  # a few steps: in Python, as numpy works them out
        items = values.tolist()
        few = sorted(b - a for a, b in zip(items, items[1:]))
        if few[0] < -(1 << 63) or few[-1] >= 1 << 63:
            return median(np.diff(values), overwrite=True)  # a difference that wraps around in int64: numpy's
        half = len(few) // 2
        return np.float64(few[half]) if len(few) % 2 else np.float64(
            (float(few[half - 1]) + float(few[half])) / 2.0)  # np.mean of the middle two: a float64 sum, halved
    n = values.shape[0] - 1
    lo = hi = 0
    for start in range(0, n, _GAP_SLICE):
        part = np.diff(values[start:start + _GAP_SLICE + 1])
        lo, hi = (int(part.min()), int(part.max())) if start == 0 else (min(lo, int(part.min())),
                                                                          max(hi, int(part.max())))
    dtype = next(np.dtype(t) for t in _GAP_TYPES if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    gaps = np.empty(n, dtype=dtype)
    for start in range(0, n, _GAP_SLICE):
        stop = min(n, start + _GAP_SLICE)
        np.subtract(values[start + 1:stop + 1], values[start:stop], out=gaps[start:stop], casting="unsafe")
    return median(gaps, overwrite=True)


_RANGES: dict[tuple[int, bool], tuple[weakref.ref[np.ndarray], tuple[float, float] | None]] = {}
"""(id of a read-only array, finite only) -> (the array, its range): the tags of one train.log share one step and one
time column, and every series asks for their ranges (attempt spans, first/last step, the last logged time)."""


def _forget(key: tuple[int, bool]) -> Callable[[weakref.ref[np.ndarray]], None]:
    def drop(_ref: weakref.ref[np.ndarray]) -> None:
        _RANGES.pop(key, None)
    return drop


def value_range(values: np.ndarray, finite_only: bool = False) -> tuple[float, float] | None:
    """(min, max) of ``values`` (only its finite ones with ``finite_only``), None when there is none; computed once per
    read-only array (a writable one may change, so it is computed each time)."""
    if 0 < values.size <= SMALL:
        small = _small_range(values)
        if small is not None:
            return small
    key = (id(values), finite_only)
    if not values.flags.writeable:
        hit = _RANGES.get(key)
        if hit is not None and hit[0]() is values:
            return hit[1]
    got = (values.min().item(), values.max().item()) if values.size else None
    if finite_only and got is not None and values.dtype.kind == "f" and not (np.isfinite(got[0])
                                                                           and np.isfinite(got[1])):
        picked = values[np.isfinite(values)]  # a NaN or inf among them: the finite ones only (a copy, rarely)
        got = (picked.min().item(), picked.max().item()) if picked.size else None
    if not values.flags.writeable:
        try:
            ref = weakref.ref(values, _forget(key))
        except TypeError:
            return got
        _RANGES[key] = (ref, got)
    return got


def _small_range(values: np.ndarray) -> tuple[float, float] | None:
    """(min, max) of a small non-empty array as numpy gives them, without numpy's reductions; None when numpy must
    answer: a NaN or an infinity among floats (its rules, ``finite_only`` too), a signed zero at either end (which of
    0.0 and -0.0 numpy returns), or another kind of value."""
    kind = values.dtype.kind
    if kind not in "iubf":
        return None
    items = values.ravel().tolist()
    lo, hi = min(items), max(items)
    if kind == "f":
        total = sum(items)  # NaN when a NaN (or both infinities) is among them
        if total != total or lo == 0.0 or hi == 0.0 or lo == -math.inf or hi == math.inf:
            return None
    return lo, hi


_malloc_trim: Callable[[int], Any] | Literal[False] | None = None  # False: not available


def release_freed_memory() -> None:
    """Give freed heap pages back to the OS (glibc ``malloc_trim``; elsewhere nothing).

    The train.log reader's per-block chunk arrays live in the malloc heap, the joined series (tens of MB) in fresh
    mappings: without a trim the freed chunk pages stay resident, and a 1 GB log peaked at 1.0 GB RSS instead of about
    0.6 GB. The disk cache trims after writing a big entry (its encoded tree and temporaries).
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes  # only for malloc_trim; absent or not glibc: skip

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)
