"""A listed folder's fingerprint carries a stamp (its device, inode, mtime and the names it held) where the folder
is old enough, small enough and on a filesystem that keeps folder mtimes: the check then stats its entries by name
instead of listing it again. It must give the answer a listing gives: every change of ``test_file_deps_listing``
is still seen, and so is every change that keeps the names even when the folder's mtime is put back."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_file_deps_listing import CHANGES, _one_by_one, _record, _run

from pimm_inspect.load import file_deps, fingerprints
from tests.cache_support import scans

OLD = time.time() - 86_400


def _age(tree: Path) -> None:
    """Every mtime under ``tree`` (links themselves included) a day old, folders last."""
    for folder, dirs, files in os.walk(tree, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (OLD, OLD), follow_symlinks=False)
        os.utime(folder, (OLD, OLD))


def _aged_run(tmp_path: Path) -> Path:
    run = _run(tmp_path)
    _age(tmp_path)
    return run



def _keep_mtime(folder: Path):
    """Put ``folder``'s mtime back after a change (as rsync -a or tar would): the stamp then matches."""
    st = os.stat(folder)
    return lambda: os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_old_folders_are_stamped_and_checked_without_listing(tmp_path, monkeypatch):
    run = _aged_run(tmp_path)
    deps = _record(run)
    folders = {path: fp for kind, path, fp in deps if kind == "d"}
    assert set(folders) == {str(run), str(run / "ckpt"), str(run / "model")}
    assert all("/" in fp for fp in folders.values())
    assert folders[str(run / "ckpt")].endswith("/last.pth")
    assert folders[str(run)].split("/", 1)[1].split("/") == sorted(os.listdir(run))
    assert _one_by_one(deps)
    listed = scans(monkeypatch)
    assert file_deps.unchanged(deps)
    assert listed == []  # every folder from its stamp


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_in_an_old_run_is_seen(tmp_path, name):
    run = _aged_run(tmp_path)
    deps = _record(run)
    CHANGES[name](run)
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps)


def _same_names_new_inode(run: Path) -> None:
    (run / "ckpt" / "new.pth").write_bytes(b"z" * 10)
    os.utime(run / "ckpt" / "new.pth", ns=(0, os.stat(run / "ckpt" / "last.pth").st_mtime_ns))
    os.replace(run / "ckpt" / "new.pth", run / "ckpt" / "last.pth")


def _retarget_link(run: Path) -> None:
    os.unlink(run / "config_link.json")
    os.symlink(run / "train.log", run / "config_link.json")


def _file_to_folder(run: Path) -> None:
    os.unlink(run / "ckpt" / "last.pth")
    (run / "ckpt" / "last.pth").mkdir()


def _swap_folder(run: Path) -> None:
    """ckpt/ replaced by a copy: the same names, sizes and mtimes, other inodes."""
    (run / "ckpt2").mkdir()
    (run / "ckpt2" / "last.pth").write_bytes(b"x" * 10)
    st = os.stat(run / "ckpt" / "last.pth")
    os.utime(run / "ckpt2" / "last.pth", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(run / "ckpt2", ns=(st.st_atime_ns, os.stat(run / "ckpt").st_mtime_ns))
    os.unlink(run / "ckpt" / "last.pth")
    os.rmdir(run / "ckpt")
    os.rename(run / "ckpt2", run / "ckpt")


SAME_NAMES = {
    "same size and mtime, new inode": ("ckpt", _same_names_new_inode),
    "link retargeted": (".", _retarget_link),
    "file replaced by a folder": ("ckpt", _file_to_folder),
    "grown": (".", lambda run: CHANGES["grown"](run)),
}


@pytest.mark.parametrize("name", sorted(SAME_NAMES))
def test_a_change_keeping_the_names_and_the_folder_mtime_is_seen(tmp_path, name):
    run = _aged_run(tmp_path)
    deps = _record(run)
    folder, change = SAME_NAMES[name]
    restore = _keep_mtime(run / folder)
    change(run)
    restore()
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps)


def test_a_folder_swapped_for_a_copy_of_the_same_mtimes_is_seen(tmp_path):
    run = _aged_run(tmp_path)
    deps = _record(run)
    restore = _keep_mtime(run)
    _swap_folder(run)
    restore()  # every name, size and mtime as recorded: only ckpt/'s new inode tells
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps)
    ckpt = next(fp for kind, path, fp in deps if path == str(run / "ckpt"))
    assert fingerprints._by_stamp(str(run / "ckpt"), ckpt, None) is None  # another folder: listed, not stamped


def test_the_stamp_gives_the_listing_s_digest_and_entries(tmp_path):
    run = _run(tmp_path)
    os.symlink(tmp_path / "nowhere", run / "dangling")
    os.symlink(run / "ckpt", run / "ckpt_link")
    (run / "empty").mkdir()
    _age(tmp_path)
    for folder in (run, run / "ckpt", run / "empty", run / "model"):
        fp = fingerprints.dir_fingerprint(str(folder))
        assert "/" in fp
        digest, listed, _names = fingerprints._listing(str(folder))
        assert fingerprints._by_stamp(str(folder), fp, None) == (digest, listed)


def test_no_stamp_for_a_folder_changed_just_now_a_big_one_or_an_unknown_filesystem(tmp_path, monkeypatch):
    run = _aged_run(tmp_path)
    assert "/" in fingerprints.dir_fingerprint(str(run / "ckpt"))
    (run / "ckpt" / "new.pth").write_bytes(b"")  # the folder's mtime is now: a same-tick change could hide
    assert "/" not in fingerprints.dir_fingerprint(str(run / "ckpt"))
    big = tmp_path / "big"
    big.mkdir()
    for i in range(fingerprints.STAMP_MAX_NAMES + 1):
        (big / f"f{i}").write_bytes(b"")
    _age(big)
    assert "/" not in fingerprints.dir_fingerprint(str(big))
    monkeypatch.setattr(fingerprints, "STAMP_FILESYSTEMS", frozenset())
    monkeypatch.setattr(fingerprints, "_filesystems", {})
    assert "/" not in fingerprints.dir_fingerprint(str(run))
    assert fingerprints._filesystem_of(os.stat(run).st_dev) is not None  # this one is named


def test_a_stamp_is_not_a_fact_about_the_folder(tmp_path):
    run = _aged_run(tmp_path)
    os.utime(run / "ckpt")  # the folder alone touched now: its entries as they were
    young = fingerprints.dir_fingerprint(str(run / "ckpt"))
    os.utime(run / "ckpt", (OLD, OLD))
    old = fingerprints.dir_fingerprint(str(run / "ckpt"))
    assert "/" not in young and "/" in old and young != old
    assert file_deps.same("d", old, young) and file_deps.unchanged((("d", str(run / "ckpt"), young),))


def test_the_package_and_the_cache_folders_themselves_are_no_dependency(tmp_path):
    """The code version lists this package while a run is read (the first entry a worker stores): neither that
    listing nor one of the cache's own folder is a dependency of the run (any edit of the package was one)."""
    import pimm_inspect

    run = _run(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    with file_deps.recording(str(run), str(cache)) as recorder:
        os.listdir(os.path.dirname(pimm_inspect.__file__))
        os.listdir(cache)
        os.listdir(run)
    assert [path for _kind, path, _fp in recorder.result()] == [str(run)]
