"""The preview of a tag's points read so far (``train_log._preview``): every k-th point, kept up to date chunk by
chunk, the same as thinning everything at once."""

from __future__ import annotations

import numpy as np

from pimm_inspect.sources.train_log._preview import ThinnedPoints


def _chunk(start: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    steps = np.arange(start, start + size, dtype=np.int64)
    return steps, steps * 0.5, steps + 1e9


def test_updates_chunk_by_chunk_equal_one_thinning_of_everything():
    rng = np.random.default_rng(7)
    thinned = ThinnedPoints(budget=1000)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    count = 0
    for _ in range(300):
        for _ in range(int(rng.integers(0, 4))):  # several chunks between two previews, or none
            size = int(rng.integers(1, 700))
            parts.append(_chunk(count, size))
            count += size
        steps, values, walls = thinned.update(parts)
        if not count:
            assert steps.size == 0
            continue
        k = 1
        while count > k * 1000:
            k *= 2
        every = np.arange(0, count, k)  # every k-th point from the first, as if thinned in one go
        assert np.array_equal(steps, every) and np.array_equal(values, every * 0.5) and np.array_equal(walls, every + 1e9)
        assert 500 <= steps.size <= 1000 or count <= 1000
    assert count > 100_000  # the budget was doubled past many times


def test_kept_points_are_copies_and_a_new_list_starts_again():
    thinned = ThinnedPoints(budget=10)
    first = [_chunk(0, 5)]
    steps, _, _ = thinned.update(first)
    first[0][0][:] = -1  # the reader's chunk changes (it never does; the preview must not depend on it)
    assert np.array_equal(steps, np.arange(5))
    other = [_chunk(100, 3)]
    assert np.array_equal(thinned.update(other)[0], np.arange(100, 103))
