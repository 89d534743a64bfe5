"""Small accessors the checks share: reader facts kept in ``Run.extras``, config lookups."""

from __future__ import annotations

from typing import Any

from ..load.attempts import created_at_seconds
from ..model import Run, ScalarSeries

SOURCE_PRIORITY = ("tb_events", "wandb", "hf_trainer", "train_log")
"""Preferred origin of a tag's points: the metric writer first, the text log last."""


def extra(run: Run, key: str, default: Any = None) -> Any:
    """A reader result stored by the loader (None when that file kind is absent)."""
    value = run.extras.get(key) if run.extras else None
    return default if value is None else value


def segments(run: Run) -> list[Any]:
    """train.log attempt segments, or []."""
    log = extra(run, "train_log")
    return list(log.segments) if log is not None else []


def resolved_config(run: Run) -> dict[str, Any]:
    """The resolved config as a dict ({} when absent)."""
    doc = run.config("resolved_config")
    return dict(doc.data) if doc is not None and isinstance(doc.data, dict) else {}


def source_kind(run: Run, series: ScalarSeries) -> str:
    """The reader kind that produced a series."""
    for src in run.sources:
        if src.path == series.source:
            return src.kind
    if series.source.startswith("wandb") or "run-" in series.source:
        return "wandb"
    return "tb_events" if "tfevents" in series.source else "train_log"


def uses_wandb(run: Run) -> bool:
    """True when the run logged to W&B (config flag, checkpoint ids or local folders)."""
    cfg = resolved_config(run)
    if cfg.get("use_wandb") is True:
        return True
    if run.wandb.local_dirs:
        return True
    return any(ck.wandb_run_id for ck in run.checkpoints)


def fmt_range(first: int, last: int) -> str:
    """``51-75`` or ``51`` for a single step."""
    return f"{first}" if first == last else f"{first}-{last}"


def run_start_s(run: Run) -> float | None:
    """run_metadata.json's created_at (attempt 1's launch) as unix seconds, if recorded."""
    return created_at_seconds(run.provenance.created_at)


def stale_event_files(run: Run) -> set[str]:
    """Event files whose first record predates this run's creation: left over from an earlier run."""
    start = run_start_s(run)
    if start is None:
        return set()
    return {rel_path for rel_path, _name, result in extra(run, "tb_files", ())
            if result.first_wall_time_s is not None and result.first_wall_time_s < start - 300}
