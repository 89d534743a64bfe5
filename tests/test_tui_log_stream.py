"""Issue 23: a big train.log's tags and the curves read so far show while the read goes on, and the final view is
exactly what a load without previews shows; nothing about replays or findings is claimed from part of the file;
leaving or quitting stops the read (in this process or in a prefetching child)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from textual.widgets import DataTable, OptionList, Static  # noqa: E402
from textual.worker import WorkerState  # noqa: E402

from pimm_inspect.session.staged import CachingLoader, ReadDone, Reading, ReadSoFar  # noqa: E402
from pimm_inspect.tui.app import make_app  # noqa: E402
from pimm_inspect.tui.screens.run import RunScreen  # noqa: E402
from pimm_inspect.tui.screens.runs import RunsScreen  # noqa: E402
from pimm_inspect.tui.stages import SO_FAR_NOTE  # noqa: E402
from pimm_inspect.tui.widgets.curves import CurvesPane  # noqa: E402
from tests.test_tui_pilot import plain  # noqa: E402
from tests.test_tui_staged import _alive, needs_fork, progress  # noqa: E402
from tests.tui_support import FIXED_NOW, settle, until, utc  # noqa: E402,F401
from tests.train_log_support import write_big_log  # noqa: E402

pytestmark = pytest.mark.usefixtures("utc")
SIZE = (120, 36)
BLOCK = 256 << 10
"""The loader's read block in these tests (a setting of the loader): a 4 MB log is read in about 16 steps."""


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """A two-attempt log of about 4 MB: the second attempt replays steps the first had logged after its last save."""
    run = tmp_path_factory.mktemp("stream") / "big"
    run.mkdir()
    write_big_log(run / "train.log", 4 << 20, attempts=2, mixed=True)
    return run


class HeldAtPreview(CachingLoader):
    """Reads in small blocks, hands on every preview, and holds the read (in this process) right after the
    ``hold_at``-th preview was handed on, until ``release`` is set; counts the stages it saw."""

    def __init__(self, hold_at: int | None) -> None:
        super().__init__(clock=lambda: FIXED_NOW, so_far_every_s=0.0, read_block_bytes=BLOCK)
        self.hold_at = hold_at
        """Hold after this many previews (None: never)."""
        self.previews: list[ReadSoFar] = []
        self.readings_after_release = 0
        self.held, self.release = threading.Event(), threading.Event()
        self.stages: list[object] = []

    def load(self, path, on_stage=None, cancelled=None):
        def stage(item) -> None:
            self.stages.append(item)
            if self.release.is_set() and isinstance(item, Reading):
                self.readings_after_release += 1
            if on_stage is not None:
                on_stage(item)
            if isinstance(item, ReadSoFar):
                self.previews.append(item)
                if len(self.previews) == self.hold_at:
                    self.held.set()
                    assert self.release.wait(60), "the test never released the read"

        return super().load(path, stage, cancelled)


def _view(screen: RunScreen) -> dict[str, object]:
    """What the run screen shows of a run, widget by widget (text), and its curves' data."""
    pane = screen.query_one(CurvesPane)
    table = screen.query_one("#findings-table", DataTable)
    return {
        "title": str(screen.query_one("#run-title", Static).render()),
        "identity": plain(screen.query_one("#ov-identity", Static)),
        "attempts": plain(screen.query_one("#ov-attempts", Static)),
        "findings": plain(screen.query_one("#ov-findings", Static)),
        "table": [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)],
        "tags": [o.id for o in pane.query_one("#tag-list", OptionList).options],
        "note": str(pane.query_one("#policy-note", Static).render()),
        "progress": progress(screen.app),
    }


def _series(run) -> dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray]]:
    return {(s.tag, s.attempt): (s.steps, s.values) for s in run.series}


@pytest.mark.asyncio
async def test_tags_and_curves_show_while_a_big_log_is_read_and_the_final_view_is_the_usual_one(big_run):
    loader = HeldAtPreview(hold_at=4)
    app = make_app(big_run, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, loader.held.is_set, what="the read held after its fourth preview")
        screen = app.screen
        assert isinstance(screen, RunScreen)
        pane = screen.query_one(CurvesPane)
        await until(pilot, lambda: "so far" in plain(screen.query_one("#ov-identity", Static)),
                    what="the tags read so far on the overview")
        await until(pilot, lambda: pane.run is not None and len(pane.run.series) > 0, what="the curves read so far")
        assert screen.run is None  # the full read is still held
        identity = plain(screen.query_one("#ov-identity", Static))
        found = re.search(r"scalar tags  (\d+) so far, reading…", identity)
        assert found is not None and int(found.group(1)) >= 8, identity
        assert "findings     reading…" in identity  # no finding from part of the file
        findings = screen.query_one("#findings-table", DataTable)  # and no empty table that would read as "none"
        assert findings.row_count == 1 and "checks run once all is read" in str(findings.get_row_at(0)[-1])
        assert "reading" in str(screen.query_one("#checkpoint-restores", Static).render())
        tags = [o.id for o in pane.query_one("#tag-list", OptionList).options]
        assert "train_batch/loss" in tags and "params/lr" in tags
        # The note says this is a preview; it does not say "No step was written twice" (the whole log replays).
        note = str(pane.query_one("#policy-note", Static).render())
        assert note == SO_FAR_NOTE and "written twice" not in note
        line = re.search(r"reading train\.log: ([\d.]+) (KB|MB) of ([\d.]+) MB", progress(app))
        assert line is not None, progress(app)
        done_mb = float(line.group(1)) / (1024 if line.group(2) == "KB" else 1)
        assert 0.5 <= done_mb <= 2.5 < float(line.group(3))  # four 256 KiB blocks of a 4 MB log, about
        shown = {s.tag: len(s) for s in pane.run.series}
        loader.release.set()
        await until(pilot, lambda: screen.analysed, what="the analysed run")
        await settle(pilot)
        final = _view(screen)
        final_series = _series(screen.run)
        assert all(len(s) >= shown.get(s.tag, 0) for s in screen.run.series)
        assert sum(len(s) for s in screen.run.series if s.tag == "train_batch/loss") > shown["train_batch/loss"]
    assert len(loader.previews) >= 4

    # The same run loaded with no preview at all, in the reader's own blocks: the same view, the same curves.
    plain_loader = CachingLoader(clock=lambda: FIXED_NOW, so_far_every_s=float("inf"), read_block_bytes=None)
    app = make_app(big_run, loader=plain_loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await until(pilot, lambda: screen.analysed, what="the analysed run, read without previews")
        await settle(pilot)
        assert _view(screen) == final
        reference = _series(screen.run)
    assert reference.keys() == final_series.keys()
    for key, (steps, values) in reference.items():
        assert np.array_equal(steps, final_series[key][0]) and np.array_equal(values, final_series[key][1],
                                                                             equal_nan=True), key
    assert "Steps written more than once" in final["note"]  # what the preview must not have denied
    assert any("steps.replayed" in " ".join(row) or "replay" in " ".join(row).lower() for row in final["table"])


def test_a_preview_carries_series_only_and_never_a_finding(big_run):
    """A ReadSoFar has one field, the series read so far: each a part of the final series (its thinned prefix);
    attempts, replays and findings come only with the whole read."""
    assert [f.name for f in dataclasses.fields(ReadSoFar)] == ["series"]
    stages: list[object] = []
    loader = CachingLoader(clock=lambda: FIXED_NOW, so_far_every_s=0.0, read_block_bytes=BLOCK)
    run = loader.load(big_run, stages.append)
    previews = [s for s in stages if isinstance(s, ReadSoFar)]
    done = next(i for i, s in enumerate(stages) if isinstance(s, ReadDone))
    assert len(previews) >= 8 and all(stages.index(p) < done for p in previews)
    final = _series(run)
    for preview in previews:
        for s in preview.series:
            steps, values = final[(s.tag, s.attempt)]
            where = np.searchsorted(steps, s.steps)  # every previewed point is a point of the final series
            assert np.array_equal(steps[np.minimum(where, steps.size - 1)], s.steps), s.tag
    assert len(previews[0].series[0]) < len(final[(previews[0].series[0].tag, previews[0].series[0].attempt)][0])
    assert run.replayed and any(f.code == "steps.replayed" for f in run.findings)


@pytest.mark.asyncio
async def test_leaving_the_screen_stops_a_big_read_at_its_next_block(big_run, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(big_run, tree / "big")
    shutil.copytree(big_run, tree / "other")
    loader = HeldAtPreview(hold_at=None)  # the runs table reads both runs through it first
    app = make_app(tree, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.query_one(
            "#runs-table", DataTable).row_count == 2, what="the runs table")
        await settle(pilot)
        loader.previews.clear()
        loader.hold_at = 2
        table = app.screen.query_one("#runs-table", DataTable)
        table.move_cursor(row=table.get_row_index((tree / "big").as_posix()))
        await pilot.press("enter")
        await until(pilot, loader.held.is_set, what="the run screen's read held mid-file")
        screen = app.screen
        await until(pilot, lambda: "so far" in plain(screen.query_one("#ov-identity", Static)),
                    what="the tags read so far")
        worker = next(w for w in app.workers if w.group == "run-load")
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)
        loader.release.set()
        await settle(pilot)
        assert worker.state == WorkerState.CANCELLED
        assert loader.readings_after_release <= 1  # the read stopped at its next block, far from the end
        assert screen.run is None


class SlowPreviews(CachingLoader):
    """Sends each preview, then takes its time (in the prefetching child, which forks with this class)."""

    def _load(self, path, on_stage=None, cancelled=None):
        def stage(item) -> None:
            if on_stage is not None:
                on_stage(item)
            if isinstance(item, ReadSoFar):
                time.sleep(0.5)

        return super()._load(path, stage, cancelled)


@pytest.mark.asyncio
@needs_fork
async def test_previews_from_a_prefetching_child_show_and_quitting_kills_it(big_run):
    if threading.active_count() != 1:
        pytest.skip("another thread is running: the loader does not fork then, by design")
    loader = SlowPreviews(clock=lambda: FIXED_NOW, so_far_every_s=0.0, read_block_bytes=BLOCK)
    pid = loader.prefetch(big_run)
    assert pid is not None
    app = make_app(big_run, loader=loader, follow_interval_s=0)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await until(pilot, lambda: "so far" in plain(screen.query_one("#ov-identity", Static)),
                    what="the child's preview on the overview")
        assert screen.run is None and _alive(pid)  # the child is still reading (about 16 slow blocks)
        assert str(screen.query_one(CurvesPane).query_one("#policy-note", Static).render()) == SO_FAR_NOTE
    deadline = time.monotonic() + 60  # a hang guard: the kill is prompt, a busy machine may not be
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


def test_the_progress_line_of_one_big_file():
    """One file: no ``0/1`` count; once every byte is read (the reader still joins its series, the cache writes its
    entry: seconds on a 1 GB log) the line says so instead of standing at ``1.0 GB of 1.0 GB``."""
    from pimm_inspect.load.progress import ReadProgress
    from pimm_inspect.tui.stages import progress_text

    gb = 1 << 30
    assert progress_text(ReadProgress("train.log", 0, 1, 230 << 20, gb)) == "reading train.log: 230.0 MB of 1.0 GB…"
    assert progress_text(ReadProgress("train.log", 0, 1, gb, gb)) == \
        "train.log read (1.0 GB); putting its series together…"
    assert progress_text(ReadProgress("event files", 3, 5, 412 << 20, gb)) == \
        "reading event files 3/5, 412.0 MB of 1.0 GB…"
