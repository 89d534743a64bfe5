"""The template lines' columns written into buffers as they are read (``train_log._arena``) give the very result of
the reader before them (``tests/train_log_reference``), with each series a slice of its buffer (nothing joined).

Buffers are only used when the rest of a file is expected to hold ``MIN_ROWS`` Train: lines (a big log); here the
bound is lowered so generated logs of a few MB use them, with small blocks for many block boundaries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pimm_inspect.sources.train_log._ahead as A
import pimm_inspect.sources.train_log._arena as AR
import pimm_inspect.sources.train_log.reader as R
from pimm_inspect.sources.train_log._preview import ThinnedPoints
from tests.test_train_log_equivalence import _mixed_big_log, assert_same, both
from tests.train_log_reference import train_log as reference
from tests.train_log_support import write_big_log


@pytest.fixture
def buffers(monkeypatch) -> None:
    monkeypatch.setattr(AR, "MIN_ROWS", 1)
    monkeypatch.setattr(A, "MIN_BYTES", 1 << 60)  # one process: the buffers alone
    monkeypatch.setattr(R, "BLOCK_BYTES", 65536 + 4093)
    monkeypatch.setattr(reference, "BLOCK_BYTES", 65536 + 4093)


def _sharing(result) -> list[tuple[int, int]]:
    """For each series, the first series holding the very same steps and times arrays."""
    first_steps: dict[int, int] = {}
    first_walls: dict[int, int] = {}
    return [(first_steps.setdefault(id(s.steps), i), first_walls.setdefault(id(s.wall_times_s), i))
            for i, s in enumerate(result.series)]


def _in_buffers(result) -> int:
    """How many series are a slice of a column buffer with room after them."""
    return sum(1 for s in result.series if isinstance(s.values.base, np.ndarray) and s.values.base.size > len(s))


@pytest.mark.parametrize("seed", [1, 2])
def test_mixed_logs_with_buffers_read_the_same(tmp_path: Path, buffers, seed: int) -> None:
    path = tmp_path / "train.log"
    _mixed_big_log(path, seed)
    new, old = both(path)
    assert_same(new, old)
    assert _in_buffers(new) >= 7  # the template's tags of at least one attempt
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AR, "MIN_ROWS", 1 << 60)
        joined = R.read_train_log(path, "train.log")
    assert _sharing(new) == _sharing(joined)  # the same series share one steps / times array as without buffers
    last = old.segments[-1]
    assert_same(*both(path, start_offset=last.start_offset, first_attempt=last.index, first_line_no=last.start_line))


def test_buffers_that_fill_up_are_joined(tmp_path: Path, buffers, monkeypatch) -> None:
    monkeypatch.setattr(AR, "MARGIN", 0.05)  # every buffer far too small: more are made, the series joined by copying
    path = tmp_path / "train.log"
    _mixed_big_log(path, 3)
    assert_same(*both(path))


def test_a_grown_log_extends_in_the_buffers_room(tmp_path: Path, buffers) -> None:
    path = tmp_path / "train.log"
    write_big_log(path, 1_500_000, iters_per_epoch=997, mixed=True)
    first = R.read_train_log(path, "train.log")
    before = [(s.tag, s.values.copy()) for s in first.series]
    write_big_log(path, 500_000, iters_per_epoch=997, mixed=True, append=True)
    grown = R.read_train_log(path, "train.log", previous=first)
    assert grown.read_from_offset == first.end_offset
    assert_same(grown, reference.read_train_log(path, "train.log"))
    assert all(np.array_equal(s.values, v, equal_nan=True) for s, (_, v) in zip(first.series, before))
    loss = next(s for s in grown.series if s.tag == "train_batch/loss")
    assert loss.values.base is next(s for s in first.series if s.tag == "train_batch/loss").values.base  # in place


def test_a_preview_follows_a_widened_last_chunk() -> None:
    """The reader widens a tag's last chunk when the next goes on in its buffer: the preview takes the new points."""
    base = np.arange(100_000, dtype=np.int64)
    thinned = ThinnedPoints(budget=100)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    rng = np.random.default_rng(3)
    start = stop = 0
    for _ in range(200):
        stop = min(base.size, stop + int(rng.integers(1, 900)))
        chunk = (base[start:stop], base[start:stop] * 0.5, base[start:stop] + 1e9)
        if parts and rng.random() < 0.7:
            parts[-1] = chunk  # widened
        else:
            start = parts[-1][0][-1] + 1 if parts else 0
            chunk = (base[start:stop], base[start:stop] * 0.5, base[start:stop] + 1e9)
            parts.append(chunk)
        steps, values, _ = thinned.update(parts)
        k = 1
        while stop > k * 100:
            k *= 2
        assert np.array_equal(steps, np.arange(0, stop, k)) and np.array_equal(values, np.arange(0, stop, k) * 0.5)


def test_previews_while_reading_into_buffers_are_every_kth_point(tmp_path: Path, buffers, monkeypatch) -> None:
    """What the UI shows while a big log is read: each preview is every k-th point read so far, none missed where the
    reader widened a chunk."""
    from pimm_inspect.sources import read_progress

    monkeypatch.setattr(R, "SO_FAR_POINTS", 50)
    path = tmp_path / "train.log"
    write_big_log(path, 2_000_000, iters_per_epoch=997, mixed=True)
    previews: list[tuple] = []
    with read_progress.reporting(lambda _offset, so_far: previews.append(so_far()), block_bytes=40_000):
        final = R.read_train_log(path, "train.log")
    loss = next(s for s in final.series if s.tag == "train_batch/loss")
    seen = 0
    for series in previews:
        shown = next((s for s in series if s.tag == "train_batch/loss"), None)
        if shown is None:
            continue
        at = np.searchsorted(loss.steps, shown.steps)
        k = int(at[1] - at[0]) if at.size > 1 else 1
        assert at[0] == 0 and np.array_equal(at, np.arange(0, at.size * k, k)), at[:10]
        assert np.array_equal(shown.values, loss.values[at], equal_nan=True)
        seen = max(seen, int(at[-1]))
    assert len(previews) > 20 and seen > len(loss) // 2
