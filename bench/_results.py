"""Figures a benchmark measured, kept as JSON under ``bench/results/`` so the README's table is regenerated
from the last real run of each benchmark (``python bench/report.py``), never typed in by hand.

Each figure is one row: our median against the reference's median, measured side by side in one run, wall and
CPU time (a shared machine inflates wall time; CPU time shows the work), the issue's target and whether the
row meets it on wall and on CPU time. The file also records when, at which commit, and the load average.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Figure:
    row: str
    """What was measured (input and size)."""
    ours_s: float
    """Our median wall seconds (whole process unless ``what`` says otherwise)."""
    ours_cpu_s: float | None = None
    reference: str | None = None
    """The reference reader or command, side by side in the same run."""
    ref_s: float | None = None
    ref_cpu_s: float | None = None
    target: str = ""
    """The issue's target for this row, in words (``<= 1 s``, ``>= 25x``)."""
    met_wall: bool | None = None
    met_cpu: bool | None = None
    what: str = "whole process"
    """What the seconds cover (whole process, reader work, time to first screen ...)."""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.ref_s / self.ours_s if self.ref_s and self.ours_s else None

    @property
    def cpu_ratio(self) -> float | None:
        return self.ref_cpu_s / self.ours_cpu_s if self.ref_cpu_s and self.ours_cpu_s else None


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def save(bench: str, title: str, figures: list[Figure], command: str) -> Path:
    """Write ``bench/results/<bench>.json`` (the README table's source for this benchmark)."""
    RESULTS.mkdir(exist_ok=True)
    doc = {"bench": bench, "title": title, "command": command, "commit": _commit(),
           "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
           "figures": [dict(asdict(f), ratio=f.ratio, cpu_ratio=f.cpu_ratio) for f in figures]}
    path = RESULTS / f"{bench}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
