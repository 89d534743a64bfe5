"""Readers for pimm's JSON and text provenance documents (spec section 6)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model import ConfigDoc, Finding, Provenance
from .._common import MAX_SHOWN_TEXT_BYTES, decode_text, file_finding, read_bytes_capped, read_json
from ..protocol import Read


@dataclass(frozen=True, slots=True)
class RunMetadata:
    """``run_metadata.json`` as provenance plus the raw document."""

    provenance: Provenance
    raw: dict[str, Any] | None


def _command_text(command: Any) -> str | None:
    """argv lists become one shell-quoted line; strings pass through."""
    if isinstance(command, list):
        return " ".join(shlex.quote(str(part)) for part in command)
    if isinstance(command, str):
        return command
    return None


def read_run_metadata(path: Path, rel_path: str) -> Read[RunMetadata]:
    """Read ``run_metadata.json`` (E1+) into a Provenance."""
    result = read_json(path, rel_path)
    findings = list(result.findings)
    data = result.data
    if data is None:
        return Read(RunMetadata(Provenance(source=rel_path), None), tuple(findings))
    if not isinstance(data, dict):
        findings.append(file_finding("file.invalid-json", rel_path, f"{rel_path}: expected a JSON object"))
        return Read(RunMetadata(Provenance(source=rel_path), None), tuple(findings))
    git = data.get("git")
    git = git if isinstance(git, dict) else {}
    dirty = git.get("is_dirty")
    provenance = Provenance(
        git_commit=_str_or_none(git.get("commit")),
        git_branch=_str_or_none(git.get("branch")),
        git_dirty=dirty if isinstance(dirty, bool) else None,
        host=_str_or_none(data.get("host")),
        command=_command_text(data.get("command")),
        launch_command=_command_text(data.get("launch_command")),
        cwd=_str_or_none(data.get("cwd")),
        created_at=_str_or_none(data.get("created_at")),
        source=rel_path,
    )
    return Read(RunMetadata(provenance, data), tuple(findings))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_config_json(path: Path, rel_path: str, kind: str) -> Read[ConfigDoc]:
    """Read a JSON config (``resolved_config.json``, ``model_config.json``)."""
    result = read_json(path, rel_path)
    findings = list(result.findings)
    if result.data is None:
        return Read(None, tuple(findings))
    if not isinstance(result.data, dict):
        findings.append(file_finding("file.invalid-json", rel_path, f"{rel_path}: expected a JSON object"))
        return Read(None, tuple(findings))
    return Read(ConfigDoc(path=rel_path, kind=kind, data=result.data), tuple(findings))


def read_resolved_config(path: Path, rel_path: str) -> Read[ConfigDoc]:
    """``resolved_config.json``: the config pimm resolved at launch."""
    return read_config_json(path, rel_path, "resolved_config")


def read_model_config(path: Path, rel_path: str) -> Read[ConfigDoc]:
    """``model_config.json``: the model part of the config."""
    return read_config_json(path, rel_path, "model_config")


def read_config_py(path: Path, rel_path: str) -> Read[ConfigDoc]:
    """``config.py`` as text, never executed."""
    return read_text_doc(path, rel_path, "config_py")


def read_text_doc(path: Path, rel_path: str, kind: str) -> Read[ConfigDoc]:
    """Keep a text document (``config.py``) verbatim; it is never executed."""
    data, findings = read_bytes_capped(path, rel_path, MAX_SHOWN_TEXT_BYTES)
    if not data:
        return Read(None, tuple(findings))
    text, more = decode_text(data, rel_path)
    return Read(ConfigDoc(path=rel_path, kind=kind, text=text), tuple(findings + more))


@dataclass(frozen=True, slots=True)
class EvalMetrics:
    """One ``eval/<stamp>/test_metrics.json`` written by the final tester."""

    path: str
    stamp: str
    metrics: dict[str, Any] = field(default_factory=dict)


def read_eval_metrics(path: Path, rel_path: str) -> Read[EvalMetrics]:
    """Read a tester's ``test_metrics.json``."""
    result = read_json(path, rel_path)
    if not isinstance(result.data, dict):
        extra = () if result.data is None else (
            file_finding("file.invalid-json", rel_path, f"{rel_path}: expected a JSON object"),)
        return Read(None, tuple(result.findings) + extra)
    return Read(EvalMetrics(rel_path, path.parent.name, result.data), tuple(result.findings))
