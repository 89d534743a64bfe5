"""Issue 22, the smaller items: findings told apart at 80 columns, errors red in 16 colours, continuation lines
under their column, W&B consoles in the Log tab, o/y on the runs table, runs without wall times, config diffs."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from rich.color import ColorSystem  # noqa: E402
from textual.widgets import DataTable, Static  # noqa: E402

from pimm_inspect.model import Run, WandbInfo  # noqa: E402
from pimm_inspect.tui import links  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.screens.config_diff import ConfigDiffScreen  # noqa: E402
from pimm_inspect.tui.widgets.curve_spec import CurveOptions, build_spec  # noqa: E402
from tests.tui_support import RUNS, drawn, fixed_loader, settle, utc  # noqa: E402,F401

pytestmark = [pytest.mark.usefixtures("utc")]


@pytest.mark.asyncio
async def test_findings_name_their_attempts_wrap_at_80_columns_and_errors_are_red():
    app = make_app(RUNS / "e2_requeued_twice", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(80, 60)) as pilot:
        await settle(pilot)
        screen = await drawn(pilot)
        lines = screen.splitlines()
        top = lines[next(i for i, line in enumerate(lines) if line.strip() == "Top findings") + 1:]
        wrapped = [line for line in top[:8] if line.strip() and not line.lstrip().startswith(("warning", "error"))]
        assert wrapped and all(line.startswith(" " * 20) for line in wrapped)  # under the message, not column 0
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#findings-table", DataTable)
        attempts = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert "#1→#2→#3" in attempts and "#2→#3" in attempts  # the two replays look different at once
        assert table.virtual_size.width <= table.size.width  # no sideways scrolling, no lone scrollbar thumb
        error = table.get_component_rich_style("findings--error").color
        assert error is not None and error.downgrade(ColorSystem.STANDARD).number in (1, 9)  # red in 16 colours


@pytest.mark.asyncio
async def test_a_wandb_run_shows_its_console_log():
    app = make_app(RUNS / "wandb_clean", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        status = str(app.screen.query_one("#log-status", Static).render())
        assert "files/output.log" in status and "W&B console of attempt 1" in status
        assert app.screen.query_one("#log-view").line_count > 0


@pytest.mark.asyncio
async def test_o_and_y_act_on_the_runs_table_cursor_row(tmp_path, monkeypatch):
    for name in ("tb_plain", "e2_clean"):
        shutil.copytree(RUNS / name, tmp_path / name)
    url = "https://wandb.ai/team/pimm/runs/abc123"

    def linked(path: Path) -> Run:
        run = fixed_loader(path)
        return dataclasses.replace(run, wandb=WandbInfo(run_ids=("abc123",), url=url)) if "e2_clean" in str(path) \
            else run

    monkeypatch.setattr(links, "browser_available", lambda: False)
    app = make_app(tmp_path, loader=linked, follow_interval_s=0)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        keys = [key.value for key in table.rows]
        table.move_cursor(row=table.get_row_index(next(k for k in keys if "e2_clean" in k)))
        await pilot.press("y")
        await settle(pilot)
        assert app.clipboard == url
        table.move_cursor(row=table.get_row_index(next(k for k in keys if "tb_plain" in k)))
        await pilot.press("o")
        await settle(pilot)
        assert any("did not log to W&B" in n.message for n in app._notifications)


def test_a_run_without_wall_times_says_so_on_a_time_axis():
    run = fixed_loader(RUNS / "e2_rollback")
    tag = "train_batch/loss"
    timeless = dataclasses.replace(run, series=tuple(dataclasses.replace(s, wall_times_s=np.full(len(s), np.nan))
                                                    for s in run.series))
    spec = build_spec(timeless, tag, CurveOptions(x_axis="relative"), 80)
    assert not any(line.x.size for line in spec.lines) and "records no wall times" in spec.empty_text


@pytest.mark.asyncio
async def test_a_config_diff_of_runs_without_configs_says_so():
    app = make_app(RUNS / "tb_plain", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(ConfigDiffScreen("compare 2 runs", [("a", {}), ("b", {})]))
        await settle(pilot)
        title = str(app.screen.query_one("#diff-title", Static).render())
        assert "none of them has a config document" in title and "no differences" not in title
        app.pop_screen()
        wide = {f"k{i}": "v" * 50 for i in range(3)}
        await app.push_screen(ConfigDiffScreen("compare 2 runs", [("run_a", wide), ("run_b", {})]))
        await settle(pilot)
        screen = await drawn(pilot)
        assert "run_a" in screen and "run_b" in screen  # both columns on screen at 80 columns


@pytest.mark.asyncio
async def test_runs_table_sorting_keeps_widths_g_and_G_go_to_the_ends_and_no_match_is_said(tmp_path):
    for name in ("tb_plain", "e2_clean", "e2_rollback"):
        shutil.copytree(RUNS / name, tmp_path / name)
    app = make_app(tmp_path, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        widths = {c.key.value: c.get_render_width(table) for c in table.ordered_columns}
        for _ in range(6):
            if app.screen.sort_key == "att":
                break
            await pilot.press("s")
            await settle(pilot)
        assert app.screen.sort_key == "att"
        assert {c.key.value: c.get_render_width(table) for c in table.ordered_columns} == widths  # arrow room kept
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("slash", *"zzz")
        await settle(pilot)
        screen = await drawn(pilot)
        assert 'no run matches "zzz" (esc clears)' in screen


@pytest.mark.asyncio
async def test_a_big_log_search_says_searching_at_once_and_a_jump_replaces_the_old_result(monkeypatch):
    from pimm_inspect.tui.widgets import log_view

    import threading

    monkeypatch.setattr(log_view, "SEARCH_IN_WORKER_BYTES", 0)  # every log searched as a big one is
    release = threading.Event()
    real_scan = log_view.scan

    def slow_scan(path, pattern, start, end, cancelled=lambda: False):
        while not release.wait(0.01):  # a big file: the scan takes a while, and stops when cancelled
            if cancelled():
                return
        yield from real_scan(path, pattern, start, end, cancelled)

    monkeypatch.setattr(log_view, "scan", slow_scan)
    app = make_app(RUNS / "e2_rollback", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("right_square_bracket")
        status = app.screen.query_one("#log-status", Static)
        assert str(status.render()).startswith("attempt 2 of 2")
        await pilot.press("slash", *"Resuming", "enter")
        assert str(status.render()).startswith('searching "Resuming"… (escape cancels)')  # never the old result
        await pilot.press("escape")
        await settle(pilot)
        assert str(status.render()).startswith("search cancelled") and app.screen.active_tab == "log"
        release.set()
        await pilot.press("slash", "enter")
        await settle(pilot)
        assert str(status.render()).startswith("match 1/")
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("z")
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        assert app.screen.active_tab == "log" and str(status.render()).startswith("step ")  # not "match 1/…"


def test_run_names_keep_the_parts_that_tell_runs_apart():
    from pimm_inspect.tui.widgets.run_names import distinguishing

    names = {i: f"exp/sweep/lr{i}/runs/baseline" for i in range(3)} | {9: "exp/other/lightning_logs/version_0"}
    shown = distinguishing(names)
    assert [shown[i] for i in range(3)] == ["sweep/lr0/…/baseline", "sweep/lr1/…/baseline", "sweep/lr2/…/baseline"]
    assert shown[9] == "other/lightning_logs/version_0"  # the shared 'exp/' is dropped, nothing that differs
    assert len(set(shown.values())) == len(names)
