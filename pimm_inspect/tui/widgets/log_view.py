"""A train.log viewer that indexes line offsets in a worker and reads only the lines on screen."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...analysis.secrets import mask_text
from ...report.safe_text import clean
from ...sources._common import UnreadableFile, open_regular
from ..messages import LogIndexProgress

TRAIN_LINE = re.compile(rb"Train: \[(\d+)/\d+\]\[(\d+)/(\d+)\]")
"""A Train: record's epoch, iter and iters per epoch: g = (epoch - 1) * iters + iter (spec 3.4 D)."""
ATTEMPT_MARK = b"=> Loading config ..."
"""Each process start writes this first (spec 3.3), so it opens a new attempt segment."""
LEVEL = re.compile(r"^\[\S+ \S+ (WARNING|ERROR|CRITICAL) ")
CHUNK_BYTES = 8 << 20
MAX_LINE_CHARS = 2000
"""Very long lines are cut when shown (the file is never changed)."""


def scan(path: Path, pattern: re.Pattern[bytes], start: int, end: int):
    """Yield (absolute offset, match) of ``pattern`` in ``path[start:end]``, read in line-aligned chunks.

    Reads with read(), never mmap: pimm truncates train.log on a fresh relaunch, and a mapped file
    that shrinks kills the process (SIGBUS). A line longer than a chunk is searched whole.
    """
    try:
        with open_regular(path, path.name) as fh:
            fh.seek(start)
            position, carry = start, b""
            while position < end:
                chunk = fh.read(min(CHUNK_BYTES, end - position))
                if not chunk:
                    break
                position += len(chunk)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1 if position < end else len(data)
                if cut == 0:
                    carry = data
                    continue
                base = position - len(data)
                for match in pattern.finditer(data, 0, cut):
                    yield base + match.start(), match
                carry = data[cut:]
            if carry:
                base = position - len(carry)
                for match in pattern.finditer(carry):
                    yield base + match.start(), match
    except (UnreadableFile, OSError, ValueError):
        return


class LogView(ScrollView, can_focus=True):
    """Shows a window of a possibly multi-GB text file, with attempt starts and warnings highlighted."""

    BINDINGS = [Binding("down", "cursor_down", "Down", show=False), Binding("up", "cursor_up", "Up", show=False)]
    COMPONENT_CLASSES = {"logview--lineno", "logview--warning", "logview--error", "logview--attempt",
                         "logview--match", "logview--cursor"}

    class Indexed(Message):
        """The line index of the file is ready."""

        def __init__(self, offsets: np.ndarray, attempt_lines: np.ndarray, widest: int) -> None:
            super().__init__()
            self.offsets = offsets
            self.attempt_lines = attempt_lines
            self.widest = widest

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
        self.cursor_line = 0
        self.search_text = ""
        self._cache: dict[int, str] = {}
        self._attempt_line_set: set[int] = set()
        self._gutter = 6

    @property
    def line_count(self) -> int:
        """Number of indexed lines."""
        return int(self.offsets.shape[0] - 1)

    def open(self, path: Path, rel_path: str) -> None:
        """Start indexing a file; lines appear when the index is ready."""
        self.path = path
        self._cache.clear()
        self._index(path, rel_path)

    @work(thread=True, exclusive=True, group="log-index")
    def _index(self, path: Path, rel_path: str) -> None:
        """Find every newline with numpy, chunk by chunk, and every attempt start (never the whole file in Python objects)."""
        try:
            with open_regular(path, rel_path) as fh:
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
            found = [offset for offset, _m in scan(path, re.compile(re.escape(ATTEMPT_MARK)), 0, position)]
            attempt_offsets = np.asarray(found, dtype=np.int64)
            lines = np.searchsorted(offsets, attempt_offsets, side="right") - 1
            widest = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
            self.post_message(self.Indexed(offsets, lines.astype(np.int64), min(widest, MAX_LINE_CHARS)))
        except UnreadableFile as exc:
            self.post_message(self.Failed(exc.finding.message))
        except (OSError, ValueError) as exc:
            self.post_message(self.Failed(f"cannot read {rel_path}: {exc}"))

    def on_log_view_indexed(self, message: Indexed) -> None:
        """Adopt the index and size the scroll area to it."""
        self.offsets = message.offsets
        self.attempt_lines = message.attempt_lines
        self._attempt_line_set = set(message.attempt_lines.tolist())
        self._cache.clear()
        self._gutter = len(str(max(self.line_count, 1))) + 2
        self.virtual_size = Size(message.widest + self._gutter, self.line_count)
        self.refresh()

    def _read_lines(self, first: int, count: int) -> None:
        """Read a block of lines into the cache with one seek."""
        if self.path is None or first >= self.line_count:
            return
        last = min(first + count, self.line_count)
        start, end = int(self.offsets[first]), int(self.offsets[last])
        try:
            with open_regular(self.path, self.path.name) as fh:
                fh.seek(start)
                data = fh.read(end - start)
        except (UnreadableFile, OSError):
            data = b""
        if len(self._cache) > 4000:
            self._cache.clear()
        for i in range(first, last):
            a, b = int(self.offsets[i]) - start, int(self.offsets[i + 1]) - start
            raw = data[a:b].rstrip(b"\r\n")[:MAX_LINE_CHARS * 4]
            # Masked, then every control character shown as an escape: a log line is data, never a terminal sequence.
            self._cache[i] = clean(mask_text(raw.decode("utf-8", errors="replace")).expandtabs(4))[:MAX_LINE_CHARS]

    def line_text(self, index: int) -> str:
        """Text of one line (masked), read on demand."""
        if index not in self._cache:
            self._read_lines(index, max(self.size.height, 64))
        return self._cache.get(index, "")

    def render_line(self, y: int) -> Strip:
        """One visible row: gutter with the line number, then the styled text."""
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self.line_count:
            return Strip.blank(width, base)
        text = self.line_text(index)
        style = base
        level = LEVEL.match(text)
        if index in self._attempt_line_set:
            style = base + self.get_component_rich_style("logview--attempt")
        elif level:
            name = "logview--warning" if level.group(1) == "WARNING" else "logview--error"
            style = base + self.get_component_rich_style(name)
        if index == self.cursor_line:
            style = style + self.get_component_rich_style("logview--cursor")
        gutter = Segment(f"{index + 1:>{self._gutter - 1}} ", base + self.get_component_rich_style("logview--lineno"))
        body = Strip(self._highlight(text, style)).crop(scroll_x, scroll_x + width - self._gutter)
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

    def next_attempt(self, forward: bool = True) -> bool:
        """Jump to the next (or previous) attempt start; False when there is none."""
        lines = self.attempt_lines
        candidates = lines[lines > self.cursor_line] if forward else lines[lines < self.cursor_line][::-1]
        if not candidates.size:
            return False
        self.go_to(int(candidates[0]))
        return True

    def search(self, text: str, forward: bool = True) -> bool:
        """Find ``text`` (case-insensitive) from the cursor on, scanning the file with mmap, not line objects."""
        self.search_text = text
        self.refresh()
        if not text or self.path is None or not self.line_count:
            return False
        needle = re.compile(re.escape(text.encode("utf-8", errors="replace")), re.IGNORECASE)
        end_of_file = int(self.offsets[-1])
        offset = None
        if forward:
            start = int(self.offsets[min(self.cursor_line + 1, self.line_count)])
            offset = next((o for o, _m in scan(self.path, needle, start, end_of_file)), None)
            if offset is None:
                offset = next((o for o, _m in scan(self.path, needle, 0, start)), None)
        else:
            for found, _m in scan(self.path, needle, 0, int(self.offsets[self.cursor_line])):
                offset = found
        if offset is None:
            return False
        self.go_to(int(np.searchsorted(self.offsets, offset, side="right") - 1))
        return True

    def find_step(self, step: int, attempt: int | None = None) -> bool:
        """Go to the first ``Train:`` line at or after global ``step`` (within ``attempt`` when given)."""
        if self.path is None or not self.line_count:
            return False
        bounds = np.append(self.attempt_lines, self.line_count)
        first_line, last_line = 0, self.line_count
        if attempt is not None and self.attempt_lines.size >= attempt >= 1:
            first_line, last_line = int(bounds[attempt - 1]), int(bounds[attempt])
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
