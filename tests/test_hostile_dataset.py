"""The Parquet dataset's in-place update never leaves DIR: links planted in DIR are refused, never followed or
deleted through; a manifest entry that is not a partition name this export writes is refused, never deleted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

pytest.importorskip("pyarrow")

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _export(root: Path, out: Path, *args: str):
    return CliRunner().invoke(cli, ["--no-cache", "export", str(root), "--format", "parquet", "-o", str(out), *args])


def _victim(tmp_path: Path) -> Path:
    """A folder outside DIR holding a file named like a partition file: it must survive every export."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "part-0.parquet").write_text("precious, not a dataset file\n")
    return victim


def _tree(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "exp"
    for name in names:
        shutil.copytree(RUNS / "e2_clean", root / name, symlinks=True)
    return root


def _intact(victim: Path) -> bool:
    return (victim / "part-0.parquet").read_text() == "precious, not a dataset file\n"


def test_a_partition_folder_that_is_a_link_is_not_written_through(tmp_path: Path) -> None:
    root, out, victim = _tree(tmp_path, "a"), tmp_path / "ds", _victim(tmp_path)
    assert _export(root, out).exit_code == 0
    partition = out / "scalars" / "run=a"
    shutil.rmtree(partition)
    partition.symlink_to(victim, target_is_directory=True)
    result = _export(root, out, "--policy", "newest")  # other options: every run is rewritten
    assert result.exit_code == 2
    assert "is a link or not a folder: refused" in result.stderr and "run=a" in result.stderr
    assert _intact(victim) and sorted(os.listdir(victim)) == ["part-0.parquet"]
    assert partition.is_symlink()  # left as it was, for the user to look at


def test_a_partition_file_that_is_a_link_is_replaced_not_written_through(tmp_path: Path) -> None:
    root, out, victim = _tree(tmp_path, "a"), tmp_path / "ds", _victim(tmp_path)
    assert _export(root, out).exit_code == 0
    part = out / "runs" / "run=a" / "part-0.parquet"
    part.unlink()
    part.symlink_to(victim / "part-0.parquet")
    assert _export(root, out).exit_code == 0
    assert _intact(victim)
    assert not part.is_symlink() and part.stat().st_size > 100


def test_prune_deletes_nothing_through_a_linked_partition_folder(tmp_path: Path) -> None:
    root, out, victim = _tree(tmp_path, "a", "b"), tmp_path / "ds", _victim(tmp_path)
    assert _export(root, out).exit_code == 0
    shutil.rmtree(root / "b")
    partition = out / "scalars" / "run=b"
    shutil.rmtree(partition)
    partition.symlink_to(victim, target_is_directory=True)
    result = _export(root, out, "--prune")
    assert result.exit_code == 2 and "is a link or not a folder: refused" in result.stderr
    assert _intact(victim)


@pytest.mark.parametrize("key", ["a/../../../victim", "/abs/victim", "..", "run=a/../../../victim", ""])
def test_a_manifest_key_that_is_no_partition_name_is_refused_and_nothing_deleted(key: str, tmp_path: Path) -> None:
    root, out, victim = _tree(tmp_path, "a"), tmp_path / "ds", _victim(tmp_path)
    assert _export(root, out).exit_code == 0
    manifest_path = out / "_pimm_inspect_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["runs"][key] = {"run_id": "gone", "read": None, "written_at": "", "seen_at": ""}
    manifest_path.write_text(json.dumps(manifest))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    result = _export(root, out, "--prune")
    if key == "..":  # "run=.." is one harmless name inside DIR/<table>: a value this export could have written
        assert result.exit_code == 0
    else:
        assert result.exit_code == 2
        assert "is not a partition name this export writes" in result.stderr
        assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert _intact(victim)


def test_a_manifest_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    root, out = _tree(tmp_path, "a"), tmp_path / "ds"
    assert _export(root, out).exit_code == 0
    manifest_path = out / "_pimm_inspect_manifest.json"
    elsewhere = tmp_path / "elsewhere.json"
    manifest_path.rename(elsewhere)
    manifest_path.symlink_to(elsewhere)
    result = _export(root, out)
    assert result.exit_code == 2 and "is a link or not a folder: refused" in result.stderr
    assert json.loads(elsewhere.read_text())["runs"]  # untouched


def test_a_lock_file_that_is_a_link_creates_nothing_outside(tmp_path: Path) -> None:
    root, out = _tree(tmp_path, "a"), tmp_path / "ds"
    out.mkdir()
    (out / ".pimm-inspect.lock").symlink_to(tmp_path / "created-outside")
    result = _export(root, out)
    assert result.exit_code == 2
    assert not (tmp_path / "created-outside").exists()


def test_a_manifest_nested_too_deep_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    root, out = _tree(tmp_path, "a"), tmp_path / "ds"
    assert _export(root, out).exit_code == 0
    manifest_path = out / "_pimm_inspect_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    text = json.dumps(manifest)
    manifest_path.write_text(text[:-1] + ', "extra": ' + "[" * 200_000 + "]" * 200_000 + "}")
    result = _export(root, out)
    assert result.exit_code == 2 and "cannot be read" in result.stderr
    assert not isinstance(result.exception, RecursionError)
