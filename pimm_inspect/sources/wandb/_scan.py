"""Protobuf wire layouts of many W&B records at once, with numpy and no Python per record.

Every function takes the batch buffer twice: as bytes (``buf``, padded with ``PAD`` zero bytes so
reads near its end stay in bounds) and as an unaligned little-endian uint64 view (``words``), so the
first 8 bytes at any offset are one gather. Only the exact layouts wandb writes are recognised
(one-byte tags, varint lengths of up to 4 bytes); the callers hand anything else to the protobuf
parser, so a layout this module does not know costs speed, never a different value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PAD = 16
"""Zero bytes appended to a batch buffer (a word read at any record byte stays inside it)."""
MAX_FIELDS = 65_536
"""A message with more fields than this is left to the protobuf parser."""
MAX_KEY_PARTS = 16
"""An item key of more ``nested_key`` parts than this is left to the protobuf parser."""
_U8, _U16 = np.uint64(0xFF), np.uint64(0xFFFF)
_S8 = np.uint64(8)
_FIELD_TAG = (np.uint64(0x0A), np.uint64(0x12))
"""Length-delimited fields 1 and 2: HistoryRecord item/step, SummaryRecord update/remove, HistoryItem key/nested_key."""
_VALUE_TAG = np.uint64(0x0182)
"""HistoryItem/SummaryItem ``value_json`` (field 16, length-delimited): tag bytes 0x82 0x01."""


_FIRST_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
"""[k]: a word keeping its first k bytes."""


def distinct(values: np.ndarray) -> list[int]:
    """The distinct values, ascending (``np.unique`` without index arguments imports numpy.ma, ~40 ms)."""
    if not len(values):
        return []
    found: list[int] = np.unique(values, return_index=True)[0].tolist()
    return found


def padded(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, unaligned uint64 words at every offset) of ``data`` plus ``PAD`` zero bytes."""
    return word_view(np.frombuffer(data + bytes(PAD), dtype=np.uint8))


def word_view(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``buf``, its unaligned uint64 words at every offset); ``buf`` must end with ``PAD`` zero bytes."""
    return buf, np.ndarray((len(buf) - 7,), dtype=np.uint64, buffer=buf, strides=(1,))


def _length(word: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(value, byte count) of the varint starting ``shift`` bytes into each word; count 0 when it
    is longer than 4 bytes (or does not fit in the word)."""
    w = word >> np.uint64(8 * shift) if shift else word
    value = (w & np.uint64(0x7F)).astype(np.int64)
    size = np.ones(len(w), dtype=np.int64)
    more = np.flatnonzero(w & np.uint64(0x80))
    for k in range(1, min(4, 8 - shift)):
        if not len(more):
            return value, size
        byte = (w[more] >> np.uint64(8 * k)) & _U8
        value[more] |= (byte & np.uint64(0x7F)).astype(np.int64) << (7 * k)
        size[more] = k + 1
        more = more[byte >= 0x80]
    size[more] = 0
    return value, size


def varint_size(word: np.ndarray, max_size: int = 8) -> np.ndarray:
    """Byte count of the varint at the start of each word (0 when longer than ``max_size`` <= 8)."""
    size = np.zeros(len(word), dtype=np.int64)
    open_ = np.ones(len(word), dtype=bool)
    for k in range(max_size):
        ends = open_ & ((word >> np.uint64(8 * k)) & np.uint64(0x80) == 0)
        size[ends] = k + 1
        open_ &= ~ends
        if not open_.any():
            break
    return size


def record_bodies(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tag byte of the record's one sub-message field, where its bytes start) per record.

    The layout is ``[num varint] <tag> <length> <sub-message to the record end>``; the tag is 0 for any
    other record (several fields, a long tag, a length that does not end at the record end).
    """
    first = words[starts]
    has_num = (first & _U8) == 0x08
    num_size = varint_size(words[starts + 1], 8)
    at = np.where(has_num, starts + 1 + num_size, starts)
    word = words[np.minimum(at, ends)]
    tag = (word & _U8).astype(np.int64)
    length, size = _length(word, 1)
    body = at + 1 + size
    ok = (~has_num | (num_size > 0)) & (at < ends) & (size > 0) & (body + length == ends)
    return np.where(ok, tag, 0), body


@dataclass(slots=True)
class Fields:
    """Length-delimited fields of many messages, in message order then wire order."""

    parent: np.ndarray
    """Index of the message each field belongs to."""
    tag: np.ndarray
    start: np.ndarray
    end: np.ndarray
    bad: np.ndarray
    """Per message: a field that is not field 1 or 2 length-delimited, or a length past the message end."""


def fields(buf: np.ndarray, words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Fields:
    """Fields 1 and 2 (length-delimited, one-byte tags) of every message ``[starts[i], ends[i])``.

    Messages are walked in lock-step, one field of each per numpy step; once fewer than
    ``TAIL_MESSAGES`` are left (a few rows of hundreds of keys), the rest is walked in Python,
    which is cheaper than numpy calls on a handful of values each.
    """
    n = len(starts)
    bad = np.zeros(n, dtype=bool)
    steps: list[tuple[np.ndarray, ...]] = []
    active = np.flatnonzero(ends > starts)
    at, limit = starts[active], ends[active]
    for _ in range(MAX_FIELDS):
        if not len(active) or (len(active) < TAIL_MESSAGES and len(steps) >= TAIL_AFTER):
            break
        word = words[at]
        tag = word & _U8
        length, size = _length(word, 1)
        start = at + 1 + size
        end = start + length
        ok = ((tag == _FIELD_TAG[0]) | (tag == _FIELD_TAG[1])) & (size > 0) & (end <= limit)
        if not ok.all():
            bad[active[~ok]] = True
            keep = np.flatnonzero(ok)
            active, tag, start, end, limit = active[keep], tag[keep], start[keep], end[keep], limit[keep]
        steps.append((active, tag, start, end))
        more = end < limit
        active, at, limit = active[more], end[more], limit[more]
    tail = _walk_tail(buf, active, at, limit, bad) if len(active) else None
    # Fields come out step by step (every message's first field, then every second ...); scatter
    # them into message order, which is a count per message and an offset, not a sort.
    counts = np.zeros(n, dtype=np.int64)
    for step in steps:
        counts[step[0]] += 1
    walked = len(steps)
    if tail is not None:
        counts += np.bincount(tail[0], minlength=n)
    offset = np.cumsum(counts) - counts
    total = int(counts.sum())
    parent = np.empty(total, dtype=np.int64)
    tag_out = np.empty(total, dtype=np.uint64)
    start_out = np.empty(total, dtype=np.int64)
    end_out = np.empty(total, dtype=np.int64)
    for k, (owner, tag, start, end) in enumerate(steps):
        place = offset[owner] + k
        parent[place], tag_out[place], start_out[place], end_out[place] = owner, tag, start, end
    if tail is not None:  # the tail's messages each had ``walked`` fields before it
        owner, index, tag, start, end = tail
        place = offset[owner] + walked + index
        parent[place], tag_out[place], start_out[place], end_out[place] = owner, tag, start, end
    return Fields(parent, tag_out, start_out, end_out, bad)


TAIL_MESSAGES = 48
"""Fewer messages than this left in the lock-step: the rest is walked in Python."""
TAIL_AFTER = 8
"""... but only after this many steps (short messages are done by then anyway)."""


def _walk_tail(buf: np.ndarray, active: np.ndarray, at: np.ndarray, limit: np.ndarray, bad: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(owner, index in the tail, tag, start, end) of the remaining fields of the messages ``active``,
    walked in Python from ``at`` to ``limit``; marks ``bad`` as the lock-step does."""
    owners: list[int] = []
    indices: list[int] = []
    tags: list[int] = []
    field_starts: list[int] = []
    field_ends: list[int] = []
    for message, lo, hi in zip(active.tolist(), at.tolist(), limit.tolist()):
        body = buf[lo:hi].tobytes()
        p, index, size = 0, 0, len(body)
        while p < size:
            tag = body[p]
            length, shift, q = 0, 0, p + 1
            while q < size and q - p <= 4:  # a length of at most 4 varint bytes, as the lock-step takes
                byte = body[q]
                length |= (byte & 0x7F) << shift
                shift += 7
                q += 1
                if byte < 0x80:
                    break
            else:
                bad[message] = True
                break
            if tag not in (0x0A, 0x12) or q + length > size:
                bad[message] = True
                break
            owners.append(message)
            indices.append(index)
            tags.append(tag)
            field_starts.append(lo + q)
            field_ends.append(lo + q + length)
            index += 1
            p = q + length
    return (np.array(owners, dtype=np.int64), np.array(indices, dtype=np.int64), np.array(tags, dtype=np.uint64),
            np.array(field_starts, dtype=np.int64), np.array(field_ends, dtype=np.int64))


def items(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key region end, value start, ok) of HistoryItem/SummaryItem messages ``[starts[i], ends[i])``.

    The plain layout: key fields (``key``/``nested_key``, one-byte lengths) then ``value_json`` as the
    last field, reaching the item end. The key region ``[start, key end)`` is what the protobuf parser
    decodes once per distinct encoding.
    """
    # What wandb writes nearly always: one key field, then value_json with a one-byte length.
    head = words[starts]
    key_len = ((head >> _S8) & _U8).astype(np.int64)
    key_end = starts + 2 + key_len
    tail = words[np.minimum(key_end, len(words) - 1)]
    value_start = key_end + 3
    tag = head & _U8
    ok = (((tag == _FIELD_TAG[0]) | (tag == _FIELD_TAG[1])) & (key_len < 0x80) & ((tail & _U16) == _VALUE_TAG)
          & (((tail >> np.uint64(16)) & _U8) < 0x80)
          & (value_start + ((tail >> np.uint64(16)) & _U8).astype(np.int64) == ends))
    other = np.flatnonzero(~ok)
    if len(other):  # several key parts, longer values, or off the layout
        key_end[other], value_start[other], ok[other] = _items_general(words, starts[other], ends[other])
    return key_end, value_start, ok


def _items_general(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key_end = starts.copy()
    ok = np.ones(len(starts), dtype=bool)
    todo = np.arange(len(starts))
    for _ in range(MAX_KEY_PARTS):
        word = words[key_end[todo]]
        tag = word & _U8
        part = ((tag == _FIELD_TAG[0]) | (tag == _FIELD_TAG[1])) & ((word >> _S8) & _U8 < 0x80)
        todo = todo[part]
        if not len(todo):
            break
        key_end[todo] += 2 + ((word[part] >> _S8) & _U8).astype(np.int64)
        past = key_end[todo] >= ends[todo]  # a key reaching the item end leaves no room for the value
        ok[todo[past]] = False
        todo = todo[~past]
    else:
        ok[todo] = False
    word = words[np.minimum(key_end, len(words) - 1)]
    length, size = _length(word, 2)
    value_start = key_end + 2 + size
    ok &= (key_end > starts) & ((word & _U16) == _VALUE_TAG) & (size > 0) & (value_start + length == ends)
    return key_end, value_start, ok


def group_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(group id per row, index of one row per group): rows whose uint64 ``columns`` are all equal share a group.

    A hash of each row picks a slot of a 64 Ki table; each row is then compared column by column with
    the row its slot kept, so a slot two groups share only sends the other group to the next round
    (another hash), and a group is never split. Rows still unplaced after three rounds are grouped by
    sorting.
    """
    n = len(columns[0])
    ids = np.full(n, -1, dtype=np.int64)
    firsts: list[np.ndarray] = []
    todo = np.arange(n)
    groups = 0
    for salt in (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7):
        if not len(todo):
            break
        mixed = np.full(len(todo), salt, dtype=np.uint64)
        for column in columns:
            mixed = (mixed ^ column[todo]) * np.uint64(0xBF58476D1CE4E5B9)
            mixed ^= mixed >> np.uint64(31)
        mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0x94D049BB133111EB)
        mixed ^= mixed >> np.uint64(27)
        slot = (mixed >> np.uint64(48)).astype(np.int64)
        table = np.full(1 << 16, -1, dtype=np.int64)
        table[slot] = todo
        rep = table[slot]
        same = np.ones(len(todo), dtype=bool)
        for column in columns:
            same &= column[rep] == column[todo]
        hit = np.zeros(1 << 16, dtype=bool)
        hit[slot[same]] = True
        placed_slots = np.flatnonzero(hit)
        dense = np.zeros(1 << 16, dtype=np.int64)
        dense[placed_slots] = np.arange(groups, groups + len(placed_slots))
        ids[todo[same]] = dense[slot[same]]
        firsts.append(table[placed_slots])
        groups += len(placed_slots)
        todo = todo[~same]
    if len(todo):
        keyed = np.ascontiguousarray(np.stack([c[todo] for c in columns], axis=1))
        _, first, inverse = np.unique(keyed.view(f"V{keyed.shape[1] * 8}").ravel(), return_index=True,
                                      return_inverse=True)
        ids[todo] = groups + inverse.ravel()
        firsts.append(todo[first])
    return ids, np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)


def span_ids(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(id per span, index of one span per id): equal ids exactly when the spans' bytes are equal.

    A span is compared through its length, its first 8 bytes, its last 8 bytes and the whole
    words in between: together they cover every byte (overlapping where the span is short).
    """
    if not len(starts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lengths = ends - starts
    last = len(words) - 1
    columns = [lengths.astype(np.uint64), words[np.minimum(starts, last)] & _FIRST_BYTES[np.minimum(lengths, 8)],
               np.where(lengths > 8, words[np.clip(ends - 8, 0, last)], np.uint64(0))]
    for k in range(1, -(-int(lengths.max()) // 8) - 1):  # whole words strictly inside the longer spans
        columns.append(np.where(lengths >= 8 * k + 8, words[np.minimum(starts + 8 * k, last)], np.uint64(0)))
    return group_rows(columns)


def non_ascii(buf: np.ndarray, words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """True for each span ``[starts[i], ends[i])`` holding a byte of 0x80 or more."""
    length = ends - starts
    out = np.zeros(len(starts), dtype=bool)
    short = np.flatnonzero(length <= 24)  # up to three words: no per-byte work
    if len(short):
        s, ln = starts[short], length[short]
        last = len(words) - 1
        seen = np.zeros(len(short), dtype=np.uint64)
        for k in range(-(-int(ln.max()) // 8)):
            seen |= words[np.minimum(s + 8 * k, last)] & _FIRST_BYTES[np.clip(ln - 8 * k, 0, 8)]
        out[short] = (seen & np.uint64(0x8080808080808080)) != 0
    long = np.flatnonzero(length > 24)
    if len(long):
        out[long] = spans_max_byte(buf, starts[long], ends[long]) >= 0x80
    return out


def spans_max_byte(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The largest byte of each span (sorted, non-overlapping spans; 0 for an empty one)."""
    out = np.zeros(len(starts), dtype=np.uint8)
    keep = np.flatnonzero(ends > starts)
    if not len(keep):
        return out
    bounds = np.empty(2 * len(keep), dtype=np.int64)
    bounds[0::2] = starts[keep]
    bounds[1::2] = ends[keep]
    out[keep] = np.maximum.reduceat(buf, bounds)[0::2]
    return out


def varint_values(words: np.ndarray, pos: np.ndarray, size: np.ndarray) -> np.ndarray:
    """int64 (two's complement) value of the varints of ``size`` (1..8) bytes at ``pos``."""
    word = words[pos]
    value = np.zeros(len(pos), dtype=np.uint64)
    for k in range(int(size.max()) if len(size) else 0):
        part = ((word >> np.uint64(8 * k)) & np.uint64(0x7F)) << np.uint64(7 * k)
        value |= np.where(size > k, part, np.uint64(0))
    return value.view(np.int64)
