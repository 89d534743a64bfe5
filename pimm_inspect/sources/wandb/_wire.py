"""Protobuf wire-format walking over many messages at once with numpy (no per-message Python).

``walk`` steps through the fields of every message span in lock-step: one numpy pass per field
position, over all messages. It decodes only the framing of the fields (tag, varint value,
length-delimited span); what the fields mean is up to the caller, which checks the layout it
expects and hands anything else to the real protobuf parser.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PAD = 16
"""Zero bytes the caller appends to the buffer, so reading a varint near its end stays in bounds."""
MAX_FIELDS = 4096
"""A message with more fields than this is left to the protobuf parser."""


@dataclass(slots=True)
class Fields:
    """The fields found, grouped by message in wire order."""

    parent: np.ndarray
    """Index of the message span each field belongs to."""
    number: np.ndarray
    wire: np.ndarray
    start: np.ndarray
    """Varint fields: the value (int64 two's complement); length-delimited: where the bytes start."""
    end: np.ndarray
    """Length-delimited: where the bytes end; else the offset just past the field."""
    tag_start: np.ndarray
    bad: np.ndarray
    """Per message: its fields could not be walked (left to the protobuf parser)."""


def varints(buf: np.ndarray, pos: np.ndarray, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(value as uint64, byte length) of the varint at each of ``pos``; length 0 when longer than ``max_len``."""
    byte = buf[pos]
    value = (byte & 0x7F).astype(np.uint64)
    length = np.ones(len(pos), dtype=np.int64)
    more = np.flatnonzero(byte >= 0x80)
    for i in range(1, max_len):
        if not len(more):
            return value, length
        byte = buf[pos[more] + i]
        value[more] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        length[more] = i + 1
        more = more[byte >= 0x80]
    length[more] = 0
    return value, length


def walk(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Fields:
    """The fields of every message ``buf[starts[i]:ends[i]]`` (``buf`` padded with ``PAD`` zero bytes)."""
    n = len(starts)
    bad = np.zeros(n, dtype=bool)
    pos = starts.astype(np.int64, copy=True)
    out: list[tuple[np.ndarray, ...]] = []
    active = np.flatnonzero(pos < ends)
    for _ in range(MAX_FIELDS):
        if not len(active):
            break
        p = pos[active]
        limit = ends[active]
        tag, tag_len = varints(buf, p, 5)
        ok = (tag_len > 0) & (tag >> np.uint64(3) > 0)
        wire = (tag & np.uint64(7)).astype(np.int64)
        number = (tag >> np.uint64(3)).astype(np.int64)
        q = p + tag_len
        a = np.zeros(len(active), dtype=np.int64)
        nxt = np.full(len(active), np.iinfo(np.int64).max, dtype=np.int64)
        w0 = np.flatnonzero(ok & (wire == 0))
        if len(w0):
            v, vl = varints(buf, q[w0], 10)
            a[w0] = v.view(np.int64)
            nxt[w0] = q[w0] + vl
            ok[w0[vl == 0]] = False
        w2 = np.flatnonzero(ok & (wire == 2))
        if len(w2):
            ln, ll = varints(buf, q[w2], 5)
            s = q[w2] + ll
            ln = np.minimum(ln, np.uint64(1 << 40)).astype(np.int64)
            a[w2] = s
            nxt[w2] = s + ln
            ok[w2[ll == 0]] = False
        for wt, size in ((1, 8), (5, 4)):
            wf = ok & (wire == wt)
            a[wf] = q[wf]
            nxt[wf] = q[wf] + size
        ok &= (wire == 0) | (wire == 1) | (wire == 2) | (wire == 5)
        ok &= nxt <= limit
        bad[active[~ok]] = True
        good = np.flatnonzero(ok)
        out.append((active[good], number[good], wire[good], a[good], nxt[good], p[good]))
        pos[active[good]] = nxt[good]
        active = active[good][nxt[good] < limit[good]]
    bad[active] = True  # more fields than MAX_FIELDS
    if out:
        cols = [np.concatenate(c) for c in zip(*out)]
        order = np.argsort(cols[0], kind="stable")
        cols = [c[order] for c in cols]
    else:
        cols = [np.zeros(0, dtype=np.int64) for _ in range(6)]
    parent, number, wire, start, end, tag_start = cols
    return Fields(parent, number, wire, start, end, tag_start, bad=bad)


def count_per(parent: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """How many fields selected by ``mask`` each of ``n`` messages has."""
    return np.bincount(parent[mask], minlength=n)


def gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """The spans as rows of a ``(n, width)`` uint8 matrix, zero-padded (spans must be <= width)."""
    width = max(width, 1)
    rows = np.lib.stride_tricks.as_strided(buf, shape=(len(buf) - width + 1, width), strides=(1, 1),
                                           writeable=False)
    if not len(rows):
        rows = np.zeros((1, width), dtype=np.uint8)
    mat = rows[np.minimum(starts, len(rows) - 1)]
    for i in np.flatnonzero(starts >= len(rows)).tolist():  # spans this close to the end: copy them
        piece = buf[starts[i]:starts[i] + width]
        mat[i] = 0
        mat[i, :len(piece)] = piece
    mat[np.arange(width) >= (ends - starts)[:, None]] = 0
    return mat


def span_ids(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(id per span, index of one span per id): equal ids exactly when the bytes are equal."""
    lengths = np.maximum(ends - starts, 0)
    width = -(-int(lengths.max()) // 8) * 8 if len(lengths) and lengths.max() > 0 else 8
    mat = gather(buf, starts, starts + lengths, width)
    keyed = np.concatenate([mat.view(np.uint64), lengths.astype(np.uint64)[:, None]], axis=1)
    # A multiplicative hash per span; equal bytes give equal hashes, and every span is checked
    # against its group's first span, so a collision only costs the exact (slower) grouping below.
    mixed = np.zeros(len(keyed), dtype=np.uint64)
    for j in range(keyed.shape[1]):
        mixed = (mixed ^ keyed[:, j]) * np.uint64(0x9E3779B97F4A7C15)
        mixed ^= mixed >> np.uint64(29)
    _, first, inverse = np.unique(mixed, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if np.array_equal(keyed, keyed[first[inverse]]):
        return inverse, first
    void = np.ascontiguousarray(keyed).view(f"V{keyed.shape[1] * 8}").ravel()
    _, first, inverse = np.unique(void, return_index=True, return_inverse=True)
    return inverse.ravel(), first


def spans_max(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> int:
    """The largest byte inside any of the (sorted, non-overlapping) spans; 0 when they are all empty."""
    keep = ends > starts
    if not keep.any():
        return 0
    bounds = np.empty(2 * int(keep.sum()), dtype=np.int64)
    bounds[0::2] = starts[keep]
    bounds[1::2] = ends[keep]
    if bounds[-1] >= len(buf):
        bounds = bounds[:-1]
    return int(np.maximum.reduceat(buf, bounds)[0::2].max())
