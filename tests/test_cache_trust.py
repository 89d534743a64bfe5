"""The persistent cache is trusted the way ssh trusts key files (issue 21): only a directory and entries the user owns
and nobody else may write; made 0700; never inside any run of the tree being read; no relative or empty base."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli
from pimm_inspect.session import Session, Settings
from pimm_inspect.session.settings import cache_dir_from
from pimm_inspect.session.store import disk_cache

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"


def _ls(*args: object) -> tuple[str, str]:
    result = CliRunner().invoke(cli, ["ls", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_new_cache_dir_is_made_0700(tmp_path, monkeypatch):
    cache = tmp_path / "fresh" / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    _ls(RUNS / "e2_rollback")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert disk_cache.entries(cache)


def test_a_cache_dir_others_may_write_is_refused_once(tmp_path, monkeypatch):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    stdout, stderr = _ls(RUNS)
    assert _files(cache) == []
    assert stderr.count("writable by group or others") == 1 and "the cache is not used" in stderr
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert _ls(RUNS)[0] == stdout  # the same listing, read without the cache


def test_a_cache_dir_of_another_user_is_refused(tmp_path, monkeypatch):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 4242)  # as if another user had made it
    _stdout, stderr = _ls(RUNS / "e2_rollback")
    assert "owned by another user" in stderr and _files(cache) == []


def test_an_entry_others_may_write_is_not_trusted(tmp_path, monkeypatch):
    """A forged row (its checksum recomputed) in an entry others can write must not reach ``ls``."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(cache))
    run = RUNS / "e2_rollback"
    _ls(run)
    assert Session().stored_rows([run])  # the user's own entry: served
    for entry, _size, _used in disk_cache.entries(cache):
        entry.chmod(0o666)
    told: list[str] = []
    assert Session(on_problem=told.append).stored_rows([run]) == {}
    assert len(told) == 1 and "writable by group or others" in told[0]


def test_a_cache_dir_inside_any_run_of_the_tree_gets_nothing(tmp_path, monkeypatch):
    """Not only the first run: a cache inside the second run of the tree must not fill it with the others' entries."""
    tree = tmp_path / "tree"
    for name in ("a_run", "b_run", "c_run"):
        shutil.copytree(RUNS / "e2_rollback", tree / name, symlinks=True)
    before = {p: p.stat().st_size for p in _files(tree)}
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tree / "b_run" / "model" / ".cache"))
    for command in (["ls"], ["show", "--json"], ["check", "--json"]):
        result = CliRunner().invoke(cli, [*command, str(tree)])
        assert result.exit_code in (0, 1), result.output
        assert result.stderr.count("is inside the run") == 1
    assert {p: p.stat().st_size for p in _files(tree)} == before


@pytest.mark.parametrize(("env", "expected"), [
    ({"HOME": ""}, None),
    ({"HOME": "relative/home"}, None),
    ({"HOME": "/h", "XDG_CACHE_HOME": ""}, Path("/h/.cache/pimm-inspect")),
    ({"HOME": "/h", "XDG_CACHE_HOME": "cache"}, Path("/h/.cache/pimm-inspect")),
    ({"HOME": "/h", "XDG_CACHE_HOME": "/x"}, Path("/x/pimm-inspect")),
    ({"HOME": "/h", "PIMM_INSPECT_CACHE_DIR": ""}, Path("/h/.cache/pimm-inspect")),
    ({"HOME": "/h", "PIMM_INSPECT_CACHE_DIR": "runs/cache"}, Path("/h/.cache/pimm-inspect")),
    ({"HOME": "/h", "PIMM_INSPECT_CACHE_DIR": "~/c"}, Path("/h/c")),
    ({"HOME": "/h", "PIMM_INSPECT_CACHE_DIR": "/c"}, Path("/c")),
    ({"HOME": "/h", "PIMM_INSPECT_CACHE_DIR": "off"}, None),
])
def test_empty_or_relative_bases_count_as_unset(env, expected):
    assert cache_dir_from(env) == expected
    assert Settings.from_env(env).cache_dir == expected


def test_a_relative_cache_dir_never_lands_in_the_run_read(tmp_path, monkeypatch):
    """``PIMM_INSPECT_CACHE_DIR=.cache`` run from inside a run: the relative place is ignored, nothing is written."""
    run = tmp_path / "run"
    shutil.copytree(RUNS / "e2_rollback", run, symlinks=True)
    before = _files(run)
    monkeypatch.chdir(run)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", ".cache")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    _ls(".")
    assert _files(run) == before
    assert disk_cache.entries(tmp_path / "home" / ".cache" / "pimm-inspect")
