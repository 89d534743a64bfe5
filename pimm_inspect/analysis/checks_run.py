"""Checks about the run as a whole: crashes, stalls, non-finite metrics, stale artifacts."""

from __future__ import annotations

import time

import numpy as np

from ..arrays import median
from ..evidence import RankLogFacts
from ..model import Finding, Run, Severity
from . import _facts
from .curves import SMALL_POINTS
from .distinct import distinct_sorted


def check_crashed(run: Run) -> list[Finding]:
    """``run.crashed``: an attempt ended with a traceback (error for the last one, warning if a later attempt recovered)."""
    findings = []
    slurm_paths = {log.path for log in run.slurm_logs}
    for i, att in enumerate(run.attempts):
        if att.ended != "crashed":
            continue
        last = i == len(run.attempts) - 1
        detail = att.end_detail or "a traceback"
        tb = next((e for e in run.events if e.kind == "traceback" and e.attempt == att.index), None)
        slurm = next((s for s in att.sources if s in slurm_paths), None)
        # Name the file the evidence is in: a W&B-only run has no train.log.
        fallback = slurm or next((s for s in att.sources if s == "train.log"), None) or next(iter(att.sources), "train.log")
        # A W&B folder's end is its transaction log's exit record: name that file, not the folder.
        exit_log = None if tb or slurm else _wandb_log(run, fallback)
        fallback = exit_log or fallback
        # A W&B transaction log is binary: the line is the one of its captured console output, not of the file.
        where = (f"console line {tb.line_no} of the output captured in {tb.source}" if tb and tb.source.endswith(".wandb")
                 else f"{tb.source}:{tb.line_no}" if tb else fallback)
        said = (f"The traceback starts at {where}. " if tb else
                f"W&B recorded the exit code in {where}; no traceback was captured. " if exit_log else
                f"The error is in {where}. ")
        findings.append(Finding(
            "run.crashed", Severity.ERROR if last else Severity.WARNING,
            f"attempt {att.index} crashed at step {att.last_step}: {detail}" if att.last_step is not None
            else f"attempt {att.index} crashed: {detail}",
            (tb.source,) if tb else (fallback,),
            (att.last_step, att.last_step) if att.last_step is not None else None,
            said + ("The run did not recover." if last else f"Attempt {att.index + 1} resumed afterwards.")))
    return findings


def _wandb_log(run: Run, folder: str) -> str | None:
    """The transaction log (``run-<id>.wandb``, run-relative) of the W&B folder ``folder`` names, or None."""
    for wrun in run.wandb_runs:
        if wrun.path == folder:
            inside = "" if folder == "." else folder.rstrip("/") + "/"
            return next((p for p in wrun.file_roles if p.endswith(".wandb") and p.startswith(inside)
                         and "/" not in p[len(inside):]), None)
    return None


def check_stalled(run: Run, now: float | None = None) -> list[Finding]:
    """``run.stalled``: the run's own files show recent activity but no new step for many usual intervals."""
    if run.status != "running":
        return []
    now = time.time() if now is None else now
    best = None
    seen: set[int] = set()  # tags of one train.log line share one time column: a second look cannot beat the first
    for s in run.series:
        if id(s.wall_times_s) in seen:
            continue
        seen.add(id(s.wall_times_s))
        known = np.isfinite(s.wall_times_s)
        finite = distinct_sorted([s.wall_times_s if known.all() else s.wall_times_s[known]])
        if finite.size > 3 and (best is None or finite.size > best.size):
            best = finite
    if best is None:
        return []
    usual = float(median(np.diff(best)))
    last_step_s = float(best[-1])
    # Activity by the files' own clocks (structured-log records keep coming while a rank hangs).
    activity = [last_step_s] + [r.last_time_s for r in run.rank_logs if r.last_time_s]
    last_activity = max(activity)
    if now - last_activity > 900:
        return []  # nothing shows the process is alive now: a stopped run or a copy, not a stall
    age = last_activity - last_step_s
    limit = max(20 * usual, 600.0)
    if age <= limit:
        return []
    return [Finding(
        "run.stalled", Severity.WARNING,
        f"no new step for {age / 60:.0f} min while the run is still writing (steps usually every {usual:.1f} s)",
        (), None,
        "The files are still fresh but training stopped advancing: a hang (NCCL, data loader), a stuck evaluation, or "
        "a job waiting to be killed. Structured logs (if enabled) show which rank is stuck in which phase.")]


def check_non_finite(run: Run) -> list[Finding]:
    """``metrics.non-finite``: NaN/inf in metric-writer series (train.log's reader reports its own)."""
    findings = []
    for s in run.series:
        if _facts.source_kind(run, s) == "train_log" or not len(s):
            continue
        if len(s) <= SMALL_POINTS:  # a few values: their sum is finite exactly when every one is (else numpy says which)
            total = sum(s.values.tolist())
            if total - total == 0:
                continue
        bad = ~np.isfinite(s.values)
        if bad.any():
            steps = s.steps[bad]
            findings.append(Finding(
                "metrics.non-finite", Severity.WARNING,
                f"{s.tag} has {int(bad.sum())} NaN/inf value(s) in {s.source}",
                (s.source,), (int(steps.min()), int(steps.max())),
                "A loss or metric became NaN/inf: check the learning rate, AMP scaler and input data around these steps."))
    return findings


def check_stale(run: Run) -> list[Finding]:
    """``artifacts.stale``: event files older than the run's start, checkpoints ahead of anything logged."""
    findings = []
    # The explanation names train.log: listed when the run has one (the file it speaks of), so its name is data too.
    log = ("train.log",) if run.train_log is not None else ()
    for event_file in run.event_files:
        if event_file.stale:
            findings.append(Finding(
                "artifacts.stale", Severity.WARNING,
                f"{event_file.path} was written before this run started ({run.provenance.created_at})",
                (event_file.path, *log), None,
                "A fresh launch into a reused directory truncates train.log and rewrites provenance, but leaves old "
                "event files behind; TensorBoard will mix the old run's curves with this one (same steps, two runs). "
                "Move the old file away."))
    top = run.train_log.last_step if run.train_log is not None else None
    if top is not None:
        for ck in run.checkpoints:
            if ck.global_step is not None and ck.global_step > top and ck.format != "hf":
                findings.append(Finding(
                    "artifacts.stale", Severity.WARNING,
                    f"{ck.path} is at step {ck.global_step}, beyond anything in train.log (last step {top})",
                    (ck.path, "train.log"), None,
                    "The checkpoint comes from an earlier run in the same directory (train.log was truncated by a fresh "
                    "launch) or the log was lost. Resuming would pick it up."))
    findings += _foreign_lightning_checkpoints(run)
    return findings


def _paces(run: Run) -> list[tuple[str, dict[int, int], float]]:
    """Per file of a Lightning logger in this folder (its ``epoch`` column): the file, epoch -> the first step it was
    written at, and the median steps per epoch; files with fewer than two epochs say nothing."""
    out = []
    for s in run.series:
        if s.tag != "epoch" or s.source_kind not in ("lightning_csv", "tb_events") or not len(s):
            continue
        starts: dict[int, int] = {}
        for step, value in zip(s.steps.tolist(), s.values.tolist()):
            if value == value and float(value).is_integer() and value >= 0:
                starts[int(value)] = min(starts.get(int(value), step), step)
        epochs = sorted(starts)
        gaps = [(starts[b] - starts[a]) / (b - a) for a, b in zip(epochs, epochs[1:]) if starts[b] > starts[a]]
        if gaps:
            out.append((s.source, starts, float(median(np.array(gaps, dtype=np.float64)))))
    return out


def _epoch_span(starts: dict[int, int], per_epoch: float, epoch: int) -> tuple[float, float]:
    """The steps epoch ``epoch`` began and ended at in a logged training: logged, or its pace carried on."""
    def start_of(e: int) -> float:
        known = max((k for k in starts if k <= e), default=min(starts))
        return starts[known] + (e - known) * per_epoch
    return start_of(epoch), start_of(epoch + 1)


def _foreign_lightning_checkpoints(run: Run) -> list[Finding]:
    """``artifacts.stale``: a Lightning checkpoint whose epoch and global_step no training this logger folder records
    could have reached (another training's ModelCheckpoint saved into this folder, or the file was copied)."""
    lightning = [ck for ck in run.checkpoints if ck.format == "lightning" and ck.epoch is not None
                 and ck.global_step is not None]
    paces = _paces(run) if lightning else []
    findings = []
    for ck in lightning:
        assert ck.epoch is not None and ck.global_step is not None
        # The step its loggers had reached (global_step counts optimizer steps, several per batch by hand).
        at = ck.logged_step if ck.logged_step is not None else ck.global_step
        spans = [(_epoch_span(starts, pace, ck.epoch), pace) for _src, starts, pace in paces]
        # Saved in its epoch: after the epoch began, by the step it ended at, give or take an epoch's steps (the
        # logged first step of an epoch is within one logging interval of the real one; past the logs, the pace
        # carried on is an estimate).
        if not paces or any(begun - pace <= at <= ended + pace for (begun, ended), pace in spans):
            continue
        (source, _starts, pace), ((begun, ended), _pace) = paces[0], spans[0]
        where = f"epoch {ck.epoch} ends by step {ended:g}" if at > ended else f"epoch {ck.epoch} starts at step {begun:g}"
        also = f" (and {len(paces) - 1} more logger file(s) of this folder)" if len(paces) > 1 else ""
        step = f"step {at}" + (f" of its loggers (global step {ck.global_step})" if at != ck.global_step else "")
        findings.append(Finding(
            "artifacts.stale", Severity.WARNING,
            f"{ck.path} is at epoch {ck.epoch}, {step}: the training {source} records took {pace:g} steps per "
            f"epoch ({where}){also}, so it did not write this checkpoint",
            (ck.path, *(src for src, _s, _p in paces)), None,
            "A Lightning checkpoint records the epoch it was saved in and how many steps its loggers had written "
            "(the fit loop's batches stepped; global_step where it does not say); the logger files hold the epoch of "
            f"every step they wrote. The checkpoint's pace is {at / (ck.epoch + 1):g} steps per epoch: another "
            "training wrote it (a ModelCheckpoint dirpath shared between runs, or a file copied here). `ckpt_path=` "
            "with it restores that training's weights, optimizer and epoch, not this one's."))
    return findings


def _latest_rank_logs(run: Run) -> list[RankLogFacts]:
    """Per rank, the structured log of the newest process start."""
    latest: dict[int, RankLogFacts] = {}
    for log in run.rank_logs:
        if log.rank is None:
            continue
        old = latest.get(log.rank)
        if old is None or (log.started or "") >= (old.started or ""):
            latest[log.rank] = log
    return [latest[r] for r in sorted(latest)]


def _step_of(log: RankLogFacts) -> int:
    """``last_step`` of a log kept by ``check_ranks_diverged`` (which drops the logs without one)."""
    assert log.last_step is not None
    return log.last_step


def check_ranks_diverged(run: Run) -> list[Finding]:
    """``run.ranks-diverged``: in the newest attempt, ranks stopped at different steps, or (the run no longer
    running) in different phases of one step: a hang or a dead rank (spec 11.1, hang diagnosis)."""
    logs = [log for log in _latest_rank_logs(run) if log.last_step is not None]
    if len(logs) < 2:
        return []
    steps_differ = len({log.last_step for log in logs}) > 1
    innermost = {log.rank: log.open_spans[-1] for log in logs if log.open_spans}
    mid_step = run.status != "running" and len(innermost) == len(logs) and len(set(innermost.values())) > 1
    if not (steps_differ or mid_step):
        return []
    detail = "; ".join(f"rank {log.rank}: step {log.last_step}, last event {_facts.one_line(str(log.last_event))}"
                       + (f", open {', '.join(map(_facts.one_line, log.open_spans))}" if log.open_spans else "")
                       for log in logs)
    behind = min(logs, key=_step_of)
    ahead = max(logs, key=_step_of)
    if steps_differ:
        message = f"rank {behind.rank} stopped at step {behind.last_step} while rank {ahead.rank} reached {ahead.last_step}"
    else:
        where = ", ".join(f"rank {rank} in {_facts.one_line(phase)}" for rank, phase in sorted(innermost.items()))
        message = f"the ranks ended inside step {behind.last_step} in different phases: {where}"
    return [Finding(
        "run.ranks-diverged", Severity.WARNING, message,
        tuple(log.path for log in logs), (_step_of(behind), _step_of(ahead)),
        f"Structured logs of the newest attempt: {detail}. Ranks of a data-parallel job move in lock step; a rank "
        "that falls behind, or sits in another phase when the job ends, is stuck (data loading, a collective "
        "waiting on a dead peer) or died, and the others wait for it. Its open spans say in which phase.")]
