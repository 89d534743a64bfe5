"""The Run screen's own load: a cancellable worker showing each stage as it arrives.

The screen owns the worker, so leaving the screen (Textual cancels a removed screen's workers) or
reloading (the worker group is exclusive) stops the read at the next file, and a prefetching child
process is killed: superseded work never finishes in the background.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from textual import work
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import get_current_worker

from ...load.progress import LoadCancelled
from ...load.quick import RunGlance
from ...model import Run, ScalarSeries
from ...report.safe_text import data_text
from ...session.staged import Glanced, Loader, ReadDone, Reading, ReadSoFar, Stage, StagedLoader, load_in_stages
from ..stages import SO_FAR_NOTE, glance_title, progress_text
from ..widgets.config_tree import ConfigPane
from ..widgets.curves import CurvesPane
from ..widgets.log_pane import LogPane
from ..widgets.overview import Overview
from ..widgets.tables import CheckpointsPane, FindingsTable

ELAPSED_AFTER_S = 3
"""From this many seconds into a load, the progress line says how long it has taken so far."""
QUIET_RELOAD_S = 1.0
"""A reload of a run already on screen shows its progress only after this long (live follow reloads often)."""


class RunLoading(Screen[None]):
    """A screen that loads one run in stages: the quick stage's header first, then progress, then the run."""

    class Staged(Message):
        """The screen's load worker reached a stage (posted to the screen itself)."""

        def __init__(self, stage: Stage, generation: int) -> None:
            super().__init__()
            self.stage = stage
            self.generation = generation

    class Loaded(Message):
        """The screen loaded (or reloaded) its run and its checks ran: the app keeps a light copy for the table."""

        def __init__(self, path: Path, run: Run, generation: int) -> None:
            super().__init__()
            self.path = path
            self.run = run
            self.generation = generation

    path: Path
    run: Run | None
    loader: Loader | StagedLoader | None
    glance: RunGlance | None = None
    analysed: bool = False
    _load_generation: int = 0
    _load_started: float = 0.0
    _progress_text: str | None = None
    _ticker: Timer | None = None
    _so_far_lock = threading.Lock()
    """Guards ``_so_far_next`` (shared by every such screen: held for an assignment only)."""
    _so_far_next: tuple[ReadSoFar, int] | None = None
    """The newest preview of the read so far not shown yet, and its load's generation: the load worker replaces it
    rather than queueing more messages (one is on its way whenever this is set)."""

    def start_load(self) -> None:
        """Read the run (again) in a worker; a load already under way is cancelled."""
        if self.loader is None:
            return
        self._load_generation += 1
        self._load_started = time.monotonic()
        if self._ticker is None:
            self._ticker = self.set_interval(1.0, self._tick)  # a single huge file reports nothing for a while
        self._load(self.loader, self.path, self._load_generation)

    def _tick(self) -> None:
        if self._progress_text is not None:
            self.show_progress(self._progress_text)

    @work(thread=True, exclusive=True, group="run-load")
    def _load(self, loader: Loader | StagedLoader, path: Path, generation: int) -> None:
        worker = get_current_worker()

        def report(stage: Stage) -> None:
            if isinstance(stage, ReadSoFar):
                with self._so_far_lock:
                    posted = self._so_far_next is not None
                    self._so_far_next = (stage, generation)
                if posted:
                    return  # the message already on its way shows this newer preview instead: one at a time
            self.post_message(self.Staged(stage, generation))

        try:
            run = load_in_stages(loader, path, report, lambda: worker.is_cancelled)
        except LoadCancelled:
            return  # the screen is gone or a newer load took over: nothing to show
        if not worker.is_cancelled:
            self.post_message(self.Loaded(path, run, generation))

    def on_run_loading_staged(self, message: Staged) -> None:
        """Show what a stage brought, unless a newer load started since."""
        if isinstance(message.stage, ReadSoFar):
            with self._so_far_lock:
                newest, self._so_far_next = self._so_far_next, None
            # A first load only: a reload keeps the run on screen until the new one is read.
            if newest is not None and newest[1] == self._load_generation and self.run is None:
                self.show_so_far(newest[0].series)
            return
        if message.generation != self._load_generation:
            return
        stage = message.stage
        if isinstance(stage, Glanced):
            if self.run is None:  # a reload of a shown run keeps it until the new one is read
                self.set_glance(stage.glance)
        elif isinstance(stage, Reading):
            again = self.analysed  # a reload of a run already shown in full
            if not again or time.monotonic() - self._load_started > QUIET_RELOAD_S:
                self.show_progress(("reloading: " if again else "") + progress_text(stage.progress))
        elif isinstance(stage, ReadDone):
            self.show_read(stage.run)

    def on_run_loading_loaded(self, message: Loaded) -> None:
        """The analysed run: show it everywhere (the message goes on to the app for the runs table)."""
        if message.generation == self._load_generation:
            self.show_progress(None)
            if self._ticker is not None:
                self._ticker.stop()
                self._ticker = None
            self.set_run(message.run)

    def set_glance(self, quick: RunGlance) -> None:
        """Header, identity and config documents from the quick stage (nothing is read in full yet)."""
        self.glance = quick
        if not self.is_mounted:
            return
        self.query_one("#run-title", Static).update(data_text(glance_title(quick, self.base), newlines=False))
        self.query_one(Overview).set_glance(quick)
        self.query_one(ConfigPane).set_documents(quick.configs, complete=False)
        self.query_one(CurvesPane).show_waiting("reading the run's files…")
        self.query_one(CheckpointsPane).show_pending("reading the run's files…")
        self.query_one(FindingsTable).show_pending("reading the run's files; the checks run once all is read…")
        logs = [f.path for f in quick.files if f.kind == "train_log"]
        self.query_one(LogPane).set_early(quick.root, logs[0] if logs else None)
        if self.active_tab == "log":
            self.query_one(LogPane).open()
        self.show_progress("reading…")

    def show_so_far(self, series: tuple[ScalarSeries, ...]) -> None:
        """Tags and curves of what the full read got through so far (a stand-in run of only those series)."""
        if not self.is_mounted or not series:
            return
        quick = self.glance
        preview = Run(root=quick.root if quick is not None else self.path.absolute(), kind="unknown", era=None,
                      status="unknown", name=self.path.name, series=series)
        self.query_one(Overview).show_tags_so_far(len(preview.tags()))
        self.query_one(CurvesPane).set_run(preview, pending=SO_FAR_NOTE)

    def show_progress(self, text: str | None) -> None:
        """The progress line under the title (None hides it); after a few seconds it counts them."""
        self._progress_text = text
        if not self.is_mounted:
            return
        line = self.query_one("#run-progress", Static)
        line.display = text is not None
        elapsed = int(time.monotonic() - self._load_started)
        line.update(data_text((text or "") + (f"  ({elapsed} s)" if text and elapsed >= ELAPSED_AFTER_S else ""),
                              newlines=False))

    base: Path

    @property
    def active_tab(self) -> str:
        """Id of the shown tab (the screen implements it)."""
        raise NotImplementedError

    def set_run(self, run: Run) -> None:
        """Show the analysed run (the screen implements it)."""
        raise NotImplementedError

    def show_read(self, run: Run) -> None:
        """Show the read run before its checks ran (the screen implements it)."""
        raise NotImplementedError
