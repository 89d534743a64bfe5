"""Buckets of a few records go to protobuf first (``_window.PROTOBUF_ROWS``): the result is the one the byte layouts
give, value for value, count for count and finding for finding, including where the two paths could part (a record
protobuf refuses inside a bucket a layout decodes, a window that passes the file's tag cap)."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2

from pimm_inspect.sources._limits import MAX_TAGS_PER_FILE
from pimm_inspect.sources.tensorboard import _tfrecord
from pimm_inspect.sources.tensorboard import _window as _tb_window
from pimm_inspect.sources.tensorboard.reader import read_event_file
from tests.test_tb_events import REL, frame, mixed_events, scalar_event, write_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _facts(path: Path) -> tuple:
    """Everything a read gives, values and wall times as bits."""
    result = read_event_file(path, REL)
    series = [(tag, s.steps.tolist(), s.values.view(np.int64).tolist(), s.wall_times_s.view(np.int64).tolist())
              for tag, s in result.series.items()]
    markers = [(m.kind, m.step, m.wall_time_s, m.detail, m.record_index) for m in result.markers]
    return (series, markers, result.file_version, result.first_wall_time_s, result.last_wall_time_s,
            result.record_count, result.scalar_count, result.other_count, result.end_offset,
            [(f.code, f.message) for f in result.findings])


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple]:
    """(read as the layouts decode every bucket of 4+ records, read with small buckets given to protobuf first)."""
    with monkeypatch.context() as patch:
        patch.setattr(_tb_window, "PROTOBUF_ROWS", _tb_window.MIN_BUCKET_ROWS)
        layouts = _facts(path)
    return layouts, _facts(path)


def _handed_to_protobuf(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many records of buckets a layout would decode protobuf was handed first."""
    handed = []
    original = _tb_window.decode_slow

    def counting(buf, offsets, lengths, records):
        handed.append(records.shape[0])
        return original(buf, offsets, lengths, records)

    with monkeypatch.context() as patch:
        patch.setattr(_tb_window, "decode_slow", counting)
        read_event_file(path, REL)
    with monkeypatch.context() as patch:
        patch.setattr(_tb_window, "PROTOBUF_ROWS", _tb_window.MIN_BUCKET_ROWS)
        patch.setattr(_tb_window, "decode_slow", counting)
        before = len(handed)
        read_event_file(path, REL)
        layouts_only = handed[before:]
    return handed[0] - layouts_only[0]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/**/events.out.tfevents.*")), ids=lambda p: p.parent.name)
def test_fixture_event_files_read_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layouts, first = _both(path, monkeypatch)
    assert first == layouts


def test_small_buckets_reach_protobuf_and_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Seven tags over 15 steps: buckets of 13 to 26 records of a length, and four of one.
    path = write_events(tmp_path, mixed_events(15, seed=3))
    assert _handed_to_protobuf(path, monkeypatch) == 94
    layouts, first = _both(path, monkeypatch)
    assert first == layouts and layouts[5] == 98


def _histogram_event(step: int) -> bytes:
    value = summary_pb2.Summary.Value(tag="w", histo=summary_pb2.HistogramProto(min=-1.0, max=float(step), num=3.0))
    return event_pb2.Event(wall_time=1.7e9 + step, step=step,
                           summary=summary_pb2.Summary(value=[value])).SerializeToString()


def test_record_protobuf_refuses_inside_a_layout_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A histogram's bytes damaged behind a valid CRC: a layout never looks into them (another record), protobuf
    refuses the record (undecodable). Handed to protobuf first, the window is decoded again as the layouts do."""
    payloads = [scalar_event("loss", 0.5 * i, i, 1.7e9 + i).SerializeToString() for i in range(1, 9)]
    histograms = [bytearray(_histogram_event(step)) for step in range(10, 20)]
    inner = histograms[0].index(struct.pack("<d", -1.0)) - 1  # HistogramProto.min's key byte
    histograms[5][inner] = 0xFF  # an invalid field key inside the histogram: same length, same structure
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(b"".join(frame(p) for p in [*payloads, *map(bytes, histograms)]))
    with pytest.raises(Exception):
        event_pb2.Event.FromString(bytes(histograms[5]))
    layouts, first = _both(path, monkeypatch)
    assert first == layouts
    assert layouts[5:8] == (18, 8, 10) and layouts[9] == []  # 18 records, 8 scalars, 10 others, no finding
    with monkeypatch.context() as patch:  # the check that decodes again is what keeps them equal
        patch.setattr(_tb_window, "_refused", lambda slow, handed: False)
        alone = _facts(path)
    assert alone[7] == 10 and [code for code, _ in alone[9]] == ["file.corrupt"]  # an undecodable record


def test_window_past_the_tag_cap_keeps_the_same_tags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More names than the cap, in buckets of a few records, not in length order: the names kept are those the
    layouts would keep (the window is decoded again as they do)."""
    names = MAX_TAGS_PER_FILE + 40
    rng = random.Random(5)
    # Names of 20 each length (buckets of 20 records), written shuffled: file order is not length order.
    events = [scalar_event(f"{i:05d}" + "x" * (i // 20), float(i), i, 1.7e9 + i) for i in range(names)]
    rng.shuffle(events)
    path = tmp_path / "events.out.tfevents.1700000000.h"
    path.write_bytes(b"".join(frame(e.SerializeToString()) for e in events))
    layouts, first = _both(path, monkeypatch)
    assert first == layouts
    assert len(layouts[0]) == MAX_TAGS_PER_FILE and [code for code, _ in layouts[9]] == ["file.too-many-tags"]
    with monkeypatch.context() as patch:
        patch.setattr(_tb_window, "_may_pass_cap", lambda found, slow, acc: False)
        alone = _facts(path)
    assert {tag for tag, *_ in alone[0]} != {tag for tag, *_ in layouts[0]}


def test_crc_of_each_record_matches_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    crc32c = pytest.importorskip("crc32c")
    rng = np.random.default_rng(11)
    buf = rng.integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    starts = rng.integers(0, 10_000, 200).tolist()
    sizes = [*rng.integers(0, 255, 199).tolist(), 5000]
    expected = [crc32c.crc32c(buf[s : s + n]) for s, n in zip(starts, sizes)]
    for native in (crc32c.crc32c, None):  # with the package, and without it
        monkeypatch.setattr(_tfrecord, "_native_crc32c", native)
        assert _tfrecord.crc32c_each(buf, starts, sizes) == expected
        assert _tfrecord.crc32c_each(buf, starts[:199], sizes[:199]) == expected[:199]


def test_crc32c_package_is_looked_up_after_the_short_record_budget() -> None:
    pytest.importorskip("crc32c")
    code = ("from pimm_inspect.sources.tensorboard import _tfrecord\n"
            "import sys\n"
            "data = bytes(range(200))\n"
            "for _ in range(_tfrecord._SHORT_BUDGET // 200):\n"
            "    _tfrecord.crc32c_each(data, [0], [200])\n"
            "assert 'crc32c' not in sys.modules\n"
            "short = _tfrecord.crc32c(data[:150]) + _tfrecord.crc32c_each(data, [0], [200])[0]\n"
            "import crc32c\n"
            "assert _tfrecord._native_crc32c is crc32c.crc32c\n"
            "assert short == crc32c.crc32c(data[:150]) + crc32c.crc32c(data)\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
