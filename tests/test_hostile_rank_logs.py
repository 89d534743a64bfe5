"""Per-rank structured logs (``structured_logs/*.jsonl``) written by someone else: bounded, never a crash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pimm_inspect.sources.slurm.rank_logs import MAX_NAME_CHARS, read_rank_log
from tests.hostile_support import run_cli

ROOT = Path(__file__).resolve().parents[1]
NAME = "training.global_rank_0.20260714-143000-123456-AB12CD.jsonl"


def test_nesting_deeper_than_the_parser_is_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / NAME
    good = json.dumps({"attempt": 1, "job_id": 4242, "step": 7, "log_type": "event", "log_type_name": "forward_start"})
    path.write_bytes(good.encode() + b"\n" + b"[" * 200_000 + b"]" * 200_000 + b"\n" + good.encode() + b"\n")
    got = read_rank_log(path, "structured_logs/" + NAME)
    assert got.value is not None and (got.value.records, got.value.malformed) == (2, 1)
    assert got.value.job_ids == ("4242",) and got.value.last_step == 7
    assert [f.code for f in got.findings] == ["file.corrupt"] and got.findings[0].paths == ("structured_logs/" + NAME,)


def test_names_that_are_not_pimms_stay_out_of_the_summary(tmp_path: Path) -> None:
    path = tmp_path / NAME
    lines = [{"job_id": "9" * 10_000, "host_name": "h" * 10_000, "log_type": "event", "log_type_name": "x" * 10_000,
              "step": 3},
             {"job_id": {"nested": [1, 2]}, "step": 4}, {"job_id": True, "step": 5}]
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    got = read_rank_log(path, NAME).value
    assert got is not None and got.records == 3 and got.job_ids == () and got.last_event is None
    assert got.host == "h" * MAX_NAME_CHARS and got.last_step == 5


@pytest.mark.slow
def test_a_two_gigabyte_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    """A sparse 2 GiB file of NULs is one line with no newline: skipped in 1 MiB reads, named, fresh process."""
    run = tmp_path / "run"
    shutil.copytree(ROOT / "fixtures" / "runs" / "e2_clean", run)
    (run / "structured_logs").mkdir(exist_ok=True)
    with open(run / "structured_logs" / NAME, "wb") as fh:
        fh.truncate(2 * 1024**3)
    out = run_cli("--no-cache", "check", "--json", str(run), timeout=120)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    findings = json.loads(out.stdout)["runs"][0]["findings"]
    mine = [f for f in findings if f["paths"] == ["structured_logs/" + NAME]]
    assert [f["code"] for f in mine] == ["file.corrupt"], mine
    assert "internal.reader-failed" not in out.stdout
    assert out.max_rss_mb < 400, out.max_rss_mb
