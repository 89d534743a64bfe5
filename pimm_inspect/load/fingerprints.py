"""What a file, folder or link looks like now (its fingerprint), and whether recorded fingerprints still hold.

``file_deps`` records a read's dependencies with these fingerprints and re-exports everything here:

* a file: ``mode:dev:ino:size:mtime_ns`` (following links), or ``-errno`` when it cannot be stat'ed;
* a folder: ``N:digest`` of its N entries' names, types, link targets and stat fields (a new, deleted or renamed
  file changes it, and so does a file whose size or mtime changed without being opened: a stat-only fact), or
  ``-errno``; with a *stamp* after it where the folder allows one (``STAMP_AGE_S``, ``STAMP_MAX_NAMES``,
  ``STAMP_FILESYSTEMS``): ``N:digest:dev:ino:mtime_ns/name/name/...``, the folder's own identity and mtime when
  it was listed and the names it held;
* where a path really leads: the real path.

``unchanged`` answers as fingerprinting every dependency again and comparing digests would, in fewer system calls:
a folder whose stamp still matches its own ``stat`` holds the names it held (adding, removing or renaming an
entry sets a folder's mtime, and an entry's inode, so its type and link target, changes only that way), so its
entries are stat'ed by name without listing it again; the files and links in a listed folder are judged from that
listing's stats.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ..sources.confine import real_path

Dep = tuple[str, str, str]
"""(kind, absolute path, fingerprint): kind ``f`` for a file or probe, ``d`` for a listed folder, ``r`` for where a
path really leads (a link retargeted to the same moved folder changes no stat, but changes what may be read)."""
KINDS = frozenset(("f", "d", "r"))

STAMP_AGE_S = 2.0
"""A folder modified less than this long before it was listed gets no stamp: a change made within the same mtime
tick right after the listing would leave its mtime as it was (the racy-mtime margin of ``read_record``)."""
STAMP_MAX_NAMES = 48
"""Folders of more entries get no stamp: their names would weigh on every stored record, and the stats of their
entries cost far more than the listing a stamp saves."""
STAMP_FILESYSTEMS = frozenset(("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "jfs", "bcachefs",
                               "reiserfs", "overlay", "nfs", "nfs4", "lustre", "gpfs", "beegfs", "ceph"))
"""Filesystems known to set a folder's mtime whenever an entry is added, removed or renamed in it. Elsewhere (an
object store mounted with FUSE, where folders are made up, or a filesystem this process cannot name) every folder
is listed again."""
_ENOENT = f"-{errno.ENOENT}"
_IFMT, _IFLNK = 0o170000, stat.S_IFLNK

Listed = dict[str, tuple[bool, "os.stat_result | int"]]
"""A folder's entries as one listing saw them: name -> (is a link, ``stat`` following links, or its errno)."""


def valid_deps(deps: Any) -> bool:
    """True for a stored dependency list: a tuple of (kind, path, fingerprint) string triples."""
    return type(deps) is tuple and all(
        type(d) is tuple and len(d) == 3 and type(d[0]) is str and d[0] in KINDS and type(d[1]) is str
        and type(d[2]) is str for d in deps)


def file_fingerprint(path: str) -> str:
    """``mode:dev:ino:size:mtime_ns`` of what ``path`` leads to, or ``-errno`` when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"-{exc.errno}"
    except ValueError:
        return "-bad"
    return stat_text(st)


def stat_text(st: os.stat_result) -> str:
    return f"{st.st_mode:o}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def dir_fingerprint(path: str) -> str:
    """A digest of the folder's entries (name, link target, stat fields), stamped where it may be (see the module),
    or ``-errno`` when it cannot be listed."""
    return listed_fingerprint(path)[0]


def listed_fingerprint(path: str, seen: os.stat_result | None = None) -> tuple[str, Listed]:
    """``dir_fingerprint`` of the folder, and its entries as the listing stat'ed them (what ``file_deps`` takes the
    fingerprints of files in it from afterwards, as ``unchanged`` checks them).

    ``seen``: the folder's own ``stat`` (following links) from its parent's listing a moment ago, for its stamp."""
    stamp = _stamp(path, seen)  # before the listing: a change made after it moves the mtime past the stamp
    got, listed, names = _listing(path)
    if stamp is None or got.startswith("-") or len(names) > STAMP_MAX_NAMES:
        return got, listed
    return f"{got}:{stamp}/{'/'.join(sorted(names))}", listed


def seen_fingerprint(kind: str, seen: tuple[bool, os.stat_result | int], folder_real: str | None,
                     name: str) -> str | None:
    """The fingerprint of the entry ``name`` of a folder from that folder's listing a moment ago (``seen``: its
    ``Listed`` item), where that listing says it, as ``unchanged`` judges it: a file's ``stat`` (or errno), and
    where an entry that is no link leads (``folder_real``: where the folder led when it was listed); None for
    a folder (its own listing is its fingerprint) or what the listing cannot say."""
    link, st = seen
    if kind == "f":
        return f"-{st}" if isinstance(st, int) else stat_text(st)
    if kind == "r" and not link and not isinstance(st, int) and folder_real is not None \
            and folder_real.startswith(os.sep):
        return folder_real + ("" if folder_real.endswith(os.sep) else os.sep) + name
    return None


def real_fingerprint(path: str) -> str:
    """Where ``path`` really is (links resolved): what decides whether a file is inside the run."""
    try:
        return real_path(path)  # os.path.realpath's string, from the kernel where it can say it
    except (OSError, ValueError):
        return "-bad"


def fingerprint(kind: str, path: str) -> str:
    if kind == "d":
        return dir_fingerprint(path)
    if kind == "r":
        return real_fingerprint(path)
    return file_fingerprint(path)


def same(kind: str, got: str, recorded: str) -> bool:
    """True when the fingerprint ``got`` now says what ``recorded`` said (a folder's stamp is not a fact about it)."""
    return got == recorded if kind != "d" else _digest_of(got) == _digest_of(recorded)


def _digest_of(fp: str) -> str:
    """A folder fingerprint without its stamp."""
    cut = fp.find(":", fp.find(":") + 1)
    return fp if cut < 0 else fp[:cut]


_filesystems: dict[int, bool] = {}
"""Device number -> whether its filesystem keeps folder mtimes (``STAMP_FILESYSTEMS``)."""


def _stamp_trusted(dev: int) -> bool:
    known = _filesystems.get(dev)
    if known is None:
        known = _filesystems[dev] = _filesystem_of(dev) in STAMP_FILESYSTEMS
    return known


def _filesystem_of(dev: int) -> str | None:
    """The type of the filesystem mounted from device ``dev`` (``/proc/self/mountinfo``), None when not known."""
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    found = None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 2 and fields[2] == wanted and "-" in fields:
                    kind = fields[fields.index("-") + 1] if fields.index("-") + 1 < len(fields) else None
                    if found is not None and kind != found:
                        return None  # one device number, two filesystem types: not trusted
                    found = kind
    except (OSError, ValueError):
        return None
    return found


def _stamp(path: str, seen: os.stat_result | None = None) -> str | None:
    """``dev:ino:mtime_ns`` of the folder ``path`` when a stamp may stand for its listing, else None.

    ``seen``: its ``stat`` (following links) taken a moment ago (an older stat can only make a stamp that no longer
    matches: the folder is then listed again)."""
    if seen is not None:
        st = seen
    else:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
    if not stat.S_ISDIR(st.st_mode) or st.st_mtime_ns >= (time.time() - STAMP_AGE_S) * 1e9 \
            or not _stamp_trusted(st.st_dev):
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


def _listing(path: str, entries: Iterable[os.DirEntry[str]] | None = None) -> tuple[str, Listed, list[str]]:
    """The folder's digest (``N:digest``, or ``-errno``), the entries it stat'ed (what ``unchanged`` reuses instead
    of stat'ing again) and its entries' names.

    ``entries``: the folder's entries as a listing made a moment ago gave them (discovery's): only stat'ed here."""
    if entries is not None:
        return _digest(entries)
    try:
        scan = os.scandir(path)
    except OSError as exc:
        return f"-{exc.errno}", {}, []
    except ValueError:
        return "-bad", {}, []
    with scan:
        return _digest(scan)


def _digest(entries: Iterable[os.DirEntry[str]]) -> tuple[str, Listed, list[str]]:
    lines: list[str] = []
    names: list[str] = []
    listed: Listed = {}
    line, named = lines.append, names.append
    for entry in entries:
        name = entry.name
        named(name)
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
                line(f"{name}\0\0{st.st_mode:o}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
                continue
        line(_odd_entry(entry.name, entry.path, entry.is_symlink, entry.stat, listed))
    return _digest_text(lines), listed, names


def _digest_text(lines: list[str]) -> str:
    lines.sort()
    digest = hashlib.sha1("\n".join(lines).encode("utf-8", "surrogateescape"), usedforsecurity=False)
    return f"{len(lines)}:{digest.hexdigest()}"


def _odd_entry(name: str, path: str, is_link: Callable[[], bool], stat_of: Callable[[], os.stat_result],
               listed: Listed) -> str:
    """The listing line of a link or of an entry that cannot be stat'ed (noted in ``listed`` where it has an errno).

    ``is_link()``, ``stat_of()``: the entry's type and its ``stat`` following links (a ``DirEntry``'s, or by path)."""
    link = False
    try:
        link = is_link()
        target = os.readlink(path) if link else ""
    except OSError as exc:
        target = f"!{exc.errno}"
    st: os.stat_result | int
    try:
        got = stat_of()
        facts = f"{got.st_mode:o}:{got.st_ino}:{got.st_size}:{got.st_mtime_ns}"
        st = got
    except OSError as exc:
        st = exc.errno if exc.errno is not None else -1
        facts = f"-{exc.errno}"
    if st != -1:  # an error without an errno: ``unchanged`` stats that one itself
        listed[name] = (link or bool(target), st)
    return f"{name}\0{target}\0{facts}"


def _yes() -> bool:
    return True


def _by_stamp(path: str, fp: str, seen: tuple[bool, os.stat_result | int] | None) -> tuple[str, Listed] | None:
    """The folder's digest and entries from the names its stamp recorded, stat'ing each by name, when the folder
    is still the one stamped with the same mtime; else None (it is listed).

    ``seen``: the folder as its parent's listing saw it just now (its ``stat`` following links), if it was."""
    head, slash, names_text = fp.partition("/")
    if not slash:
        return None
    stamp = head.split(":")
    if len(stamp) != 5:
        return None
    if seen is not None and not isinstance(seen[1], int):
        st = seen[1]
    else:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
    if str(st.st_mtime_ns) != stamp[4] or str(st.st_ino) != stamp[3] or str(st.st_dev) != stamp[2]:
        return None
    lines = []
    listed: Listed = {}
    prefix = path + os.sep
    lstat = os.lstat
    for name in names_text.split("/") if names_text else ():
        full = prefix + name
        try:
            st = lstat(full)
        except OSError as exc:  # gone since (the stamp would show it) or unreadable: what its listing would say
            if exc.errno is not None:
                listed[name] = (False, exc.errno)
            lines.append(f"{name}\0\0-{exc.errno}")
            continue
        if st.st_mode & _IFMT != _IFLNK:
            listed[name] = (False, st)
            lines.append(f"{name}\0\0{st.st_mode:o}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        else:
            lines.append(_odd_entry(name, full, _yes, partial(os.stat, full), listed))
    return _digest_text(lines), listed


def unchanged(deps: Iterable[Dep], known_real: dict[str, str] | None = None,
              known_entries: dict[str, Iterable[os.DirEntry[str]]] | None = None) -> bool:
    """True when every dependency still has the fingerprint it was stored with.

    The same answer as fingerprinting each dependency on its own (``same``), in fewer system calls: the folders
    first, each from its stamp where it still holds (its own ``stat`` from its parent's listing when that was
    just made), else listed; a file or link directly in such a folder is judged from what was seen there (its
    ``stat``, the call ``file_fingerprint`` makes; where it leads: its folder's real path and its name, when it is
    no link); a folder missing from its folder's entries is missing (``-ENOENT``, what listing it would say).
    ``known_real``: real paths the caller resolved just now (a run's root, resolved once for the cache's guard);
    ``known_entries``: folders' entries as a listing made just now gave them (discovery lists every run's folder).
    """
    folders: list[Dep] = []
    links: list[Dep] = []
    files: list[Dep] = []
    for dep in deps:
        kind = dep[0]
        (folders if kind == "d" else links if kind == "r" else files).append(dep)
    listed: dict[str, Listed] = {}
    whole: set[str] = set()
    """Folders whose every entry is in ``listed`` (an entry that could not be stat'ed nor named an errno is not):
    only there does a missing name mean a missing folder."""
    sep = os.sep
    for _kind, path, fp in folders:
        cut = path.rfind(sep)
        parent = path[:cut] if cut > 0 else None
        name = path[cut + 1:]
        above = listed.get(parent) if parent is not None else None
        if above is not None and parent in whole and name not in above and name not in ("", ".", ".."):
            got = _ENOENT
            listed[path] = {}
        else:
            entries = known_entries.get(path) if known_entries is not None else None
            stamped = _by_stamp(path, fp, above.get(name) if above is not None else None) \
                if entries is None and "/" in fp else None
            if stamped is None:
                got, listed[path], _names = _listing(path, entries)
            else:
                got, listed[path] = stamped
            if got[0] != "-" and int(got[:got.index(":")]) == len(listed[path]):
                whole.add(path)
        if got != _digest_of(fp):
            return False
    real: dict[str, str] = {}
    for _kind, path, fp in links:
        known = known_real.get(path) if known_real is not None else None
        if known is not None:
            got = known
        else:  # a plain file in a listed folder leads where its folder does, by its name; others: the kernel says
            cut = path.rfind(sep)
            seen = listed.get(path[:cut]) if cut > 0 else None
            found = seen.get(path[cut + 1:]) if seen is not None else None
            top = real.get(path[:cut]) if found is not None and not found[0] and not isinstance(found[1], int) \
                else None
            got = top + ("" if top.endswith(sep) else sep) + path[cut + 1:] \
                if top is not None and top.startswith(sep) else real_fingerprint(path)
        real[path] = got
        if got != fp:
            return False
    for _kind, path, fp in files:
        cut = path.rfind(sep)
        name = path[cut + 1:]
        seen = listed.get(path[:cut]) if cut > 0 and name not in ("", ".", "..") else None
        found = seen.get(name) if seen is not None else None
        if found is None:
            if file_fingerprint(path) != fp:
                return False
        elif (f"-{found[1]}" if isinstance(found[1], int) else stat_text(found[1])) != fp:
            return False
    return True


def newest_mtime_ns(deps: Iterable[Dep]) -> int:
    """The newest mtime among the file fingerprints (0 when none): for the racy-write margin."""
    newest = 0
    for kind, _path, fp in deps:
        if kind == "f" and not fp.startswith("-"):
            newest = max(newest, int(fp.rsplit(":", 1)[1]))
    return newest
