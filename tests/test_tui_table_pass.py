"""The runs table's pass over a prefetched warm tree (``tui/table_load.py``): the first screenful's stored rows,
found together by the child, reach the table in one message, not one per run. (Speed itself is measured in
bench/bench_runs_table.py: no timing here.)"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from pimm_inspect.session import Session  # noqa: E402
from pimm_inspect.tui.messages import (DiscoveryDone, LoadFinished, LoadProgress, RowLoaded, RowsLoaded,  # noqa: E402
                                       RunsFound)
from pimm_inspect.tui.prefetch import PrefetchedRows, RowPrefetch  # noqa: E402
from pimm_inspect.tui.table_load import FIRST_ROWS, SessionRows, TablePass  # noqa: E402
from tests.test_tui_table_cache import _quiet_tree  # noqa: E402


def _pass(tree: Path, session: Session, owned: set[str] = frozenset()) -> list[object]:
    """The messages of one first pass over ``tree``, its runs and rows taken from a prefetch child."""
    prefetch = RowPrefetch.start(session, tree)
    assert prefetch is not None
    posted: list[object] = []
    try:
        TablePass(tree.absolute(), tree, lambda: session.staged, posted.append, lambda: False, owned.__contains__,
                  PrefetchedRows(SessionRows(session), prefetch)).run()
    finally:
        prefetch.close()
    assert prefetch.taken
    return posted


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_prefetched_screenful_of_stored_rows_comes_in_one_message(tmp_path, monkeypatch) -> None:
    if threading.active_count() != 1:
        pytest.skip("another thread is running: no prefetch by design")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=6)
    paths = Session().discover(tree)
    listed = dict(zip(paths, Session().rows(paths, tree)))  # what ls TREE stores
    posted = _pass(tree, Session())
    assert not [m for m in posted if isinstance(m, RowLoaded)]  # no run read, no row sent alone
    found = [m for m in posted if isinstance(m, RunsFound)]
    loaded = [m for m in posted if isinstance(m, RowsLoaded)]
    assert len(found) == 1 and len(loaded) == 1 and len(found[0].paths) == 6 < FIRST_ROWS
    assert {path.absolute().as_posix(): row.status for path, row in loaded[0].rows} == \
        {Path(path).absolute().as_posix(): row.status for path, row in listed.items()}
    assert [type(m) for m in posted] == [LoadProgress, RunsFound, RowsLoaded, LoadProgress, DiscoveryDone,
                                         LoadProgress, LoadProgress, LoadFinished]
    done = [m for m in posted if isinstance(m, LoadProgress)]
    assert (done[1].done, done[1].total) == (6, 6) and (done[-1].done, done[-1].total) == (6, 6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_run_a_run_screen_reads_is_left_out_of_the_batch(tmp_path, monkeypatch) -> None:
    """A run an open run screen reads itself gets no row from the pass, but counts as done."""
    if threading.active_count() != 1:
        pytest.skip("another thread is running: no prefetch by design")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=4)
    list(Session().rows(Session().discover(tree), tree))
    owned = (tree / "run_02").absolute().as_posix()
    posted = _pass(tree, Session(), {owned})
    rows = [path.as_posix() for m in posted if isinstance(m, RowsLoaded) for path, _row in m.rows]
    assert len(rows) == 3 and owned not in rows
    assert not [m for m in posted if isinstance(m, RowLoaded)]
    assert [(m.done, m.total) for m in posted if isinstance(m, LoadProgress)][-1] == (4, 4)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_the_child_works_out_the_cell_texts_the_table_shows(tmp_path, monkeypatch) -> None:
    """Each row the child sends carries its runs-table cell texts, the very ones the table works out for the row
    ``ls`` stored; the table wraps them (it works out none itself)."""
    from rich.style import Style

    from pimm_inspect.tui import row_texts
    from pimm_inspect.tui.widgets.runs_cells import CellMaker, CellStyles

    if threading.active_count() != 1:
        pytest.skip("another thread is running: no prefetch by design")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=5)
    paths = Session().discover(tree)
    listed = {path.absolute().as_posix(): row for path, row in zip(paths, Session().rows(paths, tree))}
    sent = [(path, row) for m in _pass(tree, Session()) if isinstance(m, RowsLoaded) for path, row in m.rows]
    assert len(sent) == 5
    expected = {key: row_texts.row_texts(row) for key, row in listed.items()}
    assert len({texts[1] for texts in expected.values()}) > 1  # the fixtures differ (statuses): a real comparison
    assert {path.absolute().as_posix(): row.cell_texts for path, row in sent} == expected
    monkeypatch.setattr(row_texts, "row_texts", lambda run: pytest.fail("the table worked out a sent row's texts"))
    maker = CellMaker(CellStyles(Style(color="red"), Style(color="yellow"), Style(italic=True), Style(bold=True)))
    for path, row in sent:
        made = maker.row(row, None)
        assert [str(made.cells[column]) for column in row_texts.COLUMNS] == list(expected[path.absolute().as_posix()][:-1])


@pytest.mark.parametrize("copies", [5, 36])  # rows from their own entries; from the tree's row index (>= 32 runs)
def test_the_child_sends_texts_the_ui_decodes_on_first_use(tmp_path, monkeypatch, copies) -> None:
    """A batch holds texts only (no ``Path``, ``RunSummary`` or row objects to pickle and rebuild); the table reads a
    sent row's status and cell texts without decoding its head or detail, and every field, once asked for, is the
    field of the row ``ls`` stored."""
    import pickletools
    import pickle

    from pimm_inspect.session import row_head
    from pimm_inspect.session.store import codec
    from pimm_inspect.tui.prefetch import Batch, SentRow, _produce

    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=copies)
    paths = Session().discover(tree)
    listed = {path.absolute(): pickle.loads(pickle.dumps(row))  # plain rows (a stored row pickles as one)
              for path, row in zip(paths, Session().rows(paths, tree))}
    frames: list[object] = []
    _produce(Session(), tree.absolute(), frames.append)  # the child's work, here
    batches = [f for f in frames if isinstance(f, Batch)]
    assert sum(len(b.sent) for b in batches) == copies and not any(b.stored for b in batches)
    for batch in batches:
        data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
        named = [arg for op, arg, _pos in pickletools.genops(data) if op.name in ("SHORT_BINUNICODE", "BINUNICODE")
                 and arg in ("pathlib", "PosixPath", "RunSummary", "RunRow", "IndexedRow")]
        assert named == []  # nothing but the batch's own class is rebuilt on the other side
    heads: list[str] = []
    real_head = row_head.head_values
    monkeypatch.setattr(row_head, "head_values", lambda text: heads.append(text) or real_head(text))
    details: list[str] = []
    real_detail = codec.from_text
    monkeypatch.setattr(codec, "from_text", lambda text: details.append(text) or real_detail(text))
    sent = {path: row for b in pickle.loads(pickle.dumps(batches)) for path, row in b.rows(b.paths).items()}
    assert set(sent) == set(listed)
    assert {path: row.status for path, row in sent.items()} == {path: row.status for path, row in listed.items()}
    assert all(isinstance(row, SentRow) and row.cell_texts for row in sent.values())
    assert heads == [] and details == []  # the status and the cell texts: nothing decoded
    for path, row in sent.items():
        assert row.summary == listed[path].summary and row.kind == listed[path].kind
        assert row == listed[path]  # every field (the detail's too)
    assert len(heads) == copies and len(details) == copies  # each decoded once, on first use


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_cold_screenful_is_read_together_and_shown_row_by_row(tmp_path, monkeypatch) -> None:
    """The first screenful of a cold tree (found together by the prefetch child) is read in one request, so the
    session's worker processes read it (not this process, one run at a time, by turns with the UI's drawing); each
    row is still posted as soon as it comes, in order."""
    if threading.active_count() != 1:
        pytest.skip("another thread is running: no prefetch by design")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))  # empty: every run is read
    tree = _quiet_tree(tmp_path, copies=FIRST_ROWS + 4)
    asked: list[list[Path]] = []

    class Recording(SessionRows):
        def build(self, paths, cancelled, under=None):  # type: ignore[no-untyped-def]
            asked.append(list(paths))
            return super().build(paths, cancelled, under)

    session = Session()
    prefetch = RowPrefetch.start(session, tree)
    assert prefetch is not None
    posted: list[object] = []
    try:
        TablePass(tree.absolute(), tree, lambda: session.staged, posted.append, lambda: False, lambda key: False,
                  PrefetchedRows(Recording(session), prefetch)).run()
    finally:
        prefetch.close()
    found = [p for m in posted if isinstance(m, RunsFound) for p in m.paths]
    assert len(asked[0]) == FIRST_ROWS and asked[0] == found[:FIRST_ROWS]  # one request for the screenful
    one = [m.path for m in posted if isinstance(m, RowLoaded)]
    assert one == found[:FIRST_ROWS]  # each row on its own message, in order
    assert asked[1:] == [found[FIRST_ROWS:]]  # the rest: one more request
    rows = {m.path: m.row for m in posted if isinstance(m, RowLoaded)}
    rows.update({p: r for m in posted if isinstance(m, RowsLoaded) for p, r in m.rows})
    assert len(rows) == FIRST_ROWS + 4 and {r.status for r in rows.values()} >= {"finished", "crashed"}
