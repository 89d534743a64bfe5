"""The copies of a replayed range, tag by tag, and which tags compare like with like (per-step tags first).

One rule for the ``steps.replayed`` check (its "the copies differ by up to" figure) and for ``compare --attempts``
(the copies side by side), so both read the same copies of the same tags and rank the tags the same way.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..arrays import non_decreasing
from ..model import ReplayedRange, ScalarSeries
from .curves import SMALL_POINTS

Writer = int | str
"""An attempt index, or the run-relative path of a file whose points name no attempt."""
Writers = dict[Writer, list[ScalarSeries]]


def writers_of(series: list[ScalarSeries]) -> Writers:
    """The drawn series by writer: the attempt where known, else the file."""
    out: Writers = defaultdict(list)
    for s in series:
        out[s.attempt if s.attempt is not None else s.source].append(s)
    return out


def inside(s: ScalarSeries, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """The steps and values of a series within ``first``..``last`` (inclusive), in the order logged."""
    if non_decreasing(s.steps):
        lo, hi = int(np.searchsorted(s.steps, first, "left")), int(np.searchsorted(s.steps, last, "right"))
        return s.steps[lo:hi], s.values[lo:hi]
    keep = (s.steps >= first) & (s.steps <= last)
    return s.steps[keep], s.values[keep]


@dataclass(frozen=True, slots=True, eq=False)
class TagCopies:
    """One tag's records inside a replayed range, sorted by step (stable: writer order, then the order logged)."""

    tag: str
    writers: tuple[Writer, ...]
    """The range's writers that logged this tag in the range, oldest first (attempts, then files)."""
    steps: np.ndarray
    values: np.ndarray
    writer_of: np.ndarray
    """int64 per record: its writer's index in ``writers``."""
    starts: np.ndarray
    """Index of the first record of each distinct step."""
    counts: np.ndarray
    """Records per distinct step."""

    @property
    def held(self) -> np.ndarray:
        """The steps logged two or more times in the range (the steps with copies), sorted."""
        held: np.ndarray = self.steps[self.starts[self.counts > 1]]
        return held


def _tag_parts(by_writer: Writers, r: ReplayedRange) -> dict[str, list[tuple[Writer, np.ndarray, np.ndarray]]]:
    """Per tag, each of the range's series' points inside the range (views, not copies, when the steps are in
    order): writers oldest first (attempts, then files), tags in the order first met."""
    per_tag: dict[str, list[tuple[Writer, np.ndarray, np.ndarray]]] = defaultdict(list)
    for writer in list(r.attempts) + [p for p in r.paths if p in by_writer]:
        for s in by_writer.get(writer, ()):
            steps, values = inside(s, r.first_step, r.last_step)
            if steps.shape[0]:
                per_tag[s.tag].append((writer, steps, values))
    return per_tag


def range_copies(by_writer: Writers, r: ReplayedRange) -> list[TagCopies]:
    """Per tag logged by two or more of the range's series with at least one step held twice: its records."""
    out: list[TagCopies] = []
    for tag, parts in _tag_parts(by_writer, r).items():
        parts = _first_per_writer(parts)
        if len(parts) < 2:
            continue
        writers = tuple(dict.fromkeys(w for w, _s, _v in parts))
        steps = np.concatenate([p[1] for p in parts])
        values = np.concatenate([p[2] for p in parts])
        owner = np.repeat(np.asarray([writers.index(w) for w, _s, _v in parts], dtype=np.int64),
                          [p[1].shape[0] for p in parts])
        order = np.argsort(steps, kind="stable")
        steps, values, owner = steps[order], values[order], owner[order]
        starts = np.flatnonzero(np.concatenate(([True], steps[1:] != steps[:-1])))
        counts = np.diff(np.append(starts, steps.shape[0]))
        if (counts > 1).any():
            out.append(TagCopies(tag, writers, steps, values, owner, starts, counts))
    return out


@dataclass(frozen=True, slots=True)
class TagSpread:
    """How far one tag's copies in a replayed range differ: what ``range_copies`` would give for the tag, reduced."""

    tag: str
    held: int
    """Steps logged two or more times in the range (steps with copies)."""
    first_held: int
    last_held: int
    spread: float
    """The largest difference between the finite copies of one step (NaN: no step has two finite copies)."""


def copy_spreads(by_writer: Writers, r: ReplayedRange) -> list[TagSpread]:
    """Per tag of ``range_copies`` (same tags, same order), its steps with copies and their largest spread, tag by
    tag: only one tag's distinct steps are held at a time, never the copies of every tag merged and sorted."""
    from .distinct import distinct_sorted

    few = _few_spreads(by_writer, r)
    if few is not None:
        return few
    out: list[TagSpread] = []
    for tag, parts in _tag_parts(by_writer, r).items():
        by_writer_parts: dict[Writer, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
        for writer, steps, values in parts:
            by_writer_parts[writer].append((steps, values))
        if len(by_writer_parts) < 2:
            continue
        copies = [_first_copies(pieces) for pieces in by_writer_parts.values()]  # writers oldest first
        union = distinct_sorted([steps for steps, _v in copies])
        count = np.zeros(union.shape[0], dtype=np.int64)
        high = np.full(union.shape[0], np.nan)
        low = np.full(union.shape[0], np.nan)
        for steps, values in copies:  # fmax/fmin ignore NaN: each step's largest and smallest finite copy
            at = slice(None) if steps.shape[0] == union.shape[0] else np.searchsorted(union, steps)
            finite = np.where(np.isfinite(values), values, np.nan)
            count[at] += 1
            high[at] = np.fmax(high[at], finite)
            low[at] = np.fmin(low[at], finite)
        multi = count > 1
        held = union[multi]
        if not held.shape[0]:
            continue
        spread = (high - low)[multi]
        spread = spread[np.isfinite(spread)]
        out.append(TagSpread(tag, int(held.shape[0]), int(held[0]), int(held[-1]),
                             float(spread.max()) if spread.size else float("nan")))
    return out


POINTS_PER_SERIES = 48
"""``copy_spreads`` loops in Python over up to this many points per series of a range's writers (at least
``SMALL_POINTS`` in all): about what the dozen numpy calls it makes per series cost (a few microseconds each)."""


def _few_spreads(by_writer: Writers, r: ReplayedRange) -> list[TagSpread] | None:
    """``copy_spreads`` worked out in Python when the range's writers hold a few points (``POINTS_PER_SERIES`` per
    series, ``SMALL_POINTS`` at least) of integer steps and float values; None when numpy should, or when a value in
    the range is 0.0 (numpy's ``fmax``/``fmin`` choose between 0.0 and -0.0 their own way)."""
    chosen = [(writer, s) for writer in list(r.attempts) + [p for p in r.paths if p in by_writer]
              for s in by_writer.get(writer, ())]
    if sum(len(s) for _w, s in chosen) > max(SMALL_POINTS, POINTS_PER_SERIES * len(chosen)) or any(
            s.steps.dtype.kind != "i" or s.values.dtype.kind != "f" for _w, s in chosen):
        return None
    first, last = r.first_step, r.last_step
    per_tag: dict[str, dict[Writer, dict[int, float]]] = {}  # tags in the order first met with a point in range
    for writer, s in chosen:
        points = [(step, value) for step, value in zip(s.steps.tolist(), s.values.tolist()) if first <= step <= last]
        if not points:
            continue
        firsts = per_tag.setdefault(s.tag, {}).setdefault(writer, {})
        for step, value in points:
            if value == 0.0:
                return None
            firsts.setdefault(step, value)  # the copy each writer logged first (``_first_copies``)
    out: list[TagSpread] = []
    for tag, copies in per_tag.items():
        if len(copies) < 2:
            continue
        count: dict[int, int] = {}
        extremes: dict[int, tuple[float, float]] = {}  # each step's smallest and largest finite copy
        for firsts in copies.values():
            for step, value in firsts.items():
                count[step] = count.get(step, 0) + 1
                if math.isfinite(value):
                    low, high = extremes.get(step, (value, value))
                    extremes[step] = (min(low, value), max(high, value))
        held = sorted(step for step, n in count.items() if n > 1)
        if not held:
            continue
        spreads = [extremes[step][1] - extremes[step][0] for step in held if step in extremes]
        spreads = [spread for spread in spreads if math.isfinite(spread)]
        out.append(TagSpread(tag, len(held), held[0], held[-1], max(spreads) if spreads else float("nan")))
    return out


def _first_copies(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One writer's distinct steps in a range, sorted, each with the value it logged first (``_first_per_writer``)."""
    if len(pieces) == 1 and (pieces[0][0].shape[0] < 2 or bool(np.all(pieces[0][0][1:] > pieces[0][0][:-1]))):
        return pieces[0]
    steps = np.concatenate([p[0] for p in pieces])
    values = np.concatenate([p[1] for p in pieces])
    distinct, first = np.unique(steps, return_index=True)
    return distinct, values[first]


def _first_per_writer(parts: list[tuple[Writer, np.ndarray, np.ndarray]]) -> list[tuple[Writer, np.ndarray, np.ndarray]]:
    """One copy per writer and step: the first it logged. A writer that logged a step twice itself (an evaluation
    pass writing a per-batch step again in the same process) made no copy of another attempt's step."""
    by_writer: dict[Writer, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    for writer, steps, values in parts:
        by_writer[writer].append((steps, values))
    out = []
    for writer, pieces in by_writer.items():
        steps = np.concatenate([p[0] for p in pieces])
        values = np.concatenate([p[1] for p in pieces])
        _unique, first = np.unique(steps, return_index=True)
        if first.shape[0] < steps.shape[0]:
            keep = np.sort(first)
            steps, values = steps[keep], values[keep]
        out.append((writer, steps, values))
    return out


def per_step_tags(copies: list[TagCopies]) -> frozenset[str]:
    """The tags logged per step: those holding as many steps with copies as the densest tag.

    An epoch mean (pimm's ``train/loss`` at the epoch's last step, HF's end-of-training ``train/train_loss``) covers
    different batches after a mid-epoch resume, so its copies differ by more than any step did and say nothing
    about how exact the replay was: a per-step tag is compared first.
    """
    return densest_tags({c.tag: int((c.counts > 1).sum()) for c in copies})


def densest_tags(held: dict[str, int]) -> frozenset[str]:
    """``per_step_tags`` from each tag's count of steps with copies."""
    densest = max(held.values(), default=0)
    return frozenset(tag for tag, n in held.items() if n == densest)


def tag_rank(tag: str, per_step: frozenset[str]) -> tuple[bool, bool, str]:
    """Sort key of the tags of a range: per-step tags first, losses first, then by name."""
    return (tag not in per_step, "loss" not in tag, tag)
