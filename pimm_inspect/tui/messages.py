"""Every app-wide message of the terminal UI, posted by workers and handled by screens or the app."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from ..evidence import RunRow
from ..model import Run

if TYPE_CHECKING:
    from ..load.quick import RunGlance  # a type only: the quick stage's module imports the loaders


class DiscoveryDone(Message):
    """Discovery finished: every run directory under the root, and folders it could not search."""

    def __init__(self, paths: list[Path], errors: list[tuple[Path, str]], root_is_run: bool) -> None:
        super().__init__()
        self.paths = paths
        self.errors = errors
        self.root_is_run = root_is_run


class RowLoaded(Message):
    """A run's row for the runs table: the cached ``RunRow`` ``ls`` prints, or made from a run read just now."""

    def __init__(self, path: Path, row: RunRow) -> None:
        super().__init__()
        self.path = path
        self.row = row


class RowsLoaded(Message):
    """Many runs' rows at once (the rows of a big tree arrive in batches: one message each would flood the UI)."""

    def __init__(self, rows: list[tuple[Path, RunRow]]) -> None:
        super().__init__()
        self.rows = rows


class RunsFound(Message):
    """Discovery found more run directories (not loaded yet), in discovery order."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths


class RunGlanced(Message):
    """A run too big to read in passing: what its quick stage says (its full read comes after the others)."""

    def __init__(self, path: Path, glance: RunGlance) -> None:
        super().__init__()
        self.path = path
        self.glance = glance


class LoadProgress(Message):
    """How many of the discovered runs are loaded; a newer one supersedes a queued older one."""

    def __init__(self, done: int, total: int, current: str | None = None) -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.current = current
        """What the load is doing now when it takes a while (a big run's read progress), else None."""

    def can_replace(self, message: Message) -> bool:
        """Only the latest progress matters."""
        return isinstance(message, LoadProgress)


class LoadFinished(Message):
    """Every discovered run has been loaded."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total


class LoadFailed(Message):
    """Something outside any one run failed (e.g. the path does not exist)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class LogIndexProgress(Message):
    """Bytes of a log file indexed so far; a newer one supersedes a queued older one."""

    def __init__(self, done_bytes: int, total_bytes: int) -> None:
        super().__init__()
        self.done_bytes = done_bytes
        self.total_bytes = total_bytes

    def can_replace(self, message: Message) -> bool:
        """Only the latest progress matters."""
        return isinstance(message, LogIndexProgress)


class CompareReady(Message):
    """The marked runs were loaded in full for the compare view."""

    def __init__(self, runs: list[Run]) -> None:
        super().__init__()
        self.runs = runs
