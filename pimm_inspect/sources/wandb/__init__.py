"""Local W&B run folders (``wandb/run-*``, ``wandb/offline-run-*``), read without importing wandb.

Frames the ``.wandb`` transaction log (LevelDB log blocks) in bulk and decodes history and summary records with
numpy over the protobuf wire format, every other record by the ``Record`` class built from wandb's descriptors
(``_proto``); damaged blocks are skipped with a finding. Gives history series (step metrics honoured), config,
summary, console lines, the run's mode and server link facts (``links``). A refresh resumes at the last record
of a log that has no exit record yet. Entry: ``read`` below (the reader protocol) or ``reader.read_wandb_run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import Read, read_of

if TYPE_CHECKING:
    from .reader import WandbRunResult


def read(path: Path, rel_path: str) -> Read[WandbRunResult]:
    """One W&B run folder (``path``), its transaction log from the start.

    The reader protocol (``sources.protocol``); the reader module is imported only when called.
    """
    from .reader import read_wandb_run

    result = read_wandb_run(path, rel_path)
    return read_of(result, result.end_offset)
