"""The rows of a run's scalar table, shared by export, ``Run.scalars()`` and ``show --json``'s point counts, so
they always agree. A row's key is (tag, step, attempt, source, seq).

For each tag the preferred source kind is used (``SOURCE_PRIORITY``: event files, then W&B, then the
Trainer state, then train.log), unless ``all_sources`` asks for every kind (the policy then applies within
each kind). ``all``: every record as written, none dropped; ``seq`` numbers the records of one (tag, step) that
one attempt wrote into one file (0, 1, ...: an epoch pseudo-metric written twice at a boundary, a step counter
that did not advance); ``newest``/``oldest``: every step once, from the latest/earliest writer, within one writer
the last/first record (the same choice as ``curves.merge``), keeping its ``seq``. Each row keeps the file it came
from and its attempt.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..model import Run, ScalarSeries
from ._facts import SOURCE_PRIORITY, source_kind
from .curves import POLICIES
from .distinct import strictly_increasing
from .names import encodable_text, name_text

if TYPE_CHECKING:
    import pandas as pd

NO_ATTEMPT = -1
"""``attempts`` value of a row whose source does not say which attempt wrote it."""


@dataclass(frozen=True, slots=True, eq=False)
class TagRows:
    """The selected rows of one tag from one source kind, sorted by step then attempt."""

    tag: str
    kind: str
    steps: np.ndarray
    values: np.ndarray
    wall_times_s: np.ndarray
    attempts: np.ndarray
    """int64 1-based attempt per row; ``NO_ATTEMPT`` where unknown."""
    source_index: np.ndarray
    """int64 index into ``sources`` per row."""
    sources: tuple[str, ...]
    """Run-relative files the rows came from."""
    seq: np.ndarray
    """int64 per row: 0 for the first record of its (tag, step, attempt, source), 1 for a repeat, ..."""

    def __len__(self) -> int:
        return int(self.steps.shape[0])


def _writer_order(series: list[ScalarSeries]) -> list[ScalarSeries]:
    """Writer order: attempt first (None sorts by position), then position in the run (as ``curves.merge``)."""
    keyed = sorted(((s.attempt if s.attempt is not None else i, i), s) for i, s in enumerate(series))
    return [s for _, s in keyed]


def select_rows(tag: str, kind: str, series: list[ScalarSeries], policy: str = "all") -> TagRows:
    """Apply the overlap policy to one tag's series of one source kind, keeping each row's file and attempt."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    ordered = [s for s in _writer_order(series) if len(s)]
    sources = tuple(dict.fromkeys(s.source for s in ordered))
    if not ordered:
        empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return TagRows(tag, kind, empty_i, empty_f, empty_f, empty_i, empty_i, sources, empty_i)
    if len(ordered) == 1 and strictly_increasing(ordered[0].steps):
        # One writer, steps strictly increasing (the usual case): every policy keeps every row, in order.
        only = ordered[0]
        n = len(only)
        return TagRows(tag, kind, only.steps.copy(), only.values.copy(), only.wall_times_s.copy(),
                       np.full(n, NO_ATTEMPT if only.attempt is None else only.attempt, dtype=np.int64),
                       np.zeros(n, dtype=np.int64), sources, np.zeros(n, dtype=np.int64))
    steps = np.concatenate([s.steps for s in ordered])
    attempt_of = [NO_ATTEMPT if s.attempt is None else s.attempt for s in ordered]
    attempts = np.concatenate([np.full(len(s), a, dtype=np.int64) for s, a in zip(ordered, attempt_of)])
    where = {source: i for i, source in enumerate(sources)}
    source_index = np.concatenate([np.full(len(s), where[s.source], dtype=np.int64) for s in ordered])
    writers = [(a, s.source) for s, a in zip(ordered, attempt_of)]
    if len(set(writers)) == len(writers) and all(strictly_increasing(s.steps) for s in ordered):
        seq = np.zeros(steps.shape[0], dtype=np.int64)  # one increasing series per (attempt, file): no repeat
    else:
        seq = repeat_numbers(steps, attempts, source_index)
    # The rows lie in writer order (rank), each writer's in the order logged (position): a stable sort by step
    # keeps that order among equal steps, as lexsort((position, rank, steps)) would, and merges the increasing
    # runs of a resumed log in one pass (timsort) where lexsort makes a pass per key.
    if policy == "all":
        # Every record as written: sorted by step, then attempt, each writer's records in the order logged.
        if all(a <= b for a, b in zip(attempt_of, attempt_of[1:])):  # attempts follow writer order: same ties
            chosen = np.argsort(steps, kind="stable")
        else:
            rank = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(ordered)])
            chosen = np.lexsort((np.arange(steps.shape[0], dtype=np.int64), rank, attempts, steps))
    else:
        order = np.argsort(steps, kind="stable")
        s_sorted = steps[order]
        keep = np.ones(order.shape[0], dtype=bool)
        if policy == "newest":
            keep[:-1] = s_sorted[1:] != s_sorted[:-1]
        else:
            keep[1:] = s_sorted[1:] != s_sorted[:-1]
        chosen = order[keep]
    values = np.concatenate([s.values for s in ordered])[chosen]
    walls = np.concatenate([s.wall_times_s for s in ordered])[chosen]
    return TagRows(tag, kind, steps[chosen], values, walls, attempts[chosen], source_index[chosen], sources,
                   seq[chosen])


def repeat_numbers(steps: np.ndarray, attempts: np.ndarray, source_index: np.ndarray) -> np.ndarray:
    """Per row (in the order given, which is the order logged within each file): how many records of the same
    (step, attempt, source) came before it."""
    n = steps.shape[0]
    order = np.lexsort((np.arange(n, dtype=np.int64), source_index, attempts, steps))
    s, a, f = steps[order], attempts[order], source_index[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (a[1:] != a[:-1]) | (f[1:] != f[:-1])
    starts = np.flatnonzero(new)
    first_of_group = np.repeat(starts, np.diff(np.append(starts, n)))
    seq = np.empty(n, dtype=np.int64)
    seq[order] = np.arange(n, dtype=np.int64) - first_of_group
    return seq


def tag_matches(tag: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when no patterns are given or the tag matches one of the globs."""
    return not patterns or any(fnmatch.fnmatchcase(tag, p) for p in patterns)


def tag_groups(run: Run, tags: tuple[str, ...] | list[str] | str, all_sources: bool,
                skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, str, list[ScalarSeries]]]:
    """(tag, source kind, its series) of the scalar table, tag by tag (sorted), preferred kind only unless
    ``all_sources``; series from the files in ``skip`` left out."""
    if isinstance(tags, str):
        tags = (tags,)
    by_tag: dict[str, dict[str, list[ScalarSeries]]] = {}
    for s in run.series:
        if (not tags or tag_matches(s.tag, tags)) and s.source not in skip:
            by_tag.setdefault(s.tag, {}).setdefault(s.source_kind or source_kind(run, s), []).append(s)
    for tag in sorted(by_tag):
        kinds = by_tag[tag]
        ranked = list(kinds) if len(kinds) == 1 else sorted(
            kinds, key=lambda k: SOURCE_PRIORITY.index(k) if k in SOURCE_PRIORITY else len(SOURCE_PRIORITY))
        if not all_sources:
            with_points = [k for k in ranked if any(len(s) for s in kinds[k])]
            ranked = with_points[:1] or ranked[:1]
        for kind in ranked:
            yield tag, kind, kinds[kind]


def scalar_rows(run: Run, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
                all_sources: bool = False) -> list[TagRows]:
    """The scalar table of a run, tag by tag (sorted), preferred source kind only unless ``all_sources``."""
    return list(iter_scalar_rows(run, tags, policy, all_sources))


def iter_scalar_rows(run: Run, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
                     all_sources: bool = False) -> Iterator[TagRows]:
    """``scalar_rows`` one tag at a time: a writer that streams keeps one tag's rows in memory, not the table."""
    for tag, kind, group in tag_groups(run, tags, all_sources):
        yield select_rows(tag, kind, group, policy)


@dataclass(frozen=True, slots=True)
class TagCount:
    """How many rows ``scalar_rows`` gives one tag (of one source kind), and their step range."""

    tag: str
    kind: str
    points: int
    first_step: int | None
    """Smallest step of the rows; None when there are none."""
    last_step: int | None
    """Largest step of the rows; None when there are none."""


def row_counts(run: Run, policy: str = "all") -> list[TagCount]:
    """Per tag of ``scalar_rows(run, policy=policy)``: its row count and step range, without building the rows.

    Under ``all`` every record is a row, so a tag's count is its number of points; one writer with strictly
    increasing steps (the usual case) keeps every point under any policy. Only other tags have their rows
    selected, one tag at a time, so memory stays near one tag's rows.
    """
    out: list[TagCount] = []
    for tag, kind, group in tag_groups(run, (), False):
        ordered = [s for s in group if len(s)]
        if not ordered:
            out.append(TagCount(tag, kind, 0, None, None))
            continue
        if len(ordered) == 1 and strictly_increasing(ordered[0].steps):
            steps = ordered[0].steps
            out.append(TagCount(tag, kind, int(steps.shape[0]), int(steps[0]), int(steps[-1])))
            continue
        if policy == "all":  # every record as written is a row
            out.append(TagCount(tag, kind, sum(len(s) for s in ordered), min(int(s.steps.min()) for s in ordered),
                                max(int(s.steps.max()) for s in ordered)))
            continue
        rows = select_rows(tag, kind, group, policy)
        n = len(rows)
        out.append(TagCount(tag, kind, n, int(rows.steps.min()) if n else None, int(rows.steps.max()) if n else None))
        del rows
    return out


COLUMNS = ("tag", "step", "value", "wall_time", "attempt", "source", "seq")


def to_frame(rows: list[TagRows]) -> pd.DataFrame:
    """The tidy DataFrame of ``Run.scalars()`` and ``export``: tag, step, value, wall_time, attempt, source, seq
    (``source`` by the one name escape, ``analysis.names.name_text``)."""
    import pandas as pd  # heavy (~0.5 s): only the Python API and export build DataFrames

    parts = []
    for block in rows:
        if not len(block):
            continue
        attempt = pd.array(np.where(block.attempts == NO_ATTEMPT, 0, block.attempts), dtype="Int64")
        attempt[block.attempts == NO_ATTEMPT] = pd.NA
        parts.append(pd.DataFrame({
            "tag": np.full(len(block), encodable_text(block.tag), dtype=object), "step": block.steps,
            "value": block.values, "wall_time": block.wall_times_s, "attempt": attempt,
            "source": np.asarray([name_text(s) for s in block.sources], dtype=object)[block.source_index],
            "seq": block.seq}))  # names by the one escape: a file name that is not UTF-8 is not a crash
    if not parts:
        return pd.DataFrame({"tag": pd.Series(dtype=object), "step": pd.Series(dtype="int64"),
                             "value": pd.Series(dtype="float64"), "wall_time": pd.Series(dtype="float64"),
                             "attempt": pd.Series(dtype="Int64"), "source": pd.Series(dtype=object),
                             "seq": pd.Series(dtype="int64")})
    return pd.concat(parts, ignore_index=True)
