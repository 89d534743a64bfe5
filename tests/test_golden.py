"""Golden JSON: `show --json` and `check --json` of every fixture run, compared byte for byte.

The files under tests/golden/ were written before the typed-model refactor (issue 9) and are kept through
every change: a diff in them is a behaviour change, to be read and accepted on purpose. Refresh them with
``PIMM_INSPECT_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` and review ``git diff tests/golden``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "fixtures" / "runs"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("PIMM_INSPECT_UPDATE_GOLDEN") == "1"
FIXTURE_RUNS = sorted(p.name for p in RUNS.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def runs_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture runs copied with fresh mtimes, as a new checkout has them: a live run's status depends on how
    long ago its files were written, and a checkout's files age while it sits on a machine."""
    target = tmp_path_factory.mktemp("golden") / "runs"
    shutil.copytree(RUNS, target, symlinks=True, copy_function=shutil.copy)
    return target


def _document(command: str, run_dir: Path, runs: Path) -> str:
    args = [command, str(run_dir), "--json"] + (["--fail-on", "never"] if command == "check" else [])
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = json.dumps(json.loads(result.stdout), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    # Absolute paths (the W&B sync command names folders so it pastes anywhere) differ per checkout.
    return text.replace(runs.as_posix(), "$FIXTURE_RUNS")


@pytest.mark.parametrize("command", ["show", "check"])
@pytest.mark.parametrize("name", FIXTURE_RUNS)
def test_golden(name: str, command: str, runs_copy: Path) -> None:
    actual = _document(command, runs_copy / name, runs_copy)
    golden = GOLDEN / f"{name}.{command}.json"
    if UPDATE or not golden.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {golden.name}: run with PIMM_INSPECT_UPDATE_GOLDEN=1 and review it")
        golden.write_text(actual, encoding="utf-8")
    assert actual == golden.read_text(encoding="utf-8"), (
        f"{golden.name} differs: rerun with PIMM_INSPECT_UPDATE_GOLDEN=1 and review git diff tests/golden")


def test_every_golden_file_has_a_fixture() -> None:
    expected = {f"{name}.{command}.json" for name in FIXTURE_RUNS for command in ("show", "check")}
    assert {p.name for p in GOLDEN.glob("*.json")} == expected
