"""Read cache: a refresh of a live run reads only the bytes appended since the last read.

Results live in the process (the TUI keeps one cache per open run) and, unless turned off, in the
persistent disk cache of ``disk_cache`` (outside every run directory), so a later process reuses
them and a grown file is decoded from where the stored result ended.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from ..model import make_series
from .disk_cache import DiskCache

if TYPE_CHECKING:
    from ..sources.checkpoint.reader import ModelDirResult
    from ..sources.tensorboard.reader import EventFileResult
    from ..sources.train_log.reader import TrainLogResult
    from ..sources.wandb.reader import WandbRunResult

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
    result: Any


def _tree_signature(folder: Path, depth: int = 2) -> tuple[int, int, int]:
    """A signature of a folder's entries (names, inodes, sizes, mtimes, link targets), ``depth`` levels deep."""
    import hashlib

    digest = hashlib.sha256()
    count = 0
    stack = [(folder, 0)]
    while stack:
        path, level = stack.pop()
        try:
            st = os.lstat(path)
            digest.update(f"{path.name}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_mode}".encode(
                "utf-8", "surrogateescape"))
            if os.path.islink(path):
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
                target = os.stat(path)
                digest.update(f"->{target.st_ino}|{target.st_size}|{target.st_mtime_ns}|{target.st_mode}".encode())
        except OSError as exc:
            digest.update(f"{path.name}|error {exc.errno}".encode("utf-8", "surrogateescape"))
            continue
        count += 1
        if level < depth and os.path.isdir(path):
            try:
                names = sorted(os.listdir(path))
            except OSError:
                digest.update(b"|unlistable")
                continue
            stack.extend((path / name, level + 1) for name in reversed(names))
    return (count, 0, int(digest.hexdigest()[:15], 16))


def _run_root(path: Path, rel_path: str) -> Path:
    """The run directory ``rel_path`` is relative to."""
    root = path
    for _part in Path(rel_path).parts:
        root = root.parent
    return root


@dataclass
class ReadCache:
    """Per-file reader results keyed by path; grown files are read from where the last read stopped."""

    entries: dict[str, _Entry] = field(default_factory=dict)
    incremental_reads: int = 0
    """How many reads used only appended bytes (for tests and the UI's live indicator)."""
    disk: DiskCache | None = field(default_factory=DiskCache.configured)
    """The persistent layer (None when the disk cache is off)."""
    keep_in_memory: bool = True
    """False for one-shot commands over many runs: results then live only on disk."""

    def _cached(self, path: Path, full_read: Callable[[], _R], extend: Callable[[_R], _R | None], kind: str = "",
                rel_path: str = "", run_root: Path | None = None) -> _R:
        """The cached result when unchanged; ``extend(old)`` when the same file grew; else a full read."""
        sig = _signature(path)
        key = str(path)
        entry = self.entries.get(key)
        disk = self.disk if self.disk is not None and kind and run_root is not None and self.disk.usable_for(
            run_root) else None
        if entry is None and disk is not None and sig is not None:
            stored = disk.get(kind, path, rel_path)
            if stored is not None:
                entry = _Entry(stored[0], stored[1])
        if sig is not None and entry is not None:
            if entry.signature == sig:
                if self.keep_in_memory:
                    self.entries[key] = entry
                cached: _R = entry.result
                return cached
            same_file = sig[0] == entry.signature[0] and sig[1] >= entry.result.end_offset
            merged = extend(entry.result) if same_file else None
            if merged is not None:
                self._store(key, sig, merged, disk, kind, path, rel_path)
                self.incremental_reads += 1
                return merged
        result = full_read()
        if sig is not None:
            self._store(key, sig, result, disk, kind, path, rel_path)
        return result

    def _store(self, key: str, sig: tuple[int, int, int], result: Any, disk: DiskCache | None, kind: str,
               path: Path, rel_path: str) -> None:
        if self.keep_in_memory:
            self.entries[key] = _Entry(sig, result)
        if disk is not None:
            disk.put(kind, path, rel_path, sig, result)

    def event_file(self, path: Path, rel_path: str) -> EventFileResult:
        """``read_event_file`` that reuses and extends the previous result of a growing file."""
        from ..sources.tensorboard.reader import read_event_file

        def extend(old: EventFileResult) -> EventFileResult | None:
            if old.end_offset <= 0 or any(f.code == "file.corrupt" for f in old.findings):
                return None  # nothing valid to extend from: read it whole
            return _merge_events(old, read_event_file(path, rel_path, start_offset=old.end_offset))

        return self._cached(path, lambda: read_event_file(path, rel_path), extend, "tb_events", rel_path,
                            _run_root(path, rel_path))

    def wandb_run(self, folder: Path, rel_path: str) -> WandbRunResult:
        """``read_wandb_run`` that decodes only the records appended to a growing transaction log."""
        from ..sources.wandb.reader import read_wandb_run

        logs = sorted(folder.glob("run-*.wandb"))
        if not logs:
            return read_wandb_run(folder, rel_path)

        def extend(old: WandbRunResult) -> WandbRunResult | None:
            if old.log_state is None or not old.log_state.resumable:
                return None  # finished (exit record written) or damaged: nothing to continue
            return read_wandb_run(folder, rel_path, previous=old)

        root = folder if rel_path in ("", ".") else _run_root(folder, rel_path)
        return self._cached(logs[0], lambda: read_wandb_run(folder, rel_path), extend, "wandb", rel_path, root)

    def model_dir(self, model: Path, run_root: Path) -> ModelDirResult:
        """``read_model_dir``, reused while no file in the folder (two levels deep) changed."""
        from ..sources.checkpoint.reader import read_model_dir

        sig = _tree_signature(model)
        key = f"model_dir:{model}"
        disk = self.disk if self.disk is not None and self.disk.usable_for(run_root) else None
        entry = self.entries.get(key)
        if entry is None and disk is not None:
            stored = disk.get("model_dir", model, str(run_root))
            entry = _Entry(stored[0], stored[1]) if stored is not None else None
        if entry is not None and entry.signature == sig:
            result: ModelDirResult = entry.result
            return result
        result = read_model_dir(model, run_root)
        if self.keep_in_memory:
            self.entries[key] = _Entry(sig, result)
        if disk is not None:
            disk.put("model_dir", model, str(run_root), sig, result)
        return result

    def train_log(self, path: Path, rel_path: str) -> TrainLogResult:
        """``read_train_log`` that decodes only the bytes appended to a growing log."""
        from ..sources.train_log.reader import read_train_log

        def extend(old: TrainLogResult) -> TrainLogResult | None:
            if old.resume is None:
                return None  # the read failed midway: nothing to continue from
            return read_train_log(path, rel_path, previous=old)  # itself reads whole a file rewritten in place

        return self._cached(path, lambda: read_train_log(path, rel_path), extend, "train_log", rel_path,
                            _run_root(path, rel_path))


def transient_cache() -> ReadCache | None:
    """A cache for one command over many runs: disk only (None when the disk cache is off)."""
    disk = DiskCache.configured()
    return ReadCache(disk=disk, keep_in_memory=False) if disk is not None else None


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
