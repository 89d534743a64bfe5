"""The event reader on the shapes real writers produce: equal to EventAccumulator, fast path used, windows, bounds."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from pimm_inspect.sources.tensorboard import _window as _tb_window
from pimm_inspect.sources.tensorboard import _tfrecord
from pimm_inspect.sources.tensorboard import reader as tb_events
from pimm_inspect.sources.tensorboard.reader import read_event_file
from tests.hostile_support import PEAK_KIB

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_EVENT_FILES = sorted((ROOT / "fixtures").glob("**/events.out.tfevents.*"))
_spec = importlib.util.spec_from_file_location("gen_tb_shapes", ROOT / "fixtures" / "gen_tb_shapes.py")
shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shapes)


def accumulator_points(path: Path) -> dict[str, list[tuple[int, float, float]]]:
    """Tag -> (step, value, wall) as tensorboard's EventAccumulator keeps them (every point, no purge).

    Scalars are its ``Scalars``; scalar tensors (plugin ``scalars`` or none) its ``Tensors``, one element each.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0},
                                   purge_orphaned_data=False)
    accumulator.Reload()
    out = {tag: [(e.step, e.value, e.wall_time) for e in accumulator.Scalars(tag)]
           for tag in accumulator.Tags()["scalars"]}
    for tag in accumulator.Tags()["tensors"]:
        if accumulator.SummaryMetadata(tag).plugin_data.plugin_name not in ("scalars", ""):
            continue
        arrays = [(e, tensor_util.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors(tag)]
        if all(array.size == 1 for _, array in arrays):
            out[tag] = [(e.step, float(array.reshape(-1)[0]), e.wall_time) for e, array in arrays]
    return out


def assert_equals_accumulator(path: Path, result=None) -> None:
    """Tags, steps, values and wall times (bit for bit, NaN equal) and counts as EventAccumulator's."""
    result = result or read_event_file(path, path.name)
    expected = accumulator_points(path)
    assert set(result.series) == set(expected)
    for tag, points in expected.items():
        series = result.series[tag]
        assert series.steps.tolist() == [p[0] for p in points], tag
        assert np.array_equal(series.values, np.array([p[1] for p in points], dtype=np.float64), equal_nan=True), tag
        assert series.wall_times_s.tolist() == [p[2] for p in points], tag
    assert result.scalar_count == sum(len(points) for points in expected.values())


def count_protobuf_records(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record indices the reader hands to protobuf (appended to the returned list)."""
    seen: list[int] = []
    original = _tb_window.decode_slow

    def counting(buf, offsets, lengths, records):
        seen.extend(records.tolist())
        return original(buf, offsets, lengths, records)

    monkeypatch.setattr(_tb_window, "decode_slow", counting)
    return seen


def test_fixture_files_exist() -> None:
    names = {path.parent.name for path in FIXTURE_EVENT_FILES}
    assert set(shapes.SHAPES) <= names and len(FIXTURE_EVENT_FILES) >= 30


@pytest.mark.parametrize("path", FIXTURE_EVENT_FILES, ids=[str(p.relative_to(ROOT / "fixtures")) for p in FIXTURE_EVENT_FILES])
def test_every_committed_event_file_equals_event_accumulator(path: Path) -> None:
    assert_equals_accumulator(path)


@pytest.mark.parametrize("write, tags", [
    (lambda d: shapes.tf2_scalars(d, 300), shapes.PIMM_TAGS),
    (lambda d: shapes.tf2_scalars(d, 300, dtype="float64"), shapes.PIMM_TAGS),
    (lambda d: shapes.tensorboard_writer(d, 300), shapes.PIMM_TAGS[:6]),
], ids=["tf2-float32", "tf2-float64", "tensorboard-writer"])
def test_scalar_tensors_take_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write, tags) -> None:
    path = write(tmp_path / "run")
    slow = count_protobuf_records(monkeypatch)
    result = read_event_file(path, path.name)
    assert result.findings == () and list(result.series) == list(tags)
    assert all(len(series) == 300 for series in result.series.values())
    assert len(slow) < 40  # the file_version record and rare lengths (step 0, varint widths), not 6,000 tensors
    assert_equals_accumulator(path, result)
    if "float64" in path.name:  # doubles are kept as written, not rounded through float32
        assert any(v != float(np.float32(v)) for v in result.series["params/lr"].values.tolist())


def test_multi_value_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shapes.multi_value(tmp_path / "run", 400)
    slow = count_protobuf_records(monkeypatch)
    result = read_event_file(path, path.name)
    assert result.findings == () and result.record_count == 401 and result.scalar_count == 400 * 20
    assert list(result.series) == list(shapes.PIMM_TAGS)  # the order of values inside the first event
    assert len(slow) < 20
    assert_equals_accumulator(path, result)


def _histogram_event(step: int, rng: np.random.Generator) -> event_pb2.Event:
    """A histogram with a fixed bucket count (so such records share a length and a bucket)."""
    histo = summary_pb2.HistogramProto(min=-1.0, max=1.0, num=64.0, sum=float(rng.normal()), sum_squares=3.0,
                                       bucket_limit=list(np.linspace(-1, 1, 16)), bucket=list(rng.random(16) + 1))
    return event_pb2.Event(wall_time=1.7e9 + step, step=step,
                           summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="weights", histo=histo)]))


def test_interleaved_histograms_images_text_are_skipped_not_decoded(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    writer = EventFileWriter(str(tmp_path), max_queue_size=100000, flush_secs=3600)
    image = summary_pb2.Summary.Image(height=2, width=2, colorspace=3, encoded_image_string=b"\x89PNG" + bytes(40))
    for step in range(1, 301):
        for i, tag in enumerate(shapes.PIMM_TAGS[:4]):
            writer.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag=tag, simple_value=step * 0.5 + i)])))
        writer.add_event(_histogram_event(step, rng))
        writer.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="sample", image=image)])))
        writer.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, graph_def=b"\x0a\x02" + bytes(2)))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    slow = count_protobuf_records(monkeypatch)
    result = read_event_file(path, path.name)
    assert result.findings == () and list(result.series) == list(shapes.PIMM_TAGS[:4])
    assert (result.record_count, result.scalar_count, result.other_count) == (1 + 300 * 7, 1200, 900)
    assert len(slow) < 30  # histograms, images and graphs were classified by layout, not decoded one by one
    assert_equals_accumulator(path, result)
    assert result.last_wall_time_s == 1.7e9 + 300


def test_plugin_metadata_seen_in_an_earlier_window_still_applies(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A float tensor under a tag first seen as text stays out, even when the text came windows earlier."""
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2

    def tensor_event(step: int, tag: str, tensor, plugin: str | None) -> event_pb2.Event:
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
        if plugin:
            value.metadata.plugin_data.plugin_name = plugin
        return event_pb2.Event(wall_time=float(step), step=step, summary=summary_pb2.Summary(value=[value]))

    scalar_shape = tensor_shape_pb2.TensorShapeProto()
    text = tensor_pb2.TensorProto(dtype=7, tensor_shape=scalar_shape, string_val=[b"hello"])
    events = [tensor_event(1, "notes", text, "text")]
    events += [tensor_event(s, tag, tensor_pb2.TensorProto(dtype=1, tensor_shape=scalar_shape,
                                                             tensor_content=np.float32(s).tobytes()), None)
               for s in range(2, 400) for tag in ("notes", "loss")]
    writer = EventFileWriter(str(tmp_path), max_queue_size=100000, flush_secs=3600)
    for event in events:
        writer.add_event(event)
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    whole = read_event_file(path, path.name)
    monkeypatch.setattr(tb_events, "WINDOW_BYTES", 1024)
    windowed = read_event_file(path, path.name)
    for result in (whole, windowed):
        assert list(result.series) == ["loss"] and result.series["loss"].steps.tolist() == list(range(2, 400))
        assert result.other_count == 1 + 398  # the text and the float tensors under its tag
    assert windowed.record_count == whole.record_count


@pytest.mark.parametrize("window", [200, 1000, 4096, 100_000])
def test_small_windows_give_the_same_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    path = Path(shutil_copy(FIXTURE_EVENT_FILES, "interleaved", tmp_path))
    whole = read_event_file(path, path.name)
    monkeypatch.setattr(tb_events, "WINDOW_BYTES", window)
    windowed = read_event_file(path, path.name)
    assert windowed.findings == whole.findings == ()
    assert (windowed.record_count, windowed.scalar_count, windowed.other_count, windowed.end_offset) == (
        whole.record_count, whole.scalar_count, whole.other_count, whole.end_offset)
    assert [(m.kind, m.record_index) for m in windowed.markers] == [(m.kind, m.record_index) for m in whole.markers]
    for tag, series in whole.series.items():
        assert windowed.series[tag].steps.tolist() == series.steps.tolist()
        assert windowed.series[tag].values.tolist() == series.values.tolist()
    assert (windowed.first_wall_time_s, windowed.last_wall_time_s) == (whole.first_wall_time_s, whole.last_wall_time_s)


def shutil_copy(paths: list[Path], folder: str, target: Path) -> Path:
    """Copy the fixture file in ``folder`` into ``target``; returns the copy."""
    import shutil

    (source,) = [p for p in paths if p.parent.name == folder]
    return Path(shutil.copy(source, target / source.name))


def test_damage_in_a_later_window_keeps_earlier_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = shapes.tf2_scalars(tmp_path / "run", 200, shapes.PIMM_TAGS[:5])
    data = bytearray(path.read_bytes())
    offsets = _tfrecord.frame_records(bytes(data), 0, len(data)).offsets.tolist()
    victim = offsets[700]
    data[victim + 20] ^= 0x40
    path.write_bytes(bytes(data))
    monkeypatch.setattr(tb_events, "WINDOW_BYTES", 8192)
    result = read_event_file(path, "tb/" + path.name)
    assert result.record_count == 700 and result.end_offset == victim and result.scalar_count == 699
    (finding,) = result.findings
    assert finding.code == "file.corrupt" and finding.paths == ("tb/" + path.name,)
    assert f"record 700 at byte {victim}" in finding.message


def test_huge_sparse_file_is_read_in_bounded_memory_and_time(tmp_path: Path) -> None:
    """A 5 GB file that is a small valid prefix and then a hole (zeros): a finding, not 17 GB of RSS."""
    path = tmp_path / "events.out.tfevents.1700000000.sparse"
    prefix = shutil_copy(FIXTURE_EVENT_FILES, "tbx_mixed", tmp_path).read_bytes()
    path.write_bytes(prefix)
    os.truncate(path, 5 * 2**30)
    if os.stat(path).st_blocks * 512 > 2**30:
        pytest.skip("the filesystem does not keep holes")
    code = (
        "import json, resource, sys, time\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))\n"
        "started = time.perf_counter()\n"
        "from pimm_inspect.sources.tensorboard.reader import read_event_file\n"
        "result = read_event_file(sys.argv[1], 'tb/' + sys.argv[1].rsplit('/', 1)[-1])\n"
        "print(json.dumps({'seconds': time.perf_counter() - started,\n"
        f"                  'rss_mib': {PEAK_KIB} / 1024,\n"
        "                  'findings': [(f.code, f.message, list(f.paths)) for f in result.findings],\n"
        "                  'points': result.scalar_count, 'end': result.end_offset}))\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["rss_mib"] < 500  # memory, not time (the subprocess timeout is the hang guard)
    assert report["points"] == 240 and report["end"] == len(prefix)
    ((code_, message, paths),) = report["findings"]
    assert code_ == "file.corrupt" and paths == ["tb/" + path.name]
    assert f"byte {len(prefix)}" in message and "zero bytes" in message


def test_zero_length_records_with_a_valid_crc_are_events(tmp_path: Path) -> None:
    """An empty Event is legal (a valid CRC on a zero length): framed, counted, not mistaken for a hole."""
    header = struct.pack("<Q", 0)
    empty = header + struct.pack("<I", _tfrecord.masked(_tfrecord.crc32c(header))) + struct.pack(
        "<I", _tfrecord.masked(_tfrecord.crc32c(b"")))
    path = tmp_path / "events.out.tfevents.1.empty"
    path.write_bytes(empty * 3)
    result = tb_events.read_event_file(path, "x")
    assert (result.record_count, result.other_count, result.findings) == (3, 3, ())
