"""Reader for a Slurm log (``slurm-<jobid>.out``) that sits next to a run (spec section 7)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...model import Finding, Severity
from .._common import UnreadableFile, file_finding, open_regular
from ..protocol import Read

MAX_SLURM_BYTES = 256 * 1024 * 1024
"""At most this much of a Slurm log is scanned (streamed: memory stays at one chunk)."""
CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
"""A longer line (no newline for a MiB) is cut there; the rest of it is skipped."""

_NODE_LINES = re.compile(r"\*\*\* (?:JOB|STEP) (\S+) ON (\S+) CANCELLED AT|^srun: error: ([^:\s]+): task", re.MULTILINE)
"""Lines that name the node: slurmstepd's ``*** JOB <id> ON <node> CANCELLED AT ...`` and srun's
``srun: error: <node>: task <n>: ...``."""
_LOG_NAME = re.compile(r"^slurm-(\d+)(?:_(\d+))?\.|^(\d+)_\d+_.*_(\d+)\.txt$")
"""``slurm-<jobid>.out``, an array task's ``slurm-<array job id>_<index>.out``, E0's ``%j_%n_%x_%a.txt``."""
NO_ARRAY_INDEX = 4294967294
"""What Slurm puts for ``%a`` in a job that is not an array task."""
MAX_NODE_CHARS = 128

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
    nodes: tuple[str, ...] = ()
    """Nodes this attempt's text names (slurmstepd's cancel line, srun's task errors), in order of appearance."""


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
    array_index: int | None = None
    """The array task index the file name carries (``slurm-<A>_<a>.out``); None for a job that is not an array task."""


def _problems(text: str) -> tuple[tuple[str, str], ...]:
    found = []
    for kind, pattern in _PROBLEMS:
        match = pattern.search(text)
        if match:
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            found.append((kind, text[line_start:line_end if line_end >= 0 else None].strip()[:300]))
    return tuple(found)


class _Scan:
    """The Slurm log's facts, gathered chunk by chunk (each chunk ends at a line end)."""

    def __init__(self) -> None:
        self.attempts: list[tuple[int, int, bool]] = []
        self.problems: dict[str, str] = {}
        self.segments: list[SlurmAttempt] = []
        self.current: tuple[int | None, int | None] = (None, None)
        self.requeued = False
        self.seg_problems: dict[str, str] = {}
        self.seg_text = False
        """True once the current segment holds any non-blank text."""
        self.seg_nodes: list[str] = []

    def feed(self, text: str) -> None:
        for kind, line in _problems(text):
            self.problems.setdefault(kind, line)
        position = 0
        for match in _ATTEMPT.finditer(text):
            self.attempts.append((int(match[2]), int(match[3]), bool(match[1])))
            if match[1]:
                continue
            self._piece(text[position:match.start()])
            self._close()
            self.current, self.seg_text = (int(match[2]), int(match[3])), True
            position = match.start()
        self._piece(text[position:])

    def _piece(self, piece: str) -> None:
        if not piece:
            return
        self.seg_text = self.seg_text or bool(piece.strip())
        self.requeued = self.requeued or "Requeueing pimm submitit attempt" in piece
        for kind, line in _problems(piece):
            self.seg_problems.setdefault(kind, line)
        for match in _NODE_LINES.finditer(piece):
            node = (match[2] or match[3] or "")[:MAX_NODE_CHARS]
            if node and node not in self.seg_nodes:
                self.seg_nodes.append(node)

    def _close(self) -> None:
        k, n = self.current
        if k is not None or self.seg_text:
            order = [kind for kind, _ in _PROBLEMS if kind in self.seg_problems]
            self.segments.append(SlurmAttempt(k, n, self.requeued, tuple((kind, self.seg_problems[kind])
                                                                         for kind in order), tuple(self.seg_nodes)))
        self.requeued, self.seg_problems, self.seg_text, self.seg_nodes = False, {}, False, []

    def result(self, rel_path: str, job: str | None, array_index: int | None = None) -> SlurmLog:
        self._close()
        order = [kind for kind, _ in _PROBLEMS if kind in self.problems]
        return SlurmLog(rel_path, job, tuple(self.attempts), tuple((k, self.problems[k]) for k in order),
                        tuple(self.segments), array_index)


def read_slurm_log(path: Path, rel_path: str) -> Read[SlurmLog]:
    """Scan a Slurm log for submitit attempt markers and cancellation/error lines, streaming (bounded memory)."""
    findings: list[Finding] = []
    scan = _Scan()
    read = 0
    bad_offset: int | None = None
    long_lines = 0
    try:
        with open_regular(path, rel_path) as fh:
            carry = b""
            skipping = False  # inside a line longer than MAX_LINE_BYTES, until its newline
            while read < MAX_SLURM_BYTES:
                block = fh.read(min(CHUNK_BYTES, MAX_SLURM_BYTES - read))
                if not block:
                    break
                start = read
                read += len(block)
                if skipping:
                    cut = block.find(b"\n")
                    if cut < 0:
                        continue
                    block, skipping = block[cut + 1:], False
                data = carry + block
                end = data.rfind(b"\n") + 1
                carry = data[end:]
                if len(carry) > MAX_LINE_BYTES:
                    long_lines += 1
                    data, carry, skipping = data[:end] + carry[:MAX_LINE_BYTES] + b"\n", b"", True
                    end = len(data)
                try:
                    text = data[:end].decode("utf-8")
                except UnicodeDecodeError as exc:
                    bad_offset = start + exc.start if bad_offset is None else bad_offset
                    text = data[:end].decode("utf-8", errors="replace")
                scan.feed(text)
            more = fh.read(1) if read >= MAX_SLURM_BYTES else b""
            if carry:
                scan.feed(carry.decode("utf-8", errors="replace"))
    except UnreadableFile as exc:
        return Read(None, (exc.finding,))
    except OSError as exc:
        return Read(None, (file_finding("file.unreadable", rel_path, f"{rel_path}: read failed ({exc.strerror})"),))
    if not read:
        return Read(None, (file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO),))
    if more:
        findings.append(file_finding("file.truncated", rel_path, f"{rel_path} is larger than "
                                     f"{MAX_SLURM_BYTES // (1024 * 1024)} MiB; only the start was read"))
    if bad_offset is not None:
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path} is not valid UTF-8 (first bad byte "
                                     f"near offset {bad_offset}); bad bytes replaced", severity=Severity.INFO))
    if long_lines:
        findings.append(file_finding("file.truncated", rel_path, f"{rel_path}: {long_lines} line(s) longer than "
                                     f"{MAX_LINE_BYTES // 1024} KiB cut there", severity=Severity.INFO))
    job, array_index = log_name_ids(path.name)
    return Read(scan.result(rel_path, job, array_index), tuple(findings))


def log_name_ids(name: str) -> tuple[str | None, int | None]:
    """(job id, array index) a Slurm log's file name carries; None for what it does not say."""
    match = _LOG_NAME.match(name)
    if match is None:
        legacy = re.search(r"slurm-(\d+)", name)
        return (legacy[1] if legacy else None), None
    job, index = (match[1], match[2]) if match[1] else (match[3], match[4])
    array_index = int(index) if index and len(index) <= 10 and int(index) != NO_ARRAY_INDEX else None
    return job, array_index
