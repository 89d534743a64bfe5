"""Shared by the UI tests: the fixture paths, a loader with a fixed clock, and waiting for workers."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from textual.worker import WorkerCancelled

from pimm_inspect.analysis import analyze
from pimm_inspect.load.assemble import load_run
from pimm_inspect.model import Run

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "fixtures" / "runs"
FIXED_NOW = 4102444800.0
"""2100-01-01: no fixture looks live because of fresh mtimes, so results do not depend on the clock."""


def fixed_loader(path: Path) -> Run:
    """The default loader with a fixed clock."""
    return analyze(load_run(path, now=FIXED_NOW))


async def settle(pilot) -> None:
    """Wait until every worker (loading, curves, log index) is done and its messages are handled."""
    for _ in range(200):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            # An exclusive worker (curves, log index, follow reload) was superseded while we waited:
            # that is the app working as designed, so wait for its successor on the next round.
            pass
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            # Messages a finished worker posted last (LoadFinished -> re-sort) may still be queued.
            for _ in range(3):
                await pilot.pause()
            await _tables_laid_out(pilot)
            if not any(w.is_running for w in pilot.app.workers):
                return


async def _tables_laid_out(pilot) -> None:
    """Wait until every DataTable has measured its rows (it does so when idle, after a re-sort rebuilt it)."""
    from textual.widgets import DataTable

    for _ in range(100):
        pending = [t for t in pilot.app.screen.query(DataTable) if getattr(t, "_require_update_dimensions", False)]
        if not pending:
            return
        await pilot.pause(0.02)


@asynccontextmanager
async def opened(path: Path, size: tuple[int, int], tab: str | None = None):
    """The app on ``path`` (fixed clock, no live follow), settled, on run tab ``tab`` if given: (app, pilot)."""
    from pimm_inspect.tui.app import make_app

    app = make_app(path, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if tab is not None:
            await pilot.press(tab)
            await settle(pilot)
        yield app, pilot
