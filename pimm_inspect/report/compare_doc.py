"""``compare --json``: the comparisons of ``analysis.compare`` as one JSON document (schema_version 1, see README).

Values are exact: a float is written as the shortest text that reads back to the same double, NaN and infinities as
the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (as ``export --format json``), a copy that does not exist as
``null``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..analysis.compare import AttemptsComparison, CopyTable, SideBySide, SidesComparison
from ..analysis.names import encodable_text, name_text
from .json_doc import SCHEMA_VERSION, run_path


def number(value: float) -> float | str:
    """A float as JSON holds it exactly: itself when finite, else ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _differences(table: SideBySide | CopyTable) -> dict[str, Any]:
    return {"max_abs_diff": table.max_abs_diff, "max_abs_diff_step": table.max_abs_diff_step,
            "max_rel_diff": table.max_rel_diff}


def _side_tag(table: SideBySide) -> dict[str, Any]:
    rows = [{"step": step, "values": [number(v) for v in values], "abs_diff": number(absolute),
             "rel_diff": number(relative)}
            for step, values, absolute, relative in zip(table.steps.tolist(), table.values.tolist(),
                                                        table.abs_diff.tolist(), table.rel_diff.tolist())]
    return {"tag": encodable_text(table.tag), "sources": list(table.kinds), "points": list(table.points),
            "shared_steps": len(rows), **_differences(table), "rows": rows}


def sides_document(comparison: SidesComparison, base: Path) -> dict[str, Any]:
    """``compare RUN RUN...`` (and ``--attempt N``): the sides, then per tag every side holds its shared steps."""
    return {
        "schema_version": SCHEMA_VERSION,
        "compare": "sides",
        "policy": comparison.policy,
        "sides": [{"label": side.label, "path": run_path(side.run, base), "name": name_text(side.run.name),
                   "attempt": side.attempt} for side in comparison.sides],
        "tags": [_side_tag(table) for table in comparison.tags],
        "unshared": [{"tag": encodable_text(tag), "sides": list(holders)} for tag, holders in comparison.partial],
    }


def _copy_tag(table: CopyTable) -> dict[str, Any]:
    rows = []
    for i, step in enumerate(table.steps.tolist()):
        values = [number(float(v)) if held else None for v, held in zip(table.values[i], table.present[i])]
        rows.append({"step": step, "values": values, "copies": int(table.present[i].sum()),
                     "abs_diff": number(float(table.abs_diff[i])), "rel_diff": number(float(table.rel_diff[i]))})
    return {"tag": encodable_text(table.tag), "per_step": table.per_step, "source": table.source,
            "writers": list(table.writers),
            **_differences(table), "rows": rows}


def attempts_run(comparison: AttemptsComparison, base: Path) -> dict[str, Any]:
    """One run of ``compare --attempts --json``: its attempts, and per replayed range the copies of each tag."""
    run = comparison.run
    return {
        "path": run_path(run, base),
        "name": name_text(run.name),
        "attempts": [{"index": a.index, "first_step": a.first_step, "last_step": a.last_step, "origin": a.origin,
                      "restore_step": a.restore_step} for a in run.attempts],
        "replayed": [{"first_step": r.replayed.first_step, "last_step": r.replayed.last_step,
                      "copies": r.replayed.copies, "attempts": list(r.replayed.attempts),
                      "paths": [name_text(p) for p in r.replayed.paths],
                      "tags": [_copy_tag(table) for table in r.tags]} for r in comparison.ranges],
    }


def attempts_document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``compare RUN... --attempts --json``: one entry per run (see ``attempts_run``)."""
    return {"schema_version": SCHEMA_VERSION, "compare": "attempts", "runs": runs}
