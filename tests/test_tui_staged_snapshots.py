"""Snapshots of the screens while a run is still being read: the run screen from its quick stage, and a
runs-table row of a big run shown from its tail (fixed sizes, a fixed clock, relative paths)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("pytest_textual_snapshot")
pytest.importorskip("textual_plotext")

from pimm_inspect.load.quick import glance  # noqa: E402
from pimm_inspect.sources.tensorboard import reader as tb_events  # noqa: E402
from pimm_inspect.tui import table_load  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.session.staged import CachingLoader  # noqa: E402
from pimm_inspect.tui.screens import run_loading  # noqa: E402
from tests.test_tui_staged import Gate, progress, title  # noqa: E402
from tests.tui_support import FIXED_NOW, REPO, RUNS, fixed_loader, until, utc  # noqa: E402,F401
from tests.train_log_support import write_big_log  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet(monkeypatch, utc):
    """No seconds counter on the progress line (its value would depend on the machine's speed)."""
    monkeypatch.setattr(run_loading, "ELAPSED_AFTER_S", 10 ** 6)


def released_on_exit(app, gate):
    """The app, its gate released as the snapshot harness exits it (right after the screenshot): the blocked read
    then ends at once instead of holding the app's shutdown until the gate's own timeout."""
    exit_app = app.exit

    def exit_and_release(*args, **kwargs):
        gate.release.set()
        return exit_app(*args, **kwargs)

    app.exit = exit_and_release
    return app


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_run_screen_from_its_quick_stage(snap_compare, monkeypatch, size):
    monkeypatch.chdir(REPO)
    gate = Gate(tb_events.read_event_file)
    monkeypatch.setattr(tb_events, "read_event_file", gate)  # the full read waits at its first event file

    async def run_before(pilot) -> None:
        await until(pilot, lambda: "attempt(s)" in title(pilot.app)
                    and progress(pilot.app).startswith("reading event files"),
                    what="the quick stage")

    app = make_app("fixtures/runs/e2_rollback", loader=CachingLoader(clock=lambda: FIXED_NOW), follow_interval_s=0,
                   clock=lambda: 0.0)
    try:
        assert snap_compare(released_on_exit(app, gate), terminal_size=size, run_before=run_before)
    finally:
        gate.release.set()


def test_runs_table_with_a_big_run_read_last(snap_compare, monkeypatch, tmp_path):
    tree = tmp_path / "tree"
    for name in ("e2_clean", "e2_crashed"):
        shutil.copytree(RUNS / name, tree / name, symlinks=True)
    (tree / "aa_big").mkdir()
    write_big_log(tree / "aa_big" / "train.log", 2 << 20)
    monkeypatch.setattr(table_load, "BIG_RUN_BYTES", 1 << 20)
    monkeypatch.chdir(tmp_path)
    gate = Gate(fixed_loader, only="aa_big")
    gate.glance = lambda path: glance(path, FIXED_NOW)  # type: ignore[attr-defined]  # the loader's own clock

    async def run_before(pilot) -> None:
        await until(pilot, gate.entered.is_set, what="the big run's read")
        table = pilot.app.screen.query_one("#runs-table")
        status = pilot.app.screen.query_one("#runs-status")
        await until(pilot, lambda: not table.flush_pending and "loading 2/3" in str(status.render()), what="rows")

    app = make_app("tree", loader=gate, follow_interval_s=0, clock=lambda: 0.0)
    try:
        assert snap_compare(released_on_exit(app, gate), terminal_size=(120, 24), run_before=run_before)
    finally:
        gate.release.set()
