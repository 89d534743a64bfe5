"""Which checkpoint each resumed attempt restored, as a path relative to the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePosixPath

from ..model import Attempt, CheckpointInfo


def restored_checkpoints(attempts: list[Attempt], checkpoints: list[CheckpointInfo], root: Path,
                         save_paths: list[str]) -> list[Attempt]:
    """Each resumed attempt with the checkpoint it restored: the run's ``CheckpointInfo.path`` its log names (the
    longest run checkpoint path the logged path ends with: pimm logs ``<save_path>/model/model_last.pth``, HF
    ``checkpoint-N``), else the logged path made relative to the run where it lies inside it."""
    return [dataclasses.replace(att, restored_checkpoint=restored_path(att.resumed_from, checkpoints, root, save_paths))
            if att.resumed_from and att.restored_checkpoint is None else att for att in attempts]


def restored_path(logged: str | None, checkpoints: list[CheckpointInfo], root: Path,
                  save_paths: list[str]) -> str | None:
    """The run-relative path of the checkpoint a log line names, or None when it names none."""
    if not logged or not logged.strip():
        return None
    text = logged.strip().rstrip("/")
    parts = PurePosixPath(text).parts
    best: str | None = None
    for ck in checkpoints:
        tail = PurePosixPath(ck.path.rstrip("/")).parts
        if tail and len(tail) <= len(parts) and parts[len(parts) - len(tail):] == tail:
            if best is None or len(tail) > len(PurePosixPath(best).parts):
                best = ck.path
    if best is not None:
        return best
    for prefix in sorted({p.strip().rstrip("/") for p in save_paths if p and p.strip()}, key=len, reverse=True):
        if text.startswith(prefix + "/"):
            return text[len(prefix) + 1:]
    absolute = PurePosixPath(text)
    if absolute.is_absolute():
        try:
            return absolute.relative_to(PurePosixPath(root.as_posix())).as_posix()
        except ValueError:
            return text
    return text
