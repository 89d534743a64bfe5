"""The analysis over a big run stays bounded: monotone step columns take one pass (no ``np.unique``, no copies of
whole columns), and the fast paths give exactly what the simple forms give (property tests on random step
columns with resumes, rollbacks, repeats and gaps)."""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pimm_inspect
from pimm_inspect.analysis import checks_run, checks_steps
from pimm_inspect.analysis.distinct import distinct_sorted, strictly_increasing
from pimm_inspect.analysis.scalar_rows import POLICIES, row_counts, scalar_rows, select_rows
from pimm_inspect.evidence import RankLogFacts
from pimm_inspect.model import Attempt, Run, SourceFile, make_series
from pimm_inspect.report.json_doc import scalar_summary

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


@st.composite
def step_columns(draw: st.DrawFn) -> list[np.ndarray]:
    """One column per attempt as a resumed run writes them: each attempt starts after, at or before (a rollback)
    where the one before stopped, mostly one step at a time, sometimes repeating or skipping steps."""
    columns = []
    last = draw(st.integers(-5, 50))
    for _ in range(draw(st.integers(0, 5))):
        start = last + draw(st.integers(-40, 40))
        strides = draw(st.lists(st.sampled_from([1, 1, 1, 1, 2, 5, 0, -3]), max_size=60))
        column = start + np.concatenate([[0], np.cumsum(strides, dtype=np.int64)]).astype(np.int64)
        if draw(st.booleans()) and column.size:
            column = column[: draw(st.integers(0, column.size))]  # an attempt killed early, or one with no step
        columns.append(column)
        if column.size:
            last = int(column[-1])
    return columns


@settings(max_examples=300, deadline=None)
@given(step_columns())
def test_distinct_sorted_is_unique_of_the_concatenation(columns):
    want = np.unique(np.concatenate(columns)) if columns else np.zeros(0, dtype=np.int64)
    got = distinct_sorted(columns)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    joined = np.concatenate(columns) if columns else np.zeros(0, dtype=np.int64)
    assert strictly_increasing(joined) == (joined.size == np.unique(joined).size and np.array_equal(joined, np.unique(joined)))


def test_distinct_sorted_of_times_and_of_one_increasing_column():
    walls = 1.7e9 + np.array([0.5, 0.5, 1.25, 3.0, 2.0, 3.0])
    assert distinct_sorted([walls]).tolist() == np.unique(walls).tolist()
    steps = np.arange(10, dtype=np.int64)
    assert distinct_sorted([steps]) is steps  # nothing to drop or sort: no copy
    assert distinct_sorted([np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)]).dtype == np.int64
    assert distinct_sorted([]).shape == (0,)


def _series_of(columns: list[np.ndarray], none_attempts: bool) -> list:
    rng = np.random.default_rng(len(columns))
    return [make_series("loss", c, rng.normal(size=c.size), 1.7e9 + c * 0.5, f"part{i % 2}.log",
                        None if none_attempts and i % 2 else i + 1) for i, c in enumerate(columns)]


@settings(max_examples=200, deadline=None)
@given(step_columns(), st.booleans(), st.sampled_from(POLICIES))
def test_row_counts_agree_with_the_rows(columns, none_attempts, policy):
    series = tuple(_series_of(columns, none_attempts))
    run = Run(root=Path("/nowhere/run"), kind="pimm", era="E2", status="finished", name="run", series=series,
              sources=(SourceFile("part0.log", "train_log", 1, 0.0), SourceFile("part1.log", "train_log", 1, 0.0)))
    counts = row_counts(run, policy)
    rows = scalar_rows(run, policy=policy)
    assert [(c.tag, c.kind, c.points) for c in counts] == [(r.tag, r.kind, len(r)) for r in rows]
    for count, block in zip(counts, rows):
        assert (count.first_step, count.last_step) == ((int(block.steps.min()), int(block.steps.max())) if len(block)
                                                       else (None, None))


@pytest.mark.parametrize("name", sorted(p.relative_to(RUNS).as_posix() for p in pimm_inspect.discover(RUNS)))
def test_show_point_counts_are_those_of_the_rows_on_every_fixture(name):
    run = pimm_inspect.load_run(RUNS / name)  # every run discover finds (a folder of runs is no run: NotARunError)
    want = {r.tag: {"points": len(r), "first_step": int(r.steps.min()) if len(r) else None,
                    "last_step": int(r.steps.max()) if len(r) else None, "source": r.kind} for r in scalar_rows(run)}
    assert scalar_summary(run) == want


@settings(max_examples=200, deadline=None)
@given(step_columns())
def test_gap_check_sees_the_same_interval_as_with_unique(columns):
    """check_gaps on attempts logged with these columns gives what the np.unique form gave (the old code)."""
    columns = [c for c in columns if c.size]
    attempts = tuple(Attempt(i + 1, first_step=int(c.min()), last_step=int(c.max()), resume_step=None)
                     for i, c in enumerate(columns))
    series = tuple(make_series("loss", c, np.ones(c.size), None, "train.log", i + 1) for i, c in enumerate(columns))
    run = Run(root=Path("/nowhere/run"), kind="pimm", era="E2", status="finished", name="run", attempts=attempts,
              series=series, sources=(SourceFile("train.log", "train_log", 1, 0.0),))
    got = checks_steps.check_gaps(run)
    with pytest.MonkeyPatch.context() as patch:  # the old form: np.unique of every attempt's steps
        patch.setattr(checks_steps, "distinct_sorted", lambda arrays: np.unique(np.concatenate(arrays)))
        want = checks_steps.check_gaps(run)
    assert got == want


def _big_run(points: int = 2_000_000, tags: int = 6) -> Run:
    """One attempt of a train.log-like run: every tag shares one step and one time column."""
    steps = np.arange(1, points + 1, dtype=np.int64)
    walls = 1.78e9 + steps * 0.4
    steps.flags.writeable = walls.flags.writeable = False
    series = tuple(make_series(f"train_batch/t{i}", steps, np.full(points, float(i)), walls, "train.log", 1)
                   for i in range(tags))
    return Run(root=Path("/nowhere/run"), kind="pimm", era="E2", status="running", name="run",
               attempts=(Attempt(1, first_step=1, last_step=points),), series=series,
               sources=(SourceFile("train.log", "train_log", 1, 0.0),))


def test_monotone_steps_are_never_uniqued_or_copied(monkeypatch):
    """On one attempt of increasing steps the gap and stall checks and show's point counts take one pass:
    no np.unique (its hash path needs ~8 s for 5M steps in numpy 2.4) and no copy of a whole column."""
    run = _big_run()

    def refuse(*args, **kwargs):
        raise AssertionError("np.unique over a whole step or time column")

    monkeypatch.setattr(np, "unique", refuse)
    tracemalloc.start()
    try:
        assert checks_steps.check_gaps(run) == []
        checks_run.check_stalled(run, now=1.78e9 + 2_000_000 * 0.4 + 10)
        summary = scalar_summary(run)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary["train_batch/t0"] == {"points": 2_000_000, "first_step": 1, "last_step": 2_000_000,
                                         "source": "train_log"}
    # One column is 16 MB; the old scalar_summary held five per tag (96+ MB here), the checks a sorted copy.
    assert peak < 40 << 20, f"peak {peak / 1e6:.0f} MB"


def test_stall_check_looks_at_a_shared_time_column_once():
    """Tags of one train.log line share their time column: it is looked at once, with the old verdict."""
    run = _big_run(points=1_000, tags=3)
    rank = RankLogFacts("logs/rank0.jsonl", 0, None, 1_000, "heartbeat", 1.78e9 + 1_000 * 0.4 + 4_000, ())
    run = dataclasses.replace(run, rank_logs=(rank,))
    now = rank.last_time_s + 60
    calls = []
    real = checks_run.distinct_sorted

    def spy(arrays):
        calls.append(len(arrays[0]))
        return real(arrays)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks_run, "distinct_sorted", spy)
        stalled = checks_run.check_stalled(run, now=now)
    assert calls == [1_000]
    assert [f.code for f in stalled] == ["run.stalled"]
    with pytest.MonkeyPatch.context() as patch:  # the old form: np.unique of every series' finite times
        patch.setattr(checks_run, "distinct_sorted", lambda arrays: np.unique(np.concatenate(arrays)))
        assert checks_run.check_stalled(run, now=now) == stalled


def test_select_rows_general_path_still_finds_replays_exactly():
    """Two attempts replaying steps 51-75 and a repeat inside one: rows per policy as the sort defines them."""
    older = make_series("loss", np.r_[np.arange(1, 76), 75], np.r_[np.ones(75), 9.0], None, "train.log", 1)
    newer = make_series("loss", np.arange(51, 101), np.full(50, 2.0), None, "train.log", 2)
    every = select_rows("loss", "train_log", [older, newer], "all")
    # Every record as written: the repeat inside attempt 1 is kept as seq 1 of its (step, attempt, file).
    assert len(every) == 76 + 50 and every.values[every.steps == 75].tolist() == [1.0, 9.0, 2.0]
    assert every.seq[every.steps == 75].tolist() == [0, 1, 0] and int(every.seq.sum()) == 1
    newest = select_rows("loss", "train_log", [older, newer], "newest")
    assert newest.steps.tolist() == list(range(1, 101)) and set(newest.values[50:].tolist()) == {2.0}
    oldest = select_rows("loss", "train_log", [older, newer], "oldest")
    assert oldest.values[74] == 1.0 and oldest.values[75:].tolist() == [2.0] * 25


def _downsample_in_one_pass(steps, values, buckets):
    """downsample_minmax as it was before it worked in chunks: six whole-length scratch arrays."""
    from pimm_inspect.analysis.curves import _segment_arg

    n = steps.shape[0]
    if buckets <= 0 or n <= 2 * buckets:
        return steps, values
    starts = np.linspace(0, n, buckets + 1).astype(np.int64)[:-1]
    safe = np.where(np.isfinite(values), values, np.nan)
    filled_min = np.where(np.isnan(safe), np.inf, safe)
    filled_max = np.where(np.isnan(safe), -np.inf, safe)
    keep = np.unique(np.concatenate([_segment_arg(filled_min, starts, np.minimum),
                                     _segment_arg(filled_max, starts, np.maximum)]))
    return steps[keep], values[keep]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3_000), st.integers(0, 400), st.sampled_from([1, 7, 64, 1 << 16]), st.integers(0, 2**32 - 1))
def test_downsample_in_chunks_keeps_the_same_points(n, buckets, chunk, seed):
    from pimm_inspect.analysis import curves

    rng = np.random.default_rng(seed)
    values = rng.normal(size=n).round(1)  # ties: the first extreme of a bucket is kept
    values[rng.random(n) < 0.05] = np.nan
    values[rng.random(n) < 0.02] = np.inf
    values[rng.random(n) < 0.02] = -np.inf
    steps = np.arange(n, dtype=np.int64) * 3
    want = _downsample_in_one_pass(steps, values, buckets)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(curves, "_CHUNK", chunk)
        got = curves.downsample_minmax(steps, values, buckets)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1], equal_nan=True)


@pytest.mark.parametrize("x_axis", ["step", "wall", "relative"])
@pytest.mark.parametrize("smooth", [0.0, 0.6])
@pytest.mark.parametrize("shuffled", [False, True])
def test_lines_for_reads_ordered_columns_in_place_and_draws_the_same(x_axis, smooth, shuffled):
    """Increasing steps skip the sort and the copies; the lines are those of the sorted copy (the old path)."""
    from pimm_inspect.report import plot

    rng = np.random.default_rng(3)
    steps = np.arange(1, 20_001, dtype=np.int64)
    if shuffled:
        steps = np.r_[steps[:12_000], steps[9_000:]]  # a rollback: steps go back, the old path sorts
    values = rng.normal(size=steps.size)
    values[::97] = np.nan
    walls = 1.78e9 + np.arange(steps.size) * 0.25
    run = Run(root=Path("/nowhere/run"), kind="pimm", era="E2", status="finished", name="run",
              series=(make_series("loss", steps, values, walls, "train.log", 1),),
              sources=(SourceFile("train.log", "train_log", 1, 0.0),))
    window = (2_000.0, 1.78e9 + 4_000)
    (got,) = plot.lines_for(run, "loss", "all", smooth, x_axis, max_points=300, x_range=window)
    # The old path: every series argsorted (or indexed by arange) and copied, steps as floats from the start.
    from pimm_inspect.analysis.curves import downsample_minmax, ema

    order = np.argsort(steps, kind="stable") if x_axis == "step" else np.arange(steps.size)
    y = ema(values[order], smooth) if smooth else values[order]
    x = {"step": steps[order].astype(np.float64), "wall": walls[order],
         "relative": (walls[order] - walls.min()) / 3600.0}[x_axis]
    keep = (x >= window[0]) & (x <= window[1])
    x, y = downsample_minmax(x[keep], y[keep], 150)
    finite = np.isfinite(y) & np.isfinite(x)
    assert got.x.dtype == np.float64 and np.array_equal(got.x, x[finite])
    assert np.array_equal(got.y, y[finite]) and got.label == "loss (attempt 1)"
    assert not np.shares_memory(got.x, steps) and not np.shares_memory(got.y, values)


def test_lines_for_a_long_ordered_curve_needs_no_copy_of_it():
    """A 2M-point curve (16 MB a column) is drawn with a few MB of scratch; the old path sorted and copied it
    whole and its downsampling held six whole-length scratch arrays (over 100 MB)."""
    from pimm_inspect.report import plot

    run = _big_run(tags=1)
    tracemalloc.start()
    try:
        (line,) = plot.lines_for(run, "train_batch/t0", "all", 0.0, "step", max_points=400)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert line.x.size == 200 and line.x[0] == 1.0 and set(line.y.tolist()) == {0.0}  # flat: one point a bucket
    assert peak < 8 << 20, f"peak {peak / 1e6:.0f} MB"


def _select_rows_by_lexsort(series, policy):
    """select_rows's general path as it was: (steps, values, walls, attempts, source index) by lexsort."""
    from pimm_inspect.analysis.scalar_rows import NO_ATTEMPT, _writer_order

    ordered = [s for s in _writer_order(series) if len(s)]
    sources = tuple(dict.fromkeys(s.source for s in ordered))
    rank = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(ordered)])
    steps = np.concatenate([s.steps for s in ordered])
    attempts = np.concatenate([np.full(len(s), NO_ATTEMPT if s.attempt is None else s.attempt, dtype=np.int64)
                               for s in ordered])
    source_index = np.concatenate([np.full(len(s), sources.index(s.source), dtype=np.int64) for s in ordered])
    position = np.arange(steps.shape[0], dtype=np.int64)
    if policy == "all":  # every record as written
        order = np.lexsort((position, rank, attempts, steps))
        keep = np.ones(order.shape[0], dtype=bool)
    else:
        order = np.lexsort((position, rank, steps))
        s_sorted = steps[order]
        keep = np.ones(order.shape[0], dtype=bool)
        if policy == "newest":
            keep[:-1] = s_sorted[1:] != s_sorted[:-1]
        else:
            keep[1:] = s_sorted[1:] != s_sorted[:-1]
    chosen = order[keep]
    values = np.concatenate([s.values for s in ordered])[chosen]
    walls = np.concatenate([s.wall_times_s for s in ordered])[chosen]
    seen: dict[tuple[int, int, int], int] = {}
    seq = np.zeros(steps.shape[0], dtype=np.int64)
    for i, key in enumerate(zip(steps.tolist(), attempts.tolist(), source_index.tolist())):  # in writer order
        seq[i] = seen.get(key, 0)
        seen[key] = seq[i] + 1
    return steps[chosen], values, walls, attempts[chosen], source_index[chosen], seq[chosen]


@settings(max_examples=300, deadline=None)
@given(step_columns(), st.lists(st.sampled_from([None, 1, 2, 3]), min_size=6, max_size=6), st.sampled_from(POLICIES))
def test_select_rows_by_stable_sort_is_the_lexsort(columns, attempt_of, policy):
    """Writers whose attempts are out of writer order (None between numbers), repeats, rollbacks: same rows."""
    rng = np.random.default_rng(len(columns))
    series = [make_series("loss", c, rng.normal(size=c.size), 1.7e9 + rng.random(c.size), f"f{i % 3}", attempt_of[i])
              for i, c in enumerate(columns)]
    if sum(len(s) for s in series) == 0 or (len([s for s in series if len(s)]) == 1
                                            and strictly_increasing(next(s for s in series if len(s)).steps)):
        return  # the empty and the one-increasing-writer paths: tested above
    got = select_rows("loss", "train_log", series, policy)
    want = _select_rows_by_lexsort(series, policy)
    for field, expected in zip(("steps", "values", "wall_times_s", "attempts", "source_index", "seq"), want):
        assert np.array_equal(getattr(got, field), expected), field


def _overlaps_by_intersect1d(series):
    """curves.overlaps as it was: np.intersect1d for every pair of writers."""
    from pimm_inspect.analysis import curves

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(curves, "strictly_increasing", lambda _steps: False)
        return curves.overlaps(series)


@settings(max_examples=300, deadline=None)
@given(step_columns(), st.booleans())
def test_overlaps_of_increasing_writers_without_intersect1d(columns, increasing_only):
    from pimm_inspect.analysis.curves import overlaps

    if increasing_only:
        columns = [np.unique(c) for c in columns]  # every writer increasing: the searchsorted path throughout
    rng = np.random.default_rng(len(columns))
    series = [make_series("loss", c, rng.normal(size=c.size).round(1), None, f"events.{i}", i + 1)
              for i, c in enumerate(columns)]
    got, want = overlaps(series), _overlaps_by_intersect1d(series)
    assert [dataclasses.replace(o, max_abs_diff=0.0) for o in got] == \
        [dataclasses.replace(o, max_abs_diff=0.0) for o in want]
    assert np.array_equal([o.max_abs_diff for o in got], [o.max_abs_diff for o in want], equal_nan=True)


def test_a_resume_seam_is_found_exactly_on_a_long_run():
    """Three attempts of 1M steps overlapping by 347 steps: the replays found are those of intersect1d."""
    from pimm_inspect.analysis.curves import overlaps

    cols = [np.arange(1, 1_000_348), np.arange(1_000_001, 2_000_348), np.arange(2_000_001, 3_000_001)]
    series = [make_series("loss", c, np.sin(c * 0.01) + i, None, "train.log", i + 1) for i, c in enumerate(cols)]
    got = overlaps(series)
    assert [(o.first_step, o.last_step, o.count, o.older_attempt, o.newer_attempt) for o in got] == [
        (1_000_001, 1_000_347, 347, 1, 2), (2_000_001, 2_000_347, 347, 2, 3)]
    assert got == _overlaps_by_intersect1d(series)


class _Counting:
    """A text sink that keeps only the number of characters written."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return len(text)


def test_json_export_of_a_long_tag_is_written_in_slices(monkeypatch):
    """The JSON writer turns a few thousand rows into Python objects at a time, with the same text: the old
    writer made four lists of every row of a tag first (over 300 MB for this 1M-row tag)."""
    import io

    from pimm_inspect.report import export

    rng = np.random.default_rng(5)
    values = rng.normal(size=1_000_000)
    values[::1001] = np.nan
    run = dataclasses.replace(_big_run(points=1_000_000, tags=1),
                              series=(make_series("loss", np.arange(1, 1_000_001), values, None, "train.log", 1),
                                      make_series("lr", [3, 5, 9], [0.1, np.inf, -np.inf], None, "train.log", None)))
    small = dataclasses.replace(run, series=(make_series("loss", np.arange(1, 8), values[:7], None, "train.log", 1),
                                             run.series[1]))
    whole = io.StringIO()
    export.write_json(scalar_rows(small), whole)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(export, "SLICE_ROWS", 3)
        sliced = io.StringIO()
        export.write_json(scalar_rows(small), sliced)
    assert sliced.getvalue() == whole.getvalue() and '"value": "Infinity"' in whole.getvalue()
    sink = _Counting()
    rows = scalar_rows(run)
    tracemalloc.start()
    try:
        count = export.write_json(iter(rows), sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1_000_003 and sink.chars > 90_000_000
    assert peak < 64 << 20, f"peak {peak / 1e6:.0f} MB"


def test_distinct_sorted_with_repeated_columns_and_many_alike_at_their_ends():
    # The tags of one writer share their steps (each distinct column is taken once); columns equal at both ends but
    # different inside are compared with a few only, and still all counted.
    shared = np.arange(0, 100, 2)
    inside = [np.concatenate(([0], np.sort(np.random.default_rng(k).choice(np.arange(1, 99), 10, replace=False)),
                              [99])) for k in range(12)]
    columns = [shared, shared.copy(), *inside, shared[::-1][::-1].copy(), *inside[:3]]
    assert np.array_equal(distinct_sorted(columns), np.unique(np.concatenate(columns)))
