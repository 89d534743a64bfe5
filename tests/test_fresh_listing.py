"""A row check right after discovery uses what discovery just found (a run folder's entries, a missing folder seen
missing in its parent's listing) and gives the answer a check of its own gives; an old finding is never used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_file_deps_listing import CHANGES, _one_by_one, _record, _run

from pimm_inspect.load import file_deps
from pimm_inspect.session import fresh as found_fresh
from tests.cache_support import scans


def _with_missing_folder(run: Path) -> tuple[file_deps.Dep, ...]:
    """The run's record plus a folder a reader looked for and did not find (pimm's ``code/`` snapshot)."""
    deps = _record(run)
    with file_deps.recording(str(run)) as recorder:
        try:
            os.listdir(run / "code")
        except FileNotFoundError:
            pass
    return deps + recorder.result()



def test_entries_listed_just_before_stand_for_the_listing(tmp_path, monkeypatch):
    run = _run(tmp_path)
    deps = _with_missing_folder(run)
    assert ("d", str(run / "code"), "-2") in deps and _one_by_one(deps)
    with os.scandir(run) as listing:
        entries = list(listing)
    listed = scans(monkeypatch)
    assert file_deps.unchanged(deps, known_entries={str(run): entries})
    assert str(run) not in listed  # the run folder: from the entries given
    assert str(run / "code") not in listed  # missing from the run folder's listing: missing
    (run / "code").mkdir()
    assert not file_deps.unchanged(deps)
    with os.scandir(run) as listing:
        entries = list(listing)
    assert not file_deps.unchanged(deps, known_entries={str(run): entries})


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_change_is_seen_through_entries_listed_after_it(tmp_path, name):
    run = _run(tmp_path)
    deps = _with_missing_folder(run)
    CHANGES[name](run)
    with os.scandir(run) as listing:
        entries = list(listing)
    assert not _one_by_one(deps)
    assert not file_deps.unchanged(deps, known_entries={str(run): entries})


def test_what_discovery_found_is_used_once_and_only_while_fresh(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(found_fresh.time, "monotonic", lambda: now[0])
    fresh = found_fresh.Fresh()
    fresh.note_real("/a", "/real/a")
    fresh.note_entries("/a", [])
    fresh.note_real("/b", "/real/b")
    assert fresh.take(["/a"]) == {"/a": ("/real/a", [])}
    assert fresh.take(["/a"]) == {}  # taken once
    now[0] += found_fresh.FRESH_S + 1
    assert fresh.take(["/b"]) == {"/b": (None, None)}  # too old: resolved and listed again by the check
    fresh.note_real("/c", "/real/c")
    now[0] += found_fresh.FRESH_S + 1
    fresh.take([])
    assert fresh.reals == {} and fresh.entries == {}  # old findings are dropped, not kept for later


def test_discovery_says_where_each_run_really_leads_without_resolving_it(tmp_path, monkeypatch):
    """Each run's real path, as the kernel would resolve it: the searched folder's, then the names below it, or a
    followed link's target (and what is below it); the session then resolves none of the runs itself."""
    from pimm_inspect.load.discover import iter_runs
    from pimm_inspect.session import Session, Settings, core

    tree = tmp_path / "tree"
    for run in (tree / "a" / "run1", tree / "deep" / "inner" / "run2", tree / "deep" / "inner" / "run3"):
        run.mkdir(parents=True)
        (run / "train.log").write_text("")
    os.symlink(tree / "deep" / "inner", tree / "link")  # inside the root: followed, reached before deep/inner
    os.symlink(tree, tmp_path / "alias")
    seen: dict[str, str] = {}
    found = list(iter_runs(tmp_path / "alias", on_listing=lambda run, _entries, real: seen.__setitem__(str(run), real)))
    assert sorted(seen) == sorted(str(run) for run in found) and len(found) == 3
    assert {run: os.path.realpath(run) for run in seen} == seen
    assert str(tmp_path / "alias" / "link" / "run2") in seen
    resolved: list[str] = []
    real = core.real_path
    monkeypatch.setattr(core, "real_path", lambda path: resolved.append(str(path)) or real(path))
    session = Session(Settings(cache_dir=tmp_path / "cache"))
    runs = session.discover(tmp_path / "alias")
    assert resolved == [str(tmp_path / "cache")]  # the cache's own place, once
    assert {path: real for path, (_at, real) in session._fresh.reals.items()} == {
        str(run): os.path.realpath(run) for run in runs}
