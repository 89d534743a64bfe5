"""The persistent cache of per-file reader results, outside every run directory.

Where: ``$PIMM_INSPECT_CACHE_DIR`` if set (``off`` turns the cache off), else
``$XDG_CACHE_HOME/pimm-inspect``, else ``~/.cache/pimm-inspect``. One file per (reader, file,
run-relative name), keyed by the file's inode, size and mtime; written atomically (temp file +
``os.replace``), read back with the no-pickle codec of ``_cache_codec`` and ignored when damaged or
foreign. The total size is capped (``PIMM_INSPECT_CACHE_MAX_BYTES``, default 2 GB) by evicting the
least recently used entries.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _cache_codec as codec

ENTRY_SUFFIX = ".pimc"
DEFAULT_MAX_BYTES = 2 * 1024**3
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


_code_version: str | None = None


def code_version() -> str:
    """The package version plus a digest of the readers' source files (size, mtime), computed once:
    results stored by other reader code are never reused."""
    global _code_version
    if _code_version is None:
        from .. import __version__

        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(__version__.encode())
        for source in sorted([*(package / "sources").glob("*.py"), package / "model.py", package / "evidence.py",
                              *(package / "load").glob("*.py")]):
            try:
                st = source.stat()
            except OSError:
                continue
            digest.update(f"{source.name}|{st.st_size}|{st.st_mtime_ns}".encode())
        _code_version = f"{__version__}+{digest.hexdigest()[:12]}"
    return _code_version


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False


@dataclass
class DiskCache:
    """Reader results on disk; every method is a no-op for a run that contains the cache directory."""

    directory: Path
    written_bytes: int = 0
    """Bytes written by this process since the last size check."""

    @staticmethod
    def configured() -> "DiskCache | None":
        folder = cache_dir()
        return DiskCache(folder) if folder is not None else None

    def usable_for(self, run_root: Path) -> bool:
        """False when the cache directory is inside the run (a cache must never be written into a run)."""
        return not _inside(self.directory, run_root)

    def _entry(self, kind: str, path: Path, rel_path: str) -> tuple[Path, dict[str, Any]]:
        absolute = str(path.absolute())
        version = code_version()
        header = {"kind": kind, "path": absolute, "rel": rel_path, "version": version}
        digest = hashlib.sha256("\0".join((kind, absolute, rel_path, version)).encode("utf-8", "surrogateescape"))
        return self.directory / f"{digest.hexdigest()[:40]}{ENTRY_SUFFIX}", header

    def get(self, kind: str, path: Path, rel_path: str) -> tuple[tuple[int, int, int], Any] | None:
        """(signature when stored, result) for the file, or None (missing, damaged, foreign)."""
        entry, header = self._entry(kind, path, rel_path)
        try:
            data = entry.read_bytes()
        except OSError:
            return None
        try:
            stored = codec.decode(data, header)
        except codec.BadEntry:
            return None  # damaged or foreign: ignored, and replaced by the next put
        if not (isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[0], tuple)
                and len(stored[0]) == 3 and all(type(x) is int for x in stored[0])):
            return None
        try:
            os.utime(entry)  # least recently used = oldest mtime
        except OSError:
            pass
        return stored[0], stored[1]

    def put(self, kind: str, path: Path, rel_path: str, signature: tuple[int, int, int], result: Any) -> None:
        """Store ``result`` for the file as it was at ``signature`` (quietly skipped when not storable)."""
        entry, header = self._entry(kind, path, rel_path)
        try:
            data = codec.encode((tuple(signature), result), header)
        except (codec.NotCacheable, ValueError, TypeError, RecursionError):
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=ENTRY_SUFFIX, dir=self.directory)
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
