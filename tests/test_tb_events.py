"""Tests for the TensorBoard event-file reader (fast path, protobuf path, damage)."""

from __future__ import annotations

import math
import os
import random
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from pimm_inspect.model import Severity
from pimm_inspect.sources.tensorboard import _window as _tb_window
from pimm_inspect.sources.tensorboard import _tfrecord
from pimm_inspect.sources.tensorboard.reader import parse_event_file_name, read_event_file

REL = "tb/events.out.tfevents.1700000000.host.1.0"


def scalar_event(tag: str, value: float, step: int, wall: float) -> event_pb2.Event:
    """An Event carrying one simple_value scalar."""
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(wall_time=wall, step=step, summary=summary)


def write_events(directory: Path, events: list[event_pb2.Event]) -> Path:
    """Write events with tensorboard's own writer; returns the event file."""
    writer = EventFileWriter(str(directory), max_queue_size=100000, flush_secs=3600)
    for event in events:
        writer.add_event(event)
    writer.close()
    (path,) = directory.glob("events.out.tfevents.*")
    return path


def record_bounds(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every record, framed independently of the reader."""
    bounds, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        bounds.append((pos, pos + length + 16))
        pos += length + 16
    return bounds


def reference_scalars(data: bytes) -> dict[str, list[tuple[int, float, float]]]:
    """Tag -> (step, value, wall) of simple_value scalars, decoded by protobuf only."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    for start, end in record_bounds(data):
        event = event_pb2.Event.FromString(data[start + 12 : end - 4])
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                out.setdefault(value.tag, []).append((event.step, value.simple_value, event.wall_time))
    return out


def frame(payload: bytes) -> bytes:
    """One TFRecord with valid CRCs (tensorboard's masked CRC)."""
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", masked_crc32c(payload))


def assert_matches_reference(result, data: bytes) -> None:
    """Series equal the protobuf decode bit for bit, in file order."""
    reference = reference_scalars(data)
    assert list(result.series) == list(reference)
    for tag, points in reference.items():
        series = result.series[tag]
        assert series.tag == tag
        assert series.steps.dtype == np.int64 and series.values.dtype == np.float64
        assert series.steps.tolist() == [p[0] for p in points]
        expected_values = np.array([p[1] for p in points], dtype=np.float64)
        assert np.array_equal(series.values.view(np.int64), expected_values.view(np.int64))
        expected_walls = np.array([p[2] for p in points], dtype=np.float64)
        assert np.array_equal(series.wall_times_s.view(np.int64), expected_walls.view(np.int64))


@pytest.fixture
def simple_file(tmp_path: Path) -> Path:
    """Three tags over five steps, including step 0 (step field omitted on disk)."""
    events = []
    for step in range(5):
        for i, tag in enumerate(["loss", "lr", "val/acc"]):
            events.append(scalar_event(tag, step * 0.5 + i, step, 1000.0 + step))
    return write_events(tmp_path, events)


def test_parse_event_file_name() -> None:
    tbx = parse_event_file_name("events.out.tfevents.1700000000.gpu01")
    assert (tbx.timestamp_s, tbx.host, tbx.pid, tbx.counter, tbx.suffix) == (1700000000, "gpu01", None, None, "")
    torch_name = parse_event_file_name("events.out.tfevents.1700000001.node.cluster.org.4242.3")
    assert (torch_name.host, torch_name.pid, torch_name.counter, torch_name.suffix) == ("node.cluster.org", 4242, 3, "")
    tf2 = parse_event_file_name("events.out.tfevents.1700000002.h.12.7.v2")
    assert (tf2.host, tf2.pid, tf2.counter, tf2.suffix) == ("h", 12, 7, ".v2")
    assert parse_event_file_name("events.out.tfevents.17000.host") is None
    assert parse_event_file_name("train.log") is None


def test_simple_scalars(simple_file: Path) -> None:
    result = read_event_file(simple_file, REL)
    assert result.findings == ()
    assert list(result.series) == ["loss", "lr", "val/acc"]
    loss = result.series["loss"]
    assert loss.steps.tolist() == [0, 1, 2, 3, 4]
    assert loss.values.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert loss.wall_times_s.tolist() == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    assert loss.source == REL and loss.attempt is None
    assert result.series["val/acc"].values.tolist() == [2.0, 2.5, 3.0, 3.5, 4.0]
    assert result.file_version == "brain.Event:2"
    assert [(m.kind, m.step, m.detail, m.record_index) for m in result.markers] == [("file_version", 0, "brain.Event:2", 0)]
    assert (result.record_count, result.scalar_count, result.other_count) == (16, 15, 0)
    assert result.end_offset == simple_file.stat().st_size
    assert result.last_wall_time_s == 1004.0
    assert result.first_wall_time_s is not None and result.first_wall_time_s > 1.6e9  # writer's own first record


def test_scalar_tensors_and_other_records(tmp_path: Path) -> None:
    def tensor_value(tag, tensor, plugin=None):
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
        if plugin:
            value.metadata.plugin_data.plugin_name = plugin
        return value

    scalar_shape = tensor_shape_pb2.TensorShapeProto()
    events = [
        event_pb2.Event(wall_time=1.0, step=1, summary=summary_pb2.Summary(value=[
            tensor_value("t/float", tensor_pb2.TensorProto(dtype=1, tensor_shape=scalar_shape, float_val=[0.25]), "scalars"),
            tensor_value("t/double", tensor_pb2.TensorProto(dtype=2, tensor_shape=scalar_shape, double_val=[1e-300])),
            tensor_value("t/content", tensor_pb2.TensorProto(dtype=1, tensor_shape=scalar_shape,
                                                             tensor_content=np.float32(3.5).tobytes())),
            tensor_value("t/int", tensor_pb2.TensorProto(dtype=3, tensor_shape=scalar_shape, int_val=[-7])),
            tensor_value("t/half", tensor_pb2.TensorProto(dtype=19, tensor_shape=scalar_shape,
                                                          half_val=[int(np.float16(1.5).view(np.uint16))])),
            tensor_value("t/int64", tensor_pb2.TensorProto(dtype=9, tensor_shape=scalar_shape, int64_val=[2**40])),
        ])),
        # Second value of t/float without metadata (TF writes metadata only once per tag).
        event_pb2.Event(wall_time=2.0, step=2, summary=summary_pb2.Summary(value=[
            tensor_value("t/float", tensor_pb2.TensorProto(dtype=1, tensor_shape=scalar_shape, float_val=[0.5]))])),
        # Text plugin string tensor and a rank-1 tensor: not scalars.
        event_pb2.Event(wall_time=3.0, step=3, summary=summary_pb2.Summary(value=[
            tensor_value("notes", tensor_pb2.TensorProto(dtype=7, tensor_shape=scalar_shape, string_val=[b"hi"]), "text")])),
        event_pb2.Event(wall_time=4.0, step=4, summary=summary_pb2.Summary(value=[
            tensor_value("vec", tensor_pb2.TensorProto(
                dtype=1, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=3)]),
                float_val=[1, 2, 3]))])),
        # A later float tensor under a tag first seen with another plugin stays out.
        event_pb2.Event(wall_time=5.0, step=5, summary=summary_pb2.Summary(value=[
            tensor_value("notes", tensor_pb2.TensorProto(dtype=1, tensor_shape=scalar_shape, float_val=[9.0]))])),
        event_pb2.Event(wall_time=6.0, step=6, graph_def=b"\x0a\x00"),
    ]
    result = read_event_file(write_events(tmp_path, events), REL)
    got = {tag: (s.steps.tolist(), s.values.tolist()) for tag, s in result.series.items()}
    assert got == {
        "t/float": ([1, 2], [0.25, 0.5]),
        "t/double": ([1], [1e-300]),
        "t/content": ([1], [3.5]),
        "t/int": ([1], [-7.0]),
        "t/half": ([1], [1.5]),
        "t/int64": ([1], [float(2**40)]),
    }
    assert (result.record_count, result.scalar_count, result.other_count) == (7, 7, 4)
    assert result.findings == ()


def test_markers_and_duplicate_steps(tmp_path: Path) -> None:
    events = [scalar_event("loss", 1.0, 10, 10.0), scalar_event("loss", 2.0, 20, 20.0),
              event_pb2.Event(wall_time=30.0, step=15, file_version="brain.Event:2"),
              event_pb2.Event(wall_time=30.0, step=15, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)),
              scalar_event("loss", 3.0, 15, 31.0), scalar_event("loss", 4.0, 20, 32.0), scalar_event("loss", 5.0, 20, 33.0)]
    result = read_event_file(write_events(tmp_path, events), REL)
    assert [(m.kind, m.step, m.detail, m.record_index) for m in result.markers] == [
        ("file_version", 0, "brain.Event:2", 0), ("file_version", 15, "brain.Event:2", 3), ("session_log", 15, "START", 4)]
    assert result.markers[2].wall_time_s == 30.0
    loss = result.series["loss"]
    assert loss.steps.tolist() == [10, 20, 15, 20, 20]  # file order, duplicates kept
    assert loss.values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def mixed_events(count_steps: int, seed: int, periodic: bool = False) -> list[event_pb2.Event]:
    """Cyclic and random-order tags of several lengths, multi-byte step varints, odd values."""
    rng = random.Random(seed)
    tags = ["loss", "lr", "train/loss_total", "損失/é", "x" * 40, "val/metric_01", "val/metric_02"]
    specials = [math.nan, math.inf, -math.inf, -0.0, 1e-45, 3.4e38]
    events, step = [], 0
    for i in range(count_steps):
        # Big jumps cross the 1, 2, 3, 4 and 5-byte varint boundaries.
        if periodic:  # long cyclic stretches, broken by a shuffled stretch and varint growth
            step += 1 if i != 1500 else 20000
            order = rng.sample(tags, rng.randint(1, len(tags))) if 1000 <= i < 1100 else tags
        else:
            step += rng.choice([1, 1, 1, 7, 150, 20000, 3_000_000, 300_000_000]) if i else 0
            order = tags if i % 3 else rng.sample(tags, rng.randint(1, len(tags)))
        for tag in order:
            value = rng.choice(specials) if rng.random() < 0.05 else rng.uniform(-1e6, 1e6)
            events.append(scalar_event(tag, value, step, 1.7e9 + rng.random() * 1e6))
    events.append(scalar_event("neg", 1.0, -5, 1.0))  # ten-byte varint
    return events


def test_fast_path_matches_protobuf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_events(tmp_path, mixed_events(600, seed=1))
    slow_records = []
    original = _tb_window.decode_slow

    def counting(buf, offsets, lengths, records):
        slow_records.extend(records.tolist())
        return original(buf, offsets, lengths, records)

    monkeypatch.setattr(_tb_window, "decode_slow", counting)
    result = read_event_file(path, REL)
    data = path.read_bytes()
    assert result.findings == ()
    assert_matches_reference(result, data)
    assert result.series["neg"].steps.tolist() == [-5]
    # Protobuf decodes only the writer's file_version record and lengths too rare to be worth a layout.
    lengths = [end - start for start, end in record_bounds(data)]
    rare = [i for i, n in enumerate(lengths) if lengths.count(n) < _tb_window.PROTOBUF_ROWS]
    assert sorted(slow_records) == sorted({0, *rare}) and len(rare) < 20
    assert result.record_count == len(record_bounds(data))
    assert result.scalar_count == sum(len(s) for s in result.series.values())


def test_bulk_framing_matches_sequential(tmp_path: Path) -> None:
    path = write_events(tmp_path, mixed_events(2000, seed=2, periodic=True))
    data = path.read_bytes()
    framing = _tfrecord.frame_records(data, 0, len(data))
    assert framing.bulk_records > len(framing.offsets) // 2, "periodic stretches should be framed in bulk"
    assert framing.offsets.tolist() == [s for s, _ in record_bounds(data)]
    assert framing.lengths().tolist() == [e - s - 16 for s, e in record_bounds(data)]
    assert (framing.stop, framing.end_offset) == ("end", len(data))
    assert_matches_reference(read_event_file(path, REL), data)


def test_crc_matches_crc32c_package(monkeypatch: pytest.MonkeyPatch) -> None:
    crc32c = pytest.importorskip("crc32c")
    rng = np.random.default_rng(7)
    for native in (crc32c.crc32c, None):  # with the optional package, and the numpy rows without it
        monkeypatch.setattr(_tfrecord, "_native_crc32c", native)
        for size in [0, 1, 3, 4, 5, 63, 255, 256, 1000, 4097, 100_003]:
            data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
            assert _tfrecord.crc32c(data) == crc32c.crc32c(data)
    for count, length in [(1, 30), (3, 54), (50, 54), (2000, 61), (40, 700), (5, 5000)]:
        block = rng.integers(0, 256, (count, length), dtype=np.uint8)
        expected = [crc32c.crc32c(row.tobytes()) for row in block]
        assert _tfrecord.group_crc32c(block).tolist() == expected
        similar = np.tile(block[0], (count, 1))  # few differing columns: the XOR-difference path
        for col in (0, 2, length // 2, length - 1):
            similar[:, col] = rng.integers(0, 256, count)
        assert _tfrecord.group_crc32c(similar).tolist() == [crc32c.crc32c(row.tobytes()) for row in similar]
    # Payloads as the reader passes them (a column slice of a wider record block), more rows than one slice, and
    # differing columns that pair with a constant neighbour (the 16-bit lookups) or stand alone at the end.
    wide = np.tile(rng.integers(0, 256, 70, dtype=np.uint8), (20_000, 1))
    for col in (12, 13, 20, 40, 53, 64):
        wide[:, col] = rng.integers(0, 256, 20_000)
    for payloads in (wide[:, 12:66], wide[:, 12:65], wide[:, 13:54]):
        varying = _tfrecord.varying_columns(payloads)
        assert _tfrecord.group_crc32c(payloads, varying).tolist() == [crc32c.crc32c(row.tobytes())
                                                                       for row in payloads]


def test_masked_crc_matches_tensorboard() -> None:
    for payload in [b"", b"abc", bytes(range(256)) * 3]:
        assert _tfrecord.masked(_tfrecord.crc32c(payload)) == masked_crc32c(payload)


def test_truncated_tail_at_every_cut(tmp_path: Path, simple_file: Path) -> None:
    data = simple_file.read_bytes()
    bounds = record_bounds(data)
    full = read_event_file(simple_file, REL)
    cut_path = tmp_path / "cut" / simple_file.name
    cut_path.parent.mkdir()
    for cut in range(len(data) + 1):
        cut_path.write_bytes(data[:cut])
        result = read_event_file(cut_path, REL)
        whole = [end for _, end in bounds if end <= cut]
        assert result.record_count == len(whole)
        assert result.end_offset == (whole[-1] if whole else 0)
        assert result.scalar_count == max(0, len(whole) - 1)
        for tag, series in result.series.items():
            n = len(series)
            assert series.steps.tolist() == full.series[tag].steps[:n].tolist()
            assert series.values.tolist() == full.series[tag].values[:n].tolist()
        codes = [f.code for f in result.findings]
        if cut == 0:
            assert codes == ["file.empty"]
        elif whole and whole[-1] == cut:
            assert codes == []
        else:
            assert codes == ["file.truncated"]
            finding = result.findings[0]
            assert finding.severity is Severity.INFO and finding.paths == (REL,)
            assert f"byte {result.end_offset}" in finding.message and REL in finding.message
            assert "still" in finding.explanation


def test_flipped_byte_stops_at_crc_error(tmp_path: Path, simple_file: Path) -> None:
    data = bytearray(simple_file.read_bytes())
    bounds = record_bounds(bytes(data))
    start, end = bounds[7]
    data[end - 6] ^= 0x01  # inside the float value of record 7
    simple_file.write_bytes(bytes(data))
    result = read_event_file(simple_file, REL)
    assert result.record_count == 7 and result.end_offset == start
    assert result.scalar_count == 6
    assert result.series["loss"].steps.tolist() == [0, 1]
    assert result.series["val/acc"].steps.tolist() == [0, 1]
    (finding,) = result.findings
    assert finding.code == "file.corrupt" and finding.severity is Severity.WARNING
    assert f"byte {start}" in finding.message and "TensorBoard" in finding.explanation
    unchecked = read_event_file(simple_file, REL, check_crc=False)
    assert unchecked.findings == () and unchecked.scalar_count == 15


def test_huge_length_field(tmp_path: Path, simple_file: Path) -> None:
    data = bytearray(simple_file.read_bytes())
    start, _ = record_bounds(bytes(data))[4]
    data[start : start + 8] = struct.pack("<Q", 5 * 2**30)
    simple_file.write_bytes(bytes(data))
    for check in (True, False):
        result = read_event_file(simple_file, REL, check_crc=check)
        assert result.record_count == 4 and result.end_offset == start
        assert [f.code for f in result.findings] == ["file.corrupt"]
    assert "cap" in result.findings[0].message


def test_corrupt_length_within_cap_is_corrupt_not_truncated(tmp_path: Path, simple_file: Path) -> None:
    data = bytearray(simple_file.read_bytes())
    start, _ = record_bounds(bytes(data))[-1]
    data[start : start + 8] = struct.pack("<Q", 1_000_000)
    simple_file.write_bytes(bytes(data))
    result = read_event_file(simple_file, REL)
    assert [f.code for f in result.findings] == ["file.corrupt"] and result.end_offset == start


def test_undecodable_record_is_skipped(tmp_path: Path) -> None:
    good = scalar_event("loss", 1.0, 1, 1.0).SerializeToString()
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(frame(good) + frame(b"\xff\xff\xff") + frame(scalar_event("loss", 2.0, 2, 2.0).SerializeToString()))
    result = read_event_file(path, REL)
    assert result.series["loss"].steps.tolist() == [1, 2]
    assert (result.record_count, result.other_count) == (3, 1)
    assert [f.code for f in result.findings] == ["file.corrupt"]


def test_empty_file_and_fifo(tmp_path: Path) -> None:
    empty = tmp_path / "events.out.tfevents.1700000000.h"
    empty.write_bytes(b"")
    result = read_event_file(empty, REL)
    assert [f.code for f in result.findings] == ["file.empty"] and result.series == {} and result.record_count == 0
    fifo = tmp_path / "events.out.tfevents.1700000001.h"
    os.mkfifo(fifo)
    box = []
    thread = threading.Thread(target=lambda: box.append(read_event_file(fifo, REL)), daemon=True)
    thread.start()
    thread.join(5)
    assert box, "reading a FIFO blocked"
    assert [f.code for f in box[0].findings] == ["file.unreadable"]


def test_start_offset_refresh(tmp_path: Path) -> None:
    path = write_events(tmp_path, mixed_events(200, seed=3))
    data = path.read_bytes()
    full = read_event_file(path, REL)
    growing = tmp_path / "grow" / path.name
    growing.parent.mkdir()
    for cut in (len(data) // 3, len(data) // 2 + 5, len(data) - 1):
        growing.write_bytes(data[:cut])
        first = read_event_file(growing, REL)
        growing.write_bytes(data)
        second = read_event_file(growing, REL, start_offset=first.end_offset)
        assert second.end_offset == len(data) and second.findings == ()
        assert first.record_count + second.record_count == full.record_count
        for tag, series in full.series.items():
            parts = [r.series[tag] for r in (first, second) if tag in r.series]
            assert np.concatenate([p.steps for p in parts]).tolist() == series.steps.tolist()
            joined = np.concatenate([p.values for p in parts])
            assert np.array_equal(joined, series.values, equal_nan=True)
    at_end = read_event_file(path, REL, start_offset=len(data))
    assert (at_end.record_count, at_end.end_offset, at_end.findings) == (0, len(data), ())


@pytest.fixture(scope="module")
def valid_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A small valid file with markers, scalars and a tensor."""
    events = mixed_events(12, seed=4) + [
        event_pb2.Event(wall_time=5.0, step=3, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))]
    return write_events(tmp_path_factory.mktemp("valid"), events).read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_prefix_or_mutation_never_raises(valid_bytes: bytes, tmp_path: Path, data) -> None:
    cut = data.draw(st.integers(0, len(valid_bytes)))
    blob = bytearray(valid_bytes[:cut])
    if blob and data.draw(st.booleans()):
        position = data.draw(st.integers(0, len(blob) - 1))
        blob[position] = data.draw(st.integers(0, 255))
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(bytes(blob))
    for check in (True, False):
        result = read_event_file(path, REL, check_crc=check)
        assert 0 <= result.end_offset <= len(blob)
        assert result.scalar_count == sum(len(s) for s in result.series.values())
        if check and bytes(blob) == valid_bytes[:cut]:
            assert result.scalar_count <= sum(len(v) for v in reference_scalars(valid_bytes).values())


def test_file_shrinking_between_reads_is_not_fatal(tmp_path):
    """Reads use read(), not mmap: a file truncated under us cannot SIGBUS the process."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from pimm_inspect.sources.tensorboard.reader import read_event_file

    writer = EventFileWriter(str(tmp_path))
    for step in range(50):
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=float(step))])
        writer.add_event(event_pb2.Event(wall_time=1.0 + step, step=step, summary=summary))
    writer.close()
    (path,) = list(tmp_path.iterdir())
    full = read_event_file(path, path.name)
    with open(path, "r+b") as fh:
        fh.truncate(full.end_offset // 2)
    again = read_event_file(path, path.name, start_offset=full.end_offset)
    assert again.series == {} and again.end_offset == full.end_offset
    half = read_event_file(path, path.name)
    assert 0 < len(half.series["loss"]) < 50


PIMM_TAGS = ["train_batch/loss", "params/lr", "time/batch_s", "val/mIoU", "train_batch/avg_pts"] + [
    f"train/m{i}" for i in range(15)]


def test_mixed_tag_lengths_are_framed_in_bulk_and_bucketed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tags of different lengths in a fixed per-step order: bulk framing, one bucket per length, exact values."""
    events = [scalar_event(tag, step * 0.25 + i, step, 1.7e9 + step * 0.5)
              for step in range(3000) for i, tag in enumerate(PIMM_TAGS)]
    path = write_events(tmp_path, events)
    data = path.read_bytes()
    framing = _tfrecord.frame_records(data, 0, len(data))
    # The period is the 20 tags of a step; short local repeats (equal neighbours) must not hide it.
    assert framing.bulk_records > 0.95 * len(events)
    buckets = []
    original = _tb_window.decode_bucket

    def counting(payload, varying, *known):
        buckets.append(payload.shape[0])
        return original(payload, varying, *known)

    monkeypatch.setattr(_tb_window, "decode_bucket", counting)
    result = read_event_file(path, REL)
    assert result.findings == () and list(result.series) == PIMM_TAGS
    assert len(buckets) <= 3 * len({len(t) for t in PIMM_TAGS})  # lengths x step varint widths, not 3,000 groups
    assert_matches_reference(result, data)


def equal_length_file(tmp_path: Path) -> Path:
    """600 records of one length (one bucket): the CRC of every row is checked at once."""
    return write_events(tmp_path, [scalar_event(f"tag{i % 6}", float(i), 1000 + i // 6, 1.7e9 + i)
                                   for i in range(600)])


@pytest.mark.parametrize("where", ["payload", "stored-crc", "header-crc"])
def test_crc_damage_inside_a_bucket(tmp_path: Path, where: str) -> None:
    path = equal_length_file(tmp_path)
    data = bytearray(path.read_bytes())
    start, end = record_bounds(bytes(data))[400]
    position = {"payload": end - 6, "stored-crc": end - 2, "header-crc": start + 9}[where]  # payload: the value
    data[position] ^= 0x10
    path.write_bytes(bytes(data))
    result = read_event_file(path, REL)
    assert result.record_count == 400 and result.end_offset == start and result.scalar_count == 399
    (finding,) = result.findings
    assert finding.code == "file.corrupt" and finding.paths == (REL,) and REL in finding.message
    assert f"at byte {start}" in finding.message
    unchecked = read_event_file(path, REL, check_crc=False)
    if where == "header-crc":  # a length's CRC is checked whatever check_crc says
        assert unchecked.record_count == 400 and [f.code for f in unchecked.findings] == ["file.corrupt"]
    else:
        assert unchecked.findings == () and unchecked.record_count == 601
