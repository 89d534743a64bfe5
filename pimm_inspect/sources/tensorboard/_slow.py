"""The protobuf path: records off the fast layouts (markers, rare encodings), one by one."""

from __future__ import annotations

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


def decode_slow(buf: Buf, offsets: np.ndarray, lengths: np.ndarray, records: np.ndarray) -> SlowResult:
    """Decode records one by one with protobuf, in file order (``offsets`` ascending)."""
    # Imported here: ~0.05 s, and only needed for records off the fast path.
    from tensorboard.compat.proto import event_pb2

    out = SlowResult()
    status_name = event_pb2.SessionLog.SessionStatus.Name
    parse = event_pb2.Event.FromString
    points, sightings = out.points, out.sightings
    first_wall: tuple[int, float] | None = None
    wall = 0.0
    decoded = -1
    for offset, length, record in zip(offsets.tolist(), lengths.tolist(), records.tolist()):
        try:
            event = parse(buf[offset + 12 : offset + 12 + length])
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

