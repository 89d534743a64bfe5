"""``file_deps.unchanged`` judges files and links in a listed folder from that listing (fewer system calls):
it must give the answer of fingerprinting every dependency on its own, and a changed, added, removed or
re-linked file must still count as a change."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pimm_inspect.load import file_deps, fingerprints


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "ckpt").mkdir(parents=True)
    (run / "train.log").write_text("step 1\n")
    (run / "config.json").write_text("{}")
    (run / "ckpt" / "last.pth").write_bytes(b"x" * 10)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "best.pth").write_bytes(b"y" * 10)
    os.symlink(tmp_path / "elsewhere", run / "model")
    os.symlink(run / "config.json", run / "config_link.json")
    return run


def _record(run: Path) -> tuple[file_deps.Dep, ...]:
    """A read of the run as a reader makes it: the run's real path, listings, opens, links resolved."""
    with file_deps.recording(str(run)) as recorder:
        file_deps.note_realpath(run)
        os.listdir(run)
        os.listdir(run / "ckpt")
        os.listdir(run / "model")
        for name in ("train.log", "config.json", "config_link.json", "ckpt/last.pth", "model/best.pth"):
            file_deps.note_realpath(run / name)
            with open(run / name, "rb") as handle:
                handle.read()
        file_deps.note_probe(run / "missing.txt")
        file_deps.note_realpath(run / "ckpt")
    return recorder.result()


def _one_by_one(deps: tuple[file_deps.Dep, ...]) -> bool:
    return all(file_deps.same(kind, file_deps.fingerprint(kind, path), fp) for kind, path, fp in deps)


def test_unchanged_run_is_unchanged_and_the_listing_is_used(tmp_path, monkeypatch):
    run = _run(tmp_path)
    deps = _record(run)
    kinds = {kind for kind, _path, _fp in deps}
    assert kinds == {"f", "d", "r"}
    assert file_deps.unchanged(deps) and _one_by_one(deps)
    stats: list[str] = []
    real = fingerprints.real_fingerprint

    def spy_real(path: str) -> str:
        stats.append(path)
        return real(path)

    monkeypatch.setattr(fingerprints, "real_fingerprint", spy_real)
    assert file_deps.unchanged(deps)
    # the plain files in the run were resolved from the run's real path; the links and the run itself by the kernel
    assert str(run / "train.log") not in stats and str(run / "ckpt") not in stats
    assert str(run) in stats and str(run / "config_link.json") in stats


def _grow(run: Path) -> None:
    with open(run / "train.log", "a") as handle:
        handle.write("step 2\n")


def _touch_ns(run: Path) -> None:
    st = os.stat(run / "ckpt" / "last.pth")
    os.utime(run / "ckpt" / "last.pth", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _replace_same_size(run: Path) -> None:
    (run / "ckpt" / "new.pth").write_bytes(b"z" * 10)
    os.replace(run / "ckpt" / "new.pth", run / "ckpt" / "last.pth")


def _relink(run: Path) -> None:
    (run.parent / "other").mkdir()
    (run.parent / "other" / "best.pth").write_bytes(b"y" * 10)
    os.utime(run.parent / "other" / "best.pth", ns=(0, os.stat(run / "model" / "best.pth").st_mtime_ns))
    os.unlink(run / "model")
    os.symlink(run.parent / "other", run / "model")


def _file_to_link(run: Path) -> None:
    os.replace(run / "config.json", run.parent / "config.json")
    os.symlink(run.parent / "config.json", run / "config.json")


CHANGES: dict[str, Callable[[Path], None]] = {
    "grown": _grow,
    "mtime only": _touch_ns,
    "same size, new inode": _replace_same_size,
    "added": lambda run: (run / "ckpt" / "epoch2.pth").write_bytes(b"1"),
    "removed": lambda run: os.unlink(run / "ckpt" / "last.pth"),
    "probed file appears": lambda run: (run / "missing.txt").write_text("now here"),
    "link retargeted": _relink,
    "file replaced by a link to itself": _file_to_link,
    "folder replaced by a file": lambda run: (os.unlink(run / "ckpt" / "last.pth"), os.rmdir(run / "ckpt"),
                                              (run / "ckpt").write_text("")),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_is_seen_as_by_fingerprinting_each_path(tmp_path, name):
    run = _run(tmp_path)
    deps = _record(run)
    CHANGES[name](run)
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps)


def test_a_run_reached_through_a_link_resolves_as_the_kernel_says(tmp_path):
    run = _run(tmp_path)
    os.symlink(run, tmp_path / "alias")
    deps = _record(tmp_path / "alias")
    assert file_deps.unchanged(deps) and _one_by_one(deps)
    os.unlink(tmp_path / "alias")
    (tmp_path / "run2").mkdir()
    os.rename(run, tmp_path / "run2" / "run")
    os.symlink(tmp_path / "run2" / "run", tmp_path / "alias")  # same files, same stats, somewhere else
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps)


def test_a_recording_takes_what_fingerprinting_each_path_takes_and_spares_the_listed_files_a_stat(tmp_path,
                                                                                                   monkeypatch):
    """A file in a folder the load listed is fingerprinted from that listing's stat, and where a plain entry of a
    resolved folder leads from the folder's real path: the same fingerprints as taking each on its own, fewer calls."""
    run = _run(tmp_path)
    past = time.time() - 60  # folders old enough to be stamped
    for folder in (run, run / "ckpt", tmp_path / "elsewhere"):
        os.utime(folder, (past, past))
    asked: list[tuple[str, str]] = []
    for name, kind in (("file_fingerprint", "f"), ("real_fingerprint", "r")):
        original = getattr(fingerprints, name)
        monkeypatch.setattr(fingerprints, name, lambda path, kind=kind, original=original: (
            asked.append((kind, path)), original(path))[1])
    deps = _record(run)
    monkeypatch.undo()
    assert deps == tuple((kind, path, fingerprints.fingerprint(kind, path)) for kind, path, _fp in deps)
    assert any(kind == "d" and "/" in fp for kind, _path, fp in deps)  # stamps taken (from the parent's listing too)
    spared = [("f", str(run / name)) for name in ("train.log", "config.json", "config_link.json", "ckpt/last.pth",
                                                   "model/best.pth")] + [("r", str(run / "train.log"))]
    assert not set(spared) & set(asked)
    # the run itself, a link, a file below a link and a name the listing did not hold: asked as before
    assert {("r", str(run)), ("r", str(run / "config_link.json")), ("r", str(run / "model/best.pth")),
            ("f", str(run / "missing.txt"))} <= set(asked)
    assert file_deps.unchanged(deps)
