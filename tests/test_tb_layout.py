"""The byte-layout fast path decodes exactly what protobuf decodes, whatever bytes a payload holds."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

from pimm_inspect.sources.tensorboard import _window as _tb_window
from pimm_inspect.sources.tensorboard._layout import parse_layout
from pimm_inspect.sources.tensorboard.reader import read_event_file
from tests.test_tb_events import REL, frame, record_bounds


def _protobuf_oracle(data: bytes):
    """Per tag (step, value bits, wall bits) decoded record by record by protobuf, plus undecodable count."""
    from pimm_inspect.sources.tensorboard._slow import tensor_scalar

    out: dict[str, list[tuple[int, int, int]]] = {}
    plugins: dict[str, str] = {}  # tag -> plugin of its first value with plugin metadata (a tensor counts under "scalars")
    undecodable = 0
    for start, end in record_bounds(data):
        try:
            event = event_pb2.Event.FromString(data[start + 12 : end - 4])
        except Exception:  # noqa: BLE001
            undecodable += 1
            continue
        for value in event.summary.value:
            which = value.WhichOneof("value")
            # EventAccumulator's rule: a tensor without a tag is named by its node_name.
            tag = value.tag or (value.node_name if which == "tensor" else "")
            if which != "simple_value" and value.metadata.plugin_data.plugin_name:
                plugins.setdefault(tag, value.metadata.plugin_data.plugin_name)  # the first one counts
            scalar = float(value.simple_value) if which == "simple_value" else (
                tensor_scalar(value.tensor) if which == "tensor" and plugins.get(tag, "scalars") == "scalars"
                else None)
            if scalar is not None:
                out.setdefault(tag, []).append((event.step, struct.unpack("<q", struct.pack("<d", scalar))[0],
                                                       struct.unpack("<q", struct.pack("<d", event.wall_time))[0]))
    return out, undecodable


@pytest.fixture(scope="module")
def layout_bytes() -> list[bytes]:
    """Payloads of several layouts: simple_value, TF2 tensors f32/f64, float_val, two values per event."""
    scalar_shape = tensor_shape_pb2.TensorShapeProto()
    payloads = []
    for i in range(40):
        step = [3, 200, 70000][i % 3]
        values = [summary_pb2.Summary.Value(tag=f"t{i % 4}", simple_value=i * 0.5)]
        if i % 5 == 1:
            values = [summary_pb2.Summary.Value(tag="tf2/x", tensor=tensor_pb2.TensorProto(
                dtype=2, tensor_shape=scalar_shape, tensor_content=np.float64(i / 7).tobytes()))]
            values[0].metadata.plugin_data.plugin_name = "scalars"
        elif i % 5 == 2:
            values.append(summary_pb2.Summary.Value(tag="pair", tensor=tensor_pb2.TensorProto(dtype=1, float_val=[i])))
        payloads.append(event_pb2.Event(wall_time=1.7e9 + i, step=step,
                                        summary=summary_pb2.Summary(value=values)).SerializeToString())
    return payloads


@pytest.mark.parametrize("protobuf_rows", [_tb_window.MIN_BUCKET_ROWS, _tb_window.PROTOBUF_ROWS],
                         ids=["layouts", "protobuf-first"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_payloads_decode_exactly_as_protobuf(layout_bytes: list[bytes], tmp_path: Path, data,
                                                     protobuf_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes changed inside payloads (CRCs made valid again): the layout path agrees with protobuf record by record
    (every bucket of 4+ records decoded by a layout, or the small ones given to protobuf first)."""
    monkeypatch.setattr(_tb_window, "PROTOBUF_ROWS", protobuf_rows)
    payloads = [bytearray(p) for p in layout_bytes]
    for _ in range(data.draw(st.integers(1, 6))):
        victim = payloads[data.draw(st.integers(0, len(payloads) - 1))]
        victim[data.draw(st.integers(0, len(victim) - 1))] = data.draw(st.integers(0, 255))
    blob = b"".join(frame(bytes(p)) for p in payloads)
    expected, undecodable = _protobuf_oracle(blob)
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(blob)
    result = read_event_file(path, REL)
    got = {tag: list(zip(s.steps.tolist(), s.values.view(np.int64).tolist(), s.wall_times_s.view(np.int64).tolist()))
           for tag, s in result.series.items()}
    # Quiet-NaN rounding aside, every tag, step, value and wall time is the one protobuf reads.
    assert set(got) == set(expected)
    for tag, points in expected.items():
        assert [p[0] for p in got[tag]] == [p[0] for p in points] and [p[2] for p in got[tag]] == [p[2] for p in points]
        mine = np.array([p[1] for p in got[tag]], dtype=np.int64).view(np.float64)
        theirs = np.array([p[1] for p in points], dtype=np.int64).view(np.float64)
        assert np.array_equal(mine, theirs, equal_nan=True)
    assert result.record_count == len(payloads)
    assert [f.code for f in result.findings] == (["file.corrupt"] if undecodable else [])


def test_layouts_of_real_writer_records() -> None:
    """Where the data columns are for simple_value, TF2 tensors and a histogram; markers have none."""
    simple = event_pb2.Event(wall_time=1.5, step=300, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])).SerializeToString()
    layout = parse_layout(simple)
    assert (layout.wall_col, layout.step_col, layout.step_bytes) == (1, 10, 2)
    (slot,) = layout.slots
    assert (slot.kind, slot.is_tensor, simple[slot.tag_start : slot.tag_end]) == ("f32", False, b"loss")
    assert np.flatnonzero(layout.data_mask).tolist() == [*range(1, 9), 10, 11, *range(18, 22), *range(23, 27)]
    tensor = tensor_pb2.TensorProto(dtype=2, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    tensor_content=np.float64(0.25).tobytes())
    value = summary_pb2.Summary.Value(tag="lr", tensor=tensor)
    value.metadata.plugin_data.plugin_name = "scalars"
    tf2 = event_pb2.Event(wall_time=2.0, step=1, summary=summary_pb2.Summary(value=[value])).SerializeToString()
    (slot,) = parse_layout(tf2).slots
    assert (slot.kind, slot.is_tensor, slot.plugin) == ("f64", True, "scalars")
    assert tf2[slot.value_col : slot.value_col + 8] == np.float64(0.25).tobytes()
    histo = summary_pb2.HistogramProto(min=-1.0, max=1.0, bucket=[1.0, 2.0])
    other = event_pb2.Event(wall_time=3.0, step=2, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="w", histo=histo)])).SerializeToString()
    (slot,) = parse_layout(other).slots
    assert slot.kind is None
    assert parse_layout(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString()) is None
    assert parse_layout(event_pb2.Event(session_log=event_pb2.SessionLog(status=1)).SerializeToString()) is None
    assert parse_layout(simple + simple[:9]) is None  # wall_time twice: the last wins in protobuf


def test_tagless_tensor_is_named_by_node_name_as_event_accumulator(tmp_path: Path) -> None:
    """A tag key byte flipped into node_name's (what hypothesis once found): named as EventAccumulator names it."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tensor = tensor_pb2.TensorProto(dtype=2, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    tensor_content=np.float64(0.75).tobytes())
    payloads = []
    for step in (1, 2):
        value = summary_pb2.Summary.Value(tag="tf2/x", tensor=tensor)
        value.metadata.plugin_data.plugin_name = "scalars"
        payload = bytearray(event_pb2.Event(wall_time=1.7e9 + step, step=step,
                                            summary=summary_pb2.Summary(value=[value])).SerializeToString())
        if step == 2:
            at = payload.index(b"\x0a\x05tf2/x")
            payload[at] = (7 << 3) | 2  # Summary.Value.node_name, same length
        payloads.append(bytes(payload))
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(b"".join(frame(p) for p in payloads))
    ours = read_event_file(path, REL).series
    acc = EventAccumulator(str(path), size_guidance={"tensors": 0})
    acc.Reload()
    assert sorted(ours) == sorted(acc.Tags()["tensors"]) == ["tf2/x"]
    assert ours["tf2/x"].steps.tolist() == [e.step for e in acc.Tensors("tf2/x")] == [1, 2]
