"""The Curves tab of issue 22: copies per range, a legend that matches the drawing, zoom, cursor and tag filter."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from rich.text import Text  # noqa: E402
from textual.widgets import Input, Static  # noqa: E402

from pimm_inspect.model import ReplayedRange, Run  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.widgets.curve_spec import points_at, seam_label_places  # noqa: E402
from pimm_inspect.tui.widgets.curves import CurvesPane  # noqa: E402
from pimm_inspect.tui.widgets.plot import CURSOR, REPLAY_END, SEAM, CurvePlot, legend_style  # noqa: E402
from tests.tui_support import RUNS, fixed_loader, settle, utc  # noqa: E402,F401

pytestmark = [pytest.mark.usefixtures("utc")]
ROLLBACK = RUNS / "e2_rollback"
THREE = (ReplayedRange(51, 75, 3, (1, 2, 3)), ReplayedRange(76, 90, 2, (2, 3)))


def requeued_twice(path: Path) -> Run:
    """e2_rollback with a third attempt resuming at 51 as the second did, and the copies analysis would count."""
    run = fixed_loader(path)
    third = dataclasses.replace(run.attempts[1], index=3, first_step=51, last_step=100)
    second = dataclasses.replace(run.attempts[1], last_step=90)
    return dataclasses.replace(run, attempts=(run.attempts[0], second, third), replayed=THREE)


def drawn(plot: CurvePlot) -> str:
    return "\n".join(plot.render_line(y).text for y in range(plot.size.height))


def style_of(text: Text, glyph: str):
    at = text.plain.index(glyph)
    return next(span.style for span in text.spans if span.start <= at < span.end)


@pytest.mark.asyncio
async def test_curves_say_copies_per_range_and_draw_what_the_legend_shows():
    app = make_app(ROLLBACK, loader=requeued_twice, follow_interval_s=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        pane = app.screen.query_one(CurvesPane)
        plot = pane.query_one(CurvePlot)
        legend = pane.query_one("#curve-legend", Static).content
        assert isinstance(legend, Text)
        assert "┆ replayed 51-75: 3 copies (#1 #2 #3); 76-90: 2 (#2 #3)" in legend.plain
        assert "│ resumed #2 #3 at 51" in legend.plain
        assert plot.spec.seam_labels == ((51.0, "#2 #3"),)  # two resumes at one step: one label, both names
        # Each legend glyph in its line's colour; seam, range end and cursor are three different glyphs.
        assert len({SEAM[0], REPLAY_END[0], CURSOR[0]}) == 3
        assert style_of(legend, "┆") == legend_style(REPLAY_END[1])
        assert style_of(legend, "│") == legend_style(SEAM[1])
        assert style_of(legend, "⣿") == legend_style(plot.spec.lines[0].color)
        picture = drawn(plot)
        assert "┆" in picture and "│" in picture and "┃" not in picture and "#2 #3" in picture
        await pilot.press("z")  # the union of every replayed range, the cursor on a logged step
        await settle(pilot)
        status = str(pane.query_one("#curve-status", Static).render())
        assert "zoom: replayed 51-90" in status
        assert pane.options.x_range is not None and pane.options.x_range[0] < 51 and pane.options.x_range[1] > 90
        assert points_at(app.screen.run, pane.tag, int(pane.cursor_x), False)
        assert "┃" in drawn(plot) and "┃ cursor" in pane.query_one("#curve-legend", Static).content.plain
        pane.focus_steps(51, 60)  # a zoom cutting a range: the legend still gives the true ranges
        await settle(pilot)
        assert "76-90: 2 (#2 #3)" in pane.query_one("#curve-legend", Static).content.plain
        assert 51 <= pane.cursor_x <= 60 and points_at(app.screen.run, pane.tag, int(pane.cursor_x), False)


@pytest.mark.asyncio
async def test_the_tag_filter_never_leaves_the_plot_on_a_hidden_tag():
    app = make_app(ROLLBACK, loader=fixed_loader, follow_interval_s=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        pane = app.screen.query_one(CurvesPane)
        box = pane.query_one("#tag-filter", Input)
        box.value = "val/mIoU"
        await settle(pilot)
        assert pane.tag == "val/mIoU" and pane.query_one(CurvePlot).spec.lines
        box.value = "zzz"
        await settle(pilot)
        assert pane.tag is None and not pane.query_one(CurvePlot).spec.lines
        assert 'no tag matches "zzz"' in pane.query_one(CurvePlot).spec.empty_text


def test_seam_labels_never_collide_or_leave_the_axis():
    assert seam_label_places([(51.0, 2), (51.0, 3)], 0, 100, 90) == ((51.0, "#2 #3"),)
    assert seam_label_places([(50.0, 2), (51.0, 3)], 0, 100, 90) == ((50.0, "#2 #3"),)  # a column apart
    assert seam_label_places([(10.0, 2), (60.0, 3)], 0, 100, 90) == ((10.0, "#2"), (60.0, "#3"))
    assert seam_label_places([(0.0, 2)], 0, 100, 90) == ((0.0, "#2"),)  # a restart at step 0 keeps its '#'
    (x, label), = seam_label_places([(100.0, 4)], 0, 100, 50)
    assert label == "#4" and x <= 100 - 2 * 2  # two cells before the right end
