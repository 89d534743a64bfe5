"""The unified run model: frozen dataclasses shared by every layer.

Paths inside the model are relative to ``Run.root`` (POSIX style strings), so
JSON output and snapshots are the same on every machine. Series are numpy
arrays because a run can hold tens of millions of points.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

import numpy as np

from .arrays import value_range
from .evidence import (EvalFacts, EventFileFacts, HfFacts, ModelDirFacts, RankLogFacts, RunSummary, SbatchFacts,
                       SlurmLogFacts, TrainLogFacts, WandbRunFacts)


class Severity(enum.IntEnum):
    """How much a finding matters; ordered so that ``max()`` gives the worst."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        """Lower-case name used in JSON and text output."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        """Parse ``info``/``warning``/``error`` (case-insensitive)."""
        return cls[text.strip().upper()]


RunKind = Literal["pimm", "tensorboard", "wandb", "hf-trainer", "unknown"]
"""What wrote a run directory (``load.discover.classify_dir``); ``unknown`` for a run that could not be loaded."""
RunStatus = Literal["finished", "running", "crashed", "stopped", "unknown"]
Era = Literal["E0", "E1", "E1b", "E2", "E3a", "E3b"]
"""pimm's on-disk format generation (docs/pimm-format.md)."""
Origin = Literal["fresh", "resume", "resume-inexact", "rollback", "warm-start", "restart", "unknown"]
"""How an attempt began."""
ScalarTable = Callable[["Run", "tuple[str, ...] | list[str] | str", str, bool], Any]
"""``(run, tags, policy, all_sources) -> pandas.DataFrame``: the scalar rows of ``Run.scalars()``."""

@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a user should know about a run, with a stable code."""

    code: str
    severity: Severity
    message: str
    paths: tuple[str, ...] = ()
    steps: tuple[int, int] | None = None
    """Inclusive step range the finding is about; None when it is not about steps."""
    explanation: str = ""
    attempts: tuple[int, ...] = ()
    """1-based indices of the attempts the finding is about; empty when it is not about attempts."""
    views: tuple[tuple[str, str], ...] = ()
    """(viewer, what it shows) for findings about what tools display, e.g. ("TensorBoard", "the newest copy
    per step"): front ends render these instead of parsing the explanation."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file that contributed to the run, with what was read of it."""

    path: str
    kind: str
    """Reader kind: train_log, tb_events, checkpoint, json, config_py, sbatch, structured_log, eval, slurm, wandb, hf_trainer."""
    size_bytes: int
    mtime_s: float
    bytes_read: int = 0
    """Offset up to which the reader consumed whole records (resume point for refresh)."""


@dataclass(frozen=True, slots=True, eq=False)
class ScalarSeries:
    """One tag's points from one source file (and one attempt where known)."""

    tag: str
    steps: np.ndarray
    """int64 global steps."""
    values: np.ndarray
    """float64 values; NaN and inf are kept as written."""
    wall_times_s: np.ndarray
    """float64 unix seconds; NaN where the source has no time for a point."""
    source: str
    """Path of the file the points came from, relative to the run root."""
    attempt: int | None = None
    """1-based attempt index; None when the source does not say."""
    source_kind: str | None = None
    """Reader kind of ``source`` (tb_events, train_log, wandb, hf_trainer), set by the loader."""

    def __len__(self) -> int:
        return int(self.steps.shape[0])

    @property
    def first_step(self) -> int | None:
        """Smallest step, or None for an empty series."""
        span = value_range(self.steps)  # once per step column: the tags of a train.log share theirs
        return None if span is None else int(span[0])

    @property
    def last_step(self) -> int | None:
        """Largest step, or None for an empty series."""
        span = value_range(self.steps)
        return None if span is None else int(span[1])


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A notable record from a text log (warning, error, resume, save, eval ...)."""

    kind: str
    """Category: warning, error, traceback, resume, save, best, eval, load, start, final, info."""
    message: str
    source: str
    line_no: int
    """1-based line number of the record's first line in ``source``."""
    level: str = "INFO"
    timestamp: str | None = None
    """The log's own timestamp text (node-local time, no zone)."""
    attempt: int | None = None
    step: int | None = None
    """Global step the event belongs to (the last Train: step before it), if known."""


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """Metadata of one checkpoint file or directory, read without torch."""

    path: str
    format: str
    """legacy (single torch.save file), standard (model/last dir), weights, dcp, hf, unknown."""
    role: str
    """last, last.prev, last.tmp, best, iter, prev, tmp, other."""
    complete: bool
    global_step: int | None = None
    epoch: int | None = None
    """As stored: E1+ next 0-based epoch index; E0 epoch_index+1."""
    iter_in_epoch: int | None = None
    best_metric_value: float | None = None
    schema: str | None = None
    version: int | None = None
    wandb_run_id: str | None = None
    wandb_cursor: int | None = None
    """W&B history cursor: E2 ``resume_step`` or E3b ``next_step``; None when absent."""
    wandb_cursor_key: str | None = None
    wandb_step_offset: int | None = None
    wandb_checkpoint_global_step: int | None = None
    wandb_state: Mapping[str, Any] | None = None
    """The whole ``logger.wandb`` (or flat legacy) dict as read, None if absent."""
    world_size: int | None = None
    num_workers: int | None = None
    has_loader_state: bool | None = None
    tensor_count: int = 0
    tensor_bytes: int = 0
    size_bytes: int = 0
    mtime_s: float = 0.0
    unsafe_globals: tuple[str, ...] = ()
    """Globals referenced by the pickle that are not on the allow-list (never called)."""
    top_level_keys: tuple[str, ...] = ()
    resume_candidate: bool = False
    """True for the checkpoint pimm's latest-checkpoint logic would pick."""


@dataclass(frozen=True, slots=True)
class ConfigDoc:
    """A configuration document: parsed data where possible, raw text for config.py."""

    path: str
    kind: str
    """resolved_config, model_config, config_py, wandb_config, checkpoint_config, hf_training_args, log_config
    (an attempt's ``Config:`` dump in train.log), lightning_hparams."""
    data: Mapping[str, Any] | None = None
    text: str | None = None
    attempt: int | None = None
    """The attempt the document belongs to (train.log dumps, W&B folders); None when it is the run's."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where and how the run was launched (attempt 1 for pimm, see spec section 6)."""

    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    """None when git information is absent (not a checkout or not recorded)."""
    host: str | None = None
    command: str | None = None
    launch_command: str | None = None
    cwd: str | None = None
    created_at: str | None = None
    source: str | None = None
    """File the provenance came from, relative to the run root."""
    git_remote: str | None = None
    """The git remote URL, when recorded (W&B's wandb-metadata.json)."""
    python: str | None = None
    """Interpreter as recorded (``CPython 3.11.7``); None when absent."""
    gpu: str | None = None
    """GPU model (with count) as recorded; None when absent or no GPU."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One process start of the run (a requeue, resume or restart)."""

    index: int
    """1-based."""
    started_at: str | None = None
    started_at_utc: bool = False
    """True when ``started_at`` is UTC (a writer's wall clock); False when it is train.log's local clock, which
    records no zone."""
    first_step: int | None = None
    last_step: int | None = None
    origin: Origin = "unknown"
    """fresh, resume (exact), resume-inexact, rollback, warm-start, restart (from scratch into a used directory), unknown."""
    resumed_from: str | None = None
    """Checkpoint path the attempt resumed from (as the log names it)."""
    resume_step: int | None = None
    """Global step restored from the checkpoint."""
    ended: str = "unknown"
    """completed, crashed, killed (a later attempt followed), stopped (last attempt, no end marker), running, unknown."""
    end_detail: str | None = None
    sources: tuple[str, ...] = ()
    saved_steps: tuple[int, ...] = ()
    """Global steps at which this attempt saved a checkpoint."""
    lost_steps: tuple[int, int] | None = None
    """Inclusive range of steps this attempt trained but no checkpoint kept (redone or lost for good);
    None without checkpoint evidence (no save, no restore point): nothing to have lost it from."""
    restore_step: int | None = None
    """The restore point: the last step already trained when this attempt began, so it trains from
    ``restore_step + 1`` (the logged resume step, else the step before its first logged one when it
    resumed); None for a fresh start or a restart from scratch, and when unknown. Every range about
    replayed, skipped or lost steps starts from it."""
    restored_checkpoint: str | None = None
    """The checkpoint this attempt restored (its ``CheckpointInfo.path``, relative to the run root, when the run
    holds it; else the path as the log names it, made relative to the run where it lies inside it); None for a
    fresh start, a restart from scratch, or when no file says. Its step is ``restore_step``."""


@dataclass(frozen=True, slots=True)
class ReplayedRange:
    """An inclusive step range that holds more than one copy of its steps, and who wrote each copy.

    Ranges are cut wherever the set of writers changes, so three attempts over 51-75 and two over 76-90 are two
    ranges: ``51-75: 3 copies (#1 #2 #3)`` and ``76-90: 2 copies (#2 #3)``. Computed once, by analysis.
    """

    first_step: int
    last_step: int
    copies: int
    """How many copies of each step of the range exist (one per writing attempt or writer session)."""
    attempts: tuple[int, ...]
    """1-based attempts that wrote a copy, oldest first; empty when the writers are not attempts."""
    paths: tuple[str, ...] = ()
    """The files holding the copies, relative to the run root."""


@dataclass(frozen=True, slots=True)
class WandbInfo:
    """What the run knows about its W&B identity."""

    run_ids: tuple[str, ...] = ()
    project: str | None = None
    entity: str | None = None
    base_url: str | None = None
    display_name: str | None = None
    local_dirs: tuple[str, ...] = ()
    url: str | None = None
    """The run page as it exists now; None for a never-synced offline run or a run the server rejected."""
    sync_command: str | None = None
    """One ``wandb sync`` covering every never-synced local folder of the run, by absolute path."""
    mode: str | None = None
    """online, offline, unknown (local folders give no sign either way), or None without local folders."""
    url_after_sync: str | None = None
    """Where a never-synced offline run will be once synced (entity known)."""
    entity_source: str | None = None
    """The file the entity was read from (run record, settings, debug.log, resolved config)."""
    server_rejection: str | None = None
    """The server refused to create the run (e.g. HTTP 404 ``entity x not found during upsertBucket``)."""
    link_note: str | None = None
    """Why there is no link, where the entity came from, or that the host is assumed; None when plain."""
    link_refused: tuple[str, ...] = ()
    """Why no link or command was formed from what the run's files record (a server address that is not
    http(s) with a valid host and no userinfo, a name with control characters or ``/ \\ # ? % :``, a folder
    path that is not text): ``wandb.link-refused``."""


@dataclass(frozen=True, slots=True, eq=False)
class Run:
    """Everything pimm-inspect knows about one run directory."""

    root: Path
    """Absolute path of the run directory; every other path is relative to it."""
    kind: RunKind
    """pimm, tensorboard, wandb, hf-trainer."""
    era: Era | None
    """E0, E1, E1b, E2, E3a, E3b for pimm runs, else None."""
    status: RunStatus
    """finished, running, crashed, stopped, unknown."""
    name: str = ""
    attempts: tuple[Attempt, ...] = ()
    series: tuple[ScalarSeries, ...] = ()
    events: tuple[LogEvent, ...] = ()
    checkpoints: tuple[CheckpointInfo, ...] = ()
    configs: tuple[ConfigDoc, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)
    wandb: WandbInfo = field(default_factory=WandbInfo)
    findings: tuple[Finding, ...] = ()
    sources: tuple[SourceFile, ...] = ()
    event_files: tuple[EventFileFacts, ...] = ()
    """TensorBoard event files in process-start order (name time, then first wall time)."""
    train_log: TrainLogFacts | None = None
    wandb_runs: tuple[WandbRunFacts, ...] = ()
    model_dir: ModelDirFacts | None = None
    """Facts of pimm's ``model/`` folder; None when the run has none."""
    sbatch: SbatchFacts | None = None
    rank_logs: tuple[RankLogFacts, ...] = ()
    slurm_logs: tuple[SlurmLogFacts, ...] = ()
    hf: HfFacts | None = None
    run_metadata: Mapping[str, Any] | None = None
    """run_metadata.json as read (scanned for secrets); None when absent or unreadable."""
    eval_results: tuple[EvalFacts, ...] = ()
    """The final tests the run holds (``eval/<stamp>/test_metrics.json``), oldest first."""
    summary: RunSummary | None = None
    """Derived row facts (last step, best metric, last logged time); set by analysis, None before it."""
    replayed: tuple[ReplayedRange, ...] = ()
    """Step ranges held more than once, with copy counts and writers; set by analysis, empty before it."""
    scalar_table: ScalarTable | None = field(default=None, repr=False, compare=False)
    """The row rules of ``scalars()`` (``analysis.scalar_frame``), handed in by analysis; None before it."""

    def tags(self) -> list[str]:
        """Sorted unique scalar tags."""
        return sorted({s.tag for s in self.series})

    def series_for(self, tag: str) -> list[ScalarSeries]:
        """All series of one tag, in source order."""
        return [s for s in self.series if s.tag == tag]

    def config(self, kind: str = "resolved_config") -> ConfigDoc | None:
        """The first config document of a kind, or None."""
        return next((c for c in self.configs if c.kind == kind), None)

    def scalars(self, tags: tuple[str, ...] | list[str] | str = (), policy: str = "all",
                all_sources: bool = False) -> Any:  # a pandas.DataFrame
        """Tidy DataFrame (tag, step, value, wall_time, attempt, source, seq), keyed (tag, step, attempt, source, seq).

        ``policy="all"`` keeps every record as written (``seq`` numbers repeats of a step within one file and
        attempt: 0, 1, ...); ``newest``/``oldest`` keep one row per (tag, step). ``tags`` are globs; each tag comes from its
        preferred source (event files, W&B, Trainer state, train.log) unless ``all_sources``. The same rows
        as ``pimm-inspect export`` and the point counts of ``show --json``.
        """
        # The row rules live in analysis (shared with export and show), which hands them to the Run it analyses:
        # the model never imports a layer above it.
        if self.scalar_table is None:
            raise ValueError("Run.scalars() needs an analysed run: use pimm_inspect.load_run or Session.load")
        return self.scalar_table(self, tags, policy, all_sources)


def make_series(
    tag: str,
    steps: Any,
    values: Any,
    wall_times_s: Any | None,
    source: str,
    attempt: int | None = None,
) -> ScalarSeries:
    """Build a ScalarSeries with the canonical dtypes (int64, float64, float64)."""
    step_array = np.asarray(steps, dtype=np.int64)
    value_array = np.asarray(values, dtype=np.float64)
    if wall_times_s is None:
        wall_array = np.full(step_array.shape, np.nan, dtype=np.float64)
    else:
        wall_array = np.asarray(wall_times_s, dtype=np.float64)
    return ScalarSeries(tag, step_array, value_array, wall_array, source, attempt)
