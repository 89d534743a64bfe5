"""Shared by the cache tests: quiet copies of the fixture runs, ``ls`` through the CLI, and counting the runs read.

A fresh clone's checkout gives every file "now" as its mtime, and a run written just before a read looks live (its
row is not stored); a quiet copy has every mtime a day old, so the cache behaves as on a finished run."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from pimm_inspect.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
DAY_AGO = time.time() - 86_400
"""A day before the tests started: one time for every file a test ages, where equal times matter."""


def age(tree: Path, when: float | None = None) -> Path:
    """Every mtime under ``tree``, and its own, set to ``when`` (default: a day before now): no run looks live, no
    file was written just before a read."""
    stamp = time.time() - 86_400 if when is None else when
    for folder, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (stamp, stamp), follow_symlinks=False)
    os.utime(tree, (stamp, stamp))
    return tree


def quiet_copy(source: Path, target: Path, when: float | None = None) -> Path:
    """A quiet copy of the folder ``source`` at ``target`` (symlinks kept as links), aged as ``age`` does."""
    shutil.copytree(source, target, symlinks=True)
    return age(target, when)


def ls_stdout(*args: object) -> str:
    """What ``pimm-inspect ls ARGS`` prints on stdout (it must exit 0)."""
    result = CliRunner().invoke(cli, ["ls", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout


def spy_builds(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> list[Path]:
    """The run folders ``module.name(root, cache=None)`` (a row or document builder) is called on from now on: the
    runs read from their files, where every other answer came from the cache."""
    built: list[Path] = []
    real = getattr(module, name)

    def spy(root: Path, cache: object = None) -> object:
        built.append(root)
        return real(root, cache)

    monkeypatch.setattr(module, name, spy)
    return built


def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every folder ``os.scandir`` lists from now on (the test's end undoes the spy), in order."""
    listed: list[str] = []
    real = os.scandir

    def spy(path: str | os.PathLike[str] = ".") -> object:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    return listed
