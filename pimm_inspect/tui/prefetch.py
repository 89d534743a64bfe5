"""The runs table's first pass, begun before the UI is up: a tree's runs found and their stored rows read by a child.

``pimm-inspect TREE`` starts this before it imports the UI (Textual, the screens): a forked child process searches
the tree and reads each run's stored row (what ``ls`` prints: stats and one small cache entry per run), on the other
core, while this process imports and mounts the UI; batches come back through a pipe as length-prefixed pickles
(between our own two processes; nothing from a run directory is unpickled this way). The table's first pass then
takes runs and rows from here (``PrefetchedRows``) instead of reading them itself; a run with no stored row is read
by that pass as before, and every later pass (a refresh) asks the session directly. Where the process cannot fork
safely (another thread already runs, no ``fork``), there is no prefetch and the pass does all of it itself.

No Textual here: this module is imported before the UI's modules are.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..evidence import RunRow
from ..session import Session

if TYPE_CHECKING:
    from ..session.staged import Stage
    from .table_load import RowSource

_HEADER = struct.Struct("<Q")
FIRST_BATCH = 32
"""Runs in the child's first batch (about a screenful); later batches double up to ``MAX_BATCH``."""
MAX_BATCH = 1024


@dataclass(frozen=True, slots=True)
class Batch:
    """Runs found, in discovery order, and those of their rows the cache still held (looked up: all of them)."""

    paths: list[Path]
    stored: dict[Path, RunRow]


def _produce(session: Session, root: Path, send: Callable[[object], None]) -> None:
    """The child's work: find the runs, send each batch with its stored rows, then the folders not searched."""
    errors: list[tuple[Path, str]] = []
    batch: list[Path] = []
    size = FIRST_BATCH
    for path in session.iter_runs(root, lambda where, reason: errors.append((where, reason))):
        batch.append(path)
        if len(batch) >= size:
            send(Batch(batch, session.stored_rows(batch)))
            batch, size = [], min(size * 2, MAX_BATCH)
    if batch:
        send(Batch(batch, session.stored_rows(batch)))
    send(("done", errors))


class RowPrefetch:
    """A child searching ``root`` and reading its stored rows; its batches arrive in ``frames`` as they are sent."""

    def __init__(self, root: Path, pid: int, read_end: int) -> None:
        self.root = root
        self.pid = pid
        self.frames: queue.Queue[object] = queue.Queue()
        """Batches, then ``("done", errors)``, or ``("failed", reason)``; None: the pipe closed."""
        self.taken = False
        """True once a pass took the prefetch (only the first does)."""
        self._reaped = False
        self._reap_lock = threading.Lock()
        threading.Thread(target=self._receive, args=(read_end,), name="pimm-inspect-rows", daemon=True).start()

    @classmethod
    def start(cls, session: Session, root: Path) -> RowPrefetch | None:
        """Fork the child for the tree at ``root``; None where that is not safe or ``root`` is no folder."""
        if not hasattr(os, "fork") or threading.active_count() != 1 or not root.is_dir():
            return None
        root = root.absolute()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: search, send, and leave without running any exit handler of the parent's
            try:
                os.close(read_end)
                with os.fdopen(write_end, "wb") as out:
                    def send(item: object) -> None:
                        data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                        out.write(_HEADER.pack(len(data)))
                        out.write(data)
                        out.flush()

                    try:
                        _produce(session, root, send)
                    except Exception as exc:  # noqa: BLE001 - the parent's pass says so, as it would itself
                        send(("failed", f"{type(exc).__name__}: {exc}"))
            finally:
                os._exit(0)
        os.close(write_end)
        return cls(root, pid, read_end)

    def _receive(self, read_end: int) -> None:
        """Read frames as they come (the child never waits on a full pipe); None marks the end."""
        try:
            with os.fdopen(read_end, "rb") as pipe:
                while header := pipe.read(_HEADER.size):
                    if len(header) < _HEADER.size:
                        break
                    (size,) = _HEADER.unpack(header)
                    data = pipe.read(size)
                    if len(data) < size:
                        break
                    self.frames.put(pickle.loads(data))
        except Exception:  # noqa: BLE001 - a broken pipe or frame ends the relay (the pass says it failed)
            pass
        finally:
            self.frames.put(None)
            self._reap()

    def _reap(self) -> None:
        with self._reap_lock:
            if self._reaped:
                return
            self._reaped = True
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass

    def close(self) -> None:
        """Stop the child now (the UI is quitting, or the pass was superseded)."""
        if not self._reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap()


class PrefetchFailed(Exception):
    """The child could not finish the search (the pass reports it as its own search failing)."""


class PrefetchedRows:
    """A row source whose first pass over ``prefetch.root`` takes the child's runs and rows; everything else, and
    every later pass, goes to ``inner`` (the session's rows)."""

    def __init__(self, inner: RowSource, prefetch: RowPrefetch) -> None:
        self.inner = inner
        self.prefetch = prefetch
        self._stored: dict[Path, RunRow | None] = {}
        """Rows the child looked up and no pass asked for yet (None: looked up, not stored)."""
        self._lock = threading.Lock()

    def discover(self, root: Path, on_error: Callable[[Path, str], None]) -> Iterator[Path]:
        if self.prefetch.taken or root.absolute() != self.prefetch.root:
            return self.inner.discover(root, on_error)
        self.prefetch.taken = True
        return self._relay(on_error)

    def _relay(self, on_error: Callable[[Path, str], None]) -> Iterator[Path]:
        while True:
            frame = self.prefetch.frames.get()
            if isinstance(frame, Batch):
                with self._lock:
                    for path in frame.paths:
                        self._stored[path] = frame.stored.get(path)
                yield from frame.paths
            elif isinstance(frame, tuple) and frame[0] == "done":
                for where, reason in frame[1]:
                    on_error(where, reason)
                return
            else:
                reason = frame[1] if isinstance(frame, tuple) else "the search stopped"
                raise PrefetchFailed(str(reason))

    def stored(self, paths: list[Path]) -> dict[Path, RunRow]:
        found: dict[Path, RunRow] = {}
        rest: list[Path] = []
        with self._lock:
            for path in paths:
                if path in self._stored:
                    row = self._stored.pop(path)  # served once: a later pass looks again
                    if row is not None:
                        found[path] = row
                else:
                    rest.append(path)
        if rest:
            found.update(self.inner.stored(rest))
        return found

    def build(self, paths: list[Path], cancelled: Callable[[], bool]) -> Iterator[RunRow]:
        return self.inner.build(paths, cancelled)

    def build_big(self, path: Path, on_stage: Callable[[Stage], None], cancelled: Callable[[], bool]) -> RunRow:
        return self.inner.build_big(path, on_stage, cancelled)
