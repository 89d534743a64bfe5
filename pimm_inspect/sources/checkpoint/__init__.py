"""Checkpoint metadata without torch: ``torch.save`` zip and legacy files, DCP directories, pimm's ``model/``.

Pickles are read by an allow-listing unpickler (``safe_pickle``) that builds inert placeholders and never calls
a global from the file; one budget bounds each unpickle (opcodes, objects, bytes) and zip members are inflated
with their output bounded by what they produce. Gives per checkpoint the step, epoch, W&B run id and history
cursor and the payload's shape, plus which file a resume would take. Entry: ``read`` below on a ``model/``
folder (the reader protocol), ``reader.read_checkpoint_file`` on one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import Read, read_of, run_root
from ...model import Finding
from ._lfs import LFS_CODE, LFS_HEAD, lfs_finding, lfs_pointer, read_pointer

__all__ = ["LFS_CODE", "LFS_HEAD", "access_denied", "lfs_finding", "lfs_pointer", "read", "read_pointer",
           "save_unknown"]

if TYPE_CHECKING:
    from .reader import ModelDirResult

_DENIED = ("(Permission denied)", "(Operation not permitted)")


def access_denied(finding: Finding) -> bool:
    """True for a ``file.unreadable`` finding about a file or folder this user may not read (EACCES, EPERM).

    Such a checkpoint is not known to be incomplete: its save may have finished; only this user cannot check.
    (A FIFO or a dangling link where a checkpoint file should be is another matter: that file is not there.)
    """
    return finding.code == "file.unreadable" and finding.message.endswith(_DENIED)


def save_unknown(finding: Finding) -> bool:
    """True for a finding that leaves a checkpoint's save unknown, not interrupted: this user may not read it
    (``access_denied``), or the file is a Git LFS pointer whose checkpoint was never fetched (``file.lfs-pointer``)."""
    return access_denied(finding) or finding.code == LFS_CODE


def read_lightning(path: Path, rel_path: str) -> Read[ModelDirResult]:
    """A Lightning logger version folder's ``checkpoints/``: every ``.ckpt``'s metadata and ``ckpt_path="last"``'s
    pick (the reader protocol; imported only when called)."""
    from .lightning import read_lightning_checkpoints

    return read_of(read_lightning_checkpoints(path, run_root(path, rel_path)), 0)


def read(path: Path, rel_path: str) -> Read[ModelDirResult]:
    """A pimm ``model/`` folder: every checkpoint's metadata and the resume candidate.

    The reader protocol (``sources.protocol``); the reader module is imported only when called.
    """
    from .reader import read_model_dir

    result = read_model_dir(path, run_root(path, rel_path))
    return read_of(result, 0)
