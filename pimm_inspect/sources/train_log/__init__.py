"""pimm's rank-0 ``train.log`` of every era: attempts, ``Train:``/``Val``/``Test`` series, saves, resumes, endings.

Streams the file in blocks of complete lines (each capped at 1 MiB), parses ``Train:`` lines with numpy
columns and keeps a compact line index (attempt start lines and byte offsets, step to line) instead of Python
objects per line. Also reads a run's state from the tail alone in constant time (``_tail``) and each attempt's
``Config:`` dump without executing it (``config_dump``). A refresh resumes at the last byte read. Damage
(non-UTF-8, over-long lines, a half-written last line) gives findings naming ``train.log``, never an exception.
Entry: ``read`` below (the reader protocol) or ``reader.read_train_log``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import Read, read_of

if TYPE_CHECKING:
    from ._types import TrainLogResult


def read(path: Path, rel_path: str) -> Read[TrainLogResult]:
    """A train.log, whole, to its last complete line.

    The reader protocol (``sources.protocol``); the reader module is imported only when called.
    """
    from .reader import read_train_log

    result = read_train_log(path, rel_path)
    return read_of(result, result.end_offset)
