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

import numpy as np

from . import _scan

MAX_TEXT = 24
"""Longer texts are left to ``float``."""
MAX_SHAPES = 4096
"""More distinct shapes than this in one call: the texts of the others are left to ``float``."""
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


class _Shapes:
    """Per shape: whether it is a number, and where its digit runs end and how long they are."""

    def __init__(self, patterns: list[str]) -> None:
        columns = list(zip(*(self._analyse(p) for p in patterns)))
        (self.kind, self.negative, self.int_end, self.int_len, self.frac_end, self.frac_len, self.exp_end,
         self.exp_len, self.exp_negative, self.integer) = (np.array(c, dtype=np.int64) for c in columns)
        self.constant = np.array([_SPECIAL.get(p, 0.0) for p in patterns], dtype=np.float64)

    @staticmethod
    def _analyse(pattern: str) -> tuple[int, ...]:
        if pattern in _SPECIAL:
            return (2, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        match = _GRAMMAR.fullmatch(pattern)
        if match is None:
            return (0,) * 10
        sign, int_digits, frac_digits, exp_sign, exp_digits = match.groups()
        int_end = len(sign) + len(int_digits)
        frac_len = len(frac_digits or "")
        frac_end = int_end + 1 + frac_len if frac_digits else int_end
        if len(int_digits) > 24 or frac_len > 24:
            return (0,) * 10  # more than three words of digits
        exp_len = len(exp_digits or "")
        return (1, int(sign == "-"), int_end, len(int_digits), frac_end, frac_len, len(pattern), exp_len,
                int(exp_sign == "-"), int(frac_digits is None and exp_digits is None and len(int_digits) <= 18))


def _run(words: np.ndarray, end: np.ndarray, length: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(value, exact) of the digit runs of ``length`` (<= 8 * n_words <= 24) bytes ending before ``end``;
    the value of a run of more than 19 digits wraps around unless its top 8 digits are below 1800."""
    value = np.zeros(len(end), dtype=np.uint64)
    exact = np.ones(len(end), dtype=bool)
    for k in range(n_words):
        left = np.clip(length - 8 * k, 0, 8)
        word = words[end - 8 * (k + 1)]
        # The run's bytes are the last ``left`` of the word; the ones before it become "0".
        keep = ~_IN_TEXT[0][8 - left]
        digits = _eight_digits((word & keep) | (_ZERO_CHARS & ~keep))
        if k == 2:
            exact = (length <= 19) | (digits < 1800)
        value += digits * _POW10[8 * k]
    return value, exact


def _powers_of_five() -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit words of 5**q normalised to 128 bits (top bit set), q in [_Q_MIN, _Q_MAX].

    As the algorithm needs them: positive powers truncated; 5**q for -27 <= q < 0 rounded up (one
    above the truncated value); smaller ones truncated from a twice wider quotient plus one.
    """
    high, low = [], []
    for q in range(_Q_MIN, _Q_MAX + 1):
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
        high.append(m >> 64)
        low.append(m & 0xFFFFFFFFFFFFFFFF)
    return np.array(high, dtype=np.uint64), np.array(low, dtype=np.uint64)


_POW5_HIGH, _POW5_LOW = _powers_of_five()


def _mul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit words of the exact products ``a * b``."""
    a0, a1, b0, b1 = a & _M32, a >> _S32, b & _M32, b >> _S32
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    return a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32), (mid << _S32) | (p00 & _M32)


def _bit_length(w: np.ndarray) -> np.ndarray:
    """Bit length of each nonzero uint64 (the float conversion may round up by one: corrected)."""
    length = np.minimum(np.frexp(w.astype(np.float64))[1], 64).astype(np.uint64)
    return length - ((w >> (length - np.uint64(1))) == 0).astype(np.uint64)


def eisel_lemire(w: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the double nearest to ``w * 10**q``, ok) for nonzero uint64 ``w``; ok is False where the
    128-bit product cannot decide, or the result would be subnormal or infinite."""
    ok = (q >= _Q_MIN) & (q <= _Q_MAX)
    index = np.clip(q, _Q_MIN, _Q_MAX) - _Q_MIN
    zeros = np.uint64(64) - _bit_length(w)
    w = w << zeros
    high, low = _mul128(w, _POW5_HIGH[index])
    wide = np.flatnonzero((high & np.uint64(0x1FF)) == 0x1FF)
    if len(wide):  # the truncated table word may hide a carry: add the next 64 bits of the product
        more, _ = _mul128(w[wide], _POW5_LOW[index[wide]])
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


def _decimal(words: np.ndarray, base: np.ndarray, sh: np.ndarray, shapes: _Shapes
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(value, ok, int value, is_int) of number texts starting at ``base``, of known good shapes ``sh``."""
    int_len, frac_len = shapes.int_len[sh], shapes.frac_len[sh]
    int_part, int_exact = _run(words, base + shapes.int_end[sh], int_len, -(-int(int_len.max()) // 8))
    frac_part, frac_exact = _run(words, base + shapes.frac_end[sh], frac_len, -(-int(frac_len.max()) // 8))
    exp_part = _run(words, base + shapes.exp_end[sh], shapes.exp_len[sh], 1)[0].astype(np.int64)
    # The mantissa must fit in 64 bits: all of it in the fraction, or at most 19 digits in all.
    good = int_exact & frac_exact & ((int_part == 0) | (int_len + frac_len <= 19))
    mantissa = np.where(int_part == 0, frac_part, int_part * _POW10[np.minimum(frac_len, 19)] + frac_part)
    exp10 = np.where(shapes.exp_negative[sh] == 1, -exp_part, exp_part) - frac_len
    result, decided = eisel_lemire(np.maximum(mantissa, np.uint64(1)), exp10)
    zero = mantissa == 0
    result[zero] = 0.0
    good &= decided | zero
    negative = shapes.negative[sh] == 1
    integer = good & (shapes.integer[sh] == 1)
    signed = int_part.astype(np.int64)
    return (np.where(negative, -result, result), good, np.where(integer, np.where(negative, -signed, signed), 0),
            integer)


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
    # Texts start well inside a record (after its headers), so the words before a run exist.
    todo = np.flatnonzero((length > 0) & (length <= MAX_TEXT) & (starts >= 24))
    if not len(todo):
        return values, ok, ints, is_int
    s, ln = starts[todo], length[todo]
    last = len(words) - 1
    word = [words[np.minimum(s + 8 * k, last)] & _IN_TEXT[k][ln] for k in range(3)]
    nondigit = []
    for k in range(3):
        x = word[k] ^ _ZERO_CHARS
        nondigit.append((((x & _LOW7) + _DIGIT_LIMIT) | x) & _IN_TEXT_HIGH[k][ln])
    # Shape = length + non-digit positions and bytes.
    columns = [ln.astype(np.uint64)]
    for k in range(3):
        columns += [nondigit[k], word[k] & ((nondigit[k] >> np.uint64(7)) * np.uint64(0xFF))]
    shape, first = _scan.group_rows(columns)
    if len(first) > MAX_SHAPES:
        return values, ok, ints, is_int
    patterns = []
    for j in first.tolist():
        text = b"".join(int(word[k][j]).to_bytes(8, "little") for k in range(3))[:int(ln[j])].decode("latin-1")
        patterns.append("".join("D" if "0" <= c <= "9" else c for c in text))
    shapes = _Shapes(patterns)
    kind = shapes.kind[shape]
    number = np.flatnonzero(kind == 1)
    special = np.flatnonzero(kind == 2)
    if len(number):
        t = todo[number]
        values[t], ok[t], ints[t], is_int[t] = _decimal(words, s[number], shape[number], shapes)
    if len(special):
        values[todo[special]] = shapes.constant[shape[special]]
        ok[todo[special]] = True
    return values, ok, ints, is_int
