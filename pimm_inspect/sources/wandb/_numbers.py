"""Decimal texts (W&B ``value_json`` numbers) to float64 / int64 in bulk, exactly as ``float(text)`` / ``int(text)``.

numpy's string-to-float cast costs about what calling ``float`` per value does. Here texts of up
to 24 bytes are loaded as three 8-byte words and grouped by *shape*: the length and where the
non-digit bytes are. A batch has a few dozen shapes (``0.DDDD``, ``D.DDDDe+DD``, ``-DDD`` ...);
each is checked once in Python against the JSON number grammar, and every text of the shape is
then checked to carry the same non-digit bytes, which puts its digit runs at known places. The
runs become exact integers, eight digits per word at once, and the mantissa (at most 19 digits)
and decimal exponent become the nearest double by the Eisel-Lemire algorithm (Lemire, "Number
Parsing at a Gigabyte per Second", 2021): a 128-bit product with a truncated power of five, in
uint64 arithmetic on 32-bit halves, which rounds correctly or reports that it cannot decide.
Every text outside this (other spellings, longer texts, more digits, subnormal or infinite
results, undecided products) is reported as not parsed, and the caller asks ``float``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import _scan

MAX_TEXT = 24
"""Longer texts are left to ``float``."""
MAX_SHAPES = 4096
"""More distinct shapes than this in one call: all texts are left to ``float``."""
MIN_GROUP = 16
"""Shapes with fewer texts than this in one call are left to ``float``."""
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ZERO_CHARS = np.uint64(0x3030303030303030)
_DIGIT_LIMIT = np.uint64(0x7676767676767676)
_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)
_M32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_Q_MIN, _Q_MAX = -342, 308
"""Decimal exponents of the power-of-five table (beyond them a double is 0 or infinite)."""
_GRAMMAR = re.compile(r"(-?)(D+)(?:\.(D+))?(?:[eE]([+-]?)(D{1,3}))?")
_SPECIAL = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
"""The non-finite spellings W&B (and Python's json) writes; ``float`` reads them."""


def _byte_masks(count: int) -> int:
    """A word keeping its first ``count`` (0..8) bytes."""
    return (1 << (8 * max(0, min(count, 8)))) - 1


# [word][text length] -> the bytes of the text in that word / their high bits.
_IN_TEXT = np.array([[_byte_masks(n - 8 * k) for n in range(MAX_TEXT + 1)] for k in range(3)], dtype=np.uint64)
_IN_TEXT_HIGH = _IN_TEXT & _HIGH


def _eight_digits(word: np.ndarray) -> np.ndarray:
    """The number written by the 8 digit bytes of each word (its first byte most significant)."""
    x = word - _ZERO_CHARS
    x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    return (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the digit runs of one number shape are (byte offsets into the text)."""

    negative: bool
    int_start: int
    int_len: int
    frac_start: int
    frac_len: int
    exp_start: int
    exp_len: int
    exp_negative: bool
    integer: bool
    """No dot, no exponent, at most 18 digits: ``int(text)`` is an int64."""


def _layout(pattern: str) -> _Layout | float | None:
    """The layout of a shape (digits written ``D``), its value for NaN/Infinity, None when off the grammar."""
    if pattern in _SPECIAL:
        return _SPECIAL[pattern]
    match = _GRAMMAR.fullmatch(pattern)
    if match is None:
        return None
    sign, int_digits, frac_digits, exp_sign, exp_digits = match.groups()
    int_len, frac_len = len(int_digits), len(frac_digits or "")
    if int_len > 24 or frac_len > 24:
        return None
    frac_start = match.end(2) + 1
    exp_len = len(exp_digits or "")
    return _Layout(sign == "-", len(sign), int_len, frac_start, frac_len, len(pattern) - exp_len, exp_len,
                   exp_sign == "-", frac_digits is None and exp_digits is None and int_len <= 18)


def _window(text: list[np.ndarray], start: int) -> np.ndarray:
    """Bytes ``[start, start + 8)`` of each text (given as its 8-byte words), zero outside the text."""
    k, r = divmod(start, 8)
    low = text[k] if 0 <= k < len(text) else None
    high = text[k + 1] if 0 <= k + 1 < len(text) else None
    if r == 0:
        return low if low is not None else np.zeros(len(text[0]), dtype=np.uint64)
    out = low >> np.uint64(8 * r) if low is not None else np.zeros(len(text[0]), dtype=np.uint64)
    return out | (high << np.uint64(64 - 8 * r)) if high is not None else out


def _digits(text: list[np.ndarray], start: int, length: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(value, exact or None when always exact) of the digit run ``[start, start + length)`` (length <= 24)."""
    n = len(text[0])
    value: np.ndarray = np.zeros(n, dtype=np.uint64)
    if length <= 2:  # one or two digits: byte arithmetic is cheaper than a word conversion
        for i in range(start, start + length):
            value = value * np.uint64(10) + ((text[i // 8] >> np.uint64(8 * (i % 8))) & np.uint64(0xFF)) - np.uint64(48)
        return value, None
    exact = None
    for k in range(-(-length // 8)):
        end = start + length - 8 * k
        left = min(8, length - 8 * k)
        word = _window(text, end - 8)
        if left < 8:  # bytes before the run become "0"
            keep = np.uint64(((1 << (8 * left)) - 1) << (8 * (8 - left)))
            word = (word & keep) | np.uint64(int(_ZERO_CHARS) & ~int(keep))
        digits = _eight_digits(word)
        if k == 2 and length > 19:
            exact = digits < 1800  # 19 digits and a bit: more would wrap around 2**64
        value = value + digits * np.uint64(10 ** (8 * k)) if k else digits
    return value, exact


_P10F = np.array([10.0**k for k in range(23)])
"""10**k, exact in float64 up to k = 22."""


def _power_of_five(q: int) -> tuple[int, int]:
    """(high, low) 64-bit words of 5**q normalised to 128 bits (top bit set), as the algorithm needs them:
    positive powers truncated; for -27 <= q < 0 rounded up (one above the truncated value); smaller
    ones truncated from a twice wider quotient plus one."""
    p = 5 ** abs(q)
    bits = p.bit_length()
    if q >= 0:
        m = p << (128 - bits) if bits <= 128 else p >> (bits - 128)
    elif q >= -27:
        m = (1 << (bits + 127)) // p + 1
    else:
        m = (1 << (2 * bits + 128)) // p + 1
        while m >= 1 << 128:
            m >>= 1
    return m >> 64, m & 0xFFFFFFFFFFFFFFFF


_POW5_HIGH = np.zeros(_Q_MAX - _Q_MIN + 1, dtype=np.uint64)
_POW5_LOW = np.zeros(_Q_MAX - _Q_MIN + 1, dtype=np.uint64)
_POW5_DONE = np.zeros(_Q_MAX - _Q_MIN + 1, dtype=bool)
"""Rows of the table filled so far (filled on first use: runs need a few dozen of the 651)."""


def _pow5(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Table rows ``index`` (``q - _Q_MIN``), filling missing ones."""
    for i in _scan.distinct(index[~_POW5_DONE[index]]):
        _POW5_HIGH[i], _POW5_LOW[i] = _power_of_five(i + _Q_MIN)
        _POW5_DONE[i] = True
    return _POW5_HIGH[index], _POW5_LOW[index]


def _mul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit words of the exact products ``a * b``."""
    a0, a1, b0, b1 = a & _M32, a >> _S32, b & _M32, b >> _S32
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    return a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32), (mid << _S32) | (p00 & _M32)


def _bit_length(w: np.ndarray) -> np.ndarray:
    """Bit length of each nonzero uint64 (the float conversion may round up by one: corrected)."""
    length = np.minimum(np.frexp(w.astype(np.float64))[1], 64).astype(np.uint64)
    bits: np.ndarray = length - ((w >> (length - np.uint64(1))) == 0).astype(np.uint64)
    return bits


def eisel_lemire(w: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the double nearest to ``w * 10**q``, ok) for nonzero uint64 ``w``; ok is False where the
    128-bit product cannot decide, or the result would be subnormal or infinite."""
    ok = (q >= _Q_MIN) & (q <= _Q_MAX)
    index = np.clip(q, _Q_MIN, _Q_MAX) - _Q_MIN
    zeros = np.uint64(64) - _bit_length(w)
    w = w << zeros
    table_high, table_low = _pow5(index)
    high, low = _mul128(w, table_high)
    wide = np.flatnonzero((high & np.uint64(0x1FF)) == 0x1FF)
    if len(wide):  # the truncated table word may hide a carry: add the next 64 bits of the product
        more, _ = _mul128(w[wide], table_low[wide])
        merged = low[wide] + more
        high[wide] += (merged < more).astype(np.uint64)
        low[wide] = merged
    ok &= (low != np.uint64(0xFFFFFFFFFFFFFFFF)) | ((q >= -27) & (q <= 55))
    upper = high >> np.uint64(63)
    mantissa = high >> (upper + np.uint64(9))
    power2 = ((q * 217706) >> 16) + 63 + upper.astype(np.int64) - zeros.astype(np.int64) + 1023
    ok &= (power2 > 0) & (power2 < 0x7FF - 1)
    # Exactly halfway: round to even (the product is exact there).
    tie = ((low <= 1) & (q >= -4) & (q <= 23) & ((mantissa & np.uint64(3)) == 1)
           & ((mantissa << (upper + np.uint64(9))) == high))
    mantissa &= ~tie.astype(np.uint64)
    mantissa = (mantissa + (mantissa & np.uint64(1))) >> np.uint64(1)
    carry = mantissa >= np.uint64(1 << 53)
    mantissa = np.where(carry, np.uint64(1 << 52), mantissa)
    power2 += carry
    ok &= power2 < 0x7FF
    bits = (np.clip(power2, 0, 0x7FF).astype(np.uint64) << np.uint64(52)) | (mantissa & np.uint64((1 << 52) - 1))
    return bits.view(np.float64), ok


def _decimal(text: list[np.ndarray], lay: _Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(mantissa, decimal exponent, ok, int value or None) of number texts of one layout, given as their 8-byte words."""
    n = len(text[0])
    int_part, int_exact = _digits(text, lay.int_start, lay.int_len)
    frac_part, frac_exact = _digits(text, lay.frac_start, lay.frac_len)
    good = np.ones(n, dtype=bool)
    for exact in (int_exact, frac_exact):
        if exact is not None:
            good &= exact
    if lay.int_len + lay.frac_len <= 19:  # the mantissa fits in 64 bits
        mantissa = int_part * np.uint64(10**lay.frac_len) + frac_part if lay.frac_len else int_part
    else:  # only leading zeros can make it fit: all of it in the fraction
        good &= int_part == 0
        mantissa = frac_part
    if lay.exp_len:
        exp_part = _digits(text, lay.exp_start, lay.exp_len)[0].astype(np.int64)
        exp10 = (-exp_part if lay.exp_negative else exp_part) - lay.frac_len
    else:
        exp10 = np.full(n, -lay.frac_len, dtype=np.int64)
    return mantissa, exp10, good, int_part.astype(np.int64) if lay.integer else None


def _to_double(mantissa: np.ndarray, exp10: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nearest double to ``mantissa * 10**exp10``, decided)."""
    # Clinger: a mantissa below 2**53 times an exact power of ten is one correctly rounded operation.
    power = np.minimum(np.abs(exp10), 22)
    as_float = mantissa.astype(np.float64)
    result = np.where(exp10 >= 0, as_float * _P10F[power], as_float / _P10F[power])
    decided = np.ones(len(mantissa), dtype=bool)
    hard = np.flatnonzero((mantissa >= np.uint64(1 << 53)) | ((np.abs(exp10) > 22) & (mantissa != 0)))
    if len(hard):
        result[hard], decided[hard] = eisel_lemire(mantissa[hard], exp10[hard])
    return result, decided


def parse(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(float64 value, ok, int64 value, is_int) per text ``[starts[i], ends[i])`` of ``words`` (see ``_scan.padded``).

    ``ok`` is False where ``float(text)`` must decide. ``is_int`` marks integer texts (no dot, no
    exponent) of at most 18 digits, whose ``int(text)`` is the int64 value.
    """
    n = len(starts)
    values = np.zeros(n, dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    ints = np.zeros(n, dtype=np.int64)
    is_int = np.zeros(n, dtype=bool)
    length = ends - starts
    todo = np.flatnonzero((length > 0) & (length <= MAX_TEXT))
    if not len(todo):
        return values, ok, ints, is_int
    s, ln = starts[todo], length[todo]
    last = len(words) - 1
    n_words = -(-int(ln.max()) // 8)
    word = [words[np.minimum(s + 8 * k, last)] & _IN_TEXT[k][ln] for k in range(n_words)]
    # Shape: the length, where the non-digit bytes are (one bit each) and what they are.
    where = ln.astype(np.uint64)
    chars = []
    for k in range(n_words):
        x = word[k] ^ _ZERO_CHARS
        nondigit = (((x & _LOW7) + _DIGIT_LIMIT) | x) & _IN_TEXT_HIGH[k][ln]
        where |= ((nondigit >> np.uint64(7)) * np.uint64(0x0102040810204080) >> np.uint64(56)) << np.uint64(5 + 8 * k)
        chars.append(word[k] & ((nondigit >> np.uint64(7)) * np.uint64(0xFF)))
    shape, first = _scan.group_rows([where, *chars])
    if len(first) > MAX_SHAPES:
        return values, ok, ints, is_int
    # The texts of each shape, together (a counting sort), read with the shape's fixed layout; the
    # conversion to doubles is then one call for all of them.
    order = np.argsort(shape.astype(np.uint16), kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(shape, minlength=len(first)))])
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]] = []
    for j, rep in enumerate(first.tolist()):
        size = int(ln[rep])
        text = b"".join(int(w[rep]).to_bytes(8, "little") for w in word)[:size].decode("latin-1")
        lay = _layout("".join("D" if "0" <= c <= "9" else c for c in text))
        if lay is None:
            continue
        members = order[bounds[j]:bounds[j + 1]]
        if len(members) < MIN_GROUP:
            continue  # a rare shape: float() per text costs less than the group's numpy calls
        target = todo[members]
        if isinstance(lay, float):
            values[target], ok[target] = lay, True
            continue
        mantissa, exp10, good, integer = _decimal([w[members] for w in word[:-(-size // 8)]], lay)
        parts.append((target, mantissa, exp10, good, lay.negative))
        if integer is not None:
            ints[target] = -integer if lay.negative else integer
            is_int[target] = good
    if parts:
        target, mantissa, exp10, good = (np.concatenate(c) for c in list(zip(*parts))[:4])
        negative = np.concatenate([np.full(len(p[0]), p[4]) for p in parts])
        result, decided = _to_double(mantissa, exp10)
        values[target] = np.where(negative, -result, result)
        ok[target] = good & decided
    return values, ok, ints, is_int
