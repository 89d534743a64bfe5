"""What a load read (files opened, folders listed) and whether any of it changed since: cache keys.

While ``recording()`` is active, Python's audit events (PEP 578) report every ``open`` (a failed one too),
``os.listdir`` and ``os.scandir`` made by any reader, in ``sources`` or here. A file looked for and missing is
covered by its folder's listing; code that probes a path in a folder it does not list (``os.lstat`` of a Slurm
log under the launch directory) says so with ``note_probe`` (tests check every path a load stats is covered,
on every fixture). Each path
is fingerprinted when it is first used, *before* it is read, so a change made while the load runs shows
as a mismatch on the next check and never hides behind a fingerprint taken afterwards:

a file's stat, a folder's digest of its entries (``fingerprints``, which also holds their check).

A cached result is reused only while ``unchanged(deps)``: every fingerprint is still the same. Paths under
the Python installation, this package and the cache directory (those folders themselves too) are not
dependencies (imports, the cache's own entries, the code version's listing of this package), unless they are
inside the run being read, and neither is what the import system lists or opens.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .fingerprints import Listed, listed_fingerprint, seen_fingerprint
from .fingerprints import (  # noqa: F401 (the fingerprints and their check, used through this module)
    Dep as Dep,
    dir_fingerprint as dir_fingerprint,
    file_fingerprint as file_fingerprint,
    fingerprint as fingerprint,
    newest_mtime_ns as newest_mtime_ns,
    real_fingerprint as real_fingerprint,
    same as same,
    unchanged as unchanged,
    valid_deps as valid_deps,
)

_ACTIVE: list["Recorder"] = []
"""Recorders of the loads running now (any thread: a reader's helper thread is recorded too)."""
_LOCK = threading.Lock()
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_ONLY = getattr(os, "O_PATH", 0)
"""An ``O_PATH`` open reads nothing (``confine.real_path`` asks the kernel where a path leads with one):
not a use; where a path leads is a dependency only through ``note_realpath``."""
_hooked = False


_prefixes: tuple[str, ...] = ()


def _python_prefixes() -> tuple[str, ...]:
    """Folders whose files are never a run's data: the Python installation, this package, pseudo-filesystems
    (found once: every file read by a load asks)."""
    global _prefixes
    if not _prefixes:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        found = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p} | {here}
        found |= {"/proc", "/sys", "/dev"}  # never searched for runs (discover.SYSTEM_DIRS); their mtimes move
        _prefixes = tuple(sorted(p.rstrip(os.sep) + os.sep for p in found))
    return _prefixes


class Recorder:
    """The dependencies of one load, in first-use order, each fingerprinted at first use."""

    def __init__(self, inside: str, ignore: tuple[str, ...]) -> None:
        self.inside = inside.rstrip(os.sep) + os.sep
        """Paths under this folder (the run) are always dependencies."""
        self.ignore = ignore
        self.deps: dict[tuple[str, str], str] = {}
        self.listed: dict[str, Listed] = {}
        """The folders this load listed, with the entries their fingerprints' listings stat'ed."""

    def wants(self, kind: str, path: str) -> bool:
        """True when ``path`` is a new dependency of this load."""
        if (kind, path) in self.deps:
            return False
        below = path + os.sep  # the ignored folders themselves too (the package listed for the code version)
        return below.startswith(self.inside) or not below.startswith(self.ignore)

    def add(self, deps: Iterable[Dep]) -> None:
        """Dependencies with their fingerprints (taken now, or known from a cached result just checked)."""
        for kind, path, fp in deps:
            self.deps.setdefault((kind, path), fp)

    def result(self) -> tuple[Dep, ...]:
        return tuple((kind, path, fp) for (kind, path), fp in self.deps.items())


_busy = threading.local()
"""Set while this thread fingerprints a path: the listing that takes is not a use by a reader."""


def _use(kind: str, path: str, known: str | None = None) -> None:
    """``path`` is about to be read (``f``) or listed (``d``): fingerprint it once for every recorder new to it.

    ``known``: its fingerprint, taken by the caller just now. A file in a folder a running load listed, and where
    an entry of it that is no link leads, are fingerprinted from that listing (``fingerprints.seen_fingerprint``):
    taken before this use, it can only be older than the one a ``stat`` would take now, and an older fingerprint
    can only fail to match later (the result is then read again), never match a change."""
    if getattr(_busy, "on", False):
        return
    active = tuple(_ACTIVE)
    takers = [r for r in active if r.wants(kind, path)]
    if not takers:
        return
    listed: Listed | None = None
    fp = known
    if fp is None:
        _busy.on = True
        try:
            fp, listed = _fingerprint_now(kind, path, active)
        finally:
            _busy.on = False
    key = (kind, path)
    for recorder in takers:
        recorder.deps.setdefault(key, fp)  # ``Recorder.add`` of one
        if listed is not None:
            recorder.listed[path] = listed


def _fingerprint_now(kind: str, path: str, active: tuple[Recorder, ...]) -> tuple[str, Listed | None]:
    """The fingerprint of ``path`` (and a folder's listing), from the listing of its folder where a running load
    made one."""
    cut = path.rfind(os.sep)
    name = path[cut + 1:]
    seen = None
    if cut > 0 and name not in ("", ".", ".."):
        folder = path[:cut]
        for recorder in active:
            entries = recorder.listed.get(folder)
            if entries is not None:
                seen = entries.get(name)
                if seen is not None:
                    break
        if seen is not None:
            if kind == "d":
                return listed_fingerprint(path, None if isinstance(seen[1], int) else seen[1])
            real = None
            if kind == "r":
                real = next((r.deps[("r", folder)] for r in active if ("r", folder) in r.deps), None)
            got = seen_fingerprint(kind, seen, real, name)
            if got is not None:
                return got, None
    if kind == "d":
        return listed_fingerprint(path)
    return fingerprint(kind, path), None


def _path_of(arg: object) -> str | None:
    """An absolute path for an audit event's path argument (None for a file descriptor)."""
    if type(arg) is str:
        text = arg
        return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
    if isinstance(arg, int):
        return None
    try:
        text = os.fsdecode(os.fspath(arg))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)


def _audit(event: str, args: tuple[object, ...]) -> None:
    """Every audit event of the process while a load is recorded: an ``open``, ``os.listdir`` or ``os.scandir`` of a
    path some recorder is new to is a use. Cheapest tests first: most events are of other kinds (``builtins.id``,
    ``sys._getframe``), and most opens of a descriptor (``os.fdopen``), of a write or of a path already recorded."""
    if not _ACTIVE:
        return
    if event == "open":
        if not args:
            return
        target = args[0]
        if type(target) is int:
            return  # a descriptor (``os.fdopen``): its path was seen when it was opened
        mode, flags = (args + (None, None))[1:3]
        if isinstance(mode, str) and any(c in mode for c in "wax+") or (
                isinstance(flags, int) and flags & _WRITE_FLAGS):
            return  # a write (only the cache writes, never into a run): nothing read
        if _PATH_ONLY and isinstance(flags, int) and flags & _PATH_ONLY:
            return  # resolving a path, not reading it
        kind = "f"
    elif event == "os.scandir" or event == "os.listdir":
        kind = "d"
        target = args[0] if args else None
    else:
        return
    try:
        path = os.getcwd() if target is None and kind == "d" else _path_of(target)
        if path is None or getattr(_busy, "on", False):
            return
        for recorder in tuple(_ACTIVE):  # a snapshot: another thread's load may start or end meanwhile
            if recorder.wants(kind, path):
                break
        else:
            return  # known to every load recorded now (a file opened twice, a folder listed again)
        if "importlib" in sys._getframe(1).f_code.co_filename:
            return  # the import system or importlib.metadata listing sys.path folders: not the run's data
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


def note_realpath(path: object, real: str | None = None) -> None:
    """Where ``path`` leads (links resolved) decides what is read: a dependency too (the run root, a reader's file).

    ``real``: where it leads, resolved by the caller just now (``confine.real_path``)."""
    if _ACTIVE:
        absolute = _path_of(path)
        if absolute is not None:
            _use("r", absolute, real)


def note_known(deps: Iterable[Dep]) -> None:
    """Dependencies of a cached result just found unchanged: they are dependencies of the enclosing load too."""
    if _ACTIVE:
        deps = tuple(deps)
        for recorder in list(_ACTIVE):
            recorder.add(deps)

