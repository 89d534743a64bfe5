"""Whether the cache directory and an entry in it may be trusted, the way ssh judges its key files.

An entry's SHA-256 catches damage, not forgery: anyone who can write the cache can make ``ls`` show any row. So
the cache is used only where nobody else can write: a directory (and each entry) owned by the user running us and
not writable by group or others. A directory this process makes is made 0700. Anything else is refused, and the
session says why once on stderr.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

UNSAFE_BITS = stat.S_IWGRP | stat.S_IWOTH


def _owner_problem(st: os.stat_result, what: str, path: Path) -> str | None:
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{what} {path} is owned by another user (uid {st.st_uid})"
    if st.st_mode & UNSAFE_BITS:
        return f"{what} {path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def directory_problem(path: Path) -> str | None:
    """Why the cache directory ``path`` must not be used, or None (fine, or not made yet)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cache directory {path} cannot be checked: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"cache directory {path} is not a directory"
    return _owner_problem(st, "cache directory", path)


def entry_problem(st: os.stat_result, path: Path) -> str | None:
    """Why the opened cache entry (its ``fstat``) must not be trusted, or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"cache entry {path} is not a regular file"
    return _owner_problem(st, "cache entry", path)


def make_private_dir(path: Path) -> None:
    """Create the cache directory (and missing parents) with mode 0700; refuse one that is not ours afterwards."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = directory_problem(path)
    if problem is not None:
        raise PermissionError(problem)
