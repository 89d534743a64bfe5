"""The row index (``session.row_index``): a warm ``ls`` of a tree reads one entry, prints what an uncached ``ls``
prints byte for byte, and never serves a row of a run that changed."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

from pimm_inspect.report.json_doc import SCHEMA_VERSION, dumps, ls_document, ls_run, ls_run_fragment
from pimm_inspect.session import Session, row_head, row_index, rows
from pimm_inspect.session.store import row_cache
from tests.cache_support import ls_stdout, quiet_copy, spy_builds

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "fixtures" / "runs"


def _no_entry_reads(monkeypatch) -> None:
    """From now on any read of a per-run row entry fails the test: rows must come from the index."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("a per-run row entry was read")

    monkeypatch.setattr(row_index, "stored_entry", refuse)
    monkeypatch.setattr(row_cache, "stored_entry", refuse)


OUTPUTS = (("--json",), (), ("--json", "--columns", "path,status,cfg.lr,last:train/loss,top_finding"),
           ("--json", "--sort", "-last_step", "--filter", "status=finished"))


def test_warm_ls_of_a_tree_is_served_from_the_index_byte_for_byte(tmp_path, monkeypatch):
    tree = quiet_copy(RUNS, tmp_path / "runs")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    reference = [ls_stdout(tree, *args) for args in OUTPUTS]
    assert len(json.loads(reference[0])["runs"]) > row_index.INDEX_MIN_RUNS
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert ls_stdout(tree, "--json") == reference[0]  # cold: every run read, its row stored, then the index written
    index = row_index.read_index(Session().disk, tree.absolute())
    assert index is not None and len(index.where) == len(json.loads(reference[0])["runs"])
    built = spy_builds(monkeypatch, rows, "build_row")
    _no_entry_reads(monkeypatch)
    written: list[Path] = []
    monkeypatch.setattr(row_index, "write_index", lambda _disk, key, *_a: written.append(key))
    assert [ls_stdout(tree, *args) for args in OUTPUTS] == reference  # JSON, text table, columns, sort and filter
    assert built == [] and written == []  # nothing read again, the index left as it was


def test_a_changed_run_is_read_again_and_the_index_follows(tmp_path, monkeypatch):
    tree = quiet_copy(RUNS, tmp_path / "runs")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    ls_stdout(tree, "--json")
    run = tree / "e2_clean"
    log = run / "train.log"
    last = next(line for line in reversed(log.read_text().splitlines()) if "Train: [" in line)
    with open(log, "a") as fh:  # one more epoch's first steps: same folder listing, a bigger file
        fh.write(last.replace("09:01:00", "09:01:02").replace("[3/3][25/25]", "[4/4][5/25]") + "\n")
    old = time.time() - 3_600
    os.utime(log, (old, old))  # not racy: the new row may be stored (and indexed)
    built = spy_builds(monkeypatch, rows, "build_row")
    changed = ls_stdout(tree, "--json")
    assert built == [run.absolute()]
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    assert changed == ls_stdout(tree, "--json")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    built.clear()
    _no_entry_reads(monkeypatch)
    assert ls_stdout(tree, "--json") == changed and built == []  # the rewritten index holds the new row


def test_an_indexed_row_is_the_row_a_fresh_load_gives(tmp_path, monkeypatch):
    tree = quiet_copy(RUNS, tmp_path / "runs")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    session = Session()
    paths = session.discover(tree)
    list(session.rows(paths, tree))
    served = Session().stored_rows(paths, tree)
    assert set(served) == set(paths)
    for path in paths:
        row = served[path]
        assert isinstance(row, row_index.IndexedRow)
        fresh = rows.build_row(path.absolute())[0]
        assert row == fresh and fresh == row
        assert pickle.loads(pickle.dumps(row)) == fresh
        assert all(row_head.same(getattr(row, name), getattr(fresh, name)) for name in row_head.HEAD_FIELDS)
        assert row.ls_json_fragment == ls_run_fragment(fresh)


def test_ls_document_is_the_json_document_of_the_rows(tmp_path):
    tree = quiet_copy(RUNS, tmp_path / "runs")
    found = Session(on_problem=lambda _m: None).discover(tree)
    plain = [rows.build_row(path.absolute())[0] for path in found]
    for base in (tree, tree.parent, Path(os.path.relpath(tree)), found[0]):
        chosen = plain if base != found[0] else plain[:1]
        expected = dumps({"schema_version": SCHEMA_VERSION, "runs": [ls_run(r, base) for r in chosen]})
        assert ls_document(chosen, base) == expected
    assert ls_document([], tree) == dumps({"schema_version": SCHEMA_VERSION, "runs": []})


def test_rows_built_in_workers_come_back_as_their_index_records(tmp_path, monkeypatch):
    """A cold pass hands each stored row back from its worker process as its index record: the index is written
    without reading one stored entry back, and holds what it would hold when made from the stored entries."""
    from pimm_inspect.session import Settings

    tree = quiet_copy(RUNS, tmp_path / "runs")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", "off")
    reference = ls_stdout(tree, "--json")
    cache = tmp_path / "cache"
    session = Session(Settings(cache_dir=cache, jobs=2))
    paths = session.discover(tree)
    assert len(paths) - 1 >= row_cache.POOL_MIN_RUNS  # (one run is live: neither stored nor indexed)
    read_back: list[Path] = []
    real = row_index.stored_entry
    monkeypatch.setattr(row_index, "stored_entry", lambda disk, root: read_back.append(root) or real(disk, root))
    got = list(session.rows(paths, tree))
    assert ls_document(got, tree) + "\n" == reference
    indexed = [row for row in got if type(row) is row_index.IndexedRow]
    assert len(indexed) >= len(paths) - 1
    assert sorted(read_back) == sorted(path.absolute() for path in paths if path.absolute() not in
                                       {row.root for row in indexed})  # only rows that came back plain
    index = row_index.read_index(session.disk, tree.absolute())
    assert index is not None
    for row in indexed:
        made_s, flat, stored = real(session.disk, row.root)
        at = index.where[str(row.root)]
        assert index.made[at] == made_s
        assert index.record(at) == row_index._record(str(row.root), made_s, flat, stored)


def test_a_big_check_split_with_a_forked_process_gives_the_serial_answer(tmp_path, monkeypatch):
    from pimm_inspect.session import Settings

    tree = quiet_copy(RUNS, tmp_path / "runs")
    cache = tmp_path / "cache"
    paths = Session(Settings(cache_dir=cache)).discover(tree)
    list(Session(Settings(cache_dir=cache)).rows(paths, tree))
    with open(tree / "e2_clean" / "train.log", "a") as fh:
        fh.write("one more line\n")  # this run's row is no longer served
    serial = Session(Settings(cache_dir=cache, jobs=1)).stored_rows(paths, tree)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    monkeypatch.setattr(row_index, "SPLIT_MIN_RUNS", 4)
    split = Session(Settings(cache_dir=cache, jobs=2)).stored_rows(paths, tree)
    assert forks == [1]
    assert split == serial and len(serial) >= len(paths) - 2 and tree / "e2_clean" not in serial


def test_what_the_forked_check_cannot_answer_is_checked_here():
    parent = os.getpid()

    def valid(item: tuple[int, int]) -> bool:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return item[0] % 3 == 0

    items = [(i, i) for i in range(10)]
    assert row_index._checked_in_two(items, valid) == [i % 3 == 0 for i in range(10)]
