"""The unified run model: frozen dataclasses shared by every layer.

Paths inside the model are relative to ``Run.root`` (POSIX style strings), so
JSON output and snapshots are the same on every machine. Series are numpy
arrays because a run can hold tens of millions of points.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from .evidence import (EvalFacts, EventFileFacts, HfFacts, ModelDirFacts, RankLogFacts, RunSummary, SbatchFacts,
                       SlurmLogFacts, TrainLogFacts, WandbRunFacts)

if TYPE_CHECKING:  # numpy is imported with the first series made, not with the model (a cached document needs none)
    import numpy as np


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


RunKind = Literal["pimm", "tensorboard", "wandb", "hf-trainer", "lightning", "unknown"]
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
    """Stable dotted code (``resume.rollback``); the README's finding codes table lists them."""
    severity: Severity
    """info, warning or error."""
    message: str
    """One line saying what was found, with the numbers."""
    paths: tuple[str, ...] = ()
    """The files the finding is about, relative to the run root."""
    steps: tuple[int, int] | None = None
    """Inclusive step range the finding is about; None when it is not about steps."""
    explanation: str = ""
    """Why it matters and what to do, in prose; empty when the message says it all."""
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
    """Reader kind: train_log, tb_events, checkpoint, json, config_py, sbatch, structured_log, eval, slurm, wandb, hf_trainer,
    lightning_csv."""
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
        length: int = self.steps.shape[0]  # a Python int already (asked hundreds of times per run)
        return length

    @property
    def first_step(self) -> int | None:
        """Smallest step, or None for an empty series."""
        from .arrays import value_range  # numpy: imported when series are, not with the model

        span = value_range(self.steps)  # once per step column: the tags of a train.log share theirs
        return None if span is None else int(span[0])

    @property
    def last_step(self) -> int | None:
        """Largest step, or None for an empty series."""
        from .arrays import value_range  # numpy: imported when series are, not with the model

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
    """The checkpoint file or directory, relative to the run root."""
    format: str
    """legacy (single torch.save file), standard (model/last dir), weights, dcp, hf, lfs-pointer (a Git LFS pointer
    file in its place: the checkpoint was not fetched), unknown."""
    role: str
    """last, last.prev, last.tmp, best, iter, prev, tmp, other."""
    complete: bool
    """False for a damaged, truncated, unsealed or temporary checkpoint: a resume could not use it."""
    global_step: int | None = None
    """The training step it was saved at, as stored; None when it does not say."""
    epoch: int | None = None
    """As stored: E1+ next 0-based epoch index; E0 epoch_index+1."""
    iter_in_epoch: int | None = None
    """Iteration within the epoch for a mid-epoch save, as stored."""
    best_metric_value: float | None = None
    """The best validation metric recorded in it."""
    best_metric_name: str | None = None
    """The metric ``best_metric_value`` is of, when a file names it (HF: ``metric_for_best_model``, as the Trainer
    compares it, ``eval_loss``); None when unnamed."""
    schema: str | None = None
    """The saved dict's ``schema`` entry, as stored."""
    version: int | None = None
    """The saved dict's ``version`` (else ``checkpoint_version``) entry, as stored."""
    wandb_run_id: str | None = None
    """The W&B run id saved with it, for resuming that W&B run."""
    wandb_cursor: int | None = None
    """W&B history cursor: E2 ``resume_step`` or E3b ``next_step``; None when absent."""
    wandb_cursor_key: str | None = None
    """Which key held ``wandb_cursor`` (``resume_step`` or ``next_step``)."""
    wandb_step_offset: int | None = None
    """The saved W&B ``step_offset`` (added to the global step of W&B rows)."""
    wandb_checkpoint_global_step: int | None = None
    """The global step the W&B state says the checkpoint was saved at."""
    wandb_state: Mapping[str, Any] | None = None
    """The whole ``logger.wandb`` (or flat legacy) dict as read, None if absent."""
    world_size: int | None = None
    """Number of training processes when it was saved, as stored."""
    num_workers: int | None = None
    """Data loader workers when it was saved, as stored."""
    has_loader_state: bool | None = None
    """Whether it holds the data loader's position (an exact mid-epoch resume); None when unknown."""
    tensor_count: int = 0
    """Tensors referenced by the pickle (never loaded)."""
    tensor_bytes: int = 0
    """Bytes of tensor storage it holds."""
    size_bytes: int = 0
    """Size on disk (a directory: the sum of its files)."""
    mtime_s: float = 0.0
    """Modification time, unix seconds."""
    unsafe_globals: tuple[str, ...] = ()
    """Globals referenced by the pickle that are not on the allow-list (never called)."""
    unsafe_uncalled: tuple[str, ...] = ()
    """Those of ``unsafe_globals`` the whole pickle was read without calling (it keeps them as values, such as a
    class in the hyperparameters); the others it calls while loading, or the read did not get to its end."""
    top_level_keys: tuple[str, ...] = ()
    """Keys of the saved dict (``state_dict``, ``optimizer``, ``epoch`` ...)."""
    resume_candidate: bool = False
    """True for the checkpoint pimm's latest-checkpoint logic would pick."""
    saved_by_attempt: int | None = None
    """The attempt that wrote it, from the files (``load.checkpoint_writers``: the attempt whose logged value at its
    step is its best metric value, else the last that logged a save there, else the only one that trained that
    step); None when they do not say."""
    saved_dir: str | None = None
    """The folder the writer recorded saving its checkpoints into, as written (Lightning's ModelCheckpoint
    ``dirpath`` in the checkpoint's callback state: relative to the training's working directory, or absolute);
    None when no file says."""
    logged_step: int | None = None
    """Lightning: the fit loop's ``_batches_that_stepped`` when it was saved, the step its loggers write next
    (``global_step`` counts optimizer steps: several per batch when a module steps several optimizers by hand);
    None when the checkpoint does not record it."""


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
    """When the attempt started, as the file records it; None when unknown."""
    started_at_utc: bool = False
    """True when ``started_at`` is UTC (a writer's wall clock); False when it is train.log's local clock, which
    records no zone."""
    first_step: int | None = None
    """First global step the attempt logged; None when it logged none."""
    last_step: int | None = None
    """Last global step the attempt logged; None when it logged none."""
    origin: Origin = "unknown"
    """fresh, resume (exact), resume-inexact, rollback, warm-start, restart (from scratch into a used directory), unknown."""
    resumed_from: str | None = None
    """Checkpoint path the attempt resumed from (as the log names it)."""
    resume_step: int | None = None
    """Global step restored from the checkpoint."""
    ended: str = "unknown"
    """completed, crashed, killed (a later attempt followed), stopped (no end marker, and no later attempt ended it:
    the last attempt, or one still writing after the next began), running, unknown."""
    end_detail: str | None = None
    """What the files say about the end (the exception, the Slurm signal ...), secrets not yet masked."""
    sources: tuple[str, ...] = ()
    """The files this attempt's facts came from, relative to the run root."""
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
    job_id: str | None = None
    """The Slurm job the attempt ran in (structured logs' ``job_id``, else its Slurm log's name); None when no file
    says. A requeue keeps the job id; a resubmission gets a new one."""
    array_index: int | None = None
    """The job's array task index (``slurm-<A>_<a>.out``); None when not an array task or no file says."""
    nodes: tuple[str, ...] = ()
    """Hosts the attempt ran on (structured logs' ``host_name`` by rank, else its Slurm log's node lines)."""
    partition: str | None = None
    """Slurm partition (``launch.sbatch``; only when the run's attempts ran in at most one job, as the script is
    rewritten by each submission)."""
    gpus: int | None = None
    """GPUs of the attempt: structured logs' ``world_size`` (pimm runs one process per GPU), else what
    ``launch.sbatch`` asked for (``--gpus-per-node`` x ``--nodes``, ``--gres=gpu:N``, ``--gpus``); None when unrecorded."""
    elapsed_s: float | None = None
    """Wall time from the attempt's first to its last record (train.log lines, else its event files' wall times)."""
    lost_wall_s: float | None = None
    """Wall time spent on ``lost_steps`` (from the wall times of the attempt's own points); None without lost steps
    or without times."""
    lost_gpu_hours: float | None = None
    """``lost_wall_s`` x ``gpus`` / 3600; None when either is unknown."""
    context_sources: tuple[tuple[str, str], ...] = ()
    """(field, file) for each of the fields above that is set: the file that says it (relative to the run root;
    a Slurm log found outside the run by its absolute path)."""


@dataclass(frozen=True, slots=True)
class ReplayedRange:
    """An inclusive step range that holds more than one copy of its steps, and who wrote each copy.

    Ranges are cut wherever the set of writers changes, so three attempts over 51-75 and two over 76-90 are two
    ranges: ``51-75: 3 copies (#1 #2 #3)`` and ``76-90: 2 copies (#2 #3)``. Computed once, by analysis.
    """

    first_step: int
    """First step of the range (inclusive)."""
    last_step: int
    """Last step of the range (inclusive)."""
    copies: int
    """How many copies of each step of the range exist (one per writing attempt or writer session)."""
    attempts: tuple[int, ...]
    """1-based attempts that wrote a copy, oldest first; empty when the writers are not attempts."""
    paths: tuple[str, ...] = ()
    """The files holding the copies, relative to the run root."""


@dataclass(frozen=True, slots=True)
class ResumeHint:
    """The exact option that resumes the run from the checkpoint a resume would pick (``analysis.resume_hint``)."""

    checkpoint: str
    """The picked checkpoint (its ``CheckpointInfo.path``, relative to the run root)."""
    step: int | None
    """Its global step; None when the checkpoint does not say."""
    tool: str
    """Whose option it is: ``pimm`` (``weight=... resume=True``) or ``hf-trainer`` (``resume_from_checkpoint=...``)."""
    option: str
    """The option text, its path shell-quoted (``weight=exp/panda/semseg/x/model/last resume=True``)."""
    path_base: str
    """What the option's path is relative to, and which file says so (``the launch directory ... (run_metadata.json
    cwd)``)."""
    newer_incomplete: tuple[str, ...] = ()
    """Incomplete checkpoints newer than the picked one (a higher step): the resume goes back past them."""


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
    """pimm, tensorboard, wandb, hf-trainer, lightning (a CSVLogger folder)."""
    era: Era | None
    """E0, E1, E1b, E2, E3a, E3b for pimm runs, else None."""
    status: RunStatus
    """finished, running, crashed, stopped, unknown."""
    name: str = ""
    """The run directory's name."""
    attempts: tuple[Attempt, ...] = ()
    """Every process start, oldest first."""
    series: tuple[ScalarSeries, ...] = ()
    """Every scalar series read, one per (tag, source file, attempt); ``scalars()`` gives them as rows."""
    events: tuple[LogEvent, ...] = ()
    """Notable log records (warnings, errors, resumes, saves ...)."""
    checkpoints: tuple[CheckpointInfo, ...] = ()
    """Every checkpoint found, read without torch."""
    configs: tuple[ConfigDoc, ...] = ()
    """Every config document (resolved config, W&B configs, train.log dumps, HF arguments ...)."""
    provenance: Provenance = field(default_factory=Provenance)
    """Where and how the run was launched (git, host, command)."""
    wandb: WandbInfo = field(default_factory=WandbInfo)
    """The run's W&B identity and link."""
    findings: tuple[Finding, ...] = ()
    """What analysis found, worst first; damaged files are findings, never exceptions."""
    sources: tuple[SourceFile, ...] = ()
    """Every file that contributed, with what was read of it."""
    event_files: tuple[EventFileFacts, ...] = ()
    """TensorBoard event files in process-start order (name time, then first wall time)."""
    train_log: TrainLogFacts | None = None
    """Facts of pimm's train.log; None when the run has none."""
    wandb_runs: tuple[WandbRunFacts, ...] = ()
    """Facts of each local W&B run folder."""
    model_dir: ModelDirFacts | None = None
    """Facts of pimm's ``model/`` folder; None when the run has none."""
    sbatch: SbatchFacts | None = None
    """Facts of the Slurm batch script (``launch.sbatch``); None when there is none."""
    rank_logs: tuple[RankLogFacts, ...] = ()
    """Facts of the per-rank structured logs."""
    slurm_logs: tuple[SlurmLogFacts, ...] = ()
    """Facts of the Slurm output logs found for the run."""
    hf: HfFacts | None = None
    """Facts of a Hugging Face Trainer output dir; None for other runs."""
    run_metadata: Mapping[str, Any] | None = None
    """run_metadata.json as read (scanned for secrets); None when absent or unreadable."""
    eval_results: tuple[EvalFacts, ...] = ()
    """The final tests the run holds (``eval/<stamp>/test_metrics.json``), oldest first."""
    summary: RunSummary | None = None
    """Derived row facts (last step, best metric, last logged time); set by analysis, None before it."""
    replayed: tuple[ReplayedRange, ...] = ()
    """Step ranges held more than once, with copy counts and writers; set by analysis, empty before it."""
    resume: ResumeHint | None = None
    """How to resume from the checkpoint a resume would pick; set by analysis, None before it or when no
    checkpoint qualifies."""
    scalar_table: ScalarTable | None = field(default=None, repr=False, compare=False)
    """The row rules of ``scalars()`` (``analysis.scalar_frame``), handed in by analysis; None before it (then
    ``scalars()`` asks analysis for them itself)."""

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
        # The row rules live in analysis (shared with export and show), which hands them to the Run it analyses. A
        # Run nobody analysed (built by hand, or by load alone) delegates to the same rules: they read only the
        # series and sources, no analysis result.
        table = self.scalar_table if self.scalar_table is not None else _analysis_scalar_table()
        return table(self, tags, policy, all_sources)


def _analysis_scalar_table() -> ScalarTable:
    """``analysis.scalar_frame``, the one home of the row rules, imported by name when first asked for.

    By name, at call time: the model never imports a layer above it when it is imported (the layer contract), and
    this delegation is the one exception issue 20 allows for ``Run.scalars()``.
    """
    import importlib

    table: ScalarTable = importlib.import_module(f"{__package__}.analysis").scalar_frame
    return table


def make_series(
    tag: str,
    steps: Any,
    values: Any,
    wall_times_s: Any | None,
    source: str,
    attempt: int | None = None,
) -> ScalarSeries:
    """Build a ScalarSeries with the canonical dtypes (int64, float64, float64)."""
    import numpy as np

    step_array = np.asarray(steps, dtype=np.int64)
    value_array = np.asarray(values, dtype=np.float64)
    if wall_times_s is None:
        wall_array = np.full(step_array.shape, np.nan, dtype=np.float64)
    else:
        wall_array = np.asarray(wall_times_s, dtype=np.float64)
    return ScalarSeries(tag, step_array, value_array, wall_array, source, attempt)
