"""Assemble one :class:`Run` from the raw reader results of a run directory."""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..model import Attempt, CheckpointInfo, Finding, Run, ScalarSeries, WandbInfo
from .collect import Collected, collect
from .discover import classify_dir

LIVE_WINDOW_S = 900.0
"""A run whose newest file changed this recently (and agrees with its own clock) may still be running."""


def load_run(path: Path | str, now: float | None = None) -> Run:
    """Read the run directory at ``path`` into a Run (reader findings only, no analysis)."""
    root = Path(path).absolute()
    kind = classify_dir(root) or "pimm"
    c = collect(root, kind)
    attempts, series = _attempts_and_series(c)
    live = _looks_live(c, now if now is not None else time.time())
    status = _status(attempts, live)
    attempts = _close_attempts(attempts, live)
    checkpoints = _checkpoints(c)
    return Run(
        root=root,
        kind=kind,
        era=_era(c, checkpoints) if kind == "pimm" else None,
        status=status,
        name=root.name,
        attempts=tuple(attempts),
        series=tuple(series),
        events=tuple(c.train_log.events) if c.train_log is not None else (),
        checkpoints=tuple(checkpoints),
        configs=tuple(c.configs) + _extra_configs(c),
        provenance=c.provenance,
        wandb=_wandb_info(c, checkpoints),
        findings=tuple(_dedupe(c.findings)),
        sources=tuple(sorted(c.sources, key=lambda s: s.path)),
        extras=_extras(c),
    )


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.code, f.message, f.paths)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _attempts_and_series(c: Collected) -> tuple[list[Attempt], list[ScalarSeries]]:
    """Attempts from train.log segments (else one per event file), with every series attributed."""
    series: list[ScalarSeries] = []
    attempts: list[Attempt] = []
    segments = list(c.train_log.segments) if c.train_log is not None else []
    tb_attempt = _map_event_files(c, segments)
    wandb_attempt: dict[str, int] = {}
    if segments:
        tb_span = _tb_spans(c, tb_attempt)
        for seg in segments:
            sources = ["train.log"] + [p for p, a in tb_attempt.items() if a == seg.index]
            # Reconcile with the attempt's event file: train.log logs every log_frequency steps, TB every step.
            firsts = [v for v in (seg.first_step, tb_span.get(seg.index, (None, None))[0]) if v is not None]
            lasts = [v for v in (seg.last_step, tb_span.get(seg.index, (None, None))[1]) if v is not None]
            attempts.append(Attempt(
                index=seg.index, started_at=seg.started_at, first_step=min(firsts, default=None),
                last_step=max(lasts, default=None), origin=seg.origin, resumed_from=seg.resumed_from,
                resume_step=seg.resume_step, ended=seg.ended or "unknown",
                end_detail=seg.end_detail, sources=tuple(sources)))
        series += list(c.train_log.series)
    elif c.tb_files:
        for index, (rel_path, _name, result) in enumerate(c.tb_files, start=1):
            steps = [s for s in result.series.values() if len(s)]
            first = min((s.first_step for s in steps), default=None)
            last = max((s.last_step for s in steps), default=None)
            started = (datetime.utcfromtimestamp(result.first_wall_time_s).strftime("%Y-%m-%d %H:%M:%S")
                       if result.first_wall_time_s else None)
            attempts.append(Attempt(index=index, started_at=started, first_step=first, last_step=last,
                                    origin="fresh" if index == 1 else "resume", sources=(rel_path,)))
    elif c.wandb_runs and c.kind == "wandb":
        ordered = sorted(c.wandb_runs, key=lambda r: (r.start_time_s or 0.0, r.rel_path))
        for index, wrun in enumerate(ordered, start=1):
            steps = [s for s in wrun.series if len(s)]
            started = (datetime.utcfromtimestamp(wrun.start_time_s).strftime("%Y-%m-%d %H:%M:%S")
                       if wrun.start_time_s else None)
            ended = {"finished": "completed", "crashed": "crashed"}.get(wrun.status, "unknown")
            attempts.append(Attempt(index=index, started_at=started,
                                    first_step=min((s.first_step for s in steps), default=None),
                                    last_step=max((s.last_step for s in steps), default=None),
                                    origin="resume" if wrun.resumed else "fresh", ended=ended,
                                    end_detail=f"exit code {wrun.exit_code}" if wrun.exit_code else None,
                                    sources=(wrun.rel_path,)))
            if len(c.wandb_runs) > 1:
                wandb_attempt[wrun.rel_path] = index
    elif c.hf is not None and getattr(c.hf, "attempts", None):
        for att in c.hf.attempts:
            done = (att is c.hf.attempts[-1] and c.hf.max_steps is not None and c.hf.global_step is not None
                    and c.hf.global_step >= c.hf.max_steps)
            attempts.append(Attempt(index=att.index, first_step=att.first_step, last_step=att.last_step,
                                    origin="resume" if att.resumed_from_checkpoint else "fresh",
                                    resume_step=att.resumed_from_checkpoint,
                                    resumed_from=(f"checkpoint-{att.resumed_from_checkpoint}"
                                                  if att.resumed_from_checkpoint else None),
                                    ended="completed" if done else "unknown",
                                    sources=(att.tb_dir,) if att.tb_dir else ()))
    for rel_path, _name, result in c.tb_files:
        attempt = tb_attempt.get(rel_path)
        for s in result.series.values():
            series.append(dataclasses.replace(s, attempt=attempt))
    if not wandb_attempt and len(c.wandb_runs) > 1 and len({r.run_id for r in c.wandb_runs}) == 1:
        # One W&B id, several local folders: each folder is one process start (a requeued offline run).
        ordered = sorted(c.wandb_runs, key=lambda r: (r.start_time_s or 0.0, r.rel_path))
        wandb_attempt = {r.rel_path: i for i, r in enumerate(ordered, start=1)}
    for run in c.wandb_runs:
        attempt = wandb_attempt.get(run.rel_path)
        series += [dataclasses.replace(s, attempt=attempt) if attempt is not None else s for s in run.series]
    if c.hf is not None:
        # Trainer history (trainer_state.json) plus the runs/* TensorBoard folders, one per process start.
        series += list(c.hf.series) + list(c.hf.tb_series)
    return attempts, series


def _tb_spans(c: Collected, tb_attempt: dict[str, int]) -> dict[int, tuple[int, int]]:
    """Per attempt, the step span of its event files' scalars."""
    spans: dict[int, tuple[int, int]] = {}
    for rel_path, _name, result in c.tb_files:
        attempt = tb_attempt.get(rel_path)
        steps = [(s.first_step, s.last_step) for s in result.series.values() if len(s)]
        if attempt is None or not steps:
            continue
        lo, hi = min(a for a, _ in steps), max(b for _, b in steps)
        old = spans.get(attempt)
        spans[attempt] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
    return spans


def _map_event_files(c: Collected, segments: list[Any]) -> dict[str, int]:
    """Attribute each event file to an attempt: one file per process start, in order."""
    mapping: dict[str, int] = {}
    if not c.tb_files:
        return mapping
    if not segments or len(segments) == len(c.tb_files):
        for index, (rel_path, _n, _r) in enumerate(c.tb_files, start=1):
            mapping[rel_path] = segments[index - 1].index if segments else index
        return mapping
    # Counts differ (a file lost, or a stale file from a reused directory): match by first step.
    for rel_path, _n, result in c.tb_files:
        firsts = [s.first_step for s in result.series.values() if len(s)]
        if not firsts:
            continue
        first = min(firsts)
        best = min(segments, key=lambda seg: abs((seg.first_step if seg.first_step is not None else 10**18) - first))
        mapping[rel_path] = best.index
    return mapping


def _looks_live(c: Collected, now: float) -> bool:
    """True when something is still being written: a half-written tail, or fresh consistent files."""
    tails = {"train.log"} | {p for p, _n, _r in c.tb_files} | {r.path for r in c.rank_logs}
    for f in c.findings:
        if f.code == "file.truncated" and f.paths and f.paths[0] in tails and "may still" in (f.message + f.explanation):
            return True
    newest = max((s.mtime_s for s in c.sources if s.kind in ("train_log", "tb_events", "structured_log")), default=0.0)
    if now - newest > LIVE_WINDOW_S:
        return False
    # A copy or fresh checkout also has new mtimes: require the run's own clock to agree.
    last_wall = max((r.last_wall_time_s or 0.0 for _p, _n, r in c.tb_files), default=0.0)
    if last_wall and abs(newest - last_wall) < 3600:
        return True
    last_log = _log_time(c.train_log.segments[-1].ended_at) if c.train_log is not None and c.train_log.segments else None
    return last_log is not None and abs(newest - last_log) < 15 * 3600  # node-local time: allow any zone


def _log_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").timestamp()
    except ValueError:
        return None


def _status(attempts: list[Attempt], live: bool) -> str:
    if not attempts:
        return "running" if live else "unknown"
    last = attempts[-1]
    if last.ended == "completed":
        return "finished"
    if last.ended == "crashed":
        return "crashed"
    return "running" if live else "stopped"


def _close_attempts(attempts: list[Attempt], live: bool) -> list[Attempt]:
    """Say how attempts without an end marker ended: killed when a later one exists, else running/stopped."""
    out = []
    for i, att in enumerate(attempts):
        if att.ended == "unknown":
            if i < len(attempts) - 1:
                att = dataclasses.replace(att, ended="killed", end_detail=att.end_detail or
                                          "log stops without an end marker; a later attempt started")
            elif live:
                att = dataclasses.replace(att, ended="running")
        out.append(att)
    return out


def _checkpoints(c: Collected) -> list[CheckpointInfo]:
    items: list[CheckpointInfo] = []
    if c.model_dir is not None:
        items += list(c.model_dir.checkpoints)
    if c.hf is not None:
        items += [h.info for h in c.hf.checkpoints]
        if c.hf.final_model is not None:
            items.append(c.hf.final_model)
    return items


def _era(c: Collected, checkpoints: list[CheckpointInfo]) -> str | None:
    """Era per spec 11.1, from the strongest fingerprint present."""
    log = c.train_log
    if log is not None and log.era_hint == "E0":
        return "E0"
    cursor_keys = {ck.wandb_cursor_key for ck in checkpoints if ck.wandb_cursor_key}
    if "next_step" in cursor_keys or any(ck.wandb_state and "history" in ck.wandb_state for ck in checkpoints):
        return "E3b"
    if c.rank_logs or (c.root / "structured_logs").is_dir():
        return "E3a"
    if "resume_step" in cursor_keys or (log is not None and any(
            "no W&B rewind state" in e.message for e in log.events)):
        return "E2"
    resolved = next((d.data for d in c.configs if d.kind == "resolved_config"), None) or {}
    if c.sbatch is not None or "launch_command" in (c.metadata_raw or {}) or "launch_command" in resolved:
        return "E1b"
    if c.metadata_raw is not None or resolved or any(ck.schema for ck in checkpoints):
        return "E1"
    if log is not None and log.era_hint:
        return "E1"
    if any(ck.top_level_keys and "epoch" in ck.top_level_keys and not ck.schema for ck in checkpoints):
        return "E0"
    return None


def _wandb_info(c: Collected, checkpoints: list[CheckpointInfo]) -> WandbInfo:
    ids: list[str] = []
    for run in c.wandb_runs:
        if run.run_id and run.run_id not in ids:
            ids.append(run.run_id)
    for ck in sorted(checkpoints, key=lambda k: (k.global_step or -1)):
        if ck.wandb_run_id and ck.wandb_run_id not in ids:
            ids.append(ck.wandb_run_id)
    resolved = next((d.data for d in c.configs if d.kind == "resolved_config"), None) or {}
    project = next((r.project for r in c.wandb_runs if r.project), None) or _str(resolved.get("wandb_project"))
    if project is None and resolved.get("use_wandb") and ids:
        project = "pimm"  # pimm's default W&B project (spec 4.4)
    entity = next((r.entity for r in c.wandb_runs if r.entity), None) or _str(resolved.get("wandb_entity"))
    base = next((r.base_url for r in c.wandb_runs if getattr(r, "base_url", None)), None) or "https://wandb.ai"
    name = next((r.display_name for r in c.wandb_runs if r.display_name), None) or _str(resolved.get("wandb_run_name"))
    local_dirs = tuple(r.rel_path for r in c.wandb_runs)
    url = f"{base.rstrip('/')}/{entity}/{project}/runs/{ids[0]}" if ids and entity and project else None
    sync = None
    if url is None:
        sync = next((r.sync_command for r in c.wandb_runs if getattr(r, "sync_command", None)), None)
    return WandbInfo(run_ids=tuple(ids), project=project, entity=entity, base_url=base, display_name=name,
                     local_dirs=local_dirs, url=url, sync_command=sync)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _extra_configs(c: Collected) -> tuple:
    from ..model import ConfigDoc

    docs = []
    for run in c.wandb_runs:
        if getattr(run, "config", None):
            docs.append(ConfigDoc(path=run.rel_path, kind="wandb_config", data=dict(run.config)))
    return tuple(docs)


def _extras(c: Collected) -> dict[str, Any]:
    return {
        "train_log": c.train_log,
        "tb_files": tuple(c.tb_files),
        "model_dir": c.model_dir,
        "sbatch": c.sbatch,
        "eval_metrics": tuple(c.eval_metrics),
        "rank_logs": tuple(c.rank_logs),
        "slurm_logs": tuple(c.slurm_logs),
        "wandb_runs": tuple(c.wandb_runs),
        "hf": c.hf,
        "run_metadata": c.metadata_raw,
    }
