"""Has this run changed since it was last read? The one rule, for the ``ls`` row cache and the Parquet export.

A run's read is recorded (``record_read``): every file it opened and folder it listed, inside the run and
outside it (pimm's ``<launch cwd>/wandb/``, the job's Slurm log under ``slurm_logs/``, a ``model`` link's target),
each fingerprinted by ``file_deps`` *before* it was read, and whether its result may be reused at all. A result
is reused only while ``unchanged(record)``: it was reusable and every fingerprint is the same, so a grown
``train.log``, a new event file, checkpoint or W&B folder, a changed config or metadata file, a deleted or
renamed file, a new code-snapshot marker each count, and nothing the read did not use does.

A result is never reusable when the clock alone could change it (a live run turns ``stopped`` once its files
stay quiet), when the load failed (what it read is not all it would read), or when a file it read had been
modified within ``RACY_S`` before the read started (a same-size rewrite within one mtime tick would go unseen).

The row cache stores a record with each row (``flat`` / ``from_flat``: one tuple of strings, quick to read back);
the export stores one per run in its manifest. Checking costs ``stat`` calls and folder listings, no file read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from . import file_deps
from .file_deps import Dep, valid_deps

RACY_S = 2.0
"""Files modified less than this long before the read started make its result unreusable (racy mtimes)."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """What one read of a run depended on."""

    started_s: float
    """Wall-clock time the read started (a record made "in the future" is never trusted: the clock went back)."""
    deps: tuple[Dep, ...]
    """Every file opened and folder listed, each with its fingerprint from before it was read (``file_deps``)."""
    reusable: bool
    """False: the result must be made again next time whatever the files say (live, failed or racy read)."""


def record_read(root: Path, read: Callable[[], tuple[_T, bool]], cache_dir: str | None = None,
                real_root: str | None = None) -> tuple[_T, ReadRecord]:
    """``read()`` (its value, and False when the clock alone could change it or it failed) recording what it used.

    ``cache_dir``: the disk cache's directory, whose own entries are not dependencies; ``real_root``: where ``root``
    really leads, resolved by the caller just before (else resolved here)."""
    root = Path(root).absolute()
    started = time.time()
    with file_deps.recording(str(root), cache_dir) as recorder:
        file_deps.note_realpath(root, real_root)
        value, stable = read()
    deps = recorder.result()
    reusable = stable and file_deps.newest_mtime_ns(deps) < (started - RACY_S) * 1e9
    return value, ReadRecord(started, deps, reusable)


def unchanged(record: ReadRecord, known_real: dict[str, str] | None = None,
              known_entries: dict[str, Iterable[os.DirEntry[str]]] | None = None) -> bool:
    """True when the result of the read ``record`` describes may be reused: nothing it used changed.

    ``known_real``, ``known_entries``: real paths resolved and folders listed just now by the caller
    (``file_deps.unchanged``)."""
    return record.reusable and time.time() >= record.started_s and file_deps.unchanged(record.deps, known_real,
                                                                                        known_entries)


def flat(record: ReadRecord) -> tuple[str, ...]:
    """The dependencies as one tuple of strings (kind, path, fingerprint, kind, ...): quick to store and read back."""
    return tuple(part for dep in record.deps for part in dep)


def from_flat(started_s: Any, parts: Any) -> ReadRecord | None:
    """The reusable record of a stored (start time, ``flat`` parts); None when damaged or foreign."""
    if type(started_s) is not float or not isinstance(parts, tuple) or len(parts) % 3:
        return None
    deps = tuple(zip(parts[0::3], parts[1::3], parts[2::3]))
    if not valid_deps(deps):
        return None
    return ReadRecord(started_s, deps, True)

