"""trainer_state.json of HF Trainer runs: safe parsing, salvage of damaged files, log_history to series."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...model import Finding, ScalarSeries, Severity, make_series
from .._common import decode_text, file_finding, read_bytes_capped, read_json, scan_json_nesting

STATE_NAME = "trainer_state.json"
SUMMARY_KEYS = ("train_runtime", "train_loss", "train_samples_per_second", "train_steps_per_second")


@dataclass(slots=True)
class StateDoc:
    """A parsed (or salvaged) trainer_state.json."""

    rel_path: str
    fields: dict[str, Any]
    history: list[dict[str, Any]]
    damaged: bool = False
    """True when the rows were salvaged from a cut or invalid file."""


def _cut_short(text: str) -> bool:
    """True when JSON text ends inside a string or with brackets still open (a cut write)."""
    _worst, depth, in_string = scan_json_nesting(text)
    return in_string or depth > 0


def salvage_state(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Recover top-level scalars and whole log_history rows from a cut or damaged state file."""
    fields: dict[str, Any] = {}
    # HF writes with indent=2: top-level keys are the lines indented by exactly two spaces.
    for match in re.finditer(r'^  "(\w+)": (.+?),?$', text, re.M):
        try:
            fields[match.group(1)] = json.loads(match.group(2))
        except ValueError:
            pass
    rows: list[dict[str, Any]] = []
    start = text.find('"log_history"')
    pos = text.find("[", start) + 1 if start >= 0 else 0
    decoder = json.JSONDecoder()
    while start >= 0 and pos > 0:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            row, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        if not isinstance(row, dict):
            break
        rows.append(row)
    return fields, rows


def read_state(path: Path, rel_path: str) -> tuple[StateDoc | None, list[Finding]]:
    """Read one trainer_state.json; damaged files yield salvaged rows and a finding naming the file."""
    result = read_json(path, rel_path)
    findings = list(result.findings)
    data = result.data
    if data is None:
        if not any(f.code == "file.invalid-json" for f in findings):
            return None, findings
        raw, _ = read_bytes_capped(path, rel_path, 64 * 1024 * 1024)
        text, _ = decode_text(raw, rel_path)
        truncated = _cut_short(text)
        fields, rows = salvage_state(text)
        if truncated:
            findings = [f for f in findings if f.code != "file.invalid-json"]
            findings.append(file_finding(
                "file.truncated", rel_path, f"{rel_path} ends mid-document; {len(rows)} complete log_history rows "
                "recovered", "The file was cut while being written (job killed during a save?)."))
        elif rows or fields:
            findings.append(file_finding("file.corrupt", rel_path, f"{rel_path}: recovered {len(rows)} "
                                         "log_history rows from damaged JSON", severity=Severity.INFO))
        return (StateDoc(rel_path, fields, rows, damaged=True) if fields or rows else None), findings
    if not isinstance(data, dict):
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path} is not a JSON object"))
        return None, findings
    history = data.get("log_history")
    if not isinstance(history, list):
        findings.append(file_finding("file.corrupt", rel_path, f"{rel_path} has no log_history list",
                                     "No logged metrics can be read from this state file."))
        history = []
    rows = [row for row in history if isinstance(row, dict)]
    if len(rows) != len(history):
        findings.append(file_finding("file.corrupt", rel_path,
                                     f"{rel_path}: {len(history) - len(rows)} log_history entries are not objects"))
    return StateDoc(rel_path, data, rows), findings


def as_float(value: Any) -> float | None:
    """A float for JSON numbers (NaN/inf kept), None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def as_int(value: Any) -> int | None:
    """An int for integral JSON numbers, else None."""
    number = as_float(value)
    return int(number) if number is not None and math.isfinite(number) and number == int(number) else None


_EXACT = 2**53
"""Integers up to this size are the same after ``as_int`` (a float holds them exactly)."""


def as_step(value: Any) -> int | None:
    """``as_int(value)``, without the float round trip for the plain integers steps are."""
    if value.__class__ is int and -_EXACT <= value <= _EXACT:
        return value  # type: ignore[no-any-return]
    return as_int(value)


def hf_tag(key: str) -> str:
    """The tag HF's TensorBoard/W&B callbacks show for a log key (eval_loss -> eval/loss, loss -> train/loss)."""
    for prefix in ("eval", "test"):
        if key.startswith(prefix + "_"):
            return f"{prefix}/{key[len(prefix) + 1:]}"
    return f"train/{key}"


_SUMMARY_SET = frozenset(SUMMARY_KEYS)


def is_summary_row(row: Mapping[str, Any]) -> bool:
    """True for the end-of-training row (train_runtime, train_loss, ...)."""
    return not _SUMMARY_SET.isdisjoint(row)


def history_series(state: StateDoc) -> tuple[list[ScalarSeries], dict[str, float]]:
    """Series keyed by global step from log_history, plus the last summary row."""
    points: dict[str, tuple[list[int], list[float]]] = {}
    summary: dict[str, float] = {}
    tags: dict[str, str] = {}  # log key -> its tag
    for row in state.history:
        step = as_step(row.get("step"))
        if step is None:
            continue
        if is_summary_row(row):
            summary = {k: v for k, v in ((k, as_float(v)) for k, v in row.items()) if v is not None}
            continue
        for key, raw in row.items():
            value = as_float(raw)
            if key == "step" or value is None:
                continue
            tag = tags.get(key)
            if tag is None:
                tag = tags[key] = hf_tag(key)
            steps, values = points.setdefault(tag, ([], []))
            # Eval rows repeat the epoch of the train row at the same step: keep one point.
            if steps and steps[-1] == step and (values[-1] == value or (value != value and values[-1] != values[-1])):
                continue
            steps.append(step)
            values.append(value)
    series = [make_series(tag, s, v, None, state.rel_path) for tag, (s, v) in points.items()]
    return series, summary


def history_segments(state: StateDoc | None) -> list[tuple[int, int]]:
    """Step ranges of log_history split where the step goes backwards (two attempts in one history)."""
    steps = [s for s in (as_step(r.get("step")) for r in (state.history if state else [])) if s is not None]
    out: list[tuple[int, int]] = []
    for i, step in enumerate(steps):
        if i == 0 or step < steps[i - 1]:
            out.append((step, step))
        else:
            out[-1] = (out[-1][0], max(out[-1][1], step))
    return out


def _differs(value: float | None, reference: float) -> bool:
    """True when a logged value disagrees with the reference (NaN equals NaN here)."""
    if value is None:
        return False
    return not (value == reference or (math.isnan(value) and math.isnan(reference)))


_CONFLICT_KEYS = ("loss", "eval_loss", "grad_norm")


def history_conflicts(primary: StateDoc, others: list[StateDoc]) -> list[tuple[int, int]]:
    """Step ranges where a checkpoint's log_history holds other values than the primary one (another attempt)."""
    reference: dict[tuple[int, str], float] = {}
    for row in primary.history:
        step = as_step(row.get("step"))
        for key in _CONFLICT_KEYS:
            value = as_float(row.get(key))
            if step is not None and value is not None:
                reference.setdefault((step, key), value)
    ranges = []
    for state in others:
        low = high = None
        for row in state.history:
            step = as_step(row.get("step"))
            if step is None:
                continue
            for key in _CONFLICT_KEYS:
                logged = reference.get((step, key))  # a float when present
                if logged is not None and _differs(as_float(row.get(key)), logged):
                    low, high = (step, step) if low is None or high is None else (min(low, step), max(high, step))
        if low is not None and high is not None:
            ranges.append((low, high))
    return ranges
