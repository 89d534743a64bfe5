"""Hostile train.logs (issue 14): over-long lines are capped, and no pattern is super-linear on a line.

Each case runs in a fresh Python process with a wall-time ceiling and a peak-memory
ceiling (the child's own high-water RSS, ``VmHWM``), and checks what was read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.hostile_support import PEAK_KIB

REPO = Path(__file__).resolve().parent.parent
PREFIX = b"[2026-07-14 14:30:05,101 INFO logging.py line 332] "


_PEAK = f"""
print(json.dumps({{"peak_kib": {PEAK_KIB}}}))  # the child's own peak (tests/hostile_support.PEAK_KIB)
"""


def run_limited(code: str, timeout_s: float, max_rss_mb: float) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line. Fails past either ceiling."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONSAFEPATH="1")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code) + _PEAK], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
    assert not killed.is_set(), f"took longer than {timeout_s} s"
    assert proc.returncode == 0, err.decode()[-3000:]
    *_, result, peak = out.decode().strip().splitlines()
    rss_mb = json.loads(peak)["peak_kib"] / 1024
    assert rss_mb <= max_rss_mb, f"peak RSS {rss_mb:.0f} MB > {max_rss_mb} MB"
    return json.loads(result)


def normal(it: int) -> bytes:
    return PREFIX + b"Train: [1/9][%d/100] Data 0.004 (0.012) Batch 0.412 (0.398) Remain 00:01:00 loss: 0.5000 " \
                    b"Lr: 0.00010\n" % it


@pytest.mark.slow
def test_two_gigabyte_line_is_capped_and_counted(tmp_path: Path) -> None:
    """Issue 14: one 2 GB line cost 4.2 GB and 3 minutes (re-copied per block)."""
    path = tmp_path / "train.log"
    head = normal(1) + PREFIX + b"Train: [1/9][2/100] loss: "
    line_len = 2 << 30
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(len(normal(1)) + line_len)  # the rest of the line is a hole: zeros, never on disk
        fh.seek(0, 2)
        fh.write(b"\n" + normal(3) + normal(4))
    after = len(normal(1)) + line_len + 1
    result = run_limited(f"""
        import json
        from pathlib import Path
        from pimm_inspect.sources.train_log.reader import read_train_log
        r = read_train_log(Path({str(path)!r}), "train.log")
        (f,) = [f for f in r.findings if f.code == "file.long-lines"]
        print(json.dumps({{"message": f.message, "paths": f.paths, "long": r.long_lines,
                           "steps": r.index.step_steps.tolist(), "offsets": r.index.step_offsets.tolist(),
                           "lines": r.index.step_line_nos.tolist(), "end": r.end_offset, "count": r.line_count,
                           "codes": [x.code for x in r.findings]}}))
    """, timeout_s=120, max_rss_mb=500)
    skipped = line_len - (1 << 20)
    assert result["paths"] == ["train.log"]
    assert f"1 line(s) longer than 1048576 bytes; {skipped} bytes past" in result["message"]
    assert result["long"] == [[len(normal(1)), skipped]]
    # the capped line is still a Train: line (its first MiB is parsed: step 2, no readable term)
    assert result["steps"] == [1, 2, 3, 4] and result["lines"] == [1, 2, 3, 4]
    assert result["offsets"] == [0, len(normal(1)), after, after + len(normal(3))]
    assert result["end"] == path.stat().st_size and result["count"] == 4
    assert result["codes"] == ["file.long-lines"]


def test_long_lines_inside_a_block_and_a_long_half_written_last_line(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    body = normal(1) + PREFIX + b"Saving " + b"x" * (3 << 20) + b"\n" + normal(2) + b"y" * (5 << 20) + b"\n" \
        + normal(3) + PREFIX + b"z" * (40 << 20)
    path.write_bytes(body)
    result = run_limited(f"""
        import json
        from pathlib import Path
        from pimm_inspect.sources.train_log.reader import read_train_log
        r = read_train_log(Path({str(path)!r}), "train.log")
        print(json.dumps({{"codes": [f.code for f in r.findings], "msgs": [f.message for f in r.findings],
                           "steps": r.index.step_steps.tolist(), "offsets": r.index.step_offsets.tolist(),
                           "long": r.long_lines, "end": r.end_offset, "saves": [e.kind for e in r.events]}}))
    """, timeout_s=60, max_rss_mb=400)
    first_long = len(normal(1))
    second_long = first_long + len(PREFIX) + 7 + (3 << 20) + 1 + len(normal(2))
    assert result["codes"] == ["file.truncated", "file.long-lines"]
    assert f"({len(PREFIX) + (40 << 20)} bytes)" in result["msgs"][0]
    assert result["long"] == [[first_long, len(PREFIX) + 7 + (3 << 20) - (1 << 20)], [second_long, (4 << 20)]]
    assert result["steps"] == [1, 2, 3] and result["saves"] == ["save"]
    assert result["offsets"][2] == second_long + (5 << 20) + 1
    assert result["end"] == len(body) - len(PREFIX) - (40 << 20)


SHAPES = {
    "non-space run": b"a" * 400_000,
    "colons": b":" * 400_000,
    "word-colon pairs": b"a:" * 200_000,
    "digits": b"1" * 400_000,
    "key fragments": b"k: " * 130_000,
    "glued keys": b"k:" * 200_000,
    "glued values": b"k: 1" * 100_000,
    "spaces": b" " * 400_000,
    "pipe then spaces": b"| 1 | x" + b" " * 400_000 + b"y",
    "pipe then digits": b"|" + b" " * 30 + b"1" * 400_000,
    "pipes": b"| " * 200_000,
    "brackets": b"] " * 200_000,
    "open brackets": b"[" * 400_000,
    "timer blocks": b"Data 1 (1) Batch " * 24_000,
    "dots": b"." * 400_000,
    "words then a colon": b"a" * 400_000 + b":",
    "table cells": b" | a" * 100_000,
}
LEADS = [b"Train: [1/2][3/4] ", b"Train result: ", b"Val result: mIoU/mAcc ", b"|        1 | ",
         b"Best validation ", b"[x] Detection P=", b"Class_1-", b"Saving checkpoint at global step ", b""]


def test_adversarial_lines_cost_linear_time(tmp_path: Path) -> None:
    """Issue 14: ``([^:\\s]+): `` backtracked quadratically (197 KB of lines: 123 s CPU)."""
    path = tmp_path / "train.log"
    with path.open("wb") as fh:
        fh.write(PREFIX.replace(b"logging.py line 332", b"train.py line 251") + b"=> Loading config ...\n")
        fh.write(normal(1))
        fh.write(PREFIX + b"Val result: mIoU/mAcc/allAcc 0.5/0.6/0.7.\n")
        for i, shape in enumerate(SHAPES.values()):
            for lead in LEADS:
                fh.write(PREFIX + lead + shape + b"\n")
            fh.write(shape + b"\n")  # a continuation line
            fh.write(normal(2 + i))
    size = path.stat().st_size
    assert size > 50_000_000
    result = run_limited(f"""
        import json, re, time
        from pathlib import Path
        from pimm_inspect.sources.train_log import _fast as _train_log_fast
        from pimm_inspect.sources.train_log import _index as _train_log_index
        from pimm_inspect.sources.train_log import _patterns as _train_log_patterns
        from pimm_inspect.sources.train_log import reader as train_log
        from pimm_inspect.sources.train_log.reader import read_train_log
        t = time.perf_counter()
        r = read_train_log(Path({str(path)!r}), "train.log")
        took = time.perf_counter() - t
        # every compiled pattern of the train.log modules, searched over each shape (with and without a lead)
        from tests.test_train_log_hostile import SHAPES
        shapes = list(SHAPES.values())
        slowest = (0.0, "")
        for module in (_train_log_patterns, _train_log_fast, _train_log_index, train_log):
            for name, pat in vars(module).items():
                if not isinstance(pat, re.Pattern):
                    continue
                for shape in shapes:
                    for lead in (b"", b"Train: [1/2][3/4] ", b"|  1 | ", b"Val result: a/b "):
                        text = lead + shape[:100_000]
                        text = text if isinstance(pat.pattern, bytes) else text.decode("latin-1")
                        s = time.perf_counter()
                        pat.match(text)
                        pat.search(text)
                        slowest = max(slowest, (time.perf_counter() - s, name))
        for shape in shapes:
            s = time.perf_counter()
            _train_log_patterns.parse_tail(shape)
            _train_log_patterns.table_row(("|  1 | " + shape.decode("latin-1")))
            slowest = max(slowest, (time.perf_counter() - s, "parse_tail/table_row"))
        print(json.dumps({{"took": took, "slowest": slowest, "steps": r.index.step_steps.tolist(),
                           "segments": len(r.segments), "codes": sorted({{f.code for f in r.findings}})}}))
    """, timeout_s=240, max_rss_mb=700)
    assert result["slowest"][0] < 30.0, result["slowest"]  # hang guard: catastrophic backtracking takes minutes
    assert result["took"] < 120, result["took"]
    # the normal lines between the hostile ones are all read, with their steps
    assert result["steps"][:1] == [1] and set(range(2, 2 + len(SHAPES))) <= set(result["steps"])
    assert result["segments"] == 1
