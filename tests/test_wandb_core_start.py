"""A W&B folder without its ``.wandb`` log (GitHub refuses files over 100 MB) and without files/wandb-metadata.json
(an offline run writes none): its start is wandb-core's first zoned line in logs/debug-internal.log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from pimm_inspect.sources.wandb._files import core_start_s

ROOT = Path(__file__).resolve().parents[1]


def _attempts(run: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["--no-cache", "show", "--json", str(run)])
    assert result.exit_code in (0, 1), result.output
    attempts: list[dict[str, object]] = json.loads(result.stdout)["runs"][0]["attempts"]
    return attempts


def test_a_folder_without_its_log_starts_when_wandb_core_started(tmp_path: Path) -> None:
    """Was: wandb 0.31's offline crashed run (fixtures/runs/wandb_crashed) with its .wandb log removed said its
    attempt started at '-': the run record was gone, an offline run writes no metadata, and the folder name's stamp
    is the writer's local clock. wandb-core's debug-internal.log says 08:02:29Z, the run record's second."""
    run = tmp_path / "wandb_crashed"
    shutil.copytree(ROOT / "fixtures" / "runs" / "wandb_crashed", run)
    whole = _attempts(run)
    for log in run.glob("wandb/*/run-*.wandb"):
        log.unlink()
    without_log = _attempts(run)
    assert whole[0]["started_at_iso"] == "2026-12-01T08:02:29+00:00"
    assert without_log[0]["started_at_iso"] == whole[0]["started_at_iso"]
    assert without_log[0]["ended"] == "crashed" and without_log[0]["end_detail"] == "exit code 1"  # debug.log's


@pytest.mark.parametrize("line, expected", [
    ('{"time":"2026-12-01T08:02:29.127030244Z","level":"INFO","msg":"wandb-core"}', 1796112149.12703),
    ('{"time":"2026-02-11T13:12:27.5+08:00","level":"INFO","msg":"stream: starting"}', 1770786747.5),
    ('{"time":"2026-02-11T13:12:27-05:00","level":"INFO"}', 1770833547.0),
    ("2022-07-22 23:33:10,123 INFO    StreamThr :1 [internal.py:wandb_internal():87] W&B internal server running", None),
    ('{"time":"2026-13-45T99:99:99Z","level":"INFO"}', None),
    ('{"time":"2026-12-01T08:02:29","level":"INFO"}', None),
    ("", None),
])
def test_only_a_zoned_first_line_is_a_start(line: str, expected: float | None) -> None:
    """wandb <= 0.17 wrote Python logging lines on the local clock: no start is taken from them."""
    got = core_start_s(line + "\n")
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_the_python_logging_debug_internal_of_wandb_017_gives_no_start() -> None:
    folder = next((ROOT / "fixtures" / "wandb_claims" / "rejected_017" / "wandb").glob("run-*"))
    text = (folder / "logs" / "debug-internal.log").read_text()
    assert not text.startswith("{") and core_start_s(text) is None
