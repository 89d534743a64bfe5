"""The runs table's fill on a warm tree does only what is new (issues 20 and 23): a run's cells are made once, when
its row arrives, not on every layout; rows laid out again where they were are not drawn again; the UI's first
screen imports neither the run screen nor the plotting library. (Speed itself is measured in
bench/bench_runs_table.py: no timing here.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable  # noqa: E402

from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.widgets import runs_cells  # noqa: E402
from tests.test_tui_table_cache import _quiet_tree  # noqa: E402
from tests.tui_support import settle  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NOT_FOR_THE_TABLE = ("plotext", "textual_plotext", "pimm_inspect.tui.screens.run", "pimm_inspect.tui.screens.compare",
                     "pimm_inspect.tui.widgets.curves", "numpy", "pimm_inspect.analysis.pipeline",
                     "pimm_inspect.analysis.summary", "pimm_inspect.session.staged", "pimm_inspect.load.quick",
                     "pimm_inspect.load.assemble", "pimm_inspect.report.ls_columns",
                     "pimm_inspect.session.store.row_cache")
"""What the UI's runs table of stored rows never needs: the run screen, plots, reading and analysing a run."""


def test_the_runs_table_imports_neither_the_run_screen_nor_plotext() -> None:
    code = f"import sys; import pimm_inspect.tui.app; print(sorted(m for m in {NOT_FOR_THE_TABLE!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, cwd=REPO)
    assert out.stdout.strip() == "[]"


@pytest.mark.asyncio
async def test_a_layout_makes_and_draws_only_what_changed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=6)
    made: list[object] = []
    real_row = runs_cells.CellMaker.row
    monkeypatch.setattr(runs_cells.CellMaker, "row", lambda self, run, quick: made.append(run) or real_row(self, run,
                                                                                                          quick))
    drawn: list[tuple[int, int]] = []
    real_draw = DataTable._render_cell

    def draw(table, row, column, *args, **kwargs):  # DataTable's own drawing of one cell (Rich rendering)
        drawn.append((row, column))
        return real_draw(table, row, column, *args, **kwargs)

    monkeypatch.setattr(DataTable, "_render_cell", draw)
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.runs_screen.table
        assert len(table.runs) == 6 and table.row_count == 6
        assert {id(run) for run in made if run is not None} == {id(run) for run in table.runs.values()}
        before = {key: [str(cell) for cell in table.get_row(key)] for key in table.paths}
        made.clear()
        drawn.clear()
        table.relayout()  # the same rows, where they were
        await pilot.pause()
        await pilot.pause()
        assert made == []  # no run's cells made again
        assert [cell for cell in drawn if cell[0] >= 0] == []  # no row's cell drawn again (the header may be)
        assert {key: [str(cell) for cell in table.get_row(key)] for key in table.paths} == before
        # A run that changes gets its cells made (and drawn) again: only that one.
        key = sorted(table.paths)[2]
        app.runs_screen.set_run(table.paths[key], table.runs[key])
        table.flush()
        await pilot.pause()
        assert made == [table.runs[key]]
        assert {row for row, _column in drawn if row >= 0} <= {table.get_row_index(key)}
        # The mark is part of the row: marking redraws that row's mark, nothing is made again.
        made.clear()
        table.toggle_mark(key)
        await pilot.pause()
        assert made == [] and str(table.get_row(key)[0]) == "●"


PREFETCHED = """
import json, sys
from pathlib import Path
from pimm_inspect.session import Session
from pimm_inspect.tui.start import begin

session = Session()
prefetch = begin(session, Path(sys.argv[1]))  # as pimm-inspect TREE does (cli/cmd_ui.py), before the UI imports
import pimm_inspect.tui.app as app_module


class Filled(app_module.InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))  # Textual cannot find a -c class's file

    def on_load_finished(self, message):
        super().on_load_finished(message)
        self.call_after_refresh(self.exit)


app = Filled(sys.argv[1], follow_interval_s=0, session=session, prefetch=prefetch)
app.run(headless=True, size=(120, 36))
table = app.runs_screen.table
# A row built (a run read and analysed) is built by the session's rows module, imported on first use.
print(json.dumps({"taken": prefetch is not None and prefetch.taken, "built": "pimm_inspect.session.rows" in sys.modules,
                  "rows": {Path(k).name: [str(c) for c in table.get_row(k)] for k in table.paths},
                  "imported": sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules),
                  "findings": {Path(k).name: [f.code for f in row.findings] for k, row in table.runs.items()}}))
"""


@pytest.mark.parametrize("copies", [6, 36])  # rows from their own entries; from the tree's row index (>= 32 runs)
def test_the_prefetched_first_pass_shows_the_rows_ls_stores(tmp_path, copies) -> None:
    """``pimm-inspect TREE``'s child finds the runs and reads their stored rows while the UI starts: the table shows
    the rows ``ls`` stored, no run is read, and it is the child's pass (a fresh process: it forks)."""
    import json
    import os

    tree = _quiet_tree(tmp_path, copies=copies)
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    listed = json.loads(subprocess.run([sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)], env=env,
                                       capture_output=True, text=True, timeout=300, check=True).stdout)["runs"]
    out = subprocess.run([sys.executable, "-c", PREFETCHED, str(tree), json.dumps(NOT_FOR_THE_TABLE)], env=env,
                         capture_output=True, text=True, timeout=300, check=True, cwd=tmp_path)
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown["taken"] and not shown["built"]
    # The rows came over as the cache holds them: the table made its cells from them without importing what reads,
    # analyses or decodes runs.
    assert shown["imported"] == []
    assert sorted(shown["rows"]) == sorted(Path(r["path"]).name for r in listed) and len(listed) == copies
    for run in listed:
        cells = shown["rows"][Path(run["path"]).name]
        assert cells[3] == run["status"] and cells[4] == str(run["attempts"])
        # A row's detail (its findings), decoded when asked for, is the one ls stored.
        assert len(shown["findings"][Path(run["path"]).name]) == sum(run["findings"].values())


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_cells_drawn_without_rich_are_what_datatable_draws(size, monkeypatch) -> None:
    """The plain-cell drawing gives the very segments (text, style, the row/column meta clicks read) DataTable's own
    Rich rendering gives, on every line on screen: cursor row, zebra rows, styled findings, the top finding column."""
    from textual.geometry import Region

    from pimm_inspect.tui.widgets import bulk_table
    from tests.tui_support import RUNS, fixed_loader

    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.runs_screen.table
        table.move_cursor(row=2)
        await pilot.pause()

        def lines() -> list[list[tuple[str, object]]]:
            table._drawn.clear()
            table._clear_caches()
            table._update_count += 1
            return [[(s.text, s.style) for s in strip] for strip in
                    table.render_lines(Region(0, 0, table.size.width, table.size.height))]

        real = bulk_table.BulkTable._draw_plain
        drawn: list[object] = []
        plain_cells: list[tuple[int, str]] = []  # (row, text) of the cells drawn the plain way

        def draw_plain(self, cell, height, row, *args):
            drawn.append(real(self, cell, height, row, *args))
            if drawn[-1] is not None:
                plain_cells.append((row, str(cell)))
            return drawn[-1]

        monkeypatch.setattr(bulk_table.BulkTable, "_draw_plain", draw_plain)
        plain = lines()
        assert sum(lines is not None for lines in drawn) > 5 * table.size.height  # most cells took the plain way
        # The header's labels (sort arrows too) and names cut with an ellipsis are drawn the plain way as well.
        assert {text for row, text in plain_cells if row == -1} >= {"run▲", "status "}
        assert any("…" in text for row, text in plain_cells if row >= 0)
        monkeypatch.setattr(bulk_table.BulkTable, "_draw_plain", lambda *args, **kwargs: None)
        assert table.row_count > 10 and plain == lines()


@pytest.mark.asyncio
async def test_the_table_reads_the_row_index_ls_wrote(tmp_path, monkeypatch) -> None:
    """A warm tree's rows come from the tree's row index (one entry, written by ``ls``), not one entry per run."""
    import os

    from pimm_inspect.session import Session
    from pimm_inspect.session.row_index import INDEX_MIN_RUNS
    from pimm_inspect.session.store import row_cache

    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=INDEX_MIN_RUNS + 4)
    listed = list(Session().rows(Session().discover(tree), tree))  # what ls TREE does: rows stored, index written
    per_run: list[Path] = []
    real = row_cache.stored_row
    monkeypatch.setattr(row_cache, "stored_row", lambda disk, root, *args: per_run.append(root) or real(disk, root,
                                                                                                        *args))
    app = make_app(tree, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.runs_screen.table
        assert len(table.runs) == len(listed) == INDEX_MIN_RUNS + 4
        assert {str(r.status) for r in table.runs.values()} == {str(r.status) for r in listed}
    assert per_run == [], os.linesep.join(map(str, per_run))


def test_the_row_prefetch_child_is_killed_and_reaped_on_close(tmp_path, monkeypatch) -> None:
    """Quitting (or a superseded pass) stops the tree's prefetching child at once: killed, reaped, no frame after."""
    import os
    import threading
    import time

    from pimm_inspect.session import Session
    from pimm_inspect.tui.prefetch import RowPrefetch

    if not hasattr(os, "fork") or threading.active_count() != 1:
        pytest.skip("no fork here, or another thread runs: no prefetch by design")
    monkeypatch.setenv("PIMM_INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    tree = _quiet_tree(tmp_path, copies=3)
    session = Session()
    monkeypatch.setattr(session, "iter_runs", lambda root, on_error=None: iter(time.sleep(60) or ()))  # it hangs
    prefetch = RowPrefetch.start(session, tree)
    assert prefetch is not None
    prefetch.close()
    assert prefetch.child.reaped
    with pytest.raises(ProcessLookupError):
        os.kill(prefetch.child.pid, 0)  # gone, not a zombie left for later
    assert prefetch.next_frame() is None  # the end: the pass says the search stopped
