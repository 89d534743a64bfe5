"""Hugging Face Trainer output directories: ``trainer_state.json``, ``checkpoint-N/``, ``runs/`` event files.

Parses ``log_history`` into series (salvaging what a damaged state file still holds), the model ``config.json``
and ``training_args.bin`` (through the safe unpickler), safetensors headers (no weights read), and works out
attempts from the TensorBoard folders a resumed Trainer leaves; ``notes`` explains its logging, eval and save
schedules in plain words. Entry: ``read`` below on the run directory (the reader protocol).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import Read, read_of, run_root

if TYPE_CHECKING:
    from .reader import HfTrainerResult


def read(path: Path, rel_path: str) -> Read[HfTrainerResult]:
    """An HF Trainer output directory (``path``; ``rel_path`` is ``"."`` when it is the run).

    The reader protocol (``sources.protocol``); the reader module is imported only when called.
    """
    from .reader import read_hf_trainer_dir

    result = read_hf_trainer_dir(path, run_root(path, rel_path))
    return read_of(result, 0)
