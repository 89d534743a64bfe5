"""Vectorised parsing of the common ``Train:`` line shape of a pimm train.log block.

A segment's first Train: line fixes a template (the same keys in the same order,
spec 3.4 D). Here every line of a block is checked against that template with numpy
alone: the "Train: [" hits are found from the positions of ``T`` bytes; lines are
grouped by length and compared byte column by byte column with a reference line the
template regex accepts (equal bytes everywhere except number digits, which must be
digits), and their numbers are read from those columns. Lines of other layouts go to
the token-by-token check of ``_train_log_tokens``. Only lines that pass are returned;
the reader sends any range holding another "Train: [" to its regex path, so the result
is the same as running the template regex, only without Python objects per line.

Numbers are exact: at most 15 digits make an integer ``m`` exact in float64, and
``m / 10**k`` of two exactly representable doubles is rounded by IEEE division the same
way ``float(text)`` rounds the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ...arrays import unique_sorted
from . import _patterns as P
from ._tokens import token_scan

_TRAIN = np.frombuffer(b"Train: [", dtype=np.uint8)
_MAX_MISSES = 256
"""Template-rejected lines tried as reference per block (beyond that, the token check takes the rest)."""
_POW10F = 10.0 ** np.arange(23, dtype=np.float64)
_BATCH = 4096
"""Lines compared with a reference line at once: each batch's byte matrices (~1 MB) stay in the CPU's cache, and a
4 MB block's ~15 MB of temporaries (whole-group matrices) no longer set the heap's high water."""


def template_tokens(spec: tuple[P.SpecItem, ...]) -> tuple[tuple[str, bytes], ...] | None:
    """Tail tokens (kind, literal) of a template spec, or None when it cannot be checked by tokens.

    Kinds: ``lit`` (exact bytes), ``epoch`` (``[E/ME][I/IPE]``), ``value`` (``[-+\\w.]+``),
    ``paren`` (``(value)``), ``remain`` (``[\\d:]+``); the values are returned in spec order.
    """
    tokens: list[tuple[str, bytes]] = [("lit", b"Train:"), ("epoch", b"")]
    for i, item in enumerate(spec):
        last = i == len(spec) - 1
        if item[0] == "timer":
            tokens += [("lit", b"Data"), ("value", b""), ("paren", b""), ("lit", b"Batch"), ("value", b""),
                       ("paren", b""), ("lit", b"Remain"), ("remain", b"")]
            if last:
                tokens.append(("lit", b""))
        else:
            _, key, spaced = item
            if not spaced and not last:
                return None  # a value glued to the next key: leave it to the regex
            tokens += [("lit", key + b":"), ("value", b"")]
            if last and spaced:
                tokens.append(("lit", b""))
    return tuple(tokens)


class FastRows:
    """Template Train: lines of one block, as numpy columns in file order."""

    def __init__(self, hits: np.ndarray, starts: np.ndarray, epochs: np.ndarray, max_epochs: np.ndarray,
                 iters: np.ndarray, ipes: np.ndarray, walls: np.ndarray, values: list[np.ndarray],
                 other_starts: np.ndarray, other_ends: np.ndarray) -> None:
        self.all_hits = hits
        """Block positions of every ``Train: [`` (valid or not)."""
        self.ends = np.zeros(0, dtype=np.int64)
        """Block positions of the newline ending each valid line."""
        self.other_starts, self.other_ends = other_starts, other_ends
        """Start and newline position of each line holding a ``Train: [`` that was not accepted (sorted, unique)."""
        self.starts = starts
        """Block positions of the first byte of each valid line."""
        self.epochs, self.max_epochs, self.iters, self.ipes = epochs, max_epochs, iters, ipes
        self.steps = (epochs - 1) * ipes + iters
        self.walls = walls
        self.values = values

    def span(self, lo: int, hi: int) -> tuple[int, int, int]:
        """(first row, end row, number of ``Train: [`` hits) of the block range ``[lo, hi)``."""
        a, b = np.searchsorted(self.all_hits, (lo, hi))
        i, j = np.searchsorted(self.starts, (lo, hi))
        return int(i), int(j), int(b - a)

    def quiet_lines(self, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(starts, newline positions) of the valid lines at level INFO or DEBUG: they hold no marker.

        A valid line's message starts with ``Train: [`` right after its prefix, so no keyword starts it,
        and its tail has no ``,ddd LEVEL`` (values and keys hold no space); a WARNING one is a record.
        """
        level = buf[self.starts + 25]  # "[YYYY-MM-DD HH:MM:SS,mmm " is 25 bytes
        quiet = (level == 73) | (level == 68)  # I(NFO), D(EBUG): no other level starts so
        return self.starts[quiet], self.ends[quiet]

    def pieces(self, lo: int, hi: int) -> list[tuple[int, int, bool]]:
        """``[lo, hi)`` cut around the lines this scan did not accept: ``(lo, hi, only_accepted)`` in file order.

        Each piece keeps the ``\n`` before its first line and after its last (the patterns need both), so
        neighbouring pieces share one byte. A piece of accepted lines can take the numpy path whole; a
        piece of other lines goes to the regex paths, so one odd line no longer sends its whole range there.
        """
        a, b = np.searchsorted(self.other_starts, (lo + 1, hi))
        out: list[tuple[int, int, bool]] = []
        prev = lo
        for ls, le in zip(self.other_starts[a:b].tolist(), self.other_ends[a:b].tolist()):
            if out and not out[-1][2] and out[-1][1] == ls:  # the line right after another odd line
                out[-1] = (out[-1][0], le + 1, False)
            else:
                if ls - 1 > prev:
                    out.append((prev, ls, True))
                out.append((ls - 1, le + 1, False))
            prev = le
        if prev < hi - 1:
            out.append((prev, hi, True))
        return out


def find_hits(buf: np.ndarray) -> np.ndarray:
    """Positions of every ``Train: [`` in the block."""
    cand = np.flatnonzero(buf[: max(0, buf.size - 7)] == 84)
    ok = np.ones(cand.size, dtype=bool)
    for k in range(1, 8):
        ok &= buf[cand + k] == _TRAIN[k]
    return cand[ok]


class _Out:
    """Per-candidate results, filled group by group."""

    def __init__(self, n: int, nvalues: int) -> None:
        self.ok = np.zeros(n, dtype=bool)
        self.walls = np.zeros(n)
        self.fields = [np.zeros(n, dtype=np.int64) for _ in range(4)]
        self.values = [np.zeros(n) for _ in range(nvalues)]


def _is_number(tok: bytes) -> bool:
    return _NUMBER.fullmatch(tok) is not None


_NUMBER = re.compile(rb"-?\d{1,15}|-?\d+\.\d+")


class _Layout:
    """Columns of one reference line: literal bytes, digit columns and how digits make numbers."""

    def __init__(self, line: bytes, hit: int, tokens: tuple[tuple[str, bytes], ...]) -> None:
        self.ok = False
        self.length = len(line)
        digit_cols: list[int] = [c for c in range(1, 24) if 48 <= line[c] <= 57]
        self.fields: list[np.ndarray] = []  # epoch, max_epoch, iter, ipe digit columns
        self.numbers: list[tuple[np.ndarray, int, bool] | float] = []
        pos = hit
        parts = line[hit:].split(b" ")
        if len(parts) != len(tokens):
            return
        for (kind, _lit), part in zip(tokens, parts):
            cols = [pos + i for i, ch in enumerate(part) if 48 <= ch <= 57]
            if kind == "epoch":
                runs = re.fullmatch(rb"\[(\d{1,9})/(\d{1,9})\]\[(\d{1,9})/(\d{1,9})\]", part)
                if runs is None:
                    return
                for g in range(1, 5):
                    self.fields.append(np.arange(pos + runs.start(g), pos + runs.end(g)))
                digit_cols += cols
            elif kind == "value":
                if _is_number(part):
                    frac = len(part) - part.index(b".") - 1 if b"." in part else 0
                    if len(cols) > 15:
                        return
                    self.numbers.append((np.asarray(cols), frac, part.startswith(b"-")))
                    digit_cols += cols
                else:
                    self.numbers.append(P.to_float(part))  # e.g. nan: lines of this layout hold the same text
            elif kind in ("paren", "remain"):
                digit_cols += cols
            pos += len(part) + 1
        variable = np.zeros(len(line), dtype=bool)
        variable[digit_cols] = True
        self.variable = variable
        self.digit_cols = np.flatnonzero(variable)
        self.line = np.frombuffer(line, dtype=np.uint8)
        # number columns as indices into digit_cols (the digits are extracted once per group)
        where = np.full(len(line), -1)
        where[self.digit_cols] = np.arange(self.digit_cols.size)
        self.fields = [where[c] for c in self.fields]
        self.numbers = [n if isinstance(n, float) else (where[n[0]], n[1], n[2]) for n in self.numbers]
        self.ok = True

    def apply(self, buf: np.ndarray, starts: np.ndarray, rows: np.ndarray, out: _Out) -> np.ndarray:
        """Fill ``out`` for the candidates ``rows`` (lines at ``starts``) that have this layout; returns them."""
        # whole lines copied by row (an index per line, not per byte)
        chars = np.lib.stride_tricks.sliding_window_view(buf, self.length)[starts]
        same = chars == self.line
        same |= self.variable
        good = same.all(axis=1)
        digits = chars[:, self.digit_cols] - 48
        good &= (digits <= 9).all(axis=1)
        keep = np.flatnonzero(good)
        if keep.size != good.size:
            chars, digits = chars[keep], digits[keep]
        done = rows[keep]
        out.ok[done] = True
        out.walls[done] = P.timestamps_matrix(chars[:, 1:24])
        # numbers of at most 15 digits: exact in float64, so a float matrix product is exact too
        for f, cols in enumerate(self.fields):
            out.fields[f][done] = (digits[:, cols].astype(np.float64) @ _POW10F[cols.size - 1::-1]).astype(np.int64)
        for v, number in enumerate(self.numbers):
            if isinstance(number, float):
                out.values[v][done] = number
                continue
            cols, frac, neg = number
            val = (digits[:, cols].astype(np.float64) @ _POW10F[cols.size - 1::-1]) / _POW10F[frac]
            out.values[v][done] = -val if neg else val
        return done


def scan(block: bytes, buf: np.ndarray, hits: np.ndarray, newlines: np.ndarray, spaces_of: Callable[[], np.ndarray], template: re.Pattern[bytes],
         tokens: tuple[tuple[str, bytes], ...], nvalues: int) -> FastRows | None:
    """Every line of ``block`` matching the template, without a regex step per line.

    Lines are grouped by length; for each group a line the template regex accepts is the
    reference, and the lines whose bytes equal it outside its number digits (which must be
    digits) are parsed by byte columns. Lines left over are checked token by token.
    ``buf`` is the block as uint8; ``spaces_of()``
    gives the block's space positions.
    """
    line = np.searchsorted(newlines, hits)  # the newline ending each hit's line
    line_ok = (line >= 1) & (line < newlines.size)
    line = np.clip(line, 1, max(1, newlines.size - 1))
    ends = newlines[line] if newlines.size > 1 else np.zeros(hits.size, dtype=np.int64)
    starts = newlines[line - 1] + 1 if newlines.size > 1 else np.zeros(hits.size, dtype=np.int64)
    lengths = ends - starts
    out = _Out(hits.size, nvalues)
    pending = np.flatnonzero(line_ok)
    ref_prefix = None
    misses = 0
    for _ in range(32):
        ref = None
        while pending.size and ref is None and misses < _MAX_MISSES:
            c = int(pending[0])
            if template.match(block, int(starts[c]) - 1):
                ref = c
            else:  # no path accepts a line the template rejects: drop it (odd lines gather at the front)
                pending, misses = pending[1:], misses + 1
        if ref is None:
            break
        line_bytes = block[int(starts[ref]):int(ends[ref])]
        if ref_prefix is None:
            ref_prefix = line_bytes[24:int(hits[ref] - starts[ref])]
        layout = _Layout(line_bytes, int(hits[ref] - starts[ref]), tokens)
        if not layout.ok:
            break
        group = pending[lengths[pending] == layout.length]
        for first in range(0, group.size, _BATCH):  # bounded temporaries (a few times the batch's bytes)
            rows = group[first:first + _BATCH]
            layout.apply(buf, starts[rows], rows, out)
        if not out.ok[ref]:
            break
        pending = pending[~out.ok[pending]]
    if pending.size and ref_prefix is not None:
        token_scan(block, buf, spaces_of(), ref_prefix, tokens, hits, starts, ends, pending, out)
    if ref_prefix is None:
        return None
    keep = np.flatnonzero(out.ok)
    epochs, max_epochs, iters, ipes = [f[keep] for f in out.fields]
    other = unique_sorted(starts[~out.ok])
    other_ends = ends[~out.ok][np.unique(starts[~out.ok], return_index=True)[1]] if other.size else other
    rows = FastRows(hits, starts[keep], epochs, max_epochs, iters, ipes, out.walls[keep],
                    [v[keep] for v in out.values], other, other_ends)
    rows.ends = ends[keep]
    return rows
