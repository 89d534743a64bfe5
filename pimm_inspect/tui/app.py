"""The Textual app: one load worker feeding the Runs and Run screens through messages."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker

from ..load.discover import classify_dir, iter_runs
from ..model import Run
from ..report.safe_text import clean
from .facts import is_light, light_run, relative_name
from .loader import CachingLoader, Loader, guarded
from .messages import (CompareReady, DiscoveryDone, LoadFailed, LoadFinished, LoadProgress, RunFound,
                       RunLoaded)
from .screens.compare import CompareScreen
from .screens.help import HelpScreen, as_bindings, label_of, run_screen_sections
from .screens.run import TAB_ACTIONS, RunScreen
from .screens.runs import RunsScreen

class InspectApp(App):
    """pimm-inspect's terminal UI over one run or a tree of runs."""

    CSS_PATH = "pimm_inspect.tcss"
    TITLE = "pimm-inspect"
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, path: Path | str, loader: Loader | None = None, follow_interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.path = Path(path)
        self.loader: Loader = loader or CachingLoader()
        self.follow_interval_s = follow_interval_s
        self.runs: dict[Path, Run | None] = {}
        """Discovered runs in discovery order; None until loaded. Only message handlers change it."""
        self.runs_screen = RunsScreen(self.path, clock=clock)
        self.root_is_run = False

    def on_mount(self) -> None:
        self.push_screen(self.runs_screen)
        self.root_is_run = self.path.is_dir() and classify_dir(self.path.absolute()) is not None
        if self.root_is_run:
            # A single run opens directly, before discovery, so its screen is up at once.
            self._push_run_screen(self.path.absolute())
        self._load_all()
        if self.follow_interval_s > 0:
            self.set_interval(self.follow_interval_s, self._refresh_live)

    # -- worker ---------------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def _load_all(self) -> None:
        """Discover runs (posting each as found), then load them one by one."""
        worker = get_current_worker()
        root = self.path.absolute()
        if not root.exists():
            self.post_message(LoadFailed(f"cannot open {self.path.as_posix()}: no such file or directory"))
            return
        if not root.is_dir():
            self.post_message(LoadFailed(f"{self.path.as_posix()} is not a directory: give a run directory or a "
                                         "folder of runs"))
            return
        errors: list[tuple[Path, str]] = []
        paths: list[Path] = []
        try:
            for path in iter_runs(root, on_error=lambda p, reason: errors.append((p, reason))):
                if worker.is_cancelled:
                    return
                paths.append(path)
                self.post_message(RunFound(path))
        except Exception as exc:  # discovery must end in a message, never a traceback
            self.post_message(LoadFailed(f"searching {self.path.as_posix()} failed: {type(exc).__name__}: {exc}"))
            return
        self.post_message(DiscoveryDone(paths, errors, classify_dir(root) is not None))
        for done, path in enumerate(paths, start=1):
            if worker.is_cancelled:
                return
            self.post_message(RunLoaded(path, guarded(self.loader, path)))
            self.post_message(LoadProgress(done, len(paths)))
        self.post_message(LoadFinished(len(paths)))

    @work(thread=True, group="reload")
    def _load_one(self, path: Path) -> None:
        """Load one run now (opened before the main worker reached it, or reloaded by live follow)."""
        self.post_message(RunLoaded(path, guarded(self.loader, path)))

    @work(thread=True, exclusive=True, group="live")
    def _reload_runs(self, paths: list[Path]) -> None:
        """Read live runs again (their read caches make that cost only the appended bytes)."""
        worker = get_current_worker()
        for path in paths:
            if worker.is_cancelled:
                return
            self.post_message(RunLoaded(path, guarded(self.loader, path)))

    def _refresh_live(self) -> None:
        """Auto-refresh: reload the runs the table shows as running (an open run screen follows its own run)."""
        followed = {s.path.as_posix() for s in self.screen_stack if isinstance(s, RunScreen)}
        paths = [self.runs_screen.paths[k] for k in self.runs_screen.live_keys() if k not in followed]
        if paths:
            self._reload_runs(paths)

    # -- handlers (the only place state changes) ----------------------------------------------------------

    def on_run_found(self, message: RunFound) -> None:
        self.runs.setdefault(message.path, None)
        self.runs_screen.add_path(message.path)

    def on_discovery_done(self, message: DiscoveryDone) -> None:
        if not message.paths:
            lines = [f"No runs found under {self.path.as_posix()}.",
                     "A run is a folder with train.log, run_metadata.json, resolved_config.json, config.py, "
                     "model/, trainer_state.json, a W&B run folder or TensorBoard event files."]
            for where, reason in message.errors[:20]:
                lines.append(f"  cannot search {relative_name(where, self.path) or where.name}: {reason}")
            self.runs_screen.show_problem("\n".join(lines))
        elif len(message.paths) == 1 and not message.root_is_run and self.screen is self.runs_screen:
            self._push_run_screen(message.paths[0])
        elif message.errors:
            self.notify(f"{len(message.errors)} folder(s) could not be searched", severity="warning")

    def on_run_loaded(self, message: RunLoaded) -> None:
        # The table keeps a light copy (no series): a tree of thousands of runs must fit in memory.
        light = light_run(message.run)
        self.runs[message.path] = light
        self.runs_screen.set_run(message.path, light)
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen) and screen.path == message.path:
                screen.set_run(message.run)

    def on_load_progress(self, message: LoadProgress) -> None:
        self.runs_screen.set_progress(message.done, message.total)

    def on_load_finished(self, message: LoadFinished) -> None:
        self.runs_screen.set_progress(message.total, message.total)
        self.runs_screen.resort()

    def on_load_failed(self, message: LoadFailed) -> None:
        self.runs_screen.show_problem(message.reason)
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen) and screen.run is None:
                self.notify(message.reason, severity="error")

    def on_runs_screen_open(self, message: RunsScreen.Open) -> None:
        self._push_run_screen(message.path)

    def on_runs_screen_refresh(self, message: RunsScreen.Refresh) -> None:
        self._load_all()  # discovery again (new runs), then every run (live ones read only appended bytes)

    def on_runs_screen_compare(self, message: RunsScreen.Compare) -> None:
        self._load_for_compare(list(message.paths))

    @work(thread=True, group="compare", exclusive=True)
    def _load_for_compare(self, paths: list[Path]) -> None:
        """Full runs (with curves) for the compare view; the table only holds light copies."""
        runs = [guarded(self.loader, p) for p in paths]
        self.post_message(CompareReady(runs))

    def on_compare_ready(self, message: CompareReady) -> None:
        self.push_screen(CompareScreen(message.runs, self.path))

    def on_run_screen_back(self, message: RunScreen.Back) -> None:
        # A path that is itself a run has no table worth going back to.
        if not self.root_is_run and isinstance(self.screen, RunScreen):
            self.pop_screen()

    def on_run_screen_reload(self, message: RunScreen.Reload) -> None:
        self._load_one(message.path)

    def _push_run_screen(self, path: Path) -> None:
        run = self.runs.get(path)
        full = None if is_light(run) else run
        self.push_screen(RunScreen(path, self.path, full, self.follow_interval_s))
        if full is None and self.runs:
            self._load_one(path)  # the table holds a light copy, or the main worker has not got to it yet

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
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
        if isinstance(self.screen, RunScreen):
            sections = run_screen_sections(as_bindings(RunScreen.BINDINGS), TAB_ACTIONS, self.screen.active_tab)
            sections += [everywhere, runs_table]
        elif isinstance(self.screen, CompareScreen):
            sections = [("Compare", as_bindings(CompareScreen.BINDINGS)), everywhere, runs_table]
        else:
            sections = [runs_table, everywhere]
        self.push_screen(HelpScreen(sections))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of the screen (by its binding), help and quit: none of Textual's generic entries."""
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if not active.enabled or binding.action in seen or binding.action in ("quit", "command_palette"):
                continue
            if binding.action not in {b.action for b in type(active.node).__dict__.get("BINDINGS", ())}:
                continue  # Textual's own (focus next, copy selected text ...): not this app's actions
            seen.add(binding.action)
            yield SystemCommand(label_of(binding), f"key: {self.get_key_display(binding)}",
                                functools.partial(self.run_action, binding.action, active.node))
        if "help" not in seen:
            yield SystemCommand("Help", "List every key binding", self.action_help)
        yield SystemCommand("Quit", "key: q", self.action_quit)


def make_app(path: Path | str, loader: Loader | None = None, follow_interval_s: float = 10.0,
             clock: Callable[[], float] = time.monotonic) -> InspectApp:
    """The app for a run directory or a folder of runs (shared by the CLI and the tests; tests fix the clock)."""
    return InspectApp(path, loader=loader, follow_interval_s=follow_interval_s, clock=clock)
