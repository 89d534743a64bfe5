"""Where a pimm run's W&B folders are: pimm writes them to ``<launch cwd>/wandb/``, not into the run directory.

The launch directory is ``run_metadata.json``'s ``cwd``; when that path does not exist here (the run was
copied off the cluster) it is what remains of the run's path after its save path (``exp/<group>/<name>``,
relative to the launch directory). Folders are matched by the run's W&B id (from its checkpoints) and
are only ever read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..model import Finding, Severity
from .discover import WANDB_RUN_DIR, wandb_folder_id


def launch_dirs(root: Path, metadata_raw: dict[str, Any] | None, save_paths: list[str]) -> list[Path]:
    """Candidate launch directories of the run at ``root``, most trusted first (each at most once)."""
    found: list[Path] = []
    cwd = (metadata_raw or {}).get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        found.append(Path(cwd))
    absolute = Path(os.path.abspath(root)).as_posix()
    for save_path in save_paths:
        tail = save_path.strip().strip("/")
        if tail and not os.path.isabs(save_path) and absolute.endswith("/" + tail):
            found.append(Path(absolute[: -len(tail) - 1] or "/"))
    out: list[Path] = []
    for path in found:
        if path not in out and path != Path(absolute):
            out.append(path)
    return out


def run_ids(checkpoints: list[Any], configs: list[Any]) -> set[str]:
    """W&B run ids the run itself records (checkpoint cursors, resolved config)."""
    ids = {ck.wandb_run_id for ck in checkpoints if getattr(ck, "wandb_run_id", None)}
    for doc in configs:
        data = doc.data if isinstance(getattr(doc, "data", None), dict) else {}
        value = data.get("wandb_run_id") or data.get("wandb_id")
        if isinstance(value, str) and value:
            ids.add(value)
    return ids


def outside_wandb_folders(root: Path, metadata_raw: dict[str, Any] | None, save_paths: list[str],
                          ids: set[str]) -> tuple[list[Path], list[Finding]]:
    """The run's W&B folders under its launch directory's ``wandb/``, and a finding saying where they were."""
    if not ids:
        return [], []
    for launch in launch_dirs(root, metadata_raw, save_paths):
        wandb_dir = launch / "wandb"
        try:
            names = sorted(os.listdir(wandb_dir))
        except OSError:
            continue
        folders = []
        for name in names:
            path = wandb_dir / name
            if WANDB_RUN_DIR.match(name) and not path.is_symlink() and path.is_dir() and wandb_folder_id(path) in ids:
                folders.append(path)
        if folders:
            where = wandb_dir.absolute().as_posix()
            return folders, [Finding(
                "wandb.outside-run", Severity.INFO,
                f"W&B folders of run {', '.join(sorted(ids))} found in the launch directory: {where}",
                tuple(p.absolute().as_posix() for p in folders), None,
                f"pimm writes W&B files to <launch cwd>/wandb/, not into the run directory. {len(folders)} folder(s) "
                f"there carry this run's W&B id and were read (never written): "
                + ", ".join(p.name for p in folders) + ".")]
    return [], []
