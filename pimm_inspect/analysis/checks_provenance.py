"""Checks about provenance: git state, config drift, secrets in configs."""

from __future__ import annotations

import re
from typing import Any

from ..model import Finding, Run, Severity
from . import _facts
from .configs import flatten_config
from .secrets import find_in_mapping, find_in_text

DERIVED_KEYS = {"batch_size_per_gpu", "num_worker_per_gpu", "batch_size_val_per_gpu", "scheduler.total_steps",
                "wandb_run_name", "wandb_job_index", "_wandb", "resume", "weight"}
"""Keys pimm derives per rank or at writer creation, or sets for a resumed attempt (resume, weight):
they legitimately differ from resolved_config.json."""


def check_git(run: Run) -> list[Finding]:
    """``provenance.git-dirty`` and ``provenance.no-git``."""
    if run.kind != "pimm":
        return []
    meta = run.run_metadata
    prov = run.provenance
    if prov.git_dirty:
        return [Finding(
            "provenance.git-dirty", Severity.WARNING,
            f"launched from a dirty checkout of {prov.git_commit[:12] if prov.git_commit else 'an unknown commit'}",
            (prov.source or "run_metadata.json",), None,
            "Tracked files had uncommitted changes at launch (untracked files are not checked), so the commit alone "
            "does not reproduce the run. The code that ran is in code/ when the snapshot was taken.")]
    if meta is not None and not prov.git_commit:
        return [Finding(
            "provenance.no-git", Severity.WARNING, "no git commit recorded for this run",
            (prov.source or "run_metadata.json",), None,
            "run_metadata.json has an empty `git` block: training ran outside a git checkout (or git failed), "
            "so the exact code cannot be recovered from version control. Check code/ for a snapshot.")]
    if meta is None and run.era == "E0":
        return [Finding(
            "provenance.no-git", Severity.INFO, "E0 runs record no provenance (no run_metadata.json)",
            (), None, "pimm before 2026-06-06 wrote no git commit, host or command; only config.py (if any) and the log remain.")]
    return []


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return str(a) == str(b)


def check_config_drift(run: Run) -> list[Finding]:
    """``provenance.config-drift``: the resolved config vs the W&B config (and between local W&B folders)."""
    resolved = run.config("resolved_config")
    findings = []
    for doc in run.configs:
        if doc.kind != "wandb_config" or not isinstance(doc.data, dict) or resolved is None:
            continue
        left, right = flatten_config(resolved.data), flatten_config(_unwrap_wandb(doc.data))
        differing = sorted(k for k in left.keys() & right.keys()
                           if k not in DERIVED_KEYS and not k.startswith("_") and not _same(left[k], right[k]))
        if differing:
            sample = ", ".join(map(_facts.one_line, differing[:5]))
            findings.append(Finding(
                "provenance.config-drift", Severity.WARNING,
                f"{len(differing)} config value(s) differ between {resolved.path} and {doc.path}: {sample}",
                (resolved.path, doc.path), None,
                "resolved_config.json describes attempt 1 as launched; the W&B config is what the trainer held when the "
                "writer was created (after per-rank derivation and config modifiers) or what a later attempt used. "
                "A difference beyond derived keys means the run was resumed or launched with other settings."))
    return findings


def _unwrap_wandb(config: dict[str, Any]) -> dict[str, Any]:
    """W&B config files wrap values as {key: {value: v, desc: ...}}; unwrap where they do."""
    if config and all(isinstance(v, dict) and "value" in v for v in config.values()):
        return {k: v["value"] for k, v in config.items()}
    return config


MAX_PLACES_PER_FILE = 50
"""Places named one by one per file (a hostile file could hold thousands); the rest are counted, the file named."""
_LINE = re.compile(r"line (\d+)")


def places_text(places: list[tuple[str, str]]) -> str:
    """Every place, grouped by file in the order found: ``config.py: lines 22-23; launch.sbatch: line 18; ...``."""
    by_file: dict[str, list[str]] = {}
    for path, where in places:
        by_file.setdefault(path, []).append(where)
    parts = []
    for path, wheres in by_file.items():
        numbers = sorted({int(m.group(1)) for w in wheres if (m := _LINE.fullmatch(w))})
        others = list(dict.fromkeys(w for w in wheres if not _LINE.fullmatch(w)))
        runs: list[list[int]] = []
        for n in numbers:
            if runs and n == runs[-1][1] + 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        named = [f"line {a}" if a == b else f"lines {a}-{b}" for a, b in runs] + others
        rest = len(named) - MAX_PLACES_PER_FILE
        shown = ", ".join(named[:MAX_PLACES_PER_FILE]) + (f" and {rest} more place(s)" if rest > 0 else "")
        parts.append(f"{path}: {shown}")
    return "; ".join(parts)


def check_secrets(run: Run) -> list[Finding]:
    """``provenance.secret``: values that look like API keys or tokens in configs, metadata or launch scripts."""
    places: list[tuple[str, str]] = []
    # A W&B folder's config document is named by its folder; the file that holds it is the folder's .wandb log.
    logs = {w.path: next((p for p in w.file_roles if p.endswith(".wandb")), w.path) for w in run.wandb_runs}
    for doc in run.configs:
        if isinstance(doc.data, dict):
            path = logs.get(doc.path, doc.path) if doc.kind == "wandb_config" else doc.path
            places += [(path, h.where) for h in find_in_mapping(doc.data)]
        elif doc.text:
            places += [(doc.path, h.where) for h in find_in_text(doc.text)]
    meta = run.run_metadata
    if isinstance(meta, dict):
        places += [(run.provenance.source or "run_metadata.json", h.where) for h in find_in_mapping(meta)]
    for w in run.wandb_runs:  # W&B records the launch command (program and args) of each process it saw
        if w.command:
            places += [(w.command_source or w.path, "program args") for _ in find_in_text(w.command)]
    sbatch = run.sbatch
    if sbatch is not None and sbatch.text:
        places += [(sbatch.path, h.where) for h in find_in_text(sbatch.text)]
    if not places:
        return []
    files = tuple(sorted({p for p, _ in places}))
    where = places_text(places)
    return [Finding(
        "provenance.secret", Severity.ERROR,
        f"{len(places)} value(s) that look like API keys or tokens in {', '.join(files)}",
        files, None,
        f"Found at {where}. {_uploaded(run)}pimm-inspect masks these values everywhere it shows them. Rotate the key "
        "and pass it through the environment (WANDB_API_KEY, HF_TOKEN in .env) instead of the config or the command "
        "line.")]


def _uploaded(run: Run) -> str:
    """Who else holds the secret, as far as this run's files say: W&B only for a pimm run or one with W&B folders."""
    if run.kind == "pimm":
        return ("pimm sends the resolved config to W&B, and W&B uploads the launch command it records (program "
                "args), so a secret in either is uploaded too. ")
    if run.wandb_runs:
        return ("A config given to W&B is uploaded with the run, and W&B uploads the launch command it records "
                "(program args), so a secret in either is uploaded too. ")
    return "Anyone with a copy of these files can read it. "
