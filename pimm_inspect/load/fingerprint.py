"""A run's on-disk fingerprint: what changed since a run was last read, told from ``stat`` alone (no file is opened).

Used by the Parquet dataset export to rewrite only the runs whose files changed. Two parts:

- the *tree*: every entry under the run directory (path, type, size, mtime in ns; a link's target text), links not
  followed, ``NEVER_DESCEND`` folders and nested runs skipped, digested with SHA-256. A file written, grown,
  replaced, added or removed anywhere in the run changes it, also files the loader reads but does not list
  (``config.json``, ``training_args.bin``).
- the *outside files*: the run's sources that live outside its directory (a ``model`` link to ``$MODEL_DIR``, a
  Slurm log in the launch directory), with the size and mtime the reader saw, plus the mtime of the folder
  holding each, so a new checkpoint beside them counts too.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..model import Run
from .discover import NEVER_DESCEND

MAX_TREE_ENTRIES = 100_000
"""Entries walked per run; a bigger run is never called unchanged (its fingerprint is incomplete)."""


@dataclass(frozen=True, slots=True)
class TreeFingerprint:
    """The digest of one run directory's listing."""

    digest: str
    """SHA-256 hex over the sorted (path, type, size, mtime_ns, link target) entries."""
    entries: int
    total_bytes: int
    """Sum of the sizes of the regular files."""
    complete: bool
    """False when the walk stopped at ``MAX_TREE_ENTRIES`` or a folder could not be listed: never equal to a
    stored fingerprint then."""


def _entry_line(relative: bytes, st: os.stat_result, link: bytes) -> bytes:
    kind = "l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "f"
    size = st.st_size if kind == "f" else 0  # a folder's size is filesystem noise; its entries are listed
    return b"%s\0%s\0%d\0%d\0%s\n" % (relative, kind.encode(), size, st.st_mtime_ns if kind != "d" else 0, link)


def tree_fingerprint(run_dir: Path, skip: frozenset[str] = frozenset(),
                     max_entries: int = MAX_TREE_ENTRIES) -> TreeFingerprint:
    """Fingerprint of every entry under ``run_dir`` (links not followed); ``skip``: run-relative POSIX paths of
    folders not to enter (nested runs, which have their own fingerprint)."""
    root = os.fsencode(run_dir)
    lines: list[bytes] = []
    total = 0
    complete = True
    stack: list[bytes] = [b""]
    while stack:
        relative_dir = stack.pop()
        folder = os.path.join(root, relative_dir) if relative_dir else root
        try:
            with os.scandir(folder) as entries:
                listed = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
        except OSError:
            lines.append(b"%s\0unlistable\n" % relative_dir)
            complete = False
            continue
        for name, st in listed:
            relative = os.path.join(relative_dir, name) if relative_dir else name
            link = b""
            if stat.S_ISLNK(st.st_mode):
                try:
                    link = os.readlink(os.path.join(root, relative))
                except OSError:
                    link = b"?"
            elif stat.S_ISDIR(st.st_mode):
                if name.decode("utf-8", "surrogateescape") in NEVER_DESCEND:
                    continue
                if skip and os.fsdecode(relative) in skip:
                    continue
                stack.append(relative)
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
            lines.append(_entry_line(relative, st, link))
            if len(lines) >= max_entries:
                complete = False
                stack.clear()
                break
    lines.sort()
    digest = hashlib.sha256(b"".join(lines)).hexdigest()
    return TreeFingerprint(digest=digest, entries=len(lines), total_bytes=total, complete=complete)


def _is_inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


OutsideEntry = tuple[str, str, str]
"""(real absolute path, ``file`` or ``tree``, state): a file's ``size:mtime`` as its reader saw it, or a
folder's tree digest."""


def _file_state(size: int, mtime_s: float) -> str:
    return f"{size}:{mtime_s!r}"


def _tree_state(path: str) -> str:
    fingerprint = tree_fingerprint(Path(path))
    return fingerprint.digest if fingerprint.complete else "incomplete"


def outside_entries(run: Run) -> list[OutsideEntry]:
    """What the run was read from outside its own directory, sorted: source files (a Slurm log in the launch
    directory) with the size and mtime the reader saw; folders (W&B run folders under the launch directory,
    the target of a ``model`` link to ``$MODEL_DIR``) by their tree digest, so a new checkpoint there counts."""
    real_root = os.path.realpath(run.root)
    found: dict[str, tuple[str, str]] = {}
    folders = [w.path for w in run.wandb_runs] + [s.path for s in run.sources if s.kind == "wandb"]
    model = run.root / "model"
    if os.path.islink(model):
        folders.append(str(model))
    for folder in folders:
        real = os.path.realpath(os.path.join(run.root, folder))
        if not _is_inside(real, real_root) and os.path.isdir(real):
            found[real] = ("tree", "")
    for source in run.sources:
        real = os.path.realpath(os.path.join(run.root, source.path))  # an absolute source path stays as it is
        if _is_inside(real, real_root) or any(_is_inside(real, folder) for folder in found):
            continue
        if os.path.isdir(real):
            found[real] = ("tree", "")
        elif os.path.lexists(real):
            found[real] = ("file", _file_state(source.size_bytes, source.mtime_s))
    return sorted((path, kind, state if kind == "file" else _tree_state(path)) for path, (kind, state) in found.items())


def outside_unchanged(recorded: list[OutsideEntry]) -> bool:
    """True when every recorded outside file and folder is as recorded (a file's size and mtime, a folder's tree)."""
    for path, kind, state in recorded:
        if kind == "tree":
            if state == "incomplete" or _tree_state(path) != state:
                return False
            continue
        try:
            st = os.stat(path)
        except OSError:
            return False
        if _file_state(st.st_size, st.st_mtime) != state:
            return False
    return True
