"""Assemble one :class:`Run` from the raw reader results of a run directory."""

from __future__ import annotations

import time
from pathlib import Path

from ..arrays import median, unique_sorted
from ..model import Attempt, CheckpointInfo, Era, Finding, Run, RunStatus, Severity
from . import evidence
from .attempt_context import attempt_context
from .attempt_endings import finish_attempts
from .attempts import attempts_and_series
from .checkpoint_writers import checkpoint_writers
from .restored import restored_checkpoints
from .stamps import stamp_seconds
from .collect import Collected, collect
from .collected import FileCache
from .discover import classify_dir
from .progress import ReadTracker
from .run_configs import extra_configs
from .wandb_link import run_provenance, wandb_events, wandb_info

LIVE_WINDOW_S = 900.0
"""A run whose newest file changed this recently (and agrees with its own clock) may still be running."""


def load_run(path: Path | str, now: float | None = None, cache: FileCache | None = None,
             progress: ReadTracker | None = None) -> Run:
    """Read the run directory at ``path`` into a Run (reader findings only, no analysis).

    Pass the same cache (``FileCache``, the session's ``ReadCache``) on every refresh of a live run so only appended bytes are read;
    ``progress`` (a ``ReadTracker``) is told of every file and can stop the read between files.
    """
    return load_run_and_liveness(path, now, cache, progress)[0]


def load_run_and_liveness(path: Path | str, now: float | None = None, cache: FileCache | None = None,
                          progress: ReadTracker | None = None) -> tuple[Run, bool]:
    """``load_run`` plus whether the run looked live at ``now``: the only fact of a Run that changes with the
    clock alone (a live run becomes stopped when its files stay quiet; a quiet one never becomes live again)."""
    root = Path(path).absolute()
    kind = classify_dir(root) or "pimm"
    c = collect(root, kind, cache, progress)
    if progress is not None:
        progress.stage("assembling")
    attempts, series = attempts_and_series(c)
    live = _looks_live(c, now if now is not None else time.time())
    status = _status(attempts, live)
    best_names = frozenset(b[0] for b in c.train_log.best) if c.train_log is not None else frozenset()
    checkpoints, attempts = checkpoint_writers(_checkpoints(c), attempts, series, best_names)
    attempts = finish_attempts(attempts, live, c)
    save_paths = [seg.save_path for seg in c.train_log.segments if seg.save_path] if c.train_log is not None else []
    attempts = restored_checkpoints(attempts, checkpoints, root, save_paths)
    attempts = attempt_context(attempts, c, series)
    return Run(
        root=root,
        kind=kind,
        era=_era(c, checkpoints) if kind == "pimm" else None,
        status=status,
        name=root.name,
        attempts=tuple(attempts),
        series=tuple(series),  # attributed to attempts and tagged with their source kinds (``attribution``)
        events=(tuple(c.train_log.events) if c.train_log is not None else ()) + tuple(wandb_events(c)),
        checkpoints=tuple(checkpoints),
        configs=tuple(c.configs) + extra_configs(c),
        provenance=run_provenance(c),
        wandb=wandb_info(c, checkpoints),
        findings=tuple(_dedupe(c.findings)),
        sources=tuple(sorted(c.sources, key=lambda s: s.path)),
        event_files=evidence.event_files(c),
        train_log=evidence.train_log(c),
        wandb_runs=evidence.wandb_runs(c),
        model_dir=evidence.model_dir(c),
        sbatch=evidence.sbatch(c),
        rank_logs=evidence.rank_logs(c),
        slurm_logs=evidence.slurm_logs(c),
        hf=evidence.hf(c),
        eval_results=evidence.eval_results(c),
        run_metadata=c.metadata_raw,
    ), live


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    out = []
    for f in findings:
        key = (f.code, f.message, f.paths)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


STALL_INTERVALS = 20
"""A writer silent for this many of its own step intervals (and longer than LIVE_WINDOW_S) is gone."""


LIVE_KINDS = ("train_log", "tb_events", "structured_log", "wandb", "lightning_csv")
"""Source kinds a live run keeps writing: the newest of their mtimes says when it last wrote."""


def _looks_live(c: Collected, now: float) -> bool:
    """True when something is still being written (``is_live`` on what the full read found)."""
    newest = max((s.mtime_s for s in c.sources if s.kind in LIVE_KINDS), default=0.0)
    tails = {"train.log"} | {p for p, _n, _r in c.tb_files} | {r.path for r in c.rank_logs}
    # Readers report a half-written tail of a stream as an info-level file.truncated (damage is file.corrupt).
    cut_tail = any(f.code == "file.truncated" and f.severity == Severity.INFO and f.paths and f.paths[0] in tails
                   for f in c.findings)
    last_wall = max((r.last_wall_time_s or 0.0 for _p, _n, r in c.tb_files), default=0.0)
    last_log = log_time(c.train_log.segments[-1].ended_at) if c.train_log is not None and c.train_log.segments else None
    return is_live(now, newest, cut_tail, _step_cadence_s(c) if cut_tail else None, last_wall or None, last_log)


def is_live(now: float, newest_mtime_s: float, cut_tail: bool, cadence_s: float | None, last_wall_s: float | None,
            last_log_s: float | None) -> bool:
    """True when something is still being written: a fresh half-written tail, or fresh consistent files.

    A tail cut mid-record is a live writer only while the last write is recent against the run's own
    step cadence (``cadence_s``, None when unknown); long after that it is a process killed mid-write.
    Without a cut tail, fresh files count only when the run's own clock (``last_wall_s`` of its event
    files, ``last_log_s`` of its train.log) agrees with their mtimes.
    """
    if cut_tail:
        window = max(LIVE_WINDOW_S, STALL_INTERVALS * cadence_s) if cadence_s else LIVE_WINDOW_S
        return now - newest_mtime_s <= window
    if now - newest_mtime_s > LIVE_WINDOW_S:
        return False
    # A copy or fresh checkout also has new mtimes: require the run's own clock to agree.
    if last_wall_s and abs(newest_mtime_s - last_wall_s) < 3600:
        return True
    return last_log_s is not None and abs(newest_mtime_s - last_log_s) < 15 * 3600  # node-local time: allow any zone


def _step_cadence_s(c: Collected) -> float | None:
    """Median seconds between the distinct write times of the run's most often written series."""
    import numpy as np

    candidates = [s for _p, _n, r in c.tb_files for s in r.series.values()]
    if c.train_log is not None:
        candidates += list(c.train_log.series)
    best = None
    for s in candidates:
        walls = s.wall_times_s[np.isfinite(s.wall_times_s)]
        if walls.size > 3 and (best is None or walls.size > best.size):
            best = walls
    if best is None:
        return None
    diffs = np.diff(unique_sorted(best))
    return float(median(diffs)) if diffs.size else None


def log_time(text: str | None) -> float | None:
    """A train.log timestamp (node-local, read as UTC like the reader's wall times) in seconds, or None."""
    return stamp_seconds(text[:19], "%Y-%m-%d %H:%M:%S") if text else None


def _status(attempts: list[Attempt], live: bool) -> RunStatus:
    return run_status(attempts[-1].ended if attempts else None, live)


def run_status(last_ended: str | None, live: bool) -> RunStatus:
    """The run's status from how its last attempt ended (None: no attempt found) and whether it is live."""
    if last_ended is None:
        return "running" if live else "unknown"
    if last_ended == "completed":
        return "finished"
    if last_ended == "crashed":
        return "crashed"
    return "running" if live else "stopped"


def _checkpoints(c: Collected) -> list[CheckpointInfo]:
    items: list[CheckpointInfo] = []
    if c.model_dir is not None:
        items += list(c.model_dir.checkpoints)
    if c.lightning is not None:
        items += list(c.lightning.checkpoints)
    if c.hf is not None:
        items += [h.info for h in c.hf.checkpoints]
        if c.hf.final_model is not None:
            items.append(c.hf.final_model)
    return items


def _era(c: Collected, checkpoints: list[CheckpointInfo]) -> Era | None:
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


