"""An attempt's series as the train.log reader gathers them: numpy chunks per tag, and points one by one.

Chunks go into the reader's column buffers where it has them (``_arena``): a chunk that goes on where its tag's last
one ends widens it, so a tag holds a handful of chunks; ``sync_chunks`` brings the last ones up to date before they
are read (a preview of what was read so far, or the join of ``_segments.finalize_segment``).
"""

from __future__ import annotations

import numpy as np

from .._limits import TagCap
from . import _patterns as P
from ._arena import Arenas, Span, view


class SeriesChunks:
    """Per tag: its chunks of (steps, values, wall times) and its points from single records."""

    def __init__(self) -> None:
        self.chunks: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.points: dict[str, tuple[list[int], list[float], list[float]]] = {}
        self.seeded: set[str] = set()
        """Tags whose first chunk is an earlier result's whole series (an extended attempt)."""
        self.cap: TagCap | None = None
        """The file's cap on distinct tags (shared by its attempts); None: no cap (a segment read on its own)."""
        self.arenas: Arenas | None = None
        """The reader's column buffers (``_arena``); None: chunks are kept as they come."""
        self._copied: dict[str, tuple[np.ndarray, Span]] = {}
        """The last steps / times chunk copied into a buffer, and its place (the next tags of its lines share it)."""
        self._spans: dict[str, tuple[Span, Span, Span]] = {}
        """Per tag, where its last chunk lies in the buffers (when all three columns are in one)."""
        self._views: dict[tuple[int, int, int], np.ndarray] = {}
        """Views of spans made lately, by (buffer id, start, stop) (``_view``)."""
        self._wall: tuple[str, float] = ("", 0.0)
        """The last timestamp text ``add_point`` converted, and its seconds (a record's points share its time)."""

    # -- series -----------------------------------------------------------
    def add_chunk(self, tag: str, steps: np.ndarray, values: np.ndarray, walls: np.ndarray,
                  create: bool = False) -> np.ndarray | Span | None:
        """Append numpy points of one tag (none of a tag past the file's cap: those are counted); returns the steps
        kept: the array, or its place in a column buffer (``_arena``); None when dropped.

        With the reader's buffers the chunk is copied into its columns' buffers where they exist (``create``: made
        when missing, for the template path's tags); the steps and times the tags of a line share are copied once,
        under the first tag added with them. A chunk that goes on where the tag's last one ends in all three buffers
        widens that one (``chunks`` is brought up to date by ``sync_chunks``): a tag holds a handful of chunks, not one
        per block piece (~9,000 on a 1 GB log, whose Python objects were ~25 MB).
        """
        if self.cap is not None:
            stored = self.cap.admit(tag)
            if stored is None:
                self.cap.dropped_points += int(steps.shape[0])
                return None
            tag = stored
        arenas = self.arenas
        if arenas is not None:
            at = arenas.put(("v", tag), values, create)
            if at is not None:
                s_at, w_at = self._shared(arenas, "s", tag, steps, create), self._shared(arenas, "w", tag, walls, create)
                if isinstance(s_at, tuple) and isinstance(w_at, tuple):
                    self._add_spans(tag, (s_at, at, w_at))
                    return s_at
                steps = s_at if isinstance(s_at, np.ndarray) else self._view(s_at)
                walls = w_at if isinstance(w_at, np.ndarray) else self._view(w_at)
                values = view(at)
        self._close_span(tag)
        self.chunks.setdefault(tag, []).append((steps, values, walls))
        return steps

    def _add_spans(self, tag: str, spans: tuple[Span, Span, Span]) -> None:
        """A chunk whose three columns are in buffers: the tag's last one widened when it ends where this starts."""
        last = self._spans.get(tag)
        if (last is not None and last[0][0] is spans[0][0] and last[0][2] == spans[0][1] and last[1][0] is spans[1][0]
                and last[1][2] == spans[1][1] and last[2][0] is spans[2][0] and last[2][2] == spans[2][1]):
            self._spans[tag] = ((last[0][0], last[0][1], spans[0][2]), (last[1][0], last[1][1], spans[1][2]),
                                (last[2][0], last[2][1], spans[2][2]))
            return
        self._close_span(tag)
        self.chunks.setdefault(tag, []).append(self._views_of(spans))
        self._spans[tag] = spans

    def _close_span(self, tag: str) -> None:
        """The tag's last chunk made current (its views cover what was added to it); later ones are appended."""
        last = self._spans.pop(tag, None)
        if last is not None:
            self.chunks[tag][-1] = self._views_of(last)

    def clear_spans(self) -> None:
        """Forget where the last chunks lie (their chunks were taken: ``finalize_segment``)."""
        self._spans.clear()
        self._views.clear()

    def sync_chunks(self) -> dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """``chunks`` with every tag's last chunk covering all its points (before a preview or the join)."""
        for tag, last in self._spans.items():
            self.chunks[tag][-1] = self._views_of(last)
        return self.chunks

    def _views_of(self, spans: tuple[Span, Span, Span]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._view(spans[0]), view(spans[1]), self._view(spans[2])

    def _view(self, span: Span) -> np.ndarray:
        """The view of ``span``, one object for tags that ask for the same span (the join groups tags by the chunk
        arrays they hold: tags sharing steps share them after the join, as they did without buffers)."""
        key = (id(span[0]), span[1], span[2])
        out = self._views.get(key)
        if out is None:
            if len(self._views) >= 256:  # the tags of one line ask one after another: older spans are not asked again
                self._views.clear()
            out = self._views[key] = view(span)
        return out

    def _shared(self, arenas: Arenas, kind: str, tag: str, chunk: np.ndarray, create: bool) -> Span | np.ndarray:
        """The place of ``chunk`` (steps or times, shared by the tags of the lines it came with) in a buffer, copied
        once; the chunk itself when it has none."""
        last = self._copied.get(kind)
        if last is not None and last[0] is chunk:
            return last[1]
        at = arenas.put((kind, tag), chunk, create)
        if at is None:
            return chunk
        self._copied[kind] = (chunk, at)
        return at

    def seed_chunk(self, tag: str, steps: np.ndarray, values: np.ndarray, walls: np.ndarray) -> None:
        """Start a tag with the points an earlier result already holds (extending this attempt)."""
        self.chunks[tag] = [(steps, values, walls)]
        self.seeded.add(tag)

    def add_point(self, tag: str, step: int | None, value: float, ts: str) -> None:
        """Append one point from an evaluation/summary record; dropped when its step is unknown."""
        if step is None:
            return
        if self.cap is not None:
            stored = self.cap.admit(tag)
            if stored is None:
                self.cap.dropped_points += 1
                return
            tag = stored
        lists = self.points.setdefault(tag, ([], [], []))
        lists[0].append(step)
        lists[1].append(value)
        if self._wall[0] != ts or not ts:
            self._wall = (ts, P.timestamp(ts))
        lists[2].append(self._wall[1])
