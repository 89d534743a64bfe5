"""W&B history rows to series: key flattening, step metrics, step-metric carry-forward."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...arrays import non_decreasing
from ...model import ScalarSeries, make_series
from .._limits import json_over_limit

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


class Column:
    """One history key: the rows it was logged in and its values (float64; NaN where not a number)."""

    __slots__ = ("_rows", "_values", "scalar")

    def __init__(self) -> None:
        self._rows: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self.scalar = True
        """Every value logged for the key is a number (else it holds media, text, tables...)."""

    def append(self, rows: np.ndarray, values: np.ndarray, scalar: bool) -> None:
        self._rows.append(rows)
        self._values.append(values)
        self.scalar = self.scalar and scalar

    @property
    def rows(self) -> np.ndarray:
        if len(self._rows) != 1:
            self._rows = [np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)]
        return self._rows[0]

    @property
    def values(self) -> np.ndarray:
        if len(self._values) != 1:
            self._values = [np.concatenate(self._values) if self._values else np.zeros(0)]
        return self._values[0]


class History:
    """Accumulates history rows compactly: numpy chunks per row field and per key."""

    def __init__(self) -> None:
        self._steps: list[np.ndarray] = []
        self._timestamps: list[np.ndarray] = []
        self._runtimes: list[np.ndarray] = []
        self.n_rows = 0
        self.columns: dict[str, Column] = {}

    @staticmethod
    def _joined(chunks: list[np.ndarray], dtype: Any) -> np.ndarray:
        if len(chunks) != 1:
            chunks[:] = [np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)]
        return chunks[0]

    @property
    def steps(self) -> np.ndarray:
        """int64 ``_step`` per row."""
        return self._joined(self._steps, np.int64)

    @property
    def timestamps(self) -> np.ndarray:
        return self._joined(self._timestamps, np.float64)

    @property
    def runtimes(self) -> np.ndarray:
        return self._joined(self._runtimes, np.float64)

    def add(self, history: Any) -> None:
        """One decoded HistoryRecord as a row."""
        step, ts, rt, entries = row_entries(((item.key or ".".join(item.nested_key), item.value_json)
                                             for item in history.item), history.step.num)
        rows = RowBatch()
        rows.add_python_row(0, step, ts, rt, entries)
        self.extend(rows)

    def extend(self, batch: "RowBatch") -> None:
        """Append a batch of rows (``batch.row`` numbers count from 0 within the batch)."""
        base = self.n_rows
        steps, ts, rt, row, o1, o2, key_codes, values, is_float, keys = batch.arrays()
        self._steps.append(steps)
        self._timestamps.append(ts)
        self._runtimes.append(rt)
        self.n_rows += len(steps)
        if not len(row):
            return
        # Codes with the same key string share a column.
        canon: dict[str, int] = {}
        remap = np.array([canon.setdefault(k, len(canon)) for k in keys], dtype=np.int64)
        names = list(canon)
        codes = remap[key_codes]
        order = _file_order(row, o1, o2)
        if order is not None:
            row, codes, values, is_float = row[order], codes[order], values[order], is_float[order]
        # Group entries by column (a stable counting sort: codes are small), columns in order of first use.
        grouped = np.argsort(codes.astype(np.uint16) if len(names) <= 1 << 16 else codes, kind="stable")
        counts = np.bincount(codes, minlength=len(names))
        bounds = np.concatenate([[0], np.cumsum(counts)])
        used = np.flatnonzero(counts)
        firsts = grouped[bounds[used]]
        for code in used[np.argsort(firsts, kind="stable")].tolist():
            pick = grouped[bounds[code]:bounds[code + 1]]
            col = self.columns.get(names[code])
            if col is None:
                col = self.columns[names[code]] = Column()
            col.append(row[pick] + base, values[pick], bool(is_float[pick].all()))


def _file_order(row: np.ndarray, o1: np.ndarray, o2: np.ndarray) -> np.ndarray | None:
    """The permutation putting entries in file order (row, item, sub-entry); None when they already are."""
    if len(row) < 2:
        return None
    if row.max() < 1 << 23 and o1.max() < 1 << 20 and o2.max() < 1 << 20 and min(row.min(), o1.min(), o2.min()) >= 0:
        key = (row << 40) | (o1 << 20) | o2
        if non_decreasing(key):
            return None
        return np.argsort(key, kind="stable")
    return np.lexsort((o2, o1, row))


class RowBatch:
    """Rows being gathered for ``History.extend``: numpy parts from the bulk decoder, Python rows from the parser."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self._codes: dict[str, int] = {}
        self.row_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        """(row numbers, step, timestamp, runtime)."""
        self.entry_parts: list[tuple[np.ndarray, ...]] = []
        """(row, item index, sub index, key code, value, is float)."""

    def code(self, key: str) -> int:
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = len(self.keys)
            self.keys.append(key)
        return code

    def add_python_row(self, row: int, step: int, ts: float, rt: float, entries: list[tuple[int, int, str, Any]]) -> None:
        self.row_parts.append((np.array([row], np.int64), np.array([step], np.int64), np.array([ts]), np.array([rt])))
        if entries:
            n = len(entries)
            self.entry_parts.append((
                np.full(n, row, np.int64), np.array([e[0] for e in entries], np.int64),
                np.array([e[1] for e in entries], np.int64), np.array([self.code(e[2]) for e in entries], np.int64),
                np.array([e[3] if type(e[3]) is float else math.nan for e in entries], np.float64),
                np.array([type(e[3]) is float for e in entries], bool)))

    def renumber(self, rank: np.ndarray) -> None:
        """Map the row numbers given so far (record indices) through ``rank``."""
        self.row_parts = [(rank[r], *rest) for r, *rest in self.row_parts]
        self.entry_parts = [(rank[r], *rest) for r, *rest in self.entry_parts]

    def arrays(self) -> tuple[Any, ...]:
        """(steps, timestamps, runtimes, the entry columns..., keys) of the batch, rows in record order."""
        if self.row_parts:
            rows, steps, ts, rt = (np.concatenate(p) for p in zip(*self.row_parts))
            order = np.argsort(rows, kind="stable")
            steps, ts, rt = steps[order], ts[order], rt[order]
        else:
            steps, ts, rt = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        if self.entry_parts:
            parts = [np.concatenate(p) for p in zip(*self.entry_parts)]
        else:
            parts = [np.zeros(0, np.int64)] * 4 + [np.zeros(0), np.zeros(0, bool)]
        return (steps, ts, rt, *parts, self.keys)


def row_entries(items: Iterable[tuple[str, str]], step: int) -> tuple[int, float, float, list[tuple[int, int, str, Any]]]:
    """One history row from its ``(key, value_json)`` items: step, timestamp, runtime, column entries."""
    ts = rt = math.nan
    entries: list[tuple[int, int, str, Any]] = []
    for index, (key, text) in enumerate(items):
        if key == "_step":
            try:
                candidate = int(text)
            except ValueError:
                continue
            if _INT64_MIN <= candidate <= _INT64_MAX:
                step = candidate
        elif key == "_timestamp":
            ts = _float_or(text, ts)
        elif key == "_runtime":
            rt = _float_or(text, rt)
        else:
            item_entries(index, key, text, entries)
    return step, ts, rt, entries


def _float_or(text: str, default: float) -> float:
    """``float(text)``; a JSON value that is no float leaves ``default``."""
    try:
        return float(text)
    except ValueError:
        value = loads(text)
        return value if type(value) is float else default


def item_entries(index: int, key: str, text: str, entries: list[tuple[int, int, str, Any]]) -> None:
    """Append the column entries of one history item (a key other than ``_step``/``_timestamp``/``_runtime``)."""
    try:
        # Fast path: nearly every value is a plain JSON number (float() also takes NaN/Infinity).
        value: Any = float(text)
    except ValueError:
        value = loads(text)
    if isinstance(value, dict) and "_type" not in value:
        for sub, (sub_key, sub_value) in enumerate(_flatten(key, value)):
            entries.append((index, sub, sub_key, _as_float(sub_value) if _is_number(sub_value) else sub_value))
    else:
        # Numbers are stored as float right away: float64 series, no int64 overflow later.
        entries.append((index, 0, key, value))


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


def build_series(history: History, metrics: list[MetricDefinition], source: str
                 ) -> tuple[list[ScalarSeries], dict[str, str], list[str]]:
    """Series per numeric key, stepped by its step metric where declared, else ``_step``."""
    n_rows = len(history.steps)
    steps = np.asarray(history.steps, dtype=np.int64)
    wall = np.asarray(history.timestamps, dtype=np.float64)
    series: list[ScalarSeries] = []
    x_axis: dict[str, str] = {}
    non_scalar: list[str] = []
    carried: dict[str, np.ndarray | None] = {}
    for key, column in history.columns.items():
        if not column.scalar:
            non_scalar.append(key)
            continue
        row_idx = column.rows
        vals = column.values
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


def _carry_forward(column: Column | None, n_rows: int) -> np.ndarray | None:
    """Step-metric value per row, carried forward as W&B's step_sync does; None if not integral."""
    out = np.full(n_rows, np.nan)
    if column is None:
        return out
    values = column.values
    if not column.scalar or not np.all(np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < 2**63)):
        return None
    out[column.rows] = values
    # Forward-fill: index of the last defined row at or before each row.
    idx = np.where(~np.isnan(out), np.arange(n_rows), -1)
    np.maximum.accumulate(idx, out=idx)
    filled = np.where(idx >= 0, out[np.maximum(idx, 0)], np.nan)
    return filled
