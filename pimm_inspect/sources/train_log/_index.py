"""Per-block numpy views and the compact line index of the train.log reader.

``BlockContext`` computes a block's newline and space positions once (lazily: a block
without Train: lines never needs them) and keeps the vectorised template scan of each
template used in the block. ``IndexBuilder`` collects, in file order, the global step,
line number and byte offset of every Train: line, plus the attempt start and submitit
marker lines, and freezes them into a ``TrainLogIndex`` of numpy arrays.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _fast as F
from . import _patterns as P
from ._arena import Arenas, view
from ._growable import extended, joined, kept
from ...arrays import release_freed_memory
from ._types import LogSegment, TrainLogIndex

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ...model import ScalarSeries

    from ...model import ScalarSeries

SUBMITIT_MARK = b"pimm submitit attempt "
"""Printed by pimm's submitit launcher for each attempt (spec 7); only seen here when stdout shares the file."""
_SUBMITIT_LINE = re.compile(rb"(?:Requeueing )?pimm submitit attempt (\d{1,9})/(\d{1,9})")


class BlockContext:
    """Numpy views of one block (with its leading ``\\n``), computed on first use."""

    def __init__(self, block: bytes, first_line_no: int) -> None:
        self.block = block
        self.first_line_no = first_line_no
        """Line number of the line starting at ``block[1]``."""
        self._buf: np.ndarray | None = None
        self._newlines: np.ndarray | None = None
        self._spaces: np.ndarray | None = None
        self._hits: np.ndarray | None = None
        self._fast: dict[int, F.FastRows | None] = {}
        self._scanned: tuple[P.Template, F.FastRows | None] | None = None
        """A scan made elsewhere (``_ahead``): the template it used and its result."""

    def preset(self, newlines: np.ndarray, hits: np.ndarray, tail: bytes | None, rows: F.FastRows | None) -> None:
        """The block's newlines and hits, and the scan with the template built from ``tail``, computed elsewhere
        (``_ahead``: the same functions of the same bytes)."""
        self._newlines, self._hits = newlines, hits
        template = _template_of(tail) if tail is not None else None
        if template is not None:
            self._scanned = (template, rows)

    @property
    def buf(self) -> np.ndarray:
        if self._buf is None:
            self._buf = np.frombuffer(self.block, dtype=np.uint8)
        return self._buf

    @property
    def newlines(self) -> np.ndarray:
        if self._newlines is None:
            self._newlines = np.flatnonzero(self.buf == 10)
        return self._newlines

    @property
    def hits(self) -> np.ndarray:
        """Positions of every ``Train: [`` in the block."""
        if self._hits is None:
            self._hits = F.find_hits(self.buf)
        return self._hits

    def count_hits(self, lo: int, hi: int) -> int:
        """``block.count(b"Train: [", lo, hi)``, from the positions found once."""
        a, b = np.searchsorted(self.hits, (lo, hi - 7))
        return int(b - a)

    def line_numbers(self, starts: np.ndarray) -> np.ndarray:
        """Line numbers of the lines starting at block positions ``starts`` (each after a newline)."""
        return self.newlines.searchsorted(starts).astype(np.int64) + (self.first_line_no - 1)

    def fast_rows(self, template: P.Template) -> F.FastRows | None:
        """The block's lines matching ``template``, scanned once per template; None if it has no token layout."""
        key = id(template)
        if key not in self._fast:
            scanned = self._scanned
            if scanned is not None and _same_template(scanned[0], template):
                self._fast[key] = scanned[1]
            else:
                self._fast[key] = self._scan(template)
        return self._fast[key]

    def _scan(self, template: P.Template) -> F.FastRows | None:
        tokens = F.template_tokens(template[2])
        if tokens is None:
            return None
        return F.scan(self.block, self.buf, self.hits, self.newlines, self._spaces_of, template[0], tokens,
                      sum(1 for kind, _ in tokens if kind == "value"))

    def _spaces_of(self) -> np.ndarray:
        if self._spaces is None:
            self._spaces = np.flatnonzero(self.buf == 32)
        return self._spaces


_TEMPLATES: dict[bytes, P.Template | None] = {}
"""Templates built from the tails a scanning child used (a handful per file)."""


def _template_of(tail: bytes) -> P.Template | None:
    if tail not in _TEMPLATES:
        if len(_TEMPLATES) > 64:
            _TEMPLATES.clear()
        _TEMPLATES[tail] = P.build_template(tail)
    return _TEMPLATES[tail]


def _same_template(a: P.Template, b: P.Template) -> bool:
    """Templates that scan alike: the same pattern, keys and spec (``_fast.scan`` reads nothing else of them)."""
    return a is b or (a[0].pattern == b[0].pattern and a[0].flags == b[0].flags and a[1] == b[1] and a[2] == b[2])


class IndexBuilder:
    """Train: line positions and attempt markers, gathered block by block.

    Line numbers are kept as runs (``TrainLogIndex.step_line_runs``), offsets as uint32 while they fit (a log under
    4 GiB), attempts in the narrowest unsigned type; the steps are not copied when one series of the only attempt has
    a point on every Train: line (the index then holds that series' steps array). A chunk is (steps, line runs,
    offsets, attempt).
    """

    def __init__(self) -> None:
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.rows = 0
        """Rows added so far (the first row of the next chunk)."""
        self.markers: list[tuple[int, int, str]] = []
        self.prefix_attempts: np.ndarray | None = None
        """Attempts of the rows an earlier result's index holds (they are the first chunk)."""
        self.arenas: Arenas | None = None
        """The reader's column buffers (``_arena``): the offsets column is written there as it grows."""

    def extend_from(self, index: TrainLogIndex) -> None:
        """Start from an earlier result's index: its Train: rows and submitit markers come first."""
        if index.step_steps.size:
            self.chunks.append((index.step_steps, index.step_line_runs, index.step_offsets, 0))
            self.prefix_attempts = index.step_attempts
            self.rows = int(index.step_steps.size)
        self.markers += [(ln, off, kind) for ln, off, kind in zip(index.start_line_nos.tolist(),
                                                                   index.start_offsets.tolist(), index.start_kinds)
                         if kind == "submitit"]

    def add_chunk(self, attempt: int, steps: np.ndarray, line_nos: np.ndarray, offsets: np.ndarray) -> None:
        """Rows of consecutive Train: lines of one attempt."""
        if steps.size:
            offsets = narrow_positions(offsets)
            at = self.arenas.put(("o", ""), offsets, create=True) if self.arenas is not None else None
            self.chunks.append((steps, line_runs(line_nos, self.rows), offsets if at is None else view(at), attempt))
            self.rows += int(steps.size)

    def add_rows(self, attempt: int, steps: list[int], starts: list[int], ctx: BlockContext, delta: int) -> None:
        """Rows from the regex paths: ``starts`` are block positions of the lines."""
        pos = np.asarray(starts, dtype=np.int64)
        self.add_chunk(attempt, np.asarray(steps, dtype=np.int64), ctx.line_numbers(pos), pos + delta)

    def rebase_steps(self, parts: list[np.ndarray], column: np.ndarray) -> None:
        """``column`` is ``parts`` joined (a series' steps): rows holding one of those parts now hold a view of the
        column instead, so the parts can be freed."""
        where: dict[int, tuple[int, int]] = {}
        pos = 0
        for part in parts:  # all alive (the caller holds them): ids are unique
            where.setdefault(id(part), (pos, int(part.size)))
            pos += int(part.size)
        for i, (steps, runs, offsets, attempt) in enumerate(self.chunks):
            hit = where.get(id(steps))
            if hit is not None:
                self.chunks[i] = (column[hit[0]:hit[0] + hit[1]], runs, offsets, attempt)

    def scan_submitit(self, ctx: BlockContext, delta: int) -> None:
        """Lines holding a submitit attempt marker."""
        block = ctx.block
        pos = block.find(SUBMITIT_MARK)
        while pos >= 0:
            ls = block.rfind(b"\n", 0, pos) + 1
            end = block.find(b"\n", pos)
            m = _SUBMITIT_LINE.search(block, ls, end if end >= 0 else len(block))
            if m is not None:
                line_no = int(ctx.line_numbers(np.asarray([ls], dtype=np.int64))[0])
                self.markers.append((line_no, delta + ls, "submitit"))
            pos = block.find(SUBMITIT_MARK, end if end >= 0 else len(block))

    def _shared_steps(self, chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]],
                      series: tuple[ScalarSeries, ...] | list[ScalarSeries]) -> np.ndarray | None:
        """A series' steps array equal to the index's steps column, or None.

        Only when every row is of one attempt (a series holds one attempt's points) and a series of it has a point on
        each Train: line in file order, as every term of the usual template line has; compared part by part.
        """
        if not chunks:
            return None
        grow = self.prefix_attempts is not None
        attempts = {c[3] for c in chunks[1:]} if grow else {c[3] for c in chunks}
        if self.prefix_attempts is not None:
            attempts |= {int(self.prefix_attempts[0]), int(self.prefix_attempts[-1])}  # nondecreasing in file order
        if len(attempts) != 1:
            return None
        (attempt,) = attempts
        total = sum(int(c[0].size) for c in chunks)
        tried: set[int] = set()
        for s in series:
            steps = s.steps
            if s.attempt != attempt or steps.size != total or steps.dtype != np.int64 or id(steps) in tried:
                continue
            tried.add(id(steps))
            pos = 0
            for c in chunks:
                n = int(c[0].size)
                if not np.array_equal(c[0], steps[pos:pos + n]):
                    break
                pos += n
            else:
                return steps
        return None

    def freeze(self, segments: tuple[LogSegment, ...],
               series: tuple[ScalarSeries, ...] | list[ScalarSeries] = ()) -> TrainLogIndex:
        """The index; attempt starts come from the segments (header lines and E0 PID changes); ``series`` are the
        result's, whose steps the index may share (``_shared_steps``)."""
        chunks, self.chunks = self.chunks, []
        counts = [(c[0].size, c[3]) for c in chunks]
        shared = self._shared_steps(chunks, series)
        columns: list[list[np.ndarray]] = [[] if shared is not None else [c[0] for c in chunks], [],
                                           [c[2] for c in chunks]]
        runs = _joined_runs([c[1] for c in chunks])
        del chunks

        grow = self.prefix_attempts is not None  # the first parts are an earlier index's: write after them
        release = release_freed_memory if sum(n for n, _ in counts) > 2_000_000 else None

        def cat(i: int) -> np.ndarray:  # one column at a time, its parts dropped as they are copied
            parts, columns[i] = columns[i], []
            dtype = np.dtype(np.int64) if i == 0 else _widest(parts)
            if grow:
                return extended(parts[0], parts[1:], dtype)
            whole = self.arenas.slice_of(parts) if self.arenas is not None and parts else None
            if whole is not None and whole.dtype == dtype:  # written one after another into one buffer
                return whole
            if parts:
                whole = kept(parts, dtype)
                return whole if whole is not None else joined(parts, dtype, release=release)
            arr = np.zeros(0, np.int64)
            arr.flags.writeable = False
            return arr

        steps = shared if shared is not None else cat(0)
        offsets = cat(2)
        if release is not None:
            release()
        if self.prefix_attempts is not None:  # the first chunk is an earlier index's rows, each with its attempt
            top = max([a for _, a in counts[1:]], default=0)
            attempts = extended(self.prefix_attempts, [np.repeat(
                np.asarray([a for _, a in counts[1:]], dtype=np.int64),
                np.asarray([n for n, _ in counts[1:]], dtype=np.int64))],
                np.promote_types(self.prefix_attempts.dtype, _attempt_type(top)))
        else:
            attempts = np.repeat(np.asarray([a for _, a in counts], dtype=_attempt_type(max([a for _, a in counts],
                                                                                              default=0))),
                                 np.asarray([n for n, _ in counts], dtype=np.int64))
            if attempts.size and kept([attempts]) is None:
                attempts = joined([attempts])
        attempts.flags.writeable = False
        # A segment without a header that starts after byte 0 begins at an E0 PID change; the one at
        # byte 0 is only text before the first header.
        starts = [(s.start_line, s.start_offset, "config" if s.has_header else "pid", s.train_lines > 0, s.index)
                  for s in segments if s.has_header or s.start_offset > 0]
        marks = sorted(starts + [(ln, off, kind, False, 0) for ln, off, kind in self.markers])
        return TrainLogIndex(
            start_line_nos=_frozen([m[0] for m in marks]), start_offsets=_frozen([m[1] for m in marks]),
            start_kinds=tuple(m[2] for m in marks), start_trains=_frozen([m[3] for m in marks], bool),
            start_attempts=_frozen([m[4] for m in marks], np.int32),
            step_steps=steps, step_line_runs=runs, step_offsets=offsets, step_attempts=attempts)


_U32 = 1 << 32


def narrow_positions(values: np.ndarray) -> np.ndarray:
    """Increasing line numbers or byte offsets (int64) as uint32 when the last one fits, else as they are."""
    if values.dtype == np.int64 and values.size and int(values[-1]) < _U32:
        return values.astype(np.uint32)
    return values


def line_runs(line_nos: np.ndarray, first_row: int) -> np.ndarray:
    """The (row, base) runs of rows ``first_row`` on with these increasing line numbers: row r's line is r + base."""
    base = line_nos.astype(np.int64) - np.arange(first_row, first_row + line_nos.size, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], base[1:] != base[:-1])))
    runs = np.empty((starts.size, 2), dtype=np.int64)
    runs[:, 0] = starts + first_row
    runs[:, 1] = base[starts]
    return runs


def _joined_runs(parts: list[np.ndarray]) -> np.ndarray:
    """The runs of consecutive chunks as one (k, 2) int64 array, a run that goes on in the next chunk kept once (so
    an extended index holds the very runs of a whole read)."""
    if not parts:
        runs = np.zeros((0, 2), dtype=np.int64)
    else:
        runs = np.concatenate(parts).astype(np.int64, copy=False)
        keep = np.concatenate(([True], runs[1:, 1] != runs[:-1, 1]))
        runs = runs[keep] if not keep.all() else runs.copy()
    runs.flags.writeable = False
    return runs


def _widest(parts: list[np.ndarray]) -> np.dtype:
    """uint32 when every part is (positions that fit), else int64."""
    return np.dtype(np.uint32) if all(p.dtype == np.uint32 for p in parts) else np.dtype(np.int64)


def _attempt_type(top: int) -> np.dtype:
    """The narrowest unsigned type holding attempt numbers up to ``top`` (int32 beyond uint16, as before)."""
    if top <= 0xFF:
        return np.dtype(np.uint8)
    if top <= 0xFFFF:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def _frozen(values: list[Any], dtype: DTypeLike = np.int64) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    arr.flags.writeable = False
    return arr
