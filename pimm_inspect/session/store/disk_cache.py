"""The persistent cache of per-file reader results and analysed rows, outside every run directory.

Where: ``session.settings.Settings.cache_dir`` (read from the environment once, by ``Settings.from_env``). One
file per (reader, file,
run-relative name) or run row, named by that key and the code version, holding the fingerprints of
everything the value was read from (``file_deps``); written atomically (temp file + ``os.replace``),
read back with the no-pickle codec of ``_cache_codec`` and ignored when damaged or foreign. The total
size is capped (``Settings.cache_max_bytes``, default 2 GB) by evicting the least recently used entries.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...load.file_deps import Dep, valid_deps
from ...sources.confine import real_path
from . import codec
from .trust import entry_problem, make_private_dir

Deps = tuple[Dep, ...]

ENTRY_SUFFIX = ".pimc"
DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MIN_DECODE_MS = 5.0
"""A full read that took less CPU than this is not written to disk: reading the entry back would cost about as much
as decoding the file again (``Settings.cache_min_decode_s``, from ``$PIMM_INSPECT_CACHE_MIN_DECODE_MS``)."""
_TRIM_AFTER_BYTES = 16 << 20
"""After writing an entry this big the freed heap is given back to the OS (``arrays.release_freed_memory``)."""
TOUCH_AFTER_S = 600.0
"""An entry read is marked used (its mtime set to now) only when it was last marked longer ago than this: eviction
needs no finer order, and a warm ``ls`` of a big tree then writes no inode per entry read."""
_code_versions: dict[tuple[str, ...], str] = {}


def code_version(extra: tuple[str, ...] = ()) -> str:
    """The package version plus a digest of the readers' source files (size, mtime), computed once:
    results stored by other reader code are never reused. ``extra`` names more subpackages whose code
    shaped the stored value (``analysis`` for analysed rows)."""
    if extra not in _code_versions:
        from ... import __version__

        package = str(Path(__file__).resolve().parents[2])
        _code_versions[extra] = f"{__version__}+{source_digest(package, ('sources', 'load', 'session/store', *extra))}"
    return _code_versions[extra]


def source_digest(package: str, folders: tuple[str, ...]) -> str:
    """A digest of the name, size and mtime of every ``.py`` file directly in ``package`` (the model, the one name
    escape, array helpers ...) and every one under each of ``folders`` of ``package``."""
    digest = hashlib.sha256()
    found = []
    try:
        with os.scandir(package) as listing:
            found += [(item.name, item.path) for item in listing if item.name.endswith(".py") and item.is_file()]
    except OSError:
        pass
    for folder in folders:
        found += _python_files(package, folder)
    for rel, source in sorted(found):
        try:
            st = os.stat(source)
        except OSError:
            continue
        digest.update(f"{rel}|{st.st_size}|{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def _python_files(package: str, folder: str) -> list[tuple[str, str]]:
    """(path relative to ``package``, path) of every ``.py`` file under ``package/folder`` (plain ``os.scandir``: the
    version is computed by every process that opens an entry, a warm ``show`` among them)."""
    found = []
    pending = [folder]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(os.path.join(package, rel_dir)) as listing:
                for item in listing:
                    if item.is_dir(follow_symlinks=False):
                        pending.append(f"{rel_dir}/{item.name}")
                    elif item.name.endswith(".py"):
                        found.append((f"{rel_dir}/{item.name}", item.path))
        except OSError:
            continue
    return found


_RESOLVED: ContextVar[tuple[str, str] | None] = ContextVar("pimm_inspect_resolved_run", default=None)
"""(a run's root, where it really leads) while that run is loaded (``run_resolved``)."""


@contextmanager
def run_resolved(root: Path, real: str) -> Iterator[None]:
    """While the run at ``root`` is loaded (this thread), ``usable_for`` answers for it from ``real``, where the
    caller found it leads just before, instead of resolving it again for each of its files."""
    token = _RESOLVED.set((str(root), real))
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def _inside(path: str, folder: str) -> bool:
    """True when the real path ``path`` is ``folder`` or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass
class DiskCache:
    """Reader results on disk; every method is a no-op for a run that contains the cache directory."""

    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    """The total size entries may take; least recently used ones are evicted beyond it."""
    written_bytes: int = 0
    """Bytes written by this process since the last size check."""
    _real: str = ""
    """The directory's real path, once resolved."""
    _made: bool = False
    """True once the directory is known to exist (created or found)."""
    on_problem: Callable[[str], None] | None = field(default=None, compare=False)
    """Told (once) why an entry or the directory was refused (``trust``); the session prints it on stderr."""
    _told: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        """Worker processes get the cache without the session's reporter (it may be any callable), one per process
        (``_in_process``): every batch of runs a worker is handed carries the cache again, and what it learnt (where
        the directory leads, that it exists, the bytes written since the last size check) must carry on."""
        return _in_process, (str(self.directory), self.max_bytes)

    def refuse(self, problem: str) -> None:
        """Say why something in the cache was not trusted, the first time only."""
        if not self._told and self.on_problem is not None:
            self._told = True
            self.on_problem(problem)

    def usable_for(self, run_root: Path, real_root: str | None = None) -> bool:
        """False when the cache directory is inside the run (a cache must never be written into a run).

        ``real_root``: where ``run_root`` really leads, when the caller resolved it just now (else the resolution
        of ``run_resolved`` for the run being loaded, else resolved here)."""
        if not self._real:
            self._real = real_path(self.directory)
        if real_root is None:
            known = _RESOLVED.get()
            real_root = known[1] if known is not None and known[0] == str(run_root) else real_path(run_root)
        return not _inside(self._real, real_root)

    def _entry(self, kind: str, path: Path, rel_path: str, version: str) -> tuple[Path, dict[str, Any]]:
        absolute = str(path.absolute())
        header = {"kind": kind, "path": absolute, "rel": rel_path, "version": version}
        digest = hashlib.sha256("\0".join((kind, absolute, rel_path, version)).encode("utf-8", "surrogateescape"))
        return self.directory / f"{digest.hexdigest()[:40]}{ENTRY_SUFFIX}", header

    def entry_file(self, kind: str, path: Path, rel_path: str, extra_code: tuple[str, ...] = ()) -> Path:
        """The file that holds (or would hold) the value of (kind, path, rel_path) stored by this code version."""
        return self._entry(kind, path, rel_path, code_version(extra_code))[0]

    def get(self, kind: str, path: Path, rel_path: str) -> tuple[tuple[int, int, int], Deps, Any] | None:
        """(signature and dependencies when stored, result) for the file, or None (missing, damaged, foreign)."""
        stored = self.get_value(kind, path, rel_path)
        if not (isinstance(stored, tuple) and len(stored) == 3 and isinstance(stored[0], tuple)
                and len(stored[0]) == 3 and all(type(x) is int for x in stored[0]) and valid_deps(stored[1])):
            return None
        return stored[0], stored[1], stored[2]

    def put(self, kind: str, path: Path, rel_path: str, signature: tuple[int, int, int], deps: Deps,
            result: Any) -> None:
        """Store ``result`` for the file as it was at ``signature``, read from ``deps``."""
        self.put_value(kind, path, rel_path, (tuple(signature), tuple(deps), result))

    def get_value(self, kind: str, path: Path, rel_path: str, extra_code: tuple[str, ...] = ()) -> Any:
        """The value stored under (kind, path, rel_path) by this code version, or None (missing, damaged, foreign)."""
        entry, header = self._entry(kind, path, rel_path, code_version(extra_code))
        try:  # a bare descriptor: the entry is read with ``pread`` (no buffered file, its tty test and seeks)
            fd = os.open(entry, _READ_FLAGS)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            problem = entry_problem(st, entry)
            if problem is not None:  # someone else could have written it: a checksum is no signature
                self.refuse(f"{problem}: entries there are not trusted")
                return None
            used_s = st.st_mtime
            try:
                stored = codec.read_fd(fd, header, st.st_size)
            except codec.BadEntry:
                return None  # damaged or foreign: ignored, and replaced by the next put
        except OSError:
            return None
        finally:
            os.close(fd)
        if time.time() - used_s > TOUCH_AFTER_S:
            try:
                os.utime(entry)  # least recently used = oldest mtime
            except OSError:
                pass
        return stored

    def put_value(self, kind: str, path: Path, rel_path: str, value: Any, extra_code: tuple[str, ...] = ()) -> None:
        """Store ``value`` atomically (quietly skipped when not storable or the disk refuses)."""
        entry, header = self._entry(kind, path, rel_path, code_version(extra_code))
        try:
            fd, tmp = self._temp_file()
        except OSError:
            return  # a read-only or full disk must never stop reading runs
        try:
            with os.fdopen(fd, "wb", buffering=1 << 16) as fh:  # a size given: no tty test of the file
                size = codec.write(fh, value, header)
            os.replace(tmp, entry)
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(exc, (codec.NotCacheable, ValueError, TypeError, RecursionError, OSError)):
                return  # not storable, or the disk refused: the value is simply not cached
            raise
        self.written_bytes += size
        if size >= _TRIM_AFTER_BYTES:  # its encoded tree and packing temporaries: freed, given back before going on
            from ...arrays import release_freed_memory

            release_freed_memory()
        if self.written_bytes > self.max_bytes // 20:
            self.written_bytes = 0
            evict(self.directory, self.max_bytes)


    def _temp_file(self) -> tuple[int, str]:
        """A new temporary file in the cache directory (created with the directory when missing)."""
        if not self._made:
            self._make_dir()
            self._made = True
        try:
            return _new_temp(self.directory)
        except FileNotFoundError:  # removed since (another process cleared the cache): make it again
            self._make_dir()
            return _new_temp(self.directory)

    def _make_dir(self) -> None:
        """The directory, made 0700 when missing; a PermissionError (an OSError: nothing is written) when it is not
        the user's own or others may write it."""
        try:
            make_private_dir(self.directory)
        except PermissionError as exc:
            self.refuse(f"{exc}: the cache is not used")
            raise


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
"""An entry is opened without blocking: a FIFO put in its place opens at once, and is refused as no regular file."""
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_BINARY", 0)
_temp_numbers = itertools.count()


def _new_temp(directory: Path) -> tuple[int, str]:
    """(descriptor, path) of a new private (0600) file ``.tmp-<pid>-<n>.pimc`` in ``directory``: named by this
    process and a counter (``tempfile.mkstemp`` draws random names, a few microseconds per entry written), and created
    exclusively, so a name left by a dead process of the same number is never written through; ``mkstemp`` then."""
    path = os.path.join(directory, f".tmp-{os.getpid()}-{next(_temp_numbers)}{ENTRY_SUFFIX}")
    try:
        return os.open(path, _TEMP_FLAGS, 0o600), path
    except FileExistsError:
        return tempfile.mkstemp(prefix=".tmp-", suffix=ENTRY_SUFFIX, dir=directory)


_PROCESS_CACHES: dict[tuple[str, int], DiskCache] = {}


def _in_process(directory: str, max_bytes: int) -> DiskCache:
    """This process's ``DiskCache`` of ``directory`` (made at the first unpickling here)."""
    key = (directory, max_bytes)
    disk = _PROCESS_CACHES.get(key)
    if disk is None:
        disk = _PROCESS_CACHES[key] = DiskCache(Path(directory), max_bytes)
    return disk


def entries(directory: Path) -> list[tuple[Path, int, float]]:
    """(path, size, last use) of every cache entry."""
    out = []
    try:
        with os.scandir(directory) as it:
            for item in it:
                if item.name.endswith(ENTRY_SUFFIX) and item.is_file(follow_symlinks=False):
                    try:
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    out.append((Path(item.path), st.st_size, st.st_mtime))
    except OSError:
        pass
    return out


def evict(directory: Path, limit: int) -> int:
    """Remove least recently used entries until the total is at most ``limit``; return bytes removed."""
    found = entries(directory)
    total = sum(size for _p, size, _t in found)
    removed = 0
    for path, size, _used in sorted(found, key=lambda e: e[2]):
        if total <= limit:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        removed += size
    return removed


def clear(directory: Path) -> tuple[int, int]:
    """Remove every entry (and leftover temp files); return (files, bytes) removed."""
    files = size = 0
    for path, n, _t in entries(directory):
        try:
            path.unlink()
        except OSError:
            continue
        files += 1
        size += n
    return files, size
