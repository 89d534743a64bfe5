"""The runs table's cold fill (issue 23: "cold no slower than ls"): the rows read after the first screenful reach the
UI in batches (``table_load.RowBatches``), not a message per row, and are read as ``ls`` of the tree reads them, so
the tree's row index is written for the next start. (Speed itself is measured in bench/bench_runs_table.py.)"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from pimm_inspect.evidence import RunRow  # noqa: E402
from pimm_inspect.session import Session  # noqa: E402
from pimm_inspect.session.row_index import index_key, read_index  # noqa: E402
from pimm_inspect.tui import table_load  # noqa: E402
from pimm_inspect.tui.app import InspectApp, make_app  # noqa: E402
from pimm_inspect.tui.messages import RowLoaded, RowsLoaded  # noqa: E402
from pimm_inspect.tui.table_load import RowBatches, SessionRows  # noqa: E402
from tests.test_tui_table_cache import _quiet_tree  # noqa: E402
from tests.tui_support import settle, until  # noqa: E402


@pytest.mark.asyncio
async def test_a_cold_tree_fills_in_batches_and_leaves_its_row_index(tmp_path, monkeypatch) -> None:
    tree = _quiet_tree(tmp_path, copies=36)
    paths = Session().discover(tree)
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "elsewhere"))
    expected = {path.absolute().as_posix(): row for path, row in zip(paths, Session().rows(paths))}
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))  # empty: the table's fill is cold
    monkeypatch.setattr(table_load, "FIRST_ROWS", 2)  # 34 runs read after the search (an index needs >= 32)
    monkeypatch.setattr(table_load, "ROWS_BATCH_S", 600.0)  # the first row read at once, every other one at the end
    one: list[Path] = []
    many: list[list[Path]] = []
    real_one, real_many = InspectApp.on_row_loaded, InspectApp.on_rows_loaded

    def on_row_loaded(app: InspectApp, message: RowLoaded) -> None:
        one.append(message.path)
        real_one(app, message)

    def on_rows_loaded(app: InspectApp, message: RowsLoaded) -> None:
        many.append([p for p, _row in message.rows])
        real_many(app, message)

    monkeypatch.setattr(InspectApp, "on_row_loaded", on_row_loaded)
    monkeypatch.setattr(InspectApp, "on_rows_loaded", on_rows_loaded)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.runs_screen.table
        shown = {key: table.runs[key] for key in table.paths}
        assert len(shown) == 36 == table.row_count
        assert shown == expected  # every row, the very rows a read of each run gives
    assert len(one) == 2  # the first screenful: each row as soon as it is read
    assert [len(batch) for batch in many] == [1, 33]  # the rest: two messages, not 34
    assert {p.as_posix() for p in one} | {p.as_posix() for batch in many for p in batch} == set(expected)
    # Read as ls reads the tree: its row index holds the rows read after the search, so the next start reads it.
    disk = Session().disk
    assert disk is not None
    index = read_index(disk, index_key(tree))
    assert index is not None
    later = {p.as_posix() for batch in many for p in batch}
    assert set(index.where) == later
    assert set(Session().stored_rows(paths, tree)) == set(paths)


def test_a_row_waits_for_its_batch_at_most_the_batch_interval() -> None:
    """A row read soon after a batch is posted by the timer once the interval is over, also when no other row
    follows (a slow next read); a row after a quiet spell goes at once; a cancelled pass posts nothing more."""
    posted: list[list[str]] = []
    more = threading.Event()

    def post(rows: list[tuple[Path, RunRow]]) -> None:
        posted.append([p.name for p, _row in rows])
        more.set()

    row = RunRow.__new__(RunRow)
    batches = RowBatches(post, every=0.05)
    batches.add(Path("a"), row)
    assert posted == [["a"]]  # nothing posted before: at once
    more.clear()
    batches.add(Path("b"), row)
    batches.add(Path("c"), row)
    assert more.wait(30), "the waiting rows were never posted"  # a hang guard, not a timing check
    assert posted == [["a"], ["b", "c"]]
    batches.close(post=True)
    assert posted == [["a"], ["b", "c"]]  # nothing waited

    posted.clear()
    cancelled = RowBatches(post, every=600)
    cancelled.add(Path("a"), row)
    cancelled.add(Path("b"), row)
    cancelled.close(post=False)
    cancelled.add(Path("c"), row)
    assert posted == [["a"]]
    finished = RowBatches(post, every=600)
    finished.add(Path("a"), row)
    finished.add(Path("b"), row)
    finished.close(post=True)
    assert posted == [["a"], ["a"], ["b"]]


@pytest.mark.asyncio
async def test_sort_filter_and_cursor_hold_while_batches_arrive(tmp_path, monkeypatch) -> None:
    """The user sorts, filters and moves the cursor between two batches of a cold fill: the later batch keeps all
    three (the rows land in the sort order and filter the user chose, the cursor on the run it was on)."""
    from textual.widgets import Input

    from pimm_inspect.tui.screens.runs import RunsScreen

    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=10)  # five kinds of run, twice
    monkeypatch.setattr(table_load, "FIRST_ROWS", 2)
    monkeypatch.setattr(table_load, "ROWS_BATCH_S", 600.0)
    gate = threading.Event()
    real_build = SessionRows.build

    def build(self: SessionRows, paths: list[Path], cancelled, under: Path | None = None):
        rows = real_build(self, paths, cancelled, under)
        if len(paths) > 1:  # the reads after the search: the first row, then a wait for the test
            yield next(rows)
            assert gate.wait(60), "the test never let the rest be read"
        yield from rows

    monkeypatch.setattr(SessionRows, "build", build)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.runs_screen.table
        await until(pilot, lambda: len(table.runs) == 3 and not table.flush_pending, what="the first batch")
        await pilot.press("slash", *"!run_05", "enter")
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, RunsScreen) and screen.sort_key == "kind"
        keys = [row.key.value for row in table.ordered_rows]
        on = (tree / "run_07").absolute().as_posix()
        table.move_cursor(row=keys.index(on))
        gate.set()
        await settle(pilot)
        assert len(table.runs) == 10  # every row arrived
        assert screen.query_one("#runs-filter", Input).value == "!run_05" and screen.sort_key == "kind"
        shown = [str(row.key.value) for row in table.ordered_rows]
        assert len(shown) == 9 and (tree / "run_05").absolute().as_posix() not in shown
        kinds = [str(table.get_row(key)[2]) for key in shown]
        assert kinds == sorted(kinds) and len(set(kinds)) > 1
        assert table.cursor_key() == on
