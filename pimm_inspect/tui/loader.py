"""Loading runs for the UI, kept free of textual so the CLI can start a load before the UI is imported."""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from ..analysis import analyze
from ..load.cache import ReadCache
from ..load.safe import failed_run, load_safely
from ..model import Run

Loader = Callable[[Path], Run]


class CachingLoader:
    """Load and analyse runs, keeping one ReadCache per run so a live reload reads only appended bytes."""

    def __init__(self) -> None:
        self.caches: dict[str, ReadCache] = {}
        self.incremental_reads = 0
        """Reads that used only appended bytes, over all runs (the live indicator and tests use it)."""
        self._lock = threading.Lock()
        self._prefetched: dict[str, Future] = {}

    def prefetch(self, path: Path | str) -> None:
        """Start loading ``path`` now; the first call for that path takes the result.

        ``pimm-inspect RUN`` calls this before importing the UI. Where the process can fork and has no
        other thread yet, a child process reads and analyses the run on the other core while this one
        imports and starts the UI, and sends the Run back through a pipe (pickle between our own two
        processes; nothing from the run directory is ever unpickled this way). Otherwise a thread
        does the load, which still overlaps the I/O and numpy work with the imports.
        """
        key = Path(path).absolute().as_posix()
        future: Future = Future()
        with self._lock:
            self._prefetched[key] = future
        if hasattr(os, "fork") and threading.active_count() == 1:
            self._prefetch_in_child(Path(path), future)
            return

        def work() -> None:
            try:
                future.set_result(self._load(Path(path)))
            except BaseException as exc:  # handed to whoever asks for the run, as a finding
                future.set_exception(exc)

        threading.Thread(target=work, name="pimm-inspect-prefetch", daemon=True).start()

    def _prefetch_in_child(self, path: Path, future: Future) -> None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: load, send, and leave without running any exit handler of the parent's
            try:
                os.close(read_end)
                run = self._load(path)
                cache = self.caches.get(path.absolute().as_posix())  # kept only for a live run
                with os.fdopen(write_end, "wb") as out:
                    out.write(pickle.dumps((run, cache), protocol=pickle.HIGHEST_PROTOCOL))
            finally:
                os._exit(0)
        os.close(write_end)

        def receive() -> None:
            try:
                with os.fdopen(read_end, "rb") as pipe:
                    data = pipe.read()
                os.waitpid(pid, 0)
                run, cache = pickle.loads(data)
                if cache is not None:
                    with self._lock:
                        self.caches[path.absolute().as_posix()] = cache
                future.set_result(run)
            except Exception:  # the child died or sent nothing: load here instead
                try:
                    future.set_result(self._load(path))
                except BaseException as exc:
                    future.set_exception(exc)

        threading.Thread(target=receive, name="pimm-inspect-prefetch", daemon=True).start()

    def __call__(self, path: Path) -> Run:
        with self._lock:
            future = self._prefetched.pop(Path(path).absolute().as_posix(), None)
        if future is not None:
            return future.result()
        return self._load(path)

    def _load(self, path: Path) -> Run:
        with self._lock:
            cache = self.caches.setdefault(Path(path).absolute().as_posix(), ReadCache())
        run = load_safely(path, cache=cache)
        with self._lock:
            self.incremental_reads += cache.incremental_reads
            cache.incremental_reads = 0
            if run.status != "running":  # only a live run is reloaded: don't keep reader results of the others
                self.caches.pop(Path(path).absolute().as_posix(), None)
        try:
            return analyze(run)
        except Exception:  # analysis bugs already become findings per check; this guards the sort itself
            return run


def guarded(loader: Loader, path: Path) -> Run:
    """Call a loader; an exception becomes an ``internal.load-failed`` finding on a minimal Run."""
    try:
        return loader(path)
    except Exception as exc:  # the UI must show a finding, never a traceback
        return failed_run(path, exc)


