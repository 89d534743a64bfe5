"""The Textual app: one load worker feeding the Runs and Run screens through messages."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import get_current_worker

from ..evidence import RunRow
from ..load.discover import RUN_MARKERS_TEXT, classify_dir
from ..load.progress import LoadCancelled
from ..report.safe_text import clean
from ..session import Session
from .facts import relative_name
from .messages import (CompareReady, DiscoveryDone, LoadFailed, LoadFinished, LoadProgress, RowLoaded, RowsLoaded,
                       RunGlanced, RunsFound)
from .screens.help import TAB_TITLES, HelpScreen, as_bindings, label_of, run_screen_sections
from .screens.runs import RunsScreen
from .prefetch import PrefetchedRows, RowPrefetch
from .start import PAUSE_MAX_S, SETTLE_S, collections_paused, quitting, resume_collections
from .table_load import LoaderRows, RowSource, SessionRows, TablePass

if TYPE_CHECKING:
    # The run and compare screens (curves, plotext) are imported when first opened, and the staged loader (analysis,
    # the readers, numpy) when a run is read: the runs table of stored rows, what the UI shows first, needs none.
    from ..session.staged import Loader, StagedLoader
    from .screens.compare import CompareScreen
    from .screens.run import RunScreen
    from .screens.run_loading import RunLoading


def _run_screen() -> type[RunScreen]:
    from .screens.run import RunScreen

    return RunScreen


def _compare_screen() -> type[CompareScreen]:
    from .screens.compare import CompareScreen

    return CompareScreen

class InspectApp(App[None]):
    """pimm-inspect's terminal UI over one run or a tree of runs."""

    CSS_PATH = "pimm_inspect.tcss"
    TITLE = "pimm-inspect"
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, path: Path | str, loader: Loader | StagedLoader | None = None, follow_interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, session: Session | None = None,
                 prefetch: RowPrefetch | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.session = session if session is not None else Session()
        """The front door: discovery, the cached rows of the runs table, staged loading of a run."""
        self._loader = loader
        self.table_rows: RowSource = LoaderRows(loader) if loader is not None else SessionRows(self.session)
        """Where the runs table's rows come from: the session's cached rows (those of ``ls``), or a test's loader."""
        self.prefetch = prefetch if loader is None else None
        """The search and stored rows begun before the UI started (``prefetch.RowPrefetch``): the first pass's."""
        if self.prefetch is not None:
            self.table_rows = PrefetchedRows(self.table_rows, self.prefetch)
        self.follow_interval_s = follow_interval_s
        self.runs: dict[Path, RunRow | None] = {}
        """Discovered runs in discovery order, each with its row; None until it has one. Only handlers change it."""
        self.runs_screen = RunsScreen(self.path, clock=clock)
        self.root_is_run = False
        self._owned: set[str] = set()
        """Runs an open run screen reads itself (the table workers skip them). Changed on the UI thread only."""
        self.crash_report: Path | None = None
        """The file a crash wrote its traceback to (None: no crash, or it could not be written)."""
        self._crash_line: str | None = None

    @property
    def loader(self) -> Loader | StagedLoader:
        """Reads a run in stages: a test's loader, else the session's staged loader (made when first needed)."""
        return self._loader if self._loader is not None else self.session.staged

    def on_unmount(self) -> None:
        if self.prefetch is not None:
            self.prefetch.close()
        # A prefetching child must not outlive the UI (the session's staged loader, only if it was ever made).
        close = getattr(self._loader, "close", None) if self._loader is not None else self.session.close
        if callable(close):
            close()
        quitting()  # the process ends with the UI: no collection of what it made on the way out

    def on_mount(self) -> None:
        self.push_screen(self.runs_screen)
        self.root_is_run = self.path.is_dir() and classify_dir(self.path.absolute()) is not None
        if self.root_is_run:
            # A single run opens directly, before discovery, so its screen is up at once.
            self._push_run_screen(self.path.absolute())
        self._load_all()
        if self.follow_interval_s > 0:
            self.set_interval(self.follow_interval_s, self._refresh_live)
        if collections_paused():  # the launcher paused the collector for the start (``start.begin``): not for long
            self.set_timer(PAUSE_MAX_S, resume_collections)

    # -- workers -------------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load_all(self) -> None:
        """Discover runs and read them for the table (``TablePass``); a newer pass cancels this one."""
        worker = get_current_worker()
        TablePass(self.path.absolute(), self.path, lambda: self.loader, self.post_message, lambda: worker.is_cancelled,
                  lambda key: key in self._owned, self.table_rows).run()

    @work(thread=True, group="reload")
    def _load_one(self, path: Path) -> None:
        """The row of one run for the table (its run screen closed before reading it)."""
        try:
            self.post_message(RowLoaded(path, next(self.table_rows.build([path], lambda: False))))
        except LoadCancelled:
            return

    @work(thread=True, exclusive=True, group="live")
    def _reload_runs(self, paths: list[Path]) -> None:
        """Read live runs again (the per-file cache makes that cost only the appended bytes)."""
        worker = get_current_worker()
        try:
            for path, row in zip(paths, self.table_rows.build(paths, lambda: worker.is_cancelled)):
                self.post_message(RowLoaded(path, row))
                if worker.is_cancelled:
                    return
        except LoadCancelled:
            return

    def _refresh_live(self) -> None:
        """Auto-refresh: reload the runs the table shows as running (an open run screen follows its own run)."""
        paths = [self.runs_screen.paths[k] for k in self.runs_screen.live_keys() if k not in self._owned]
        if paths:
            self._reload_runs(paths)

    # -- handlers (the only place state changes) ----------------------------------------------------------

    def _runs_screen_gone(self) -> bool:
        """True once the runs screen was taken down: shutting down, Textual prunes the screens (the runs screen's
        component styles, which its table draws with, cleared) before it closes the app's own message queue, so a
        row (a live reload finishing, the table's pass) can still be handled after; it changes nothing on screen."""
        return self.runs_screen.is_mounted and not self.runs_screen.is_attached

    def on_runs_found(self, message: RunsFound) -> None:
        if self._runs_screen_gone():
            return
        for path in message.paths:
            self.runs.setdefault(path, None)
        self.runs_screen.add_paths(message.paths)

    def on_discovery_done(self, message: DiscoveryDone) -> None:
        if self._runs_screen_gone():
            return
        if not message.paths:
            lines = [f"No runs found under {self.path.as_posix()}.",
                     f"A run is a folder with {RUN_MARKERS_TEXT}."]
            for where, reason in message.errors[:20]:
                lines.append(f"  cannot search {relative_name(where, self.path) or where.name}: {reason}")
            self.runs_screen.show_problem("\n".join(lines))
        elif len(message.paths) == 1 and not message.root_is_run and self.screen is self.runs_screen:
            self._push_run_screen(message.paths[0])
        elif message.errors:
            self.notify(f"{len(message.errors)} folder(s) could not be searched", severity="warning")

    def on_row_loaded(self, message: RowLoaded) -> None:
        if self._runs_screen_gone():
            return
        self._keep(message.path, message.row)

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        if self._runs_screen_gone():
            return
        for path, row in message.rows:
            self.runs[path] = row
        self.runs_screen.set_runs(message.rows)  # thousands of stored rows: one pass over the table

    def on_run_loading_loaded(self, message: RunLoading.Loaded) -> None:
        """A run screen read its run: the table gets its row (by the rule of ``ls``) too."""
        from ..analysis.summary import run_row

        if self._runs_screen_gone():
            return
        self._keep(message.path, run_row(message.run))

    def _keep(self, path: Path, row: RunRow) -> None:
        # The table keeps rows (no series): a tree of thousands of runs must fit in memory.
        self.runs[path] = row
        self.runs_screen.set_run(path, row)

    def on_run_glanced(self, message: RunGlanced) -> None:
        if self.runs.get(message.path) is None and not self._runs_screen_gone():
            self.runs_screen.set_glance(message.path, message.glance)

    def on_load_progress(self, message: LoadProgress) -> None:
        if self._runs_screen_gone():
            return
        self.runs_screen.set_progress(message.done, message.total, message.current)

    def on_load_finished(self, message: LoadFinished) -> None:
        if self._runs_screen_gone():
            return
        self.runs_screen.set_progress(message.total, message.total)
        self.runs_screen.resort()
        self._first_pass_over()

    def _first_pass_over(self) -> None:
        """The table's first pass is over: the collector back on (``start.resume_collections``) once the table
        is painted and the user looks at it, not in the way of its first paint."""
        if collections_paused():
            self.set_timer(SETTLE_S, resume_collections)

    def on_load_failed(self, message: LoadFailed) -> None:
        self._first_pass_over()
        if self._runs_screen_gone():
            return
        self.runs_screen.show_problem(message.reason)
        for screen in self.screen_stack:
            if isinstance(screen, _run_screen()) and screen.run is None:
                self.notify(message.reason, severity="error")

    def on_runs_screen_open(self, message: RunsScreen.Open) -> None:
        self._push_run_screen(message.path)

    def on_runs_screen_refresh(self, message: RunsScreen.Refresh) -> None:
        self._load_all()  # discovery again (new runs), then every run (live ones read only appended bytes)

    def on_runs_screen_wandb(self, message: RunsScreen.Wandb) -> None:
        self._load_for_wandb(message.path, message.what)

    @work(thread=True, group="wandb", exclusive=True)
    def _load_for_wandb(self, path: Path, what: str) -> None:
        """The run under the runs table's cursor, for ``o``/``y`` (a row holds no link)."""
        from ..session.staged import load_in_stages
        from .wandb_keys import copy_wandb, open_wandb

        worker = get_current_worker()
        try:
            run = load_in_stages(self.loader, path, cancelled=lambda: worker.is_cancelled)
        except LoadCancelled:
            return
        self.call_from_thread(open_wandb if what == "open" else copy_wandb, self, run)

    def on_runs_screen_compare(self, message: RunsScreen.Compare) -> None:
        self._load_for_compare(list(message.paths))

    @work(thread=True, group="compare", exclusive=True)
    def _load_for_compare(self, paths: list[Path]) -> None:
        """Full runs (with curves) for the compare view; the table only holds light copies."""
        from ..session.staged import load_in_stages

        worker = get_current_worker()
        try:
            runs = [load_in_stages(self.loader, p, cancelled=lambda: worker.is_cancelled) for p in paths]
        except LoadCancelled:
            return
        self.post_message(CompareReady(runs))

    def on_compare_ready(self, message: CompareReady) -> None:
        self.push_screen(_compare_screen()(message.runs, self.path))

    def on_run_screen_back(self, message: RunScreen.Back) -> None:
        # A path that is itself a run has no table worth going back to.
        if not self.root_is_run and isinstance(self.screen, _run_screen()):
            screen = self.screen
            self.pop_screen()  # Textual cancels the screen's load worker as it goes (and a prefetch child dies)
            self._owned.discard(screen.path.as_posix())
            if self.runs.get(screen.path) is None and screen.path in self.runs:
                self._load_one(screen.path)  # closed before it was read: the table still needs the run

    def _push_run_screen(self, path: Path) -> None:
        self._owned.add(path.as_posix())  # the run screen reads the whole run itself (the table holds rows only)
        self.push_screen(_run_screen()(path, self.path, None, self.follow_interval_s, loader=self.loader))

    def _handle_exception(self, error: Exception) -> None:
        """Any unhandled exception (a handler's, a worker's): the crash file and one line, never Textual's traceback.

        Textual's own path prints a Rich traceback with every frame's locals (whole runs, launch commands,
        cluster paths); overriding it here covers every way an exception reaches the app.
        """
        from .crash import CRASH_EXIT_CODE, write_crash  # on a crash only: masking secrets compiles ~10 ms of regexes

        self._return_code = CRASH_EXIT_CODE
        if self._exception is None:
            self._exception = error  # run_test re-raises it, so a test sees which exception it was
            self._exception_event.set()
            self.crash_report, self._crash_line = write_crash(error, reading=[self.path])  # never into the tree
        self._close_messages_no_wait()

    def _print_error_renderables(self) -> None:
        """After a crash, the one line naming the crash file, unwrapped and whole (Rich would fold a long path)."""
        if self._crash_line is None:
            super()._print_error_renderables()
            return
        self._exit_renderables.clear()
        stream = self.error_console.file
        stream.write(self._crash_line + "\n")
        stream.flush()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every notification is plain text: messages quote tags, paths and commands from run files."""
        super().notify(clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False)

    # -- actions and commands ------------------------------------------------------------------------------

    def action_help(self) -> None:
        """Show the keys: the current screen's (and tab's) first."""
        if isinstance(self.screen, HelpScreen):
            return
        everywhere = ("Everywhere",
                      as_bindings(self.BINDINGS) + [Binding("ctrl+p", "command_palette", "Command palette")])
        runs_table = ("Runs table", as_bindings(RunsScreen.BINDINGS))
        from .screens.compare import CompareScreen
        from .screens.run import TAB_ACTIONS, RunScreen

        if isinstance(self.screen, RunScreen):
            sections = run_screen_sections(as_bindings(RunScreen.BINDINGS), TAB_ACTIONS, self.screen.active_tab)
            sections += [everywhere, runs_table]
        elif isinstance(self.screen, CompareScreen):
            sections = [("Compare", as_bindings(CompareScreen.BINDINGS)), everywhere, runs_table]
        else:
            sections = [runs_table, everywhere]
        self.push_screen(HelpScreen(sections))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every action of the screen, on every tab (one of another tab switches there first), help and quit: none of
        Textual's generic entries; one line each (the key is in the title)."""
        seen: set[str] = set()
        from .screens.run import TAB_ACTIONS, RunScreen

        if isinstance(screen, RunScreen):
            for binding in as_bindings(RunScreen.BINDINGS):
                if binding.action in seen:
                    continue
                seen.add(binding.action)
                tabs = TAB_ACTIONS.get(binding.action.split("(")[0], ())
                where = "" if not tabs or screen.active_tab in tabs else f" · {TAB_TITLES[tabs[0]]}"
                yield SystemCommand(f"{label_of(binding)} ({self.get_key_display(binding)}{where})", "",
                                    functools.partial(self._run_on_tab, screen, binding.action,
                                                      tabs[0] if where else None))
        else:
            for key, active in screen.active_bindings.items():
                binding = active.binding
                if not active.enabled or binding.action in seen or binding.action in ("quit", "command_palette"):
                    continue
                if binding.action not in {b.action for b in type(active.node).__dict__.get("BINDINGS", ())}:
                    continue  # Textual's own (focus next, copy selected text ...): not this app's actions
                seen.add(binding.action)
                yield SystemCommand(f"{label_of(binding)} ({self.get_key_display(binding)})", "",
                                    functools.partial(self.run_action, binding.action, active.node))
        if "help" not in seen:
            yield SystemCommand("Help (?)", "", self.action_help)
        yield SystemCommand("Quit (q)", "", self.action_quit)

    async def _run_on_tab(self, screen: RunScreen, action: str, tab: str | None) -> None:
        """Run a Run screen action from the palette, on its tab (switching there first when it is another's)."""
        if tab is not None:
            screen.action_tab(tab)
        await self.run_action(action, screen)


def make_app(path: Path | str, loader: Loader | StagedLoader | None = None, follow_interval_s: float = 10.0,
             clock: Callable[[], float] = time.monotonic, session: Session | None = None,
             prefetch: RowPrefetch | None = None) -> InspectApp:
    """The app for a run directory or a folder of runs (shared by the CLI and the tests; tests fix the clock or hand
    in a loader, whose runs then make the table's rows too; the CLI hands in the tree's prefetch it began)."""
    return InspectApp(path, loader=loader, follow_interval_s=follow_interval_s, clock=clock, session=session,
                      prefetch=prefetch)


def run_app(app: InspectApp, headless: bool = False) -> int:
    """Run the app to its end; the process exit code (``CRASH_EXIT_CODE`` after a crash, which leaves a file).

    An exception outside Textual's loop (starting the driver, say) takes the same path as one inside it.
    """
    try:
        app.run(headless=headless)
    except Exception as error:  # noqa: BLE001 - a crash must leave a file and one line, never a traceback
        from .crash import CRASH_EXIT_CODE, write_crash

        _path, line = write_crash(error, reading=[app.path])  # never into the tree the UI was reading
        print(line, file=sys.stderr)
        return CRASH_EXIT_CODE
    return app.return_code or 0
