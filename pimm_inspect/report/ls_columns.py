"""The columns, sort keys and filters of ``ls`` (``--columns``, ``--sort``, ``--filter``), over the session's rows.

A column names one typed field of ``RunRow`` (or the row's masked config, or one tag's ``MetricSummary``) and gives
three renderings of that one value: the ``--json`` value, the text cell, and the sort value. Nothing is derived
here: every fact was decided when the row was made (``analysis.summary.run_row``).

Keys: the fixed names of ``FIXED`` (the ``ls --json`` field names), ``cfg.<key>`` (a key of the run's query config,
``a.b.c`` flattened, secrets masked), and ``last:TAG``, ``best:TAG``, ``min:TAG``, ``max:TAG`` (a scalar tag's value
at its last step, its best, smallest or largest finite value; best is the smallest for a tag whose name says lower
is better, ``analysis.metric_summary.lower_is_better``, else the largest). A sort key may start with ``-`` for
descending order; runs without the value sort last either way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.metric_summary import best_value
from ..analysis.run_filter import cfg_key, compile_run_filter, filter_error, row_text
from ..evidence import MetricSummary, RunRow
from ..model import Run
from .json_doc import best_metric_json, run_path
from .row_cells import last_logged_text
from .safe_text import clean, clean_name

Value = Callable[[RunRow, Path], Any]
Cell = Callable[[RunRow, Path], str]
METRIC_KINDS = ("last", "best", "min", "max")
"""The prefixes of a metric column: ``last:TAG`` and so on."""


def run_label(run: Run | RunRow, base: Path) -> str:
    """The run's path relative to what the user typed (its own name when that was the run itself), display-safe."""
    path = run_path(run, base)  # already by the one name escape
    return clean_name(run.name) if path == "." else clean(path, newlines=False)


@dataclass(frozen=True, slots=True)
class Column:
    """One ``ls`` column: its key (as typed), header, JSON value, text cell (display-safe, one line) and sort value
    (None: the run has none). The findings cell is drawn by ``text.counts_cell`` (its counts in colour):
    ``cell`` is None there."""

    key: str
    header: str
    value: Value
    cell: Cell | None
    sort: Value


def _text_of(value: Value) -> Cell:
    def cell(row: RunRow, base: Path) -> str:
        got = value(row, base)
        return "-" if got is None or got == "" else clean(got, newlines=False)
    return cell


def _fixed(key: str, header: str, value: Value, cell: Cell | None = None, sort: Value | None = None,
           drawn: bool = False) -> Column:
    return Column(key, header, value, None if drawn else (cell or _text_of(value)), sort or value)


FIXED: dict[str, Column] = {c.key: c for c in (
    _fixed("path", "run", lambda r, b: run_path(r, b), run_label),
    _fixed("name", "name", lambda r, _b: r.name),
    _fixed("kind", "kind", lambda r, _b: r.kind),
    _fixed("era", "era", lambda r, _b: r.era),
    _fixed("status", "status", lambda r, _b: r.status),
    _fixed("attempts", "attempts", lambda r, _b: r.attempts, lambda r, _b: str(r.attempts or "-")),
    _fixed("last_step", "last step", lambda r, _b: r.summary.last_step),
    _fixed("wandb_run_ids", "W&B id", lambda r, _b: list(r.wandb_run_ids),
           lambda r, _b: clean(", ".join(r.wandb_run_ids) or "-", newlines=False),
           lambda r, _b: ", ".join(r.wandb_run_ids) or None),
    _fixed("findings", "findings", lambda r, _b: {"error": r.errors, "warning": r.warnings, "info": r.infos},
           sort=lambda r, _b: (r.errors, r.warnings, r.infos), drawn=True),
    _fixed("errors", "errors", lambda r, _b: r.errors),
    _fixed("warnings", "warnings", lambda r, _b: r.warnings),
    _fixed("infos", "infos", lambda r, _b: r.infos),
    _fixed("best_metric", "best", lambda r, _b: best_metric_json(r),
           lambda r, _b: clean(r.best_metric.text, newlines=False) if r.best_metric else "-",
           lambda r, _b: r.best_metric.value if r.best_metric else None),
    _fixed("last_logged_at", "last log", lambda r, _b: r.last_logged_at,
           lambda r, _b: last_logged_text(r), lambda r, _b: r.summary.last_logged_s),
    _fixed("top_finding", "top finding", lambda r, _b: r.top_finding or None),
)}
DEFAULT_COLUMNS = ("path", "kind", "era", "status", "attempts", "last_step", "wandb_run_ids", "findings")
"""The ``ls`` table without ``--columns``."""


def default_columns() -> list[Column]:
    """The columns of the ``ls`` table without ``--columns``."""
    return [FIXED[key] for key in DEFAULT_COLUMNS]


class UnknownKey(ValueError):
    """A column or sort key that names nothing ``ls`` knows; the message lists the valid ones."""


def valid_keys() -> str:
    """Every key ``--columns`` and ``--sort`` accept, for an error message."""
    return ", ".join([*FIXED, "cfg.<key>", *(f"{kind}:<tag>" for kind in METRIC_KINDS)])


def _cfg_value(key: str) -> Value:
    def value(row: RunRow, _base: Path) -> Any:
        return next((v for k, v in row.config if k == key), _MISSING)
    return value


_MISSING: Any = object()
"""A config key the run does not have (a key it has may hold null)."""


def _cfg_column(spec: str) -> Column:
    raw = _cfg_value(spec[len("cfg."):])

    def value(row: RunRow, base: Path) -> Any:
        got = raw(row, base)
        return None if got is _MISSING else got

    def cell(row: RunRow, base: Path) -> str:
        got = raw(row, base)
        if got is _MISSING:
            return "-"
        return clean(got if isinstance(got, str) else json.dumps(got, ensure_ascii=False, default=str), newlines=False)

    def sort(row: RunRow, base: Path) -> Any:
        got = raw(row, base)
        return None if got is _MISSING or got is None else got

    return Column(spec, clean(spec, newlines=False), value, cell, sort)


def _metric_column(spec: str, kind: str, tag: str) -> Column:
    def pick(metric: MetricSummary) -> float | None:
        return {"last": metric.last, "min": metric.min, "max": metric.max}.get(kind) if kind != "best" \
            else best_value(metric)

    def number(row: RunRow, _base: Path) -> float | None:
        metric = row.metric(tag)
        return None if metric is None else pick(metric)

    def value(row: RunRow, base: Path) -> float | None:
        got = number(row, base)
        return got if got is not None and math.isfinite(got) else None

    def cell(row: RunRow, base: Path) -> str:
        got = number(row, base)
        return "-" if got is None else f"{got:.6g}"

    def sort(row: RunRow, base: Path) -> float | None:
        got = number(row, base)
        return None if got is None or math.isnan(got) else got

    return Column(spec, clean(spec, newlines=False), value, cell, sort)


def column(spec: str) -> Column:
    """The column a key names; ``UnknownKey`` naming the valid keys when it names none."""
    if spec in FIXED:
        return FIXED[spec]
    if spec.startswith("cfg.") and len(spec) > len("cfg."):
        return _cfg_column(spec)
    kind, colon, tag = spec.partition(":")
    if colon and kind in METRIC_KINDS and tag:
        return _metric_column(spec, kind, tag)
    raise UnknownKey(f"unknown column {spec!r}; valid: {valid_keys()}")


def parse_columns(specs: Iterable[str]) -> list[Column]:
    """``--columns a,b,c`` (the option may repeat) as columns, in order; empty items are skipped."""
    return [column(item.strip()) for spec in specs for item in spec.split(",") if item.strip()]


@dataclass(frozen=True, slots=True)
class SortKey:
    column: Column
    descending: bool


def parse_sort(specs: Iterable[str]) -> list[SortKey]:
    """``--sort KEY[,KEY]`` (the option may repeat): each key a column key, ``-KEY`` for descending."""
    keys = []
    for spec in specs:
        for item in (part.strip() for part in spec.split(",")):
            if item:
                descending = item.startswith("-")
                name = item[1:] if descending else item
                try:
                    keys.append(SortKey(column(name), descending))
                except UnknownKey:
                    raise UnknownKey(f"unknown sort key {name!r}; valid: {valid_keys()}") from None
    return keys


def _orderable(value: Any) -> tuple[Any, ...] | None:
    """A sort value every value of one key compares with: numbers first (as numbers), then text, then the rest."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return None if isinstance(value, float) and math.isnan(value) else (0, float(value))
    if isinstance(value, str):
        return (1, value.casefold(), value)
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return (0, value)
    return (2, json.dumps(value, sort_keys=True, default=str))


def sort_rows(rows: Sequence[RunRow], keys: Sequence[SortKey], base: Path, reverse: bool = False) -> list[RunRow]:
    """``rows`` ordered by ``keys`` (the first decides, later ones break ties, then the order given); ``reverse``
    turns every key's direction (without keys: the order given, reversed). Runs without a key's value come last."""
    out = list(rows)
    if not keys:
        return out[::-1] if reverse else out
    for key in reversed(keys):
        values = [_orderable(key.column.sort(row, base)) for row in out]
        present = [(v, row) for v, row in zip(values, out) if v is not None]
        missing = [row for v, row in zip(values, out) if v is None]
        present.sort(key=lambda pair: pair[0], reverse=key.descending != reverse)
        out = [row for _v, row in present] + missing
    return out


def filter_columns(expressions: Iterable[str]) -> list[Column]:
    """The ``cfg.<key>`` columns the ``--filter`` expressions compare (for ``absent_everywhere``)."""
    return [column(f"cfg.{key}") for e in expressions if (key := cfg_key(e)) is not None]


def row_filter(expressions: Iterable[str]) -> Callable[[RunRow, Path], bool]:
    """Every ``--filter`` expression must match (the UI's filter grammar, ``analysis.run_filter``, on the run's path
    as ``ls`` prints it); ``ValueError`` for one that cannot be used (an invalid ``/regex/``)."""
    tests = []
    for expression in expressions:
        problem = filter_error(expression)
        if problem is not None:
            raise ValueError(problem)
        tests.append(compile_run_filter(expression))

    def keep(row: RunRow, base: Path) -> bool:
        text = row_text(run_path(row, base), row)
        return all(test(text, row) for test in tests)

    return keep


def json_columns(row: RunRow, columns: Sequence[Column], base: Path) -> dict[str, Any]:
    """The ``columns`` object of an ``ls --json`` run: each requested column's value by its key."""
    return {c.key: c.value(row, base) for c in columns}


def absent_everywhere(rows: Sequence[RunRow], columns: Sequence[Column]) -> list[str]:
    """Notes for the ``cfg.`` and metric columns none of ``rows`` has (most likely a typo), naming the closest keys
    the runs do have; empty when every column is held by some run."""
    import difflib

    notes = []
    for c in columns:
        if c.key.startswith("cfg."):
            held = {key for row in rows for key, _v in row.config}
            wanted, what = c.key[len("cfg."):], "config key"
        elif c.key not in FIXED:
            held = {m.tag for row in rows for m in row.metrics}
            wanted, what = c.key.partition(":")[2], "scalar tag"
        else:
            continue
        if wanted not in held:
            close = difflib.get_close_matches(wanted, sorted(held), n=3)
            hint = f" (closest: {', '.join(close)})" if close else ""
            notes.append(f"no run has the {what} {clean(wanted, newlines=False)}{hint}")
    return notes
