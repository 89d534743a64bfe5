"""A big train.log read with the scanning child (``_ahead``) gives exactly the one-process result.

The child is used for files of ``MIN_BYTES`` and more (64 MB); here the bound is lowered and blocks made small, so
generated logs of a few MB cross many block boundaries with the child scanning ahead. Compared: every field the
equivalence tests compare, plus the line index, the state kept to extend the result and the parent's own scans
(the child's must have been used).
"""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

import pimm_inspect.sources.train_log._ahead as A
import pimm_inspect.sources.train_log._arena as AR
import pimm_inspect.sources.train_log._index as I
import pimm_inspect.sources.train_log.reader as R
from pimm_inspect.sources.train_log.reader import read_train_log
from tests.test_train_log_equivalence import _mixed_big_log, assert_same
from tests.train_log_support import write_big_log

BLOCK = 96 * 1024 + 17


def _index_bits(result) -> list[bytes]:
    index = result.index
    return [np.ascontiguousarray(a).tobytes() for a in (
        index.step_steps, index.step_line_runs, index.step_offsets, index.step_attempts, index.start_line_nos,
        index.start_offsets)]


def _read(path: Path, monkeypatch, ahead: bool, **kw):
    monkeypatch.setattr(A, "MIN_BYTES", 0 if ahead else 1 << 60)
    return read_train_log(path, "train.log", **kw)


def _same(path: Path, monkeypatch, **kw) -> tuple[object, int]:
    """The result with the child (checked against the one without) and how many blocks the parent scanned itself.
    Both write the template lines' columns into buffers (``_arena``), as a read of a big log does."""
    monkeypatch.setattr(R, "BLOCK_BYTES", BLOCK)
    monkeypatch.setattr(AR, "MIN_ROWS", 1)
    alone = _read(path, monkeypatch, False, **kw)
    scans = []
    scan = I.BlockContext._scan
    monkeypatch.setattr(I.BlockContext, "_scan", lambda self, t: scans.append(1) or scan(self, t))
    shared = _read(path, monkeypatch, True, **kw)
    assert_same(shared, alone)
    assert _index_bits(shared) == _index_bits(alone)
    assert repr(shared.resume) == repr(alone.resume) and shared.long_lines == alone.long_lines
    return shared, len(scans)


@pytest.mark.parametrize("seed", [1, 2])
def test_mixed_log_with_the_child_is_the_same(tmp_path: Path, monkeypatch, seed: int) -> None:
    path = tmp_path / "train.log"
    _mixed_big_log(path, seed)  # three attempts, odd Train: lines spliced in
    with path.open("ab") as fh:  # a line past the length cap, then a last line still being written
        fh.write(b"\n[2026-07-14 14:31:02,417 INFO logging.py line 332] Train: " + b"x" * (1 << 21) + b"\n")
        fh.write(b"[2026-07-14 14:31:02,417 INFO logging.py line 332] Train: [9/9][1/997] loss: 1")
    result, scans = _same(path, monkeypatch)
    blocks = path.stat().st_size // BLOCK
    assert blocks > 20 and scans < blocks // 4  # the child's scans were used
    assert {"file.truncated", "file.long-lines"} <= {f.code for f in result.findings}  # the child's line stats
    last = result.segments[-1]  # a read from an attempt's start, as a refresh does
    _same(path, monkeypatch, start_offset=last.start_offset, first_attempt=last.index, first_line_no=last.start_line)


def test_template_change_midway_is_the_same(tmp_path: Path, monkeypatch) -> None:
    """The second half's lines have another key set: the child's template follows them, the parent's attempt keeps
    its own, so those scans are not used (the parent scans itself) and nothing changes."""
    path = tmp_path / "train.log"
    write_big_log(path, 3_000_000, iters_per_epoch=997, mixed=True)
    data = path.read_bytes()
    half = data.index(b"\n", len(data) // 2) + 1
    path.write_bytes(data[:half] + data[half:].replace(b" Lr: ", b" lr2: "))
    result, scans = _same(path, monkeypatch)
    assert scans > 0
    assert any(s.tag == "train_batch/lr2" for s in result.series)


def test_extension_with_the_child_is_the_same(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "train.log"
    write_big_log(path, 1_500_000, iters_per_epoch=997, mixed=True)
    monkeypatch.setattr(R, "BLOCK_BYTES", BLOCK)
    first = _read(path, monkeypatch, False)
    write_big_log(path, 1_500_000, iters_per_epoch=997, mixed=True, append=True)
    grown = _same(path, monkeypatch, previous=first)[0]
    assert grown.read_from_offset == first.end_offset


def test_a_failing_child_leaves_the_read_to_the_parent(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "train.log"
    write_big_log(path, 1_000_000, iters_per_epoch=997)
    monkeypatch.setattr(R, "BLOCK_BYTES", BLOCK)
    alone = _read(path, monkeypatch, False)
    original = A.BlockContext

    class Broken(original):  # the child's third block fails
        made = 0

        def __init__(self, *args, **kwargs) -> None:
            Broken.made += 1
            if Broken.made == 3:
                raise RuntimeError("boom")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(A, "BlockContext", Broken)
    assert_same(_read(path, monkeypatch, True), alone)


def test_a_read_error_in_the_child_is_the_parents_finding(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "train.log"
    write_big_log(path, 1_000_000, iters_per_epoch=997)
    blocks = A.blocks

    def failing(*args, **kwargs):
        for i, item in enumerate(blocks(*args, **kwargs)):
            if i == 4:
                raise OSError(errno.EIO, "Input/output error")
            yield item

    monkeypatch.setattr(A, "blocks", failing)
    result = _same(path, monkeypatch)[0]
    assert [f.code for f in result.findings][:1] == ["file.unreadable"]
    assert result.end_offset > 0


def test_the_childs_reads_leave_the_shared_file_offset_alone(tmp_path: Path) -> None:
    """The child reads at its own positions: the descriptor it shares with the reader's file object keeps its offset
    (the reader then seeks and reads the file's last bytes, which its buffered object may partly hold)."""
    import os

    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 100)
    with path.open("rb") as fh:
        fh.seek(10)
        fh.read(5)
        before = os.lseek(fh.fileno(), 0, os.SEEK_CUR)
        reads = A._PositionalReads(fh.fileno())
        reads.seek(300)
        assert reads.read(4) == bytes([44, 45, 46, 47]) and reads.read(2) == bytes([48, 49])
        assert os.lseek(fh.fileno(), 0, os.SEEK_CUR) == before and fh.read(3) == bytes([15, 16, 17])
