"""The ``Train:`` lines of a train.log block: the numpy template scan, the template regex and the generic parse.

The reader (``reader._Reader``) calls ``train_range`` for the stretch of a block between two interesting records.
Lines of the attempt's template are read by the vectorised scan (``_fast``) in a big block; in a small one (a
fixture-sized log, the last block of a file) by the template regex, whose rows wait in the attempt's ``pending``
list and become numpy chunks in ``flush`` together (the scan's fixed cost, a few hundred microseconds a block, is
more than the regex's on a few dozen lines). Lines of other shapes take the generic path. All three give the same
values (``float`` of the text, the same timestamp arithmetic); the tests compare them with a frozen reference reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...model import ScalarSeries
from .._limits import TagCap
from . import _patterns as P
from ._arena import Span, view
from ._fast import FastRows
from ._index import BlockContext, IndexBuilder

if TYPE_CHECKING:
    from ._segments import SegmentState

_FLUSH_ROWS = 100_000
SMALL_BLOCK_BYTES = 256 * 1024
"""A block up to this size with at most ``SMALL_BLOCK_HITS`` Train: lines is read without the numpy scan."""
SMALL_BLOCK_HITS = 96
"""Measured on generated logs of one template: the scan is faster from about 150-300 lines a block on."""
TRAIN_MARK = b"Train: ["


def small_block_hits(block: bytes) -> int:
    """The ``Train: [`` of a small block (``SMALL_BLOCK_BYTES``, ``SMALL_BLOCK_HITS``), read without the numpy scan;
    -1 for a block that takes the scan."""
    if len(block) > SMALL_BLOCK_BYTES:
        return -1
    hits = block.count(TRAIN_MARK)
    return hits if hits <= SMALL_BLOCK_HITS else -1


class TrainLines:
    """The Train: line paths of the reader (its state: ``ctx``, ``index``, ``cap``, ``line_no``, ``small``)."""

    ctx: BlockContext | None
    index: IndexBuilder
    cap: TagCap
    line_no: int
    small: bool
    """The current block takes the template regex rather than the numpy scan (``SMALL_BLOCK_BYTES``)."""

    def seg(self, start_line: int, start_offset: int) -> SegmentState:
        raise NotImplementedError

    def count_hits(self, block: bytes, lo: int, hi: int) -> int:
        """``Train: [`` in ``block[lo:hi]`` (from the block's hit positions, found once, in a big block)."""
        if self.small or hi - lo < 64:
            return block.count(TRAIN_MARK, lo, hi)
        assert self.ctx is not None  # set while block() reads a block
        return self.ctx.count_hits(lo, hi)

    def flush(self, seg: SegmentState) -> None:
        """Convert the segment's pending template rows into numpy chunks (and their line index rows)."""
        if not seg.pending:
            return
        assert seg.template is not None  # pending rows are only queued through the template
        rows, seg.pending = seg.pending, []
        cols = list(zip(*rows))
        walls = P.timestamps(cols[0])
        epochs, ipes = P.ints(cols[1]), P.ints(cols[4])
        steps = (epochs - 1) * ipes + P.ints(cols[3])
        for key, col in zip(seg.template[1], cols[5:]):
            seg.add_chunk(_tag(key), steps, P.floats(col), walls)
        seg.note_train(int(steps[0]), int(steps[-1]), len(rows), int(P.ints(cols[2][-1:])[0]), int(ipes[-1]))
        places, seg.pending_places = seg.pending_places, []
        line_nos = places[0][0] if len(places) == 1 else np.concatenate([p[0] for p in places])
        offsets = places[0][1] if len(places) == 1 else np.concatenate([p[1] for p in places])
        self.index.add_chunk(seg.index, steps, line_nos, offsets)

    def train_range(self, block: bytes, lo: int, hi: int, delta: int, use_fast: bool = True) -> None:
        """Parse the Train: records between two interesting records of a block."""
        ctx = self.ctx
        assert ctx is not None  # set while block() reads a block
        count = self.count_hits(block, lo, hi)
        if count == 0:
            return
        seg = self.seg(self.line_no, delta + lo + 1)
        if seg.template is None and seg.template_tries < 3:
            seg.template_tries += 1
            m = P.GENERIC_TRAIN.search(block, lo, hi)
            if m is not None and not m.group(2):
                seg.template = P.build_template(m.group(7))
                seg.template_tail = m.group(7) if seg.template is not None else None
        if seg.template is not None:
            fast = ctx.fast_rows(seg.template) if use_fast and not self.small else None
            if fast is not None:
                i, j, hits = fast.span(lo, hi)
                if j - i == count == hits:
                    self.flush(seg)
                    self.add_fast(seg, fast, i, j, delta)
                    return
                pieces = fast.pieces(lo, hi) if j > i else []
                if len(pieces) > 1:  # most lines are template lines: only the others take the regex paths
                    for piece_lo, piece_hi, accepted in pieces:
                        self.train_range(block, piece_lo, piece_hi, delta, use_fast=accepted)
                    return
            matches = list(seg.template[0].finditer(block, lo, hi))
            if matches and len(matches) == count:
                rows = [m.groups() for m in matches]
                seg.pending.extend(rows)
                last = rows[-1]
                seg.set_last(int(last[1]), int(last[3]), int(last[4]))
                starts = np.fromiter([m.start() + 1 for m in matches], np.int64, len(matches))
                seg.pending_places.append((ctx.line_numbers(starts), starts + delta))
                if len(seg.pending) >= _FLUSH_ROWS:
                    self.flush(seg)
                return
        self.flush(seg)
        self.generic_range(block, lo, hi, seg, delta)

    def add_fast(self, seg: SegmentState, fast: FastRows, i: int, j: int, delta: int) -> None:
        """Rows ``i:j`` of the block's template lines, as numpy chunks of the segment's series."""
        assert seg.template is not None and self.ctx is not None  # only called from train_range, which checked
        steps, walls = fast.steps[i:j], fast.walls[i:j]
        kept: np.ndarray | Span = steps
        for tag, col in zip(_tags(seg.template), fast.values):
            added = seg.add_chunk(tag, steps, col[i:j], walls, create=True)
            if added is not None:
                kept = added
        last = j - 1
        seg.note_train(int(steps[0]), int(steps[-1]), j - i, int(fast.max_epochs[last]), int(fast.ipes[last]))
        seg.set_last(int(fast.epochs[last]), int(fast.iters[last]), int(fast.ipes[last]))
        self.index.add_chunk(seg.index, kept if isinstance(kept, np.ndarray) else view(kept),
                             self.ctx.line_numbers(fast.starts[i:j]), fast.starts[i:j] + delta)

    def generic_range(self, block: bytes, lo: int, hi: int, seg: SegmentState, delta: int) -> None:
        """Slow path for Train: lines of other shapes (fragments, varying keys)."""
        points: dict[str, tuple[list[int], list[float], list[int]]] = {}
        stamps: list[bytes] = []
        steps: list[int] = []
        starts: list[int] = []
        last = None
        for m in P.GENERIC_TRAIN.finditer(block, lo, hi):
            ts, pre, ep, max_ep, it, ipe, tail = m.groups()
            step = (int(ep) - 1) * int(ipe) + int(it)
            row = len(stamps)
            stamps.append(ts)
            steps.append(step)
            starts.append(m.start() + 1)
            for key, value in P.parse_tail(pre) + P.parse_tail(tail):
                tag = self.cap.admit(_tag(key))
                if tag is None:  # past the file's cap on distinct tags: counted, not kept
                    self.cap.dropped_points += 1
                    continue
                lists = points.setdefault(tag, ([], [], []))
                lists[0].append(step)
                lists[1].append(P.to_float(value))
                lists[2].append(row)
            last = (int(ep), int(it), int(ipe), int(max_ep))
        if last is None:
            return
        assert self.ctx is not None  # set while block() reads a block
        walls = P.timestamps(tuple(stamps))
        all_steps = np.asarray(steps, np.int64)
        every_row = np.arange(len(steps))
        for tag, (s, v, rows) in points.items():
            row_array = np.asarray(rows, np.int64)
            if row_array.size == every_row.size and np.array_equal(row_array, every_row):
                # a term of every line: share the range's steps and times, so the joined series share them too
                seg.add_chunk(tag, all_steps, np.asarray(v, np.float64), walls)
            else:
                seg.add_chunk(tag, np.asarray(s, np.int64), np.asarray(v, np.float64), walls[row_array])
        seg.note_train(steps[0], steps[-1], len(steps), last[3], last[2])
        seg.set_last(last[0], last[1], last[2])
        self.index.add_rows(seg.index, steps, starts, self.ctx, delta)


def thinned(tag: str, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], rel_path: str,
            attempt: int | None, budget: int) -> ScalarSeries:
    """One series from chunks, every k-th point of each so that about ``budget`` remain."""
    from ...model import make_series

    total = sum(int(p[0].size) for p in parts)
    k = max(1, -(-total // budget))
    return make_series(tag, np.concatenate([p[0][::k] for p in parts]), np.concatenate([p[1][::k] for p in parts]),
                       np.concatenate([p[2][::k] for p in parts]), rel_path, attempt)


_TAGS: dict[int, tuple[P.Template, list[str]]] = {}


def _tags(template: P.Template) -> list[str]:
    """The writer tags of a template's terms (``_tag``), made once per template."""
    got = _TAGS.get(id(template))
    if got is None or got[0] is not template:
        if len(_TAGS) > 256:
            _TAGS.clear()
        got = _TAGS[id(template)] = (template, [_tag(key) for key in template[1]])
    return got[1]


def _tag(key: bytes) -> str:
    """Writer tag of a Train: term (spec 4.2)."""
    if key == b"Lr":
        return "params/lr"
    if key == b"Data":
        return "time/data_s"
    if key == b"Batch":
        return "time/batch_s"
    return "train_batch/" + key.decode("utf-8", "replace")
