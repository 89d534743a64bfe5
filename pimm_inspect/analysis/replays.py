"""Which steps exist more than once, and who wrote each copy: ``Run.replayed``, computed once per run.

A writer is an attempt when the source says which one wrote a point, else the file itself. For every step the set
of writers that logged it (over every tag, each tag from the source kind the curves draw) is found by sorting steps,
and ranges are cut wherever that set changes (not where one process's tags alternate rows: a step each attempt of a
range wrote, whatever the tag, continues it): three attempts over 51-75 and two over 76-90 are two ranges,
``51-75: 3 copies (#1 #2 #3)`` and ``76-90: 2 copies (#2 #3)``. When the writers are attempts with a known restore
point, a range is widened to the steps both really trained (a train.log that prints every fifth step logs only
55 of the 51-57 an attempt replayed). Cost: one sort per tag whose writers logged other steps than a tag taken
before (the tags of a run mostly share their steps), O(n log n) in its points, so 200,000 one-point files are one
sort, not 20 billion comparisons; what is held at once is one tag's points and the distinct (step, writer) pairs,
and Python loops over the ranges found, never over the steps (a file of ten back-to-back copies of 1M points each:
a few MB, not every tag's pairs).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..load.column_ranges import ColumnRanges
from ..model import Attempt, ReplayedRange, Run, ScalarSeries
from ._facts import SOURCE_PRIORITY, fmt_range, source_kind, stale_event_files
from .distinct import distinct_sorted
from .replay_pairs import pair_keys

Writer = int | str
"""An attempt index, or the run-relative path of a file whose points name no attempt."""


def drawn_series(run: Run, stale: set[str] | None = None) -> list[ScalarSeries]:
    """The series the curves draw: per tag the preferred source kind with points, stale event files left out
    (``stale``: the run's, when the caller has them)."""
    if stale is None:
        stale = stale_event_files(run)
    by_tag: dict[str, dict[str, list[ScalarSeries]]] = {}
    for s in run.series:
        if len(s) and s.source not in stale:
            by_tag.setdefault(s.tag, {}).setdefault(s.source_kind or source_kind(run, s), []).append(s)
    out: list[ScalarSeries] = []
    for kinds in by_tag.values():
        if len(kinds) == 1:  # one source kind (the usual case): nothing to rank
            out += next(iter(kinds.values()))
            continue
        ranked = sorted(kinds, key=lambda k: SOURCE_PRIORITY.index(k) if k in SOURCE_PRIORITY else len(SOURCE_PRIORITY))
        out += kinds[ranked[0]]
    return out


@dataclass(frozen=True, slots=True)
class _Written:
    """A step range in which every step was written by the same set of (two or more) writers."""

    first: int
    last: int
    writers: tuple[Writer, ...]


def _writer_of(s: ScalarSeries) -> Writer:
    return s.attempt if s.attempt is not None else s.source


def _writer_key(w: Writer) -> tuple[int, int, str]:
    return (1, 0, w) if isinstance(w, str) else (0, w, "")


def written_ranges(series: list[ScalarSeries]) -> list[_Written]:
    """Maximal runs of consecutive steps that share one set of two or more writers.

    A step is held by a writer set when some tag was logged at it by each of them (a tag logged on another axis,
    such as an epoch mean at epoch numbers, never meets the per-step tags of another attempt). Consecutive means
    consecutive among the steps held more than once; a range is cut where the set of writers changes. Steps are
    compared as arrays; Python loops over the ranges found, never over the steps.
    """
    by_tag: dict[str, dict[Writer, list[ScalarSeries]]] = defaultdict(lambda: defaultdict(list))
    for s in series:
        by_tag[s.tag][_writer_of(s)].append(s)
    writers = sorted({w for groups in by_tag.values() if len(groups) > 1 for w in groups}, key=_writer_key)
    if not writers:
        return []
    rank = {w: position for position, w in enumerate(writers)}
    logged = distinct_sorted([s.steps for s in series])  # a step logged once between two held ends a range
    keys = pair_keys(by_tag, rank, logged)
    if not keys.shape[0]:
        return []
    del by_tag
    slot_of, owner = np.divmod(keys, len(writers))
    del keys
    starts = np.flatnonzero(np.concatenate(([True], slot_of[1:] != slot_of[:-1])))  # one group per held step
    counts = np.diff(np.append(starts, slot_of.shape[0]))
    slot = slot_of[starts]
    del slot_of
    held_by = _HeldBy(series, logged, writers)
    same = _same_writers(owner, starts, counts)
    gap = np.zeros(slot.shape[0], dtype=bool)
    gap[1:] = slot[1:] != slot[:-1] + 1
    bridged = held_by.bridged(owner, starts, counts, slot, np.flatnonzero(same & gap))
    cut = ~same | (gap & ~bridged)
    cut[0] = True
    firsts = np.flatnonzero(cut)
    lasts = np.append(firsts[1:] - 1, slot.shape[0] - 1)
    out: list[_Written] = []
    spans: list[tuple[int, int]] = []  # each range's first and last slot among the logged steps
    for b, e in zip(firsts.tolist(), lasts.tolist()):  # the ranges, not the steps held twice
        members = tuple(writers[i] for i in owner[starts[b]:starts[b] + counts[b]].tolist())
        lo, hi = int(slot[b]), int(slot[e])
        out.append(_Written(int(logged[lo]), int(logged[hi]), members))
        spans.append((lo, hi))
    return [_Written(int(logged[lo]), int(logged[hi]), w.writers) if (lo, hi) != span else w
            for w, span, (lo, hi) in zip(out, spans, held_by.widen(out, spans))]


def _same_writers(owner: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per held step (a group of ``owner`` ranks from ``starts``, ``counts`` long): True when the step before it
    was held by the same writers (the first step: False)."""
    groups = starts.shape[0]
    same = np.zeros(groups, dtype=bool)
    if groups < 2:
        return same
    same[1:] = counts[1:] == counts[:-1]
    group_of = np.repeat(np.arange(groups), counts)
    at = np.flatnonzero(same[group_of])  # each pair of a step held by as many writers as the one before
    mine = group_of[at]
    before = owner[starts[mine - 1] + (at - starts[mine])]  # the pair in the same place one step before
    same[mine[owner[at] != before]] = False
    return same


class _HeldBy:
    """Which logged steps each attempt wrote (any tag): a step every writer of a range wrote continues it.

    One process may log its tags on alternating rows (``wins`` at one ``_step``, ``loss`` at the next), and the next
    process that replays those steps may alternate the other way round: no tag then meets its twin at every step,
    yet both processes wrote every step. Only attempts: files that name no attempt (tensorboardX's ``add_scalars``
    writes one file per tag at the same steps) are not known to be copies of one another.
    """

    def __init__(self, series: list[ScalarSeries], logged: np.ndarray, writers: list[Writer]) -> None:
        self._series = series
        self._logged = logged
        self._writers = writers
        self._steps: dict[Writer, np.ndarray] = {}

    @staticmethod
    def attempts_only(members: tuple[Writer, ...]) -> bool:
        return all(isinstance(w, int) for w in members)

    def _of(self, writer: Writer) -> np.ndarray:
        found = self._steps.get(writer)
        if found is None:
            found = distinct_sorted([s.steps for s in self._series if _writer_of(s) == writer])
            self._steps[writer] = found
        return found

    def bridged(self, owner: np.ndarray, starts: np.ndarray, counts: np.ndarray, slot: np.ndarray,
                asked: np.ndarray) -> np.ndarray:
        """Per held step (groups of ``owner`` ranks from ``starts``, ``counts`` long, at ``slot`` among the logged
        steps), True for those ``asked`` about (each held by the writers of the held step before it, with logged
        steps between the two) whose writers are all attempts and each wrote every logged step between."""
        out = np.zeros(slot.shape[0], dtype=bool)
        if not asked.shape[0]:
            return out
        attempt = np.asarray([isinstance(w, int) for w in self._writers], dtype=bool)
        asked = asked[np.logical_and.reduceat(attempt[owner], starts)[asked]]
        out[asked] = True
        if not asked.shape[0]:
            return out
        sizes = counts[asked]
        group = np.repeat(asked, sizes)  # every (held step, writer) pair of the steps asked about
        pair = np.repeat(starts[asked] - np.cumsum(sizes) + sizes, sizes) + np.arange(group.shape[0])
        who = owner[pair]
        first, last = self._logged[slot[group - 1] + 1], self._logged[slot[group] - 1]
        between = slot[group] - slot[group - 1] - 1
        for w in np.unique(who).tolist():  # once per writer, not once per step
            mine = who == w
            wrote = self._of(self._writers[w])
            inside = np.searchsorted(wrote, last[mine], side="right") - np.searchsorted(wrote, first[mine], side="left")
            out[group[mine][inside != between[mine]]] = False
        return out

    def every_step(self, members: tuple[Writer, ...], lo: int, hi: int) -> bool:
        """True when each writer wrote every logged step of slots ``lo``..``hi`` (an empty span: True)."""
        if lo > hi:
            return True
        first, last = self._logged[lo], self._logged[hi]
        for w in members:
            steps = self._of(w)
            inside = int(np.searchsorted(steps, last, side="right") - np.searchsorted(steps, first, side="left"))
            if inside != hi - lo + 1:
                return False
        return True

    def widen(self, ranges: list[_Written], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Each attempts' range widened over the neighbouring logged steps every one of its writers wrote, never into
        the next or previous range (found by halving: if every writer wrote slots j..lo-1, they wrote j+1..lo-1)."""
        out: list[tuple[int, int]] = []
        for i, (w, (lo, hi)) in enumerate(zip(ranges, spans)):
            if self.attempts_only(w.writers):
                floor = out[-1][1] + 1 if out else 0
                ceiling = spans[i + 1][0] - 1 if i + 1 < len(spans) else len(self._logged) - 1
                a, b = floor, lo  # the smallest j in floor..lo with every step of j..lo-1 written by all
                while a < b:
                    mid = (a + b) // 2
                    a, b = (a, mid) if self.every_step(w.writers, mid, lo - 1) else (mid + 1, b)
                lo = a
                a, b = hi, ceiling  # the largest j in hi..ceiling with every step of hi+1..j written by all
                while a < b:
                    mid = (a + b + 1) // 2
                    a, b = (mid, b) if self.every_step(w.writers, hi + 1, mid) else (a, mid - 1)
                hi = a
            out.append((lo, hi))
        return out


def _trained_span(att: Attempt) -> tuple[int, int] | None:
    """The steps an attempt trained: from its restore point + 1 (else its first step) to its last step."""
    if att.first_step is None or att.last_step is None:
        return None
    start = att.first_step
    if att.restore_step is not None and att.restore_step + 1 <= att.first_step:
        start = att.restore_step + 1
    return start, att.last_step


class _Spans:
    """Every attempt's trained span, and all span edges sorted, built once per run (not once per range)."""

    def __init__(self, run: Run) -> None:
        self.by_index = {a.index: a for a in run.attempts}
        edges: list[tuple[int, int]] = []  # (step where the set of training attempts changes, attempt)
        for a in run.attempts:
            span = _trained_span(a)
            if span is not None:
                edges += [(span[0], a.index), (span[1] + 1, a.index)]
        edges.sort()
        self.steps = np.asarray([e for e, _a in edges], dtype=np.int64)
        self.owners = [a for _e, a in edges]

    def widen(self, written: _Written) -> tuple[int, int]:
        """A range of attempts' copies widened to the steps every one of those attempts trained, when that
        holds it, up to where another attempt's training begins or ends (there the set of copies changes)."""
        if not written.writers or not all(isinstance(w, int) for w in written.writers):
            return written.first, written.last
        newest = self.by_index.get(max(w for w in written.writers if isinstance(w, int)))
        if newest is None or newest.restore_step is None or newest.origin == "restart":
            return written.first, written.last  # only a resume says which steps were trained again, unlogged too
        spans = [_trained_span(self.by_index[w]) if w in self.by_index else None
                 for w in written.writers if isinstance(w, int)]
        if any(span is None for span in spans):
            return written.first, written.last
        lo = max(span[0] for span in spans if span is not None)
        hi = min(span[1] for span in spans if span is not None)
        if not (lo <= written.first and written.last <= hi):
            return written.first, written.last
        mine = set(written.writers)
        at = int(np.searchsorted(self.steps, written.last, side="right"))  # first edge after the range
        while at < len(self.owners) and int(self.steps[at]) <= hi:
            if self.owners[at] not in mine:
                hi = int(self.steps[at]) - 1
                break
            at += 1
        at = int(np.searchsorted(self.steps, written.first, side="right")) - 1  # last edge at or before it
        while at >= 0 and int(self.steps[at]) > lo:
            if self.owners[at] not in mine:
                lo = int(self.steps[at])
                break
            at -= 1
        return lo, hi


def compute_replayed(run: Run) -> tuple[ReplayedRange, ...]:
    """Every step range held more than once, with its copy count and writers, oldest step first."""
    stale = stale_event_files(run)
    written_all = written_ranges(drawn_series(run, stale))
    ranges: dict[tuple[int, int, tuple[Writer, ...]], ReplayedRange] = {}
    by_attempt: dict[int, list[tuple[str, tuple[int, int]]]] = defaultdict(list)  # every copy's file and steps
    columns = ColumnRanges()  # each step column scanned once, not once per range
    for s in run.series if written_all else ():  # (no range held twice, the usual case: no copy to name)
        if s.attempt is not None and len(s) and s.source not in stale:
            span = columns.steps(s)
            assert span is not None  # the series is not empty
            by_attempt[s.attempt].append((s.source, span))
    spans = _Spans(run) if written_all else None
    for written in written_all:
        assert spans is not None
        first, last = spans.widen(written)
        attempts = tuple(w for w in written.writers if isinstance(w, int))
        files = {w for w in written.writers if isinstance(w, str)}
        paths = sorted(files | {source for a in attempts for source, (lo, hi) in by_attempt[a]
                                if lo <= last and hi >= first})
        key = (first, last, written.writers)
        ranges.setdefault(key, ReplayedRange(first, last, len(written.writers), attempts, tuple(paths)))
    if not ranges and run.hf is not None:
        for first, last in _trainer_overlaps(run):  # the Trainer's attempts trained these steps twice
            who = tuple(a.index for a in run.attempts if a.first_step is not None and a.last_step is not None
                        and a.first_step <= last and a.last_step >= first)
            ranges[(first, last, who)] = ReplayedRange(first, last, max(2, len(who)), who if len(who) > 1 else (),
                                                       ("trainer_state.json",))
    return tuple(sorted(ranges.values(), key=lambda r: (r.first_step, r.last_step)))


def _trainer_overlaps(run: Run) -> list[tuple[int, int]]:
    """Steps an HF Trainer run trained twice: for each later attempt, from its restore point + 1 (else its first
    step) to where it and an earlier attempt both got, and the steps where a checkpoint's log_history holds other
    values than the newest state's (another attempt's rows); overlapping ranges merged. The Trainer's
    ``trainer_state.json`` keeps one history, so its series alone cannot show the second copy. The one rule: the
    HF reader only reports the spans and the conflicting rows."""
    spans: list[tuple[int, int]] = list(run.hf.history_conflicts) if run.hf is not None else []
    for j, later in enumerate(run.attempts):
        for earlier in run.attempts[:j]:
            if None in (later.first_step, later.last_step, earlier.first_step, earlier.last_step):
                continue
            assert later.first_step is not None and later.last_step is not None
            assert earlier.first_step is not None and earlier.last_step is not None
            lo = later.first_step if later.restore_step is None else later.restore_step + 1
            lo, hi = max(lo, earlier.first_step), min(earlier.last_step, later.last_step)
            if later.origin != "restart" and lo <= hi:
                spans.append((lo, hi))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def marks(attempts: tuple[int, ...], limit: int = 8) -> str:
    """``#1 #2 #3``; past ``limit`` attempts the first few and the last: ``#1 #2 #3 ... #1000``."""
    if len(attempts) <= limit:
        return " ".join(f"#{a}" for a in attempts)
    return " ".join(f"#{a}" for a in attempts[:limit - 2]) + f" ... #{attempts[-1]}"


def describe(r: ReplayedRange) -> str:
    """``51-75: 3 copies (#1 #2 #3)``; files stand in for writers that are not attempts."""
    who = marks(r.attempts) if r.attempts else ", ".join(r.paths[:3]) + (
        f" and {len(r.paths) - 3} more" if len(r.paths) > 3 else "")
    return f"{fmt_range(r.first_step, r.last_step)}: {r.copies} copies ({who})"
