"""Series of a few points are worked out in Python (numpy's per-call cost dominates them): every such path gives
exactly what its numpy path gives, floats bit for bit (signed zeros, NaN, infinities, float32 columns included)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pimm_inspect import arrays
from pimm_inspect.analysis import checks_sources, metric_summary, replay_copies
from pimm_inspect.analysis.curves import SMALL_POINTS, merge, newest_points
from pimm_inspect.analysis.distinct import strictly_increasing
from pimm_inspect.model import ReplayedRange, ScalarSeries

AWKWARD = [0.0, -0.0, 1.5, -2.25, 3.0, 1e308, -1e308, 1e-310, math.nan, math.inf, -math.inf]


def _same_float(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    return type(a) is type(b) and a == b


def _numpy_range(values: np.ndarray, finite_only: bool) -> tuple[float, float] | None:
    got = (values.min().item(), values.max().item()) if values.size else None
    if finite_only and got is not None and values.dtype.kind == "f" and not (np.isfinite(got[0])
                                                                           and np.isfinite(got[1])):
        picked = values[np.isfinite(values)]
        got = (picked.min().item(), picked.max().item()) if picked.size else None
    return got


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint64, np.uint8, np.bool_])
def test_value_range_of_a_few_values_is_numpys(dtype: type) -> None:
    rng = random.Random(7)
    for _ in range(1500):
        size = rng.randint(0, arrays.SMALL + 3)
        if np.dtype(dtype).kind == "f":
            with np.errstate(over="ignore"):  # 1e308 as float32: inf
                values = np.array(rng.choices(AWKWARD + [5.0, 6.0, 7.5], k=size), dtype=np.float64).astype(dtype)
        else:
            values = np.array([rng.randint(0, 120) for _ in range(size)]).astype(dtype)
        values.flags.writeable = rng.random() < 0.5
        for finite_only in (False, True):
            got, want = arrays.value_range(values, finite_only), _numpy_range(values, finite_only)
            assert (got is None) == (want is None), (values, finite_only)
            if got is not None and want is not None:
                assert all(_same_float(g, w) for g, w in zip(got, want)), (values, finite_only, got, want)


def test_order_checks_of_a_few_values_are_numpys() -> None:
    rng = random.Random(11)
    for _ in range(3000):
        values = np.array(rng.choices([1.0, 2.0, 3.0, 3.0, math.nan, math.inf, -0.0, 0.0], k=rng.randint(0, 40)))
        assert arrays.non_decreasing(values) == (values.size < 2 or bool(np.all(values[1:] >= values[:-1])))
        assert strictly_increasing(values) == (values.shape[0] < 2 or bool(np.all(values[1:] > values[:-1])))
        steps = values[np.isfinite(values)].astype(np.int64)
        assert strictly_increasing(steps) == (steps.shape[0] < 2 or bool(np.all(steps[1:] > steps[:-1])))


def _group(rng: random.Random, tag: str = "loss", values_from: list[float] = AWKWARD) -> list[ScalarSeries]:
    """A tag's series from a few writers (attempts or none), steps repeated, going back, values awkward."""
    out = []
    for i in range(rng.randint(1, 4)):
        size = rng.randint(0, 12)
        start = rng.randint(0, 20)
        steps = np.array(sorted(rng.randint(start, start + 15) for _ in range(size)) if rng.random() < 0.7
                         else [rng.randint(0, 30) for _ in range(size)], dtype=rng.choice([np.int64, np.int32]))
        with np.errstate(over="ignore"):  # 1e308 as float32: inf
            values = np.array(rng.choices(values_from, k=size), dtype=np.float64).astype(rng.choice([np.float64,
                                                                                                  np.float32]))
        attempt = rng.choice([None, 1, 2, 3])
        out.append(ScalarSeries(tag, steps, values, np.full(size, 1e9), f"file{i}", attempt, "tb_events"))
    return out


def test_newest_points_are_merge_newest() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        group = _group(rng)
        few = newest_points(group)
        merged = merge(group, "newest")[0]
        assert few is not None
        assert list(sorted(few)) == merged.steps.tolist()
        assert all(_same_float(few[s], v) for s, v in zip(merged.steps.tolist(), merged.values.tolist()))
    big = [ScalarSeries("t", np.arange(SMALL_POINTS + 1), np.zeros(SMALL_POINTS + 1), np.zeros(SMALL_POINTS + 1), "f")]
    assert newest_points(big) is None  # many points: numpy's merge


def test_metric_summary_of_a_few_points_is_the_numpy_one() -> None:
    rng = random.Random(5)
    fast = []
    for _ in range(1500):
        group = [s for s in _group(rng) if len(s)]
        if group:
            fast.append((group, metric_summary._few(group)))
    checked = 0
    for group, few in fast:
        if few is None:
            continue  # a signed zero at an end: numpy answers
        kind = group[0].source_kind or "tb_events"
        rows = metric_summary.select_rows("loss", kind, group, "newest")
        finite = np.isfinite(rows.values)
        low = float(np.min(rows.values, where=finite, initial=np.inf)) if finite.any() else None
        high = float(np.max(rows.values, where=finite, initial=-np.inf)) if finite.any() else None
        want = (int(rows.steps[-1]), float(rows.values[-1]), low, high)
        assert few[0] == want[0] and all(_same_float(a, b) for a, b in zip(few[1:], want[1:])), (group, few, want)
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("kinds", [("tb_events", "train_log"), ("tb_events", "wandb")])
def test_sources_agree_in_python_exactly_when_compare_finds_nothing(kinds: tuple[str, str]) -> None:
    rng = random.Random(9)
    close = [1.0, 1.00005, 1.0001, 2.0, 2.0000001, math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308]
    seen = {True: 0, False: 0}
    for _ in range(3000):
        tag = rng.choice(["train/loss", "params/lr"])
        left, right = _group(rng, tag, close), _group(rng, tag, close)
        left, right = [s for s in left if len(s)], [s for s in right if len(s)]
        if not left or not right:
            continue
        few_left, few_right = newest_points(left), newest_points(right)
        assert few_left is not None and few_right is not None
        agree = checks_sources._agree(tag, kinds, few_left, few_right)
        finding = checks_sources._compare(tag, kinds, checks_sources._newest(left), checks_sources._newest(right),
                                          {kinds[0]: left, kinds[1]: right})
        assert agree == (finding is None), (left, right)
        seen[agree] += 1
    assert seen[True] > 100 and seen[False] > 100


def test_copy_spreads_of_a_few_points_are_the_numpy_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(13)
    cases = []
    for _ in range(1500):
        by_writer: replay_copies.Writers = {}
        for tag in ("loss", "acc", "lr")[:rng.randint(1, 3)]:
            for s in _group(rng, tag, [1.0, 1.25, 2.0, 3.5, -4.0, math.nan, math.inf, -math.inf, 0.0, 1e308, -1e308]):
                by_writer.setdefault(s.attempt if s.attempt is not None else s.source, []).append(s)
        lo = rng.randint(0, 20)
        attempts = tuple(sorted(w for w in by_writer if isinstance(w, int)))
        paths = tuple(sorted(w for w in by_writer if isinstance(w, str)))
        r = ReplayedRange(lo, lo + rng.randint(0, 15), 2, attempts, paths)
        with np.errstate(over="ignore"):  # 1e308 - -1e308: an infinite spread, left out
            cases.append((by_writer, r, replay_copies.copy_spreads(by_writer, r)))
    monkeypatch.setattr(replay_copies, "_few_spreads", lambda _by_writer, _r: None)
    answered = 0
    for by_writer, r, fast in cases:
        with np.errstate(over="ignore"):  # 1e308 - -1e308: an infinite spread, left out
            slow = replay_copies.copy_spreads(by_writer, r)
        assert [(t.tag, t.held, t.first_held, t.last_held) for t in fast] == \
            [(t.tag, t.held, t.first_held, t.last_held) for t in slow], (by_writer, r)
        assert all(_same_float(a.spread, b.spread) for a, b in zip(fast, slow)), (by_writer, r, fast, slow)
        answered += bool(slow)
    assert answered > 300


def test_copy_spreads_of_a_requeued_run_are_worked_out_in_python_as_numpy_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A requeued run's ranges span many short series (more points than ``SMALL_POINTS`` in all, a few dozen each):
    the Python path answers them (``POINTS_PER_SERIES``), with numpy's figures."""
    from pathlib import Path

    from pimm_inspect.analysis.replays import compute_replayed, drawn_series
    from pimm_inspect.load.assemble import load_run

    run = load_run(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_requeued_twice")
    by_writer = replay_copies.writers_of(drawn_series(run))
    ranges = compute_replayed(run)
    assert ranges
    fast = [replay_copies._few_spreads(by_writer, r) for r in ranges]
    assert all(spreads is not None for spreads in fast)
    assert max(sum(len(s) for w in (*r.attempts, *r.paths) for s in by_writer.get(w, ())) for r in ranges) > SMALL_POINTS
    monkeypatch.setattr(replay_copies, "_few_spreads", lambda _by_writer, _r: None)
    slow = [replay_copies.copy_spreads(by_writer, r) for r in ranges]
    assert [[(t.tag, t.held, t.first_held, t.last_held) for t in spreads or []] for spreads in fast] == \
        [[(t.tag, t.held, t.first_held, t.last_held) for t in spreads] for spreads in slow]
    assert all(_same_float(a.spread, b.spread) for f, sl in zip(fast, slow) for a, b in zip(f or [], sl))
    assert any(t.spread > 0 for spreads in slow for t in spreads)  # copies that differ: a figure worth checking


def test_non_finite_values_of_a_few_points_are_found_as_numpy_finds_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from pimm_inspect.analysis import checks_run
    from pimm_inspect.model import Run, SourceFile

    rng = random.Random(23)
    runs = []
    for _ in range(400):
        series = tuple(_group(rng, rng.choice(["loss", "lr"]), AWKWARD + [1.0, 2.0, 0.5] * 4))
        runs.append(Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="finished", series=series,
                        sources=tuple(SourceFile(s.source, "tb_events", 1, 0.0) for s in series)))
    fast = [checks_run.check_non_finite(run) for run in runs]
    monkeypatch.setattr(checks_run, "SMALL_POINTS", 0)  # numpy for every series
    slow = [checks_run.check_non_finite(run) for run in runs]
    assert fast == slow
    assert sum(bool(found) for found in slow) > 100 and sum(not found for found in slow) > 50


def test_some_finite_time_of_a_few_points_is_numpys() -> None:
    from pimm_inspect.load.attempt_context import _some_finite

    rng = random.Random(29)
    seen = {True: 0, False: 0}
    for _ in range(3000):
        with np.errstate(over="ignore"):  # 1e308 as float32: inf
            values = np.array(rng.choices(AWKWARD + [1.7e9] * 3, k=rng.randint(1, 40)),
                              dtype=rng.choice([np.float64, np.float32]))
        if rng.random() < 0.3:
            values[:] = rng.choice([math.nan, math.inf, -math.inf])
        want = bool(np.isfinite(values).any())
        assert _some_finite(values) is want, values
        seen[want] += 1
    assert min(seen.values()) > 300


def test_last_logged_time_of_a_few_points_is_numpys() -> None:
    from pimm_inspect.analysis.summary import _finite_max

    rng = random.Random(31)
    answered = 0
    for _ in range(3000):
        with np.errstate(over="ignore"):  # 1e308 as float32: inf
            values = np.array(rng.choices(AWKWARD + [1.7e9, 1.7e9 + 0.5, -3.0], k=rng.randint(1, 40)),
                              dtype=rng.choice([np.float64, np.float32]))
        finite = values[np.isfinite(values)]
        want = float(finite.max()) if finite.size else None
        got = _finite_max(values)
        assert _same_float(got, want) if want is not None else got is None, (values, got, want)
        answered += want is not None
    assert answered > 2000


def test_an_analysed_run_without_replays_is_not_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from pimm_inspect import load_run
    from pimm_inspect.analysis import analyze, checks_replayed, replays

    run = load_run(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "e2_clean")
    calls: list[int] = []
    real = replays.written_ranges  # what compute_replayed calls, wherever it is called from
    monkeypatch.setattr(replays, "written_ranges", lambda series: calls.append(1) or real(series))
    analysed = analyze(run)
    assert analysed.replayed == () and calls == [1]  # once by analyze; check_replayed took its answer
    assert [f for f in checks_replayed.check_replayed(run) if f.code == "steps.replayed"] == [] and calls == [1]
    # a check never looks for replays itself: the ranges come from analysis only


def test_median_gap_and_distinct_sorted_of_a_few_integers_are_numpys() -> None:
    from pimm_inspect.analysis.distinct import distinct_sorted

    rng = random.Random(17)
    for _ in range(3000):
        dtype = rng.choice([np.int64, np.int32, np.uint32, np.int16])
        top = 10**12 if dtype == np.int64 else 30000
        size = rng.randint(2, arrays.SMALL + 4)
        steps = np.array(sorted(rng.sample(range(rng.choice([size, 1000, top])), size)), dtype=dtype)
        got, want = arrays.median_gap(steps), np.median(np.diff(steps.astype(np.int64)))
        assert type(got) is np.float64 and got == want, (steps, got, want)
    for _ in range(3000):
        dtype = rng.choice([np.int64, np.int32, np.uint8, np.uint64])
        parts = [np.array([rng.randint(0, 60) for _ in range(rng.randint(0, 20))],
                          dtype=rng.choice([dtype, np.int64])) for _ in range(rng.randint(1, 4))]
        got = distinct_sorted(parts)
        want = np.unique(np.concatenate(parts)).astype(np.result_type(*parts))
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (parts, got, want)


def test_pair_keys_of_a_few_points_are_the_numpy_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from pimm_inspect.analysis import replay_pairs
    from pimm_inspect.analysis.distinct import distinct_sorted

    rng = random.Random(19)
    cases = []
    for _ in range(1500):
        by_tag: dict[str, dict[replay_copies.Writer, list[ScalarSeries]]] = {}
        series = [s for tag in ("loss", "acc", "lr")[:rng.randint(1, 3)] for s in _group(rng, tag)]
        for s in series:
            by_tag.setdefault(s.tag, {}).setdefault(s.attempt if s.attempt is not None else s.source, []).append(s)
        writers = sorted({w for groups in by_tag.values() for w in groups}, key=lambda w: (isinstance(w, str), str(w)))
        rank = {w: i for i, w in enumerate(writers)}
        logged = distinct_sorted([s.steps for s in series])
        cases.append((by_tag, rank, logged, replay_pairs.pair_keys(by_tag, rank, logged)))
    monkeypatch.setattr(replay_pairs, "_few_keys", lambda _by_tag, _rank, _logged: None)
    found = 0
    for by_tag, rank, logged, fast in cases:
        slow = replay_pairs.pair_keys(by_tag, rank, logged)
        assert fast.dtype == slow.dtype and fast.tolist() == slow.tolist(), (by_tag, fast, slow)
        found += bool(slow.shape[0])
    assert found > 300
