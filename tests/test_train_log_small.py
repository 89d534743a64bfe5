"""The fixed costs of reading a small train.log went down without changing a value.

A small block (``_train_lines.small_block_hits``) reads its template lines with the template regex instead of the
numpy scan: both paths, forced one way or the other, give the same series, segments, events, tables, line index and
resume state as the frozen reference reader. Timestamps converted one by one equal the matrix's; a Config: dump found
with one read equals the line-by-line read it replaces; a small column kept as it is stays read-only and a refresh
after it still equals a full read; the non-finite check's sum skips only series without nan/inf.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest

from pimm_inspect.model import make_series
from pimm_inspect.sources.train_log import _patterns as P
from pimm_inspect.sources.train_log import _train_lines as TL
from pimm_inspect.sources.train_log import config_dump as CD
from pimm_inspect.sources.train_log import reader as R
from pimm_inspect.sources.train_log._findings import non_finite_findings
from tests import test_train_log as T
from tests.test_train_log_equivalence import FIXTURE_LOGS, assert_same
from tests.train_log_reference import train_log as reference
from tests.train_log_support import write_big_log


def _index_bits(result) -> list[tuple[str, str, bytes]]:
    idx = result.index
    out = []
    for name in ("start_line_nos", "start_offsets", "start_trains", "start_attempts", "step_steps", "step_line_runs",
                 "step_offsets", "step_attempts"):
        a = getattr(idx, name)
        out.append((name, a.dtype.str, np.ascontiguousarray(a).tobytes()))
    return out + [("kinds", "", repr(idx.start_kinds).encode())]


def assert_identical(a, b) -> None:
    """Every value of two results of one file: series bits, records, the line index and the resume state."""
    assert_same(a, b)
    assert _index_bits(a) == _index_bits(b)
    assert a.resume == b.resume
    assert a.long_lines == b.long_lines


def _read(path: Path, small: str, monkeypatch, **kw):
    """Read with every block small enough (``always``), none (``never``) or the reader's own choice (``auto``)."""
    with monkeypatch.context() as m:
        if small == "always":
            m.setattr(TL, "SMALL_BLOCK_BYTES", 1 << 40)
            m.setattr(TL, "SMALL_BLOCK_HITS", 1 << 40)
        elif small == "never":
            m.setattr(TL, "SMALL_BLOCK_HITS", -1)
        return R.read_train_log(path, "train.log", **kw)


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: p.parent.name)
def test_fixture_logs_read_alike_by_both_paths(path: Path, monkeypatch) -> None:
    auto = _read(path, "auto", monkeypatch)
    assert auto.line_count > 0
    assert_identical(auto, _read(path, "never", monkeypatch))
    assert_identical(auto, _read(path, "always", monkeypatch))
    assert_same(auto, reference.read_train_log(path, "train.log"))
    for seg in auto.segments:  # every refresh point, too
        kw = dict(start_offset=seg.start_offset, first_attempt=seg.index, first_line_no=seg.start_line)
        assert_identical(_read(path, "always", monkeypatch, **kw), _read(path, "never", monkeypatch, **kw))


def test_small_fixture_logs_take_the_small_path(monkeypatch) -> None:
    """A committed fixture log with at most ``SMALL_BLOCK_HITS`` Train: lines is one small block: the numpy scan is
    never asked; the one with more (rw_pointcept_log, 125) takes it."""
    scanned: list[str] = []
    real = R.BlockContext.fast_rows
    name = ""

    def spy(self, template):
        scanned.append(name)
        return real(self, template)

    monkeypatch.setattr(R.BlockContext, "fast_rows", spy)
    lines = 0
    for path in FIXTURE_LOGS:
        name = path.parent.name
        result = R.read_train_log(path, "train.log")
        lines += sum(s.train_lines for s in result.segments)
    many = {p.parent.name for p in FIXTURE_LOGS if p.read_bytes().count(b"Train: [") > TL.SMALL_BLOCK_HITS}
    assert lines > 300 and many == {"rw_pointcept_log"} and set(scanned) == many


@pytest.mark.parametrize("seed", [3, 4])
def test_generated_logs_read_alike_by_both_paths(tmp_path: Path, seed: int, monkeypatch) -> None:
    """Several attempts, Val tables, warnings, odd Train: lines; small blocks so both paths meet many block ends."""
    path = tmp_path / "train.log"
    write_big_log(path, 400_000, iters_per_epoch=97 + seed, attempts=3, mixed=True)
    lines = path.read_bytes().split(b"\n")
    rng = random.Random(seed)
    prefix = b"[2026-07-14 14:31:02,417 INFO logging.py line 332] "
    odd = [prefix + b"Train: [1/9][3/97] loss: nan Lr: 0.1", prefix + b"mem: 3.2 Train: [1/9][6/97] loss: 0.5 Lr: 0.1",
           b"[2026-07-14 14:31:02,417 WARNING logging.py line 332] Train: [1/9][12/97] loss: 1.0 Lr: 0.1"]
    for _ in range(12):
        lines.insert(rng.randrange(10, len(lines) - 2), rng.choice(odd))
    path.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(R, "BLOCK_BYTES", 8192 + 97 * seed)
    monkeypatch.setattr(reference, "BLOCK_BYTES", 8192 + 97 * seed)
    auto = _read(path, "auto", monkeypatch)
    assert sum(s.train_lines for s in auto.segments) > 1000
    assert_identical(auto, _read(path, "always", monkeypatch))
    assert_identical(auto, _read(path, "never", monkeypatch))
    assert_same(auto, reference.read_train_log(path, "train.log"))


def test_unit_test_logs_read_alike_by_both_paths(tmp_path: Path, monkeypatch) -> None:
    for writer in (T.write_fresh_run, T.write_requeued_run):
        path = tmp_path / f"{writer.__name__}.log"
        writer(path)
        assert_identical(_read(path, "always", monkeypatch), _read(path, "never", monkeypatch))


def test_refresh_after_a_small_log_equals_a_full_read(tmp_path: Path) -> None:
    """Columns of a small read are kept as they were made (read-only, no room after them): an extension copies them
    and still equals a full read, and the earlier result is untouched."""
    source = tmp_path / "source.log"
    write_big_log(source, 60_000, iters_per_epoch=50, attempts=2, mixed=True)
    data = source.read_bytes()
    path = tmp_path / "train.log"
    cut = data.rfind(b"\n", 0, len(data) * 2 // 3) + 1
    path.write_bytes(data[:cut])
    first = R.read_train_log(path, "train.log")
    columns = [s for s in first.series if s.tag.startswith(("train_batch/", "time/", "params/"))]
    assert len(columns) >= 5 and all(not s.values.flags.writeable and not s.steps.flags.writeable for s in columns)
    before = [(s.tag, s.steps.tobytes(), s.values.tobytes(), s.wall_times_s.tobytes()) for s in first.series]
    with path.open("ab") as fh:
        fh.write(data[cut:])
    grown = R.read_train_log(path, "train.log", previous=first)
    assert grown.read_from_offset == cut
    assert_identical(grown, R.read_train_log(path, "train.log"))
    assert before == [(s.tag, s.steps.tobytes(), s.values.tobytes(), s.wall_times_s.tobytes()) for s in first.series]


def _random_stamp(rng: random.Random) -> bytes:
    y = rng.choice([1, 399, 400, 1600, 1899, 1900, 1970, 1999, 2000, 2024, 2026, 2100, 9999, rng.randrange(1, 10000)])
    return b"%04d-%02d-%02d %02d:%02d:%02d,%03d" % (y, rng.randrange(1, 13), rng.randrange(1, 32), rng.randrange(24),
                                                  rng.randrange(60), rng.randrange(60), rng.randrange(1000))


def test_timestamps_one_by_one_equal_the_matrix() -> None:
    rng = random.Random(7)
    stamps = [_random_stamp(rng) for _ in range(4000)] + [b"2024-02-29 23:59:59,999", b"0000-01-01 00:00:00,000",
                                                         b"2026-03-01 00:00:00,001", b"9999-12-31 23:59:59,999"]
    matrix = P.timestamps_matrix(np.array(stamps, dtype="S23").view(np.uint8).reshape(-1, 23))
    for i in range(0, len(stamps), P._FEW_STAMPS):
        few = P.timestamps(tuple(stamps[i:i + P._FEW_STAMPS]))
        assert few.dtype == np.float64 and few.tobytes() == matrix[i:i + P._FEW_STAMPS].tobytes()
    assert P.timestamps(()).shape == (0,)
    many = P.timestamps(tuple(stamps[:P._FEW_STAMPS + 1]))
    assert many.tobytes() == matrix[:P._FEW_STAMPS + 1].tobytes()
    assert P.timestamps((b"2026-07-15 09:00:12,903",))[0] == P.timestamp("2026-07-15 09:00:12,903")


def _dump_by_lines(fh: BinaryIO, offset: int) -> tuple[str | None, int | None, bool]:
    """The dump read line by line (readline pieces of 64 KiB), as ``config_dump._dump_at`` always did."""
    fh.seek(offset)
    for index in range(CD.MAX_HEAD_LINES):
        line = fh.readline(64 * 1024)
        if not line:
            return None, None, False
        if index and line.startswith(b"[") and b"=> Loading config" in line:
            return None, None, False
        if CD._CONFIG_LINE.search(line.rstrip(b"\r\n")):
            break
    else:
        return None, None, False
    body, size, cut = [], 0, False
    while True:
        line = fh.readline(64 * 1024)
        if not line or CD._PREFIX.match(line):
            break
        size += len(line)
        if size > CD.MAX_DUMP_BYTES:
            cut = True
            break
        body.append(line)
    return b"".join(body).decode("utf-8", errors="replace"), index, cut


_HEAD = b"[2026-07-15 09:00:09,501 INFO train.py line 251] => Loading config ...\n" \
        b"[2026-07-15 09:00:09,503 INFO train.py line 254] Config:\n"
_NEXT = b"[2026-07-15 09:00:10,703 INFO train.py line 255] => Building model ...\n"


def _dump_cases() -> list[tuple[str, bytes]]:
    body = b"seed = 1234\nmodel = dict(\n    type='X',\n    names=[\n        'a',\n        'b'\n    ])\n"
    exact = b"x = '" + b"a" * (64 * 1024 - 8) + b"'\n"  # the body is exactly one read's length
    return [
        ("at a record", _HEAD + body + _NEXT),
        ("at the end of the file", _HEAD + body),
        ("no final newline", _HEAD + body.rstrip(b"\n")),
        ("empty", _HEAD + _NEXT),
        ("empty at the end", _HEAD),
        ("crlf", _HEAD.replace(b"\n", b"\r\n") + body.replace(b"\n", b"\r\n") + _NEXT),
        ("bad utf-8", _HEAD + b"name = '\xff\xfe'\n" + _NEXT),
        ("prefix-like text inside", _HEAD + b"x = '[2026-07-15 09:00:10'\n  [2026-07-15 09:00:10\n" + body + _NEXT),
        ("one read exactly, then a record", _HEAD + exact + _NEXT),
        ("one read exactly, at the end", _HEAD + exact),
        ("one read and a byte", _HEAD + exact + b"\n" + _NEXT),
        ("a line over 64 KiB", _HEAD + b"x = '" + b"b" * 70_000 + b"'\n" + b"[2026-07-15 09:00:1" + _NEXT),
        ("a long line whose second piece looks like a record",
         _HEAD + b"x = '" + b"c" * (64 * 1024 - 5) + _NEXT + body + _NEXT),
        ("over 1 MiB (cut)", _HEAD + b"y = 1\n" * 200_000 + _NEXT),
        ("just under 1 MiB", _HEAD + b"z = 1\n" * (CD.MAX_DUMP_BYTES // 6) + _NEXT),
        ("no Config: line", _HEAD.replace(b"Config:", b"Conf:") + body + _NEXT),
        ("the next attempt first", _HEAD.split(b"\n")[0] + b"\n" + _HEAD + body),
    ]


@pytest.mark.parametrize("name,data", _dump_cases(), ids=[c[0] for c in _dump_cases()])
def test_config_dump_found_with_one_read_equals_the_line_by_line_read(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(b"[2026-07-15 09:00:00,000 INFO train.py line 1] before\n" + data)
    with path.open("rb") as fh:
        for offset in (0, 55, 56):
            assert CD._dump_at(fh, offset) == _dump_by_lines(fh, offset)
    with path.open("rb") as fh:
        text, _, cut = CD._dump_at(fh, 55)
    if name == "over 1 MiB (cut)":
        assert cut and text is not None and len(text) <= CD.MAX_DUMP_BYTES
    elif name == "at a record":
        assert text is not None and text.startswith("seed = 1234\n") and text.endswith("])\n") and not cut


def test_non_finite_check_reports_only_nan_and_inf() -> None:
    def series(tag: str, values: list[float]):
        return make_series(tag, np.arange(1, len(values) + 1), np.asarray(values), None, "train.log", 1)

    huge = series("train_batch/huge", [1e308, 1e308, -1.5])  # finite values whose sum is inf
    plain = series("train_batch/loss", [0.5, 0.25])
    bad = series("train_batch/bad", [0.5, math.nan, 1.0, math.inf, -math.inf])
    found = non_finite_findings([huge, plain, bad], "train.log")
    assert [(f.code, f.steps) for f in found] == [("metrics.non-finite", (2, 5))]
    assert "train_batch/bad is nan/inf at 3 logged step(s)" in found[0].message
    assert non_finite_findings([huge, plain], "train.log") == []
