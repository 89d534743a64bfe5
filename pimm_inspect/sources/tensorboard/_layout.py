"""The byte layout of one serialized ``Event``: which columns are data, which must match.

Records of one writer share a layout: the same fields in the same places, differing only in
data bytes (wall time, step varint, tag text, value, opaque payloads). ``parse_layout`` walks
one record's protobuf wire format and returns that layout; rows of equal length whose other
("structural") bytes equal the parsed row's then decode the same way, so a whole bucket is
decoded with numpy column views. Anything unusual (markers, repeated or unknown fields, rare
tensor encodings) returns None and goes to protobuf; every parsed layout is checked against
protobuf's decode of the row it came from before it is used.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAX_SLOTS = 4096
"""Events with more summary values than this go to protobuf (slot numbers key file order)."""

# Event fields: 1 wall_time, 2 step, 3 file_version, 4 graph_def, 5 summary, 6 log_message,
# 7 session_log, 8 tagged_run_metadata, 9 meta_graph_def (the "what" oneof: 3-9), 10 source_metadata.
_OPAQUE_EVENT_FIELDS = frozenset({4, 6, 8, 9, 10})
_WHAT_FIELDS = frozenset({3, 4, 5, 6, 7, 8, 9})
# Summary.Value "value" oneof members besides simple_value (2) and tensor (8): opaque payloads.
_OPAQUE_VALUE_FIELDS = frozenset({3, 4, 5, 6})
# TensorProto repeated value fields (7 int_val .. 18 float8_val; 5 float, 6 double handled apart).
_TENSOR_VALUE_FIELDS = frozenset(range(7, 19))
_FAST_DTYPES = {1: ("f32", 4, 5), 2: ("f64", 8, 6)}
"""DT_FLOAT and DT_DOUBLE -> (kind, item size, field number of their repeated values)."""
# Dtypes whose one-element tensors are scalars (mirrors the protobuf path's table).
_NUMERIC_DTYPES = frozenset({1, 2, 19, 14, 3, 4, 5, 6, 17, 9, 22, 23})


@dataclass(frozen=True, slots=True, eq=False)
class Slot:
    """One ``Summary.Value`` of the layout."""

    position: int
    """Index of the value within the event's summary."""
    tag_start: int
    tag_end: int
    kind: str | None
    """f32 or f64 when the value is a scalar; None for anything else (histogram, image, text ...)."""
    value_col: int
    is_tensor: bool
    plugin: str
    """plugin_name of the value's metadata; empty when there is none."""


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """Where the data of one record layout are; every other column is structural."""

    length: int
    data_mask: np.ndarray
    """bool per column: True where the bytes are data (free to differ between rows)."""
    wall_col: int
    """Column of the 8 wall-time bytes; -1 when the field is absent (wall time 0)."""
    step_col: int
    step_bytes: int
    """Bytes of the step varint; 0 when the field is absent (step 0)."""
    slots: tuple[Slot, ...]

    @property
    def scalar_slots(self) -> tuple[Slot, ...]:
        """Slots holding a scalar value."""
        return tuple(slot for slot in self.slots if slot.kind is not None)


class _Off(Exception):
    """The record is off the fast layouts (protobuf decodes it)."""


def _varint(row: bytes, pos: int, end: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; returns (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Off
        byte = row[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _delimited(row: bytes, pos: int, end: int) -> tuple[int, int]:
    """Length prefix at ``pos``; returns (start, end) of the contents."""
    length, start = _varint(row, pos, end)
    if start + length > end:
        raise _Off
    return start, start + length


class _Parser:
    """One pass over one record, marking data columns."""

    def __init__(self, row: bytes) -> None:
        self.row = row
        self.data = np.zeros(len(row), dtype=bool)
        self.slots: list[Slot] = []

    def mark(self, start: int, end: int) -> None:
        """Mark ``row[start:end]`` as data."""
        self.data[start:end] = True

    def key(self, pos: int, end: int, seen: set[int]) -> tuple[int, int, int]:
        """Read a field key; returns (field, wire type, position after it), refusing repeats."""
        key, pos = _varint(self.row, pos, end)
        field = key >> 3
        if field in seen or field == 0:
            raise _Off  # a repeated singular field merges or overrides in protobuf
        seen.add(field)
        return field, key & 7, pos

    def event(self) -> tuple[int, int, int]:
        """Parse the top level; returns (wall column, step column, step bytes)."""
        row, end = self.row, len(self.row)
        wall_col, step_col, step_bytes, whats = -1, 0, 0, 0
        pos, seen = 0, set[int]()
        while pos < end:
            field, wire, pos = self.key(pos, end, seen)
            if field == 1 and wire == 1:
                if pos + 8 > end:
                    raise _Off
                wall_col = pos
                self.mark(pos, pos + 8)
                pos += 8
            elif field == 2 and wire == 0:
                _, after = _varint(row, pos, end)
                if after - pos == 10 and row[after - 1] > 1:
                    raise _Off  # beyond 64 bits
                step_col, step_bytes = pos, after - pos
                self.mark(pos, after)
                pos = after
            elif wire == 2 and (field == 5 or field in _OPAQUE_EVENT_FIELDS):
                start, pos = _delimited(row, pos, end)
                if field == 5:
                    self.summary(start, pos)
                else:
                    self.mark(start, pos)  # graph, log message, run metadata: never looked into
                whats += field in _WHAT_FIELDS
            else:
                raise _Off  # file_version and session_log (markers), unknown fields, odd wire types
        if whats > 1:
            raise _Off
        return wall_col, step_col, step_bytes

    def summary(self, start: int, end: int) -> None:
        """Parse ``Summary``: only repeated ``value`` (field 1)."""
        pos = start
        while pos < end:
            key, pos = _varint(self.row, pos, end)
            if key != 0x0A:
                raise _Off
            value_start, pos = _delimited(self.row, pos, end)
            if len(self.slots) >= MAX_SLOTS:
                raise _Off
            self.value(value_start, pos)

    def value(self, start: int, end: int) -> None:
        """Parse one ``Summary.Value`` into a slot."""
        row = self.row
        tag = (0, 0)
        kind, value_col, is_tensor, plugin, which = None, 0, False, "", 0
        pos, seen = start, set[int]()
        while pos < end:
            field, wire, pos = self.key(pos, end, seen)
            if field == 1 and wire == 2:
                tag = _delimited(row, pos, end)
                self.mark(*tag)
                pos = tag[1]
            elif field == 2 and wire == 5:
                if pos + 4 > end:
                    raise _Off
                kind, value_col = "f32", pos
                self.mark(pos, pos + 4)
                pos += 4
                which += 1
            elif field == 8 and wire == 2:
                tensor_start, pos = _delimited(row, pos, end)
                kind, value_col = self.tensor(tensor_start, pos)
                is_tensor = True
                which += 1
            elif field in _OPAQUE_VALUE_FIELDS and wire == 2:
                blob_start, pos = _delimited(row, pos, end)
                self.mark(blob_start, pos)
                which += 1
            elif field == 9 and wire == 2:
                meta_start, pos = _delimited(row, pos, end)
                plugin = _plugin_name(bytes(row[meta_start:pos]))  # structural: the same in every row
            else:
                raise _Off  # node_name (named by the protobuf path), unknown fields
        if which > 1:
            raise _Off  # two members of the oneof: the last wins in protobuf
        self.slots.append(Slot(len(self.slots), tag[0], tag[1], kind, value_col, is_tensor, plugin))

    def tensor(self, start: int, end: int) -> tuple[str | None, int]:
        """Parse a ``TensorProto``: (f32/f64, column) for a one-element scalar, (None, 0) for a non-scalar."""
        row = self.row
        dtype, scalar_shape = 0, True
        contents: list[tuple[int, int, int]] = []  # (field, start, end)
        pos, seen = start, set[int]()
        while pos < end:
            field, wire, pos = self.key(pos, end, seen)
            if field == 1 and wire == 0:
                dtype, pos = _varint(row, pos, end)
            elif field == 3 and wire == 0:
                _, pos = _varint(row, pos, end)
            elif field == 2 and wire == 2:
                shape_start, pos = _delimited(row, pos, end)
                scalar_shape = _all_dims_one(bytes(row[shape_start:pos]))
            elif field in (4, 5, 6) or field in _TENSOR_VALUE_FIELDS:
                if wire == 2:
                    blob_start, pos = _delimited(row, pos, end)
                elif wire in (1, 5):
                    blob_start, pos = pos, pos + (8 if wire == 1 else 4)
                    if pos > end:
                        raise _Off
                else:
                    raise _Off  # varint elements: their width is data-dependent
                contents.append((field, blob_start, pos))
            else:
                raise _Off
        if not scalar_shape or dtype not in _NUMERIC_DTYPES:
            for _, blob_start, blob_end in contents:
                self.mark(blob_start, blob_end)  # never a scalar, whatever the contents say
            return None, 0
        fast = _FAST_DTYPES.get(dtype)
        if fast is None or len(contents) != 1:
            raise _Off  # other numeric scalars, or content in two fields: rare, protobuf decides
        kind, size, repeated_field = fast
        field, blob_start, blob_end = contents[0]
        if blob_end - blob_start != size or field not in (4, repeated_field):
            raise _Off
        self.mark(blob_start, blob_end)
        return kind, blob_start


def _plugin_name(metadata: bytes) -> str:
    """The plugin name of a serialized ``SummaryMetadata`` (protobuf also validates its strings)."""
    from tensorboard.compat.proto import summary_pb2  # loaded with event_pb2 already

    try:
        name: str = summary_pb2.SummaryMetadata.FromString(metadata).plugin_data.plugin_name
        return name
    except Exception:  # noqa: BLE001  (any parse failure: protobuf decides the whole record)
        raise _Off from None


def _all_dims_one(shape: bytes) -> bool:
    """Whether every dimension of a serialized ``TensorShapeProto`` has size 1 (a scalar shape)."""
    from tensorboard.compat.proto import tensor_shape_pb2

    try:
        return all(dim.size == 1 for dim in tensor_shape_pb2.TensorShapeProto.FromString(shape).dim)
    except Exception:  # noqa: BLE001
        raise _Off from None


def parse_layout(row: bytes) -> Layout | None:
    """The layout of one serialized Event, or None when protobuf must decode it."""
    parser = _Parser(row)
    try:
        wall_col, step_col, step_bytes = parser.event()
    except _Off:
        return None
    layout = Layout(len(row), parser.data, wall_col, step_col, step_bytes, tuple(parser.slots))
    return layout if _agrees_with_protobuf(row, layout) else None


def _agrees_with_protobuf(row: bytes, layout: Layout) -> bool:
    """Check the layout's reading of its own row against protobuf (a guard against parser bugs)."""
    from tensorboard.compat.proto import event_pb2

    from ._slow import tensor_scalar

    try:
        event = event_pb2.Event.FromString(row)
    except Exception:  # noqa: BLE001  (undecodable: the protobuf path reports it)
        return False
    wall = struct.unpack_from("<d", row, layout.wall_col)[0] if layout.wall_col >= 0 else 0.0
    if struct.pack("<d", wall) != struct.pack("<d", event.wall_time):
        return False
    values = event.summary.value
    if len(values) != len(layout.slots):
        return False
    for slot, value in zip(layout.slots, values):
        if value.tag.encode("utf-8") != row[slot.tag_start : slot.tag_end]:
            return False
        which = value.WhichOneof("value")
        if slot.kind is None:
            if which == "simple_value" or (which == "tensor" and tensor_scalar(value.tensor) is not None):
                return False
            continue
        if which != ("tensor" if slot.is_tensor else "simple_value"):
            return False
        width = 4 if slot.kind == "f32" else 8
        raw = np.frombuffer(row[slot.value_col : slot.value_col + width], dtype="<f4" if width == 4 else "<f8")
        mine = float(raw[0])
        theirs = tensor_scalar(value.tensor) if slot.is_tensor else float(value.simple_value)
        if theirs is None or not (mine == theirs or (mine != mine and theirs != theirs)):
            return False
    return True
