"""JSON documents for ``show --json`` and ``check --json`` (schema_version 1, see README)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from ..analysis.scalar_rows import row_counts
from ..analysis.secrets import mask_text, mask_value
from ..analysis.summary import restored_by, run_row, summary_of
from ..evidence import RunRow, RunSummary
from ..model import Attempt, Finding, Run, WandbInfo
from .run_facts import started_at_iso
from .json_text import SCHEMA_VERSION as SCHEMA_VERSION, dumps as dumps, root_path
from .json_text import indented, indented_at
from .json_text import safe_str as safe_str  # imported from here by callers and tests
from .safe_text import clean_json, name_text


def run_path(run: Run | RunRow, base: Path) -> str:
    """The run's path relative to the PATH the user gave ('.' when it is the run itself)."""
    return root_path(run.root, base)


def _name(value: str | None) -> str | None:
    """A file or folder name by the one name escape (``safe_text.name_text``); None stays None."""
    return None if value is None else name_text(value)


def _num(value: Any) -> Any:
    """JSON has no NaN/inf: map them to None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def scalar_summary(run: Run) -> dict[str, dict[str, Any]]:
    """Per tag: point count, first and last step, from the preferred source kind (metric writer before train.log).

    ``points`` counts the rows ``export`` writes (one per step and attempt), so the two always agree.
    """
    return {count.tag: {"points": count.points, "first_step": count.first_step, "last_step": count.last_step,
                        "source": count.kind} for count in row_counts(run)}


def show_run(run: Run, base: Path) -> dict[str, Any]:
    """One run of the ``show --json`` document."""
    return {"path": run_path(run, base), **show_body(run)}


def show_body(run: Run) -> dict[str, Any]:
    """``show_run`` without its ``path`` (the one field that depends on the PATH given): what the session caches."""
    prov = run.provenance
    restores = restored_by(run)
    return {
        "name": name_text(run.name),
        "kind": run.kind,
        "era": run.era,
        "status": run.status,
        "attempts": [{
            "index": a.index, "first_step": a.first_step, "last_step": a.last_step,
            "started_at": a.started_at, "started_at_iso": started_at_iso(a), "origin": a.origin, "ended": a.ended,
            "resume_step": a.resume_step, "resumed_from": a.resumed_from,
            "restored_checkpoint": a.restored_checkpoint, "restore_step": a.restore_step,
            "end_detail": mask_text(a.end_detail) if a.end_detail else None,
            "sources": [name_text(s) for s in a.sources], "saved_steps": list(a.saved_steps),
            "lost_steps": list(a.lost_steps) if a.lost_steps else None,
            **attempt_context_json(a),
        } for a in run.attempts],
        "lost": lost_json(summary_of(run)),
        "scalars": scalar_summary(run),
        "checkpoints": [{
            "path": name_text(ck.path), "format": ck.format, "role": ck.role, "complete": ck.complete,
            "global_step": ck.global_step, "epoch": ck.epoch, "wandb_run_id": ck.wandb_run_id,
            "wandb_cursor": ck.wandb_cursor, "wandb_cursor_key": ck.wandb_cursor_key,
            "size_bytes": ck.size_bytes, "resume_candidate": ck.resume_candidate,
            "best_metric_value": _num(ck.best_metric_value), "best_metric_name": ck.best_metric_name,
            "saved_by_attempt": ck.saved_by_attempt,
            "restored_by": [{"attempt": a, "step": step} for a, step in restores.get(ck.path, ())],
        } for ck in run.checkpoints],
        "resume": resume_json(run),
        "replayed": [{"first_step": r.first_step, "last_step": r.last_step, "copies": r.copies,
                      "attempts": list(r.attempts), "paths": list(r.paths)} for r in run.replayed],
        "wandb": wandb_json(run.wandb),
        "provenance": {
            "git_commit": prov.git_commit, "git_dirty": prov.git_dirty, "host": prov.host,
            "command": mask_text(prov.command) if prov.command else None,
            "launch_command": mask_text(prov.launch_command) if prov.launch_command else None,
            "created_at": prov.created_at, "source": _name(prov.source),
            "git_remote": mask_text(prov.git_remote) if prov.git_remote else None,
            "python": prov.python, "gpu": prov.gpu,
        },
        "findings": _finding_counts(run.findings),
        "notes": run_notes(run),
        "files": file_roles(run),
        "eval": [{"path": e.path, "stamp": e.stamp, "split": e.split, "checkpoint": e.checkpoint,
                  "metrics": {name: _num(value) for name, value in e.metrics}} for e in run.eval_results],
    }


def ls_run(run: Run | RunRow, base: Path) -> dict[str, Any]:
    """One run of the ``ls --json`` document: the fields of the ``ls`` table, from the run's row."""
    row = run if isinstance(run, RunRow) else run_row(run)
    return {"path": run_path(row, base), **_ls_fields(row)}


def _ls_fields(row: RunRow) -> dict[str, Any]:
    """``ls_run`` but its path (the one field that depends on the folder the user named)."""
    return {"name": name_text(row.name), "kind": row.kind, "era": row.era, "status": row.status,
            "findings": {"error": row.errors, "warning": row.warnings, "info": row.infos},
            "attempts": row.attempts, "last_step": row.summary.last_step, "wandb_run_ids": list(row.wandb_run_ids),
            "best_metric": best_metric_json(row), "last_logged_at": row.last_logged_at,
            "lost": lost_json(row.summary)}


_RUN_INDENT = "\n    "
"""Where a run's object starts in the ``ls --json`` document (an item of ``runs``, two levels in)."""


def ls_run_fragment(row: RunRow) -> str:
    """The text of ``ls_run(row, ...)`` without its path, as ``dumps`` writes it inside the ``ls --json`` document:
    the row cache keeps it with the row, so a warm ``ls --json`` decodes and encodes nothing per run."""
    return clean_json(indented_at(_ls_fields(row), _RUN_INDENT))


def ls_document(rows: Iterable[RunRow], base: Path) -> str:
    """``dumps({"schema_version": 1, "runs": [ls_run(row, base) ...]})``, byte for byte, from each row's stored
    ``ls --json`` object where it has one (``ls_json_fragment``: rows served from the row index)."""
    texts = []
    top = str(Path(base).absolute())
    prefix = top.rstrip(os.sep) + os.sep
    plain = ".." not in top  # then a run's path below it is its text after the prefix, as ``run_path`` makes it
    for row in rows:
        fragment = getattr(row, "ls_json_fragment", None)
        if fragment is None:
            fragment = ls_run_fragment(row)
        root = str(row.root)
        relative = (name_text(root[len(prefix):]) if plain and root.startswith(prefix) and ".." not in root
                    and root != prefix and not root.endswith(os.sep) else run_path(row, base))
        path = clean_json(encode_basestring(safe_str(relative)))
        texts.append(f'{{{_RUN_INDENT}  "path": {path},{fragment[1:]}')
    if not texts:
        return dumps({"schema_version": SCHEMA_VERSION, "runs": []})
    return (f'{{\n  "schema_version": {SCHEMA_VERSION},\n  "runs": [{_RUN_INDENT}' + f",{_RUN_INDENT}".join(texts)
            + "\n  ]\n}")


def best_metric_json(row: RunRow) -> dict[str, Any] | None:
    """``{"name", "value"}`` of the row's best selection metric (``name`` null when the files do not name it)."""
    best = row.best_metric
    return None if best is None else {"name": _name(best.name), "value": _num(best.value)}


def attempt_context_json(a: Attempt) -> dict[str, Any]:
    """An attempt's Slurm context and lost compute (``show --json``), with the file each fact came from."""
    return {"job_id": a.job_id, "array_index": a.array_index, "nodes": list(a.nodes), "partition": a.partition,
            "gpus": a.gpus, "elapsed_s": a.elapsed_s, "lost_wall_s": a.lost_wall_s, "lost_gpu_hours": a.lost_gpu_hours,
            "context_sources": {name: name_text(path) for name, path in a.context_sources}}


def lost_json(summary: RunSummary) -> dict[str, Any]:
    """The run's lost compute (``show --json`` and ``ls --json``): totals over its attempts."""
    return {"steps": summary.lost_steps, "wall_s": summary.lost_wall_s, "gpu_hours": summary.lost_gpu_hours,
            "failed_requeues": summary.failed_requeues}


def resume_json(run: Run) -> dict[str, Any] | None:
    """The ``resume`` object of ``show --json``: the option that resumes from the picked checkpoint (None: none
    qualifies, or the trainer takes no option this tool knows)."""
    hint = run.resume
    if hint is None:
        return None
    return {"checkpoint": name_text(hint.checkpoint), "step": hint.step, "tool": hint.tool,
            "option": safe_str(hint.option), "path_base": safe_str(hint.path_base),
            "newer_incomplete": [name_text(p) for p in hint.newer_incomplete]}


def wandb_json(info: WandbInfo) -> dict[str, Any]:
    """The ``wandb`` object of ``show --json`` (and the body of ``url --json``)."""
    return {
        "run_ids": list(info.run_ids), "url": info.url, "project": info.project, "entity": info.entity,
        "sync_command": info.sync_command, "mode": info.mode, "url_after_sync": info.url_after_sync,
        "entity_source": _name(info.entity_source), "server_rejection": info.server_rejection,
        "link_note": mask_text(info.link_note) if info.link_note else None,
        "link_refused": [mask_text(reason) for reason in info.link_refused],
    }


def run_notes(run: Run) -> list[str]:
    """Plain-language notes that explain what the user sees (logging schedules, W&B x axes)."""
    notes: list[str] = []
    ranks = [log for log in run.rank_logs if log.rank is not None]
    if ranks:
        newest = max(log.started or "" for log in ranks)
        parts = [f"rank {log.rank} at step {log.last_step} (last {log.last_event}"
                 + (f", open {'/'.join(log.open_spans)}" if log.open_spans else "") + ")"
                 for log in sorted(ranks, key=lambda log: log.rank or 0) if (log.started or "") == newest]
        notes.append("structured logs, newest attempt: " + "; ".join(parts))
    notes += list(run.hf.schedule_notes) if run.hf is not None else []
    if run.hf is not None and run.replayed:  # Run.replayed: the one rule (analysis.replays), said here
        again = ", ".join(f"{r.first_step}" if r.first_step == r.last_step else f"{r.first_step}-{r.last_step}"
                          for r in run.replayed)
        notes.append(f"Steps {again} were logged again: TensorBoard keeps one folder per start and shows every copy "
                     "(W&B may too), while trainer_state.json holds one copy because HF restores log_history from "
                     "the checkpoint.")
    for wrun in run.wandb_runs:
        axes = {axis for axis in wrun.step_metrics.values() if axis != "_step"}
        if axes:
            notes.append(f"{wrun.path}: curves are plotted against the step metric {', '.join(sorted(axes))} "
                         "(define_metric), not W&B's internal _step.")
    notes += _wandb_continuation_notes(run)
    if run.wandb.link_note:
        notes.append(f"W&B: {run.wandb.link_note}.")
    return [mask_text(n) for n in notes]


def _wandb_continuation_notes(run: Run) -> list[str]:
    """Which W&B folders continued their id on the server, and which were no process start, as their records say."""
    notes = []
    attempt_of = {src: a.index for a in run.attempts for src in a.sources}
    said: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (id, what the record says) -> (who, file)
    for w in run.wandb_runs:
        if w.resume_evidence:
            where, _, what = w.resume_evidence.rpartition(": ")
            who = f"#{attempt_of[w.path]}" if w.path in attempt_of else w.path
            said.setdefault((w.run_id or "?", what), []).append((who, where))
    for (run_id, what), folders in said.items():
        who = ", ".join(w for w, _ in folders[:12]) + (f" and {len(folders) - 12} more" if len(folders) > 12 else "")
        notes.append(f"W&B id {run_id} was continued on the server by {who} ({what}: {folders[0][1]}"
                     + (" and the others'" if len(folders) > 1 else "") + ").")
    reinits = [w for w in run.wandb_runs if w.reinit_of_active]
    if reinits:
        notes.append(f"W&B: {len(reinits)} folder(s) hold only the debug.log of a second wandb.init made while the "
                     f"process's run was still active (W&B returned that run), so they are no process start "
                     f"({reinits[0].reinit_of_active}{' ...' if len(reinits) > 1 else ''}).")
    return notes


def file_roles(run: Run) -> dict[str, str]:
    """What each auxiliary file of a W&B folder is, for the files present."""
    roles: dict[str, str] = {}
    for wrun in run.wandb_runs:
        roles.update(wrun.file_roles)
    return roles


def _finding_counts(findings: tuple[Finding, ...]) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f.severity.label] += 1
    return counts


def finding_json(finding: Finding) -> dict[str, Any]:
    """One finding as JSON; message and explanation are masked."""
    return {
        "code": finding.code,
        "severity": finding.severity.label,
        "message": mask_text(finding.message),
        "steps": list(finding.steps) if finding.steps else None,
        "paths": [name_text(p) for p in finding.paths],
        "explanation": mask_text(finding.explanation),
        "attempts": list(finding.attempts),
        "views": {viewer: mask_text(shows) for viewer, shows in finding.views},
    }


def config_document(run: Run, base: Path, data: Any, kind: str) -> dict[str, Any]:
    """The ``config --json`` document (secrets masked)."""
    return {"schema_version": SCHEMA_VERSION, "path": run_path(run, base), "kind": kind, "config": mask_value(data)}
