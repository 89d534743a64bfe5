"""Numpy helpers shared by every layer (below ``model``: they import nothing of the package)."""

from __future__ import annotations

import numpy as np


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: the distinct values, ascending (NaNs as one), same dtype.

    Plain ``np.unique`` asks ``np.ma.is_masked``, which imports numpy.ma (~40 ms of start-up) the first time; asking
    for the counts takes numpy's sort path instead, whose result is the same array.
    """
    return np.unique(values, return_counts=True)[0]


def median(values: np.ndarray) -> np.floating:
    """``np.median(values)``, bit for bit.

    For floats ``np.median`` asks ``np.ma.isMaskedArray`` while checking for NaN, which imports numpy.ma (~40 ms of
    start-up); for a non-empty 1-d array without NaN this partitions and averages the middle as numpy does.
    """
    n = values.shape[0] if values.ndim == 1 else 0
    if n == 0 or (values.dtype.kind in "fc" and np.isnan(values).any()):
        return np.median(values)  # numpy's own NaN, warning and shape rules
    half = n // 2
    middle = slice(half - 1, half + 1) if n % 2 == 0 else slice(half, half + 1)
    return np.mean(np.partition(values, [middle.start, middle.stop - 1])[middle])
