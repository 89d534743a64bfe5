"""A run's current state from the end of its train.log alone, in constant time whatever the size.

Only the last ``TAIL_BYTES`` are read (from the first line start inside them) and run
through the normal reader, so the tail is interpreted by the same rules as a full read:
the same Train: step formula, the same attempt markers and the same end markers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...model import Finding
from .._common import UnreadableFile, open_regular

TAIL_BYTES = 256 * 1024
"""Bytes read from the end of the file."""


@dataclass(frozen=True, slots=True)
class TrainLogTail:
    """What the last ``TAIL_BYTES`` of a train.log say; None where the tail does not show it."""

    size_bytes: int
    tail_offset: int
    """Byte offset of the first line read (0 when the whole file fit in the tail)."""
    last_line_complete: bool
    """False when the file does not end with a newline (a line is being written, or the writer died mid-line)."""
    last_step: int | None
    """Global step of the last Train: line in the tail."""
    max_epoch: int | None
    iters_per_epoch: int | None
    """Of that last Train: line (``last_step / (max_epoch * iters_per_epoch)`` is the progress)."""
    last_timestamp: str | None
    """Timestamp of the last prefixed record (node-local time, as written)."""
    attempt_start_offset: int | None
    """Byte offset of the last ``=> Loading config`` line in the tail: where the current attempt began."""
    attempt_started_at: str | None
    attempts_in_tail: int
    """``=> Loading config`` lines in the tail (more than one: restarts in quick succession)."""
    ended: str | None
    """completed or crashed, as the tail's last attempt shows it (None: still running, killed, or stopped)."""
    end_detail: str | None
    findings: tuple[Finding, ...] = ()


def read_train_log_tail(path: Path, rel_path: str = "train.log", tail_bytes: int = TAIL_BYTES) -> TrainLogTail:
    """Status, last step and current attempt of a train.log from its last ``tail_bytes`` only."""
    from .reader import read_train_log  # the full reader, run over the tail

    try:
        fh = open_regular(path, rel_path)
    except UnreadableFile as exc:
        return TrainLogTail(0, 0, True, None, None, None, None, None, None, 0, None, None, (exc.finding,))
    with fh:
        size = os.fstat(fh.fileno()).st_size
        begin = max(0, size - tail_bytes)
        fh.seek(begin)
        tail = fh.read(size - begin)
    complete = not tail or tail.endswith(b"\n")
    if begin > 0:  # the first bytes are the end of a line that started before the tail
        cut = tail.find(b"\n")
        begin = begin + cut + 1 if cut >= 0 else size
    result = read_train_log(path, rel_path, start_offset=begin)
    train = [s for s in result.segments if s.last_step is not None]
    headers = [s for s in result.segments if s.has_header]
    last_seg = result.segments[-1] if result.segments else None
    steps = result.index.step_steps
    last_train = train[-1] if train else None
    return TrainLogTail(
        size_bytes=size, tail_offset=begin, last_line_complete=complete,
        last_step=int(steps[-1]) if steps.size else None,
        max_epoch=last_train.max_epoch if last_train else None,
        iters_per_epoch=last_train.iters_per_epoch if last_train else None,
        last_timestamp=last_seg.ended_at if last_seg else None,
        attempt_start_offset=headers[-1].start_offset if headers else None,
        attempt_started_at=headers[-1].started_at if headers else None,
        attempts_in_tail=len(headers),
        ended=last_seg.ended if last_seg else None, end_detail=last_seg.end_detail if last_seg else None,
        findings=tuple(f for f in result.findings if f.code != "file.truncated"))
