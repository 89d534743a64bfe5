"""The Parquet dataset's file operations, confined to DIR: nothing below DIR is reached through a link.

DIR is opened once (as the user named it); every folder and file below it is opened, created, renamed and deleted
relative to a directory descriptor with ``O_NOFOLLOW``, never by a path string that the kernel would resolve
again. A link planted anywhere below DIR (a partition folder pointing into your home folder, a ``part-0.parquet``
pointing at a file outside) is therefore refused with ``DatasetProblem``, never written through, read through or
deleted through; between a check and a use nothing can be swapped, because nothing is looked up twice.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_READ_BYTES = 512 * 1024 * 1024
"""A manifest larger than this is refused (a dataset of a million runs is well below)."""


class DatasetProblem(Exception):
    """The dataset directory cannot be used (not a dataset, another export running, damaged manifest, a link)."""


def _refused(where: str, exc: OSError) -> DatasetProblem:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return DatasetProblem(f"{where} is a link or not a folder: refused (pimm-inspect never follows a link out "
                              "of the dataset directory); remove it, or export to a new directory")
    return DatasetProblem(f"{where}: {exc.strerror or exc}")


@contextmanager
def opened_dir(path: Path, create: bool = False) -> Iterator[int]:
    """A descriptor of DIR itself (created when ``create``), closed on exit."""
    if create:
        path.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _refused(str(path), exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def subdir(parent_fd: int, name: str, where: str, create: bool = False) -> Iterator[int | None]:
    """A descriptor of the folder ``name`` directly in ``parent_fd`` (never a link); None when it does not exist
    and ``create`` is false. ``where`` names it in errors."""
    _check_name(name)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            yield None
            return
        try:
            os.mkdir(name, 0o777, dir_fd=parent_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _refused(where, exc) from exc
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            raise _refused(where, exc) from exc
    except OSError as exc:
        raise _refused(where, exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


def _check_name(name: str) -> None:
    """One path component, never ``.``/``..``/empty: what the callers build can only name an entry of its folder."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise DatasetProblem(f"{name!r} is not a name inside the dataset directory: refused")


def is_regular(dir_fd: int, name: str) -> bool:
    """True when ``name`` in the folder is a regular file (a link to one is not)."""
    _check_name(name)
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def entries(dir_fd: int) -> list[str]:
    """The names in a folder."""
    return os.listdir(dir_fd)


def write_atomically(dir_fd: int, name: str, write: Callable[[IO[bytes]], object], where: str) -> None:
    """Write ``name`` in the folder: a new temporary file (``O_EXCL | O_NOFOLLOW``, so never through a planted
    link), then renamed over ``name`` (a link there is replaced, its target untouched). A failure removes it."""
    _check_name(name)
    temporary = f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(temporary, _NEW_FILE_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        raise _refused(where, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def read_regular(dir_fd: int, name: str, where: str) -> bytes | None:
    """The bytes of the regular file ``name`` in the folder; None when it does not exist. A link, a FIFO or a
    device there is refused (``open_regular``: opened without following or blocking, then checked: what is read is
    what was checked)."""
    handle = open_regular(dir_fd, name, where)
    if handle is None:
        return None
    with handle:
        if os.fstat(handle.fileno()).st_size > MAX_READ_BYTES:
            raise DatasetProblem(f"{where} is over {MAX_READ_BYTES // 2**20} MiB: refused")
        return handle.read(MAX_READ_BYTES + 1)


def open_regular(dir_fd: int, name: str, where: str) -> IO[bytes] | None:
    """The regular file ``name`` in the folder, opened for reading (never through a link, a FIFO or a device);
    None when it does not exist."""
    _check_name(name)
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refused(where, exc) from exc
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise DatasetProblem(f"{where} is not a regular file: refused")
    return handle


def open_lock(dir_fd: int, name: str, where: str) -> int:
    """The lock file's descriptor (created if missing, never through a link)."""
    _check_name(name)
    try:
        return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                       0o666, dir_fd=dir_fd)
    except OSError as exc:
        raise _refused(where, exc) from exc


def unlink(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` (a link is removed itself, never its target); a missing one is fine."""
    _check_name(name)
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def rmdir(dir_fd: int, name: str) -> bool:
    """Remove the empty folder ``name`` (never a link: rmdir refuses one); True when gone or never there."""
    _check_name(name)
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
