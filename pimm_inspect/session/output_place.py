"""Where a written output may go: never inside a run being read (the one rule every writer asks).

``export`` (a run's table or the dataset), ``report`` and the dataset's session all write files a person named with
``-o``; runs are read, never written, so an output that would land in one of the runs read (its folder or any
folder below it, links resolved) is refused before anything is read or written.
"""

from __future__ import annotations

import os
from pathlib import Path


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def run_holding(output: Path | str, run_dirs: list[Path]) -> Path | None:
    """The run directory ``output`` (a file or folder to be written) would land in, links resolved; else None."""
    real_out = os.path.realpath(output)
    for run_dir in run_dirs:
        if _inside(real_out, os.path.realpath(run_dir)):
            return run_dir
    return None


def run_held(output: Path | str, run_dirs: list[Path]) -> Path | None:
    """A run directory that lies inside the folder ``output`` (a dataset's DIR must be a folder of its own)."""
    real_out = os.path.realpath(output)
    for run_dir in run_dirs:
        if _inside(os.path.realpath(run_dir), real_out):
            return run_dir
    return None
