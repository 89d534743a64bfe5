"""Small accessors the checks share: config lookups, source kinds, step ranges."""

from __future__ import annotations

from typing import Any

from ..model import Run
from .curves import SOURCE_PRIORITY, source_kind

__all__ = ["SOURCE_PRIORITY", "source_kind", "fmt_range", "resolved_config", "stale_event_files", "uses_wandb",
           "other_wandb_runs"]


def resolved_config(run: Run) -> dict[str, Any]:
    """The resolved config as a dict ({} when absent)."""
    doc = run.config("resolved_config")
    return dict(doc.data) if doc is not None and isinstance(doc.data, dict) else {}


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


def stale_event_files(run: Run) -> set[str]:
    """Event files whose first record predates this run's creation: left over from an earlier run."""
    return {f.path for f in run.event_files if f.stale}


def other_wandb_runs(run: Run, a: int, b: int) -> bool:
    """True when attempts ``a`` and ``b`` are W&B folders of two W&B runs: one id, two projects (entity/project), two
    histories. Their steps are not one training's: no gap or replay lies between them."""
    from ..sources.wandb.link_rules import id_projects  # only for runs with W&B folders

    if not run.wandb_runs:
        return False
    by_path = {w.path: w for w in run.wandb_runs}
    places = []
    for index in (a, b):
        attempt = next((att for att in run.attempts if att.index == index), None)
        folders = [by_path[p] for p in (attempt.sources if attempt is not None else ()) if p in by_path]
        place = id_projects((w.entity, w.project) for w in folders)
        if len(place) != 1:
            return False
        places.append(place[0])
    return places[0] != places[1]
