"""Reader for a Slurm log (``slurm-<jobid>.out``) that sits next to a run (spec section 7)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..model import Finding
from ._common import decode_text, read_bytes_capped

MAX_SLURM_BYTES = 256 * 1024 * 1024

_ATTEMPT = re.compile(r"^(Requeueing )?pimm submitit attempt (\d+)/(\d+)", re.MULTILINE)
_PROBLEMS = [
    ("time-limit", re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT")),
    ("preempted", re.compile(r"CANCELLED AT \S+ DUE TO PREEMPTION|DUE TO PREEMPTION")),
    ("cancelled", re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT")),
    ("oom", re.compile(r"CUDA out of memory|OutOfMemoryError|oom-kill|Out Of Memory")),
    ("nccl", re.compile(r"NCCL (?:error|WARN|timeout)|ProcessGroupNCCL", re.IGNORECASE)),
    ("no-progress", re.compile(r"exited \d+ without writing a newer checkpoint")),
    ("pimm-error", re.compile(r"^ERROR: .*", re.MULTILINE)),
]


@dataclass(frozen=True, slots=True)
class SlurmAttempt:
    """The part of a Slurm log written during one submitit attempt (from its start marker to the next)."""

    k: int | None
    """submitit attempt number (``PIMM_SUBMITIT_ATTEMPT``); None for text before any marker."""
    n: int | None
    requeued: bool
    """submitit printed ``Requeueing pimm submitit attempt k+1/N``: Slurm signalled it (time limit or preemption)."""
    problems: tuple[tuple[str, str], ...]
    """(kind, first matching line) per kind found in this attempt's text."""


@dataclass(frozen=True, slots=True)
class SlurmLog:
    """What a Slurm log says about attempts and how they ended."""

    path: str
    job_id: str | None
    attempts: tuple[tuple[int, int, bool], ...]
    """(k, N, is_requeue_marker) for each submitit marker in order (a requeue marker names the next attempt)."""
    problems: tuple[tuple[str, str], ...]
    """(kind, first matching line) per kind found: time-limit, preempted, oom, nccl, ..."""
    segments: tuple[SlurmAttempt, ...] = ()
    """The log cut at each ``pimm submitit attempt k/N`` start marker."""


def _problems(text: str) -> tuple[tuple[str, str], ...]:
    found = []
    for kind, pattern in _PROBLEMS:
        match = pattern.search(text)
        if match:
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            found.append((kind, text[line_start:line_end if line_end >= 0 else None].strip()[:300]))
    return tuple(found)


def _segments(text: str) -> tuple[SlurmAttempt, ...]:
    starts = [m for m in _ATTEMPT.finditer(text) if not m[1]]
    cuts = [0] + [m.start() for m in starts] + [len(text)]
    out = []
    for i in range(len(cuts) - 1):
        piece = text[cuts[i]:cuts[i + 1]]
        marker = starts[i - 1] if i else None
        if marker is None and not piece.strip():
            continue
        out.append(SlurmAttempt(int(marker[2]) if marker else None, int(marker[3]) if marker else None,
                                "Requeueing pimm submitit attempt" in piece, _problems(piece)))
    return tuple(out)


def read_slurm_log(path: Path, rel_path: str) -> tuple[SlurmLog | None, tuple[Finding, ...]]:
    """Scan a Slurm log for submitit attempt markers and cancellation/error lines."""
    data, findings = read_bytes_capped(path, rel_path, MAX_SLURM_BYTES)
    if not data:
        return None, tuple(findings)
    text, more = decode_text(data, rel_path)
    attempts = tuple((int(m[2]), int(m[3]), bool(m[1])) for m in _ATTEMPT.finditer(text))
    job = re.search(r"slurm-(\d+)", path.name)
    return (SlurmLog(rel_path, job[1] if job else None, attempts, _problems(text), _segments(text)),
            tuple(findings + more))
