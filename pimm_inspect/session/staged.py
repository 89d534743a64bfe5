"""Loading runs in stages (the session's ``stages``, what the UI shows), free of textual so the CLI can start a load
before the UI is imported.

A load goes through three stages, each handed to ``on_stage`` as it is reached: :class:`Glanced` (the quick
stage of ``load.quick``: header facts in milliseconds), :class:`Reading` (progress of the full read, per
file and within a big one), with :class:`ReadSoFar` (the series a big file gave so far) now and then, and
:class:`ReadDone` (the full Run, not analysed yet); the analysed Run is the return value. A
``cancelled`` callable is asked between files; when it says yes the load raises ``LoadCancelled``, and a
prefetching child process is killed, so superseded work stops instead of finishing in the background.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Union, runtime_checkable

from ..analysis import analyze
from ..load.progress import SO_FAR_EVERY_S, LoadCancelled, ReadProgress, ReadTracker
from ..load.quick import RunGlance, glance
from ..load.safe import failed_run, load_reusable
from ..model import Run, ScalarSeries
from .child import END, ForkedChild, Send
from .store.cache import ReadCache
from .store.disk_cache import DiskCache

READ_BLOCK_BYTES = 2 << 20
"""The UI reads a big train.log in steps of this many bytes: its first preview after some 30 ms of parsing instead of
a 16 MiB block's half second (on a 200 MB log, 1-4 MiB steps took no more CPU than 16 MiB ones, and less memory)."""

Loader = Callable[[Path], Run]
"""A plain loader (tests, custom loaders): the analysed Run of a path, in one go."""


@dataclass(frozen=True, slots=True)
class Glanced:
    """The quick stage is done: header facts from the listing, documents and tails."""

    glance: RunGlance


@dataclass(frozen=True, slots=True)
class Reading:
    """The full read got further."""

    progress: ReadProgress


@dataclass(frozen=True, slots=True)
class ReadSoFar:
    """The full read of a big file is under way: the series read from it so far (thinned to a few tens of thousands
    of points per tag), so tags and curves can be shown long before the read ends.

    Only series, by design: attempts, replays and findings are decided on the whole run (``ReadDone``, then the
    analysed Run), never on part of a file. A prefetching child sends one at most every ``so_far_every_s``, and one
    not relayed yet is replaced by the next (``child.ForkedChild``'s ``replaces``)."""

    series: tuple[ScalarSeries, ...]


@dataclass(frozen=True, slots=True)
class ReadDone:
    """The full read is done: every tag, curve and attempt; the checks have not run yet."""

    run: Run


Stage = Union[Glanced, Reading, ReadSoFar, ReadDone]
StageCallback = Callable[[Stage], None]


@runtime_checkable
class StagedLoader(Protocol):
    """A loader that reports its stages and can be stopped between files."""

    def load(self, path: Path, on_stage: StageCallback | None = None,
             cancelled: Callable[[], bool] | None = None) -> Run:
        """The analysed Run of ``path``, reporting stages; raises LoadCancelled once ``cancelled()`` holds."""
        ...


def load_in_stages(loader: Loader | StagedLoader, path: Path, on_stage: StageCallback | None = None,
                   cancelled: Callable[[], bool] | None = None) -> Run:
    """Load ``path`` with ``loader``; a plain loader gets the quick stage from ``load.quick`` before its one call.

    Never raises except LoadCancelled: a loader's exception becomes an ``internal.load-failed`` finding.
    """
    if isinstance(loader, StagedLoader):
        try:
            return loader.load(path, on_stage, cancelled)
        except Exception as exc:  # the UI must show a finding, never a traceback
            return failed_run(path, exc)
    _stop_if(cancelled)
    if on_stage is not None:
        quick = _safe_glance(path, None)
        if quick is not None:
            on_stage(Glanced(quick))
    run = guarded(loader, path)
    _stop_if(cancelled)
    return run


def glance_with(loader: Loader | StagedLoader, path: Path) -> RunGlance | None:
    """The quick stage of ``path``, by the loader's own clock when it has one."""
    own = getattr(loader, "glance", None)
    return own(path) if callable(own) else _safe_glance(path, None)


def _stop_if(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise LoadCancelled()


def _safe_glance(path: Path, now: float | None) -> RunGlance | None:
    """The quick stage, or None when it fails (the full read then says what is wrong, as a finding)."""
    try:
        return glance(path, now)
    except Exception:  # noqa: BLE001 - the quick stage is a head start, never a reason to fail
        return None


class CachingLoader:
    """Load and analyse runs in stages, keeping one ReadCache per live run so a reload reads only appended bytes."""

    def __init__(self, clock: Callable[[], float] | None = None,
                 make_cache: Callable[[], ReadCache] | None = None, *, so_far_every_s: float = SO_FAR_EVERY_S,
                 read_block_bytes: int | None = READ_BLOCK_BYTES, disk: DiskCache | None = None) -> None:
        self.make_cache: Callable[[], ReadCache] = make_cache or ReadCache
        """A new per-run read cache (the session's: on its disk cache; by default in memory only)."""
        self.caches: dict[str, ReadCache] = {}
        self.incremental_reads = 0
        """Reads that used only appended bytes, over all runs (the live indicator and tests use it)."""
        self.clock = clock
        """The time liveness is judged against (None: the real clock); tests fix it."""
        self.so_far_every_s = so_far_every_s
        """How often a big file's series read so far are shown while it is read (``ReadSoFar``)."""
        self.read_block_bytes = read_block_bytes
        """Bytes a big file's reader reads between two progress reports (None: the reader's own blocks)."""
        self.disk = disk
        """The session's disk cache, asked only whether a run's train.log is in it already (``prefetch``)."""
        self._lock = threading.Lock()
        self._children: dict[str, _Child] = {}

    def _now(self) -> float | None:
        return self.clock() if self.clock is not None else None

    def prefetch(self, path: Path | str) -> int | None:
        """Start loading ``path`` now; the first ``load`` of that path takes it over. Returns the child's pid.

        ``pimm-inspect RUN`` calls this before importing the UI. Where the process can fork and has no
        other thread yet, a child process loads and analyses the run on the other core while this one
        imports and starts the UI, sending each stage back through a pipe (pickle between our own two
        processes; nothing from the run directory is ever unpickled this way). Otherwise (None) the
        first ``load`` reads the run itself. So it does when the run's train.log is in the disk cache already
        (``log_cached``): reading that entry lazily here is quicker than a child decoding every column of it and
        sending them all through the pipe (a warm 1 GB log: tags after 5 s instead of 10 s, busy machine), and the
        child would compete with the UI's start for the processors.
        """
        if not ForkedChild.possible() or (self.disk is not None and log_cached(self.disk, Path(path))):
            return None
        key = Path(path).absolute().as_posix()
        child = _Child.start(Path(path), self)
        with self._lock:
            self._children[key] = child
        return child.pid

    def cancel(self, path: Path | str) -> None:
        """Stop a prefetch of ``path`` nobody took over yet (its child is killed)."""
        with self._lock:
            child = self._children.pop(Path(path).absolute().as_posix(), None)
        if child is not None:
            child.kill()

    def close(self) -> None:
        """Kill every prefetching child (the UI is quitting)."""
        with self._lock:
            children = list(self._children.values())
            self._children.clear()
        for child in children:
            child.kill()

    def __call__(self, path: Path) -> Run:
        return self.load(path)

    def load(self, path: Path, on_stage: StageCallback | None = None,
             cancelled: Callable[[], bool] | None = None) -> Run:
        """The analysed Run of ``path`` (a prefetching child's, if one is under way), reporting each stage."""
        with self._lock:
            child = self._children.pop(Path(path).absolute().as_posix(), None)
        if child is not None:
            got = child.relay(on_stage, cancelled)
            if got is not None:
                run, cache = got
                if cache is not None:
                    with self._lock:
                        self.caches[Path(path).absolute().as_posix()] = cache
                return run
        return self._load(path, on_stage, cancelled)

    def glance(self, path: Path) -> RunGlance | None:
        """The quick stage of ``path`` by this loader's clock (None when it fails)."""
        return _safe_glance(path, self._now())

    def _load(self, path: Path, on_stage: StageCallback | None = None,
              cancelled: Callable[[], bool] | None = None) -> Run:
        return self.load_here(path, on_stage, cancelled)[0]

    def load_here(self, path: Path, on_stage: StageCallback | None = None,
                  cancelled: Callable[[], bool] | None = None) -> tuple[Run, bool]:
        """``load`` in this process (never a prefetching child's), plus whether the result may be reused while
        its files stay the same (``load.safe.load_reusable``: not live, not failed)."""
        emit = on_stage or (lambda _stage: None)
        now = self._now()
        _stop_if(cancelled)
        # Nobody to show the quick stage to (a runs-table load): skip it, it would cost as much as a small run.
        quick = _safe_glance(path, now) if on_stage is not None else None
        if quick is not None:
            emit(Glanced(quick))
        tracker = ReadTracker(quick.files if quick is not None else (), lambda p: emit(Reading(p)), cancelled,
                              so_far=(lambda series: emit(ReadSoFar(series))) if on_stage is not None else None,
                              so_far_every_s=self.so_far_every_s, block_bytes=self.read_block_bytes)
        key = Path(path).absolute().as_posix()
        with self._lock:
            cache = self.caches.get(key) or self.caches.setdefault(key, self.make_cache())
        try:
            run, reusable = load_reusable(path, cache=cache, now=now, progress=tracker)
        except LoadCancelled:
            with self._lock:
                self.caches.pop(key, None)  # a cut-short read leaves no half state for the next one
            raise
        with self._lock:
            self.incremental_reads += cache.incremental_reads
            cache.incremental_reads = 0
            if run.status != "running":  # only a live run is reloaded: don't keep reader results of the others
                self.caches.pop(key, None)
        emit(ReadDone(run))
        tracker.stage("analysing")
        try:
            return analyze(run), reusable
        except Exception:  # analysis bugs already become findings per check; this guards the sort itself
            return run, False


def log_cached(disk: DiskCache, run: Path) -> bool:
    """True when ``run``'s train.log has an entry in ``disk`` written (or used) since the log last changed: a hint
    (a wrong guess costs time, never a wrong result: the entry is checked as usual when it is read)."""
    log = Path(run).absolute() / "train.log"
    try:
        changed = log.stat().st_mtime_ns
        return disk.entry_file("train_log", log, "train.log").stat().st_mtime_ns >= changed
    except OSError:
        return False


def guarded(loader: Loader, path: Path) -> Run:
    """Call a loader; an exception becomes an ``internal.load-failed`` finding on a minimal Run."""
    try:
        return loader(path)
    except Exception as exc:  # the UI must show a finding, never a traceback
        return failed_run(path, exc)


class _Child:
    """A forked process loading one run (``child.ForkedChild``); its stages arrive as frames, a newer ReadSoFar
    replacing one not relayed yet (so does a newer progress report)."""

    def __init__(self, forked: ForkedChild) -> None:
        self.forked = forked
        self.pid = forked.pid

    @classmethod
    def start(cls, path: Path, loader: CachingLoader) -> _Child:
        def work(send: Send) -> None:
            run = loader._load(path, lambda item: send(("stage", item)))
            cache = loader.caches.get(path.absolute().as_posix())  # kept only for a live run
            # Everything analysis set (findings, summary, Run.replayed ...), without the series the parent already
            # has from the ReadDone stage.
            send(("analysed", (dataclasses.replace(run, series=(), events=()), cache)))

        return cls(ForkedChild.start(work, "pimm-inspect-prefetch", replaces=_superseded))

    def kill(self) -> None:
        """Stop the child now (its screen is gone, or a newer load supersedes it)."""
        self.forked.kill()

    def relay(self, on_stage: StageCallback | None,
              cancelled: Callable[[], bool] | None) -> tuple[Run, ReadCache | None] | None:
        """Hand the child's stages to ``on_stage``; the analysed Run and the child's read cache (a live run's),
        or None when the child gave up early."""
        read: Run | None = None
        while True:
            try:
                frame = self.forked.get(timeout=0.05)
            except queue.Empty:
                if cancelled is not None and cancelled():
                    self.kill()
                    raise LoadCancelled() from None
                continue
            if frame is END:
                return None  # the child died or could not send: the caller loads here instead
            assert isinstance(frame, tuple)  # our own child's (kind, payload)
            kind, payload = frame
            if kind == "stage":
                if isinstance(payload, ReadDone):
                    read = payload.run
                if on_stage is not None:
                    on_stage(payload)  # our own child sends only Stage values
                if cancelled is not None and cancelled():
                    self.kill()
                    raise LoadCancelled()
            elif kind == "analysed" and read is not None:
                assert isinstance(payload, tuple)  # our own child's (analysed run without series, cache)
                analysed, cache = payload
                return dataclasses.replace(analysed, series=read.series, events=read.events), cache


def _superseded(frame: object) -> type | None:
    """Frames only the newest of which matters, each kind on its own: what a big file gave so far, how far the read
    got (never the quick stage, the read run or the analysed one)."""
    if isinstance(frame, tuple) and len(frame) == 2 and isinstance(frame[1], (ReadSoFar, Reading)):
        return type(frame[1])
    return None
