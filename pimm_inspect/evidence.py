"""Typed facts of each file family a run holds (model layer, beside ``model``).

The loader turns each reader's raw result into one of these frozen records, keeping only what the layers
above need: checks, reports and the UI read ``Run.event_files``, ``Run.train_log``, ``Run.wandb_runs`` ...
and never a reader type, so a fact is computed once, in ``load``, and every front end sees the same one.
Paths are relative to ``Run.root`` (files found outside the run, such as its Slurm log, are absolute).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from .model import Attempt, Era, Finding, RunKind, RunStatus


@dataclass(frozen=True, slots=True)
class EventMarker:
    """A ``file_version`` or ``session_log`` record of an event file (purge semantics depend on them)."""

    kind: str
    """file_version or session_log."""
    step: int
    wall_time_s: float
    detail: str
    """The file_version string, or the session_log status name (START, STOP, CHECKPOINT)."""


@dataclass(frozen=True, slots=True)
class EventFileFacts:
    """One TensorBoard event file: what its name says and what its records span."""

    path: str
    name_time_s: int | None
    """The creation time in the file name (``events.out.tfevents.<time>.<host>...``); None for other names."""
    host: str | None
    pid: int | None
    """The writer's process id from the name (torch/tensorboard writers); None for tensorboardX names."""
    first_wall_time_s: float | None
    last_wall_time_s: float | None
    record_count: int
    scalar_count: int
    markers: tuple[EventMarker, ...] = ()
    stale: bool = False
    """True when the file's first record predates the run's creation: left over from an earlier run in the
    same directory. Its series are not this run's and never count toward its steps."""


@dataclass(frozen=True, slots=True)
class AttemptStart:
    """Where one attempt (process start) begins in train.log."""

    attempt: int
    """1-based attempt index, the same numbering as ``Run.attempts``."""
    line_no: int
    """1-based line number of the attempt's first line."""
    byte_offset: int
    """Byte offset of that line."""


@dataclass(frozen=True, slots=True)
class BestMetric:
    """A ``Best validation <metric> updated to: <value>`` record of train.log."""

    name: str
    value: float
    step: int | None


@dataclass(frozen=True, slots=True)
class TrainLogFacts:
    """What train.log holds beyond its series and events: where attempts start, best metrics, size."""

    path: str
    attempt_starts: tuple[AttemptStart, ...]
    best: tuple[BestMetric, ...]
    last_step: int | None
    """Largest global step any Train: line logged; None when none did."""
    line_count: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class WandbRunFacts:
    """One local W&B run folder (``wandb/run-<stamp>-<id>/``)."""

    path: str
    run_id: str | None
    project: str | None
    entity: str | None
    display_name: str | None
    offline: bool
    synced: bool
    url: str | None
    sync_command: str | None
    start_time_s: float | None
    step_metrics: Mapping[str, str]
    """Tag -> the key its points are plotted against (a define_metric step metric, or ``_step``)."""
    history_rows: int
    first_step: int | None
    few_rows_late_start: bool
    """Explicit steps, few rows and a first ``_step`` above 0: the "only one point" confusion."""
    dropped_steps: tuple[int, ...]
    """Steps of ``run.log`` calls W&B ignored because the step went backwards."""
    dropped_step_warning: str | None
    file_roles: Mapping[str, str] = field(default_factory=dict)
    """Run-relative path -> what the auxiliary file is."""
    command: str | None = None
    """The launch command W&B recorded (program and args, from ``wandb-metadata.json``)."""
    command_source: str | None = None
    """The file that command was read from."""
    resume_from: str | None = None
    """The run record's ``resume_from``/``fork_from`` branch point (``resume_from <id>?_step=N``), if any."""
    dropped_step_source: str | None = None
    """The file the first dropped-step evidence was read from."""
    resume_evidence: str | None = None
    """The record saying the server continued an existing run of this id (``<log>: telemetry feature resumed``,
    ``<folder>/logs/debug.log:N: run resumed``, the run record's ``resumed``/``starting_step``); None when none does."""
    reinit_of_active: str | None = None
    """``<folder>/logs/debug.log:N`` when a second ``wandb.init`` in a process whose run was still active made this
    folder (W&B returned the active run): no process start, so no attempt of its own."""


@dataclass(frozen=True, slots=True)
class ModelDirFacts:
    """Facts about pimm's ``model/`` folder itself (its checkpoints are ``Run.checkpoints``)."""

    link_target: str | None
    """What ``model`` points to when it is a symlink (as stored in the link)."""
    link_dangling: bool
    leftovers: tuple[str, ...]
    """last.tmp/, last.prev/ and ``*.tmp`` entries left by an interrupted publish."""


@dataclass(frozen=True, slots=True)
class SbatchFacts:
    """A run's ``launch.sbatch``: its ``#SBATCH`` directives and text (scanned for secrets)."""

    path: str
    directives: Mapping[str, str]
    text: str


@dataclass(frozen=True, slots=True)
class RankLogFacts:
    """One structured-log file: one rank of one process start (spec section 9)."""

    path: str
    rank: int | None
    started: str | None
    """Process-start stamp from the file name (node-local time)."""
    last_step: int | None
    last_event: str | None
    last_time_s: float | None
    open_spans: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SlurmAttemptFacts:
    """The part of a Slurm log written during one submitit attempt."""

    k: int | None
    """submitit attempt number; None for text before any marker."""
    n: int | None
    requeued: bool
    problems: tuple[tuple[str, str], ...]
    """(kind, first matching line) per kind found: time-limit, preempted, oom, nccl, ..."""


@dataclass(frozen=True, slots=True)
class SlurmLogFacts:
    """A Slurm log of the run's job, cut at each submitit attempt marker."""

    path: str
    job_id: str | None
    segments: tuple[SlurmAttemptFacts, ...]


@dataclass(frozen=True, slots=True)
class EvalFacts:
    """One final test of the run: pimm's tester writes ``eval/<stamp>/test_metrics.json``."""

    path: str
    """The file, relative to the run."""
    stamp: str
    """The ``eval/<stamp>/`` folder's name (when the test ran)."""
    split: str | None = None
    checkpoint: str | None = None
    """Which checkpoint was tested (``model_best``, ``model_last``), as the file says."""
    metrics: tuple[tuple[str, float], ...] = ()
    """The numeric metrics (the file's ``metrics`` object, else its numeric top-level values), in file order."""


@dataclass(frozen=True, slots=True)
class HfFacts:
    """Trainer facts of an HF output dir that are not series, checkpoints or attempts."""

    state_path: str | None
    best_metric: float | None
    schedule_notes: tuple[str, ...]
    best_metric_name: str | None = None
    """The metric ``best_metric`` is of (``metric_for_best_model`` as the Trainer compares it, ``eval_loss``)."""
    history_conflicts: tuple[tuple[int, int], ...] = ()
    """Step ranges where a checkpoint's log_history holds other values than the newest state's (another attempt's
    rows), as read; ``analysis.replays`` decides what was replayed."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Derived one-line facts of a run (``ls``, ``show`` and the runs table), computed once by analysis."""

    last_step: int | None
    """Largest step this run reached: over its attempts, else its series; stale files never count."""
    last_logged_s: float | None
    """Unix time of the newest point any (non-stale) series logged, by the run's own clock."""
    best_metric: str
    """The best selection metric reached, e.g. ``mIoU 0.6123``; '-' when unknown."""
    best_metric_name: str | None = None
    """Name of that metric (train.log's ``Best validation <name>``); None when unknown or unnamed."""
    best_metric_value: float | None = None
    """Its value as a number; None when unknown."""
    lost_steps: int = 0
    """Steps trained that no checkpoint kept, over all attempts (``analysis.lost_compute``)."""
    lost_wall_s: float | None = 0.0
    """Their wall time; None when some lost range has no times."""
    lost_gpu_hours: float | None = 0.0
    """Their GPU-hours; None when some lost range has no GPU count or no times."""
    failed_requeues: int = 0
    """submitit attempts a Slurm log started that trained nothing."""



@dataclass(frozen=True, slots=True)
class RunBest:
    """The best selection metric a run reached (``RunSummary``'s, as ``ls --json`` and the runs table give it)."""

    name: str | None
    """Its name (train.log's ``Best validation <name>``); None when the files do not name it."""
    value: float
    text: str
    """``mIoU 0.6123`` (the value alone when unnamed): the cell ``ls --columns best_metric`` and the UI show."""


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One scalar tag of a run in brief, for the columns and sort keys ``last:TAG``, ``best:TAG``, ``min:TAG`` and
    ``max:TAG`` of ``ls``: from the tag's preferred source kind (``analysis.scalar_rows``), each step's newest
    copy, stale event files left out (as for ``RunSummary.last_step``)."""

    tag: str
    last_step: int
    """The largest step logged."""
    last: float
    """The value at that step (NaN and inf stay what was logged)."""
    min: float | None
    """The smallest finite value; None when no value is finite."""
    max: float | None
    """The largest finite value; None when no value is finite."""


@dataclass(frozen=True, slots=True)
class RunRow:
    """One analysed run as a line of ``ls`` (and of a runs table before the run is opened): small, cacheable.

    Built by ``analysis.summary.run_row`` from the analysed Run, so a row read from the cache is the row a
    fresh load gives.
    """

    root: Path
    """The run directory (absolute), as it was loaded."""
    name: str
    kind: RunKind
    era: Era | None
    status: RunStatus
    attempts: int
    """Number of attempts (process starts)."""
    wandb_run_ids: tuple[str, ...]
    errors: int
    """Findings per severity, analysis included."""
    warnings: int
    infos: int
    summary: RunSummary
    top_finding: str
    """The worst finding's message (the first of the worst severity), secrets masked; '' when there is none."""
    findings: tuple[Finding, ...] = ()
    """Every finding, worst first (the runs table's filter matches their codes; its preview lists them)."""
    attempt_facts: tuple[Attempt, ...] = ()
    """Each attempt (the runs table's preview)."""
    command: str | None = None
    """The launch command (else the command) the run records, secrets masked; None when none."""
    config: tuple[tuple[str, Any], ...] = ()
    """The run's query config (``analysis.configs.query_config``) with its secrets masked (``analysis.secrets``:
    a secret's value is ``****``), flattened to ``a.b.c`` keys, in document order: what the ``cfg.<key> OP value``
    filter compares and ``ls --columns cfg.<key>`` shows, so no filter can probe a secret's value."""
    metrics: tuple[MetricSummary, ...] = ()
    """Every scalar tag in brief, sorted by tag (``ls --columns last:TAG`` and the like)."""

    @property
    def best_metric(self) -> RunBest | None:
        """The best selection metric the run reached (``RunSummary``'s); None when unknown."""
        s = self.summary
        if s.best_metric_value is None:
            return None
        return RunBest(s.best_metric_name, s.best_metric_value, s.best_metric)

    @property
    def last_logged_at(self) -> str | None:
        """When the newest point of any (non-stale) series was logged, by the run's own clock, as ISO 8601 UTC with
        milliseconds (``2026-07-16T12:30:30.000+00:00``: a fixed width, so the text sorts as the time); None when
        nothing was logged or the time is not a date."""
        return iso_utc(self.summary.last_logged_s)

    def metric(self, tag: str) -> MetricSummary | None:
        """The summary of one scalar tag; None when the run has no such tag."""
        return next((m for m in self.metrics if m.tag == tag), None)


def iso_utc(seconds: float | None) -> str | None:
    """Unix seconds as ISO 8601 UTC with milliseconds; None for None, NaN, inf or a time beyond year 9999."""
    import math
    from datetime import datetime, timezone

    if seconds is None or not math.isfinite(seconds):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None
