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
from ._growable import extended, joined
from ._segments import release_freed_memory
from ._types import LogSegment, TrainLogIndex

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

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
        return np.searchsorted(self.newlines, starts).astype(np.int64) + (self.first_line_no - 1)

    def fast_rows(self, template: P.Template) -> F.FastRows | None:
        """The block's lines matching ``template``, scanned once per template; None if it has no token layout."""
        key = id(template)
        if key not in self._fast:
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


class IndexBuilder:
    """Train: line positions and attempt markers, gathered block by block."""

    def __init__(self) -> None:
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.markers: list[tuple[int, int, str]] = []
        self.prefix_attempts: np.ndarray | None = None
        """int32 attempts of the rows an earlier result's index holds (they are the first chunk)."""

    def extend_from(self, index: TrainLogIndex) -> None:
        """Start from an earlier result's index: its Train: rows and submitit markers come first."""
        if index.step_steps.size:
            self.chunks.append((index.step_steps, index.step_line_nos, index.step_offsets, 0))
            self.prefix_attempts = index.step_attempts
        self.markers += [(ln, off, kind) for ln, off, kind in zip(index.start_line_nos.tolist(),
                                                                   index.start_offsets.tolist(), index.start_kinds)
                         if kind == "submitit"]

    def add_chunk(self, attempt: int, steps: np.ndarray, line_nos: np.ndarray, offsets: np.ndarray) -> None:
        """Rows of consecutive Train: lines of one attempt."""
        if steps.size:
            self.chunks.append((steps, line_nos, offsets, attempt))

    def add_rows(self, attempt: int, steps: list[int], starts: list[int], ctx: BlockContext, delta: int) -> None:
        """Rows from the regex paths: ``starts`` are block positions of the lines."""
        pos = np.asarray(starts, dtype=np.int64)
        self.add_chunk(attempt, np.asarray(steps, dtype=np.int64), ctx.line_numbers(pos), pos + delta)

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

    def freeze(self, segments: tuple[LogSegment, ...]) -> TrainLogIndex:
        """The index; attempt starts come from the segments (header lines and E0 PID changes)."""
        chunks, self.chunks = self.chunks, []
        counts = [(c[0].size, c[3]) for c in chunks]
        columns: list[list[np.ndarray]] = [[c[0] for c in chunks], [c[1] for c in chunks], [c[2] for c in chunks]]
        del chunks

        grow = self.prefix_attempts is not None  # the first parts are an earlier index's: write after them

        def cat(i: int) -> np.ndarray:  # one column at a time, its parts dropped as it is joined
            parts, columns[i] = columns[i], []
            if grow:
                return extended(parts[0], parts[1:])
            if parts:
                return joined(parts)
            arr = np.zeros(0, np.int64)
            arr.flags.writeable = False
            return arr

        steps, line_nos, offsets = cat(0), cat(1), cat(2)
        if steps.size > 2_000_000:
            release_freed_memory()
        if self.prefix_attempts is not None:  # the first chunk is an earlier index's rows, each with its attempt
            attempts = extended(self.prefix_attempts, [np.repeat(
                np.asarray([a for _, a in counts[1:]], dtype=np.int32),
                np.asarray([n for n, _ in counts[1:]], dtype=np.int64))])
        else:
            attempts = np.repeat(np.asarray([a for _, a in counts], dtype=np.int32),
                                 np.asarray([n for n, _ in counts], dtype=np.int64))
            attempts = joined([attempts]) if attempts.size else attempts
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
            step_steps=steps, step_line_nos=line_nos, step_offsets=offsets, step_attempts=attempts)


def _frozen(values: list[Any], dtype: DTypeLike = np.int64) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    arr.flags.writeable = False
    return arr
