"""Every surface prints the same with the cache off, cold and warm (``bench/realworld_cache_parity.py`` does this on a
corpus of public runs): ``check --json``, ``config --json`` and ``ls --json`` of one run and of a folder inside an
indexed tree, which ``test_show_cache`` (``show --json`` per fixture) and ``test_row_index`` (``ls`` of the whole
tree) leave out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from tests.cache_support import DAY_AGO, age

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
SAMPLE = ("e2_rollback", "e3a_resubmitted", "hf_resumed_wandb", "lightning_resumable/lightning_logs/version_1",
          "rw_keras_layout/hparam_tuning/run-0/train", "wandb_resumed_offline", "e2_secret_in_config",
          "rw_wandb_nested/proj/wandb/wandb/offline-run-20261201_081204-nest0002")
"""Runs of each writer with several attempts, nested ones (their parent folder another tree), a secret in a
configuration."""


def _outputs(tree: Path, runs: list[Path]) -> list[tuple[int, str]]:
    runner = CliRunner()
    calls = [["ls", "--json", str(tree)], ["check", "--json", str(tree)]]
    calls += [[command, "--json", str(run)] for run in runs for command in ("show", "check", "ls", "config")]
    calls += [["ls", "--json", str(run.parent)] for run in runs if run.parent != tree]
    out = []
    for call in calls:
        result = runner.invoke(cli, call)
        assert result.exception is None or isinstance(result.exception, SystemExit), (call, result.exception)
        out.append((result.exit_code, result.stdout))
    return out


@pytest.fixture(scope="module")
def quiet_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("parity") / "runs"
    shutil.copytree(RUNS, tree, symlinks=True)
    return age(tree, DAY_AGO)


def test_every_surface_is_the_same_off_cold_and_warm(quiet_tree, tmp_path, monkeypatch):
    runs = [quiet_tree / name for name in SAMPLE]
    monkeypatch.setenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS", "0")  # every entry stored, however cheap
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    off = _outputs(quiet_tree, runs)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    cold = _outputs(quiet_tree, runs)
    warm = _outputs(quiet_tree, runs)
    assert any('"finding' in text for _, text in off) and any(code == 0 for code, _ in off)
    for i, (a, b, c) in enumerate(zip(off, cold, warm)):
        assert a == b == c, i
