"""What one local W&B folder says about its place on the server: mode, entity, link, sync command, launch facts."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...model import Provenance
from ._files import RunFiles

DEFAULT_BASE_URL = "https://wandb.ai"
_CLOUD_API_HOSTS = ("https://api.wandb.ai", "http://api.wandb.ai")


@dataclass(frozen=True, slots=True)
class FolderLink:
    """The link facts of one W&B run folder."""

    mode: str
    """online (wandb-core streamed to a server), offline, or unknown (an online-mode folder with no sign of contact)."""
    entity: str | None
    entity_source: str | None
    """Run-relative file the entity was read from, with how (``run record``, ``settings``, ``finishing run``)."""
    base_url: str | None
    """The server, when recorded (settings, a logged URL or API URL); None means it is not in the folder."""
    url: str | None
    """The run page as it exists now; None for never-synced offline runs and runs the server rejected."""
    url_after_sync: str | None
    """Where a never-synced offline run will be once ``wandb sync`` uploads it (entity known)."""
    sync_command: str | None
    """``wandb sync <absolute folder>`` for a never-synced offline folder."""
    server_rejection: str | None
    note: str | None
    """One line saying why there is no link, where the entity came from, or that the host is assumed."""


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]*@")
"""``user:password@`` in a recorded base URL: a run link never needs it (and must never show it)."""


def without_userinfo(url: str) -> str:
    """``url`` without a ``user:password@`` part."""
    return _USERINFO.sub(r"\1", url)


def app_base(base: str | None) -> str:
    """The app host for a recorded base URL (cloud API hosts map to https://wandb.ai), without userinfo."""
    base = without_userinfo(base or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/graphql"):
        base = base[: -len("/graphql")]
    return DEFAULT_BASE_URL if base in _CLOUD_API_HOSTS else base


def run_url(base: str | None, entity: str, project: str | None, run_id: str) -> str:
    """Run page URL."""
    return f"{app_base(base)}/{entity}/{project or 'uncategorized'}/runs/{run_id}"


def sync_command(folders: list[Path]) -> str:
    """One ``wandb sync`` for every folder, by absolute path, shell-quoted so it pastes anywhere."""
    return "wandb sync " + " ".join(shell_word(Path(f).absolute().as_posix()) for f in folders)


def shell_word(path: str) -> str:
    """``shlex.quote(path)``; a path holding bytes that are not UTF-8 or non-printable characters is written in
    bash/zsh's ``$'...'`` with ``\\xNN`` escapes, which names exactly those bytes (quoted as text, the command
    would name a folder that does not exist, or carry control characters into the terminal)."""
    if path.isprintable():
        return shlex.quote(path)
    raw = os.fsencode(path)
    return "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b"'\\" else f"\\x{b:02x}" for b in raw) + "'"


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
    recorded = base_url or files.settings.get("base_url") or _logged_base(files) or files.server_api_url
    mode = "offline" if offline else ("online" if files.server_contact or files.server_rejection else "unknown")
    base = app_base(recorded) if recorded else None
    url = after = sync = note = None
    if files.server_rejection:
        note = (f"the W&B server rejected this run ({files.server_rejection}, in {prefix}logs/debug-internal.log): "
                "it does not exist on the server, so there is no link")
    elif offline and not files.synced:
        sync = sync_command([run_dir])
        if entity and run_id:
            after = run_url(recorded, entity, project, run_id)
            note = f"offline run never synced: {after} exists only after `{sync}`"
        else:
            note = (f"offline run never synced and no entity recorded: `{sync}` uploads it to your default entity")
    elif run_id and entity:
        url = run_url(recorded, entity, project, run_id)
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
                f"{app_base(recorded)}/<entity>/{project or '<project>'}/runs/{run_id}")
    return FolderLink(mode=mode, entity=entity, entity_source=source, base_url=base, url=url, url_after_sync=after,
                      sync_command=sync, server_rejection=files.server_rejection, note=note)


def _logged_base(files: RunFiles) -> str | None:
    """The host of a run URL the client printed (output.log, debug logs)."""
    for url in files.logged_urls:
        parts = url.split("/")
        if len(parts) > 3:
            return "/".join(parts[:3])
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
