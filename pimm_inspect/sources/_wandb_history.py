"""W&B history rows to series: key flattening, step metrics, step-metric carry-forward."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import ScalarSeries, make_series
from ._limits import json_over_limit

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class MetricDefinition:
    """One ``define_metric`` declaration as recorded."""

    name: str | None
    glob: str | None
    step_metric: str | None
    hidden: bool = False
    step_sync: bool = False


def loads(text: str) -> Any:
    """JSON-decode a ``value_json`` (W&B writes NaN/Infinity literally); raw text if invalid, a marker if over the limits."""
    if len(text) > 4096 and json_over_limit(text):
        return f"<{len(text)}-character value over the JSON limits: not read>"
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _as_float(value: Any) -> float:
    """A float for a JSON number (huge integers become +-inf instead of raising)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


class History:
    """Accumulates history rows compactly: per key the row indices and values."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.timestamps: list[float] = []
        self.runtimes: list[float] = []
        self.columns: dict[str, tuple[list[int], list[Any]]] = {}

    def add(self, history: Any) -> None:
        row = len(self.steps)
        step = history.step.num
        ts = rt = math.nan
        columns = self.columns
        for item in history.item:
            key = item.key or ".".join(item.nested_key)
            text = item.value_json
            try:
                # Fast path: nearly every value is a plain JSON number (float() also takes NaN/Infinity).
                value: Any = float(text)
            except ValueError:
                value = loads(text)
            if key == "_step":
                try:
                    candidate = int(text)
                except ValueError:
                    continue
                if _INT64_MIN <= candidate <= _INT64_MAX:
                    step = candidate
            elif key == "_timestamp":
                ts = value if type(value) is float else ts
            elif key == "_runtime":
                rt = value if type(value) is float else rt
            elif isinstance(value, dict) and "_type" not in value:
                for sub_key, sub_value in _flatten(key, value):
                    col = columns.setdefault(sub_key, ([], []))
                    col[0].append(row)
                    col[1].append(_as_float(sub_value) if _is_number(sub_value) else sub_value)
            else:
                col = columns.setdefault(key, ([], []))
                col[0].append(row)
                # Numbers are stored as float right away: float64 series, no int64 overflow later.
                col[1].append(value)
        self.steps.append(step)
        self.timestamps.append(ts)
        self.runtimes.append(rt)


def _flatten(prefix: str, value: dict[str, Any]) -> list[tuple[str, Any]]:
    """Flatten a logged dict the way W&B names its keys (``a.b.c``)."""
    out: list[tuple[str, Any]] = []
    stack = [(prefix, value)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, dict) and "_type" not in node:
            stack.extend((f"{key}.{k}", v) for k, v in reversed(node.items()))
        else:
            out.append((key, node))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _step_metric_for(key: str, metrics: list[MetricDefinition]) -> str | None:
    """The step metric W&B plots ``key`` against: exact definition first, then the last matching glob."""
    exact = [m for m in metrics if m.name == key]
    if exact:
        return exact[-1].step_metric or None
    if key.startswith("_"):
        return None  # globs never apply to W&B's internal keys
    for metric in reversed(metrics):
        if metric.glob and metric.step_metric and fnmatch.fnmatchcase(key, metric.glob):
            return metric.step_metric
    return None


def build_series(history: History, metrics: list[MetricDefinition], source: str):
    """Series per numeric key, stepped by its step metric where declared, else ``_step``."""
    n_rows = len(history.steps)
    steps = np.asarray(history.steps, dtype=np.int64)
    wall = np.asarray(history.timestamps, dtype=np.float64)
    series: list[ScalarSeries] = []
    x_axis: dict[str, str] = {}
    non_scalar: list[str] = []
    carried: dict[str, np.ndarray | None] = {}
    for key, (rows, values) in history.columns.items():
        if not all(type(v) is float for v in values):
            non_scalar.append(key)
            continue
        row_idx = np.asarray(rows, dtype=np.int64)
        vals = np.asarray(values, dtype=np.float64)
        axis = _step_metric_for(key, metrics)
        x = steps[row_idx]
        if axis and axis != key:
            if axis not in carried:
                carried[axis] = _carry_forward(history.columns.get(axis), n_rows)
            metric_steps = carried[axis]
            if metric_steps is not None:
                picked = metric_steps[row_idx]
                keep = ~np.isnan(picked)
                row_idx, vals, x = row_idx[keep], vals[keep], picked[keep].astype(np.int64)
            else:
                axis = None
        x_axis[key] = axis if axis and axis != key else "_step"
        series.append(make_series(key, x, vals, wall[row_idx], source))
    return series, x_axis, non_scalar


def _carry_forward(column: tuple[list[int], list[Any]] | None, n_rows: int) -> np.ndarray | None:
    """Step-metric value per row, carried forward as W&B's step_sync does; None if not integral."""
    out = np.full(n_rows, np.nan)
    if column is None:
        return out
    rows, values = column
    if not all(type(v) is float and v.is_integer() and abs(v) < 2**63 for v in values):
        return None
    out[np.asarray(rows, dtype=np.int64)] = np.asarray(values, dtype=np.float64)
    # Forward-fill: index of the last defined row at or before each row.
    idx = np.where(~np.isnan(out), np.arange(n_rows), -1)
    np.maximum.accumulate(idx, out=idx)
    filled = np.where(idx >= 0, out[np.maximum(idx, 0)], np.nan)
    return filled
