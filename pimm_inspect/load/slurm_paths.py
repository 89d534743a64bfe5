"""Where a run's Slurm log lives when it is not beside the run (spec section 7: ``<repo_root>/slurm_logs/``).

pimm's submit writes ``#SBATCH --output=<repo>/slurm_logs/slurm-%j.out`` into ``launch.sbatch``; the job id
is in the code snapshot's ``.pimm_snapshot_complete_<jobid>`` marker and in the structured logs. With both,
the log can be found on the same filesystem, read-only, as any other file of the run.

Only pimm's own layout is read from outside the run: a regular file (not a link) named for one of the run's
job ids (``slurm-<jobid>.out``, or E0's ``<jobid>_...``) directly in a folder named ``slurm_logs``. Any other
file a run's ``launch.sbatch`` points at is named, never read, and a pattern is globbed only inside such a
``slurm_logs`` folder, so ``--output=/any/path/%j`` or ``--error=/dir/%u`` cannot make the tool quote or list
files the run does not own.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sources.slurm.rank_logs import RankLog
    from ..sources.slurm.sbatch import SbatchInfo

from .file_deps import note_probe

_MARKER = re.compile(r"^\.pimm_snapshot_complete_(\d+)$")
_TOKEN = re.compile(r"%(\d*)([A-Za-z%])")
MAX_CANDIDATES = 8
"""At most this many Slurm logs are read from outside the run directory."""


def job_ids(root: Path, rank_logs: list[RankLog]) -> list[str]:
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
        for job in log.job_ids:
            if job.isdigit() and job not in found:
                found.append(job)
    return found


def _expand(pattern: str, job: str, job_name: str | None) -> str:
    """The file name Slurm made from ``pattern`` for ``job``; ``*`` stands for tokens the run cannot tell
    (node, array index, user, ...), to be globbed."""

    def one(match: re.Match[str]) -> str:
        code = match[2]
        if code in ("j", "A"):
            return job
        if code == "x" and job_name:
            return job_name
        return "%" if code == "%" else "*"

    return _TOKEN.sub(one, pattern)


@dataclass
class OutsideLogs:
    """Slurm logs of this run's jobs outside its root: those in pimm's layout (read) and the others (named)."""

    read: list[Path] = field(default_factory=list)
    named: list[tuple[Path, str]] = field(default_factory=list)
    """(path or pattern, why it is not read)."""


def pimm_layout_log(path: Path, jobs: list[str]) -> bool:
    """True for a regular file (not a link) named for one of ``jobs`` directly inside a ``slurm_logs`` folder."""
    note_probe(path)  # looked at without listing its folder: a log that appears later is a change
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or Path(os.path.realpath(path.parent)).name != "slurm_logs":
        return False
    return any(path.name.startswith((f"slurm-{job}.", f"slurm-{job}_", f"{job}_", f"{job}.")) for job in jobs)


def outside_slurm_logs(root: Path, sbatch: SbatchInfo | None, metadata: dict[str, Any] | None,
                       rank_logs: list[RankLog]) -> OutsideLogs:
    """Slurm log files of this run's jobs outside ``root``, by the paths pimm's launch wrote (see the module doc)."""
    out = OutsideLogs()
    jobs = job_ids(root, rank_logs)
    if not jobs:
        return out
    cwd = metadata.get("cwd") if isinstance(metadata, dict) and isinstance(metadata.get("cwd"), str) else None
    patterns = []
    directives = sbatch.directives if sbatch is not None else {}
    for key in ("output", "error"):
        if directives.get(key):
            patterns.append(directives[key])
    if cwd:
        patterns.append("slurm_logs/slurm-%j.out")  # pimm's default resources.output
    inside = Path(os.path.realpath(root))
    for job in jobs:
        for pattern in patterns:
            path = Path(_expand(pattern, job, sbatch.job_name if sbatch is not None else None))
            if not path.is_absolute():
                if not cwd:
                    continue
                path = Path(cwd) / path
            if "*" in path.as_posix():
                if "*" in path.parent.as_posix() or Path(os.path.realpath(path.parent)).name != "slurm_logs":
                    _name(out, path, "a pattern outside the run and outside a slurm_logs folder; not searched")
                    continue
                try:
                    matches = sorted(path.parent.glob(path.name))[:MAX_CANDIDATES]
                except (OSError, ValueError):
                    matches = []
            else:
                matches = [path]
            for candidate in matches:
                real = Path(os.path.realpath(candidate))
                if real == inside or inside in real.parents or candidate in out.read:
                    continue  # a log beside the run is read with the run's own files
                if pimm_layout_log(candidate, jobs):
                    out.read.append(candidate)
                elif os.path.lexists(candidate):
                    _name(out, candidate, "outside the run and not pimm's slurm_logs/slurm-<jobid>.out (or a "
                          "link); not read")
            if len(out.read) >= MAX_CANDIDATES:
                return out
    return out


def _name(out: OutsideLogs, path: Path, why: str) -> None:
    if len(out.named) < MAX_CANDIDATES and all(p != path for p, _ in out.named):
        out.named.append((path, why))
