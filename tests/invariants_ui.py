"""UI surfaces for the cross-view invariants: the Overview and the Log tab of one run, through a Textual pilot."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimm_inspect.model import Run
from tests.invariants_surfaces import Check, Surfaces


@dataclass
class UiFacts:
    """What the UI shows of one run: the Overview's attempt rows and count, the Log tab's attempt start lines."""

    overview_count: str
    overview_rows: int
    timeline_rows: int
    log_starts: list[int] | None
    """0-based lines the Log tab marks as attempt starts; None when the run has no train.log."""
    log_path: str | None


async def ui_facts(path: Path, loader: Callable[[Path], Run]) -> UiFacts:
    """Open the run in the app (pilot), read the Overview, then the Log tab."""
    from textual.widgets import Static

    from pimm_inspect.tui.app import make_app
    from pimm_inspect.tui.widgets.log_pane import LogPane
    from pimm_inspect.tui.widgets.log_view import LogView

    from tests.tui_support import settle

    app = make_app(path, loader=loader, follow_interval_s=0)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        screen = app.screen
        identity = _plain(screen.query_one("#ov-identity", Static))
        count = next((line.split()[-1] for line in identity.splitlines() if line.strip().startswith("attempts")), "")
        rows = _plain(screen.query_one("#ov-attempts", Static))
        overview_rows = sum(1 for line in rows.splitlines() if line.strip().startswith("#"))
        strip = screen.query_one("TimelineStrip")
        timeline_rows = len(strip.attempts)
        await pilot.press("6")
        await settle(pilot)
        pane = screen.query_one(LogPane)
        view = screen.query_one(LogView)
        starts = view.attempt_lines.tolist() if pane.log_path else None
        return UiFacts(count, overview_rows, timeline_rows, starts, pane.log_path)


def _plain(widget: Any) -> str:
    import io

    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(content)
    return console.export_text()


def check_ui(s: Surfaces, ui: UiFacts) -> list[Check]:
    """Overview attempts = show attempts; Log tab attempt starts = the model's attempts with a train.log start."""
    run, show = s.run, s.show
    out = [Check("ui.overview", s.rel, ui.overview_count == str(len(show["attempts"])) == str(ui.overview_rows)
                 and ui.timeline_rows == len(show["attempts"]),
                 f"Overview says {ui.overview_count!r} attempts, lists {ui.overview_rows} rows, draws "
                 f"{ui.timeline_rows}; show --json has {len(show['attempts'])}")]
    if ui.log_path is not None:
        with_start = sorted({e.attempt for e in run.events if e.kind == "start" and e.source == ui.log_path
                             and e.attempt is not None})
        if run.train_log is not None and run.train_log.path == ui.log_path and run.train_log.attempt_starts:
            with_start = sorted({st.attempt for st in run.train_log.attempt_starts if st.attempt is not None})
        in_log = sorted(a.index for a in run.attempts if ui.log_path in a.sources)
        ok = len(ui.log_starts or []) == len(with_start) and set(in_log) <= set(with_start)
        out.append(Check("ui.log-starts", s.rel, ok, f"Log tab ({ui.log_path}) marks {len(ui.log_starts or [])} "
                         f"attempt starts (lines {[x + 1 for x in ui.log_starts or []][:8]}); the model's attempts "
                         f"with a start there: {with_start}; attempts whose sources include it: {in_log}"))
    return out
