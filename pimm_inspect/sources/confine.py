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

_CONFINED: ContextVar[tuple[str, tuple[str, ...]] | None] = ContextVar("pimm_inspect_confined", default=None)
"""(real run root, real paths also allowed) while a run is being read; None outside a load."""


@contextmanager
def confined_to(root: Path, allowed: tuple[Path, ...] = ()) -> Iterator[None]:
    """While active, ``open_regular`` refuses files whose real path leaves ``root`` (links out of the run),
    except under the ``allowed`` paths (pimm's own layout, such as a ``model`` link to ``$MODEL_DIR``)."""
    token = _CONFINED.set((os.path.realpath(root), tuple(os.path.realpath(a) for a in allowed)))
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
    token = _CONFINED.set((current[0], current[1] + (os.path.realpath(path),)))
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
        if os.path.islink(link) and Path(os.path.realpath(link)).name == name:
            allowed.append(link)
    return tuple(allowed)


def _within(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def outside_run(path: Path, root: Path | str | None = None) -> str | None:
    """Where ``path`` really is when it leads out of the run (through a link), else None.

    ``root`` defaults to the run being read (``confined_to``); with neither, nothing is outside.
    """
    confined = _CONFINED.get()
    allowed: tuple[str, ...]
    if root is not None:
        base, allowed = os.path.realpath(root), ()
    elif confined is not None:
        base, allowed = confined
    else:
        return None
    real = os.path.realpath(path)
    if _within(real, base) or any(_within(real, a) for a in allowed):
        return None
    return real


def link_target_text(path: Path) -> str:
    """The link's own target when ``path`` is a link, else where it resolves (for naming, never reading)."""
    try:
        return os.readlink(path) if os.path.islink(path) else os.path.realpath(path)
    except OSError:
        return os.path.realpath(path)
