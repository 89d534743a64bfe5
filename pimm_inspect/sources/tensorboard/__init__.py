"""TensorBoard event files (``events.out.tfevents.*``): scalars, run markers and file-name facts.

Reads the TFRecord framing with every CRC-32C checked, in windows, so memory follows what a file holds, not its
size. Scalars of every writer shape (tensorboardX and torch ``simple_value``, TF2 f32/f64 scalar tensors,
``float_val``/``double_val``, several values per event) come out as numpy series, exactly as protobuf and
``EventAccumulator`` read them (a tagless tensor is named by its ``node_name``); histograms, images, text and
graphs are skipped without decoding. The first damaged record ends the read with a finding naming the file and
offset. Entry: ``read`` below (the reader protocol) or ``reader.read_event_file`` (resumable at an offset).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import Read, read_of

if TYPE_CHECKING:
    from .reader import EventFileResult


def read(path: Path, rel_path: str) -> Read[EventFileResult]:
    """An event file, whole, CRC checked.

    The reader protocol (``sources.protocol``); the reader module is imported only when called.
    """
    from .reader import read_event_file

    result = read_event_file(path, rel_path)
    return read_of(result, result.end_offset)
