"""Vectorised decoding of the fixed byte layout of ``simple_value`` scalar events.

tensorboardX, torch's SummaryWriter and tensorboard's own writer serialise a scalar
event as ``09 <wall_time f64> [10 <step varint>] 2a L1 0a L2 0a L3 <tag> 15 <value f32>``
(the step field is omitted when the step is 0). Records of equal length that match it
byte for byte are decoded with numpy column views; anything else goes to protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class FastPiece:
    """Decoded rows of one group (positions index the group's rows)."""

    rows: np.ndarray
    """int64 positions of the decoded rows within the group."""
    tag_names: tuple[str, ...]
    tag_index: np.ndarray
    """Per decoded row, the index into ``tag_names``."""
    steps: np.ndarray
    values: np.ndarray
    wall_times_s: np.ndarray


def _column(payload: np.ndarray, start: int, width: int) -> np.ndarray:
    """A contiguous copy of ``width`` byte columns, ready for ``.view``."""
    return np.ascontiguousarray(payload[:, start : start + width])


def _decode_tags(tag_bytes: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    """Distinct tags of an (N, T) byte block and each row's tag index (None: not UTF-8)."""
    count, width = tag_bytes.shape
    if width == 0:
        return [""], np.zeros(count, dtype=np.int64)
    first = tag_bytes[0]
    varying = np.flatnonzero((tag_bytes != first).any(axis=0))
    if varying.shape[0] == 0:
        return _names([first.tobytes()]), np.zeros(count, dtype=np.int64)
    if varying.shape[0] <= 2:
        # Tags like metric_00..metric_19 differ in one or two bytes: a 64 Ki lookup table
        # gives the distinct tags and each row's index without sorting a million rows.
        key = tag_bytes[:, varying[0]].astype(np.int64)
        if varying.shape[0] == 2:
            key |= tag_bytes[:, varying[1]].astype(np.int64) << 8
        seen = np.zeros(65536, dtype=bool)
        seen[key] = True
        distinct = np.flatnonzero(seen)
        lookup = np.zeros(65536, dtype=np.int64)
        lookup[distinct] = np.arange(distinct.shape[0])
        inverse = lookup[key]
        first_rows = np.zeros(distinct.shape[0], dtype=np.int64)
        first_rows[inverse[::-1]] = np.arange(count - 1, -1, -1)
        names_bytes = [tag_bytes[row].tobytes() for row in first_rows.tolist()]
    else:
        unique, inverse = np.unique(tag_bytes.view(f"V{width}").ravel(), return_inverse=True)
        names_bytes = [u.tobytes() for u in unique]
    return _names(names_bytes), inverse.astype(np.int64).ravel()


def _names(names_bytes: list[bytes]) -> list[str | None]:
    """Decode tag bytes (None where not UTF-8)."""
    names: list[str | None] = []
    for raw in names_bytes:
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            names.append(None)  # protobuf rejects such a string field: leave it to the fallback
    return names


def _decode_layout(payload: np.ndarray, rows: np.ndarray, step_bytes: int) -> FastPiece | None:
    """Decode rows whose step varint has ``step_bytes`` bytes (0: step field absent)."""
    length = payload.shape[1]
    start = 9 if step_bytes == 0 else 10 + step_bytes
    tag_len = length - start - 11
    if tag_len < 0 or length - start - 2 >= 128:
        return None
    expected = ((start, 0x2A), (start + 1, length - start - 2), (start + 2, 0x0A),
                (start + 3, length - start - 4), (start + 4, 0x0A), (start + 5, tag_len), (length - 5, 0x15))
    ok = np.ones(payload.shape[0], dtype=bool)
    for col, byte in expected:
        ok &= payload[:, col] == byte
    if step_bytes == 10:
        ok &= payload[:, 19] <= 1  # a longer value overflows 64 bits
    if not ok.all():
        payload, rows = payload[ok], rows[ok]
    if rows.shape[0] == 0:
        return None
    names, inverse = _decode_tags(_column(payload, start + 6, tag_len))
    if any(name is None for name in names):
        keep = np.array([name is not None for name in names])[inverse]
        payload, rows, inverse = payload[keep], rows[keep], inverse[keep]
        if rows.shape[0] == 0:
            return None
    steps = np.zeros(rows.shape[0], dtype=np.uint64)
    for i in range(step_bytes):
        steps |= (payload[:, 10 + i] & np.uint8(0x7F)).astype(np.uint64) << np.uint64(7 * i)
    with np.errstate(invalid="ignore"):  # signalling NaNs become quiet ones, as in protobuf's float -> double
        values = _column(payload, length - 4, 4).view("<f4").ravel().astype(np.float64)
    return FastPiece(
        rows=rows,
        tag_names=tuple(name or "" for name in names),
        tag_index=inverse,
        steps=steps.view(np.int64),
        values=values,
        wall_times_s=_column(payload, 1, 8).view("<f8").ravel().astype(np.float64),
    )


def decode_scalar_group(payload: np.ndarray) -> list[FastPiece]:
    """Decode the rows of an (N, L) payload block that match the scalar layout."""
    count, length = payload.shape
    if length < 20 or count == 0:
        return []
    candidate = payload[:, 0] == 0x09
    marker = payload[:, 9]
    no_step = candidate & (marker == 0x2A)
    with_step = candidate & (marker == 0x10)
    pieces: list[FastPiece] = []
    all_rows = np.arange(count, dtype=np.int64)
    if no_step.any():
        piece = _decode_layout(payload[no_step], all_rows[no_step], 0)
        if piece is not None:
            pieces.append(piece)
    if with_step.any():
        width = min(10, length - 10)
        continuation = payload[:, 10 : 10 + width] >= 0x80
        step_bytes = np.argmin(continuation, axis=1) + 1
        step_bytes[continuation.all(axis=1)] = 0  # varint runs past the window: not this layout
        step_bytes[~with_step] = 0
        distinct = np.unique(step_bytes)
        for k in distinct.tolist():
            if k == 0:
                continue
            selected = step_bytes == k
            if selected.all():
                piece = _decode_layout(payload, all_rows, k)  # usual case: no row copy
            else:
                piece = _decode_layout(payload[selected], all_rows[selected], k)
            if piece is not None:
                pieces.append(piece)
    return pieces
