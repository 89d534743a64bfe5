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


def test_the_runs_table_imports_neither_the_run_screen_nor_plotext() -> None:
    code = ("import sys; import pimm_inspect.tui.app; print(sorted(m for m in ('plotext', 'textual_plotext', "
            "'pimm_inspect.tui.screens.run', 'pimm_inspect.tui.screens.compare', 'pimm_inspect.tui.widgets.curves') "
            "if m in sys.modules))")
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
from pimm_inspect.session import Session, rows
from pimm_inspect.tui.prefetch import RowPrefetch

session = Session()
prefetch = RowPrefetch.start(session, Path(sys.argv[1]))  # as pimm-inspect TREE does, before the UI imports
built = []
real = rows.build_row
rows.build_row = lambda root, cache=None: built.append(str(root)) or real(root, cache)
import pimm_inspect.tui.app as app_module


class Filled(app_module.InspectApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("pimm_inspect.tcss"))  # Textual cannot find a -c class's file

    def on_load_finished(self, message):
        super().on_load_finished(message)
        self.call_after_refresh(self.exit)


app = Filled(sys.argv[1], follow_interval_s=0, session=session, prefetch=prefetch)
app.run(headless=True, size=(120, 36))
table = app.runs_screen.table
print(json.dumps({"taken": prefetch is not None and prefetch.taken, "built": built,
                  "rows": {Path(k).name: [str(c) for c in table.get_row(k)] for k in table.paths}}))
"""


def test_the_prefetched_first_pass_shows_the_rows_ls_stores(tmp_path) -> None:
    """``pimm-inspect TREE``'s child finds the runs and reads their stored rows while the UI starts: the table shows
    the rows ``ls`` stored, no run is read, and it is the child's pass (a fresh process: it forks)."""
    import json
    import os

    tree = _quiet_tree(tmp_path, copies=6)
    env = dict(os.environ, PYTHONPATH=str(REPO), PIMM_INSPECT_CACHE_DIR=str(tmp_path / "cache"))
    listed = json.loads(subprocess.run([sys.executable, "-m", "pimm_inspect", "ls", "--json", str(tree)], env=env,
                                       capture_output=True, text=True, timeout=300, check=True).stdout)["runs"]
    out = subprocess.run([sys.executable, "-c", PREFETCHED, str(tree)], env=env, capture_output=True, text=True,
                         timeout=300, check=True, cwd=tmp_path)
    shown = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown["taken"] and shown["built"] == []
    assert sorted(shown["rows"]) == sorted(Path(r["path"]).name for r in listed) and len(listed) == 6
    for run in listed:
        cells = shown["rows"][Path(run["path"]).name]
        assert cells[3] == run["status"] and cells[4] == str(run["attempts"])
