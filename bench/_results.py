"""Figures a benchmark measured, kept as JSON under ``bench/results/`` so the README's table is regenerated
from the last real run of each benchmark (``python bench/report.py``), never typed in by hand.

Each figure is one row: our median against the reference's median, measured side by side in one run, wall and
CPU time (a shared machine inflates wall time; CPU time shows the work), the issue's target and whether the
row meets it on wall and on CPU time. The file also records when, at which commit, and the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ENV = "PIMM_INSPECT_BENCH_RESULTS"
"""Environment variable naming another results folder (a smoke run's), as ``--results-dir`` does."""


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


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--results-dir DIR``: where the figures go (default: $PIMM_INSPECT_BENCH_RESULTS, else bench/results/)."""
    parser.add_argument("--results-dir", type=Path, default=None,
                        help=f"write the figures' JSON here (default: ${ENV}, else bench/results/)")


def results_dir(chosen: Path | None = None) -> Path:
    """The folder figures are written to: ``chosen``, else $PIMM_INSPECT_BENCH_RESULTS, else bench/results/."""
    if chosen is not None:
        return Path(chosen)
    return Path(os.environ[ENV]) if os.environ.get(ENV) else RESULTS


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def document(bench: str, title: str, figures: list[Figure], command: str) -> dict:
    """The JSON document of one benchmark run: its figures and when, where and how they were measured."""
    for f in figures:
        if not f.row or not isinstance(f.ours_s, (int, float)) or not math.isfinite(f.ours_s):
            raise ValueError(f"{bench}: figure {f.row!r} has no finite time ({f.ours_s!r})")
        if f.reference is None and (f.ref_s is not None or f.ref_cpu_s is not None):
            raise ValueError(f"{bench}: figure {f.row!r} has reference times but names no reference")
    # A time not measured (NaN) is written as null, shown as "-".
    figures = [replace(f, ours_cpu_s=_finite(f.ours_cpu_s), ref_s=_finite(f.ref_s), ref_cpu_s=_finite(f.ref_cpu_s))
               for f in figures]
    return {"bench": bench, "title": title, "command": command, "commit": _commit(),
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
            "figures": [dict(asdict(f), ratio=f.ratio, cpu_ratio=f.cpu_ratio) for f in figures]}


def save(bench: str, title: str, figures: list[Figure], command: str, directory: Path | None = None) -> Path:
    """Write ``<results dir>/<bench>.json`` (the README table's source for this benchmark)."""
    folder = results_dir(directory)
    folder.mkdir(parents=True, exist_ok=True)
    doc = document(bench, title, figures, command)
    path = folder / f"{bench}.json"
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    partial.replace(path)
    print(f"figures written to {path}", file=sys.stderr, flush=True)
    return path
