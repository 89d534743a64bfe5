"""Keep reads inside the run: while a run is read, a file whose real path leaves it is not opened.

``load`` wraps reading one run in ``confined_to(root, layout_links(root))``; ``open_regular`` (every reader's
way in) then refuses a file that a link takes out of the run, unless it is under pimm's own layout. A file
outside the run that pimm's layout names (the job's ``slurm_logs/slurm-<jobid>.out``) is read inside
``also_allowed(path)``. Outside a load (tests calling a reader directly) nothing is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_PROC_FD = "/proc/self/fd/"
"""Where Linux names an open descriptor's real path (``real_path`` asks it instead of walking every component)."""
_proc_usable = True


def real_path(path: Path | str) -> str:
    """``os.path.realpath(path)``, the same string, in three system calls where the kernel can say it.

    ``os.path.realpath`` is written in Python and ``lstat``s every component of the path (~60 us for a path
    eight folders deep); opening the path with ``O_PATH`` (no read access asked, never blocks, not even on a
    FIFO) and reading ``/proc/self/fd/N`` back gives the kernel's resolution of an existing path in ~15 us.
    A path that does not resolve (missing, dangling link, a loop), or no usable ``/proc``, goes to
    ``os.path.realpath``, whose non-strict rules then decide.
    """
    global _proc_usable
    flags = getattr(os, "O_PATH", 0)
    if _proc_usable and flags and not isinstance(path, bytes):
        try:
            fd = os.open(path, flags | os.O_CLOEXEC)
        except (OSError, ValueError, TypeError):
            return os.path.realpath(path)
        try:
            real = os.readlink(f"{_PROC_FD}{fd}")
        except OSError:
            _proc_usable = False  # no /proc (a container without it, another OS): the walk from now on
        else:
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return real
        finally:
            os.close(fd)
    return os.path.realpath(path)


_CONFINED: ContextVar[tuple[str, tuple[str, ...]] | None] = ContextVar("pimm_inspect_confined", default=None)
"""(real run root, real paths also allowed) while a run is being read; None outside a load."""


@contextmanager
def confined_to(root: Path, allowed: tuple[Path, ...] = ()) -> Iterator[None]:
    """While active, ``open_regular`` refuses files whose real path leaves ``root`` (links out of the run),
    except under the ``allowed`` paths (pimm's own layout, such as a ``model`` link to ``$MODEL_DIR``)."""
    token = _CONFINED.set((real_path(root), tuple(real_path(a) for a in allowed)))
    try:
        yield
    finally:
        _CONFINED.reset(token)


@contextmanager
def also_allowed(path: Path) -> Iterator[None]:
    """Allow one more real path (a file outside the run that matches pimm's layout) for the enclosed reads."""
    current = _CONFINED.get()
    if current is None:
        yield
        return
    token = _CONFINED.set((current[0], current[1] + (real_path(path),)))
    try:
        yield
    finally:
        _CONFINED.reset(token)


def layout_links(root: Path) -> tuple[Path, ...]:
    """Links at the top of a run that pimm itself makes, so their targets count as the run's own:
    ``model`` -> ``$MODEL_DIR/<exp_dir>/model`` and ``wandb`` -> the launch cwd's ``wandb/`` (by the target's name)."""
    allowed = []
    for name in ("model", "wandb"):
        link = root / name
        if os.path.islink(link) and Path(real_path(link)).name == name:
            allowed.append(link)
    return tuple(allowed)


def _within(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def outside_run(path: Path, root: Path | str | None = None) -> str | None:
    """Where ``path`` really is when it leads out of the run (through a link), else None.

    ``root`` defaults to the run being read (``confined_to``); with neither, nothing is outside. This looks the
    path up: to decide about a file that is then read, check the opened descriptor (``opened_path`` and
    ``outside_real``, as ``open_regular`` does), never the path before opening it again.
    """
    if root is None and _CONFINED.get() is None:
        return None
    return outside_real(real_path(path), root)


def outside_real(real: str, root: Path | str | None = None) -> str | None:
    """``real`` (a resolved path) when it is outside the run (``root``, else the run being read) and outside the
    paths also allowed; None when inside, or when no run is being read."""
    confined = _CONFINED.get()
    allowed: tuple[str, ...]
    if root is not None:
        base, allowed = real_path(root), ()
    elif confined is not None:
        base, allowed = confined
    else:
        return None
    if _within(real, base) or any(_within(real, a) for a in allowed):
        return None
    return real


def opened_path(fd: int, path: Path | str) -> str:
    """The real path of what the descriptor ``fd`` (opened from ``path``) is, as the kernel resolved it at open
    time (``/proc/self/fd``); without ``/proc`` the path's resolution now (``os.path.realpath``)."""
    global _proc_usable
    if _proc_usable:
        try:
            real = os.readlink(f"{_PROC_FD}{fd}")
        except OSError:
            _proc_usable = False
        else:
            if real.startswith("/"):
                return real[: -len(" (deleted)")] if real.endswith(" (deleted)") else real
    return os.path.realpath(path)


def link_target_text(path: Path) -> str:
    """The link's own target when ``path`` is a link, else where it resolves (for naming, never reading)."""
    try:
        return os.readlink(path) if os.path.islink(path) else real_path(path)
    except OSError:
        return real_path(path)
