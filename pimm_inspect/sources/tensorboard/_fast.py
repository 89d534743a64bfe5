"""Vectorised decoding of a bucket of equal-length event records that share a byte layout.

A bucket is an (N, L) block of payloads. The first row not yet decoded gives a layout
(``_tb_layout.parse_layout``); every row whose structural bytes equal that row's (and whose
step varint has the same width) decodes the same way, so its wall time, step, tags and values
are numpy column views. That repeats for a few layouts per bucket; rows left over go to
protobuf. Values not needed (histograms, images, text, graphs) are never looked into.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._layout import Layout, parse_layout

MAX_LAYOUTS_PER_BUCKET = 8
"""Rows of a bucket still undecoded after this many layouts go to protobuf."""
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, slots=True, eq=False)
class SlotColumns:
    """The decoded values of one summary slot over the rows of a piece."""

    position: int
    """Index of the value within its event (orders points of one record)."""
    tag_names: tuple[str, ...]
    tag_index: np.ndarray
    """Per row, the index into ``tag_names``."""
    first_rows: np.ndarray
    """Per tag name, the first row (index into the piece's rows) that carries it."""
    values: np.ndarray | None
    """float64 values; None for a slot that is not a scalar."""
    is_tensor: bool
    plugin: str


@dataclass(frozen=True, slots=True, eq=False)
class Piece:
    """Rows of one bucket decoded with one layout."""

    rows: np.ndarray
    """int64 positions of the decoded rows within the bucket, ascending."""
    wall_times_s: np.ndarray
    steps: np.ndarray
    slots: tuple[SlotColumns, ...]
    """Scalar slots, plus non-scalar slots whose metadata names a plugin."""
    scalar_count: int
    """Scalar slots per row."""


def _column(payload: np.ndarray, start: int, dtype: str) -> np.ndarray:
    """The little-endian number at byte column ``start`` of every row, as a strided view (copy it to keep it)."""
    width = np.dtype(dtype).itemsize
    if payload.strides[1] != 1:
        payload = np.ascontiguousarray(payload)
    column: np.ndarray = payload[:, start : start + width].view(dtype)[:, 0]
    return column


def distinct_rows(block: np.ndarray, varying: np.ndarray) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """Distinct rows of an (N, W) byte block: (row bytes, index per row, first row per distinct).

    ``varying`` marks the columns that may differ; the others are equal in every row.
    """
    count = block.shape[0]
    columns = np.flatnonzero(varying)
    if columns.shape[0] == 0 or count == 1:
        return [block[0].tobytes()], np.zeros(count, dtype=np.int64), np.zeros(1, dtype=np.int64)
    low, span = int(columns[0]), int(columns[-1]) - int(columns[0]) + 1
    # The bytes from the first to the last differing column, as 64-bit words: exact keys to compare.
    words = np.zeros((count, (span + 7) // 8), dtype=np.uint64)
    words.view(np.uint8).reshape(count, -1)[:, :span] = block[:, low : low + span]
    few = _few_distinct(words)
    if few is not None:  # the usual case: a few tags (one, or a few of one name length)
        index, first_rows = few
        return [block[row].tobytes() for row in first_rows.tolist()], index, first_rows
    part = block[:, columns]
    if words.shape[1] == 1:
        key = words[:, 0]
        exact = True
    elif columns.shape[0] <= 8:
        key = np.zeros(count, dtype=np.uint64)  # exact: the differing bytes packed into one integer
        for i in range(columns.shape[0]):
            key |= part[:, i].astype(np.uint64) << np.uint64(8 * i)
        exact = True
    else:
        key = np.zeros(count, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for i in range(columns.shape[0]):
                key = (key ^ part[:, i].astype(np.uint64)) * _HASH_MULT
        exact = False
    with np.errstate(over="ignore"):
        slot = ((key ^ (key >> np.uint64(29))) * _HASH_MULT) >> np.uint64(48)
    slot = slot.astype(np.int64)
    # A 64 Ki-entry table instead of sorting: the first row landing in each entry represents it.
    first = np.full(65536, count, dtype=np.int64)
    np.minimum.at(first, slot, np.arange(count, dtype=np.int64))
    representative = first[slot]
    same = key == key[representative]
    if not exact and same.all():
        same = (part == part[representative]).all(axis=1)
    if not same.all():
        # Two different rows share a table entry (or a hash): sort instead, always correct.
        unique, first_rows, inverse = np.unique(np.ascontiguousarray(block).view(f"V{block.shape[1]}").ravel(),
                                                return_index=True, return_inverse=True)
        return [u.tobytes() for u in unique], inverse.astype(np.int64).ravel(), first_rows.astype(np.int64)
    used = np.flatnonzero(first < count)
    lookup = np.zeros(65536, dtype=np.int64)
    lookup[used] = np.arange(used.shape[0])
    first_rows = first[used]
    return [block[row].tobytes() for row in first_rows.tolist()], lookup[slot], first_rows


FEW = 8
"""Up to this many distinct keys are found by comparing with each one in turn (a few tags of one name length)."""


def _few_distinct(words: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(index per row, first row per distinct) of (N, W) key words holding at most ``FEW`` distinct rows, else None."""
    index = np.zeros(words.shape[0], dtype=np.int64)
    left = np.ones(words.shape[0], dtype=bool)
    firsts: list[int] = []
    row = 0
    for number in range(FEW):
        same = words[:, 0] == words[row, 0]
        for word in range(1, words.shape[1]):
            same &= words[:, word] == words[row, word]
        if number:
            index[same] = number
        firsts.append(row)
        left &= ~same
        row = int(np.argmax(left))
        if not left[row]:
            return index, np.array(firsts, dtype=np.int64)
    return None


def _names(raw: list[bytes]) -> list[str | None]:
    """Decode tag bytes (None where not UTF-8: protobuf rejects such a string field)."""
    names: list[str | None] = []
    for item in raw:
        try:
            names.append(item.decode("utf-8"))
        except UnicodeDecodeError:
            names.append(None)
    return names


def _matching(payload: np.ndarray, rows: np.ndarray, template: int, layout: Layout,
              varying: np.ndarray) -> np.ndarray:
    """bool per row of ``rows``: structural bytes and step varint width as in the template row."""
    whole = rows.shape[0] == payload.shape[0]
    ok = np.ones(rows.shape[0], dtype=bool)
    tests = [(col, "==", payload[template, col]) for col in np.flatnonzero(~layout.data_mask & varying).tolist()]
    k, col = layout.step_bytes, layout.step_col
    if k:
        tests += [(c, ">=", 0x80) for c in range(col, col + k - 1)] + [(col + k - 1, "<=", 1 if k == 10 else 0x7F)]
    for col, op, byte in tests:
        # One column at a time: most hold in every row, which one reduction shows without a mask.
        column = payload[:, col] if whole else payload[rows, col]
        if op == "==":
            hit = column == byte
        elif op == ">=":
            hit = column >= byte
        else:
            hit = column <= byte
        if not hit.all():
            ok &= hit
    return ok


def _decode(payload: np.ndarray, layout: Layout, varying: np.ndarray) -> tuple[tuple[SlotColumns, ...], np.ndarray]:
    """Slot columns of rows sharing ``layout``, and a bool mask of rows with a non-UTF-8 tag."""
    count = payload.shape[0]
    bad = np.zeros(count, dtype=bool)
    slots: list[SlotColumns] = []
    for slot in layout.slots:
        if slot.kind is None and not slot.plugin:
            continue
        raw, index, first_rows = distinct_rows(payload[:, slot.tag_start : slot.tag_end],
                                               varying[slot.tag_start : slot.tag_end])
        names = _names(raw)
        if any(name is None for name in names):
            bad |= np.array([name is None for name in names])[index]
        values = None
        if slot.kind == "f32":
            with np.errstate(invalid="ignore"):  # signalling NaNs become quiet ones, as protobuf's float -> double
                values = _column(payload, slot.value_col, "<f4").astype(np.float64)
        elif slot.kind == "f64":
            values = _column(payload, slot.value_col, "<f8").copy()
        slots.append(SlotColumns(slot.position, tuple(name or "" for name in names), index, first_rows, values,
                                 slot.is_tensor, slot.plugin))
    return tuple(slots), bad


def _piece(payload: np.ndarray, rows: np.ndarray, layout: Layout, varying: np.ndarray) -> tuple[Piece | None, np.ndarray]:
    """Decode ``payload`` (the bucket rows ``rows``); returns the piece and rows left for protobuf."""
    slots, bad = _decode(payload, layout, varying)
    if bad.any():
        return _piece(payload[~bad], rows[~bad], layout, varying)[0], rows[bad]
    if layout.wall_col >= 0:
        walls = _column(payload, layout.wall_col, "<f8").copy()
    else:
        walls = np.zeros(rows.shape[0], dtype=np.float64)
    k, col = layout.step_bytes, layout.step_col
    if k == 0:
        steps = np.zeros(rows.shape[0], dtype=np.int64)
    else:  # the varint from its last byte down (the last byte has no continuation bit: _matching checked it)
        steps = payload[:, col + k - 1].astype(np.uint64)
        for i in range(k - 2, -1, -1):
            steps <<= np.uint64(7)
            steps |= payload[:, col + i] & np.uint8(0x7F)
        steps = steps.view(np.int64)
    return Piece(rows, walls, steps, slots, len(layout.scalar_slots)), rows[:0]


Known = list[tuple[Layout, np.ndarray, np.ndarray]]
"""Layouts parsed before for one record length: (layout, its structural columns, the template's bytes there)."""
MAX_KNOWN = 16
"""Layouts kept per record length (a writer has a few; the earlier windows' are tried before parsing again)."""


def _known_layout(row: np.ndarray, known: Known) -> Layout | None:
    """A layout parsed before from a row whose structural bytes (and step varint width) equal ``row``'s: it decodes
    ``row`` exactly as parsing ``row`` would (the condition every row of a bucket is decoded by)."""
    for layout, columns, template in known:
        if not np.array_equal(row[columns], template):
            continue
        k, col = layout.step_bytes, layout.step_col
        if k and not (all(b >= 0x80 for b in row[col : col + k - 1].tolist())
                      and int(row[col + k - 1]) <= (1 if k == 10 else 0x7F)):
            continue
        return layout
    return None


def decode_bucket(payload: np.ndarray, varying: np.ndarray, known: Known | None = None
                  ) -> tuple[list[Piece], np.ndarray]:
    """Decode an (N, L) block of equal-length payloads; returns pieces and rows for protobuf.

    ``varying`` marks the columns where some row differs from the first (``varying_columns``); ``known`` holds
    the layouts of earlier blocks of this length (reused, and added to).
    """
    count = payload.shape[0]
    pieces: list[Piece] = []
    leftovers: list[np.ndarray] = []
    if count == 0:
        return pieces, np.zeros(0, dtype=np.int64)
    remaining = np.arange(count, dtype=np.int64)
    for _ in range(MAX_LAYOUTS_PER_BUCKET):
        if remaining.shape[0] == 0:
            break
        template = int(remaining[0])
        layout = _known_layout(payload[template], known) if known else None
        if layout is None:
            layout = parse_layout(payload[template].tobytes())
            if layout is not None and known is not None and len(known) < MAX_KNOWN:
                columns = np.flatnonzero(~layout.data_mask)
                known.append((layout, columns, payload[template][columns].copy()))
        if layout is None:
            leftovers.append(remaining[:1])
            remaining = remaining[1:]
            continue
        ok = _matching(payload, remaining, template, layout, varying)
        matched = remaining if ok.all() else remaining[ok]
        rows_payload = payload if matched.shape[0] == count else payload[matched]
        piece, rest = _piece(rows_payload, matched, layout, varying)
        if piece is not None and piece.rows.shape[0]:
            pieces.append(piece)
        if rest.shape[0]:
            leftovers.append(rest)
        remaining = remaining[~ok]
    leftovers.append(remaining)
    slow = np.concatenate(leftovers) if len(leftovers) > 1 else leftovers[0]
    return pieces, np.sort(slow)
