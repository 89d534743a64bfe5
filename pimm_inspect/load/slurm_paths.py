"""Where a run's Slurm log lives when it is not beside the run (spec section 7: ``<repo_root>/slurm_logs/``).

pimm's submit writes ``#SBATCH --output=<repo>/slurm_logs/slurm-%j.out`` into ``launch.sbatch``; the job id
is in the code snapshot's ``.pimm_snapshot_complete_<jobid>`` marker and in the structured logs. With both,
the log can be found on the same filesystem, read-only, as any other file of the run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_MARKER = re.compile(r"^\.pimm_snapshot_complete_(\d+)$")
_TOKEN = re.compile(r"%(\d*)([A-Za-z%])")
MAX_CANDIDATES = 8
"""At most this many Slurm logs are read from outside the run directory."""


def job_ids(root: Path, rank_logs: list[Any]) -> list[str]:
    """Slurm job ids the run's own files name: the code-snapshot markers, then the structured logs."""
    found: list[str] = []
    try:
        names = sorted(os.listdir(root / "code"))
    except OSError:
        names = []
    for name in names:
        match = _MARKER.match(name)
        if match and match[1] not in found:
            found.append(match[1])
    for log in rank_logs:
        for job in getattr(log, "job_ids", ()):
            if job.isdigit() and job not in found:
                found.append(job)
    return found


def _expand(pattern: str, job: str, job_name: str | None) -> str:
    """The file name Slurm made from ``pattern`` for ``job``; ``*`` stands for tokens the run cannot tell
    (node, array index, user, ...), to be globbed."""

    def one(match: re.Match) -> str:
        code = match[2]
        if code in ("j", "A"):
            return job
        if code == "x" and job_name:
            return job_name
        return "%" if code == "%" else "*"

    return _TOKEN.sub(one, pattern)


def outside_slurm_logs(root: Path, sbatch: Any, metadata: dict | None, rank_logs: list[Any]) -> list[Path]:
    """Existing Slurm log files of this run's jobs outside ``root``, by the paths pimm's launch wrote."""
    jobs = job_ids(root, rank_logs)
    if not jobs:
        return []
    cwd = metadata.get("cwd") if isinstance(metadata, dict) and isinstance(metadata.get("cwd"), str) else None
    patterns = []
    directives = getattr(sbatch, "directives", None) or {}
    for key in ("output", "error"):
        if directives.get(key):
            patterns.append(directives[key])
    if cwd:
        patterns.append("slurm_logs/slurm-%j.out")  # pimm's default resources.output
    inside = root.absolute()
    found: list[Path] = []
    for job in jobs:
        for pattern in patterns:
            path = Path(_expand(pattern, job, getattr(sbatch, "job_name", None)))
            if not path.is_absolute():
                if not cwd:
                    continue
                path = Path(cwd) / path
            matches = sorted(path.parent.glob(path.name))[:MAX_CANDIDATES] if "*" in path.name else [path]
            for candidate in matches:
                if inside in candidate.absolute().parents or candidate in found:
                    continue  # a log beside the run is read with the run's own files
                if os.path.isfile(candidate):
                    found.append(candidate)
            if len(found) >= MAX_CANDIDATES:
                return found
    return found
