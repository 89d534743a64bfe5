"""A grown train.log is extended from the reader state kept at the last complete line: only appended bytes are read.

Each test grows a copy of a real fixture log (or a generated one) step by step, cutting inside lines,
inside Val blocks and inside multi-line records, and checks after every step that the bytes read are
exactly those after the previous end, and that the extended result equals a full read of the grown
file field by field (series bit for bit, segments, events, tables, index, findings, the kept state).
A file that shrank, was replaced, or was rewritten in place is read whole again.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import pytest

import pimm_inspect.sources.train_log._ahead as A
import pimm_inspect.sources.train_log.reader as R
from pimm_inspect.session.store.cache import ReadCache
from tests.test_disk_cache import _same
from tests.train_log_support import write_big_log

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FIXTURE_LOGS = sorted(RUNS.glob("*/train.log"))


@pytest.fixture
def reads(monkeypatch) -> list[tuple[int, int]]:
    """(start offset, file size) of every pass over the file's bytes."""
    seen: list[tuple[int, int]] = []
    real = A.blocks  # every read's blocks come from there (a big file's from a scanning child)

    def spy(fh, start_offset, size, *args):
        seen.append((start_offset, size))
        return real(fh, start_offset, size, *args)

    monkeypatch.setattr(A, "blocks", spy)
    return seen


def _equal_to_full_read(extended, path: Path) -> None:
    full = R.read_train_log(path, "train.log")
    assert full.read_from_offset == 0
    _same(dataclasses.replace(extended, read_from_offset=0), full, "result")


def _grow(path: Path, data: bytes, cuts: list[int], reads: list[tuple[int, int]]):
    """Write ``data`` up to each cut in turn, extending the previous result each time; returns the last."""
    path.write_bytes(data[:cuts[0]])
    previous = R.read_train_log(path, "train.log")
    for cut in cuts[1:]:
        with path.open("ab") as fh:
            fh.write(data[path.stat().st_size:cut])
        reads.clear()
        extended = R.read_train_log(path, "train.log", previous=previous)
        assert reads == [(previous.end_offset, cut)]  # only the bytes after the last complete line read before
        assert extended.read_from_offset == previous.end_offset
        assert extended.end_offset == data.rfind(b"\n", 0, cut) + 1
        _equal_to_full_read(extended, path)
        previous = extended
    return previous


def _inside(data: bytes, marker: bytes, into: int = 5) -> int:
    """A cut ``into`` bytes after ``marker``: inside its line (and the block or record it belongs to)."""
    return data.index(marker) + into


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: p.parent.name)
def test_fixture_log_grown_in_random_steps(tmp_path: Path, path: Path, reads) -> None:
    data = path.read_bytes()
    rng = random.Random(path.parent.name)
    cuts = sorted(rng.sample(range(1, len(data)), 12)) + [len(data)]
    final = _grow(tmp_path / "train.log", data, cuts, reads)
    assert final.end_offset == data.rfind(b"\n") + 1  # (e3a_running ends inside a line)


def test_cuts_inside_a_val_table_and_a_config_dump(tmp_path: Path, reads) -> None:
    data = (RUNS / "e0_legacy" / "train.log").read_bytes()
    table = data.index(b"Per-class metrics")
    cuts = [_inside(data, b"Config:", 40),  # inside the multi-line dump
            _inside(data, b"|        1 |", 3),  # the Val table has its header and one row
            data.index(b"\n", data.index(b"|        2 |")) + 1,  # a line end inside the table
            _inside(data, b"End Evaluation"), table + (len(data) - table) // 2, len(data)]
    final = _grow(tmp_path / "train.log", data, cuts, reads)
    assert all(len(t.rows) == 5 for t in final.val_tables)


def test_cut_inside_a_traceback_record(tmp_path: Path, reads) -> None:
    """An ERROR record's continuation lines arrive after the first read: the event grows, the crash is kept."""
    data = (RUNS / "e2_crashed" / "train.log").read_bytes()
    start = data.index(b"Traceback (most recent call last)")
    cuts = [start + 10, data.index(b"\n", start + 40) + 1, len(data)]
    final = _grow(tmp_path / "train.log", data, cuts, reads)
    assert final.segments[-1].ended == "crashed"
    assert any(e.kind == "traceback" for e in final.events)


def test_generated_log_grown_across_many_blocks(tmp_path: Path, reads, monkeypatch) -> None:
    monkeypatch.setattr(R, "BLOCK_BYTES", 65536 + 4093)  # many block boundaries in every appended part
    source = tmp_path / "source.log"
    write_big_log(source, 2_500_000, iters_per_epoch=900, attempts=3, mixed=True)
    data = source.read_bytes()
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(data)), 6)) + [len(data)]
    final = _grow(tmp_path / "train.log", data, cuts, reads)
    assert len(final.segments) == 3 and len(final.val_tables) > 5


def test_small_appends_read_only_themselves(tmp_path: Path, reads) -> None:
    """Appending a few lines to a long log reads those lines, not the attempt they belong to."""
    path = tmp_path / "train.log"
    write_big_log(path, 3_000_000, iters_per_epoch=2000, mixed=True)
    data = path.read_bytes()
    half = data.index(b"\n", len(data) - 5000) + 1
    cuts = [half, half + 700, half + 2000, len(data)]
    final = _grow(path, data, cuts, reads)
    assert final.read_from_offset > len(data) - 4000


def test_shrunk_file_is_read_again_from_the_start(tmp_path: Path, reads) -> None:
    path = tmp_path / "train.log"
    data = (RUNS / "e2_rollback" / "train.log").read_bytes()
    path.write_bytes(data)
    previous = R.read_train_log(path, "train.log")
    with path.open("r+b") as fh:  # a fresh launch truncates (mode w: same inode)
        fh.truncate(len(data) // 3)
    reads.clear()
    again = R.read_train_log(path, "train.log", previous=previous)
    assert reads == [(0, len(data) // 3)] and again.read_from_offset == 0
    _equal_to_full_read(again, path)


def test_rewritten_in_place_and_grown_past_the_old_end_is_read_again(tmp_path: Path, reads) -> None:
    """Same inode, longer than before, but the bytes before the old end changed: not a continuation."""
    path = tmp_path / "train.log"
    first = (RUNS / "e2_clean" / "train.log").read_bytes()
    second = (RUNS / "e2_rollback" / "train.log").read_bytes()
    assert len(second) > len(first)
    path.write_bytes(first)
    previous = R.read_train_log(path, "train.log")
    inode = path.stat().st_ino
    with path.open("r+b") as fh:
        fh.truncate(0)
        fh.write(second)
    assert path.stat().st_ino == inode
    reads.clear()
    again = R.read_train_log(path, "train.log", previous=previous)
    assert reads == [(0, len(second))] and again.read_from_offset == 0
    _equal_to_full_read(again, path)


def test_replaced_file_is_read_again(tmp_path: Path, reads) -> None:
    """Another inode (written beside and renamed over) is another file, even when it starts the same."""
    path = tmp_path / "train.log"
    data = (RUNS / "e2_rollback" / "train.log").read_bytes()
    path.write_bytes(data[: len(data) // 2])
    previous = R.read_train_log(path, "train.log")
    other = tmp_path / "new.log"
    other.write_bytes(data)
    os.replace(other, path)
    reads.clear()
    again = R.read_train_log(path, "train.log", previous=previous)
    assert reads == [(0, len(data))] and again.read_from_offset == 0
    _equal_to_full_read(again, path)


def test_read_cache_extends_from_the_kept_state(tmp_path: Path, reads) -> None:
    path = tmp_path / "train.log"
    data = (RUNS / "e2_requeue_failed" / "train.log").read_bytes()
    cut = len(data) // 2 + 3
    path.write_bytes(data[:cut])
    cache = ReadCache(disk=None)
    first = cache.train_log(path, "train.log").value
    with path.open("ab") as fh:
        fh.write(data[cut:])
    reads.clear()
    grown = cache.train_log(path, "train.log").value
    assert cache.incremental_reads == 1 and reads == [(first.end_offset, len(data))]
    _equal_to_full_read(grown, path)


def _snapshot(result) -> list[tuple[str, bytes, bytes, bytes]]:
    return [(s.tag, s.steps.tobytes(), s.values.tobytes(), s.wall_times_s.tobytes()) for s in result.series] + [
        ("index", result.index.step_steps.tobytes(), result.index.step_offsets.tobytes(),
         result.index.step_attempts.tobytes())]


def test_extensions_write_after_earlier_points_and_never_change_earlier_results(tmp_path: Path) -> None:
    """An extension appends in the room after the earlier columns (no copy of them), so a later refresh of a
    big log costs what was appended; earlier results keep their arrays, and extending the same result
    twice gives two correct results."""
    import numpy as np

    source = tmp_path / "source.log"
    write_big_log(source, 1_500_000, iters_per_epoch=700, attempts=2, mixed=True)
    data = source.read_bytes()
    path = tmp_path / "train.log"
    cuts = [len(data) - 30_000, len(data) - 15_000 + 7, len(data)]  # appends that fit in the room (1/16)
    path.write_bytes(data[:cuts[0]])
    first = R.read_train_log(path, "train.log")
    before = _snapshot(first)
    with path.open("ab") as fh:
        fh.write(data[cuts[0]:cuts[1]])
    second = R.read_train_log(path, "train.log", previous=first)
    again = R.read_train_log(path, "train.log", previous=first)  # the same earlier result extended twice
    with path.open("ab") as fh:
        fh.write(data[cuts[1]:])
    third = R.read_train_log(path, "train.log", previous=second)
    assert _snapshot(first) == before
    assert _snapshot(again) == _snapshot(second)
    live = [(b, c) for b, c in zip(second.series, third.series)  # Train: columns (evaluations are a few points)
            if b.attempt == 2 and len(c) > len(b) and b.tag.startswith(("train_batch/", "time/", "params/"))]
    assert len(live) >= 5 and all(np.shares_memory(b.values, c.values) for b, c in live)
    assert np.shares_memory(second.index.step_steps, third.index.step_steps)
    assert not any(np.shares_memory(a.values, b.values) for a, b in zip(again.series, third.series)
                   if a.attempt == 2 and len(b) > len(a))  # the second extension of `first` had to copy
    _equal_to_full_read(third, path)
    path.write_bytes(data[:cuts[1]])
    _equal_to_full_read(second, path)
    _equal_to_full_read(again, path)
    assert all(not s.values.flags.writeable and not s.steps.flags.writeable  # views of shared buffers: read-only
               for s in third.series if s.tag.startswith(("train_batch/", "time/", "params/")))
