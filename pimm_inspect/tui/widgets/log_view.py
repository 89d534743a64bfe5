"""A train.log viewer that indexes line offsets in a worker and reads only the lines on screen."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.worker import get_current_worker
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...analysis.secrets import mask_lines
from ...report.safe_text import clean
from ...sources import UnreadableFile, open_regular
from ..messages import LogIndexProgress
from .log_scan import CHUNK_BYTES, scan

TRAIN_LINE = re.compile(rb"Train: \[(\d+)/\d+\]\[(\d+)/(\d+)\]")
"""A Train: record's epoch, iter and iters per epoch: g = (epoch - 1) * iters + iter (spec 3.4 D)."""
SEPARATOR_WIDTH = 20
"""Cells an attempt separator adds in front of an attempt's first line."""
LEVEL = re.compile(r"^\[\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
LEVEL_CLASS = {"DEBUG": "logview--debug", "INFO": "logview--info", "WARNING": "logview--warning",
               "ERROR": "logview--error", "CRITICAL": "logview--error"}
MAX_MATCH_LINES = 100_000
"""Search remembers at most this many matching lines (the count then says "100000+")."""
SEARCH_IN_WORKER_BYTES = 16 << 20
"""A log bigger than this is searched in a worker (the UI says "searching…" and escape cancels)."""
MAX_LINE_CHARS = 2000
"""Very long lines are cut when shown (the file is never changed)."""


MASK_CONTEXT_LINES = 64
"""Lines before the ones shown that the masker reads with them (a flag on one line, its secret on the next; a
private key's BEGIN line above the key's lines on screen)."""
MASK_CONTEXT_BYTES = 64 * 1024


class LogView(ScrollView, can_focus=True):
    """Shows a window of a possibly multi-GB text file, with attempt starts and warnings highlighted."""

    BINDINGS = [Binding("down", "cursor_down", "Down", show=False), Binding("up", "cursor_up", "Up", show=False),
                Binding("right", "pan(1)", "Right", show=False), Binding("left", "pan(-1)", "Left", show=False),
                Binding("pagedown", "page(1)", "Page down", show=False),
                Binding("pageup", "page(-1)", "Page up", show=False)]
    COMPONENT_CLASSES = {"logview--lineno", "logview--debug", "logview--info", "logview--warning", "logview--error",
                         "logview--attempt", "logview--separator", "logview--match", "logview--cursor"}
    _rows: list[tuple[int, int]]
    """The wrapped rows last computed by ``_wrapped_rows`` (set there with ``_rows_key``)."""

    class Indexed(Message):
        """The line index of the file is ready."""

        def __init__(self, offsets: np.ndarray, widest: int) -> None:
            super().__init__()
            self.offsets = offsets
            self.widest = widest

    class SearchDone(Message):
        """A search of a big log (in a worker) went to its match, or found none: what the status line says."""

        def __init__(self, note: str) -> None:
            super().__init__()
            self.note = note

    class Failed(Message):
        """The file could not be read."""

        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path: Path | None = None
        self.offsets = np.zeros(1, dtype=np.int64)
        """Start offset of each line plus the end of the file (len = lines + 1)."""
        self.attempt_lines = np.zeros(0, dtype=np.int64)
        """0-based line of each attempt start, from the run's own ``start`` events (the Overview's attempts)."""
        self.attempt_numbers: list[int] = []
        self.cursor_line = 0
        self.search_text = ""
        self.wrap = False
        self.match_lines = np.zeros(0, dtype=np.int64)
        """0-based lines holding ``search_text`` (at most MAX_MATCH_LINES)."""
        self.match_capped = False
        self._cache: dict[int, str] = {}
        self._attempt_of_line: dict[int, int] = {}
        self._gutter = 6
        self._widest = 0

    @property
    def line_count(self) -> int:
        """Number of indexed lines."""
        return int(self.offsets.shape[0] - 1)

    def open(self, path: Path, rel_path: str, root: Path | None = None) -> None:
        """Start indexing a file; lines appear when the index is ready (never when it is a link out of ``root``)."""
        self.path = path
        self._cache.clear()
        self._index(path, rel_path, root)

    @work(thread=True, exclusive=True, group="log-index")
    def _index(self, path: Path, rel_path: str, root: Path | None = None) -> None:
        """Find every newline with numpy, chunk by chunk, and every attempt start (never the whole file in Python objects)."""
        try:
            with open_regular(path, rel_path, root) as fh:
                total = fh.seek(0, 2)
                fh.seek(0)
                parts = [np.zeros(1, dtype=np.int64)]
                position = 0
                while chunk := fh.read(CHUNK_BYTES):
                    newlines = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10).astype(np.int64)
                    parts.append(newlines + position + 1)
                    position += len(chunk)
                    self.post_message(LogIndexProgress(position, total))
                offsets = np.concatenate(parts)
                if offsets[-1] != position:
                    offsets = np.append(offsets, position)  # last line has no newline (still being written)
            widest = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
            self.post_message(self.Indexed(offsets, min(widest, MAX_LINE_CHARS)))
        except UnreadableFile as exc:
            self.post_message(self.Failed(exc.finding.message))
        except (OSError, ValueError) as exc:
            self.post_message(self.Failed(f"cannot read {rel_path}: {exc}"))

    def on_log_view_indexed(self, message: Indexed) -> None:
        """Adopt the index and size the scroll area to it."""
        self.offsets = message.offsets
        self._cache.clear()
        self._gutter = len(str(max(self.line_count, 1))) + 2
        self._widest = message.widest
        self._size_area()

    def set_attempts(self, starts: list[tuple[int, int]]) -> None:
        """(attempt number, 1-based line) of each attempt start, as the run's reader found them."""
        ordered = sorted(starts, key=lambda s: s[1])
        self.attempt_lines = np.asarray([line - 1 for _n, line in ordered], dtype=np.int64)
        self.attempt_numbers = [n for n, _line in ordered]
        self._attempt_of_line = {line - 1: n for n, line in ordered}
        self.refresh()

    def _size_area(self) -> None:
        # Wrapped, every line is at least one row and no row is wider than the view: scroll by lines.
        width = 0 if self.wrap else self._widest + self._gutter + SEPARATOR_WIDTH
        self.virtual_size = Size(width, self.line_count)
        self.refresh()

    def toggle_wrap(self) -> bool:
        """Wrap long lines (or cut them and pan with left/right); returns the new state."""
        self.wrap = not self.wrap
        self.scroll_to(x=0, animate=False)
        self._size_area()
        return self.wrap

    def _read_lines(self, first: int, count: int) -> None:
        """Read a block of lines into the cache with one seek."""
        if self.path is None or first >= self.line_count:
            return
        last = min(first + count, self.line_count)
        # The lines before the block are read too, as context for the masker: a secret can sit on the line after its
        # flag (``--token \\`` then the token: a script's long command echoed into the log).
        lead = max(0, first - MASK_CONTEXT_LINES)
        while lead < first and int(self.offsets[first]) - int(self.offsets[lead]) > MASK_CONTEXT_BYTES:
            lead += 1
        start, end = int(self.offsets[lead]), int(self.offsets[last])
        try:
            with open_regular(self.path, self.path.name) as fh:
                fh.seek(start)
                data = fh.read(end - start)
        except (UnreadableFile, OSError):
            data = b""
        if len(self._cache) > 4000:
            self._cache.clear()
        raws = []
        for i in range(lead, last):
            a, b = int(self.offsets[i]) - start, int(self.offsets[i + 1]) - start
            raws.append(data[a:b].rstrip(b"\r\n")[:MAX_LINE_CHARS * 4].decode("utf-8", errors="replace"))
        for i, text in enumerate(mask_lines(raws)[first - lead:], start=first):
            # Masked, then every control character shown as an escape: a log line is data, never a terminal sequence.
            self._cache[i] = clean(text.expandtabs(4))[:MAX_LINE_CHARS]

    def line_text(self, index: int) -> str:
        """Text of one line (masked), read on demand."""
        if index not in self._cache:
            self._read_lines(index, max(self.size.height, 64))
        return self._cache.get(index, "")

    def _line_style(self, index: int, text: str) -> Style:
        base = self.rich_style
        style = base
        level = LEVEL.match(text)
        if index in self._attempt_of_line:
            style = base + self.get_component_rich_style("logview--attempt")
        elif level:
            style = base + self.get_component_rich_style(LEVEL_CLASS[level.group(1)])
        if index == self.cursor_line:
            style = style + self.get_component_rich_style("logview--cursor")
        return style

    def _body(self, index: int) -> tuple[list[Segment], Style]:
        """Segments of one whole line: an attempt separator before an attempt's first line, then the text."""
        text = self.line_text(index)
        style = self._line_style(index, text)
        segments: list[Segment] = []
        if index in self._attempt_of_line:
            label = f"━━ attempt {self._attempt_of_line[index]} ━━ "
            segments.append(Segment(label, self.rich_style + self.get_component_rich_style("logview--separator")))
        return segments + self._highlight(text, style), style

    def _wrapped_rows(self) -> list[tuple[int, int]]:
        """(line, row within the line) for each visible row when wrapping, from the top line down."""
        width = max(self.scrollable_content_region.width - self._gutter, 10)
        key = (self.scroll_offset.y, width, self.size.height, self.cursor_line, self.search_text)
        if getattr(self, "_rows_key", None) == key:
            return self._rows
        rows: list[tuple[int, int]] = []
        index = self.scroll_offset.y
        while len(rows) < self.size.height and index < self.line_count:
            segments, _style = self._body(index)
            length = sum(len(seg.text) for seg in segments)
            for part in range(max((length + width - 1) // width, 1)):
                rows.append((index, part))
            index += 1
        self._rows_key, self._rows = key, rows
        return rows

    def render_line(self, y: int) -> Strip:
        """One visible row: gutter with the line number (blank on a wrapped continuation), then the styled text."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        body_width = max(width - self._gutter, 1)
        if self.wrap:
            rows = self._wrapped_rows()
            if y >= len(rows):
                return Strip.blank(width, base)
            index, part = rows[y]
            start = part * body_width
        else:
            index, part, start = scroll_y + y, 0, scroll_x
            if index >= self.line_count:
                return Strip.blank(width, base)
        segments, style = self._body(index)
        number = f"{index + 1:>{self._gutter - 1}} " if part == 0 else " " * self._gutter
        gutter = Segment(number, base + self.get_component_rich_style("logview--lineno"))
        body = Strip(segments).crop(start, start + body_width)
        return Strip([gutter, *body]).extend_cell_length(width, style).crop(0, width)

    def _highlight(self, text: str, style: Style) -> list[Segment]:
        if not self.search_text:
            return [Segment(text, style)]
        match_style = style + self.get_component_rich_style("logview--match")
        segments, position = [], 0
        lowered, needle = text.lower(), self.search_text.lower()
        while (hit := lowered.find(needle, position)) >= 0:
            segments += [Segment(text[position:hit], style), Segment(text[hit:hit + len(needle)], match_style)]
            position = hit + len(needle)
        segments.append(Segment(text[position:], style))
        return segments

    def go_to(self, line: int) -> None:
        """Move the cursor to a line and scroll it into view."""
        if not self.line_count:
            return
        self.cursor_line = min(max(line, 0), self.line_count - 1)
        top = self.scroll_offset.y
        height = max(self.scrollable_content_region.height, 1)
        if not top <= self.cursor_line < top + height:
            self.scroll_to(y=max(self.cursor_line - height // 3, 0), animate=False)
        self.refresh()

    def go_top(self) -> None:
        """First line."""
        self.go_to(0)

    def go_end(self) -> None:
        """Last line."""
        self.go_to(self.line_count - 1)

    def step_attempt(self, forward: bool = True) -> str:
        """Go to the next (``]``) or previous (``[``) attempt start, wrapping; says where it went."""
        lines = self.attempt_lines
        if not lines.size:
            return "no attempt start in this log"
        later, earlier = lines[lines > self.cursor_line], lines[lines < self.cursor_line]
        wrapped = not (later.size if forward else earlier.size)
        target = int((later[0] if later.size else lines[0]) if forward else
                     (earlier[-1] if earlier.size else lines[-1]))
        self.go_to(target)
        number = self._attempt_of_line[target]
        where = f"attempt {number} of {len(self.attempt_numbers)} (line {target + 1})"
        if wrapped and lines.size > 1:
            return where + (": wrapped to the first" if forward else ": wrapped to the last")
        return where

    @property
    def searching(self) -> bool:
        """True while a big log is being searched in a worker."""
        return any(w.group == "log-search" and w.is_running for w in self.workers)

    def cancel_search(self) -> None:
        """Stop a search under way (escape)."""
        self.workers.cancel_group(self, "log-search")
        self.search_text = ""

    def search(self, text: str, forward: bool = True) -> str:
        """Go to the next/previous line holding ``text`` (case-insensitive, wrapping); says "match 2/4" or why not.

        A new text in a big log is searched in a worker: this says "searching…" at once (escape cancels) and
        ``SearchDone`` brings the result; the previous result is never left on screen meanwhile.
        """
        if text != self.search_text or not self.match_lines.size:
            if self.path is not None and int(self.offsets[-1]) > SEARCH_IN_WORKER_BYTES:
                self.search_text, self.match_lines, self.match_capped = text, np.zeros(0, dtype=np.int64), False
                self.refresh()
                self._search_worker(text, forward)
                return f'searching "{text}"… (escape cancels)'
            self._find_all(text)
        return self._go_to_match(text, forward)

    @work(thread=True, exclusive=True, group="log-search")
    def _search_worker(self, text: str, forward: bool) -> None:
        lines, capped = self._matching_lines(text, lambda: get_current_worker().is_cancelled)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._search_finished, text, forward, lines, capped)

    def _search_finished(self, text: str, forward: bool, lines: np.ndarray, capped: bool) -> None:
        if text != self.search_text:
            return  # superseded or cancelled
        self.match_lines, self.match_capped = lines, capped
        self.post_message(self.SearchDone(self._go_to_match(text, forward)))

    def _go_to_match(self, text: str, forward: bool) -> str:
        self.refresh()
        lines = self.match_lines
        if not lines.size:
            return f"not found: {text}"
        later, earlier = lines[lines > self.cursor_line], lines[lines < self.cursor_line]
        wrapped = not (later.size if forward else earlier.size)
        target = int((later[0] if later.size else lines[0]) if forward else
                     (earlier[-1] if earlier.size else lines[-1]))
        self.go_to(target)
        ordinal = int(np.searchsorted(lines, target)) + 1
        total = f"{lines.size}+" if self.match_capped else str(lines.size)
        note = f"match {ordinal}/{total} (line {target + 1})"
        if wrapped:
            note += ": wrapped to the top" if forward else ": wrapped to the bottom"
        return note

    def _find_all(self, text: str) -> None:
        """Every line holding ``text``, by scanning the file in chunks (never the whole file in line objects)."""
        self.search_text = text
        self.match_lines, self.match_capped = self._matching_lines(text, lambda: False)

    def _matching_lines(self, text: str, cancelled: Callable[[], bool]) -> tuple[np.ndarray, bool]:
        """(0-based lines holding ``text``, capped?); stops early (with what it has) once ``cancelled()``."""
        if not text or self.path is None or not self.line_count:
            return np.zeros(0, dtype=np.int64), False
        needle = re.compile(re.escape(text.encode("utf-8", errors="replace")), re.IGNORECASE)
        offsets: list[int] = []
        for offset, _m in scan(self.path, needle, 0, int(self.offsets[-1]), cancelled):
            offsets.append(offset)
            if len(offsets) >= MAX_MATCH_LINES * 4:
                break
        lines = np.unique(np.searchsorted(self.offsets, np.asarray(offsets, dtype=np.int64), side="right") - 1)
        capped = lines.size > MAX_MATCH_LINES or len(offsets) >= MAX_MATCH_LINES * 4
        return lines[:MAX_MATCH_LINES].astype(np.int64), capped

    def find_step(self, step: int, attempt: int | None = None) -> bool:
        """Go to the first ``Train:`` line at or after global ``step`` (within ``attempt`` when given)."""
        if self.path is None or not self.line_count:
            return False
        bounds = np.append(self.attempt_lines, self.line_count)
        first_line, last_line = 0, self.line_count
        if attempt is not None and attempt in self.attempt_numbers:
            i = self.attempt_numbers.index(attempt)
            first_line, last_line = int(bounds[i]), int(bounds[i + 1])
        best = None
        for offset, match in scan(self.path, TRAIN_LINE, int(self.offsets[first_line]), int(self.offsets[last_line])):
            g = (int(match[1]) - 1) * int(match[3]) + int(match[2])
            if g >= step:
                best = offset
                break
        if best is None:
            return False
        self.go_to(int(np.searchsorted(self.offsets, best, side="right") - 1))
        return True

    def action_cursor_down(self) -> None:
        """Move the highlighted line down."""
        self.go_to(self.cursor_line + 1)

    def action_cursor_up(self) -> None:
        """Move the highlighted line up."""
        self.go_to(self.cursor_line - 1)

    def action_pan(self, direction: int) -> None:
        """Left/right scroll a quarter of the view (long lines, not wrapped)."""
        if not self.wrap:
            self.scroll_relative(x=direction * max(self.scrollable_content_region.width // 4, 8), animate=False)

    def action_page(self, direction: int) -> None:
        """Page up/down, moving the highlighted line with the page."""
        self.go_to(self.cursor_line + direction * max(self.scrollable_content_region.height - 1, 1))
