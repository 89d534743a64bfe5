"""The streaming train.log reader gives exactly what the reader before it gave (tests/train_log_reference).

Compared field by field: series (tags, attempts, steps, values and wall times bit for bit,
NaN included), segments, events, per-class tables, best values, era, PIDs, offsets, line
counts and findings. Inputs: every committed fixture log, the logs the unit tests write,
damaged variants, and generated big logs with several attempts and odd lines mixed in.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from pimm_inspect.sources.train_log.reader import BLOCK_BYTES, read_train_log
from tests import test_train_log as T
from tests.train_log_reference import train_log as reference
from tests.train_log_support import write_big_log

REPO = Path(__file__).resolve().parent.parent
FIXTURE_LOGS = sorted((REPO / "fixtures" / "runs").glob("*/train.log"))


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def assert_same(new, old) -> None:
    """Every field the old reader had is identical in the new result."""
    assert len(new.series) == len(old.series), ([s.tag for s in new.series], [s.tag for s in old.series])
    for a, b in zip(new.series, old.series):
        assert (a.tag, a.attempt, a.source) == (b.tag, b.attempt, b.source)
        assert a.steps.dtype == b.steps.dtype and a.values.dtype == b.values.dtype
        assert _bits(a.steps) == _bits(b.steps), a.tag
        assert _bits(a.values) == _bits(b.values), a.tag
        assert _bits(a.wall_times_s) == _bits(b.wall_times_s), a.tag
    assert repr(new.segments) == repr(old.segments)
    assert repr(new.events) == repr(old.events)
    assert repr(new.val_tables) == repr(old.val_tables)
    assert repr(new.best) == repr(old.best)
    assert (new.era_hint, new.pids, new.end_offset, new.line_count) == (old.era_hint, old.pids, old.end_offset,
                                                                        old.line_count)
    assert repr(new.findings) == repr(old.findings)


def both(path: Path, **kw):
    return read_train_log(path, "train.log", **kw), reference.read_train_log(path, "train.log", **kw)


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: p.parent.name)
def test_fixture_logs_read_the_same(path: Path) -> None:
    new, old = both(path)
    assert_same(new, old)
    for seg in old.segments:  # and every refresh point
        assert_same(*both(path, start_offset=seg.start_offset, first_attempt=seg.index, first_line_no=seg.start_line))


def test_fixture_logs_exist() -> None:
    assert len(FIXTURE_LOGS) >= 10


@pytest.mark.parametrize("writer", [T.write_fresh_run, T.write_requeued_run])
def test_unit_test_logs_read_the_same(tmp_path: Path, writer) -> None:
    path = tmp_path / "train.log"
    writer(path)
    assert_same(*both(path))


def _mixed_big_log(path: Path, seed: int) -> None:
    """Several attempts of generated lines with odd Train: lines spliced in (other keys, nan, fragments...)."""
    write_big_log(path, 3_000_000, iters_per_epoch=997, attempts=3)
    rng = random.Random(seed)
    lines = path.read_bytes().split(b"\n")
    prefix = b"[2026-07-14 14:31:02,417 INFO logging.py line 332] "
    odd = [
        prefix + b"Train: [1/9][3/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: nan "
                 b"seg_loss: inf aux_loss: -inf avg_pts: 48211.5000 Lr: 0.00018",
        prefix + b"Train: [1/9][4/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: -0.0000 "
                 b"seg_loss: 1e-05 aux_loss: 123456789012345678 avg_pts: +5 Lr: 0.00018",
        prefix + b"Train: [1/9][5/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: 0.8123 "
                 b"avg_pts: 48211.5000 Lr: 0.00018",
        prefix + b"mem: 3.2 Train: [1/9][6/997] loss: 0.5 Lr: 0.1",
        b"[2026-07-14 14:31:02,417 INFO other.py line 9] Train: [1/9][7/997] Data 0.004 (0.012) Batch 0.412 "
        b"(0.398) Remain 03:27:51 loss: 0.8123 seg_loss: 1.0 aux_loss: 1.0 avg_pts: 1.0 Lr: 0.00018",
        b"    continuation Train: [1/9][8/997] Data",
        prefix + b"Train: [1/9][9/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: 0.8123 "
                 b"seg_loss: 1.0 aux_loss: 1.0 avg_pts: 1.0 Lr: 0.00018 ",
        prefix + b"Train: [01/9][0010/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: 00.8123 "
                 b"seg_loss: .5 aux_loss: 5. avg_pts: -12.5 Lr: 0.00018",
        prefix + b"Train: [1/9][11/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: 0.8123 "
                 b"seg_loss: 1.0 aux_loss: 1.0 avg_pts: 1.0 Lr: 0.00018\r",
        b"[2026-07-14 14:31:02,417 WARNING logging.py line 332] Train: [1/9][12/997] loss: 1.0 Lr: 0.1",
        prefix + b"Train: [1/9][13/997] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 03:27:51 loss: 1_0.5 "
                 b"seg_loss: 1.0 aux_loss: 1.0 avg_pts: 1.0 Lr: 0.00018",
    ]
    for _ in range(40):
        lines.insert(rng.randrange(10, len(lines) - 2), rng.choice(odd))
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_big_logs_read_the_same(tmp_path: Path, seed: int, monkeypatch) -> None:
    path = tmp_path / "train.log"
    _mixed_big_log(path, seed)
    new, old = both(path)
    assert_same(new, old)
    assert sum(s.train_lines for s in new.segments) > 10_000
    # small blocks: many block boundaries, ranges split differently
    import pimm_inspect.sources.train_log.reader as live

    monkeypatch.setattr(live, "BLOCK_BYTES", 65536 + seed * 4093)
    monkeypatch.setattr(reference, "BLOCK_BYTES", 65536 + seed * 4093)
    assert_same(*both(path))
    last = old.segments[-1]
    assert_same(*both(path, start_offset=last.start_offset, first_attempt=last.index,
                      first_line_no=last.start_line))


def test_plain_generated_log_is_all_fast_and_the_same(tmp_path: Path, monkeypatch) -> None:
    from pimm_inspect.sources.train_log import _fast as F

    path = tmp_path / "train.log"
    facts = write_big_log(path, 2 * BLOCK_BYTES + BLOCK_BYTES // 2, iters_per_epoch=20000)
    rows: list[int] = []
    scan = F.scan

    def counting_scan(*args, **kwargs):
        found = scan(*args, **kwargs)
        rows.append(found.starts.size if found is not None else 0)
        return found

    monkeypatch.setattr(F, "scan", counting_scan)
    new, old = both(path)
    assert_same(new, old)
    assert new.segments[0].train_lines == facts["steps"] and new.segments[0].last_step == facts["steps"]
    assert len(rows) >= 3 and sum(rows) == facts["steps"]  # every Train: line went through the numpy path


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pimm_inspect.sources.train_log import _patterns as NEW  # noqa: E402
from tests.train_log_reference import _train_log_patterns as OLD  # noqa: E402

_ROW_PARTS = ["|", " ", "*", "1", "a", ".", "-", "\t", "\u00a0", ":", "  ", " | ", "| 1 | ", "\u2028"]
_TAIL_PARTS = [b"Data ", b"1", b" ", b"(1)", b"Batch ", b"Remain ", b"1:2", b":", b"a", b": ", b"k: 1 ", b"\t",
               b"-", b"."]


@settings(max_examples=3000, deadline=None)
@given(parts=st.lists(st.sampled_from(_ROW_PARTS), max_size=30), lead=st.booleans())
def test_linear_table_row_splits_like_the_old_pattern(parts, lead) -> None:
    text = ("|  1 | " if lead else "") + "".join(parts)
    m = OLD.TABLE_ROW.match(text)
    assert NEW.table_row(text) == (m.groups() if m else None)


@settings(max_examples=3000, deadline=None)
@given(parts=st.lists(st.sampled_from(_TAIL_PARTS), max_size=20))
def test_linear_tail_tokens_match_the_old_pattern(parts) -> None:
    tail = b"".join(parts)
    assert NEW.parse_tail(tail) == OLD.parse_tail(tail)
    old, new = OLD.build_template(tail), NEW.build_template(tail)
    assert (old is None) == (new is None)
    if old is not None:
        assert (old[0].pattern, old[1]) == (new[0].pattern, new[1])
