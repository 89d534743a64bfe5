"""Read every file of a run directory through the table of file kinds (``kinds.KINDS``) into ``Collected``."""

from __future__ import annotations

import os
import traceback
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

from ..model import Finding, Severity
from ..sources import read_progress
from ..sources.confine import also_allowed, confined_to, layout_links
from ..sources.protocol import Read
from .collected import Collected, FileCache
from .file_deps import note_probe
from .kinds import KINDS, FileKind, listdir
from .progress import ReadTracker

__all__ = ["Collected", "collect", "read_kinds"]


@contextmanager
def _reading(c: Collected, rel_path: str) -> Iterator[None]:
    """Run one reader; a bug it trips over becomes a finding naming the file, and the run loads on."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - one file must never cost the whole run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        c.findings.append(Finding(
            "internal.reader-failed", Severity.ERROR, f"{rel_path}: could not be read: {type(exc).__name__}: {exc}"[:400],
            (rel_path,), None,
            f"The reader for this file failed on its content; the rest of the run was read. "
            f"Please report this bug (at {Path(where.filename).name}:{where.lineno})."))


def collect(root: Path, kind: str, cache: FileCache | None = None, progress: ReadTracker | None = None) -> Collected:
    """Read every known file of the run at ``root`` (through ``cache`` when one is handed in; none is made here).

    No file whose real path leaves ``root`` is read (``file.outside-run``), except pimm's own layout.
    ``progress`` (a ReadTracker) is told of every file and may stop the read between two files.
    """
    links = layout_links(root)
    for link in links:  # read through as the run's own: where a link leads is part of what was read
        note_probe(os.path.realpath(link))
    with confined_to(root, links):
        c = Collected(root=root, kind=kind, cache=cache, progress=progress)
        read_kinds(c, listdir(root), KINDS)
        return c


def read_kinds(c: Collected, names: list[str], kinds: tuple[FileKind, ...]) -> None:
    """Find and read the files of ``kinds`` (in order) in the run ``c`` is about (``names``: its listing)."""
    for file_kind in kinds:
        found: list[tuple[Path, str]] = []
        with _reading(c, file_kind.label or file_kind.source_kind):
            found = file_kind.find(c, names)
        for path, rel_path in found:
            _read(c, file_kind, path, rel_path)


@contextmanager
def _tracked(c: Collected, kind: str, path: Path, rel_path: str) -> Iterator[None]:
    """Tell the progress tracker (if any) that a file of ``kind`` is read; it may stop the load here."""
    if c.progress is None:
        yield
        return
    tracker = c.progress
    tracker.reading(kind)
    with read_progress.reporting(lambda offset, so_far: tracker.within(rel_path, offset, so_far),
                                 tracker.block_bytes):
        yield
    tracker.read(kind, path, rel_path)


def _read(c: Collected, kind: FileKind, path: Path, rel_path: str) -> None:
    """One file through its reader (or the cache), guarded; a file whose reader failed is still a source."""
    # pimm's own files outside the run (launch-directory W&B folders, slurm_logs/) were matched to this run.
    outside = also_allowed(path) if not path.is_relative_to(c.root) else nullcontext()
    done = False
    with _tracked(c, kind.source_kind, *kind.counted_as(c.root, path, rel_path)), _reading(c, kind.label or rel_path), \
            outside:
        reader = kind.reader()  # the reader protocol, with a cache or without one
        result: Read[Any] = (kind.cached(c.cache, reader, path, rel_path) if kind.cached is not None
                             and c.cache is not None else reader(path, rel_path))
        c.findings += result.findings
        kind.store(c, path, rel_path, result)
        done = True
    if not done and not any(s.path == rel_path for s in c.sources):
        c.note(path, kind.source_kind, name=rel_path)
