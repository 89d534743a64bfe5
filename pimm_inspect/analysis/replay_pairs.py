"""The (step, writer) pairs behind ``Run.replayed``: per tag, the steps two or more of its writers logged, with each
of those writers, over every tag once, as sorted integer keys (``replays.written_ranges`` cuts them into ranges).

The tags of a run mostly share their steps (each logged at every step by each writer): a tag whose writers logged
the same steps as a tag already taken adds no pair and is not sorted again, and the keys are merged as they come,
so what is held is about one tag's points and the distinct pairs, never every tag's pairs at once.
"""

from __future__ import annotations

import numpy as np

from ..arrays import unique_sorted
from ..model import ScalarSeries
from .distinct import distinct_sorted, strictly_increasing
from .replay_copies import POINTS_PER_SERIES, Writer


def _steps_of(group: list[ScalarSeries]) -> np.ndarray:
    """One writer's distinct steps of one tag, sorted (the series' own array when it is increasing already)."""
    one = group[0].steps if len(group) == 1 else None
    return one if one is not None and strictly_increasing(one) else distinct_sorted([s.steps for s in group])


def _held_twice(parts: list[np.ndarray], ranks: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """One tag's (step, writer rank) pairs at the steps two or more of its writers logged, or None.

    ``parts`` are the distinct sorted steps of each writer (``ranks``) of the tag."""
    steps = np.concatenate(parts).astype(np.int64, copy=False)
    owner = np.repeat(np.asarray(ranks, dtype=np.int64), [p.shape[0] for p in parts])
    order = np.argsort(steps, kind="stable")
    steps, owner = steps[order], owner[order]
    same = steps[1:] == steps[:-1]
    if not same.any():
        return None
    twice = np.zeros(steps.shape[0], dtype=bool)
    twice[1:] |= same
    twice[:-1] |= same
    return steps[twice], owner[twice]


class _TagSeen:
    """Tags whose writers logged exactly the steps of a tag already taken (the tags of a run mostly share their
    steps, each logged at every step by each writer): their pairs add nothing, so they are never sorted again."""

    def __init__(self) -> None:
        self._seen: dict[tuple[tuple[int, int, int, int], ...], list[list[np.ndarray]]] = {}

    def known(self, ranks: list[int], parts: list[np.ndarray]) -> bool:
        """True when a tag with these writers and steps was taken before; else remember this one."""
        sign = tuple((r, p.shape[0], int(p[0]), int(p[-1])) if p.shape[0] else (r, 0, 0, 0)
                     for r, p in zip(ranks, parts))
        alike = self._seen.setdefault(sign, [])
        if any(all(np.array_equal(a, b) for a, b in zip(parts, other)) for other in alike):
            return True
        if len(alike) < 4:  # compared with a few at most: many tags alike at their ends stay linear
            alike.append(parts)
        return False


def pair_keys(by_tag: dict[str, dict[Writer, list[ScalarSeries]]], rank: dict[Writer, int],
              logged: np.ndarray) -> np.ndarray:
    """The distinct (step, writer) pairs of every tag at steps two or more of its writers logged, as sorted keys
    ``slot * len(rank) + writer rank`` (``slot``: the step's index in ``logged``, every step logged, sorted).

    A key is an index, so it fits whatever the steps (slots and ranks are both below the number of points). Tags
    alike are taken once, and the keys are merged as they come: what is held is a few times the distinct pairs,
    never every tag's pairs at once."""
    writers = len(rank)
    few = _few_keys(by_tag, rank, logged)
    if few is not None:
        return few
    seen = _TagSeen()
    merged = np.zeros(0, dtype=np.int64)
    pending: list[np.ndarray] = []
    waiting = 0
    for groups in by_tag.values():
        if len(groups) < 2:
            continue
        ordered = sorted(groups, key=rank.__getitem__)
        ranks = [rank[w] for w in ordered]
        parts = [_steps_of(groups[w]) for w in ordered]
        if seen.known(ranks, parts):
            continue
        held = _held_twice(parts, ranks)
        if held is None:
            continue
        keys = np.searchsorted(logged, held[0]) * writers + held[1]
        pending.append(keys)
        waiting += keys.shape[0]
        if waiting > 2 * merged.shape[0] + (1 << 20):  # merged now and then: the pairs of many tags never pile up
            merged, pending, waiting = unique_sorted(np.concatenate([merged, *pending])), [], 0
    return unique_sorted(np.concatenate([merged, *pending])) if pending else merged


FEW_POINTS = 512
"""``pair_keys`` of tags holding at most this many points together (or ``replay_copies.POINTS_PER_SERIES`` per
series, what numpy's calls for one cost) is worked out in Python (``_few_keys``)."""


def _few_keys(by_tag: dict[str, dict[Writer, list[ScalarSeries]]], rank: dict[Writer, int],
              logged: np.ndarray) -> np.ndarray | None:
    """``pair_keys`` of a few integer steps with sets and dicts (numpy's calls per tag cost more than the points);
    None when numpy should do it."""
    tags = [groups for groups in by_tag.values() if len(groups) > 1]
    series = [s for groups in tags for group in groups.values() for s in group]
    if sum(len(s) for s in series) > max(FEW_POINTS, POINTS_PER_SERIES * len(series)) or any(
            s.steps.dtype.kind != "i" for s in series):
        return None
    slot = {step: i for i, step in enumerate(logged.tolist())}  # every step logged: its index among them
    writers = len(rank)
    keys: set[int] = set()
    taken: set[tuple[tuple[int, tuple[tuple[str, bytes], ...]], ...]] = set()
    for groups in tags:
        # A tag whose writers logged exactly the steps of a tag taken before adds the same pairs: skipped.
        sign = tuple(sorted((rank[writer], tuple((s.steps.dtype.str, s.steps.tobytes()) for s in group))
                            for writer, group in groups.items()))
        if sign in taken:
            continue
        taken.add(sign)
        owners: dict[int, list[int]] = {}  # step -> ranks of the tag's writers that logged it
        for writer, group in groups.items():
            for step in {step for s in group for step in s.steps.tolist()}:
                owners.setdefault(step, []).append(rank[writer])
        for step, ranks in owners.items():
            if len(ranks) > 1:  # a step two or more of the tag's writers logged: each of them holds a copy
                at = slot.get(step)
                if at is None:
                    return None  # ``logged`` misses a step: numpy's searchsorted places it
                keys.update(at * writers + r for r in ranks)
    return np.array(sorted(keys), dtype=np.int64)
