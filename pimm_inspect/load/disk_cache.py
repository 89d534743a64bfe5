"""The persistent cache of per-file reader results and analysed rows, outside every run directory.

Where: ``$PIMM_INSPECT_CACHE_DIR`` if set (``off`` turns the cache off), else
``$XDG_CACHE_HOME/pimm-inspect``, else ``~/.cache/pimm-inspect``. One file per (reader, file,
run-relative name) or run row, named by that key and the code version, holding the fingerprints of
everything the value was read from (``file_deps``); written atomically (temp file + ``os.replace``),
read back with the no-pickle codec of ``_cache_codec`` and ignored when damaged or foreign. The total
size is capped (``PIMM_INSPECT_CACHE_MAX_BYTES``, default 2 GB) by evicting the least recently used entries.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sources.confine import real_path
from . import _cache_codec as codec
from .file_deps import Dep

Deps = tuple[Dep, ...]

ENTRY_SUFFIX = ".pimc"
DEFAULT_MAX_BYTES = 2 * 1024**3
TOUCH_AFTER_S = 600.0
"""An entry read is marked used (its mtime set to now) only when it was last marked longer ago than this: eviction
needs no finer order, and a warm ``ls`` of a big tree then writes no inode per entry read."""
_enabled = True


def set_enabled(enabled: bool) -> None:
    """Turn the disk cache on or off for this process (``--no-cache``)."""
    global _enabled
    _enabled = enabled


def cache_dir() -> Path | None:
    """The cache directory in effect, or None when the cache is off."""
    if not _enabled:
        return None
    configured = os.environ.get("PIMM_INSPECT_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("off", "0", "no", "false", ""):
            return None
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "pimm-inspect"


def max_bytes() -> int:
    try:
        return int(os.environ.get("PIMM_INSPECT_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    except ValueError:
        return DEFAULT_MAX_BYTES


_code_versions: dict[tuple[str, ...], str] = {}


def code_version(extra: tuple[str, ...] = ()) -> str:
    """The package version plus a digest of the readers' source files (size, mtime), computed once:
    results stored by other reader code are never reused. ``extra`` names more subpackages whose code
    shaped the stored value (``analysis`` for analysed rows)."""
    if extra not in _code_versions:
        from .. import __version__

        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(__version__.encode())
        folders = ("sources", "load", *extra)
        for source in sorted([*(p for f in folders for p in (package / f).rglob("*.py")), package / "model.py",
                              package / "evidence.py"]):
            try:
                st = source.stat()
            except OSError:
                continue
            digest.update(f"{source.relative_to(package)}|{st.st_size}|{st.st_mtime_ns}".encode())
        _code_versions[extra] = f"{__version__}+{digest.hexdigest()[:12]}"
    return _code_versions[extra]


def _inside(path: str, folder: str) -> bool:
    """True when the real path ``path`` is ``folder`` or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass
class DiskCache:
    """Reader results on disk; every method is a no-op for a run that contains the cache directory."""

    directory: Path
    written_bytes: int = 0
    """Bytes written by this process since the last size check."""
    _real: str = ""
    """The directory's real path, once resolved."""
    _made: bool = False
    """True once the directory is known to exist (created or found)."""

    @staticmethod
    def configured() -> "DiskCache | None":
        folder = cache_dir()
        return DiskCache(folder) if folder is not None else None

    def usable_for(self, run_root: Path) -> bool:
        """False when the cache directory is inside the run (a cache must never be written into a run)."""
        if not self._real:
            self._real = real_path(self.directory)
        return not _inside(self._real, real_path(run_root))

    def _entry(self, kind: str, path: Path, rel_path: str, version: str) -> tuple[Path, dict[str, Any]]:
        absolute = str(path.absolute())
        header = {"kind": kind, "path": absolute, "rel": rel_path, "version": version}
        digest = hashlib.sha256("\0".join((kind, absolute, rel_path, version)).encode("utf-8", "surrogateescape"))
        return self.directory / f"{digest.hexdigest()[:40]}{ENTRY_SUFFIX}", header

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
        try:
            with open(entry, "rb") as fh:
                data = fh.read()
                used_s = os.fstat(fh.fileno()).st_mtime
        except OSError:
            return None
        try:
            stored = codec.decode(data, header)
        except codec.BadEntry:
            return None  # damaged or foreign: ignored, and replaced by the next put
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
            data = codec.encode(value, header)
        except (codec.NotCacheable, ValueError, TypeError, RecursionError):
            return
        try:
            fd, tmp = self._temp_file()
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, entry)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return  # a read-only or full disk must never stop reading runs
        self.written_bytes += len(data)
        if self.written_bytes > max_bytes() // 20:
            self.written_bytes = 0
            evict(self.directory, max_bytes())


    def _temp_file(self) -> tuple[int, str]:
        """A new temporary file in the cache directory (created with the directory when missing)."""
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made = True
        try:
            return tempfile.mkstemp(prefix=".tmp-", suffix=ENTRY_SUFFIX, dir=self.directory)
        except FileNotFoundError:  # removed since (another process cleared the cache): make it again
            self.directory.mkdir(parents=True, exist_ok=True)
            return tempfile.mkstemp(prefix=".tmp-", suffix=ENTRY_SUFFIX, dir=self.directory)


def valid_deps(deps: Any) -> bool:
    """True for a stored dependency list: a tuple of (kind, path, fingerprint) string triples."""
    return isinstance(deps, tuple) and all(
        isinstance(d, tuple) and len(d) == 3 and all(type(x) is str for x in d) and d[0] in ("f", "d", "r") for d in deps)


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
