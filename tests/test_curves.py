"""Curve maths: overlap policies, overlaps, EMA, min/max downsampling."""

import numpy as np
import pytest

from pimm_inspect.analysis.curves import downsample_minmax, ema, merge, overlaps, within_duplicates
from pimm_inspect.model import make_series


def _two_attempts():
    first = make_series("loss", np.arange(1, 76), np.full(75, 1.0), np.arange(75.0), "events.1", attempt=1)
    second = make_series("loss", np.arange(51, 101), np.full(50, 2.0), np.arange(100.0, 150.0), "events.2", attempt=2)
    return first, second


def test_policies_pick_newest_or_oldest_copy_per_step():
    first, second = _two_attempts()
    newest = merge([first, second], "newest")[0]
    oldest = merge([first, second], "oldest")[0]
    assert newest.steps.tolist() == list(range(1, 101))
    assert np.all(newest.values[:50] == 1.0) and np.all(newest.values[50:] == 2.0)
    assert np.all(oldest.values[:75] == 1.0) and np.all(oldest.values[75:] == 2.0)
    assert merge([second, first], "newest")[0].values[60] == 2.0  # order comes from attempts, not the list
    assert len(merge([first, second], "all")) == 2
    with pytest.raises(ValueError):
        merge([first], "latest")


def test_overlaps_report_range_and_max_difference():
    first, second = _two_attempts()
    (ov,) = overlaps([first, second])
    assert (ov.first_step, ov.last_step, ov.count) == (51, 75, 25)
    assert (ov.older, ov.newer, ov.older_attempt, ov.newer_attempt) == ("events.1", "events.2", 1, 2)
    assert ov.max_abs_diff == pytest.approx(1.0)
    assert overlaps([first, make_series("loss", [80, 90], [1, 1], None, "x", 2)]) == []


def test_within_duplicates():
    s = make_series("loss", [1, 2, 2, 3, 5, 5], [0] * 6, None, "f")
    assert within_duplicates(s) == (2, 5, 2)
    assert within_duplicates(make_series("loss", [1, 2, 3], [0] * 3, None, "f")) is None


def test_ema_matches_tensorboard_debiased_formula():
    values = np.array([1.0, 2.0, 3.0, np.nan, 4.0])
    out = ema(values, 0.5)
    # debiased: s1 = 0.5*1 / (1-0.5) = 1; s2 = (0.25 + 1) / 0.75
    assert out[0] == pytest.approx(1.0)
    assert out[1] == pytest.approx((0.5 * 0.5 + 0.5 * 2.0) / 0.75)
    assert np.isnan(out[3])
    assert ema(values, 0.0)[2] == 3.0


def test_downsample_keeps_spikes_and_order():
    steps = np.arange(1_000_000)
    values = np.zeros(1_000_000)
    values[123_456] = 50.0
    values[900_001] = -7.0
    x, y = downsample_minmax(steps, values, 500)
    assert x.size <= 1000
    assert 50.0 in y and -7.0 in y
    assert np.all(np.diff(x) > 0)
    small_x, small_y = downsample_minmax(steps[:10], values[:10], 500)
    assert small_x.size == 10


@pytest.mark.parametrize("weight", [0.05, 0.3, 0.6, 0.9, 0.99, 0.999])
def test_vectorised_ema_equals_sequential_definition(weight):
    rng = np.random.default_rng(7)
    values = rng.normal(size=3001) * 5 + 2
    values[[0, 17, 1500]] = np.nan
    values[99] = -np.inf
    np.testing.assert_allclose(ema(values, weight), _ema_sequential(values, weight), rtol=1e-9, atol=1e-9)


def _ema_sequential(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing, step by step: the definition the vectorised ``ema`` must equal."""
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    if weight <= 0:
        return out
    weight = min(weight, 0.999)
    last, n = 0.0, 0
    for i, v in enumerate(values):
        if np.isfinite(v):
            last = last * weight + (1 - weight) * v
            n += 1
            out[i] = last / (1 - weight ** n)
    return out
