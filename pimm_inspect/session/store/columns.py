"""Lossless compact storage of the cache's numpy columns, chunk by chunk.

A column is cut into chunks of ``CHUNK`` elements; each chunk is stored the smallest way that gives back exactly its
bits: integers as an arithmetic progression (no bytes), as deltas or as values in the narrowest integer type that
holds them; float64 values that were written as decimals (a train.log's ``0.4821``) as integer mantissas and one
power of ten, the mantissas stored like integers, with the few values that do not round-trip (NaN, inf, -0.0, a
value of more digits) kept raw beside them. Every float chunk is decoded once while it is encoded and compared bit
for bit with its input, so a stored chunk always decodes to exactly what was read; anything else is stored raw.

Each stored blob carries a CRC-32, checked when that chunk is decoded: a damaged entry is found chunk by chunk
without hashing the whole file on every open. The layout (a JSON list per chunk) goes into the entry's meta.

A short column (``INLINE_MAX`` values or fewer, none of them NaN or infinite: most of a run's tags) is kept in the
layout itself as its JSON numbers (``["js", [...]]``), which give back every bit (a float is written as its shortest
repr, read back as the same double), covered by the meta's checksum: no blob, no CRC, nothing to pack or unpack.
"""

from __future__ import annotations

import zlib
from math import copysign, isfinite, prod
from collections.abc import Callable
from typing import Any

import numpy as np

CHUNK = 1 << 17
"""Elements per chunk: bounds the temporaries of packing and unpacking (a few times 1 MB: a cold read that writes the
cache then peaks about where one without it does; 8 MB chunks added ~60 MB to a 1 GB train.log's), and each chunk's
integers get their own narrowest type."""
_INT_TYPES = tuple(np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"))
_INT_NAMES = frozenset(t.name for t in _INT_TYPES)
"""Their names, made once (a dtype's ``name`` is computed in Python on every access: ~10 us per stored row)."""
_SAFE = 1 << 62
"""Integers within +-2**62 have int64 deltas that cannot overflow."""
_EXACT = float(1 << 53)
"""Mantissas below this are exact in float64."""
_POW10 = [10.0 ** k for k in range(16)]
_SAMPLE = 2048
INLINE_MAX = 32
"""Columns of at most this many values are kept in the layout as JSON numbers (see the module)."""
_INLINE_TYPES = {"f": float, "b": bool, "i": int, "u": int}
_NONE = np.zeros(0, dtype=np.intp)

Write = Callable[[memoryview], tuple[int, int, int]]
"""Writes bytes into the entry and returns (offset, length, CRC-32)."""
Read = Callable[[int, int], bytes]
"""Reads (offset, length) of the entry."""


class Damaged(ValueError):
    """A chunk does not decode (bad layout, or its bytes fail their CRC)."""


def crc(data: Any) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


_INT_RANGES = tuple((dtype, int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)) for dtype in _INT_TYPES)
"""Each integer type with its bounds, made once (``np.iinfo`` costs microseconds per call)."""
_INT_NAME = {t: t.name for t in _INT_TYPES}
_SMALL = 32
"""Chunks of at most this many elements are judged with Python's own numbers: numpy's per-call overhead would cost
more than the work (most stored columns are a few values: one tag's points in a short run)."""


def _narrowest(lo: int, hi: int) -> np.dtype:
    for dtype, low, high in _INT_RANGES:
        if low <= lo and hi <= high:
            return dtype
    return np.dtype(np.int64)


def _blob(write: Write, array: np.ndarray) -> list[int]:
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    offset, length, check = write(memoryview(data.view(np.uint8)))  # type: ignore[arg-type]  # numpy is a buffer
    return [offset, length, check]


def _pack_ints(write: Write, x: np.ndarray) -> list[Any]:
    """An int64 chunk: ``["ar", first, step]``, ``["dl", first, dtype, blob...]``, ``["nw", dtype, blob...]``."""
    n = x.size
    small = x.tolist() if n <= _SMALL else None
    lo, hi = (min(small), max(small)) if small is not None else (int(x.min()), int(x.max()))
    narrow = _narrowest(lo, hi)
    if n >= 2 and -_SAFE < lo and hi < _SAFE:
        if small is not None:
            steps = [b - a for a, b in zip(small, small[1:])]
            dlo, dhi = min(steps), max(steps)
        else:
            deltas = np.diff(x)
            dlo, dhi = int(deltas.min()), int(deltas.max())
        if dlo == dhi:
            return ["ar", int(x[0]), dlo]
        delta_type = _narrowest(dlo, dhi)
        if delta_type.itemsize < narrow.itemsize:
            if small is not None:
                deltas = np.diff(x)
            return ["dl", int(x[0]), _INT_NAME[delta_type], *_blob(write, deltas.astype(delta_type))]
    return ["nw", _INT_NAME[narrow], *_blob(write, x if narrow == x.dtype else x.astype(narrow))]


def _unpack_ints(spec: list[Any], n: int, read: Read, out: np.ndarray | None = None) -> np.ndarray:
    """The int64 chunk ``spec`` (into ``out`` when given: an int64 slice of ``n``)."""
    kind = spec[0]
    if out is None:
        out = np.empty(n, dtype=np.int64)
    if kind in ("ar", "dl"):
        out[0] = int(spec[1])
        if n > 1:
            if kind == "ar":
                out[1:] = int(spec[2])
            else:
                out[1:] = _read_blob(read, spec[3:6], np.dtype(_int_name(spec[2])), n - 1)
            np.cumsum(out, out=out)
        return out
    if kind == "nw":
        out[:] = _read_blob(read, spec[2:5], np.dtype(_int_name(spec[1])), n)
        return out
    raise Damaged(f"unknown integer chunk {kind!r}")


def _int_name(name: Any) -> str:
    if type(name) is not str or name not in _INT_NAMES:
        raise Damaged(f"bad integer type {name!r}")
    return str(name)


def _read_blob(read: Read, where: list[Any], dtype: np.dtype, count: int) -> np.ndarray:
    offset, length, check = where
    if not all(type(v) is int and v >= 0 for v in where) or length != count * dtype.itemsize:
        raise Damaged("bad blob layout")
    data = read(offset, length)
    if len(data) != length or crc(data) != check:
        raise Damaged("chunk checksum mismatch (damaged entry)")
    return np.frombuffer(data, dtype=dtype.newbyteorder("<"), count=count)


def _mantissa_values(m: np.ndarray, scale: int, split: bool, out: np.ndarray | None = None) -> np.ndarray:
    """The float64 values of decimal mantissas (the same arithmetic as the readers: bit for bit reproducible)."""
    if split:  # whole part + fraction, as a timestamp's seconds + milliseconds / 1000
        whole, frac = np.divmod(m, 10 ** scale)
        return np.add(whole.astype(np.float64), frac / _POW10[scale], out=out)
    return np.divide(m.astype(np.float64), _POW10[scale], out=out)


def _decimal_form(x: np.ndarray) -> tuple[int, bool, np.ndarray | None] | None:
    """(scale, split, mantissas) under which most of a sample of ``x`` are exact decimals, or None; the mantissas
    (int64) are ``x``'s own when the sample is the whole of ``x`` and finite, else None (``_pack_floats`` makes them).

    Scales are tried smallest first, whole before split (``_mantissa_values``); the first scale under which some
    mantissa is not exact in float64 ends the search."""
    sample = x[:_SAMPLE]
    if sample.size <= _SMALL:
        return _small_decimal_form(sample.tolist(), sample.size == x.size)
    finite = np.isfinite(sample)
    whole = sample.size == x.size and bool(finite.all())
    if not whole:
        sample = sample[finite]
        if not sample.size:
            return None
    bits = sample.view(np.int64)
    need = sample.size * 7
    for scale in range(16):
        m = np.rint(sample * _POW10[scale])
        if np.abs(m).max() >= _EXACT:
            return None
        mi = m.astype(np.int64)
        for split in (False, True) if scale else (False,):
            if np.count_nonzero(_mantissa_values(mi, scale, split).view(np.int64) == bits) * 8 >= need:
                return scale, split, mi if whole else None
    return None


def _small_decimal_form(values: list[float], whole: bool) -> tuple[int, bool, np.ndarray | None] | None:
    """``_decimal_form`` of a few values, in Python floats: the same IEEE operations as numpy's (a product rounded
    half to even, an exact mantissa made float, a quotient, a sum), so the same answer; a scale is given up at the
    first value too many that it does not give back, so a wrong scale costs a value or two, not all of them."""
    finite = [v for v in values if isfinite(v)]
    if not finite:
        return None
    whole = whole and len(finite) == len(values)
    misses = len(finite) - (len(finite) * 7 + 7) // 8  # at least 7 in 8 given back exactly
    top = max(map(abs, finite))
    for scale in range(16):
        power = _POW10[scale]
        if top * power >= _EXACT:  # the largest mantissa (a product of floats grows with its factor) is not exact
            return None
        for split in (False, True) if scale else (False,):
            if _gives_back(finite, power, 10 ** scale if split else 0, misses):
                return scale, split, np.array([round(v * power) for v in finite], dtype=np.int64) if whole else None
    return None


def _gives_back(values: list[float], power: float, unit: int, misses: int) -> bool:
    """True when no more than ``misses`` of ``values`` differ in bits from their decimal form under ``power``
    (``unit``: 10 ** scale for the split form, else 0), as ``_mantissa_values`` computes it."""
    for v in values:
        m = round(v * power)  # round half to even, as np.rint
        if unit:
            high, low = divmod(m, unit)  # floor division, as numpy's on int64
            got = float(high) + low / power
        else:
            got = m / power
        if got != v or (got == 0.0 and copysign(1.0, got) != copysign(1.0, v)):
            misses -= 1
            if misses < 0:
                return False
    return True


def _pack_floats(write: Write, x: np.ndarray) -> list[Any] | None:
    """A float64 chunk as ``["dec", scale, split, ints, exceptions...]``, or None when raw is better."""
    form = _decimal_form(x)
    if form is None:
        return None
    scale, split, known = form
    if known is not None:  # the sample was the whole chunk, finite: its mantissas at that scale are all exact
        mantissas = known
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.multiply(x, _POW10[scale])
            np.rint(m, out=m)
            low, high = m.min(), m.max()  # NaN if any is NaN
            if -_EXACT < low and high < _EXACT:  # the usual chunk: every value finite and exact as a mantissa
                mantissas = m.astype(np.int64)
            else:
                usable = np.abs(m) < _EXACT  # False for NaN and inf too
                mantissas = np.where(usable, m, 0.0).astype(np.int64)
        del m
    ok = _mantissa_values(mantissas, scale, split).view(np.int64) == x.view(np.int64)
    bad = _NONE if ok.all() else np.flatnonzero(~ok)
    if bad.size * 4 > x.size:
        return None
    if bad.size:  # exceptions repeat their neighbour's mantissa, so deltas stay small
        keep = np.where(ok, np.arange(x.size), 0)
        np.maximum.accumulate(keep, out=keep)
        mantissas = mantissas[keep]
        if not ok[0]:
            mantissas[: int(np.argmax(ok)) if ok.any() else x.size] = 0
    ints = _pack_ints(write, mantissas)
    exceptions: list[Any] = []
    if bad.size:
        exceptions = [int(bad.size), _blob(write, bad.astype(np.int32)), _blob(write, x[bad])]
    return ["dec", scale, split, ints, exceptions]


def _unpack_floats(spec: list[Any], n: int, read: Read, out: np.ndarray) -> None:
    scale, split, ints, exceptions = spec[1:5]
    if type(scale) is not int or not 0 <= scale < 16 or type(split) is not bool or not isinstance(ints, list):
        raise Damaged("bad decimal chunk")
    _mantissa_values(_unpack_ints(ints, n, read), scale, split, out)
    if exceptions:
        count, where, raw = exceptions
        if type(count) is not int or not 0 < count <= n:
            raise Damaged("bad exceptions")
        positions = _read_blob(read, where, np.dtype(np.int32), count)
        if positions.min() < 0 or positions.max() >= n:
            raise Damaged("exception outside the chunk")
        out[positions] = _read_blob(read, raw, np.dtype(np.float64), count)


def pack(write: Write, array: np.ndarray) -> list[Any]:
    """Store ``array`` (any storable dtype and shape) through ``write``; returns its chunk layout."""
    flat = array.reshape(-1)
    kind = array.dtype.kind
    if 0 < flat.size <= INLINE_MAX:
        values = flat.tolist()
        if kind != "f" or all(isfinite(v) for v in values):  # JSON holds no NaN or infinity
            return [[flat.size, ["js", values]]]
    chunks: list[Any] = []
    for start in range(0, flat.size, CHUNK):
        part = flat[start:start + CHUNK]
        spec: list[Any] | None = None
        if kind in "iu" and array.dtype.itemsize == 1:
            pass  # bytes (a row's encoded detail): no type is narrower and a progression of bytes is rare: kept raw
        elif kind in "iu" and (kind == "i" or array.dtype.itemsize < 8):
            spec = _pack_ints(write, part.astype(np.int64))
        elif array.dtype == np.float64:
            spec = _pack_floats(write, part)
        chunks.append([part.size, spec if spec is not None else ["raw", *_blob(write, part)]])
    return chunks


def unpack(chunks: Any, dtype: np.dtype, shape: tuple[int, ...], read: Read) -> np.ndarray:
    """The array ``pack`` stored; ``Damaged`` when the layout or a chunk's bytes are wrong."""
    total = prod(shape)  # the codec checked the shape: non-negative ints
    if not isinstance(chunks, list):
        raise Damaged("bad chunk list")
    out = np.empty(total, dtype=dtype)
    pos = 0
    for item in chunks:
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int and isinstance(item[1], list)
                and item[1] and 0 < item[0] <= total - pos):
            raise Damaged("bad chunk")
        n, spec = item
        kind = spec[0]
        if kind == "raw":
            out[pos:pos + n] = _read_blob(read, spec[1:4], dtype, n)
        elif kind == "dec" and dtype == np.float64:
            _unpack_floats(spec, n, read, out[pos:pos + n])
        elif kind == "js":
            values = spec[1] if len(spec) == 2 else None
            want = _INLINE_TYPES.get(dtype.kind)
            if not (type(values) is list and len(values) == n and all(type(v) is want for v in values)):
                raise Damaged("bad inline chunk")
            out[pos:pos + n] = values
        elif kind in ("ar", "dl", "nw") and dtype.kind in "iu":
            if dtype == np.int64:
                _unpack_ints(spec, n, read, out[pos:pos + n])
            else:
                out[pos:pos + n] = _unpack_ints(spec, n, read)
        else:
            raise Damaged(f"chunk kind {kind!r} for {dtype}")
        pos += n
    if pos != total:
        raise Damaged("chunks do not fill the array")
    out.flags.writeable = False  # as the readers' own columns: an array may be shared (steps of every tag)
    return out.reshape(shape)
