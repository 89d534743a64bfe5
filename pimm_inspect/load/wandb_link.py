"""The run-level W&B identity (ids, link, sync command) and W&B launch provenance, from every local folder."""

from __future__ import annotations

from typing import Any

from ..model import CheckpointInfo, LogEvent, Provenance, WandbInfo
from .collect import Collected
from .wandb_order import ordered_folders


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def wandb_info(c: Collected, checkpoints: list[CheckpointInfo]) -> WandbInfo:
    """Ids, project, entity, link and one sync command covering every never-synced folder of the run."""
    runs = list(c.wandb_runs)
    ids: list[str] = []
    for run in runs:
        if run.run_id and run.run_id not in ids:
            ids.append(run.run_id)
    for ck in sorted(checkpoints, key=lambda k: (k.global_step or -1)):
        if ck.wandb_run_id and ck.wandb_run_id not in ids:
            ids.append(ck.wandb_run_id)
    if runs or ids:  # W&B link rules (no wandb import); a run without W&B folders or ids uses neither
        from ..sources.wandb.links import run_url, sync_command
    resolved = next((d.data for d in c.configs if d.kind == "resolved_config"), None) or {}
    links = [r.link for r in runs if r.link is not None]
    project = next((r.project for r in runs if r.project), None) or _str(resolved.get("wandb_project"))
    if project is None and resolved.get("use_wandb") and ids:
        project = "pimm"  # pimm's default W&B project (spec 4.4)
    entity = next((r.entity for r in runs if r.entity), None)
    entity_source = next((link.entity_source for link in links if link.entity), None)
    if entity is None and _str(resolved.get("wandb_entity")):
        entity, entity_source = _str(resolved.get("wandb_entity")), "resolved_config.json (wandb_entity)"
    base = next((r.base_url for r in runs if r.base_url), None) or "https://wandb.ai"
    name = next((r.display_name for r in runs if r.display_name), None) or _str(resolved.get("wandb_run_name"))
    local_dirs = tuple(r.rel_path for r in runs)
    modes = {link.mode for link in links}
    mode = None if not links else ("online" if "online" in modes else "offline" if "offline" in modes else "unknown")
    rejection = next((link.server_rejection for link in links if link.server_rejection), None)
    unsynced = [r for r in runs if r.link is not None and r.link.sync_command]
    sync = sync_command([c.root / r.rel_path for r in unsynced]) if unsynced else None
    url = after = note = None
    if rejection:
        note = next(link.note for link in links if link.server_rejection)
    elif sync:
        after = next((link.url_after_sync for link in links if link.url_after_sync), None)
        if after is None and ids and entity:
            after = run_url(base, entity, project, ids[0])
        note = (f"offline run never synced: {after} exists only after the sync" if after else
                "offline run never synced; no entity is recorded, so it goes to your default W&B entity")
    elif ids and entity and (project or not runs):
        url = next((r.url for r in runs if r.url and r.run_id == ids[0]), None) or run_url(base, entity, project, ids[0])
        note = next((link.note for link in links if link.note), None)
    elif ids:
        note = next((link.note for link in links if link.note), None) or (
            f"W&B run id {ids[0]} but no entity is recorded, so the link cannot be formed: "
            f"https://wandb.ai/<entity>/{project or '<project>'}/runs/{ids[0]}")
    return WandbInfo(run_ids=tuple(ids), project=project, entity=entity, base_url=base, display_name=name,
                     local_dirs=local_dirs, url=url, sync_command=sync, mode=mode, url_after_sync=after,
                     entity_source=entity_source, server_rejection=rejection, link_note=note)


def run_provenance(c: Collected) -> Provenance:
    """run_metadata.json's provenance, else the first W&B folder's files/wandb-metadata.json."""
    if c.provenance.source:
        return c.provenance
    ordered = ordered_folders(c.wandb_runs)
    return next((r.provenance for r in ordered if r.provenance is not None), c.provenance)


def wandb_events(c: Collected) -> list[LogEvent]:
    """Tracebacks in W&B console output (files/output.log), as events naming that file and line.

    The attempt is set where each folder is one attempt (a W&B-only run, or one id over several folders).
    """
    from .run_configs import folder_attempts

    attempts = folder_attempts(c)
    return [LogEvent("traceback", text, where, line_no, "ERROR", attempt=attempts.get(run.rel_path))
            for run in c.wandb_runs for where, line_no, text in run.tracebacks]
