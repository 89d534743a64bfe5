"""The protobuf path: records off the fast layouts (markers, rare encodings), one by one."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ._tfrecord import Buf

if TYPE_CHECKING:  # protobuf messages (tensorboard ships no type information: they check as Any)
    from tensorboard.compat.proto.tensor_pb2 import TensorProto

# TensorFlow DataType enum values of numeric scalar tensors -> (numpy dtype, repeated field).
_TENSOR_DTYPES: dict[int, tuple[str, str]] = {
    1: ("<f4", "float_val"), 2: ("<f8", "double_val"), 19: ("<f2", "half_val"), 14: ("bf16", "half_val"),
    3: ("<i4", "int_val"), 4: ("u1", "int_val"), 5: ("<i2", "int_val"), 6: ("i1", "int_val"),
    17: ("<u2", "int_val"), 9: ("<i8", "int64_val"), 22: ("<u4", "uint32_val"), 23: ("<u8", "uint64_val"),
}


@dataclass(slots=True)
class SlowResult:
    """What the protobuf path found in a window's records (indices local to the window)."""

    points: list[tuple[int, int, str, int, float, float, bool]] = field(default_factory=list)
    """(record, value position, tag, step, value, wall time, is a tensor) in file order."""
    sightings: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(record, value position, tag, plugin name) of non-simple values with plugin metadata."""
    markers: list[tuple[str, int, float, str, int]] = field(default_factory=list)
    """(kind, step, wall time, detail, record) of file_version and session_log records."""
    walls: list[tuple[int, float]] = field(default_factory=list)
    """(record, wall time) of the first and last decodable record."""
    undecodable: int = 0
    refused: list[int] = field(default_factory=list)
    """The records protobuf could not decode (``undecodable`` of them)."""


def tensor_scalar(tensor: TensorProto) -> float | None:
    """The value of a one-element numeric tensor, or None."""
    try:
        return _tensor_value(tensor)
    except (ValueError, OverflowError, TypeError):
        return None  # content of the wrong size, or a value outside its dtype


def _tensor_value(tensor: TensorProto) -> float | None:
    """The value of a one-element numeric tensor, or None (may raise on malformed content)."""
    if any(dim.size != 1 for dim in tensor.tensor_shape.dim):
        return None
    spec = _TENSOR_DTYPES.get(tensor.dtype)
    if spec is None:
        return None
    dtype, field_name = spec
    if tensor.tensor_content:
        raw = np.frombuffer(tensor.tensor_content, dtype="<u2" if dtype == "bf16" else dtype)
        if raw.shape[0] != 1:
            return None
    else:
        values = getattr(tensor, field_name)
        if len(values) != 1:
            return None
        raw = np.array(values[:1], dtype=np.int64 if field_name == "half_val" else dtype)
        if field_name == "half_val":
            raw = raw.astype("<u2")
            if dtype == "<f2":
                raw = raw.view("<f2")
    if dtype == "bf16":
        return float((raw.astype(np.uint32) << np.uint32(16)).view(np.float32)[0])
    return float(raw[0])


_DOUBLE = struct.Struct("<d").unpack_from
_FLOAT = struct.Struct("<f").unpack_from


def plain_event(payload: Buf) -> tuple[float, int, str, float | None] | None:
    """(wall time, step, tag, value) of an ``Event`` holding one ``simple_value`` (value None: a ``file_version``
    event, its string in ``tag``), read from its bytes; None for any other content or spelling, which protobuf then
    decodes.

    Only the canonical encoding of those two shapes is taken (fields in number order, each once, lengths exact,
    the step a varint under 2**63, a valid UTF-8 string, a value that is not a NaN), so what is taken is what
    protobuf gives for the record: ``Event.FromString`` costs some 2 us more per record, the whole cost of a small
    file's scalars (tests/test_tb_plain_events.py compares both on generated and damaged records).
    """
    end = len(payload)
    if end < 12 or payload[0] != 0x09:
        return None
    wall: float = _DOUBLE(payload, 1)[0]
    at = 9
    step = 0
    if payload[9] == 0x10:
        at, shift = 10, 0
        while True:  # a short varint; a longer one (a negative step) goes to protobuf
            if at >= end:
                return None
            byte = payload[at]
            at += 1
            step |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 56:
                return None
    if at + 2 > end:
        return None
    field = payload[at]
    size = payload[at + 1]
    at += 2
    if size >= 0x80 or at + size != end:  # one field to the end, its length in one byte
        return None
    if field == 0x1A:  # file_version
        try:
            return wall, step, str(payload[at:], "utf-8"), None
        except UnicodeDecodeError:
            return None
    if field != 0x2A or size < 7 or payload[at] != 0x0A or payload[at + 1] != size - 2 or payload[at + 2] != 0x0A:
        return None  # not a summary holding exactly one value that starts with its tag
    tag_size = payload[at + 3]
    at += 4
    if tag_size >= 0x80 or tag_size == 0 or at + tag_size + 5 != end or payload[at + tag_size] != 0x15:
        return None  # not a tag then a simple_value, and nothing else
    value: float = _FLOAT(payload, at + tag_size + 1)[0]
    if value != value:
        return None  # a NaN: protobuf's bits for it
    try:
        return wall, step, str(payload[at : at + tag_size], "utf-8"), value
    except UnicodeDecodeError:
        return None


def decode_slow(buf: Buf, offsets: np.ndarray, lengths: np.ndarray, records: np.ndarray) -> SlowResult:
    """Decode records one by one, in file order (``offsets`` ascending): the plain shapes from their bytes
    (``plain_event``), the rest with protobuf."""
    out = SlowResult()
    parse = None
    points, sightings = out.points, out.sightings
    first_wall: tuple[int, float] | None = None
    wall = 0.0
    decoded = -1
    for offset, length, record in zip(offsets.tolist(), lengths.tolist(), records.tolist()):
        payload = buf[offset + 12 : offset + 12 + length]
        plain = plain_event(payload) if length >= 12 else None
        if plain is not None:
            wall, step, tag, scalar = plain
            decoded = record
            if first_wall is None:
                first_wall = (record, wall)
            if scalar is not None:
                points.append((record, 0, tag, step, scalar, wall, False))
            else:
                out.markers.append(("file_version", step, wall, tag, record))
            continue
        if parse is None:
            # Imported here: ~0.05 s, and only needed for records off the plain shapes.
            from tensorboard.compat.proto import event_pb2

            status_name = event_pb2.SessionLog.SessionStatus.Name
            parse = event_pb2.Event.FromString
        try:
            event = parse(payload)
        except Exception:  # noqa: BLE001  (any parse failure is damage, never a crash)
            out.undecodable += 1
            out.refused.append(record)
            continue
        wall, step = event.wall_time, event.step
        decoded = record
        if first_wall is None:
            first_wall = (record, wall)
        kind = event.WhichOneof("what")
        if kind == "summary":
            for position, value in enumerate(event.summary.value):
                which = value.WhichOneof("value")
                if which == "simple_value":
                    points.append((record, position, value.tag, step, float(value.simple_value), wall, False))
                    continue
                # EventAccumulator names a tensor without a tag by its node_name.
                tag = value.tag or (value.node_name if which == "tensor" else "")
                if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
                    sightings.append((record, position, tag, value.metadata.plugin_data.plugin_name))
                if which == "tensor":
                    scalar = tensor_scalar(value.tensor)
                    if scalar is not None:
                        points.append((record, position, tag, step, scalar, wall, True))
        elif kind == "file_version":
            out.markers.append(("file_version", step, wall, event.file_version, record))
        elif kind == "session_log":
            try:
                status = status_name(event.session_log.status)
            except ValueError:
                status = str(event.session_log.status)
            out.markers.append(("session_log", step, wall, status, record))
    if first_wall is not None:
        out.walls = [first_wall, (decoded, wall)]  # ``wall`` is set by decodable records only
    return out

