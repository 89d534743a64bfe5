"""What a load read (files opened, folders listed) and whether any of it changed since: cache keys.

While ``recording()`` is active, Python's audit events (PEP 578) report every ``open`` (a failed one too),
``os.listdir`` and ``os.scandir`` made by any reader, in ``sources`` or here. A file looked for and missing is
covered by its folder's listing; code that probes a path in a folder it does not list (``os.lstat`` of a Slurm
log under the launch directory) says so with ``note_probe`` (tests check every path a load stats is covered,
on every fixture). Each path
is fingerprinted when it is first used, *before* it is read, so a change made while the load runs shows
as a mismatch on the next check and never hides behind a fingerprint taken afterwards:

* a file: ``(mode, device, inode, size, mtime_ns)`` (following links), or the errno when it cannot be stat'ed;
* a folder: a digest of its entries' names, types, link targets and stat fields (a new, deleted or renamed
  file changes it, and so does a file whose size or mtime changed without being opened: a stat-only fact).

A cached result is reused only while ``unchanged(deps)``: every fingerprint is still the same. Paths under
the Python installation, this package and the cache directory are not dependencies (imports, the cache's
own entries), unless they are inside the run being read, and neither is what the import system lists or opens.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..sources.confine import real_path

Dep = tuple[str, str, str]
"""(kind, absolute path, fingerprint): kind ``f`` for a file or probe, ``d`` for a listed folder, ``r`` for where a
path really leads (a link retargeted to the same moved folder changes no stat, but changes what may be read)."""



def valid_deps(deps: Any) -> bool:
    """True for a stored dependency list: a tuple of (kind, path, fingerprint) string triples."""
    return type(deps) is tuple and all(
        type(d) is tuple and len(d) == 3 and type(d[0]) is str and d[0] in _KINDS and type(d[1]) is str
        and type(d[2]) is str for d in deps)


_KINDS = frozenset(("f", "d", "r"))


_ACTIVE: list["Recorder"] = []
"""Recorders of the loads running now (any thread: a reader's helper thread is recorded too)."""
_LOCK = threading.Lock()
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_ONLY = getattr(os, "O_PATH", 0)
"""An ``O_PATH`` open reads nothing (``confine.real_path`` asks the kernel where a path leads with one):
not a use; where a path leads is a dependency only through ``note_realpath``."""
_hooked = False


def file_fingerprint(path: str) -> str:
    """``mode:dev:ino:size:mtime_ns`` of what ``path`` leads to, or ``-errno`` when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"-{exc.errno}"
    except ValueError:
        return "-bad"
    return _stat_text(st)


def _stat_text(st: os.stat_result) -> str:
    return f"{st.st_mode:o}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def dir_fingerprint(path: str) -> str:
    """A digest of the folder's entries (name, link target, stat fields), or ``-errno`` when it cannot be listed."""
    return _listing(path)[0]


_Listed = dict[str, tuple[bool, "os.stat_result | int"]]
"""A folder's entries as one listing saw them: name -> (is a link, ``stat`` following links, or its errno)."""


def _listing(path: str, entries: Iterable[os.DirEntry[str]] | None = None) -> tuple[str, _Listed]:
    """``dir_fingerprint(path)`` and the entries it stat'ed (what ``unchanged`` reuses instead of stat'ing again).

    ``entries``: the folder's entries as a listing made a moment ago gave them (discovery's): only stat'ed here."""
    if entries is not None:
        return _digest(entries)
    try:
        scan = os.scandir(path)
    except OSError as exc:
        return f"-{exc.errno}", {}
    except ValueError:
        return "-bad", {}
    with scan:
        return _digest(scan)


def _digest(entries: Iterable[os.DirEntry[str]]) -> tuple[str, _Listed]:
    lines = []
    listed: _Listed = {}
    for entry in entries:
        name = entry.name
        try:
            link = entry.is_symlink()  # the directory entry's type: no system call on most filesystems
        except OSError:
            link = True  # judged below, where its error is kept
        if not link:
            try:
                st = entry.stat()
            except OSError:
                pass  # judged below
            else:  # the common case: a plain file or folder, one stat
                listed[name] = (False, st)
                lines.append(f"{name}\0\0{st.st_mode:o}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
                continue
        lines.append(_odd_entry(entry, listed))
    lines.sort()
    digest = hashlib.sha1("\n".join(lines).encode("utf-8", "surrogateescape"), usedforsecurity=False)
    return f"{len(lines)}:{digest.hexdigest()}", listed


def _odd_entry(entry: os.DirEntry[str], listed: _Listed) -> str:
    """The listing line of a link or of an entry that cannot be stat'ed (noted in ``listed`` where it has an errno)."""
    link = False
    try:
        link = entry.is_symlink()
        target = os.readlink(entry.path) if link else ""
    except OSError as exc:
        target = f"!{exc.errno}"
    st: os.stat_result | int
    try:
        st = entry.stat()
        facts = f"{st.st_mode:o}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    except OSError as exc:
        st = exc.errno if exc.errno is not None else -1
        facts = f"-{exc.errno}"
    if st != -1:  # an error without an errno: ``unchanged`` stats that one itself
        listed[entry.name] = (link or bool(target), st)
    return f"{entry.name}\0{target}\0{facts}"


def fingerprint(kind: str, path: str) -> str:
    if kind == "d":
        return dir_fingerprint(path)
    if kind == "r":
        return real_fingerprint(path)
    return file_fingerprint(path)


def real_fingerprint(path: str) -> str:
    """Where ``path`` really is (links resolved): what decides whether a file is inside the run."""
    try:
        return real_path(path)  # os.path.realpath's string, from the kernel where it can say it
    except (OSError, ValueError):
        return "-bad"


def unchanged(deps: Iterable[Dep], known_real: dict[str, str] | None = None,
              known_entries: dict[str, Iterable[os.DirEntry[str]]] | None = None) -> bool:
    """True when every dependency still has the fingerprint it was stored with.

    The same answer as fingerprinting each dependency on its own, in fewer system calls: the folders are listed
    first, and a file or link directly in a listed folder is judged from what that listing saw (its ``stat``, the
    same call ``file_fingerprint`` makes; where it leads: its folder's real path and its name, when it is no link);
    a folder missing from the listing of its folder is missing (``-ENOENT``, what listing it would say).
    ``known_real``: real paths the caller resolved just now (a run's root, resolved once for the cache's guard);
    ``known_entries``: folders' entries as a listing made just now gave them (discovery lists every run's folder).
    """
    deps = deps if type(deps) is tuple else tuple(deps)
    listed: dict[str, _Listed] = {}
    whole: set[str] = set()
    """Listed folders whose every entry is in ``listed`` (an entry that could not be stat'ed nor named an errno is
    not): only there does a missing name mean a missing folder."""
    for kind, path, fp in deps:
        if kind == "d":
            cut = path.rfind(os.sep)
            parent = path[:cut]
            if cut > 0 and parent in whole and path[cut + 1:] not in listed[parent] and path[cut + 1:] not in (
                    "", ".", ".."):
                got = f"-{errno.ENOENT}"
                listed[path] = {}
            else:
                entries = known_entries.get(path) if known_entries is not None else None
                got, listed[path] = _listing(path, entries)
                if not got.startswith("-") and int(got.split(":", 1)[0]) == len(listed[path]):
                    whole.add(path)
            if got != fp:
                return False
    real: dict[str, str] = {}
    for kind, path, fp in deps:
        if kind == "r":
            known = known_real.get(path) if known_real is not None else None
            got = real[path] = known if known is not None else _real_seen(path, listed, real)
            if got != fp:
                return False
    for kind, path, fp in deps:
        if kind == "f":
            cut = path.rfind(os.sep)
            seen = listed.get(path[:cut]) if cut > 0 else None
            found = seen.get(path[cut + 1:]) if seen is not None else None
            if found is None:
                if _file_seen(path, listed) != fp:
                    return False
            elif (f"-{found[1]}" if isinstance(found[1], int) else _stat_text(found[1])) != fp:
                return False
    return True


def _entry(path: str, listed: dict[str, _Listed]) -> tuple[str, tuple[bool, os.stat_result | int]] | None:
    """(folder, what its listing saw) for ``path`` directly in a folder listed just now, else None."""
    cut = path.rfind(os.sep)
    folder, name = path[:cut], path[cut + 1:]
    if cut <= 0 or not name or name in (".", ".."):
        return None  # a top-level path, or not a plain name in a folder: stat'ed on its own
    seen = listed.get(folder)
    found = seen.get(name) if seen is not None else None
    return (folder, found) if found is not None else None


def _file_seen(path: str, listed: dict[str, _Listed]) -> str:
    found = _entry(path, listed)
    if found is None:
        return file_fingerprint(path)
    st = found[1][1]
    return f"-{st}" if isinstance(st, int) else _stat_text(st)


def _real_seen(path: str, listed: dict[str, _Listed], real: dict[str, str]) -> str:
    found = _entry(path, listed)
    if found is None or found[1][0] or isinstance(found[1][1], int):
        return real_fingerprint(path)  # not listed, a link, or not there: ask the kernel
    top = real.get(found[0])
    if top is None or not top.startswith(os.sep) or top.startswith("-"):
        return real_fingerprint(path)
    return top + ("" if top.endswith(os.sep) else os.sep) + os.path.basename(path)


def newest_mtime_ns(deps: Iterable[Dep]) -> int:
    """The newest mtime among the file fingerprints (0 when none): for the racy-write margin."""
    newest = 0
    for kind, _path, fp in deps:
        if kind == "f" and not fp.startswith("-"):
            newest = max(newest, int(fp.rsplit(":", 1)[1]))
    return newest


def _python_prefixes() -> tuple[str, ...]:
    """Folders whose files are never a run's data: the Python installation, this package, pseudo-filesystems."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p} | {here}
    found |= {"/proc", "/sys", "/dev"}  # never searched for runs (discover.SYSTEM_DIRS); their mtimes move
    return tuple(sorted(p.rstrip(os.sep) + os.sep for p in found))


class Recorder:
    """The dependencies of one load, in first-use order, each fingerprinted at first use."""

    def __init__(self, inside: str, ignore: tuple[str, ...]) -> None:
        self.inside = inside.rstrip(os.sep) + os.sep
        """Paths under this folder (the run) are always dependencies."""
        self.ignore = ignore
        self.deps: dict[tuple[str, str], str] = {}

    def wants(self, kind: str, path: str) -> bool:
        """True when ``path`` is a new dependency of this load."""
        if (kind, path) in self.deps:
            return False
        return (path + os.sep).startswith(self.inside) or not any(path.startswith(p) for p in self.ignore)

    def add(self, deps: Iterable[Dep]) -> None:
        """Dependencies with their fingerprints (taken now, or known from a cached result just checked)."""
        for kind, path, fp in deps:
            self.deps.setdefault((kind, path), fp)

    def result(self) -> tuple[Dep, ...]:
        return tuple((kind, path, fp) for (kind, path), fp in self.deps.items())


_busy = threading.local()
"""Set while this thread fingerprints a path: the listing that takes is not a use by a reader."""


def _use(kind: str, path: str) -> None:
    """``path`` is about to be read (``f``) or listed (``d``): fingerprint it once for every recorder new to it."""
    if getattr(_busy, "on", False):
        return
    takers = [r for r in list(_ACTIVE) if r.wants(kind, path)]
    if not takers:
        return
    _busy.on = True
    try:
        fp = fingerprint(kind, path)
    finally:
        _busy.on = False
    for recorder in takers:
        recorder.add(((kind, path, fp),))


def _path_of(arg: object) -> str | None:
    """An absolute path for an audit event's path argument (None for a file descriptor)."""
    if isinstance(arg, int):
        return None
    try:
        text = os.fsdecode(os.fspath(arg))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _ACTIVE:
        return
    if event == "open":
        kind = "f"
        mode, flags = (args + (None, None))[1:3]
        if isinstance(mode, str) and any(c in mode for c in "wax+") or (
                isinstance(flags, int) and flags & _WRITE_FLAGS):
            return  # a write (only the cache writes, never into a run): nothing read
        if _PATH_ONLY and isinstance(flags, int) and flags & _PATH_ONLY:
            return  # resolving a path, not reading it
    elif event in ("os.listdir", "os.scandir"):
        kind = "d"
    else:
        return
    try:
        if "importlib" in sys._getframe(1).f_code.co_filename:
            return  # the import system or importlib.metadata listing sys.path folders: not the run's data
        target = args[0] if args else None
        path = os.getcwd() if target is None and kind == "d" else _path_of(target)
        if path is not None:
            _use(kind, path)
    except Exception:  # noqa: BLE001 - an audit hook that raises would fail the open itself
        return


def _install() -> None:
    global _hooked
    with _LOCK:
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True


@contextmanager
def recording(run_root: str, cache_dir: str | None = None) -> Iterator[Recorder]:
    """Record what is read inside the block (any thread) as dependencies of the run at ``run_root``."""
    _install()
    ignore = _python_prefixes() + ((os.path.abspath(cache_dir).rstrip(os.sep) + os.sep,) if cache_dir else ())
    recorder = Recorder(os.path.abspath(run_root), ignore)
    with _LOCK:
        _ACTIVE.append(recorder)
    try:
        yield recorder
    finally:
        with _LOCK:
            _ACTIVE.remove(recorder)


def note_probe(path: object) -> None:
    """``path`` was looked at without being opened or listed (``os.lstat``, ``exists``): a dependency too."""
    if _ACTIVE:
        absolute = _path_of(path)
        if absolute is not None:
            _use("f", absolute)


def note_realpath(path: object) -> None:
    """Where ``path`` leads (links resolved) decides what is read: a dependency too (the run root, a reader's file)."""
    if _ACTIVE:
        absolute = _path_of(path)
        if absolute is not None:
            _use("r", absolute)


def note_known(deps: Iterable[Dep]) -> None:
    """Dependencies of a cached result just found unchanged: they are dependencies of the enclosing load too."""
    if _ACTIVE:
        deps = tuple(deps)
        for recorder in list(_ACTIVE):
            recorder.add(deps)

