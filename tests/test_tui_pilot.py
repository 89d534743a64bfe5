"""Pilot tests of the terminal UI on the fixture runs: every screen and key binding."""

from __future__ import annotations

import dataclasses

import numpy as np
import io
import json
from pathlib import Path

import pytest

from pimm_inspect.evidence import RunRow

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from rich.console import Console  # noqa: E402
from textual.widgets import DataTable, Input, OptionList, Static, TabbedContent, Tree  # noqa: E402

from pimm_inspect.model import Run, WandbInfo  # noqa: E402
from pimm_inspect.tui import links  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from tests.tui_support import RUNS, drawn, fixed_loader, opened, settle, until, utc  # noqa: E402,F401
from pimm_inspect.tui.screens.compare import CompareScreen  # noqa: E402
from pimm_inspect.tui.screens.finding import FindingScreen  # noqa: E402
from pimm_inspect.tui.screens.help import HelpScreen  # noqa: E402
from pimm_inspect.tui.screens.run import RunScreen  # noqa: E402
from pimm_inspect.tui.screens.runs import RunsScreen  # noqa: E402
from pimm_inspect.tui.widgets.curves import CurvesPane  # noqa: E402
from pimm_inspect.tui.widgets.log_view import LogView  # noqa: E402
from pimm_inspect.tui.widgets.plot import CurvePlot  # noqa: E402

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("utc")]
ROLLBACK = RUNS / "e2_rollback"
SIZE = (120, 36)

if not ROLLBACK.is_dir():
    pytest.skip("fixture runs not generated", allow_module_level=True)


def plain(widget) -> str:
    """What a Static shows, as plain text (its content may be a Rich table)."""
    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(content)
    return console.export_text()


def plain_renderable(renderable) -> str:
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def row_keys(table: DataTable) -> list[str]:
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


async def move_to(pilot, table: DataTable, key: str) -> None:
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


async def test_runs_table_lists_every_fixture_with_loaded_facts():
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs-table", DataTable)
        keys = row_keys(table)
        assert len(keys) == len(app.runs) >= 10
        key = ROLLBACK.absolute().as_posix()
        row = table.get_row(key)
        assert [str(c) for c in row[1:6]] == ["e2_rollback", "pimm E2", "finished", "2", "100"]
        assert [str(c) for c in row[6:8]] == ["mIoU 0.7646", "2026-07-16 15:02 UTC"]  # best metric, last logged (UTC)
        assert str(row[-1]) == "2W"  # as `ls` writes it
        assert all(run is not None for run in app.runs.values())
        assert "run(s)" in str(screen.query_one("#runs-status", Static).render())


async def test_filter_substring_negation_regex_and_sort():
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        total = table.row_count
        await pilot.press("slash")
        box = app.screen.query_one("#runs-filter", Input)
        assert box.has_focus
        await pilot.press(*"e2_roll")
        assert [Path(k).name for k in row_keys(table)] == ["e2_rollback"]
        box.value = "!e2_"
        await pilot.pause()
        assert table.row_count == total - sum(1 for p in app.runs if p.name.startswith("e2_"))
        assert not any(Path(k).name.startswith("e2_") for k in row_keys(table))
        box.value = "/^hf_/"
        await pilot.pause()
        assert sorted(Path(k).name for k in row_keys(table)) == ["hf_clean", "hf_killed", "hf_resumed", "hf_resumed_wandb",
                                                                 "hf_same_seed_trainings", "hf_tb_then_none",
                                                                 "hf_two_trainings"]
        box.value = "steps.replayed"  # finding codes are searchable too
        await pilot.pause()
        assert "e2_rollback" in [Path(k).name for k in row_keys(table)]
        await pilot.press("enter")  # back to the table
        assert table.has_focus
        await pilot.press("escape")  # clears the filter
        assert table.row_count == total
        await pilot.press("s")
        assert app.screen.sort_key == "kind"
        assert "sort: kind ▲" in str(app.screen.query_one("#runs-status", Static).render())
        assert "kind▲" in [str(c.label) for c in table.ordered_columns]  # the arrow is on the column
        kinds = [str(table.get_row(k)[2]) for k in row_keys(table)]
        assert kinds == sorted(kinds)
        await pilot.press("s", "s")
        assert "sort: att ▼" in str(app.screen.query_one("#runs-status", Static).render())
        attempts = [int(str(table.get_row(k)[4])) for k in row_keys(table)]
        assert attempts == sorted(attempts, reverse=True)


async def test_mark_and_compare_overlays_runs_in_stable_colours():
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        await pilot.press("c")  # nothing marked: a notification, no screen
        assert isinstance(app.screen, RunsScreen)
        await move_to(pilot, table, (RUNS / "e2_clean").absolute().as_posix())
        await pilot.press("space")
        await move_to(pilot, table, ROLLBACK.absolute().as_posix())
        await pilot.press("space")
        assert app.screen.marked == {(RUNS / "e2_clean").absolute().as_posix(), ROLLBACK.absolute().as_posix()}
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.tag == "train_batch/loss"
        spec = screen.query_one(CurvePlot).spec
        assert [(line.label, line.color_index) for line in spec.lines] == [("e2_clean", 0), ("e2_rollback", 1)]
        # newest policy: the rollback run's merged line has each step 1..100 once
        rollback = spec.lines[1]
        assert rollback.x.size == len(set(rollback.x.tolist()))
        await pilot.press("p")
        assert screen.policy == "oldest"
        await pilot.press("p")
        assert [line.label for line in screen.query_one(CurvePlot).spec.lines] == [
            "e2_clean #1", "e2_rollback #1", "e2_rollback #2"]
        await pilot.press("x", "L")
        assert (screen.x_axis, screen.log_y) == ("relative", True)
        await pilot.press("slash", *"val/m")
        assert all("val/m" in o.id for o in screen.query_one("#compare-tags", OptionList).options)
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, RunsScreen)


async def test_open_run_and_every_tab():
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        await move_to(pilot, table, ROLLBACK.absolute().as_posix())
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.run is not None
        assert screen.run.name == "e2_rollback"
        tabs = screen.query_one(TabbedContent)
        for key, tab in zip("123456", ("overview", "curves", "config", "checkpoints", "findings", "log")):
            await pilot.press(key)
            await settle(pilot)
            assert tabs.active == tab
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_single_run_opens_directly_with_overview():
    async with opened(ROLLBACK, SIZE) as (app, pilot):
        screen = app.screen
        assert isinstance(screen, RunScreen)
        identity = plain(screen.query_one("#ov-identity", Static))
        assert "e2_rollback" in identity and "pimm E2" in identity
        attempts = plain(screen.query_one("#ov-attempts", Static))
        assert "restarted from model/last at step 50" in attempts  # the run-relative checkpoint it restored
        strip = plain_renderable(screen.query_one("TimelineStrip").render())
        assert "▓" in strip and "░" in strip  # replayed and lost ranges are marked
        assert "51-100 completed" in strip
        provenance = plain(screen.query_one("#ov-provenance", Static))
        assert "run_metadata.json" in provenance
        assert "/work" not in identity + attempts + provenance
        await pilot.press("escape")  # nowhere to go back to: stays
        assert isinstance(app.screen, RunScreen)


async def test_curves_toggles_policy_smoothing_axis_and_log():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        assert pane.tag == "train_batch/loss"
        assert [line.label for line in plot.spec.lines] == ["attempt 1", "attempt 2"]
        assert [line.marker for line in plot.spec.lines] == ["braille", "•"]  # apart without colour too
        assert plot.spec.seams == (51.0,) and [label for _x, label in plot.spec.seam_labels] == ["#2"]
        legend = str(pane.query_one("#curve-legend", Static).render())
        assert plot.spec.replays == ((51, 75),) and "┆ replayed 51-75: 2 copies (#1 #2)" in legend
        assert "⣿ attempt 1" in legend and "• attempt 2" in legend and "│ resumed #2 at 51" in legend
        note = str(pane.query_one("#policy-note", Static).render())
        assert note.startswith("Steps written more than once: 51-75: 2 copies (#1 #2)") and "TensorBoard:" in note and "W&B" in note
        assert "yellow" not in note
        await pilot.press("p")
        await settle(pilot)
        assert pane.options.policy == "newest"
        assert "showing the newest copy." in str(pane.query_one("#policy-note", Static).render())
        merged = plot.spec.lines[0]
        assert len(plot.spec.lines) == 1 and plot.spec.seams == ()
        assert merged.x.tolist() == sorted(set(merged.x.tolist()))
        await pilot.press("p", "p")
        await settle(pilot)
        assert pane.options.policy == "all"
        await pilot.press("plus", "plus")
        await settle(pilot)
        assert pane.options.smooth == 0.6 and "smooth 0.6" in str(pane.query_one("#curve-status", Static).render())
        await pilot.press("minus")
        assert pane.options.smooth == 0.3
        await pilot.press("x")
        await settle(pilot)
        assert pane.options.x_axis == "relative" and plot.spec.x_label == "minutes since start"  # a 30-minute run
        await pilot.press("L")
        await settle(pilot)
        assert plot.spec.log_y
        await pilot.press("slash", *"val/m")
        tags = [o.id for o in pane.query_one("#tag-list", OptionList).options]
        assert tags and all(t.startswith("val/m") for t in tags)
        await pilot.press("enter", "down")
        await settle(pilot)
        assert pane.tag.startswith("val/m") and pane.tag != "train_batch/loss"


async def test_config_tree_search_and_masking(tmp_path):
    run_dir = tmp_path / "secret_run"
    run_dir.mkdir()
    (run_dir / "resolved_config.json").write_text(json.dumps(
        {"lr": 0.1, "wandb_api_key": "0123456789abcdef0123456789abcdef01234567", "model": {"depth": 4}}))
    app = make_app(run_dir, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        tree = app.screen.query_one("#config-tree", Tree)

        def labels(node) -> list[str]:
            out = [str(node.label)]
            for child in node.children:
                out += labels(child)
            return out

        shown = labels(tree.root)
        assert "lr: 0.1" in shown and "depth: 4" in shown
        assert "wandb_api_key: '****'" in shown
        assert not any("0123456789abcdef" in s for s in shown)
        await pilot.press("slash", *"depth")
        shown = labels(tree.root)
        assert "depth: 4" in shown and "lr: 0.1" not in shown


async def test_checkpoints_and_finding_detail_modal():
    async with opened(ROLLBACK, SIZE, tab="4") as (app, pilot):
        table = app.screen.query_one("#checkpoint-table", DataTable)
        row = [str(c) for c in table.get_row("model/last")]
        assert row[:2] == ["model/last", "#2 @50"] and {"last", "yes", "100"} <= set(row) and row[-1] == "◀ picked"
        await pilot.press("5")
        findings = app.screen.query_one("#findings-table", DataTable)
        codes = [str(findings.get_row(k)[1]) for k in row_keys(findings)]
        assert codes == ["resume.rollback", "steps.replayed"]
        findings.focus()
        findings.move_cursor(row=1)
        await pilot.press("enter")
        modal = app.screen
        assert isinstance(modal, FindingScreen) and modal.finding.code == "steps.replayed"
        assert "51-75" in str(modal.query_one("#finding-evidence", Static).render())
        assert "TensorBoard" in str(modal.query_one("#finding-explanation", Static).render())
        await pilot.press("y")
        assert "steps.replayed" in app.clipboard
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)


async def test_log_viewer_window_search_and_ends():
    async with opened(ROLLBACK, SIZE, tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        text = (ROLLBACK / "train.log").read_text()
        lines = text.splitlines()
        assert view.line_count == len(lines)
        starts = [i for i, line in enumerate(lines) if "=> Loading config ..." in line]
        assert view.attempt_lines.tolist() == starts and len(starts) == 2
        assert view.line_text(5) == lines[5]
        view.focus()
        await pilot.press("G")
        assert view.cursor_line == len(lines) - 1
        await pilot.press("g")
        assert view.cursor_line == 0
        await pilot.press("right_square_bracket")
        assert view.cursor_line == starts[1]
        await pilot.press("g", "slash", *"Resuming from iteration", "enter")
        expected = next(i for i, line in enumerate(lines) if "Resuming from iteration" in line)
        assert view.cursor_line == expected
        await pilot.press("n")  # wraps around to the same, only match
        assert view.cursor_line == expected
        status = str(app.screen.query_one("#log-status", Static).render())
        assert f"{len(lines)} lines" in status


async def test_help_screen_and_command_palette_list_actions():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Overlap policy: all attempts / newest / oldest per step (p)", "Smoother (+)",
                "X axis: step / relative time / wall time (x)", "Log y (L)", "Search (/)", "Reload (r)", "Help (?)",
                "Quit (q)", "Next attempt (] · Log tab)"} <= titles, titles
        command = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Overlap policy"))
        await command.callback()
        await settle(pilot)
        assert app.screen.query_one(CurvesPane).options.policy == "newest"
        jump = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Next attempt"))
        await jump.callback()  # another tab's action: the palette goes to that tab and runs it
        await settle(pilot)
        assert app.screen.active_tab == "log"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = plain(app.screen.query_one("#help-text", Static))
        for needle in ("Runs table", "Overlap policy", "Next attempt", "Filter", "Mark"):
            assert needle in text
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)


async def test_wandb_open_and_copy(monkeypatch):
    url = "https://wandb.ai/team/pimm/runs/abc123"

    def with_link(path: Path) -> Run:
        return dataclasses.replace(fixed_loader(path), wandb=WandbInfo(run_ids=("abc123",), url=url))

    monkeypatch.setattr(links, "browser_available", lambda: False)
    app = make_app(ROLLBACK, loader=with_link, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("o")
        assert any("no browser" in n.message for n in app._notifications)
        await pilot.press("y")
        assert app.clipboard == url
        overview = plain(app.screen.query_one("#ov-wandb", Static))
        assert url in overview


async def test_offline_run_copies_sync_command():
    app = make_app(RUNS / "wandb_clean", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("y")
        assert app.clipboard.startswith("wandb sync ")
        assert app.screen.check_action("open_wandb", ())  # enabled: pressing o says why nothing opens


async def test_empty_folder_shows_no_runs(tmp_path):
    (tmp_path / "empty").mkdir()
    app = make_app(tmp_path / "empty", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        problem = app.screen.query_one("#runs-problem", Static)
        assert problem.display and "No runs found" in str(problem.render())
        assert "Lightning's metrics.csv" in str(problem.render())  # the one wording of what a run is



async def test_missing_path_is_a_message_not_a_traceback(tmp_path):
    app = make_app(tmp_path / "nope", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "no such file or directory" in str(app.screen.query_one("#runs-problem", Static).render())


async def test_broken_run_shows_findings(tmp_path, monkeypatch):
    run_dir = tmp_path / "broken"
    run_dir.mkdir()
    (run_dir / "run_metadata.json").write_text("{not json")
    (run_dir / "train.log").write_bytes(b"\xff\xfe garbage \x00\n[2026-07-16 14:30:09,501 INFO train.py line 251] =>")
    app = make_app(run_dir, follow_interval_s=0)  # the real loader, clock and all
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        codes = {f.code for f in app.screen.run.findings}
        assert "file.invalid-json" in codes
        await pilot.press("6")
        await settle(pilot)
        assert app.screen.query_one(LogView).line_count == 2

    import pimm_inspect.load.safe as safe

    def explode(path, **_kwargs):
        raise RuntimeError("reader bug")

    monkeypatch.setattr(safe, "load_run", explode)
    monkeypatch.setattr(safe, "load_run_and_liveness", explode)  # the staged reader's way in (load_reusable)
    app = make_app(run_dir, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert [f.code for f in app.screen.run.findings] == ["internal.load-failed"]
        assert "reader bug" in plain(app.screen.query_one("#ov-findings", Static))


async def test_live_follow_reloads_a_running_run():
    calls = []

    def running(path: Path) -> Run:
        calls.append(path)
        return dataclasses.replace(fixed_loader(path), status="running")

    app = make_app(ROLLBACK, loader=running, follow_interval_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        # No settle while the run is followed: a reload every 0.2 s supersedes the one before, so "no worker
        # running" may never hold on a busy machine. Wait for the reloads themselves, then for the last to land.
        await until(pilot, lambda: len(calls) >= 3, what="two reloads after the first read")
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.run is not None,
                    what="a read run on the screen")
        assert len(calls) >= 3
        assert app.screen.run.status == "running"


async def test_live_follow_lets_a_slow_reload_finish():
    """A follow tick while a reload is still under way waits for it (it used to cancel it and start another, so a
    reload slower than the interval never finished)."""
    import threading

    calls: list[Path] = []
    entered, release = threading.Event(), threading.Event()

    def running(path: Path) -> Run:
        calls.append(path)
        if len(calls) == 2:  # the first reload of the followed run is slow
            entered.set()
            assert release.wait(60), "the test never released the reload"
        return dataclasses.replace(fixed_loader(path), status="running")

    app = make_app(ROLLBACK, loader=running, follow_interval_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, entered.is_set, what="the first reload")
        for _ in range(8):  # eight follow intervals pass while it runs
            await pilot.pause(0.2)
        assert len(calls) == 2, "a follow tick started another read while one was under way"
        release.set()
        await until(pilot, lambda: len(calls) >= 3, what="the next tick after the slow reload finished")


async def test_config_filter_on_the_runs_table():
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        box = screen.query_one("#runs-filter", Input)
        box.value = "cfg.use_wandb = true"
        await pilot.pause()
        shown = {Path(k).name for k in row_keys(screen.query_one("#runs-table", DataTable))}
        assert {"e2_wandb", "e1_legacy_cursor", "e2_cursor_mismatch"} <= shown and "e2_rollback" not in shown
        box.value = "cfg.epoch>=5"
        await pilot.pause()
        shown = {Path(k).name for k in row_keys(screen.query_one("#runs-table", DataTable))}
        assert "e2_rollback" in shown and "e2_clean" not in shown
        box.value = "!cfg.epoch>=5"
        await pilot.pause()
        shown = {Path(k).name for k in row_keys(screen.query_one("#runs-table", DataTable))}
        assert "e2_rollback" not in shown and "e2_clean" in shown


async def test_zoom_cursor_readout_and_jump_to_log():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        await pilot.press("z")
        await settle(pilot)
        assert pane.options.x_range == (39.0, 87.0)  # steps 51-75 with half their width on each side
        status = str(pane.query_one("#curve-status", Static).render())
        assert plot.spec.lines[0].x.min() >= 39 and "zoom: replayed 51-75 (z: out)" in status
        await pilot.press("full_stop")
        await settle(pilot)
        readout = str(pane.query_one("#curve-cursor", Static).render())
        assert pane.cursor_x == 52.0 and "#1 0.6947" in readout and "#2 0.6923" in readout and "UTC" in readout
        await pilot.press("comma", "comma")
        assert pane.cursor_x == 50.0
        await pilot.press("full_stop", "full_stop", "full_stop")
        assert pane.cursor_x == 53.0 and plot.spec.cursor == 53.0
        await pilot.press("l")
        await settle(pilot)
        assert app.screen.active_tab == "log"
        view = app.screen.query_one(LogView)
        line = view.line_text(view.cursor_line)
        assert "Train: [3/5][15/20]" in line  # g = 2*20 + 15 = 55, the first logged step >= 53, attempt 2
        assert view.cursor_line > int(view.attempt_lines[1])
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("z")
        await settle(pilot)
        assert pane.options.x_range is None


async def test_finding_detail_jumps_to_curves_and_log():
    async with opened(ROLLBACK, SIZE, tab="5") as (app, pilot):
        table = app.screen.query_one("#findings-table", DataTable)
        codes = [f.code for f in app.screen.run.findings]
        table.move_cursor(row=codes.index("steps.replayed"))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingScreen)
        await pilot.press("c")
        await settle(pilot)
        pane = app.screen.query_one(CurvesPane)
        assert app.screen.active_tab == "curves" and pane.options.x_range == (39.0, 87.0)
        await pilot.press("5", "enter")
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        view = app.screen.query_one(LogView)
        assert app.screen.active_tab == "log" and "Train: [3/5][15/20]" in view.line_text(view.cursor_line)


async def test_live_follow_reads_only_appended_bytes(tmp_path):
    from tests.test_refresh import _grow_copy

    log, log_tail, ev_tail, events, _ = _grow_copy(tmp_path)
    # Each follow tick cancels a reload still under way (and its per-run cache with it): the interval leaves a
    # reload of this small run time to finish on a busy machine, so the one after the append reads only the tail.
    app = make_app(log.parent, follow_interval_s=1.0)
    async with app.run_test(size=SIZE) as pilot:
        # Not settle: the followed run is read again every second, so a worker may always be running.
        await until(pilot, lambda: getattr(app.screen, "run", None) is not None and app.screen.analysed,
                    what="the first read of the run")
        assert app.screen.run.status == "running"
        before = max(a.last_step for a in app.screen.run.attempts)
        with open(log, "ab") as fh:
            fh.write(log_tail)
        with open(events, "ab") as fh:
            fh.write(ev_tail)
        # The follow timer reads the run again until it has finished: wait for that, not for a while.
        await until(pilot, lambda: app.screen.run is not None and app.screen.run.status == "finished",
                    what="the followed run to finish")
        await settle(pilot)  # a finished run is no longer followed: the table's row of it lands
        run = app.screen.run
        assert run.status == "finished" and max(a.last_step for a in run.attempts) == 100 > before
        assert app.loader.incremental_reads >= 2
        assert app.loader.caches == {}  # a finished run keeps no reader results
        row = app.runs[log.parent.absolute()]  # the table holds the run's row (the rule of ls), no series
        assert isinstance(row, RunRow) and row.status == "finished" and row.summary.last_step == 100


async def test_config_diff_between_documents_and_between_runs():
    from pimm_inspect.tui.screens.config_diff import ConfigDiffScreen

    app = make_app(RUNS / "e2_config_drift", loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3", "d")
        await settle(pilot)
        assert isinstance(app.screen, ConfigDiffScreen)
        keys = [key for key, _values in app.screen.rows]
        assert "optimizer.lr" in keys and "batch_size" in keys
        lr = dict(app.screen.rows)["optimizer.lr"]
        assert len(set(lr)) > 1
        await pilot.press("escape")
    app = make_app(RUNS, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs-table", DataTable)
        for name in ("e2_clean", "e2_rollback"):
            await move_to(pilot, table, (RUNS / name).absolute().as_posix())
            await pilot.press("space")
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfigDiffScreen)
        rows = dict(app.screen.rows)
        assert rows["epoch"] == ["3", "5"] and "save_path" in rows


# -- runs table: marks, sorting, filter errors, wide terminals, refresh -------------------------------------

async def test_marked_rows_show_a_mark_in_their_own_column():
    async with opened(RUNS, (80, 24)) as (app, pilot):
        table = app.screen.query_one("#runs-table", DataTable)
        await move_to(pilot, table, (RUNS / "e2_clean").absolute().as_posix())
        await pilot.press("space")
        text = await drawn(pilot, lambda t: "1 marked" in t, what="the mark counted")  # drawn, not only held
        line = next(l for l in text.splitlines() if "e2_clean" in l)
        assert line.lstrip().startswith("● e2_clean") or "●  e2_clean" in line or "● e2_clean" in line, line
        unmarked = next(l for l in text.splitlines() if "e2_crashed" in l)
        assert "●" not in unmarked
        assert "1 marked" in text


@pytest.mark.parametrize("size", [(80, 24), (200, 40)])
async def test_sort_cycles_only_through_columns_on_screen(size):
    async with opened(RUNS, size) as (app, pilot):
        table = app.screen.query_one("#runs-table", DataTable)
        headers = [str(c.label).rstrip("▲▼ ").split(" ")[0] for c in table.ordered_columns]
        seen = []
        for _ in range(12):
            await pilot.press("s")
            await pilot.pause()
            seen.append(app.screen.sort_key)
            labels = [str(c.label) for c in table.ordered_columns]
            assert sum(1 for label in labels if label.endswith(("▲", "▼"))) == 1, labels
        assert set(seen) <= set(headers) | {"last log"}
        assert ("best" in seen) == (size[0] >= 120)
        assert "findings" in seen and "step" in seen


async def test_invalid_regex_filter_says_why_and_hides_nothing():
    async with opened(RUNS, SIZE) as (app, pilot):
        table = app.screen.query_one("#runs-table", DataTable)
        total = table.row_count
        app.screen.query_one("#runs-filter", Input).value = "/e2_(roll/"
        await pilot.pause()
        status = str(app.screen.query_one("#runs-status", Static).render())
        assert "invalid regex /e2_(roll/" in status and "missing )" in status
        assert table.row_count == total
        app.screen.query_one("#runs-filter", Input).value = "/e2_(roll)/"
        await pilot.pause()
        assert table.row_count == 1 and "invalid" not in str(app.screen.query_one("#runs-status", Static).render())


async def test_wide_terminal_shows_top_finding_text_and_a_preview():
    async with opened(RUNS, (200, 40)) as (app, pilot):
        table = app.screen.query_one("#runs-table", DataTable)
        assert "top finding" in [str(c.label) for c in table.ordered_columns]
        await move_to(pilot, table, ROLLBACK.absolute().as_posix())
        row = table.get_row(ROLLBACK.absolute().as_posix())
        assert str(row[-1]).startswith("attempt 2 resumed")  # the names take what they need first (N7)
        preview = app.screen.query_one("#runs-preview")
        assert preview.display
        text = plain(preview)
        assert "e2_rollback" in text and "#2 rollback  steps 51-100" in text and "steps.replayed" in text
    async with opened(RUNS, (120, 30)) as (app, pilot):
        assert not app.screen.query_one("#runs-preview").display
        assert "top finding" not in [str(c.label) for c in app.screen.query_one("#runs-table").ordered_columns]


async def test_r_refreshes_every_run_and_says_how_fresh():
    calls: list[Path] = []
    now = [100.0]

    def loader(path: Path) -> Run:
        calls.append(path)
        return fixed_loader(path)

    app = make_app(RUNS / "tb_plain", loader=loader, follow_interval_s=0, clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = len(calls)
        assert first == 2
        assert "updated" not in str(app.screen.query_one("#runs-status", Static).render())
        await pilot.press("r")
        await settle(pilot)
        assert len(calls) == 2 * first
        now[0] += 7
        app.screen._status()
        assert "updated 7s ago" in str(app.screen.query_one("#runs-status", Static).render())


async def test_live_runs_refresh_by_themselves_on_the_runs_table():
    calls: list[str] = []

    def loader(path: Path) -> Run:
        calls.append(path.name)
        run = fixed_loader(path)
        return dataclasses.replace(run, status="running") if path.name == "baseline" else run

    app = make_app(RUNS / "tb_plain", loader=loader, follow_interval_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: calls.count("baseline") >= 3, what="the live run read twice more")
        assert calls.count("baseline") >= 3
        assert calls.count("lr-0.1") == 1  # a finished run is never re-read
        assert "1 live" in str(app.screen.query_one("#runs-status", Static).render())


# -- overview -------------------------------------------------------------------------------------------------

def timeline_text(app) -> list[str]:
    from pimm_inspect.tui.widgets.overview import TimelineStrip

    strip = app.screen.query_one(TimelineStrip)
    return plain_renderable(strip.render()).splitlines()


async def test_overview_draws_lost_only_from_checkpoint_evidence_and_its_legend_matches():
    async with opened(ROLLBACK, SIZE) as (app, pilot):
        rows = timeline_text(app)
        first, second = rows[0], rows[1]
        assert "░" in first and "█" in first  # attempt 1: 51-75 trained, no checkpoint kept it
        assert "░" not in second and "▓" in second  # attempt 2 replayed 51-75, lost nothing
        legend = rows[3]
        assert "░ lost" in legend and "▓ replayed" in legend and "· " not in legend  # no gap drawn, none listed
    async with opened(RUNS / "tb_plain" / "runs" / "baseline", SIZE) as (app, pilot):
        assert app.screen.run.attempts[0].lost_steps is None  # a plain TensorBoard run: no checkpoint evidence
        rows = timeline_text(app)
        assert "░" not in "".join(rows) and "lost" not in rows[-1] and "█ logged" in rows[-1]


async def test_overview_scrolls_with_arrows_and_pages_without_tab():
    async with opened(ROLLBACK, (80, 24)) as (app, pilot):
        from pimm_inspect.tui.widgets.overview import Overview

        overview = app.screen.query_one(Overview)
        assert overview.scroll_y == 0 and overview.max_scroll_y > 0
        await pilot.press("down")
        await pilot.pause()
        assert overview.scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert overview.scroll_y > 1


# -- curves ---------------------------------------------------------------------------------------------------

async def test_cursor_readout_shows_only_series_with_that_step():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        pane = app.screen.query_one(CurvesPane)
        await pilot.press("home")
        await settle(pilot)
        readout = str(pane.query_one("#curve-cursor", Static).render())
        assert pane.cursor_x == 1.0 and "step 1" in readout
        assert "#1 " in readout and "#2" not in readout  # attempt 2 starts at 51: it has no step 1
        await pilot.press("end")
        readout = str(pane.query_one("#curve-cursor", Static).render())
        assert pane.cursor_x == 100.0 and "#2 " in readout and "#1" not in readout
        await pilot.press("j")  # jump to the replay: both attempts have step 51
        readout = str(pane.query_one("#curve-cursor", Static).render())
        assert pane.cursor_x == 51.0 and "#1 " in readout and "#2 " in readout


async def test_cursor_moves_by_plot_column_on_a_long_series():
    from pimm_inspect.model import make_series

    def long_run(path: Path) -> Run:
        run = fixed_loader(path)
        steps = np.arange(1, 200_001)
        series = make_series("train_batch/loss", steps, np.sin(steps / 1000.0), 1.7e9 + steps.astype(float),
                             "train.log", 1)
        return dataclasses.replace(run, series=(series,))

    app = make_app(ROLLBACK, loader=long_run, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        pane = app.screen.query_one(CurvesPane)
        columns = pane.query_one(CurvePlot).size.width - 10
        await pilot.press("home", "full_stop")
        first = pane.cursor_x
        await pilot.press("full_stop")
        per_key = pane.cursor_x - first
        assert 200_000 / columns * 0.5 <= per_key <= 200_000 / columns * 2, (per_key, columns)
        await pilot.press("end")
        assert pane.cursor_x == 200_000.0


async def test_axes_have_integer_steps_readable_times_and_units():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        ticks, labels = plot.spec.x_ticks
        assert labels and all(label.isdigit() for label in labels) and all(t == int(t) for t in ticks)
        await pilot.press("x")
        await settle(pilot)
        assert plot.spec.x_label == "minutes since start"
        assert all(float(label) <= 40 for label in plot.spec.x_ticks[1])
        await pilot.press("x")
        await settle(pilot)
        assert plot.spec.x_label == "wall time (UTC, 2026-07-16)"
        assert all(len(label) == 5 and label[2] == ":" for label in plot.spec.x_ticks[1]), plot.spec.x_ticks[1]


async def test_stale_event_files_are_hidden_then_drawn_apart():
    async with opened(RUNS / "e2_stale_reuse", SIZE, tab="2") as (app, pilot):
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        assert pane.tag == "train_batch/loss"
        assert max(float(line.x.max()) for line in plot.spec.lines) <= 8  # the earlier run's steps 1-25 hidden
        assert all("stale" not in line.label for line in plot.spec.lines)
        note = str(pane.query_one("#policy-note", Static).render())
        assert "1 stale event file(s) from an earlier run: hidden (s toggles)" in note
        await pilot.press("s")
        await settle(pilot)
        stale = [line for line in plot.spec.lines if line.label == "stale file (earlier run)"]
        assert len(stale) == 1 and float(stale[0].x.max()) == 25
        assert "stale file (earlier run)" in str(pane.query_one("#curve-legend", Static).render())


async def test_zoomed_curves_fit_80x24():
    async with opened(ROLLBACK, (80, 24), tab="2") as (app, pilot):
        await pilot.press("z", "full_stop")
        await settle(pilot)
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        assert plot.size.height >= 9
        note = str(pane.query_one("#policy-note", Static).render())
        assert note.endswith((".", ")")) and "W&B: not" not in note
        readout = pane.query_one("#curve-cursor", Static)
        text = str(readout.render())
        assert readout.size.height == len(text.splitlines()) <= 3
        for line in text.splitlines():  # every line starts with a whole field
            assert line.startswith(("step ", "#1 ", "#2 ", "l: ")), line
            assert len(line) <= readout.size.width
        drawn = "\n".join(str(strip.text) for strip in [plot.render_line(y) for y in range(plot.size.height)])
        assert "attempt 1" not in drawn  # no plotext legend over the data: it is the line above the plot


# -- checkpoints ----------------------------------------------------------------------------------------------

async def test_checkpoints_fit_80_columns_and_sort_by_step():
    from pimm_inspect.model import CheckpointInfo

    def many(path: Path) -> Run:
        run = fixed_loader(path)
        made = tuple(CheckpointInfo(f"model/iter_{s}.pth", "pimm", "iter", True, global_step=s, size_bytes=1000 * s,
                                    resume_candidate=s == 125) for s in (100, 125, 25, 50, 75))
        return dataclasses.replace(run, checkpoints=made + run.checkpoints)

    app = make_app(ROLLBACK, loader=many, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        table = app.screen.query_one("#checkpoint-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels[:2] == ["path", "complete"] or labels[0] == "path"
        assert {"path", "step", "complete", "resume"} <= set(labels) and "format" not in labels
        keys = row_keys(table)
        assert keys[:6] == ["model/iter_25.pth", "model/iter_50.pth", "model/iter_75.pth", "model/iter_100.pth",
                            "model/last", "model/iter_125.pth"]
        text = await drawn(pilot)
        assert "◀ picked" in text  # the column the user needs most is on screen at 80 columns
        assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    app = make_app(ROLLBACK, loader=many, follow_interval_s=0)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        labels = [str(c.label) for c in app.screen.query_one("#checkpoint-table", DataTable).ordered_columns]
        assert labels == ["path", "restored by", "format", "role", "complete", "step", "epoch", "W&B id", "cursor",
                          "expected", "size", "resume"]


# -- log ------------------------------------------------------------------------------------------------------

def log_status(app) -> str:
    return str(app.screen.query_one("#log-status", Static).render())


async def test_log_attempts_are_the_overviews_and_brackets_wrap_with_notice():
    async with opened(ROLLBACK, SIZE, tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        run = app.screen.run
        starts = [e.line_no - 1 for e in run.events if e.kind == "start"]
        assert view.attempt_lines.tolist() == starts and len(starts) == len(run.attempts) == 2
        assert "attempts start at line 1, 165" in log_status(app)
        await pilot.press("right_square_bracket")
        assert view.cursor_line == starts[1] and "attempt 2 of 2 (line 165)" in log_status(app)
        await pilot.press("right_square_bracket")
        assert view.cursor_line == starts[0] and "attempt 1 of 2 (line 1): wrapped to the first" in log_status(app)
        await pilot.press("left_square_bracket")
        assert view.cursor_line == starts[1] and "wrapped to the last" in log_status(app)
        await pilot.press("left_square_bracket")
        assert view.cursor_line == starts[0] and "attempt 1 of 2" in log_status(app)
        separator = "".join(s.text for s in view.render_line(starts[1] - view.scroll_offset.y))
        assert "━━ attempt 2 ━━" in separator


async def test_log_search_counts_matches_wraps_with_notice_and_goes_back():
    async with opened(ROLLBACK, SIZE, tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        lines = (ROLLBACK / "train.log").read_text().splitlines()
        hits = [i for i, line in enumerate(lines) if "best validation" in line.lower()]
        assert len(hits) >= 3
        await pilot.press("slash", *"Best validation", "enter")
        assert view.cursor_line == hits[0] and f"match 1/{len(hits)}" in log_status(app)
        await pilot.press("n")
        assert view.cursor_line == hits[1] and f"match 2/{len(hits)}" in log_status(app)
        await pilot.press("N")
        assert view.cursor_line == hits[0] and f"match 1/{len(hits)}" in log_status(app)
        await pilot.press("N")  # before the first: wraps to the last, and says so
        assert view.cursor_line == hits[-1]
        assert f"match {len(hits)}/{len(hits)}" in log_status(app) and "wrapped to the bottom" in log_status(app)
        await pilot.press("n")
        assert view.cursor_line == hits[0] and "wrapped to the top" in log_status(app)
        app.screen.query_one("#log-search", Input).value = "no such text anywhere"
        await pilot.press("n")
        assert "not found: no such text anywhere" in log_status(app)


async def test_log_wrap_toggle_and_horizontal_pan():
    async with opened(ROLLBACK, (80, 24), tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        lines = (ROLLBACK / "train.log").read_text().splitlines()
        train = next(i for i, line in enumerate(lines) if "Train: [1/5][5/20]" in line)
        view.go_to(train)
        await pilot.pause()
        row = train - view.scroll_offset.y
        cut = "".join(s.text for s in view.render_line(row).__iter__())
        assert "loss:" not in cut  # cut at 80 columns
        view.focus()
        await pilot.press("right")
        assert view.scroll_offset.x >= 8
        await pilot.press("w")
        await pilot.pause()
        assert view.wrap and view.scroll_offset.x == 0 and "long lines wrapped" in log_status(app)
        rows = [("".join(s.text for s in view.render_line(y))) for y in range(view.size.height)]
        joined = "".join(r[view._gutter:].rstrip() for r in rows)
        assert "loss: 1.7804" in joined
        await pilot.press("w")
        assert not view.wrap


async def test_log_levels_are_coloured_and_secrets_masked(tmp_path):
    from tests.tui_support import hostile_run

    run_dir = hostile_run(tmp_path)
    with (run_dir / "train.log").open("a") as fh:
        fh.write("[2026-07-16 15:30:00,000 INFO train.py line 9] WANDB_API_KEY=abcdef0123456789 "
                 "token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    async with opened(run_dir, SIZE, tab="6") as (app, pilot):
        view = app.screen.query_one(LogView)
        texts = [view.line_text(i) for i in range(view.line_count)]
        warning = next(i for i, t in enumerate(texts) if " WARNING " in t)
        error = next(i for i, t in enumerate(texts) if " ERROR " in t)
        info = next(i for i, t in enumerate(texts[2:], start=2) if " INFO " in t and i not in set(view.attempt_lines.tolist()))
        styles = {name: view._line_style(i, texts[i]) for name, i in (("warning", warning), ("error", error),
                                                                       ("info", info))}
        assert len({str(s) for s in styles.values()}) == 3  # three levels, three looks
        assert styles["error"].bold
        secret = texts[-1]
        assert "abcdef0123456789" not in secret and "ghp_abcdefghijklmnop" not in secret and "****" in secret


# -- help, palette, W&B keys, config diff ---------------------------------------------------------------------

async def test_help_puts_the_current_tabs_keys_first_without_doubled_labels():
    async with opened(ROLLBACK, SIZE, tab="6") as (app, pilot):
        await pilot.press("question_mark")
        text = plain(app.screen.query_one("#help-text", Static))
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        assert lines[0] == "Log tab (this tab)"
        first_section = lines[1:lines.index("Curves tab")]
        assert any("Next attempt" in line for line in first_section) and any("Wrap" in line for line in first_section)
        for line in lines:
            label = line.strip().split(None, 1)[-1]
            head, _, rest = label.partition(": ")
            assert not rest or head.lower() not in rest.lower(), line  # never "Policy: Overlap policy: ..."
        curves = lines[lines.index("Curves tab"):]
        keys = [line.split()[0] for line in lines if line.startswith(" ")]
        assert "g" not in [line.split()[0] for line in curves if line.startswith(" ")]  # g is Top, on the Log tab
        labels: dict[str, set[str]] = {}
        for line in lines[:lines.index("Everywhere")]:  # the Run screen's tabs (the runs table is another screen)
            if line.startswith(" ") and len(line.split(None, 1)) == 2:
                key, label = line.split(None, 1)
                labels.setdefault(key, set()).add(label)
        assert keys and all(len(found) == 1 for found in labels.values()), labels  # one meaning per key
        await pilot.press("escape", "2", "question_mark")
        text = plain(app.screen.query_one("#help-text", Static))
        assert text.splitlines()[0] == "Curves tab (this tab)"


async def test_command_palette_has_only_this_apps_actions():
    async with opened(ROLLBACK, SIZE, tab="2") as (app, pilot):
        from pimm_inspect.tui.screens.help import label_of

        commands = list(app.get_system_commands(app.screen))
        titles = [c.title.rsplit(" (", 1)[0] for c in commands]
        allowed = {label_of(b) for b in RunScreen.BINDINGS} | {"Help", "Quit"}
        assert set(titles) <= allowed, set(titles) - allowed
        assert all(not c.help for c in commands)  # one line each: the key is in the title
        assert not {t.lower() for t in titles} & {"theme", "change theme", "screenshot", "keys", "maximize"}


async def test_o_and_y_say_why_there_is_no_link():
    async with opened(ROLLBACK, SIZE) as (app, pilot):
        await pilot.press("o")
        await pilot.press("y")
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("no W&B link: this run did not log to W&B") and "`pimm-inspect url` prints nothing"
                   in m for m in messages)
        assert any(m.startswith("nothing to copy: no W&B link") for m in messages)


async def test_y_copies_a_sync_command_for_every_offline_folder():
    async with opened(RUNS / "wandb_resumed_offline", SIZE) as (app, pilot):
        await pilot.press("o")
        assert any("never synced" in n.message for n in app._notifications)
        await pilot.press("y")
        root = (RUNS / "wandb_resumed_offline").absolute().as_posix()
        assert app.clipboard == (f"wandb sync {root}/wandb/offline-run-20261129_100901-resume01 "
                                 f"{root}/wandb/offline-run-20261129_100902-resume01")


async def test_config_diff_counts_the_documents_the_tab_shows():
    # wandb_clean: one W&B folder, so one settings document: nothing to compare within the run.
    async with opened(RUNS / "wandb_clean", SIZE, tab="3") as (app, pilot):
        await pilot.press("d")
        message = app._notifications.last.message if hasattr(app._notifications, "last") else \
            list(app._notifications)[-1].message
        assert message.startswith("the Config tab shows 1 document(s)") and \
            "this run has 1: wandb/offline-run-20261129_100901-clean001" in message, message
        tree = app.screen.query_one("#config-tree", Tree)
        assert len(tree.root.children) == 1
