"""Reader for pimm's per-rank structured logs (``structured_logs/*.jsonl*``, spec section 8)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...model import Finding, Severity
from .._common import UnreadableFile, file_finding, open_regular
from ..protocol import Read

MAX_LINE_BYTES = 1024 * 1024
"""Longer JSONL lines are counted as malformed without being parsed."""
MAX_NAME_CHARS = 256
"""Job ids, host and event names longer than this are not pimm's (kept out of the summary; hosts cut)."""

_NAME = re.compile(r"^(?P<source>[^.]+)\.global_rank_(?P<rank>\d+)\.(?P<stamp>\d{8}-\d{6}-\d{6})-(?P<tag>[A-Z0-9]{6})\.jsonl(?:\.(?P<seg>\d+))?$")


@dataclass(frozen=True, slots=True)
class RankLog:
    """Summary of one structured-log file (one rank of one process start)."""

    path: str
    rank: int | None
    source: str | None
    started: str | None
    """Process-start stamp from the file name (local time)."""
    records: int
    malformed: int
    truncated_last_line: bool
    attempts: tuple[int, ...]
    job_ids: tuple[str, ...]
    world_size: int | None
    host: str | None
    last_step: int | None
    last_event: str | None
    last_time_s: float | None
    open_spans: tuple[str, ...]
    errors: tuple[str, ...]
    """``<phase>_error`` event names seen."""


def read_rank_log(path: Path, rel_path: str) -> Read[RankLog]:
    """Stream one JSONL file, keeping only the summary facts a hang diagnosis needs."""
    name_match = _NAME.match(path.name)
    findings: list[Finding] = []
    records = malformed = 0
    attempts: list[int] = []
    job_ids: list[str] = []
    world_size = last_step = None
    host = last_event = None
    last_time = None
    open_stack: list[str] = []
    errors: list[str] = []
    truncated = False
    try:
        fh = open_regular(path, rel_path)
    except UnreadableFile as exc:
        return Read(None, (exc.finding,))
    with fh:
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            if len(raw) > MAX_LINE_BYTES:  # an over-long line is skipped without ever being held whole
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(MAX_LINE_BYTES)
                malformed += 1
                continue
            if not raw.endswith(b"\n"):
                truncated = True
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser's stack
                malformed += 1
                continue
            if not isinstance(rec, dict):
                malformed += 1
                continue
            records += 1
            attempt = rec.get("attempt")
            if isinstance(attempt, int) and attempt not in attempts:
                attempts.append(attempt)
            job = rec.get("job_id")
            job = str(job) if isinstance(job, (int, str)) and not isinstance(job, bool) else None
            if job is not None and len(job) <= MAX_NAME_CHARS and job not in job_ids:
                job_ids.append(job)
            if isinstance(rec.get("world_size"), int):
                world_size = rec["world_size"]
            if isinstance(rec.get("host_name"), str):
                host = rec["host_name"][:MAX_NAME_CHARS]
            if isinstance(rec.get("step"), int):
                last_step = rec["step"]
            if isinstance(rec.get("time"), (int, float)):
                last_time = float(rec["time"])
            event = rec.get("log_type_name")
            if isinstance(event, str) and len(event) <= MAX_NAME_CHARS:
                last_event = event
                if rec.get("log_type") == "event":
                    if event.endswith("_start"):
                        open_stack.append(event[:-6])
                    elif event.endswith("_end") or event.endswith("_error"):
                        phase = event.rsplit("_", 1)[0]
                        if phase in open_stack:
                            # Spans pair LIFO per phase, as pimm trace does.
                            idx = len(open_stack) - 1 - open_stack[::-1].index(phase)
                            del open_stack[idx]
                        if event.endswith("_error"):
                            errors.append(event)
    if records == 0 and malformed == 0:
        findings.append(file_finding("file.empty", rel_path, f"{rel_path} is empty", severity=Severity.INFO))
    if truncated:
        findings.append(file_finding(
            "file.truncated", rel_path, f"{rel_path}: last line is incomplete",
            "The process was killed mid-write or is still writing; the partial record was skipped.",
            severity=Severity.INFO))
    if malformed > (1 if truncated else 0):
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: {malformed} malformed JSONL line(s) skipped"))
    summary = RankLog(
        path=rel_path,
        rank=int(name_match["rank"]) if name_match else None,
        source=name_match["source"] if name_match else None,
        started=name_match["stamp"] if name_match else None,
        records=records, malformed=malformed, truncated_last_line=truncated,
        attempts=tuple(attempts), job_ids=tuple(job_ids), world_size=world_size, host=host,
        last_step=last_step, last_event=last_event, last_time_s=last_time,
        open_spans=tuple(open_stack), errors=tuple(errors),
    )
    return Read(summary, tuple(findings))
