"""``confine.real_path`` (the kernel's resolution through /proc) gives exactly ``os.path.realpath``'s string."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pimm_inspect.sources import confine
from pimm_inspect.sources.confine import real_path


def _layout(tmp_path: Path) -> list[str]:
    """A small tree with links of every sort (to files, folders, up, dangling, looping) and paths through them."""
    (tmp_path / "run" / "sub").mkdir(parents=True)
    (tmp_path / "run" / "sub" / "train.log").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret").write_text("k")
    os.mkfifo(tmp_path / "run" / "fifo")
    links = {
        "run/to_file": "sub/train.log", "run/to_dir": "sub", "run/out": "../elsewhere", "run/abs_out":
        str(tmp_path / "elsewhere" / "secret"), "run/dangling": "nowhere/at/all", "run/loop_a": "loop_b",
        "run/loop_b": "loop_a", "run/chain": "to_dir", "run/to_fifo": "fifo",
    }
    for name, target in links.items():
        os.symlink(target, tmp_path / name)
    (tmp_path / "linked_root").symlink_to(tmp_path / "run")
    rel = ["run", "run/sub/train.log", "run/to_file", "run/to_dir", "run/to_dir/train.log", "run/out",
           "run/out/secret", "run/abs_out", "run/dangling", "run/dangling/more", "run/loop_a", "run/loop_a/x",
           "run/chain/train.log", "run/to_fifo", "run/fifo", "run/missing", "run/missing/deeper",
           "run/sub/../to_file", "run/to_dir/../sub/./train.log", "run/sub/train.log/", "run/to_file/..",
           "linked_root/to_dir/train.log", "linked_root/../elsewhere", "run//sub///train.log", "run/sub/.."]
    return [str(tmp_path / r) for r in rel] + [str(tmp_path / "run" / "sub" / "train.log") + "/."]


def test_same_string_as_os_realpath_for_every_kind_of_path(tmp_path):
    paths = _layout(tmp_path)
    for path in paths:
        assert real_path(path) == os.path.realpath(path), path
        assert real_path(Path(path)) == os.path.realpath(Path(path)), path


def test_relative_paths_resolve_against_the_working_directory(tmp_path, monkeypatch):
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path / "run")
    for path in ("to_dir/train.log", "out", "dangling", ".", "..", "sub/../to_file", ""):
        assert real_path(path) == os.path.realpath(path), path


@pytest.mark.skipif(not hasattr(os, "O_PATH") or not os.path.isdir("/proc/self/fd"), reason="Linux /proc only")
def test_an_existing_path_is_resolved_by_the_kernel_without_walking_it(tmp_path, monkeypatch):
    paths = _layout(tmp_path)

    def walk(_path):
        raise AssertionError("os.path.realpath was called for an existing path")

    monkeypatch.setattr(confine.os.path, "realpath", walk)
    assert real_path(paths[4]) == str(tmp_path / "run" / "sub" / "train.log")
    assert real_path(paths[7]) == str(tmp_path / "elsewhere" / "secret")


def test_without_proc_the_walk_gives_the_same_answers(tmp_path, monkeypatch):
    paths = _layout(tmp_path)
    monkeypatch.setattr(confine, "_PROC_FD", str(tmp_path / "no_proc_here") + "/")
    monkeypatch.setattr(confine, "_proc_usable", True)
    for path in paths:
        assert real_path(path) == os.path.realpath(path), path
    assert confine._proc_usable is False  # the first failed readlink switched the kernel path off


def test_no_descriptor_is_left_open(tmp_path):
    paths = _layout(tmp_path)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(50):
        for path in paths:
            real_path(path)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


def test_resolving_a_path_is_not_reading_it(tmp_path):
    """The kernel resolution opens with O_PATH: the load's dependency recorder must not count that as a read
    (a cache folder resolved while a run is read would otherwise become a dependency of the run's row)."""
    from pimm_inspect.load import file_deps

    paths = _layout(tmp_path)
    with file_deps.recording(str(tmp_path / "run")) as recorder:
        for path in paths:
            real_path(path)
    assert recorder.result() == ()
    with file_deps.recording(str(tmp_path / "run")) as recorder:
        with open(paths[1], "rb"):
            pass
        file_deps.note_realpath(paths[2])
    assert [(kind, path) for kind, path, _fp in recorder.result()] == [("f", paths[1]), ("r", paths[2])]
    assert recorder.result()[1][2] == os.path.realpath(paths[2])
