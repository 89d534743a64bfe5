"""The Checkpoints and Overview tabs of issue 22: restarts per checkpoint, wrapped paths, big step numbers, and the
requeued-twice question answered on the Curves and Checkpoints tabs within three keys."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from textual.widgets import DataTable  # noqa: E402

from pimm_inspect.model import CheckpointInfo, Run  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.widgets.overview import TimelineStrip  # noqa: E402
from tests.tui_support import RUNS, drawn, fixed_loader, settle, utc  # noqa: E402,F401

pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("utc")]
REQUEUED = RUNS / "e2_requeued_twice"

if not REQUEUED.is_dir():
    pytest.skip("fixture runs not generated", allow_module_level=True)


async def test_the_requeued_twice_question_is_answered_on_curves_and_checkpoints_within_three_keys():
    """Which steps did TensorBoard draw twice, and which checkpoint did the last attempt restart from?"""
    app = make_app(REQUEUED, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)  # the run opens directly on its Overview
        await pilot.press("2")  # one key
        await settle(pilot)
        screen = await drawn(pilot)
        assert "┆ replayed 51-75: 3 copies (#1 #2 #3); 76-90: 2 (#2 #3)" in screen
        await pilot.press("4")  # one key from the Curves tab (two from opening)
        await settle(pilot)
        screen = await drawn(pilot)
        assert "#2 #3 restarted from model/model_last.pth at step 50 (it holds step 100 now)" in screen
        table = app.screen.query_one("#checkpoint-table", DataTable)
        row = [str(cell) for cell in table.get_row("model/model_last.pth")]
        assert "#2 #3 @50" in row and "◀ picked" in row
        assert all("#" not in str(cell) for cell in table.get_row("model/model_best.pth"))


def long_checkpoint_paths(path: Path) -> Run:
    run = fixed_loader(path)
    deep = "model/" + "/".join(["very_long_folder_name_for_a_sweep"] * 3) + "/iter_000050.pth"
    checkpoint = CheckpointInfo(deep, "legacy", "iter", True, global_step=50, size_bytes=1 << 20)
    second = dataclasses.replace(run.attempts[1], restored_checkpoint=deep, restore_step=50)
    return dataclasses.replace(run, checkpoints=run.checkpoints + (checkpoint,),
                               attempts=(run.attempts[0], second))


async def test_checkpoint_paths_wrap_rather_than_cut_at_80_columns():
    app = make_app(RUNS / "e2_rollback", loader=long_checkpoint_paths, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = await drawn(pilot)
        table = app.screen.query_one("#checkpoint-table", DataTable)
        deep = next(key.value for key in table.rows if "iter_000050" in key.value)
        assert table.rows[next(k for k in table.rows if k.value == deep)].height > 1  # wrapped onto more lines
        assert "…" not in screen.split("restarted from")[-1]  # nothing cut
        lines = screen.splitlines()
        assert any("iter_000050.pth" in line for line in lines) and any(line.lstrip().startswith("model/very_long")
                                                                        or " model/very_long" in line for line in lines)
        assert "#2 @50" in [str(c) for c in table.get_row(deep)]


def big_steps(path: Path) -> Run:
    run = fixed_loader(path)
    scale = 12_345
    attempts = tuple(dataclasses.replace(a, first_step=a.first_step * scale, last_step=a.last_step * 14_112,
                                         lost_steps=None) for a in run.attempts)
    return dataclasses.replace(run, attempts=attempts, replayed=())


async def test_big_step_numbers_are_abbreviated_and_the_strip_fits_its_lines():
    app = make_app(RUNS / "e2_rollback", loader=big_steps, follow_interval_s=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        strip = app.screen.query_one(TimelineStrip)
        rows = [line.plain for line in strip._lines(strip.size.width)]
        assert strip.size.height == len(rows) == len(app.screen.run.attempts) + 2
        assert all(len(row) <= strip.size.width for row in rows)
        assert rows[0].endswith(" 12345-1.06M killed") and rows[1].endswith(" 630k-1.41M completed")
        assert "█ logged" in rows[-1]
        screen = await drawn(pilot)
        assert "(log clock, no zone)" in screen  # train.log's clock records no zone: said so
