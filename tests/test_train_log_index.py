"""The compact train.log index (issue 9): attempt start lines and the line of every Train: step."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pimm_inspect.session.store.cache import ReadCache
from pimm_inspect.sources.train_log._index import IndexBuilder
from pimm_inspect.sources.train_log.reader import read_train_log
from tests.test_train_log import PimmLog, train_line, write_requeued_run
from tests.train_log_support import write_big_log


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def _offset_of_line(path: Path, line_no: int) -> int:
    data = path.read_bytes()
    pos = 0
    for _ in range(line_no - 1):
        pos = data.index(b"\n", pos) + 1
    return pos


def test_index_of_a_requeued_run(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_requeued_run(path)
    r = read_train_log(path, "train.log")
    idx = r.index
    lines = _lines(path)
    # attempt starts: the two "=> Loading config" lines, both followed by training
    assert idx.start_kinds == ("config", "config")
    assert idx.start_line_nos.tolist() == [s.start_line for s in r.segments]
    assert idx.start_offsets.tolist() == [s.start_offset for s in r.segments]
    assert idx.start_trains.tolist() == [True, True] and idx.start_attempts.tolist() == [1, 2]
    for line_no, offset in zip(idx.start_line_nos.tolist(), idx.start_offsets.tolist()):
        assert lines[line_no - 1].endswith(b"=> Loading config ...")
        assert path.read_bytes()[offset:].startswith(lines[line_no - 1])
    # steps: every Train: line, with its line number and offset, in file order
    assert idx.step_steps.tolist() == list(range(1, 76)) + list(range(51, 101))
    assert idx.step_attempts.tolist() == [1] * 75 + [2] * 50
    data = path.read_bytes()
    for step, line_no, offset in zip(idx.step_steps.tolist(), idx.step_line_nos.tolist(), idx.step_offsets.tolist()):
        line = lines[line_no - 1]
        assert data[offset:offset + len(line)] == line and b"Train: [" in line
        epoch, it = (step - 1) // 25 + 1, (step - 1) % 25 + 1
        assert f"Train: [{epoch}/4][{it}/25]".encode() in line
    assert idx.line_of_step(60, attempt=2) == (int(idx.step_line_nos[75 + 9]), int(idx.step_offsets[75 + 9]))
    assert idx.line_of_step(60)[0] < idx.line_of_step(60, attempt=2)[0]
    assert idx.line_of_step(101) is None
    assert not idx.step_steps.flags.writeable
    # a small log: offsets as uint32, attempts as uint8, line numbers as runs (the values above are exact)
    assert idx.step_offsets.dtype == np.uint32 and idx.step_attempts.dtype == np.uint8
    assert idx.step_line_runs.shape[0] < 10  # a run per stretch of Train: lines, not a number per line
    assert [idx.line_no(k) for k in range(idx.step_steps.size)] == idx.step_line_nos.tolist()


def test_header_without_training_pid_change_and_submitit_marker(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    log = PimmLog(path, e0=True, pid=100)
    log.info("=> Loading config ...")
    log.info(train_line(1, 1, 1, 2, 1.0))
    log.close()
    log = PimmLog(path, e0=True, pid=200)  # crashed before training
    log.info("=> Loading config ...")
    log.close()
    with path.open("a") as fh:
        fh.write("pimm submitit attempt 2/3: run-a\n")
    log = PimmLog(path, e0=True, pid=300)  # E0 process without a header line
    log.info(train_line(1, 1, 2, 2, 1.0))
    log.close()
    r = read_train_log(path, "train.log")
    idx = r.index
    assert idx.start_kinds == ("config", "config", "submitit", "pid")
    assert idx.start_trains.tolist() == [True, False, False, True]
    assert idx.start_attempts.tolist() == [1, 2, 0, 3]
    assert idx.start_line_nos.tolist() == [1, 3, 4, 5]
    assert idx.step_steps.tolist() == [1, 2] and idx.step_line_nos.tolist() == [2, 5]


def test_refresh_through_the_cache_keeps_the_index_whole(tmp_path: Path) -> None:
    full_path = tmp_path / "full.log"
    write_big_log(full_path, 3_000_000, iters_per_epoch=700, attempts=3)
    data = full_path.read_bytes()
    path = tmp_path / "train.log"
    path.write_bytes(data[:len(data) * 2 // 3 + 17])  # ends mid-line, inside attempt 2 or 3
    cache = ReadCache()
    first = cache.train_log(path, "train.log").value
    with path.open("ab") as fh:
        fh.write(data[path.stat().st_size:])
    again = cache.train_log(path, "train.log").value
    assert cache.incremental_reads == 1
    full = read_train_log(full_path, "train.log")
    for field in ("start_line_nos", "start_offsets", "start_trains", "start_attempts", "step_steps",
                  "step_line_nos", "step_offsets", "step_attempts"):
        assert np.array_equal(getattr(again.index, field), getattr(full.index, field)), field
    assert again.index.start_kinds == full.index.start_kinds
    assert first.index.step_steps.size < full.index.step_steps.size


def test_one_attempt_index_holds_the_series_steps_not_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_big_log(path, 2_000_000, iters_per_epoch=700, attempts=1, mixed=True)
    r = read_train_log(path, "train.log")
    idx = r.index
    loss = next(s for s in r.series if s.tag == "train_batch/loss")
    assert idx.step_steps.size == loss.steps.size > 5000
    assert idx.step_steps is loss.steps  # one array, not a second 8 bytes per line
    # and every row still points at its own Train: line
    data = path.read_bytes()
    for k in (0, 1, idx.step_steps.size // 2, idx.step_steps.size - 1):
        offset, line_no = int(idx.step_offsets[k]), int(idx.step_line_nos[k])
        assert data.count(b"\n", 0, offset) == line_no - 1
        assert b"Train: [" in data[offset:data.index(b"\n", offset)]


def test_positions_past_4_gib_widen_the_whole_column() -> None:
    builder = IndexBuilder()
    steps = np.arange(1, 4, dtype=np.int64)
    builder.add_chunk(1, steps, np.array([5, 6, 7], dtype=np.int64), np.array([10, 200, 300], dtype=np.int64))
    far = np.array([(1 << 32) - 1, 1 << 32, (1 << 40) + 3], dtype=np.int64)
    builder.add_chunk(1, steps + 3, far - 1000, far)
    builder.add_chunk(300, steps + 6, far + 7, far + 100)  # attempt 300: past uint8
    idx = builder.freeze(())
    assert idx.step_offsets.dtype == np.int64
    assert idx.step_offsets.tolist() == [10, 200, 300, *far.tolist(), *(far + 100).tolist()]
    assert idx.step_line_nos.tolist() == [5, 6, 7, *(far - 1000).tolist(), *(far + 7).tolist()]
    assert idx.step_attempts.dtype == np.uint16 and idx.step_attempts.tolist() == [1] * 6 + [300] * 3
    assert idx.step_steps.tolist() == list(range(1, 10))
