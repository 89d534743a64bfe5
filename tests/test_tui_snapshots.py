"""Snapshot tests of every view (pytest-textual-snapshot), on the fixture runs at fixed sizes and a fixed clock."""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_textual_snapshot")
pytest.importorskip("textual_plotext")

from pimm_inspect.tui.app import make_app  # noqa: E402
from tests.tui_support import REPO, RUNS, fixed_loader, settle, utc  # noqa: E402,F401


if not (RUNS / "e2_rollback").is_dir():
    pytest.skip("fixture runs not generated", allow_module_level=True)


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch, utc):
    """Paths are given relative to the repository, as a user would type them, so no absolute path is shown."""
    monkeypatch.chdir(REPO)


def keys(*presses: str):
    """A run_before that waits for loading, presses keys (settling after each), and settles again."""
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)
    return run_before


def app_for(path: str):
    return make_app(path, loader=fixed_loader, follow_interval_s=0, clock=lambda: 0.0)  # no clock on screen


def test_runs_table(snap_compare):
    assert snap_compare(app_for("fixtures/runs"), terminal_size=(120, 36), run_before=keys())


def test_runs_table_80x24(snap_compare):
    assert snap_compare(app_for("fixtures/runs"), terminal_size=(80, 24), run_before=keys())


def test_runs_filtered_and_marked(snap_compare):
    assert snap_compare(app_for("fixtures/runs"), terminal_size=(120, 36),
                        run_before=keys("slash", *"e2_", "enter", "space", "down", "space", "s"))


@pytest.mark.parametrize("tab", ["1", "2", "3", "4", "5", "6"])
def test_rollback_tab(snap_compare, tab):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(120, 36), run_before=keys(tab))


def test_rollback_overview_80x24(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(80, 24), run_before=keys())


def test_rollback_curves_newest_80x24(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(80, 24), run_before=keys("2", "p"))


def test_compare_view(snap_compare):
    async def run_before(pilot) -> None:
        await settle(pilot)
        table = pilot.app.screen.query_one("#runs-table")
        for name in ("e2_clean", "e2_rollback"):
            table.move_cursor(row=table.get_row_index((REPO / "fixtures/runs" / name).as_posix()))
            await pilot.press("space")
        await pilot.press("c")
        await settle(pilot)

    assert snap_compare(app_for("fixtures/runs"), terminal_size=(120, 36), run_before=run_before)


def test_config_diff_modal(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_config_drift"), terminal_size=(120, 36), run_before=keys("3", "d"))


def test_curves_zoom_and_cursor(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(120, 36),
                        run_before=keys("2", "z", "full_stop", "full_stop"))


def test_finding_detail_modal(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(120, 36),
                        run_before=keys("5", "down", "enter"))


def test_help_screen(snap_compare):
    assert snap_compare(app_for("fixtures/runs/e2_rollback"), terminal_size=(120, 36),
                        run_before=keys("question_mark"))


def test_load_error_no_runs(snap_compare, tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    assert snap_compare(app_for("empty"), terminal_size=(80, 24), run_before=keys())


def test_load_error_missing_path(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert snap_compare(app_for("no/such/dir"), terminal_size=(80, 24), run_before=keys())


TAB_RUNS = ("e2_rollback", "wandb_resumed_offline", "hf_resumed")
"""A rollback pimm run, a resumed offline W&B run and a resumed HF Trainer run: every tab at both sizes."""


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
@pytest.mark.parametrize("tab", ["1", "2", "3", "4", "5", "6"])
@pytest.mark.parametrize("run", TAB_RUNS)
def test_every_tab(snap_compare, run, tab, size):
    assert snap_compare(app_for(f"fixtures/runs/{run}"), terminal_size=size, run_before=keys(tab))


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_runs_table_sizes(snap_compare, size):
    assert snap_compare(app_for("fixtures/runs"), terminal_size=size, run_before=keys())
