"""Reader for PyTorch Lightning's ``CSVLogger`` history: ``<save_dir>/<name>/version_<N>/metrics.csv``.

Lightning's ``ExperimentWriter`` writes one row per ``log_metrics(metrics, step)`` call: a ``step`` column (the
trainer's global step) and one column per metric ever logged, a cell left empty where the row's call did not log
that metric (the header is rewritten whole when a new metric appears). There is no clock: points carry no wall time.
Each metric column becomes one series (``epoch`` included, as the TensorBoardLogger logs it); ``step`` is the x axis.
Cells that are no number (a test-tube ``created_at`` time stamp) are skipped and counted in one finding.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...model import Finding, ScalarSeries, Severity
from .._common import decode_text, file_finding, read_bytes_capped
from .._limits import TagCap
from ..protocol import Read

MAX_CSV_BYTES = 256 * 1024 * 1024
"""Bytes of ``metrics.csv`` read (a million steps of ten metrics is about 100 MiB); beyond, ``file.truncated``."""
STEP_COLUMN = "step"
MAX_STEP = 2**63 - 1
"""Steps are stored as int64: a cell beyond it (``1e30``) is a row with no step number, not a failed read."""


@dataclass(frozen=True)
class CsvMetricsResult:
    """Everything read from one ``metrics.csv``."""

    series: dict[str, ScalarSeries]
    """Column -> points in row order (not sorted or deduplicated); source is the rel_path."""
    rows: int
    """Data rows read (those with a step)."""
    columns: tuple[str, ...]
    """The header as written."""
    findings: tuple[Finding, ...]


def read(path: Path, rel_path: str) -> Read[CsvMetricsResult]:
    """Parse ``metrics.csv``; a file without a ``step`` column is named in a finding and gives no series."""
    data, findings = read_bytes_capped(path, rel_path, MAX_CSV_BYTES)
    if not data:
        return Read(None, tuple(findings), 0)
    if not data.endswith(b"\n") and b"\n" in data:
        data = data[:data.rindex(b"\n") + 1]  # a row still being written (or cut by the cap) is not read
    text, decode_findings = decode_text(data, rel_path)
    findings += decode_findings
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or STEP_COLUMN not in header:
        findings.append(file_finding(
            "file.unsupported", rel_path, f"{rel_path} has no '{STEP_COLUMN}' column; its rows are not read",
            "Lightning's CSVLogger writes a 'step' column beside the metrics; without it no point has a step.",
            severity=Severity.INFO))
        return Read(None, tuple(findings), len(data))
    step_at = header.index(STEP_COLUMN)
    cap = TagCap()
    columns = [(i, cap.admit(name)) for i, name in enumerate(header) if i != step_at and name]
    kept = [(i, name) for i, name in columns if name is not None]
    refused = [i for i, name in columns if name is None]
    points: dict[str, tuple[list[int], list[float]]] = {name: ([], []) for _i, name in kept}
    rows = no_step = not_numbers = 0
    for row in reader:
        if step_at >= len(row):
            no_step += bool(row)
            continue
        try:
            step = int(float(row[step_at]))
        except (ValueError, OverflowError):
            no_step += 1
            continue
        if not -MAX_STEP <= step <= MAX_STEP:
            no_step += 1
            continue
        rows += 1
        cap.dropped_points += sum(1 for i in refused if i < len(row) and row[i])
        for i, name in kept:
            cell = row[i] if i < len(row) else ""
            if not cell:
                continue
            try:
                value = float(cell)
            except ValueError:
                not_numbers += 1
                continue
            steps, values = points[name]
            steps.append(step)
            values.append(value)
    too_many = cap.finding(rel_path, "columns")
    if too_many is not None:
        findings.append(too_many)
    if no_step:
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: {no_step:,} row(s) with no step number "
                                     "were not read", severity=Severity.INFO))
    if not_numbers:
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: {not_numbers:,} cell(s) that are no "
                                     "number were not read", severity=Severity.INFO))
    series = {name: ScalarSeries(tag=name, steps=np.asarray(steps, dtype=np.int64),
                                 values=np.asarray(values, dtype=np.float64),
                                 wall_times_s=np.full(len(steps), np.nan), source=rel_path)
              for name, (steps, values) in points.items() if steps}
    result = CsvMetricsResult(series=series, rows=rows, columns=tuple(header), findings=tuple(findings))
    return Read(result, result.findings, len(data))
