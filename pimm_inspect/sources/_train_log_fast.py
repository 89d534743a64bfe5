"""Vectorised parsing of the common ``Train:`` line shape of a pimm train.log block.

A segment's first Train: line fixes a template (the same keys in the same order,
spec 3.4 D). Here every line of a block is checked against that template with numpy
alone: the "Train: [" hits are found from the positions of ``T`` bytes, each line is
cut into space-separated tokens (a template line has a fixed number of them), the
literal tokens are compared and the value tokens are checked against the template
regex's character classes. Only lines that pass are returned; the reader sends any
range holding another "Train: [" to its regex path, so the result is the same as
running the template regex, only without Python objects per line.

Decimal texts are converted exactly: ``-?digits[.digits]`` with at most 15 digits is
``m / 10**k`` of two exactly representable doubles, which IEEE division rounds the
same way ``float(text)`` does. Anything else (``nan``, ``inf``, long or odd texts)
goes through ``float`` one by one.
"""

from __future__ import annotations

import re

import numpy as np

from . import _train_log_patterns as P

_TRAIN = np.frombuffer(b"Train: [", dtype=np.uint8)
_MAX_VALUE = 17
"""Widest value token converted in bulk (longer ones are checked one by one)."""
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_POW10F = 10.0 ** np.arange(23, dtype=np.float64)
_VALUE_CLASS = np.zeros(256, dtype=bool)
for _c in b"-+._0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _VALUE_CLASS[_c] = True
_REMAIN_CLASS = np.zeros(256, dtype=bool)
for _c in b"0123456789:":
    _REMAIN_CLASS[_c] = True
_VALUE_RE = re.compile(rb"[-+\w.]+")
_REMAIN_RE = re.compile(rb"[\d:]+")
_TS_DIGITS = np.array([1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 22, 23])
_TS_SEPS = np.array([0, 5, 8, 11, 14, 17, 20, 24])
_TS_SEP_BYTES = np.frombuffer(b"[-- ::, ", dtype=np.uint8)


def template_tokens(spec: tuple) -> tuple[tuple[str, bytes], ...] | None:
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
                 iters: np.ndarray, ipes: np.ndarray, walls: np.ndarray, values: list[np.ndarray]) -> None:
        self.all_hits = hits
        """Block positions of every ``Train: [`` (valid or not)."""
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


def find_hits(buf: np.ndarray) -> np.ndarray:
    """Positions of every ``Train: [`` in the block."""
    cand = np.flatnonzero(buf[: max(0, buf.size - 7)] == 84)
    ok = np.ones(cand.size, dtype=bool)
    for k in range(1, 8):
        ok &= buf[cand + k] == _TRAIN[k]
    return cand[ok]


def _gather(buf: np.ndarray, start: np.ndarray, width: int) -> np.ndarray:
    """``buf[start + j]`` for j < width as an (n, width) matrix (``buf`` is padded past the block)."""
    return np.lib.stride_tricks.sliding_window_view(buf, width)[start]


def _widths(width: np.ndarray, lo: int, hi: int) -> list[int]:
    """The distinct token widths in ``[lo, hi]`` (a column holds only a few)."""
    inside = width[(width >= lo) & (width <= hi)]
    if not inside.size:
        return []
    return np.flatnonzero(np.bincount(inside)).tolist()


def _literal(buf: np.ndarray, start: np.ndarray, end: np.ndarray, lit: bytes) -> np.ndarray:
    """Rows whose token is exactly ``lit``."""
    ok = (end - start) == len(lit)
    rows = np.flatnonzero(ok)
    s = start[rows]
    good = np.ones(rows.size, dtype=bool)
    for j, byte in enumerate(lit):
        good &= buf[s + j] == byte
    ok[rows] = good
    return ok


def _class_ok(buf: np.ndarray, block: bytes, start: np.ndarray, end: np.ndarray, table: np.ndarray,
              pattern: re.Pattern[bytes]) -> np.ndarray:
    """Rows whose token is one or more bytes of the class (wide tokens checked with ``pattern``)."""
    width = end - start
    ok = np.zeros(start.size, dtype=bool)
    for w in _widths(width, 1, _MAX_VALUE):
        rows = np.flatnonzero(width == w)
        s = start[rows]
        good = table[buf[s]]
        for j in range(1, w):
            good &= table[buf[s + j]]
        ok[rows] = good
    for r in np.flatnonzero(width > _MAX_VALUE):
        ok[r] = pattern.fullmatch(block, int(start[r]), int(end[r])) is not None
    return ok


def values(buf: np.ndarray, block: bytes, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ok, float64) of value tokens ``block[start:end]``: ok where the token is ``[-+\\w.]+``,
    the value exactly what ``to_float`` gives."""
    n = start.size
    ok = np.zeros(n, dtype=bool)
    out = np.full(n, np.nan)
    width = end - start
    slow = [np.flatnonzero((width < 1) | (width > _MAX_VALUE))]
    for w in _widths(width, 1, _MAX_VALUE):
        rows = np.flatnonzero(width == w)
        s = start[rows]
        dot = block.find(b".", int(s[0]), int(s[0]) + w)
        dot = dot - int(s[0]) if dot >= 0 else -1
        ndig = w - (dot >= 0)
        if ndig > 16:
            slow.append(rows)
            continue
        mant = np.zeros(rows.size, dtype=np.int64)
        first = buf[s]
        neg = first == 45
        good = np.ones(rows.size, dtype=bool)
        for j in range(w):
            c = first if j == 0 else buf[s + j]
            if j == dot:
                good &= c == 46
                continue
            d = c - 48
            is_digit = d < 10
            if j == 0:
                good &= is_digit | neg
                d = np.where(is_digit, d, 0)
            else:
                good &= is_digit
            mant = mant * 10 + d
        good &= (ndig - neg) >= 1
        if ndig == 16:
            good &= neg  # 15 digits at most: below 2**53, so the division is exact-rounded
        val = mant / _POW10F[w - 1 - dot if dot >= 0 else 0]
        ok[rows] = good
        out[rows] = np.where(neg, -val, val)
        slow.append(rows[~good])
    for r in np.concatenate(slow).tolist():
        a, b = int(start[r]), int(end[r])
        if _VALUE_RE.fullmatch(block, a, b) is not None:
            ok[r] = True
            out[r] = P.to_float(block[a:b])
        else:
            ok[r] = False
    return ok, out


def _run_int(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """int64 of digit runs of 1-9 digits (already checked)."""
    idx = end[:, None] - 9 + np.arange(9)
    digits = np.where(idx >= start[:, None], buf[idx].astype(np.int64) - 48, 0)
    return digits @ _POW10[8::-1]


def _epoch_token(buf: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Check ``[E/ME][I/IPE]`` tokens; returns (ok, epoch, max_epoch, iter, ipe)."""
    n = start.size
    width = end - start
    ok = (width >= 10) & (width <= 42)
    zeros = np.zeros(n, dtype=np.int64)
    if not ok.any():
        return ok, zeros, zeros, zeros, zeros
    wide = int(width[ok].max())
    chars = _gather(buf, start, wide)
    inside = np.arange(wide) < width[:, None]
    non_digit = inside & ((chars - 48) > 9)
    ok &= non_digit.sum(axis=1) == 6
    rows = np.flatnonzero(ok)
    cols = np.nonzero(non_digit[rows])[1].reshape(-1, 6)
    seps = chars[rows[:, None], cols]
    good = (seps == np.frombuffer(b"[/][/]", dtype=np.uint8)).all(axis=1)
    good &= (cols[:, 0] == 0) & (cols[:, 5] == width[rows] - 1) & (cols[:, 3] == cols[:, 2] + 1)
    lens = np.diff(cols, axis=1)[:, [0, 1, 3, 4]] - 1
    good &= ((lens >= 1) & (lens <= 9)).all(axis=1)
    ok[rows] = good
    base = start[rows]
    fields = []
    for a, b in ((0, 1), (1, 2), (3, 4), (4, 5)):
        full = zeros.copy()
        full[rows] = np.where(good, _run_int(buf, base + cols[:, a] + 1, base + cols[:, b]), 0)
        fields.append(full)
    return (ok, *fields)


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
        self.ts_cols = np.arange(1, 24)
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


def scan(block: bytes, buf: np.ndarray, hits: np.ndarray, newlines: np.ndarray, spaces_of, template: re.Pattern[bytes],
         tokens: tuple[tuple[str, bytes], ...], nvalues: int) -> FastRows | None:
    """Every line of ``block`` matching the template, without a regex step per line.

    Lines are grouped by length; for each group a line the template regex accepts is the
    reference, and the lines whose bytes equal it outside its number digits (which must be
    digits) are parsed by byte columns. Lines left over are checked token by token.
    ``buf`` is the block as uint8 followed by at least 64 padding bytes; ``spaces_of()``
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
    for _ in range(16):
        if not pending.size:
            break
        ref = next((int(c) for c in pending[:8] if template.match(block, int(starts[c]) - 1)), None)
        if ref is None:
            break
        line_bytes = block[int(starts[ref]):int(ends[ref])]
        if ref_prefix is None:
            ref_prefix = line_bytes[24:int(hits[ref] - starts[ref])]
        layout = _Layout(line_bytes, int(hits[ref] - starts[ref]), tokens)
        if not layout.ok:
            break
        group = pending[lengths[pending] == layout.length]
        done = layout.apply(buf, starts[group], group, out)
        if ref not in set(done.tolist()):
            break
        pending = pending[~out.ok[pending]]
    if pending.size and ref_prefix is not None:
        _token_scan(block, buf, spaces_of(), ref_prefix, tokens, hits, starts, ends, pending, out)
    if ref_prefix is None:
        return None
    keep = np.flatnonzero(out.ok)
    fields = [f[keep] for f in out.fields]
    return FastRows(hits, starts[keep], *fields, out.walls[keep], [v[keep] for v in out.values])


def _token_scan(block: bytes, buf: np.ndarray, spaces: np.ndarray, ref_prefix: bytes,
                tokens: tuple[tuple[str, bytes], ...], hits: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                sel: np.ndarray, out: "_Out") -> None:
    """Check candidates ``sel`` token by token (lines whose layout differs from every reference line)."""
    starts, ends = starts[sel], ends[sel]
    keep = hits[sel] - starts == len(ref_prefix) + 24
    sel, starts, ends = sel[keep], starts[keep], ends[keep]
    # prefix: timestamp shape, then the bytes every template line shares (level, file, line, PID)
    head = _gather(buf, starts, 25)
    keep = (head[:, _TS_SEPS] == _TS_SEP_BYTES).all(axis=1)
    keep &= ((head[:, _TS_DIGITS] - 48) <= 9).all(axis=1)
    keep &= _literal(buf, starts + 24, starts + 24 + len(ref_prefix), ref_prefix)
    sel, starts, ends = sel[keep], starts[keep], ends[keep]
    # tail: a fixed number of spaces, then each token checked
    k = len(tokens) - 1
    first = np.searchsorted(spaces, hits[sel])
    keep = np.searchsorted(spaces, ends) - first == k
    sel, starts, ends, first = sel[keep], starts[keep], ends[keep], first[keep]
    sp = spaces[first[:, None] + np.arange(k)]
    tok_start = np.column_stack([hits[sel], sp + 1])
    tok_end = np.column_stack([sp, ends])
    good = np.ones(sel.size, dtype=bool)
    cols: list[np.ndarray] = []
    epoch = None
    for j, (kind, lit) in enumerate(tokens):
        s, e = tok_start[:, j], tok_end[:, j]
        if kind == "lit":
            good &= _literal(buf, s, e, lit)
        elif kind == "epoch":
            epoch = _epoch_token(buf, s, e)
            good &= epoch[0]
        elif kind == "value":
            ok_v, col = values(buf, block, s, e)
            good &= ok_v
            cols.append(col)
        elif kind == "paren":
            good &= (buf[s] == 40) & (buf[np.maximum(e - 1, 0)] == 41)
            good &= _class_ok(buf, block, s + 1, e - 1, _VALUE_CLASS, _VALUE_RE)
        else:
            good &= _class_ok(buf, block, s, e, _REMAIN_CLASS, _REMAIN_RE)
    keep = np.flatnonzero(good)
    rows = sel[keep]
    out.ok[rows] = True
    out.walls[rows] = P.timestamps_matrix(_gather(buf, starts[keep] + 1, 23))
    for f in range(4):
        out.fields[f][rows] = epoch[f + 1][keep]
    for v, col in enumerate(cols):
        out.values[v][rows] = col[keep]
