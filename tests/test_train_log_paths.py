"""Which path each Train: line takes: odd lines alone go through the regex paths, and columns are shared.

A realistic log (``write_big_log(mixed=True)``) holds a few Train: lines with an extra term, a
non-finite loss, Val blocks, saves and multi-line warnings between ordinary Train: lines. Results
equal the frozen old reader's; only the odd lines may cost a regex step each.
"""

from __future__ import annotations

from pathlib import Path

import pimm_inspect.sources.train_log.reader as live
from tests.test_train_log_equivalence import assert_same, both
from tests.train_log_support import write_big_log


def _mixed(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    write_big_log(path, 4_000_000, iters_per_epoch=1500, attempts=2, mixed=True)
    return path


def test_mixed_log_reads_like_the_old_reader(tmp_path: Path) -> None:
    path = _mixed(tmp_path)
    new, old = both(path)
    assert_same(new, old)
    assert len(new.val_tables) >= 10 and all(len(t.rows) == 13 for t in new.val_tables)
    assert {"warning"} <= {e.kind for e in new.events}
    assert any(s.tag == "train_batch/grad_norm" for s in new.series)


def test_only_odd_train_lines_take_the_regex_paths(tmp_path: Path, monkeypatch) -> None:
    path = _mixed(tmp_path)
    data = path.read_bytes()
    odd = data.count(b"grad_norm: ")  # the lines whose key set differs from the attempt's template
    slow_lines: list[int] = []
    generic = live._Reader.generic_range

    def counting(self, block, lo, hi, seg, delta):
        slow_lines.append(block.count(b"Train: [", lo, hi))
        return generic(self, block, lo, hi, seg, delta)

    monkeypatch.setattr(live._Reader, "generic_range", counting)
    result = live.read_train_log(path, "train.log")
    assert sum(s.train_lines for s in result.segments) > 15_000
    assert 0 < odd <= sum(slow_lines) <= odd + 2  # before: every range holding an odd line, ~1,500 lines each


def test_terms_of_every_line_share_steps_and_times(tmp_path: Path) -> None:
    """Steps and wall times are stored once per attempt, also when some ranges took the regex path."""
    result = live.read_train_log(_mixed(tmp_path), "train.log")
    for attempt in {s.attempt for s in result.series}:
        every_line = [s for s in result.series if s.attempt == attempt and s.tag in (
            "train_batch/loss", "train_batch/seg_loss", "params/lr", "time/batch_s")]
        assert len(every_line) == 4
        assert all(s.steps is every_line[0].steps and s.wall_times_s is every_line[0].wall_times_s
                   for s in every_line)


def test_records_among_template_lines_are_still_found(tmp_path: Path, monkeypatch) -> None:
    """The marker scan skips INFO template lines; WARNING Train: lines of the same layout and records
    squeezed between Train: lines are still records, in every block (small blocks: a template at each start)."""
    source = tmp_path / "source.log"
    write_big_log(source, 1_500_000, iters_per_epoch=800, mixed=True)
    lines = source.read_bytes().split(b"\n")
    for i in range(300, len(lines) - 1, 401):
        if b"Train: [" in lines[i]:
            lines[i] = lines[i].replace(b" INFO ", b" WARNING ", 1)  # a Train: line printed as a warning
    for i in range(350, len(lines) - 1, 613):
        lines.insert(i, lines[i][:25] + b"ERROR events.py line 42] Traceback (most recent call last):\n"
                     b"  File \"train.py\", line 9, in <module>\nRuntimeError: CUDA error")
        lines.insert(i, lines[i][:25] + b"INFO checkpoint.py line 106] Saving checkpoint at global step 7")
    path = tmp_path / "train.log"
    path.write_bytes(b"\n".join(lines))
    monkeypatch.setattr(live, "BLOCK_BYTES", 32768 + 977)
    from tests.train_log_reference import train_log as reference

    monkeypatch.setattr(reference, "BLOCK_BYTES", 32768 + 977)
    new, old = both(path)
    assert_same(new, old)
    assert sum(e.kind == "warning" for e in new.events) > 10 and sum(e.kind == "traceback" for e in new.events) > 5


def test_odd_lines_do_not_stop_the_layout_groups(tmp_path: Path, monkeypatch) -> None:
    """Lines the template rejects gather at the front of what is left; they no longer end the byte-layout
    grouping early (the slower token check then took a third of a block)."""
    from pimm_inspect.sources.train_log import _fast as F

    path = tmp_path / "train.log"
    write_big_log(path, 18_000_000, iters_per_epoch=5000, mixed=True)
    checked: list[int] = []
    token_scan = F.token_scan

    def counting(block, buf, spaces, ref_prefix, tokens, hits, starts, ends, sel, out):
        checked.append(sel.size)
        return token_scan(block, buf, spaces, ref_prefix, tokens, hits, starts, ends, sel, out)

    monkeypatch.setattr(F, "token_scan", counting)
    result = live.read_train_log(path, "train.log")
    lines = sum(s.train_lines for s in result.segments)
    assert lines > 25_000
    assert sum(checked) < lines // 100
