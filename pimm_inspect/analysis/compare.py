"""Comparison of runs and attempts, below every front end (``curves RUN...``, ``compare``, the Python API).

Two questions: what each side (a run, or one attempt of a run) logged at the steps they all share, tag by tag; and,
per replayed range of one run, what each copy of a step holds. The values are the ones logged (float64, never
rounded); a difference is the largest minus the smallest value of a step, and the relative difference divides it by
the largest magnitude of those values (0 when they are equal, NaN when one of them is NaN).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import ReplayedRange, Run
from ._facts import fmt_range as fmt_range  # step ranges read the same in every comparison view
from ._facts import source_kind
from .names import name_text
from .replay_copies import TagCopies, Writer, per_step_tags, range_copies, tag_rank, writers_of
from .replays import compute_replayed, drawn_series
from .scalar_rows import iter_scalar_rows, tag_matches

COMPARE_POLICIES = ("newest", "oldest")
"""One value per step and side: the newest (TensorBoard's default loader) or the oldest copy."""


@dataclass(frozen=True, slots=True, eq=False)
class Side:
    """One thing compared: a run, or one attempt of it."""

    run: Run
    attempt: int | None
    """1-based attempt; None for the whole run (one copy per step by the policy)."""
    run_label: str
    """The run's name by the one name escape (``name_text``), with parent folders when two runs share a name."""

    @property
    def label(self) -> str:
        """``run`` or ``run attempt 2``: what a legend or a column header names (data: escape before printing)."""
        return self.run_label + (f" attempt {self.attempt}" if self.attempt is not None else "")


def _run_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's name; runs that share one get as many trailing folder names as tell them apart."""
    roots = list(dict.fromkeys(r.root for r in runs))
    names = {r.root: r.name or r.root.name for r in runs}
    depth = dict.fromkeys(roots, 1)
    while True:
        seen: dict[str, list[Path]] = {}
        for root in roots:
            seen.setdefault(names[root], []).append(root)
        clashing = [root for same in seen.values() if len(same) > 1 for root in same if depth[root] < len(root.parts)]
        if not clashing:
            return [name_text(names[r.root]) for r in runs]
        for root in clashing:
            depth[root] += 1
            names[root] = "/".join(root.parts[-depth[root]:])


def make_sides(runs: Sequence[Run], attempts: Sequence[int] = ()) -> tuple[list[Side], list[tuple[Run, int]]]:
    """Every run, or every named attempt of every run (run by run); and the (run, attempt) pairs that do not exist."""
    labels = _run_labels(runs)
    sides: list[Side] = []
    missing: list[tuple[Run, int]] = []
    for run, label in zip(runs, labels):
        if not attempts:
            sides.append(Side(run, None, label))
            continue
        known = {a.index for a in run.attempts}
        for index in dict.fromkeys(attempts):
            if index in known:
                sides.append(Side(run, index, label))
            else:
                missing.append((run, index))
    return sides, missing


def spread(values: np.ndarray, present: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``values`` (over the ``present`` cells; all when None): largest minus smallest, and that over the
    largest magnitude. Equal values (infinities included) differ by 0; a row holding a NaN differs by NaN.

    Column by column (a few sides, millions of steps): numpy's row reductions over two or three columns are slow.
    """
    rows = values.shape[0]
    hi, lo = np.full(rows, -np.inf), np.full(rows, np.inf)
    magnitude = np.zeros(rows)
    undefined = np.zeros(rows, dtype=bool)
    for j in range(values.shape[1]):
        column = values[:, j]
        held = None if present is None else present[:, j]
        nan = np.isnan(column)
        undefined |= nan if held is None else nan & held
        np.fmax(hi, column if held is None else np.where(held, column, -np.inf), out=hi)
        np.fmin(lo, column if held is None else np.where(held, column, np.inf), out=lo)
        np.fmax(magnitude, np.abs(column) if held is None else np.where(held, np.abs(column), 0.0), out=magnitude)
    with np.errstate(invalid="ignore", divide="ignore"):
        absolute = np.where(hi == lo, 0.0, hi - lo)
        relative = np.where(absolute == 0.0, 0.0, absolute / np.where(magnitude == 0.0, np.nan, magnitude))
    absolute[undefined] = np.nan
    relative[undefined] = np.nan
    return absolute, relative


def _largest(diffs: np.ndarray, steps: np.ndarray) -> tuple[float | None, int | None]:
    """The largest finite difference and the first step holding it; (None, None) when there is none."""
    finite = np.isfinite(diffs)
    if not finite.any():
        return None, None
    at = int(np.argmax(np.where(finite, diffs, -np.inf)))
    return float(diffs[at]), int(steps[at])


class _Differences:
    """The largest differences of a table whose rows are ``steps`` (mixed into both kinds of table)."""

    __slots__ = ()
    steps: np.ndarray
    abs_diff: np.ndarray
    rel_diff: np.ndarray

    @property
    def max_abs_diff(self) -> float | None:
        """The largest finite difference over the rows; None without one."""
        return _largest(self.abs_diff, self.steps)[0]

    @property
    def max_abs_diff_step(self) -> int | None:
        """The first step where the difference is largest; None without a finite one."""
        return _largest(self.abs_diff, self.steps)[1]

    @property
    def max_rel_diff(self) -> float | None:
        """The largest finite relative difference over the rows; None without one."""
        return _largest(self.rel_diff, self.steps)[0]


@dataclass(frozen=True, slots=True, eq=False)
class SideBySide(_Differences):
    """One tag on every side, at the steps all sides logged it."""

    tag: str
    kinds: tuple[str, ...]
    """Per side: the source kind its values come from (the tag's preferred one in that run)."""
    points: tuple[int, ...]
    """Per side: how many steps it holds of the tag (one value each)."""
    steps: np.ndarray
    """int64, the shared steps, sorted."""
    values: np.ndarray
    """float64 (steps x sides), as logged."""
    abs_diff: np.ndarray
    rel_diff: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class SidesComparison:
    """``compare RUN RUN...``: per tag every side holds, its values side by side over the shared steps."""

    sides: tuple[Side, ...]
    policy: str
    tags: tuple[SideBySide, ...]
    """Tags every side holds, sorted by name."""
    partial: tuple[tuple[str, tuple[int, ...]], ...]
    """Tags only some sides hold: (tag, the indices of the sides that hold it)."""


def _one_per_step(steps: np.ndarray, values: np.ndarray, policy: str) -> tuple[np.ndarray, np.ndarray]:
    """One value per step of rows sorted by step (ties in the order written): the last (newest) or first (oldest)."""
    if steps.shape[0] < 2 or bool(np.all(steps[1:] > steps[:-1])):
        return steps, values
    keep = np.ones(steps.shape[0], dtype=bool)
    if policy == "newest":
        keep[:-1] = steps[1:] != steps[:-1]
    else:
        keep[1:] = steps[1:] != steps[:-1]
    return steps[keep], values[keep]


def side_values(side: Side, patterns: Sequence[str] = (), policy: str = "newest",
                ) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Per tag matching the globs: (source kind, steps, values), one value per step, from the tag's preferred
    source; for an attempt only the rows it wrote (a file that names no attempt has none)."""
    if policy not in COMPARE_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(COMPARE_POLICIES)}")
    out: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    for block in iter_scalar_rows(side.run, tuple(patterns), "all" if side.attempt is not None else policy):
        steps, values = block.steps, block.values
        if side.attempt is not None:
            mine = block.attempts == side.attempt
            steps, values = _one_per_step(steps[mine], values[mine], policy)
        if steps.shape[0]:
            out[block.tag] = (block.kind, steps, values)
    return out


def compare_sides(sides: Sequence[Side], patterns: Sequence[str] = (), policy: str = "newest") -> SidesComparison:
    """Per tag every side holds: the values of each side at the steps all of them logged, and their differences."""
    per_side = [side_values(side, patterns, policy) for side in sides]
    every = sorted(set().union(*per_side)) if per_side else []
    tags: list[SideBySide] = []
    partial: list[tuple[str, tuple[int, ...]]] = []
    for tag in every:
        holders = tuple(i for i, values in enumerate(per_side) if tag in values)
        if len(holders) < len(sides):
            partial.append((tag, holders))
            continue
        columns = [values[tag] for values in per_side]
        shared = columns[0][1]
        for _kind, steps, _values in columns[1:]:
            shared = np.intersect1d(shared, steps, assume_unique=True)
        matrix = np.empty((shared.shape[0], len(columns)), dtype=np.float64)
        for j, (_kind, steps, values) in enumerate(columns):
            matrix[:, j] = values[np.searchsorted(steps, shared)]
        absolute, relative = spread(matrix)
        tags.append(SideBySide(tag, tuple(c[0] for c in columns), tuple(int(c[1].shape[0]) for c in columns),
                               shared.astype(np.int64, copy=False), matrix, absolute, relative))
    return SidesComparison(tuple(sides), policy, tuple(tags), tuple(partial))


@dataclass(frozen=True, slots=True, eq=False)
class CopyTable(_Differences):
    """One tag's copies in a replayed range: per step held twice, the value of each writer's copy."""

    tag: str
    per_step: bool
    """Logged at every step that has copies, as densely as the densest tag (compared first)."""
    writers: tuple[Writer, ...]
    """Attempt indices, or files (by the name escape) for copies whose points name no attempt."""
    steps: np.ndarray
    values: np.ndarray
    """float64 (steps x writers): the writer's last record of the step (NaN where ``present`` is False)."""
    present: np.ndarray
    """bool (steps x writers): whether the writer logged the step."""
    abs_diff: np.ndarray
    rel_diff: np.ndarray
    source: str = ""
    """The source kind the copies were read from (the tag's preferred one, as the curves draw it)."""

    @property
    def copies(self) -> np.ndarray:
        """Per step: how many writers hold a copy."""
        counted: np.ndarray = self.present.sum(axis=1)
        return counted


@dataclass(frozen=True, slots=True, eq=False)
class RangeCopies:
    """A replayed range of ``Run.replayed`` and the copies of each tag held twice in it, per-step tags first."""

    replayed: ReplayedRange
    tags: tuple[CopyTable, ...]


@dataclass(frozen=True, slots=True, eq=False)
class AttemptsComparison:
    """``compare RUN --attempts``: the run's attempts and, per replayed range, the copies side by side."""

    run: Run
    ranges: tuple[RangeCopies, ...]


def copy_table(copies: TagCopies, per_step: bool, source: str = "") -> CopyTable:
    """The copies of one tag as a table: one row per step held twice, one column per writer (its last record)."""
    group = np.repeat(np.arange(copies.starts.shape[0]), copies.counts)
    multi = copies.counts > 1
    row_of_group = np.cumsum(multi) - 1
    kept = np.flatnonzero(multi[group])
    width = len(copies.writers)
    cell = row_of_group[group[kept]] * width + copies.writer_of[kept]
    # The last record of each (step, writer): the first occurrence of its cell in the reversed records.
    _cells, first_reversed = np.unique(cell[::-1], return_index=True)
    last = kept[::-1][first_reversed]
    rows = int(multi.sum())
    values = np.full((rows, width), np.nan)
    present = np.zeros((rows, width), dtype=bool)
    values.reshape(-1)[cell[::-1][first_reversed]] = copies.values[last]
    present.reshape(-1)[cell[::-1][first_reversed]] = True
    absolute, relative = spread(values, present)
    writers = tuple(w if isinstance(w, int) else name_text(w) for w in copies.writers)
    return CopyTable(copies.tag, per_step, writers, copies.held.astype(np.int64, copy=False), values, present,
                     absolute, relative, source)


def compare_attempts(run: Run, patterns: Sequence[str] = ()) -> AttemptsComparison:
    """Per replayed range of the run (``Run.replayed``): the copies of every tag matching the globs, per-step tags
    first."""
    drawn = drawn_series(run)
    by_writer = writers_of(drawn)
    kind_of = {s.tag: source_kind(run, s) for s in drawn}  # one kind per tag: the one the curves draw
    ranges: list[RangeCopies] = []
    for replayed in run.replayed or compute_replayed(run):  # a run not analysed yet: the same ranges, found now
        copies = range_copies(by_writer, replayed)
        per_step = per_step_tags(copies)
        chosen = sorted((c for c in copies if tag_matches(c.tag, tuple(patterns))),
                        key=lambda c: tag_rank(c.tag, per_step))
        ranges.append(RangeCopies(replayed, tuple(copy_table(c, c.tag in per_step, kind_of.get(c.tag, ""))
                                                  for c in chosen)))
    return AttemptsComparison(run, tuple(ranges))

