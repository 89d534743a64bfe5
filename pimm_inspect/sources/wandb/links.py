"""What one local W&B folder says about its place on the server: mode, entity, link, sync command, launch facts."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

from ...model import Provenance
from ._files import RunFiles
from .link_rules import (DEFAULT_BASE_URL, build_link, name_problem, parse_logged_link, run_url, sync_command,
                         vet_base)



@dataclass(frozen=True, slots=True)
class FolderLink:
    """The link facts of one W&B run folder."""

    mode: str
    """online (wandb-core streamed to a server), offline, or unknown (an online-mode folder with no sign of contact)."""
    entity: str | None
    entity_source: str | None
    """Run-relative file the entity was read from, with how (``run record``, ``settings``, ``finishing run``)."""
    base_url: str | None
    """The server as a vetted link base, when recorded (settings, a logged URL or API URL); None otherwise."""
    url: str | None
    """The run page as it exists now; None for never-synced offline runs and runs the server rejected."""
    url_after_sync: str | None
    """Where a never-synced offline run will be once ``wandb sync`` uploads it (entity known)."""
    sync_command: str | None
    """``wandb sync <absolute folder>`` for a never-synced offline folder."""
    server_rejection: str | None
    note: str | None
    """One line saying why there is no link, where the entity came from, or that the host is assumed."""
    refused: tuple[str, ...] = ()
    """Why a link or command was not formed from what the folder records (``wandb.link-refused``)."""


def app_base(base: str | None) -> str:
    """The app host for a recorded base URL (cloud API hosts map to https://wandb.ai); the default if refused."""
    vetted, _problem = vet_base(base or DEFAULT_BASE_URL)
    return vetted or DEFAULT_BASE_URL


def folder_link(run_dir: Path, prefix: str, run: Mapping[str, Any], files: RunFiles, run_id: str | None,
                offline: bool, log_rel: str | None, base_url: str | None) -> FolderLink:
    """Decide mode, entity, link and sync command of one folder from everything it holds."""
    entity, source = run.get("entity"), f"{log_rel} (run record)" if run.get("entity") else None
    if not entity and files.settings.get("entity"):
        entity, source = files.settings["entity"], "settings (next to the run folders)"
    if not entity and files.finished_entity:
        entity, source = files.finished_entity[0], f"{files.finished_entity[2]} (finishing run line)"
    project = run.get("project") or files.settings.get("project") or (
        files.finished_entity[1] if files.finished_entity else None)
    recorded, base_source = _recorded_base(base_url, files, prefix)
    mode = "offline" if offline else ("online" if files.server_contact or files.server_rejection else "unknown")
    refused: list[str] = []
    base: str | None = None
    if recorded:
        base, problem = vet_base(recorded)
        if problem:
            refused.append(f"{problem} ({base_source})")
    for what, value, where in (("entity", entity, source), ("project", project, log_rel or "settings"),
                               ("run id", run_id, log_rel or prefix or "the folder name")):
        problem = name_problem(what, value) if value else None
        if problem:
            refused.append(f"{problem} ({where})")
    url = after = sync = note = None
    if files.server_rejection:
        note = (f"the W&B server rejected this run ({files.server_rejection}, in {prefix}logs/debug-internal.log): "
                "it does not exist on the server, so there is no link")
    elif offline and not files.synced:
        sync, problem = sync_command([run_dir])
        if problem:
            refused.append(problem)
        if entity and run_id and not refused:
            after = run_url(base or DEFAULT_BASE_URL, entity, project, run_id)
            note = f"offline run never synced: {after} exists only after `{sync}`"
        elif sync and not refused:
            note = (f"offline run never synced and no entity recorded: `{sync}` uploads it to your default entity")
    elif refused:
        pass
    elif run_id and entity:
        url = run_url(base or DEFAULT_BASE_URL, entity, project, run_id)
        if source and "run record" not in source:
            note = f"entity {entity} from {source}"
        if recorded is None and not offline:
            note = (note + "; " if note else "") + (f"the server is not recorded in the folder: {DEFAULT_BASE_URL} "
                                                   "assumed (a self-hosted server has its own address)")
    elif run_id and mode != "offline":
        present = [prefix + name for name in ("files/wandb-metadata.json", "logs/debug.log")
                   if prefix + name in files.roles]
        where = ", ".join(present + ["the `settings` file in the wandb/ directory (or ~/.config/wandb/settings)",
                                     "the launch script's WANDB_ENTITY, or your W&B default entity"])
        note = (f"online run{' (the server saw it: ' + files.server_contact + ')' if files.server_contact else ''}"
                f", but no entity is recorded, so the link cannot be formed; look for the entity in {where}: "
                f"{base or DEFAULT_BASE_URL}/<entity>/{quote(project, safe='') if project else '<project>'}/runs/"
                f"{quote(run_id, safe='')}")
    if refused:
        note = "no link: " + "; ".join(refused)
    return FolderLink(mode=mode, entity=entity, entity_source=source, base_url=base, url=url, url_after_sync=after,
                      sync_command=sync, server_rejection=files.server_rejection, note=note, refused=tuple(refused))


def _recorded_base(base_url: str | None, files: RunFiles, prefix: str) -> tuple[str | None, str]:
    """The server address the folder records, and where it was read."""
    if base_url:
        return base_url, "given by the caller"
    if files.settings.get("base_url"):
        return files.settings["base_url"], "the settings file next to the run folders"
    logged = _logged_base(files)
    if logged:
        return logged, f"a run link printed in {prefix}files/output.log or {prefix}logs/"
    if files.server_api_url:
        return files.server_api_url, f"{prefix}logs/debug-internal.log"
    return None, ""


def logged_link(files: RunFiles) -> str | None:
    """The newest run link a log printed, rebuilt from its vetted parts (None when any part is refused)."""
    for url in reversed(files.logged_urls):
        parsed = parse_logged_link(url)
        if parsed is not None:
            link, problems = build_link(parsed[0], parsed[1], parsed[2], parsed[3], "a logged link")
            if link is not None and not problems:
                return link
    return None


def _logged_base(files: RunFiles) -> str | None:
    """The host of a run URL the client printed (output.log, debug logs)."""
    for url in files.logged_urls:
        parsed = parse_logged_link(url)
        if parsed is not None:
            return parsed[0]
    return None


def metadata_provenance(metadata: Mapping[str, Any] | None, rel_path: str) -> Provenance | None:
    """Launch facts from files/wandb-metadata.json (host, git, program and args, Python, GPU, start time)."""
    if not isinstance(metadata, Mapping):
        return None
    git_meta = metadata.get("git")
    git: Mapping[str, Any] = git_meta if isinstance(git_meta, Mapping) else {}
    program = _text(metadata.get("program")) or _text(metadata.get("codePath"))
    args = [str(a) for a in metadata.get("args") or () if isinstance(a, (str, int, float))] \
        if isinstance(metadata.get("args"), list) else []
    command = shlex.join([program] + args) if program else (shlex.join(args) if args else None)
    gpu = _text(metadata.get("gpu"))
    count = metadata.get("gpu_count") if isinstance(metadata.get("gpu_count"), int) else None
    if gpu and count:
        gpu = f"{count} x {gpu}"
    return Provenance(git_commit=_text(git.get("commit")), git_remote=_text(git.get("remote")),
                      host=_text(metadata.get("host")), command=command, cwd=_text(metadata.get("root")),
                      created_at=_text(metadata.get("startedAt")), python=_text(metadata.get("python")),
                      gpu=gpu, source=rel_path)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
