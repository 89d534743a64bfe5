"""Token-by-token check of Train: lines whose byte layout matches no reference line (``_train_log_fast``).

Each line is cut at its spaces (a template line has a fixed number of them); literal
tokens are compared, value tokens checked against the template regex's character classes
and converted exactly (``-?digits[.digits]`` with at most 15 digits is ``m / 10**k``, which
IEEE division rounds as ``float`` does; anything else goes through ``float`` one by one).
Slower than the layout path, still without a Python object per line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from . import _patterns as P

if TYPE_CHECKING:
    from ._fast import _Out

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


def _gather(buf: np.ndarray, start: np.ndarray, width: int) -> np.ndarray:
    """``buf[start + j]`` for j < width as an (n, width) matrix (past the block end: the last byte)."""
    if start.size and int(start.max()) + width > buf.size:
        clipped: np.ndarray = buf[np.minimum(start[:, None] + np.arange(width), buf.size - 1)]
        return clipped
    windows: np.ndarray = np.lib.stride_tricks.sliding_window_view(buf, width)[start]
    return windows


def _widths(width: np.ndarray, lo: int, hi: int) -> list[int]:
    """The distinct token widths in ``[lo, hi]`` (a column holds only a few)."""
    inside = width[(width >= lo) & (width <= hi)]
    if not inside.size:
        return []
    return np.flatnonzero(np.bincount(inside)).tolist()


def _literal(buf: np.ndarray, start: np.ndarray, end: np.ndarray, lit: bytes) -> np.ndarray:
    """Rows whose token is exactly ``lit``."""
    ok: np.ndarray = (end - start) == len(lit)
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
    ints: np.ndarray = digits @ _POW10[8::-1]
    return ints


def _epoch_token(buf: np.ndarray, start: np.ndarray, end: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def token_scan(block: bytes, buf: np.ndarray, spaces: np.ndarray, ref_prefix: bytes,
                tokens: tuple[tuple[str, bytes], ...], hits: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                sel: np.ndarray, out: _Out) -> None:
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
    assert epoch is not None  # every template has an epoch token (right after "Train:")
    for f in range(4):
        out.fields[f][rows] = epoch[f + 1][keep]
    for v, col in enumerate(cols):
        out.values[v][rows] = col[keep]
