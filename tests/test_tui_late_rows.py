"""A run's row that lands while the UI goes away (a live follow's reload finishing as the app shuts down: seen once
under xdist as ``KeyError: No 'runs--error' key in COMPONENT_CLASSES``) changes nothing on screen: Textual takes the
screens down (the runs screen's component styles cleared) before the app's own message queue is closed, so the app
may still handle a message after its runs table is gone; it must not lay that table out."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from pimm_inspect.analysis.summary import run_row  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.messages import RowLoaded, RowsLoaded  # noqa: E402
from pimm_inspect.tui.screens.run_loading import RunLoading  # noqa: E402
from tests.tui_support import RUNS, fixed_loader, settle  # noqa: E402

ROLLBACK = RUNS / "e2_rollback"


@pytest.mark.asyncio
@pytest.mark.parametrize("late", ["run screen", "row", "rows"])
async def test_a_row_landing_after_the_screens_are_down_is_dropped(late: str) -> None:
    app = make_app(ROLLBACK, loader=fixed_loader, follow_interval_s=0)  # a run directory: its run screen on top
    run = fixed_loader(ROLLBACK)
    path = ROLLBACK.absolute()
    messages = {"run screen": RunLoading.Loaded(path, run, 1), "row": RowLoaded(path, run_row(run)),
                "rows": RowsLoaded([(path, run_row(run))])}
    real_close_all = app._close_all
    handled: list[bool] = []

    async def close_all() -> None:
        await real_close_all()  # every screen pruned; the app still handles what is queued before it closes
        handled.append(not app.runs_screen.is_attached)
        app.post_message(messages[late])
        await asyncio.sleep(0.05)

    app._close_all = close_all  # type: ignore[method-assign]
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.runs_screen.table
        assert path.as_posix() in table.runs
        await asyncio.sleep(table._interval)  # the next change would flush the table at once
    assert handled == [True]  # the message came after the runs screen was gone (and no crash was re-raised)
    assert app.return_code in (0, None)
