"""The Log tab: a status line, a search box and the train.log viewer (else each W&B attempt's console log), with
attempts from the run itself."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from ...model import Run
from ...report.safe_text import clean_name, data_text
from ..messages import LogIndexProgress
from .log_view import LogView

KEYS = "/ search  n/N next/prev  [/] attempts  w wrap  g/G ends"


def attempt_starts(run: Run, log_path: str) -> list[tuple[int, int]]:
    """(attempt, 1-based line) of each attempt start in ``log_path``: the model's attempts (``TrainLogFacts``), the
    same the Overview lists, whatever line began them; else the reader's ``start`` events."""
    if run.train_log is not None and run.train_log.path == log_path and run.train_log.attempt_starts:
        known = {a.index for a in run.attempts}
        return sorted((s.attempt, s.line_no) for s in run.train_log.attempt_starts if s.attempt in known)
    starts: dict[int, int] = {}
    for event in run.events:
        if event.kind == "start" and event.source == log_path and event.attempt is not None:
            starts.setdefault(event.attempt, event.line_no)
    return sorted(starts.items())


def log_files(run: Run) -> list[tuple[str, int | None]]:
    """The logs the tab can show, with the attempt each belongs to: train.log (every attempt, None), else the
    console each W&B folder kept (``files/output.log``), one per attempt, oldest first."""
    train_logs: list[tuple[str, int | None]] = [(s.path, None) for s in run.sources if s.kind == "train_log"]
    if train_logs:
        return train_logs
    found: list[tuple[str, int | None]] = []
    for attempt in run.attempts:
        for folder in attempt.sources:
            path = f"{folder}/files/output.log"
            if folder.startswith("wandb/") and (run.root / path).is_file() and path not in [p for p, _ in found]:
                found.append((path, attempt.index))
    return found


class LogPane(Vertical):
    """The train.log of a run, indexed on first view; the screen forwards keys to it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run: Run | None = None
        self.log_path: str | None = None
        self.opened = False
        self.pending_step: tuple[int, int | None] | None = None
        """A log line to show once train.log is indexed (from a finding or the curve cursor)."""
        self.early: tuple[Path, str] | None = None
        """(run root, log path) from the quick stage: the log can be shown before the run is read."""
        self._opened_early = False
        self.files: list[tuple[str, int | None]] = []
        """The logs this run has (``log_files``); ``]``/``[`` go from one to the next when each is one attempt's."""
        self.file_index = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="log-status")
        yield Input(placeholder="/ search the log (enter: find next, escape: back to the log)", id="log-search")
        yield LogView(id="log-view")

    @property
    def view(self) -> LogView:
        """The viewer widget."""
        return self.query_one(LogView)

    def set_early(self, root: Path, log_path: str | None) -> None:
        """The quick stage's train.log (None: the run has none, as far as the listing shows)."""
        self.early = (root, log_path) if log_path else None

    def set_run(self, run: Run) -> None:
        """Keep the run; the log is opened (again) only once the tab has been shown."""
        self.run = run
        if self._opened_early and self.log_path in [s.path for s in run.sources if s.kind == "train_log"]:
            self._opened_early = False  # indexed already, while the run was read: add its attempts only
            self.view.set_attempts(attempt_starts(run, self.log_path or ""))
            if self.view.offsets[-1]:  # indexed: the status line names the attempts now
                self.query_one("#log-status", Static).update(data_text(f"{self._facts()}   ({KEYS})", newlines=False))
            return
        if self.opened:
            self.open()

    def open(self) -> None:
        """Index train.log (not before the tab is first shown: it can be huge)."""
        if self.run is None:
            if self.early is not None:  # the run is still being read: its log can be browsed already
                self.opened = self._opened_early = True
                root, self.log_path = self.early
                self.query_one("#log-status", Static).update(data_text(f"{clean_name(self.log_path or '')}  indexing…", newlines=False))
                self.view.open(root / self.log_path, self.log_path, root)
            return
        self.opened = True
        self.files = log_files(self.run)
        status = self.query_one("#log-status", Static)
        if not self.files:
            status.update("this run has no train.log and no W&B console log (files/output.log)")
            return
        self.file_index = min(self.file_index, len(self.files) - 1)
        self.log_path = self.files[self.file_index][0]
        status.update(data_text(f"{clean_name(self.log_path)}  indexing…", newlines=False))
        self.view.set_attempts(attempt_starts(self.run, self.log_path))
        self.view.open(self.run.root / self.log_path, self.log_path, self.run.root)  # no link out of the run

    def say(self, text: str) -> None:
        """Put a short result (match 2/4, attempt 2 of 2 ...) first in the status line, then the file facts."""
        self.query_one("#log-status", Static).update(data_text(f"{text}   {self._facts()}", newlines=False))

    def _facts(self) -> str:
        view = self.view
        wrap = "wrap on" if view.wrap else "wrap off"
        if self._per_attempt():
            attempt = self.files[self.file_index][1]
            more = f" ({self.file_index + 1} of {len(self.files)}, ] next)" if len(self.files) > 1 else ""
            return f"{clean_name(self.log_path or '')}  W&B console of attempt {attempt}{more}  {view.line_count} lines  {wrap}"
        starts = ", ".join(str(int(i) + 1) for i in view.attempt_lines[:8]) or "-"
        return f"{clean_name(self.log_path or 'train.log')}  {view.line_count} lines  attempts start at line {starts}  {wrap}"

    def _per_attempt(self) -> bool:
        """True when the logs are one per attempt (W&B consoles), so ]/[ go from log to log."""
        return bool(self.files) and self.files[0][1] is not None

    def search(self, forward: bool) -> str | None:
        """n/N: the next/previous match of the search box's text (None: nothing typed yet)."""
        text = self.query_one("#log-search", Input).value
        if not text:
            return None
        result = self.view.search(text, forward)
        self.say(result)
        return result

    def step_attempt(self, forward: bool) -> str:
        """]/[: the next/previous attempt start (the same attempts as the Overview), or attempt's console log."""
        if self._per_attempt() and len(self.files) > 1:
            self.file_index = (self.file_index + (1 if forward else -1)) % len(self.files)
            self.open()
            return f"attempt {self.files[self.file_index][1]}"
        result = self.view.step_attempt(forward)
        self.say(result)
        return result

    def toggle_wrap(self) -> bool:
        """w: wrap long lines or cut them (left/right pan)."""
        wrapped = self.view.toggle_wrap()
        self.say("long lines wrapped" if wrapped else "long lines cut: left/right pan")
        return wrapped

    def show_step(self, step: int, attempt: int | None) -> None:
        """Go to the first Train: line at or after ``step`` once the index is ready."""
        if self._per_attempt():
            # A W&B console has no Train: lines: show the console of the attempt that logged the step.
            index = next((i for i, (_p, a) in enumerate(self.files) if a == attempt), self.file_index)
            if index != self.file_index:
                self.file_index = index
                self.open()
            self.app.notify(f"no train.log: this is the W&B console of attempt {self.files[index][1]}; "
                            f"it does not say which line is step {step}", severity="information")
            return
        self.pending_step = (step, attempt)
        self.try_pending_step()

    def try_pending_step(self) -> None:
        view = self.view
        if self.pending_step is None or view.path is None or not view.offsets[-1]:
            return  # the index is not ready yet: on_log_view_indexed calls again
        step, attempt = self.pending_step
        self.pending_step = None
        if not view.find_step(step, attempt):
            self.app.notify(f"no Train: line for step {step} in the log", severity="warning")
            self.say(f"no Train: line for step {step}")
        else:  # the line says where the jump went, never an earlier search's or attempt's result
            self.say(f"step {step}" + (f" of attempt {attempt}" if attempt is not None else "")
                     + f" (line {view.cursor_line + 1})")
        view.focus()

    @on(Input.Submitted, "#log-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.search(True) is not None:
            self.view.focus()

    def on_log_view_search_done(self, message: LogView.SearchDone) -> None:
        """A big log's search finished: its result replaces "searching…"."""
        self.say(message.note)

    @property
    def searching(self) -> bool:
        """True while a big log is being searched."""
        return self.view.searching

    def cancel_search(self) -> None:
        """Escape during a search: stop it and say so."""
        self.view.cancel_search()
        self.say("search cancelled")

    def on_log_index_progress(self, message: LogIndexProgress) -> None:
        """Show indexing progress of a big log."""
        percent = 100 * message.done_bytes / max(message.total_bytes, 1)
        self.query_one("#log-status", Static).update(f"indexing… {percent:.0f}%")

    def on_log_view_indexed(self, message: LogView.Indexed) -> None:
        """Say how big the log is, where attempts start, and the keys."""
        self.query_one("#log-status", Static).update(data_text(f"{self._facts()}   ({KEYS})", newlines=False))
        self.view.refresh()
        self.call_after_refresh(self.try_pending_step)

    def on_log_view_failed(self, message: LogView.Failed) -> None:
        """A log that cannot be read is a message, not a traceback."""
        self.query_one("#log-status", Static).update(data_text(message.reason))
