"""Read cache: a refresh of a live run reads only the bytes appended since the last read.

Results live in the process (the TUI keeps one cache per open run) and, unless turned off, in the
persistent disk cache of ``disk_cache`` (outside every run directory), so a later process reuses
them and a grown file is decoded from where the stored result ended.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from ...load import file_deps
from ...load.kinds import read_wandb, read_wandb_folder
from ...sources.protocol import Read, Reader, read_of
from ...model import make_series
from .disk_cache import DEFAULT_MIN_DECODE_MS as DEFAULT_MIN_DECODE_MS, Deps, DiskCache

if TYPE_CHECKING:
    from ...sources.checkpoint.reader import ModelDirResult
    from ...sources.tensorboard.reader import EventFileResult
    from ...sources.train_log.reader import TrainLogResult
    from ...sources.wandb.reader import WandbRunResult

_R = TypeVar("_R")


def _signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) or None when the file cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class _Entry:
    signature: tuple[int, int, int]
    """The main file's (inode, size, mtime_ns): a grown file is extended, not read again."""
    deps: Deps
    """Everything the result was read from (``file_deps``): the main file, folders listed, side files."""
    result: Any


def _run_root(path: Path, rel_path: str) -> Path:
    """The run directory ``rel_path`` is relative to."""
    root = path
    for _part in Path(rel_path).parts:
        root = root.parent
    return root


def _recorded(run_root: Path, main: Path, read: Callable[[], _R]) -> tuple[_R, Deps, float]:
    """``read()``, the files and folders it read (an enclosing recording sees them too) and its CPU seconds.

    Where ``main`` (the file or folder the result is for) really leads is part of it: whether it may be read at
    all depends on it, and its parent's listing, which would show a retargeted link, is not read here."""
    started = time.process_time()
    with file_deps.recording(str(run_root)) as recorder:
        file_deps.note_realpath(main)
        result = read()
    return result, recorder.result(), time.process_time() - started



@dataclass
class ReadCache:
    """Per-file reader results keyed by path; grown files are read from where the last read stopped.

    A result is reused only while nothing it was read from changed (``file_deps``): the file itself, and
    the folders listed and side files opened while reading it (a W&B folder's ``files/``, a ``model/`` tree).
    """

    entries: dict[str, _Entry] = field(default_factory=dict)
    incremental_reads: int = 0
    """How many reads used only appended bytes (for tests and the UI's live indicator)."""
    disk: DiskCache | None = None
    """The persistent layer (None: results live in this process only; the session hands in its disk cache)."""
    min_store_s: float = DEFAULT_MIN_DECODE_MS / 1000.0
    """A full read that took less CPU than this is not written to disk (``DEFAULT_MIN_DECODE_MS``)."""
    keep_in_memory: bool = True
    """False for one-shot commands over many runs: results then live only on disk."""

    def _lookup(self, key: str, disk: DiskCache | None, kind: str, path: Path, rel_path: str) -> _Entry | None:
        entry = self.entries.get(key)
        if entry is None and disk is not None:
            stored = disk.get(kind, path, rel_path)
            if stored is not None:
                entry = _Entry(*stored)
        return entry

    def _cached(self, path: Path, full_read: Callable[[], _R], extend: Callable[[_R], _R | None], kind: str,
                rel_path: str, run_root: Path) -> _R:
        """The cached result when nothing changed; ``extend(old)`` when only the same file grew; else a full read."""
        sig = _signature(path)
        key = f"{kind}:{path}"
        disk = self.disk if self.disk is not None and self.disk.usable_for(run_root) else None
        entry = self._lookup(key, disk, kind, path, rel_path) if sig is not None else None
        if sig is not None and entry is not None:
            if entry.signature == sig and file_deps.unchanged(entry.deps):
                if self.keep_in_memory:
                    self.entries[key] = entry
                file_deps.note_known(entry.deps)
                cached: _R = entry.result
                return cached
            if sig[0] == entry.signature[0] and sig[1] >= entry.result.end_offset:
                old: _R = entry.result
                merged, deps, _cost = _recorded(run_root, path, lambda: extend(old))
                # What the extension did not read again must be as it was when the old result was read.
                again = {(k, p) for k, p, _fp in deps}
                kept = tuple(d for d in entry.deps if (d[0], d[1]) not in again)
                if merged is not None and file_deps.unchanged(kept):
                    file_deps.note_known(kept)
                    self._store(key, sig, deps + kept, merged, disk, kind, path, rel_path)  # a grown file: kept
                    self.incremental_reads += 1
                    return merged
        result, deps, cost = _recorded(run_root, path, full_read)
        if sig is not None:
            self._store(key, sig, deps, result, disk if cost >= self.min_store_s else None, kind, path, rel_path)
        return result

    def _store(self, key: str, sig: tuple[int, int, int], deps: Deps, result: Any, disk: DiskCache | None,
               kind: str, path: Path, rel_path: str) -> None:
        """Keep the result in memory (unless one-shot) and on ``disk`` (None: not worth writing, or no disk)."""
        if self.keep_in_memory:
            self.entries[key] = _Entry(sig, deps, result)
        if disk is not None:
            disk.put(kind, path, rel_path, sig, deps, result)

    def event_file(self, path: Path, rel_path: str, read: Reader[EventFileResult] | None = None
                   ) -> Read[EventFileResult]:
        """The event file through the reader protocol's ``read`` (``sources.tensorboard.read`` unless handed one),
        reusing the previous result, or extending it when only the file grew."""
        from ...sources import tensorboard
        from ...sources.tensorboard.reader import MAX_TAGS_PER_FILE
        from ...sources.tensorboard.reader import read_event_file

        whole = read or tensorboard.read

        def extend(old: EventFileResult) -> EventFileResult | None:
            if old.end_offset <= 0 or any(f.code in ("file.corrupt", "file.too-many-tags") for f in old.findings):
                return None  # nothing valid to extend from (or names it dropped were not kept): read it whole
            merged = _merge_events(old, read_event_file(path, rel_path, start_offset=old.end_offset))
            # past the cap on distinct tags only together: the whole file's read keeps the first ones
            return merged if len(merged.series) <= MAX_TAGS_PER_FILE else None

        result = self._cached(path, lambda: _value(whole(path, rel_path)), extend, "tb_events", rel_path,
                              _run_root(path, rel_path))
        return read_of(result, result.end_offset)

    def wandb_run(self, folder: Path, rel_path: str, read: Reader[WandbRunResult] | None = None
                  ) -> Read[WandbRunResult]:
        """The W&B run folder through the reader protocol's ``read`` (``load.kinds.read_wandb``, which notes the
        ``settings`` probe, unless handed one), decoding only the records appended to a growing transaction log."""
        whole = read or read_wandb
        logs = sorted(folder.glob("run-*.wandb"))
        if not logs:
            return whole(folder, rel_path)

        def extend(old: WandbRunResult) -> WandbRunResult | None:
            if old.log_state is None or not old.log_state.resumable:
                return None  # finished (exit record written) or damaged: nothing to continue
            return read_wandb_folder(folder, rel_path, previous=old)

        root = folder if rel_path in ("", ".") else _run_root(folder, rel_path)
        result = self._cached(logs[0], lambda: _value(whole(folder, rel_path)), extend, "wandb", rel_path, root)
        return read_of(result, result.end_offset)

    def model_dir(self, model: Path, rel_path: str, read: Reader[ModelDirResult] | None = None
                  ) -> Read[ModelDirResult]:
        """The ``model/`` folder through the reader protocol's ``read`` (``sources.checkpoint.read`` unless handed
        one), reused while nothing it read (each file and folder of the tree it visited) changed."""
        from ...sources import checkpoint

        whole = read or checkpoint.read
        run_root = _run_root(model, rel_path)
        key = f"model_dir:{model}"
        disk = self.disk if self.disk is not None and self.disk.usable_for(run_root) else None
        entry = self._lookup(key, disk, "model_dir", model, str(run_root))
        if entry is not None and file_deps.unchanged(entry.deps):
            if self.keep_in_memory:
                self.entries[key] = entry
            file_deps.note_known(entry.deps)
            cached: ModelDirResult = entry.result
            return read_of(cached, 0)
        result, deps, cost = _recorded(run_root, model, lambda: _value(whole(model, rel_path)))
        self._store(key, (0, 0, 0), deps, result, disk if cost >= self.min_store_s else None, "model_dir", model,
                    str(run_root))
        return read_of(result, 0)

    def train_log(self, path: Path, rel_path: str, read: Reader[TrainLogResult] | None = None
                  ) -> Read[TrainLogResult]:
        """train.log through the reader protocol's ``read`` (``sources.train_log.read`` unless handed one),
        decoding only the bytes appended to a growing log."""
        from ...sources import train_log
        from ...sources.train_log.reader import read_train_log

        whole = read or train_log.read

        def extend(old: TrainLogResult) -> TrainLogResult | None:
            if old.resume is None:
                return None  # the read failed midway: nothing to continue from
            return read_train_log(path, rel_path, previous=old)  # itself reads whole a file rewritten in place

        result = self._cached(path, lambda: _value(whole(path, rel_path)), extend, "train_log", rel_path,
                              _run_root(path, rel_path))
        return read_of(result, result.end_offset)


_T = TypeVar("_T")


def _value(read: Read[_T]) -> _T:
    """The value of a rich reader's ``Read`` (those readers always return one: damage is in its findings)."""
    if read.value is None:
        raise ValueError("the reader returned no value")  # a bug: collect turns it into internal.reader-failed
    return read.value


def _merge_events(old: EventFileResult, new: EventFileResult) -> EventFileResult:
    """An event-file result extended by the records read after ``old.end_offset``."""
    series = dict(old.series)
    for tag, s in new.series.items():
        if tag in series:
            prev = series[tag]
            series[tag] = make_series(tag, np.concatenate([prev.steps, s.steps]),
                                      np.concatenate([prev.values, s.values]),
                                      np.concatenate([prev.wall_times_s, s.wall_times_s]), prev.source, prev.attempt)
        else:
            series[tag] = s
    markers = old.markers + tuple(dataclasses.replace(m, record_index=m.record_index + old.record_count)
                                  for m in new.markers)
    # The old tail was incomplete only until the writer finished the record.
    findings = tuple(f for f in old.findings if f.code != "file.truncated") + tuple(new.findings)
    return dataclasses.replace(
        old, series=series, markers=markers, file_version=old.file_version or new.file_version,
        first_wall_time_s=old.first_wall_time_s if old.first_wall_time_s is not None else new.first_wall_time_s,
        last_wall_time_s=new.last_wall_time_s if new.last_wall_time_s is not None else old.last_wall_time_s,
        record_count=old.record_count + new.record_count, scalar_count=old.scalar_count + new.scalar_count,
        other_count=old.other_count + new.other_count, end_offset=new.end_offset, findings=findings)
