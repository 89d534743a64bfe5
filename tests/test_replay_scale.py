"""The replay analysis of a big run works on step arrays, one tag at a time: the ranges and the copies' spreads are
exactly what the per-step rule gives (property tests against plain Python sets and against ``range_copies``), and
a run whose every tag was replayed ten times holds about one tag's steps at once, never every tag's pairs or copies."""

from __future__ import annotations

import dataclasses
import tracemalloc
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pimm_inspect.analysis import checks_replayed
from pimm_inspect.analysis.replay_copies import copy_spreads, range_copies, writers_of
from pimm_inspect.analysis.replays import compute_replayed, written_ranges
from pimm_inspect.model import Attempt, ReplayedRange, Run, ScalarSeries, make_series

WRITERS = (1, 2, 3, "a.tfevents", "b.tfevents")
"""Attempts, and files whose points name no attempt."""
VALUES = (0.0, -0.0, 1.0, 2.5, -3.0, float("nan"), float("inf"), float("-inf"))


@st.composite
def replayed_series(draw: st.DrawFn) -> list[ScalarSeries]:
    """Series of a few writers and tags over steps 0-30: steps in order or not, repeated, skipped, tags taking turns
    on a writer's rows, a writer's tag sometimes in two series (two files of one attempt)."""
    out = []
    writers = draw(st.lists(st.sampled_from(WRITERS), min_size=1, max_size=4, unique=True))
    for writer in writers:
        attempt = writer if isinstance(writer, int) else None
        source = f"events.{writer}" if attempt is not None else str(writer)
        first, last = sorted(draw(st.lists(st.integers(0, 30), min_size=2, max_size=2)))
        shift = draw(st.integers(0, 2))
        for i, tag in enumerate(draw(st.lists(st.sampled_from(("loss", "lr", "val/acc")), min_size=1, max_size=3,
                                              unique=True))):
            shape = draw(st.integers(0, 2))
            if shape == 0:
                steps = [s for s in range(first, last + 1) if draw(st.integers(0, 4))]  # most steps, in order
            elif shape == 1:  # the tags take turns, each writer its own way round (W&B rows of keras-rl)
                steps = [s for s in range(first, last + 1) if (s + shift) % 3 != i]
            else:
                steps = draw(st.lists(st.integers(0, 30), min_size=1, max_size=25))  # any order, repeats
            values = [draw(st.sampled_from(VALUES)) for _ in steps]
            cut = draw(st.integers(0, len(steps)))
            for piece in ((steps, values),) if not cut or cut == len(steps) else ((steps[:cut], values[:cut]),
                                                                                  (steps[cut:], values[cut:])):
                if piece[0]:
                    out.append(make_series(tag, piece[0], piece[1], None, source, attempt))
    return out


def _writer(s: ScalarSeries) -> int | str:
    return s.attempt if s.attempt is not None else s.source


def _key(w: int | str) -> tuple[int, int, str]:
    return (1, 0, w) if isinstance(w, str) else (0, w, "")


def per_step_rule(series: list[ScalarSeries]) -> list[tuple[int, int, tuple[int | str, ...]]]:
    """``written_ranges`` step by step with sets: per tag the writers of each step logged by two or more of them;
    consecutive held steps (or, for attempts, held steps with only steps every one of them wrote between) with one
    set of writers are a range; an attempts' range is widened over the logged steps all of them wrote."""
    by_tag: dict[str, dict[int | str, set[int]]] = defaultdict(lambda: defaultdict(set))
    wrote: dict[int | str, set[int]] = defaultdict(set)
    for s in series:
        by_tag[s.tag][_writer(s)].update(s.steps.tolist())
        wrote[_writer(s)].update(s.steps.tolist())
    held: dict[int, set[int | str]] = defaultdict(set)
    for groups in by_tag.values():
        count = Counter(step for steps in groups.values() for step in steps)
        for w, steps in groups.items():
            held_here = {step for step in steps if count[step] > 1}
            for step in held_here:
                held[step].add(w)
    logged = sorted(set().union(*wrote.values())) if wrote else []
    slot = {step: i for i, step in enumerate(logged)}

    def all_wrote(members: tuple[int | str, ...], lo: int, hi: int) -> bool:
        return all(logged[j] in wrote[w] for w in members for j in range(lo, hi + 1))

    def attempts(members: tuple[int | str, ...]) -> bool:
        return all(isinstance(w, int) for w in members)

    ranges: list[list] = []
    for step in sorted(held):
        members = tuple(sorted(held[step], key=_key))
        k = slot[step]
        if ranges and ranges[-1][2] == members and (
                k == ranges[-1][1] + 1 or (attempts(members) and all_wrote(members, ranges[-1][1] + 1, k - 1))):
            ranges[-1][1] = k
        else:
            ranges.append([k, k, members])
    out: list[tuple[int, int, tuple[int | str, ...]]] = []
    for i, (lo, hi, members) in enumerate(ranges):
        if attempts(members):
            floor = slot[out[-1][1]] + 1 if out else 0
            ceiling = ranges[i + 1][0] - 1 if i + 1 < len(ranges) else len(logged) - 1
            while lo - 1 >= floor and all_wrote(members, lo - 1, lo - 1):
                lo -= 1
            while hi + 1 <= ceiling and all_wrote(members, hi + 1, hi + 1):
                hi += 1
        out.append((logged[lo], logged[hi], members))
    return out


@settings(max_examples=400, deadline=None)
@given(replayed_series())
def test_written_ranges_are_the_per_step_rule(series):
    assert [(w.first, w.last, w.writers) for w in written_ranges(series)] == per_step_rule(series)


def _spreads_of_the_copies(by_writer, r: ReplayedRange) -> list[tuple]:
    """Each tag's steps with copies and largest spread, from ``range_copies``' merged records."""
    out = []
    for c in range_copies(by_writer, r):
        multi = c.counts > 1
        finite = np.where(np.isfinite(c.values), c.values, np.nan)
        with np.errstate(invalid="ignore"):
            spread = (np.fmax.reduceat(finite, c.starts) - np.fmin.reduceat(finite, c.starts))[multi]
        spread = spread[np.isfinite(spread)]
        out.append((c.tag, int(multi.sum()), int(c.held[0]), int(c.held[-1]),
                    repr(float(spread.max())) if spread.size else "nan"))
    return out


@settings(max_examples=400, deadline=None)
@given(replayed_series(), st.integers(0, 30), st.integers(0, 30), st.lists(st.sampled_from(WRITERS), max_size=4))
def test_copy_spreads_are_what_the_merged_copies_give(series, lo, span, writers):
    by_writer = writers_of(series)
    r = ReplayedRange(lo, lo + span, 2, tuple(sorted(w for w in set(writers) if isinstance(w, int))),
                      tuple(sorted({w for w in writers if isinstance(w, str)})))
    got = [(c.tag, c.held, c.first_held, c.last_held, repr(c.spread) if c.spread == c.spread else "nan")
           for c in copy_spreads(by_writer, r)]
    assert got == _spreads_of_the_copies(by_writer, r)


def test_ten_replays_of_every_tag_hold_about_one_tag_at_a_time():
    """The shape of issue 23's 10M-point file (ten copies of one run back to back): 20 tags, each logged at every
    step by each of 10 attempts. Finding the range and comparing its copies held every tag's (step, writer) pairs and
    then every tag's copies merged (about 3x the run's step column); now about one tag's steps."""
    steps = np.arange(10_000, dtype=np.int64)
    series = tuple(make_series(f"tag/{t}", steps.copy(), np.full(steps.shape[0], 0.5 + a), None,
                               "events.out.tfevents.1", a) for a in range(1, 11) for t in range(20))
    run = Run(root=Path("/nowhere"), kind="tensorboard", era=None, status="unknown", series=series,
              attempts=tuple(Attempt(a, first_step=0, last_step=9_999) for a in range(1, 11)))
    one_tag = 10 * steps.nbytes  # one tag's steps over its ten writers: 0.8 MB of the run's 16 MB
    tracemalloc.start()
    try:
        ranges = compute_replayed(run)
        finding_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        found = checks_replayed.check_replayed(dataclasses.replace(run, replayed=ranges))
        check_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r.first_step, r.last_step, r.copies, r.attempts) for r in ranges] == [(0, 9_999, 10, tuple(range(1, 11)))]
    assert found[0].message == "steps 0-9999 were written 10 times, by 10 attempts (10 copies: #1 #2 #3 #4 #5 #6 ... #10)"
    assert "the copies differ by up to 9 in tag/0" in found[0].explanation
    assert finding_peak < 10 * one_tag, finding_peak
    assert check_peak < 10 * one_tag, check_peak
