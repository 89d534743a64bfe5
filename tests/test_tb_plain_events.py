"""Records read from their bytes (``_slow.plain_event``) give what protobuf gives, or are left to protobuf.

Generated ``Event`` records of every kind the reader meets (scalars, file_version, session_log, tensors,
plugin metadata, several values, odd steps and wall times), their bytes damaged or spelled off the canonical
encoding, and whole windows of them through ``decode_slow`` with and without the byte reading.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pimm_inspect.sources.tensorboard import _slow
from pimm_inspect.sources.tensorboard._slow import decode_slow, plain_event

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")

_TAGS = st.one_of(st.sampled_from(["train/loss", "lr", "val/mIoU", "", "é/ü", "a" * 130]), st.text(max_size=20))
_FLOATS = st.floats(width=32) | st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 3.4e38])


@st.composite
def _event(draw: st.DrawFn) -> bytes:
    event = event_pb2.Event()
    if draw(st.integers(0, 9)):
        event.wall_time = draw(st.floats(allow_nan=True) | st.sampled_from([0.0, 1.7e9, -0.0]))
    if draw(st.integers(0, 4)):
        event.step = draw(st.integers(-2**63, 2**63 - 1) | st.integers(0, 10**6) | st.sampled_from([0, 2**63 - 1]))
    kind = draw(st.integers(0, 5))
    if kind == 0:
        event.file_version = draw(st.sampled_from(["brain.Event:2", ""]) | st.text(max_size=10))
    elif kind == 1:
        event.session_log.status = draw(st.integers(0, 4))
    elif kind <= 4:
        for _ in range(draw(st.integers(0 if kind == 4 else 1, 3 if kind == 4 else 1))):
            value = event.summary.value.add()
            tag = draw(_TAGS)
            if tag:
                value.tag = tag
            shape = draw(st.integers(0, 5))
            if shape <= 2:
                value.simple_value = draw(_FLOATS)
            elif shape == 3:
                value.tensor.dtype = 1
                value.tensor.float_val.append(draw(_FLOATS))
            elif shape == 4:
                value.node_name = draw(_TAGS)
                value.simple_value = draw(_FLOATS)
            else:
                value.histo.num = 1.0
            if draw(st.integers(0, 5)) == 0:
                value.metadata.plugin_data.plugin_name = draw(st.sampled_from(["scalars", "text", ""]))
    else:
        event.graph_def = draw(st.binary(max_size=8))
    data = event.SerializeToString()
    return data


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _check(payload: bytes) -> bool:
    """Whether ``plain_event`` took the record; when it did, it equals protobuf's reading."""
    plain = plain_event(payload)
    if plain is None:
        return False
    event = event_pb2.Event.FromString(payload)  # a record it takes, protobuf takes too
    wall, step, text, value = plain
    assert _bits(wall) == _bits(event.wall_time) and step == event.step
    if value is None:
        assert event.WhichOneof("what") == "file_version" and text == event.file_version
        return True
    assert event.WhichOneof("what") == "summary" and len(event.summary.value) == 1
    only = event.summary.value[0]
    assert only.WhichOneof("value") == "simple_value" and not only.HasField("metadata") and not only.node_name
    assert text == only.tag and _bits(value) == _bits(float(only.simple_value))
    return True


_SETTINGS = settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_event())
@example(b"\x09" + struct.pack("<d", 1.0) + b"\x10\x05" + b"\x2a\x0b\x0a\x09\x0a\x01a\x15" + struct.pack("<f", 2.5))
def test_generated_records_agree_with_protobuf(payload: bytes) -> None:
    _check(payload)


@_SETTINGS
@given(_event(), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=3),
       st.integers(0, 3))
def test_damaged_records_agree_with_protobuf_or_are_left_to_it(payload: bytes, edits: list[tuple[int, int]],
                                                               cut: int) -> None:
    data = bytearray(payload)
    for at, byte in edits:
        if data:
            data[at % len(data)] = byte
    damaged = bytes(data[: len(data) - cut] if cut < len(data) else data)
    try:
        event_pb2.Event.FromString(damaged)
    except Exception:  # noqa: BLE001 - protobuf refuses it: so must the byte reading
        assert plain_event(damaged) is None
        return
    _check(damaged)


def test_plain_scalars_and_versions_are_taken_from_their_bytes() -> None:
    """The shapes of every scalar writer's records are read without protobuf (else nothing would be faster)."""
    for step in (0, 1, 127, 128, 2**40):
        event = event_pb2.Event(wall_time=1.7e9 + step, step=step)
        event.summary.value.add(tag="train/loss", simple_value=0.25)
        assert _check(event.SerializeToString())
        assert _check(event_pb2.Event(wall_time=1.7e9, step=step, file_version="brain.Event:2").SerializeToString())
    # Off the canonical spelling (a redundant varint byte, fields out of order): protobuf reads those.
    spelled = b"\x10\x05\x09" + struct.pack("<d", 1.0) + b"\x2a\x0b\x0a\x09\x0a\x01a\x15" + struct.pack("<f", 2.5)
    assert plain_event(spelled) is None
    negative = event_pb2.Event(wall_time=1.0, step=-1)
    negative.summary.value.add(tag="a", simple_value=1.0)
    assert plain_event(negative.SerializeToString()) is None


def _frame(payloads: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    out, offsets = b"", []
    for payload in payloads:
        offsets.append(len(out))
        out += struct.pack("<Q", len(payload)) + b"\0" * 4 + payload + b"\0" * 4
    return out, np.array(offsets, dtype=np.int64), np.array([len(p) for p in payloads], dtype=np.int64)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event(), max_size=12))
def test_decode_slow_gives_the_same_with_and_without_the_byte_reading(payloads: list[bytes]) -> None:
    buf, offsets, lengths = _frame(payloads)
    records = np.arange(len(payloads), dtype=np.int64)
    fast = decode_slow(buf, offsets, lengths, records)
    original = _slow.plain_event
    try:
        _slow.plain_event = lambda payload: None  # type: ignore[assignment]
        slow = decode_slow(buf, offsets, lengths, records)
    finally:
        _slow.plain_event = original
    # NaN values compare by bits (points hold Python floats)
    assert repr(fast) == repr(slow)
    assert [tuple(_bits(v) if isinstance(v, float) else v for v in p) for p in fast.points] == \
        [tuple(_bits(v) if isinstance(v, float) else v for v in p) for p in slow.points]
