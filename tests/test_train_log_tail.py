"""read_train_log_tail: a run's state from the end of its train.log, in constant time whatever the size."""

from __future__ import annotations

from pathlib import Path

from pimm_inspect.sources.train_log.reader import read_train_log, read_train_log_tail
from tests.test_train_log import write_requeued_run
from tests.train_log_support import write_big_log

CRASH = (b"[2026-07-20 10:00:00,000 ERROR events.py line 80] Traceback (most recent call last):\n"
         b"  File \"pimm/engines/train.py\", line 200, in train\nRuntimeError: NCCL timeout\n")


def test_tail_agrees_with_full_read_on_a_generated_log(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    facts = write_big_log(path, 40_000_000, iters_per_epoch=3000, attempts=2)
    full = read_train_log(path, "train.log")
    tail = read_train_log_tail(path)
    last = full.segments[-1]
    assert tail.size_bytes == path.stat().st_size and tail.tail_offset > path.stat().st_size - 300_000
    assert tail.last_step == last.last_step == facts["steps"]
    assert (tail.max_epoch, tail.iters_per_epoch) == (last.max_epoch, last.iters_per_epoch)
    assert tail.last_timestamp == last.ended_at and tail.last_line_complete
    assert tail.attempts_in_tail == 0 and tail.attempt_start_offset is None  # attempt 2 began long before
    assert tail.ended is None and tail.findings == ()


def test_tail_sees_the_current_attempt_crash_and_half_line(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    write_requeued_run(path)
    full = read_train_log(path, "train.log")
    tail = read_train_log_tail(path, tail_bytes=1 << 20)
    assert tail.tail_offset == 0 and tail.attempts_in_tail == 2
    assert tail.attempt_start_offset == full.segments[1].start_offset
    assert tail.attempt_started_at == full.segments[1].started_at
    assert (tail.last_step, tail.ended) == (100, "completed")
    with path.open("ab") as fh:
        fh.write(CRASH + b"[2026-07-20 10:00:01,000 INFO train.py line 251] => Loading con")
    tail = read_train_log_tail(path, tail_bytes=1 << 20)
    assert not tail.last_line_complete
    assert (tail.ended, tail.end_detail, tail.last_step) == ("crashed", "RuntimeError: NCCL timeout", 100)
    assert tail.last_timestamp == "2026-07-20 10:00:00,000"


def test_tail_of_a_huge_sparse_log_reads_only_its_end(tmp_path: Path, monkeypatch) -> None:
    """8 GB (a hole, never read) followed by a real attempt: only the end is read (counted, not timed: the speed
    lives in bench/bench_train_log.py)."""
    from pimm_inspect.sources.train_log import _tail

    read_at: list[tuple[int, int]] = []
    real_open = _tail.open_regular

    class Counted:
        """The tail's file, each read noted with where it began."""

        def __init__(self, fh) -> None:
            self.fh = fh

        def read(self, n: int = -1) -> bytes:
            at = self.fh.tell()
            data = self.fh.read(n)
            read_at.append((at, len(data)))
            return data

        def __getattr__(self, name: str):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.fh.close()

    path = tmp_path / "train.log"
    head = tmp_path / "head.log"
    write_big_log(head, 600_000, iters_per_epoch=500)
    body = head.read_bytes()
    with path.open("wb") as fh:
        fh.truncate(8 << 30)
        fh.seek(8 << 30)
        fh.write(b"\n" + body)
    monkeypatch.setattr(_tail, "open_regular", lambda *args: Counted(real_open(*args)))
    tail = read_train_log_tail(path)
    monkeypatch.undo()
    assert read_at and min(at for at, _n in read_at) >= (8 << 30) + 1 + len(body) - _tail.TAIL_BYTES
    assert sum(n for _at, n in read_at) <= 2 * _tail.TAIL_BYTES
    assert tail.size_bytes == (8 << 30) + 1 + len(body)
    assert tail.last_step == read_train_log(head, "train.log").segments[-1].last_step
    assert tail.attempts_in_tail == 0 and tail.last_line_complete


def test_tail_of_missing_and_empty_files(tmp_path: Path) -> None:
    missing = read_train_log_tail(tmp_path / "nope.log")
    assert [f.code for f in missing.findings] == ["file.unreadable"] and missing.last_step is None
    empty = tmp_path / "train.log"
    empty.write_bytes(b"")
    tail = read_train_log_tail(empty)
    assert (tail.size_bytes, tail.last_step, tail.ended, tail.last_line_complete) == (0, None, None, True)
