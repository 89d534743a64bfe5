"""Reader for ``launch.sbatch`` (E1b+): the submitit batch script's #SBATCH directives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...model import Finding
from .._common import MAX_SHOWN_TEXT_BYTES, decode_text, read_bytes_capped
from ..protocol import Read


@dataclass(frozen=True, slots=True)
class SbatchInfo:
    """Directives of a batch script; repeated options keep their last value, as sbatch does."""

    path: str
    directives: dict[str, str] = field(default_factory=dict)
    """Option name without dashes (``job-name``, ``gres``) -> value ('' for flags like ``requeue``)."""
    text: str = ""

    @property
    def job_name(self) -> str | None:
        """The ``--job-name``/``-J`` value."""
        return self.directives.get("job-name")

    @property
    def requeue(self) -> bool:
        """True when the script asks Slurm to requeue on preemption/timeout."""
        return "requeue" in self.directives


_SHORT = {"J": "job-name", "N": "nodes", "n": "ntasks", "c": "cpus-per-task", "t": "time",
          "o": "output", "e": "error", "A": "account", "p": "partition", "q": "qos", "G": "gpus"}


def parse_directive(line: str) -> tuple[str, str] | None:
    """Parse one ``#SBATCH`` line into (long option name, value)."""
    body = line[len("#SBATCH"):].strip()
    if not body.startswith("-"):
        return None
    body = body.split(" #", 1)[0].strip()
    if body.startswith("--"):
        name, _, value = body[2:].partition("=")
        if not _ and " " in name:
            name, _, value = name.partition(" ")
        return name.strip(), value.strip()
    letter, value = body[1:2], body[2:].strip().lstrip("=").strip()
    return _SHORT.get(letter, letter), value


def read_sbatch(path: Path, rel_path: str) -> Read[SbatchInfo]:
    """Read a batch script's #SBATCH directives (the script is never run)."""
    data, findings = read_bytes_capped(path, rel_path, MAX_SHOWN_TEXT_BYTES)
    if not data:
        return Read(None, tuple(findings))
    text, more = decode_text(data, rel_path)
    directives: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#SBATCH"):
            parsed = parse_directive(line)
            if parsed:
                directives[parsed[0]] = parsed[1]
    return Read(SbatchInfo(rel_path, directives, text), tuple(findings + more))
