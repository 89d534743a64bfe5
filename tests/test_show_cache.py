"""Cached ``show --json`` documents (``session.store.doc_cache``): byte-identical to a fresh load and analysis, served
without loading while nothing the run was read from changed, made again after every change a run's read depends on
(the one rule, ``load.read_record``, with the same dependencies the ``ls`` row cache records)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import pimm_inspect
from pimm_inspect.analysis import analyze
from pimm_inspect.cli.main import cli
from pimm_inspect.load import read_record, safe
from pimm_inspect.load.assemble import load_run_and_liveness
from pimm_inspect.report.json_doc import SCHEMA_VERSION, dumps, show_run
from pimm_inspect.session import Session, Settings, show_docs
from pimm_inspect.session.store import disk_cache, doc_cache, row_cache
from tests.cache_support import DAY_AGO, age, spy_builds
from tests.test_changed_rule import KIND_CHANGES, _copy

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"
ALL = pimm_inspect.discover(RUNS)


def _show(*args: object) -> str:
    result = CliRunner().invoke(cli, ["show", "--json", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout


def _uncached(path: Path, base: Path) -> str:
    """What ``show --json PATH`` printed before documents were cached: each run under PATH loaded, analysed and
    turned into its ``show_run`` document, with no cache at all."""
    runs = [show_run(analyze(safe.load_safely(run)), base) for run in pimm_inspect.discover(path)]
    return dumps({"schema_version": SCHEMA_VERSION, "runs": runs}) + "\n"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(RUNS).as_posix())
def test_show_json_identical_off_cold_warm_and_warm_builds_nothing(path, tmp_path, monkeypatch):
    reference = _uncached(path, path)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert _show(path) == reference
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert _show(path) == reference  # cold: built and stored
    not_reusable = [run.absolute() for run in pimm_inspect.discover(path) if not safe.load_reusable(run)[1]]
    built = spy_builds(monkeypatch, show_docs, "build_show")
    assert _show(path) == reference  # warm
    assert built == not_reusable


def test_the_path_follows_the_path_given_on_a_warm_show(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    run = tree / "group" / "e2_clean"
    shutil.copytree(RUNS / "e2_clean", run, symlinks=True)
    age(tree, DAY_AGO)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert _show(run) == _uncached(run, run)  # stored
    built = spy_builds(monkeypatch, show_docs, "build_show")
    assert _show(tree) == _uncached(run, tree)  # "group/e2_clean", from the same entry
    assert '"path": "group/e2_clean"' in _show(tree)
    monkeypatch.chdir(tree / "group")
    assert _show(Path("e2_clean")) == _uncached(run, Path("e2_clean"))
    assert built == []


@pytest.mark.parametrize("case", sorted(KIND_CHANGES))
def test_every_file_kind_change_makes_the_document_again(case, tmp_path, monkeypatch):
    """A grown train.log, a new checkpoint, an edited config or metadata file, a deleted event file ...: the stored
    document is no longer served, and the next one equals a fresh uncached one."""
    name, inner, change = KIND_CHANGES[case]
    top = _copy(name, tmp_path)
    run = top / inner if inner != "." else top
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    before = _show(run)
    disk = Session().disk
    assert disk is not None and doc_cache.stored_show(disk, run.absolute()) is not None
    change(run)()
    assert doc_cache.stored_show(disk, run.absolute()) is None, "a stale document would be served"
    built = spy_builds(monkeypatch, show_docs, "build_show")
    after = _show(run)
    assert built == [run.absolute()]
    assert after == _uncached(run, run)
    if case in ("train.log grown", "new checkpoint", "run_metadata.json"):
        assert after != before


def test_the_document_records_the_same_read_as_the_row_of_every_fixture(tmp_path, monkeypatch):
    """One rule: the document's dependencies are those the ``ls`` row of the same run records."""
    tree = tmp_path / "runs"
    shutil.copytree(RUNS, tree, symlinks=True)
    age(tree, DAY_AGO)
    runs = pimm_inspect.discover(tree)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    disk = Session().disk
    assert disk is not None
    list(Session(Settings.from_env(jobs=1)).rows(runs))
    for run in runs:
        Session().show_document(run)
        stored = disk.get_value(doc_cache.SHOW_KIND, run.absolute(), "", doc_cache.SHOW_CODE)
        row = row_cache.stored_entry(disk, run.absolute())
        assert stored is not None and row is not None, run
        record = read_record.from_flat(stored[0], tuple(stored[1].split("\0")))
        assert record is not None and set(record.deps) == set(read_record.from_flat(row[0], row[1]).deps), run


def test_live_racy_and_cheap_reads_store_no_document(tmp_path, monkeypatch):
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    disk = Session().disk
    fresh = tmp_path / "fresh"
    shutil.copytree(RUNS / "e2_clean", fresh, copy_function=shutil.copy)  # mtimes now: within RACY_S
    _show(fresh)
    assert not doc_cache.entry_path(disk, fresh.absolute()).exists()
    run = _copy("e2_clean", tmp_path)
    monkeypatch.setattr(safe, "load_run_and_liveness",
                        lambda root, cache=None, **_: (load_run_and_liveness(root, cache=cache)[0], True))
    _show(run)  # live: the clock alone changes its status
    assert not doc_cache.entry_path(disk, run.absolute()).exists()
    monkeypatch.undo()
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS", "1e9")
    _show(run)  # cheaper to read again than an entry is worth
    assert not doc_cache.entry_path(disk, run.absolute()).exists()
    monkeypatch.setenv("PIMM_INSPECT_CACHE_MIN_DECODE_MS", "0")
    _show(run)
    assert doc_cache.stored_show(disk, run.absolute()) is not None


def test_damaged_foreign_or_future_documents_are_ignored_and_rebuilt(tmp_path, monkeypatch):
    run = _copy("e2_rollback", tmp_path)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    reference = _show(run)
    disk = Session().disk
    entry = doc_cache.entry_path(disk, run.absolute())
    good = entry.read_bytes()
    entry.write_bytes(good[:-7] + b"garbage")
    built = spy_builds(monkeypatch, show_docs, "build_show")
    assert _show(run) == reference and built == [run.absolute()]
    made_s, deps, text = disk.get_value(doc_cache.SHOW_KIND, run.absolute(), "", doc_cache.SHOW_CODE)
    record = read_record.ReadRecord(made_s, read_record.from_flat(made_s, tuple(deps.split("\0"))).deps, True)
    for bad in (record, read_record.ReadRecord(made_s + 3600.0, record.deps, True),  # made "in the future"
                read_record.ReadRecord(made_s, record.deps[:-1] + (("f", "/nonexistent/x", "?"),), True)):
        doc_cache.store_show(disk, run.absolute(), bad, {"path": "elsewhere"})  # a document naming its path
        assert doc_cache.stored_show(disk, run.absolute()) is None
    disk.put_value(doc_cache.SHOW_KIND, run.absolute(), "", (made_s, deps, "[1, 2]"), doc_cache.SHOW_CODE)
    assert doc_cache.stored_show(disk, run.absolute()) is None  # not a document
    assert _show(run) == reference
    assert len(built) == 2 and disk_cache.entries(tmp_path / "cache")


def test_the_code_version_follows_every_source_file_of_the_folders_it_covers(tmp_path):
    """Entries of other reader, analysis or report code are never reused: the version digests every ``.py`` file of
    the folders a value depends on, at any depth, and of the package's root, and nothing else."""
    package = tmp_path / "pkg"
    for rel in ("model.py", "evidence.py", "sources/train_log/_fast.py", "analysis/checks.py", "tui/app.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("x = 1\n")
    (package / "sources" / "notes.txt").write_text("not code")

    def version(*folders: str) -> str:
        return disk_cache.source_digest(str(package), ("sources", *folders))

    before, with_analysis = version(), version("analysis")
    assert before != with_analysis
    (package / "sources" / "notes.txt").write_text("still not code")
    (package / "tui" / "app.py").write_text("x = 2\n")  # a folder not covered
    assert (version(), version("analysis")) == (before, with_analysis)
    (package / "sources" / "train_log" / "_fast.py").write_text("x = 22\n")  # two levels down
    assert version() != before
    changed = version("analysis")
    (package / "analysis" / "checks.py").write_text("x = 333\n")  # (each rewrite changes the size: same-tick mtimes)
    assert version("analysis") != changed
    for top in ("model.py", "names.py"):  # every module at the package's root (the name escape moved there)
        latest = version("analysis")
        (package / top).write_text("y = 11111\n")
        assert version("analysis") != latest
