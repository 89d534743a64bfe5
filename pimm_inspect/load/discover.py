"""Find run directories under a root: one run, or a tree of thousands."""

from __future__ import annotations

import csv
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import RunKind

EVENT_FILE = re.compile(r"^.*tfevents")
"""TensorBoard's own rule: any file whose name contains ``tfevents`` is an event file (use ``.match``)."""
WANDB_RUN_DIR = re.compile(r"^(?:offline-)?run-(?P<stamp>\d{8}_\d{6})-(?P<id>.+)$", re.S)
"""W&B run folders: the id is whatever follows the time stamp (W&B accepts ids like ``Mancala 8``). A second start
in the same second adds ``-<n>`` after the id, so the folder's ``run-<id>.wandb`` log names the id exactly."""
HF_CHECKPOINT_DIR = re.compile(r"^checkpoint-\d+$")
LIGHTNING_CSV = "metrics.csv"
"""Lightning's CSVLogger history. Its version folder holds ``hparams.yaml`` only when the module saved hyperparameters
(pytorch-lightning 2.x writes none for a module without ``save_hyperparameters``), so without one the file's header
tells: CSVLogger always writes a ``step`` column."""
LIGHTNING_STEP_COLUMN = "step"
HEADER_BYTES = 64 * 1024
"""Bytes of a ``metrics.csv`` read to find its header's ``step`` column (about 3,000 metric names)."""

PIMM_MARKERS = ("train.log", "run_metadata.json", "resolved_config.json", "config.py")
NEVER_DESCEND = {"code", ".git", "__pycache__", "node_modules", ".exex", "site-packages"}
"""Folders that are never a run and can be huge (code snapshots, W&B internals, VCS)."""
SYSTEM_DIRS = ("/proc", "/sys", "/dev")
"""Pseudo-filesystems that are never searched, even through a link and with ``follow_links``."""
MAX_DEPTH = 12
"""Default number of folder levels searched below the root."""


RUN_MARKERS_TEXT = ("train.log, run_metadata.json, resolved_config.json, config.py, model/ checkpoints, "
                    "trainer_state.json or checkpoint-N/, a W&B run folder, TensorBoard event files, or Lightning's "
                    "metrics.csv (beside hparams.yaml, or with a step column)")
"""What makes a folder a run, in words (``classify_dir``'s rule): every "no run here" message says it this way."""


def classify_dir(path: Path | str, names: set[str] | None = None) -> RunKind | None:
    """The kind of run ``path`` is (pimm, hf-trainer, wandb, tensorboard, lightning) or None."""
    if names is None:
        try:
            names = set(os.listdir(path))
        except OSError:
            return None
    if any(m in names for m in PIMM_MARKERS) or "model" in names and _is_model_dir(os.path.join(path, "model"), names):
        return "pimm"
    if "trainer_state.json" in names or any(HF_CHECKPOINT_DIR.match(n) for n in names):
        return "hf-trainer"
    name = path.name if isinstance(path, Path) else os.path.basename(path.rstrip(os.sep))
    if WANDB_RUN_DIR.match(name) and (any(n.endswith(".wandb") for n in names) or
                                      "files" in names and _has_wandb_files(os.path.join(path, "files"))):
        return "wandb"
    if "wandb" in names and len(_wandb_run_ids(Path(path, "wandb"))) == 1:
        return "wandb"
    if any(EVENT_FILE.match(n) for n in names) and _has_event_file(path, names):
        return "tensorboard"
    if LIGHTNING_CSV in names and ("hparams.yaml" in names or csv_logger_header(os.path.join(path, LIGHTNING_CSV))):
        return "lightning"  # CSVLogger's version folder (with event files beside it, the TensorBoard run holds it)
    return None


WANDB_RUN_FILES = ("wandb-metadata.json", "wandb-summary.json")
"""Files W&B writes into a run folder's ``files/``: with one of them, a folder whose ``.wandb`` log is gone (GitHub
refuses files over 100 MB; a copy that left it out) is still a W&B run (its start, summary and config are there)."""


def _has_wandb_files(files_dir: str) -> bool:
    try:
        return any(os.path.isfile(os.path.join(files_dir, n)) and not os.path.islink(os.path.join(files_dir, n))
                   for n in WANDB_RUN_FILES)
    except OSError:
        return False


def csv_logger_header(path: str) -> bool:
    """True when the file at ``path`` is a regular file whose first line (at most ``HEADER_BYTES`` read) is a CSV
    header with a ``step`` column, as Lightning's CSVLogger writes it; any other ``metrics.csv`` is no run."""
    try:  # non-blocking: a FIFO named metrics.csv opens at once and is then refused as no regular file
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, HEADER_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    line, newline, _rest = head.partition(b"\n")
    try:
        fields = next(csv.reader([line.decode("utf-8", errors="replace").rstrip("\r")]), [])
    except csv.Error:
        return False
    if not newline and len(head) == HEADER_BYTES:
        fields = fields[:-1]  # the header goes on past what was read: its last name may be cut
    return LIGHTNING_STEP_COLUMN in fields


def _has_event_file(path: Path | str, names: set[str]) -> bool:
    """True when a ``tfevents`` name in ``names`` is a file (a folder called so is not an event file)."""
    for name in names:
        if EVENT_FILE.match(name):
            try:
                if not stat.S_ISDIR(os.stat(os.path.join(path, name)).st_mode):
                    return True
            except OSError:
                continue
    return False


def _is_model_dir(model: Path | str, names: set[str]) -> bool:
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


_SUFFIXED = re.compile(r"-\d+$")
"""``-<n>``: what W&B appends to a folder started in the same second as another (``x_sync_dir_suffix``)."""


def wandb_folder_id(folder: Path) -> str | None:
    """The W&B run id of a run folder: its ``run-<id>.wandb`` log's name, else what follows the folder's stamp."""
    match = WANDB_RUN_DIR.match(folder.name)
    if match is None:
        return None
    try:
        logs = [n for n in os.listdir(folder) if n.startswith("run-") and n.endswith(".wandb") and len(n) > 10]
    except OSError:
        logs = []
    return logs[0][4:-6] if len(logs) == 1 else match["id"]


def wandb_groups(wandb_dir: Path, names: list[str] | None = None) -> dict[str, list[str]]:
    """The W&B run folders of a ``wandb/`` folder, grouped by run id: id -> folder names, sorted."""
    if names is None:
        try:
            names = sorted(os.listdir(wandb_dir))
        except OSError:
            return {}
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        match = WANDB_RUN_DIR.match(name)
        if match is not None:
            # Only a name that may end in W&B's same-second suffix needs its log's name to tell the id.
            run_id = wandb_folder_id(wandb_dir / name) if _SUFFIXED.search(match["id"]) else match["id"]
            if run_id is not None:
                groups.setdefault(run_id, []).append(name)
    return groups


def same_id_siblings(folder: Path) -> list[Path]:
    """The W&B run folders beside ``folder`` that carry its id (``folder`` included), sorted by name."""
    run_id = wandb_folder_id(folder)
    if run_id is None:
        return [folder]
    try:
        names = os.listdir(folder.parent)
    except OSError:
        return [folder]
    # A folder's name holds its id, maybe with a suffix: only those names can be of this id.
    near = [n for n in names if (m := WANDB_RUN_DIR.match(n)) and (m["id"] == run_id or m["id"].startswith(run_id + "-"))]
    members = wandb_groups(folder.parent, near).get(run_id, [])
    out = [folder.parent / n for n in members
           if n == folder.name or (not os.path.islink(folder.parent / n) and os.path.isdir(folder.parent / n))]
    return out if folder.name in members else [folder]


def _wandb_run_ids(wandb_dir: Path) -> set[str]:
    """Run ids of the W&B run folders in a ``wandb/`` folder."""
    return set(wandb_groups(wandb_dir))


def _group_followers(current: Path, names: list[str]) -> set[str]:
    """W&B run folders in ``current`` that are read with an earlier folder of their id (not runs of their own).

    Same-id folders are one run, even beside other ids; its folder is the first by name that holds a log.
    """
    if not any(WANDB_RUN_DIR.match(n) for n in names):
        return set()
    followers: set[str] = set()
    for members in wandb_groups(current, names).values():
        if len(members) > 1:
            leader = next((m for m in members if _has_wandb_log(current / m)), members[0])
            followers.update(m for m in members if m != leader)
    return followers


def _has_wandb_log(folder: Path) -> bool:
    try:
        return any(n.endswith(".wandb") for n in os.listdir(folder))
    except OSError:
        return False


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _system_dir(real: str) -> bool:
    return any(_inside(real, top) for top in SYSTEM_DIRS)


def iter_runs(root: Path, on_error: Callable[[Path, str], None] | None = None,
              max_depth: int = MAX_DEPTH, follow_links: bool = False,
              on_listing: Callable[[Path, Iterable[os.DirEntry[str]], str], None] | None = None) -> Iterator[Path]:
    """Yield run directories under ``root`` breadth-first, as they are found.

    TensorBoard's rule: a folder holding a ``*tfevents*`` file is a run, and its subfolders are
    searched too (a writer's ``add_scalars``/``add_hparams`` and Keras' ``train``/``validation``
    folders sit inside it). pimm, HF Trainer and W&B run folders are not searched further: their
    subfolders are their own. A link is followed only while it stays inside the root, unless
    ``follow_links``; /proc, /sys and /dev are never entered; loops are cut by device/inode.
    What is not searched (unreadable, a link out of the root, below ``max_depth``) is reported
    through ``on_error(path, reason)``; ``on_listing(run, entries, real)`` is handed each run folder's entries as
    listed and where it really leads (``os.path.realpath``'s string: the root's, then each folder's name, or a
    link's target), so a check of the run's cached row made right after need neither list nor resolve it again.
    """
    root = Path(root)
    try:
        real_root = os.path.realpath(root)
    except OSError:
        real_root = str(root.absolute())
    report = on_error or (lambda _path, _reason: None)
    if _system_dir(real_root):
        report(root, f"{real_root} is a system folder: never searched")
        return
    sep = os.sep
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[str, int, str]] = deque([(str(root), 0, real_root)])
    """(folder, depth, where it really leads): plain strings, a ``Path`` made only for what is yielded."""
    deep: list[str] = []
    while queue:
        current, depth, real = queue.popleft()
        try:
            st = os.stat(current)
        except OSError as exc:
            report(Path(current), exc.strerror or "cannot stat")
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            with os.scandir(current) as listing:
                entries = {entry.name: entry for entry in listing}
        except OSError as exc:
            report(Path(current), exc.strerror or "cannot list")
            continue
        names = sorted(entries)
        kind = classify_dir(current, set(entries))
        # A folder whose only run is its wandb/ child (a launch directory) may hold other runs beside it.
        launch_dir = kind == "wandb" and not WANDB_RUN_DIR.match(os.path.basename(current))
        if kind is not None:
            found = Path(current)
            if on_listing is not None:
                on_listing(found, entries.values(), real)
            yield found
            if kind != "tensorboard" and not launch_dir:
                continue
        followers = _group_followers(Path(current), names) if kind is None else set()
        prefix = current if current.endswith(sep) else current + sep
        real_prefix = real if real.endswith(sep) else real + sep
        for name in names:
            if name in followers:
                continue  # read with the first folder of its W&B id
            if name in NEVER_DESCEND or name.startswith(".") or name == "latest-run" or (launch_dir and name == "wandb"):
                continue  # latest-run: W&B's link to a run folder listed beside it
            entry = entries[name]
            child = prefix + name
            try:  # the listing's entry type: a stat only for a link (or where the filesystem gives no type)
                link = entry.is_symlink()
                folder = entry.is_dir()
            except OSError:
                if not os.path.islink(child):  # a dangling link has nothing to search
                    report(Path(child), "cannot stat")
                continue
            if not folder:
                continue
            child_real = real_prefix + name
            if link:
                child_real = target = os.path.realpath(child)
                if _system_dir(target):
                    report(Path(child), f"a link to {target}: system folders are never searched")
                    continue
                if not follow_links and not _inside(target, real_root):
                    report(Path(child), f"a link to {target}, outside the searched folder (not followed; "
                                        "--follow-links follows it)")
                    continue
            if depth >= max_depth:
                deep.append(child)
                continue
            queue.append((child, depth + 1, child_real))
    if deep:
        shown = ", ".join(Path(p).as_posix() for p in deep[:5]) + (f" and {len(deep) - 5} more" if len(deep) > 5 else "")
        report(Path(deep[0]).parent if len(deep) == 1 else root,
               f"{len(deep)} folder(s) deeper than --max-depth {max_depth} not searched: {shown}")


def discover(root: Path | str, on_error: Callable[[Path, str], None] | None = None,
             max_depth: int = MAX_DEPTH, follow_links: bool = False) -> list[Path]:
    """All run directories under ``root`` (``root`` itself when it is a run), sorted."""
    return sorted(iter_runs(Path(root), on_error, max_depth, follow_links), key=lambda p: p.as_posix())


def run_containing(path: Path | str, levels: int = MAX_DEPTH) -> Path | None:
    """The run ``path`` is part of (a file or folder inside a run: ``RUN/train.log``, ``RUN/model``, an HF Trainer's
    ``RUN/checkpoint-10``), searching at most ``levels`` folders up; None when ``path`` is in no run.

    A folder that is a run by itself is part of its parent only where the parent's kind owns it: an HF Trainer's
    ``checkpoint-N`` (it holds a ``trainer_state.json`` of its own)."""
    here = Path(path).absolute()
    if here.is_dir() and HF_CHECKPOINT_DIR.match(here.name) and classify_dir(here.parent) == "hf-trainer":
        return here.parent
    if here.is_dir() and classify_dir(here) is not None:
        return None  # a run of its own
    for parent in list(here.parents)[:levels]:
        if classify_dir(parent) is not None:
            return parent
    return None
