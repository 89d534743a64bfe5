"""The run-level W&B identity (ids, link, sync command) and W&B launch provenance, from every local folder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..model import CheckpointInfo, LogEvent, Provenance, WandbInfo
from .collect import Collected
from .wandb_order import ordered_folders

if TYPE_CHECKING:
    from ..sources.wandb.reader import WandbRunResult


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def wandb_info(c: Collected, checkpoints: list[CheckpointInfo]) -> WandbInfo:
    """Ids, project, entity, link and one sync command covering every never-synced folder of the run.

    The link goes where the run's history is: the newest folder that logged rows names entity and project (one
    id used in two projects is two W&B runs; the note says so). Every part is vetted (``link_rules``).
    """
    runs = ordered_folders(c.wandb_runs)
    ids: list[str] = []
    for run in runs:
        if run.run_id and run.run_id not in ids:
            ids.append(run.run_id)
    for ck in sorted(checkpoints, key=lambda k: (k.global_step or -1)):
        if ck.wandb_run_id and ck.wandb_run_id not in ids:
            ids.append(ck.wandb_run_id)
    resolved = next((d.data for d in c.configs if d.kind == "resolved_config"), None) or {}
    if not runs and not ids:  # no W&B folder or id: no link rule applies (and none is imported)
        return WandbInfo(project=_str(resolved.get("wandb_project")), entity=_str(resolved.get("wandb_entity")),
                         entity_source="resolved_config.json (wandb_entity)" if _str(resolved.get("wandb_entity"))
                         else None, base_url="https://wandb.ai", display_name=_str(resolved.get("wandb_run_name")))
    from ..sources.wandb.link_rules import DEFAULT_BASE_URL, build_link, name_problem, sync_command

    logged = [r for r in runs if len(r.history_steps)]
    home = logged[-1] if logged else (runs[-1] if runs else None)
    """The folder whose place on the server the link names: the newest one holding history."""
    links = [r.link for r in runs if r.link is not None]
    refused = [reason for link in links for reason in link.refused]
    project = (home.project if home is not None and home.project else None) or next(
        (r.project for r in reversed(runs) if r.project), None) or _str(resolved.get("wandb_project"))
    if project is None and resolved.get("use_wandb") and ids:
        project = "pimm"  # pimm's default W&B project (spec 4.4)
    entity = (home.entity if home is not None and home.entity else None) or next(
        (r.entity for r in reversed(runs) if r.entity), None)
    entity_source = next((r.link.entity_source for r in ([home] if home is not None else []) + runs[::-1]
                          if r.link is not None and r.link.entity and r.link.entity == entity), None)
    if entity is None and _str(resolved.get("wandb_entity")):
        entity, entity_source = _str(resolved.get("wandb_entity")), "resolved_config.json (wandb_entity)"
        problem = name_problem("entity", entity) if entity else None
        if problem:
            refused.append(f"{problem} (resolved_config.json)")
    base = next((r.base_url for r in ([home] if home is not None else []) + runs if r.base_url), None) \
        or DEFAULT_BASE_URL
    name = next((r.display_name for r in runs if r.display_name), None) or _str(resolved.get("wandb_run_name"))
    local_dirs = tuple(r.rel_path for r in c.wandb_runs)
    modes = {link.mode for link in links}
    mode = None if not links else ("online" if "online" in modes else "offline" if "offline" in modes else "unknown")
    rejection = next((link.server_rejection for link in links if link.server_rejection), None)
    unsynced = [r for r in runs if r.link is not None and r.link.sync_command]
    sync = None
    if unsynced:
        sync, problem = sync_command([c.root / r.rel_path for r in unsynced])
        if problem and problem not in refused:
            refused.append(problem)
    spans = _projects(runs, ids[0]) if ids else []
    url = after = note = None
    if rejection:
        note = next(link.note for link in links if link.server_rejection)
    elif refused:
        note = "no link: " + "; ".join(dict.fromkeys(refused))
    elif sync:
        if ids and entity:
            after, _problems = build_link(base, entity, project, ids[0], "")
        note = (f"offline run never synced: {after} exists only after the sync" if after else
                "offline run never synced; no entity is recorded, so it goes to your default W&B entity")
    elif ids and entity and (project or not runs):
        folder_url = home.url if home is not None and home.url and home.run_id == ids[0] else None
        url = folder_url or build_link(base, entity, project, ids[0], "")[0]
        note = home.link.note if home is not None and home.link is not None and home.link.note else next(
            (link.note for link in links if link.note), None)
    elif ids:
        note = next((link.note for link in links if link.note), None) or (
            f"W&B run id {ids[0]} but no entity is recorded, so the link cannot be formed: "
            f"https://wandb.ai/<entity>/{quote(project, safe='') if project else '<project>'}/runs/"
            f"{quote(ids[0], safe='')}")
    if len(spans) > 1:
        where = ", ".join(spans)
        note = (f"W&B id {ids[0]} was used in {len(spans)} projects ({where}): these are {len(spans)} W&B runs; "
                f"the link is where the history is (the newest folder that logged rows)" + (f"; {note}" if note else ""))
    return WandbInfo(run_ids=tuple(ids), project=project, entity=entity, base_url=base, display_name=name,
                     local_dirs=local_dirs, url=url, sync_command=sync, mode=mode, url_after_sync=after,
                     entity_source=entity_source, server_rejection=rejection, link_note=note,
                     link_refused=tuple(dict.fromkeys(refused)))


def _projects(runs: list[WandbRunResult], run_id: str) -> list[str]:
    """``entity/project`` of every project the id was used in, oldest first (``link_rules.id_projects``)."""
    from ..sources.wandb.link_rules import id_projects  # only for runs with W&B folders

    return id_projects((run.entity, run.project) for run in runs if run.run_id == run_id)


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
