"""Find run directories under a root: one run, or a tree of thousands."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

EVENT_FILE = re.compile(r"^events\.out\.tfevents\.")
WANDB_RUN_DIR = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-(?P<id>[A-Za-z0-9]+)(?:-\d+)?$")
"""W&B run folders; a second start in the same second gets a ``-1`` suffix."""
HF_CHECKPOINT_DIR = re.compile(r"^checkpoint-\d+$")

PIMM_MARKERS = ("train.log", "run_metadata.json", "resolved_config.json", "config.py")
NEVER_DESCEND = {"code", ".git", "__pycache__", "node_modules", ".exex", "site-packages"}
"""Folders that are never a run and can be huge (code snapshots, W&B internals, VCS)."""


def classify_dir(path: Path, names: set[str] | None = None) -> str | None:
    """The kind of run ``path`` is (pimm, hf-trainer, wandb, tensorboard) or None."""
    if names is None:
        try:
            names = set(os.listdir(path))
        except OSError:
            return None
    if any(m in names for m in PIMM_MARKERS) or _is_model_dir(path / "model", names):
        return "pimm"
    if "trainer_state.json" in names or any(HF_CHECKPOINT_DIR.match(n) for n in names):
        return "hf-trainer"
    if WANDB_RUN_DIR.match(path.name) and any(n.endswith(".wandb") for n in names):
        return "wandb"
    if "wandb" in names and _wandb_run_ids(path / "wandb") and len(_wandb_run_ids(path / "wandb")) == 1:
        return "wandb"
    if any(EVENT_FILE.match(n) for n in names):
        return "tensorboard"
    return None


def _is_model_dir(model: Path, names: set[str]) -> bool:
    """A pimm ``model/`` folder (or a symlink to one, even dangling) marks a run."""
    if "model" not in names:
        return False
    if os.path.islink(model):
        return True
    try:
        entries = os.listdir(model)
    except OSError:
        return False
    return any(e in ("last", "model_last.pth", "model_best.pth", "last.prev", "last.tmp")
               or e.startswith("iter_") for e in entries)


def _wandb_run_ids(wandb_dir: Path) -> set[str]:
    """Run ids of the W&B run folders in a ``wandb/`` folder (the id ends the folder name)."""
    try:
        return {m["id"] for m in map(WANDB_RUN_DIR.match, os.listdir(wandb_dir)) if m}
    except OSError:
        return set()


def _has_wandb_runs(wandb_dir: Path) -> bool:
    return bool(_wandb_run_ids(wandb_dir))


def iter_runs(root: Path, on_error: Callable[[Path, str], None] | None = None,
              max_depth: int = 12) -> Iterator[Path]:
    """Yield run directories under ``root`` breadth-first, as they are found.

    Symlinked directories are followed once (loops are cut by device/inode), unreadable
    folders are reported through ``on_error`` and skipped, and a run's own folders are
    never searched for further runs.
    """
    root = Path(root)
    seen: set[tuple[int, int]] = set()
    queue: list[tuple[Path, int]] = [(root, 0)]
    while queue:
        current, depth = queue.pop(0)
        try:
            st = os.stat(current)
        except OSError as exc:
            if on_error:
                on_error(current, exc.strerror or "cannot stat")
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            names = sorted(os.listdir(current))
        except OSError as exc:
            if on_error:
                on_error(current, exc.strerror or "cannot list")
            continue
        kind = classify_dir(current, set(names))
        if kind is not None:
            yield current
            continue
        if depth >= max_depth:
            continue
        for name in names:
            if name in NEVER_DESCEND or name.startswith("."):
                continue
            child = current / name
            if name == "wandb" and not _has_wandb_runs(child):
                continue
            if name == "latest-run":
                continue  # W&B's symlink to a run folder listed beside it
            try:
                if not stat.S_ISDIR(os.stat(child).st_mode):
                    continue
            except OSError:
                if os.path.islink(child):
                    continue  # dangling link: nothing to search
                if on_error:
                    on_error(child, "cannot stat")
                continue
            queue.append((child, depth + 1))


def discover(root: Path | str, on_error: Callable[[Path, str], None] | None = None) -> list[Path]:
    """All run directories under ``root`` (``root`` itself when it is a run), sorted."""
    return sorted(iter_runs(Path(root), on_error), key=lambda p: p.as_posix())
